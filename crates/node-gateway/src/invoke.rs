//! One `node.invoke.request` -> the registry's command -> one `node.invoke.result`, through the
//! same [`Command`] an MCP `tools/call` runs (same instance, same approvals, same limits).
//!
//! Wire facts (`docs/gateway-protocol.md` §10.1-§10.3): the request is an *event* `{id, nodeId,
//! command, paramsJSON, timeoutMs, idempotencyKey, sessionKey?}`; `paramsJSON` is `null` when the
//! operator sent no params (we read that as `{}`: each command then says what it misses, where the
//! real node host fails every such call with "paramsJSON required"); `timeoutMs` is the remaining
//! budget. The answer is the request `node.invoke.result {id, nodeId, ok, payloadJSON | error}`. A
//! result after a cancel or timeout is answered `{ok:true, ignored:true}`, so it is always sent.
//!
//! `mcp.tools.call.v1 {server, tool, arguments}` reaches any served command by its MCP name and
//! answers with the MCP `CallToolResult`: how the gateway's agent calls commands its platform
//! allowlist would withhold (see [`crate::plugin_tools`]).

use std::time::Duration;

use clawmcp_mcp::{CallContext, NodeEvent, ToolFailure, ToolFilter, ToolOutcome, Unserved};
use clawmcp_node::files::channel::{self, GatewayChannel};
use clawmcp_node::{Caller, InvokeRequest, Registry};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::plugin_tools::{MCP_TOOLS_CALL, SERVER_NAME, has_gateway_flow};

/// The budget when the gateway names none (its own default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest an invoke may run, whatever `timeoutMs` says: the gateway's own limit for plugin
/// tool calls is 120 s and `system.run` caps its commands at 10 minutes.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(15 * 60);

pub use clawmcp_mcp::tool::codes::{CANCELLED, INVALID_REQUEST, TIMEOUT, UNAVAILABLE};

/// `node.invoke.request`'s payload.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvokeEvent {
    pub id: String,
    #[serde(default)]
    pub node_id: Option<String>,
    pub command: String,
    #[serde(default, rename = "paramsJSON")]
    pub params_json: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub session_key: Option<String>,
}

impl InvokeEvent {
    /// The time this invoke may take: the gateway's remaining budget, bounded.
    pub fn budget(&self) -> Duration {
        self.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis).min(MAX_TIMEOUT)
    }
}

/// What goes back to the gateway.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Ok { payload: Value },
    Failed { code: String, message: String },
}

impl Answer {
    fn failed(code: &str, message: impl Into<String>) -> Answer {
        Answer::Failed { code: code.to_owned(), message: message.into() }
    }

    /// `node.invoke.result`'s params for invoke `id` on node `node_id`.
    pub fn result_params(&self, id: &str, node_id: &str) -> Value {
        match self {
            Answer::Ok { payload } => {
                json!({"id": id, "nodeId": node_id, "ok": true, "payloadJSON": payload.to_string()})
            }
            Answer::Failed { code, message } => {
                json!({"id": id, "nodeId": node_id, "ok": false, "error": {"code": code, "message": message}})
            }
        }
    }
}

/// An invocation's answer and the node events to send before it.
#[derive(Debug)]
pub struct Completed {
    pub answer: Answer,
    pub events: Vec<NodeEvent>,
}

impl Completed {
    fn failed(code: &str, message: impl Into<String>) -> Completed {
        Completed { answer: Answer::failed(code, message), events: Vec::new() }
    }
}

/// Whether `event` is a duplex invoke: the gateway does not say so, the command and its params do
/// (as for the real node host; the rule is the file channel's, [`channel::streams`]). Only the
/// channel's own commands have their params read here (a `file.write` carries up to 22 MB).
pub fn wants_duplex(event: &InvokeEvent) -> bool {
    if !channel::COMMANDS.contains(&event.command.as_str()) {
        return false;
    }
    parse_params(event.params_json.as_deref()).is_ok_and(|args| channel::streams(&event.command, &args))
}

/// Runs `event` against `registry` through `filter`, until done, cancelled or out of budget;
/// `duplex` is the file channel the command attaches (see [`wants_duplex`]).
pub async fn run(
    registry: &Registry,
    filter: &ToolFilter,
    event: &InvokeEvent,
    cancel: CancellationToken,
    duplex: Option<&GatewayChannel>,
) -> Completed {
    let args = match parse_params(event.params_json.as_deref()) {
        Ok(args) => args,
        Err(message) => return Completed::failed(INVALID_REQUEST, message),
    };
    let budget = event.budget();
    let work = dispatch(registry, filter, event, args, cancel.clone(), duplex);
    tokio::select! {
        completed = work => completed,
        () = tokio::time::sleep(budget) => {
            // The command sees the cancel and stops (a system.run's whole process tree is killed,
            // through its own subreaper).
            cancel.cancel();
            Completed::failed(TIMEOUT, format!("{} did not finish within its {} ms budget", event.command, budget.as_millis()))
        }
    }
}

async fn dispatch(
    registry: &Registry,
    filter: &ToolFilter,
    event: &InvokeEvent,
    args: Map<String, Value>,
    cancel: CancellationToken,
    duplex: Option<&GatewayChannel>,
) -> Completed {
    if event.command == MCP_TOOLS_CALL {
        return call_plugin_tool(registry, filter, event, args, cancel).await;
    }
    let command = match registry.served_to_gateway(&event.command, filter) {
        Ok(command) => command,
        Err(reason) => return Completed::failed(INVALID_REQUEST, unserved(&event.command, reason, filter)),
    };
    let request = request(event, &event.command, args, Caller::Gateway);
    let mut ctx = context(cancel.clone());
    if let Some(duplex) = duplex {
        ctx.meta = Some(duplex.meta());
        ctx.request = Some(duplex.request());
    }
    let outcome = command.call(request, ctx).await;
    completed(outcome, &cancel)
}

/// `mcp.tools.call.v1 {server, tool, arguments}`: the MCP rendering of the command, as the
/// gateway hands it to its agent (images intact).
async fn call_plugin_tool(
    registry: &Registry,
    filter: &ToolFilter,
    event: &InvokeEvent,
    params: Map<String, Value>,
    cancel: CancellationToken,
) -> Completed {
    let server = params.get("server").and_then(Value::as_str);
    if server.is_some_and(|server| server != SERVER_NAME) {
        let message = format!(
            "{MCP_TOOLS_CALL}: this node serves MCP server `{SERVER_NAME}`, not `{}`",
            server.unwrap_or_default()
        );
        return Completed::failed(INVALID_REQUEST, message);
    }
    let Some(tool) = params.get("tool").and_then(Value::as_str) else {
        return Completed::failed(INVALID_REQUEST, format!("{MCP_TOOLS_CALL}: `tool` (a string) is required"));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            return Completed::failed(INVALID_REQUEST, format!("{MCP_TOOLS_CALL}: `arguments` must be an object"));
        }
    };
    if has_gateway_flow(tool) {
        let message = format!(
            "{MCP_TOOLS_CALL}: {tool} is not a plugin tool of this node; the gateway reaches it through its own flow \
             (node.invoke {tool} from the exec tool, which asks for approval, or exec.approvals.node.*)"
        );
        return Completed::failed(INVALID_REQUEST, message);
    }
    let command = match registry.served_to_gateway(tool, filter) {
        Ok(command) => command,
        Err(reason) => return Completed::failed(INVALID_REQUEST, unserved(tool, reason, filter)),
    };
    // An MCP call in all but transport: the arguments are checked against the published schema
    // before the handler runs, as for an MCP client, and the answer is rendered for MCP.
    let result = command.call_mcp(request(event, tool, arguments, Caller::GatewayPluginTool), context(cancel)).await;
    match serde_json::to_value(&result) {
        Ok(payload) => Completed { answer: Answer::Ok { payload }, events: Vec::new() },
        Err(error) => Completed::failed(UNAVAILABLE, format!("cannot encode the result of {tool}: {error}")),
    }
}

fn request(event: &InvokeEvent, command: &str, args: Map<String, Value>, caller: Caller) -> InvokeRequest {
    InvokeRequest {
        id: event.id.clone(),
        command: command.to_owned(),
        args,
        session_key: event.session_key.clone(),
        caller,
    }
}

fn context(cancel: CancellationToken) -> CallContext {
    CallContext { cancel, progress: None, meta: None, request: None }
}

fn completed(outcome: ToolOutcome, cancel: &CancellationToken) -> Completed {
    match outcome {
        Ok(mut output) => {
            let events = std::mem::take(&mut output.gateway_events);
            Completed { answer: Answer::Ok { payload: output.gateway_payload().clone() }, events }
        }
        Err(failure) if cancel.is_cancelled() => Completed::failed(CANCELLED, failure.message),
        Err(ToolFailure { message, code, gateway_events }) => {
            Completed { answer: Answer::failed(code.unwrap_or(UNAVAILABLE), message), events: gateway_events }
        }
    }
}

fn unserved(name: &str, reason: Unserved, filter: &ToolFilter) -> String {
    match reason {
        Unserved::Unknown => format!("unknown command: {name} (not served by this node)"),
        Unserved::LocalOnly => format!(
            "{name} is served to local MCP clients of this node only (it manages the node itself), not to the gateway"
        ),
        Unserved::Filtered => format!(
            "{name} is not served: this node runs with the tool filter `{}` (clawmcp node --tools)",
            filter.describe()
        ),
    }
}

/// `paramsJSON`: absent or `null` is `{}`; otherwise a JSON object.
fn parse_params(params_json: Option<&str>) -> Result<Map<String, Value>, String> {
    let Some(text) = params_json else { return Ok(Map::new()) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(format!("paramsJSON must encode a JSON object, not {}", json_kind(&other))),
        Err(error) => Err(format!("paramsJSON is not valid JSON: {error}")),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_json_null_or_absent_is_an_empty_object_and_anything_else_must_be_one() {
        assert!(parse_params(None).unwrap().is_empty());
        assert!(parse_params(Some("null")).unwrap().is_empty());
        assert_eq!(parse_params(Some(r#"{"bins":["sh"]}"#)).unwrap()["bins"], json!(["sh"]));
        assert!(parse_params(Some("[1]")).unwrap_err().contains("not an array"));
        assert!(parse_params(Some("{")).unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn the_budget_is_the_gateways_bounded() {
        let event = |timeout_ms| InvokeEvent {
            id: "i".into(),
            node_id: None,
            command: "c".into(),
            params_json: None,
            timeout_ms,
            session_key: None,
        };
        assert_eq!(event(None).budget(), DEFAULT_TIMEOUT);
        assert_eq!(event(Some(1500)).budget(), Duration::from_millis(1500));
        assert_eq!(event(Some(u64::MAX)).budget(), MAX_TIMEOUT);
    }

    #[test]
    fn duplex_is_file_create_and_binary_file_fetch_but_not_their_preflights() {
        let event = |command: &str, params: Value| InvokeEvent {
            id: "i".into(),
            node_id: None,
            command: command.into(),
            params_json: Some(params.to_string()),
            timeout_ms: None,
            session_key: None,
        };
        assert!(wants_duplex(&event("file.create", json!({"path": "/a"}))));
        assert!(wants_duplex(&event("file.fetch", json!({"path": "/a", "transport": "binary"}))));
        assert!(!wants_duplex(&event("file.fetch", json!({"path": "/a"}))));
        assert!(!wants_duplex(&event("file.create", json!({"path": "/a", "preflightOnly": true}))));
        assert!(!wants_duplex(&event("file.fetch", json!({"transport": "binary", "preflightOnly": true}))));
        assert!(!wants_duplex(&event("file.write", json!({"path": "/a"}))));
        assert!(!wants_duplex(&event("file.create", json!("not an object"))));
    }

    #[test]
    fn results_have_the_gateways_shape() {
        let ok = Answer::Ok { payload: json!({"bins": {"sh": "/usr/bin/sh"}}) };
        assert_eq!(
            ok.result_params("i", "n"),
            json!({"id":"i","nodeId":"n","ok":true,"payloadJSON":"{\"bins\":{\"sh\":\"/usr/bin/sh\"}}"})
        );
        let failed = Answer::failed(INVALID_REQUEST, "nope");
        assert_eq!(
            failed.result_params("i", "n"),
            json!({"id":"i","nodeId":"n","ok":false,"error":{"code":"INVALID_REQUEST","message":"nope"}})
        );
    }
}
