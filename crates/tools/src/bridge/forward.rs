//! Forwarding one gateway tool call: `POST /tools/invoke` with the requester's session key,
//! the `agentId` rule, the compatibility aliases, one wall-clock deadline, cancellation, and a
//! clear `isError` result for every way the call can fail.
//!
//! The body is `{tool, args, sessionKey?, agentId?}`:
//! - `sessionKey`: for `sessions_spawn`/`subagents` the hoisted `args.sessionKey` (who is
//!   asking), else `OPENCLAW_REQUESTER_SESSION_KEY`; absent when neither is set (compat.rs);
//! - `agentId`: the requester agent, only when that key does not name its agent
//!   (settings.rs), so explicit-ownership gateways accept unscoped and missing keys.
//!
//! The deadline lives in [`ToolsInvokeClient`] (one timer raced against the whole exchange; the
//! loser is dropped, so a late reply cannot also settle the call). Cancellation drops the
//! exchange, which aborts the HTTP request.

use std::sync::Arc;

use clawmcp_gateway::{InvokeBody, InvokeError, ToolsInvokeClient, ToolsInvokeRequest, ToolsInvokeResponse};
use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolOutcome, ToolResult};
use futures_util::FutureExt;
use serde_json::{Map, Value};
use tracing::debug;

use super::compat::{SESSION_IDENTITY_TOOLS, apply_aliases};
use super::pending::PendingStore;
use super::result::tool_result;
use super::settings::{BridgeSettings, normalize_session_key};
use super::yielding::capture_spawn;
use crate::BridgeTool;

/// Why a forwarded call produced no tool result.
#[derive(Debug)]
pub enum ForwardError {
    /// The MCP client cancelled the call; the HTTP request was aborted.
    Cancelled,
    /// Transport, deadline, size cap: no (complete) HTTP response.
    Invoke(InvokeError),
    /// The gateway answered, but not with a result.
    Refused { status: u16, kind: Option<String>, message: String },
    /// The answer was not the gateway's JSON (another service on the port, a proxy page).
    NotJson { status: u16, excerpt: String },
}

impl ForwardError {
    /// The `isError` result a client sees.
    pub fn to_tool_result(&self, tool: &str) -> ToolResult {
        let text = match self {
            ForwardError::Cancelled => return ToolResult::error(CANCELLED),
            ForwardError::Invoke(error @ InvokeError::Timeout { .. }) => format!(
                "{error}. The gateway did not finish within OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS; the request was \
                 abandoned, but the tool may still have run."
            ),
            ForwardError::Invoke(error @ InvokeError::Transport { .. }) => {
                format!("{error}. Is the OpenClaw gateway running (`openclaw gateway status`)?")
            }
            ForwardError::Invoke(error) => error.to_string(),
            ForwardError::Refused { status, kind, message } => {
                let kind = kind.as_deref().map(|k| format!(" {k}")).unwrap_or_default();
                let hint = match (status, kind.trim()) {
                    (401, _) => " Check the gateway secret: OPENCLAW_GATEWAY_TOKEN, gateway.auth.token or \
                                 gateway.auth.password in openclaw.json, or --token-file."
                        .to_owned(),
                    (404, "not_found") => format!(
                        " The gateway does not run `{tool}` over HTTP for this session: it is not available to the \
                         agent, or gateway.tools.deny / the default HTTP deny list blocks it (gateway.tools.allow \
                         lifts the default)."
                    ),
                    (429, _) => " Too many failed authentications; wait and check the gateway secret.".to_owned(),
                    _ => String::new(),
                };
                format!("Error: {message} (gateway HTTP {status}{kind}).{hint}")
            }
            ForwardError::NotJson { status, excerpt } => format!(
                "Error: the gateway answered `{tool}` with HTTP {status} and a body that is not JSON ({excerpt:?}). \
                 Is the configured URL an OpenClaw gateway, and not a proxy or another service?"
            ),
        };
        ToolResult::error(text)
    }
}

/// Builds and sends `/tools/invoke` requests for one bridge.
#[derive(Debug, Clone)]
pub struct Forwarder {
    client: ToolsInvokeClient,
    settings: Arc<BridgeSettings>,
}

/// A request ready to send, and the requester it was made for (the pending-yield store files
/// spawned runs under it).
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedCall {
    pub request: ToolsInvokeRequest,
    pub requester: Option<String>,
}

impl Forwarder {
    pub fn new(client: ToolsInvokeClient, settings: Arc<BridgeSettings>) -> Self {
        Forwarder { client, settings }
    }

    pub fn settings(&self) -> &BridgeSettings {
        &self.settings
    }

    /// Applies aliases and requester hoisting to a client's call.
    pub fn prepare(&self, tool: &str, mut args: Map<String, Value>) -> PreparedCall {
        apply_aliases(tool, &mut args);
        let hoisted = if SESSION_IDENTITY_TOOLS.contains(&tool) {
            args.remove("sessionKey").and_then(|key| normalize_session_key(key.as_str()))
        } else {
            None
        };
        let requester = hoisted.or_else(|| self.settings.default_session_key().map(str::to_owned));
        PreparedCall { request: self.request(tool, Value::Object(args), requester.as_deref()), requester }
    }

    /// A request under an explicit requester key (internal calls such as `sessions_yield`'s
    /// `subagents list`).
    pub fn request(&self, tool: &str, args: Value, session_key: Option<&str>) -> ToolsInvokeRequest {
        let mut request = ToolsInvokeRequest::new(tool, args);
        request.session_key = session_key.map(str::to_owned);
        request.agent_id = self.settings.agent_id_for(session_key).map(str::to_owned);
        request
    }

    /// One client call of gateway tool `name`: prepared, sent, and the gateway's answer (or why
    /// there is none) as the MCP result; a successful `sessions_spawn` files its run in `store`.
    pub async fn forward(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &CallContext,
        store: &PendingStore,
    ) -> ToolResult {
        let prepared = self.prepare(name, arguments);
        match self.send(&prepared.request, ctx).await {
            Ok(result) => {
                if name == "sessions_spawn" {
                    capture_spawn(store, &result, prepared.requester.as_deref());
                }
                tool_result(&result)
            }
            Err(error) => {
                let result = error.to_tool_result(name);
                debug!(tool = name, error = result.first_text().unwrap_or_default(), "gateway call failed");
                result
            }
        }
    }

    /// Sends `request`; `Ok` is the gateway's `result`.
    pub async fn send(&self, request: &ToolsInvokeRequest, ctx: &CallContext) -> Result<Value, ForwardError> {
        let response = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(ForwardError::Cancelled),
            response = self.client.invoke(request) => response.map_err(ForwardError::Invoke)?,
        };
        interpret(response)
    }
}

/// A gateway tool as a tool of the bridge: `descriptor` (the discovered one, overlays and all)
/// and a handler that forwards the call to `POST /tools/invoke`. A successful `sessions_spawn`
/// files its run for `sessions_yield` in `store`. The arguments are the gateway's to check
/// (`Checking::Handler`): it refuses a call in its own words, which a client of the upstream
/// bridge reads, and our snapshot schemas may be older than the gateway's.
pub fn forwarding_tool(descriptor: Tool, forwarder: Forwarder, store: PendingStore) -> BridgeTool {
    let name: Arc<str> = descriptor.name.as_str().into();
    BridgeTool::new(descriptor, move |arguments, ctx| {
        let (name, forwarder, store) = (name.clone(), forwarder.clone(), store.clone());
        async move { ToolOutcome::from(forwarder.forward(&name, arguments, &ctx, &store).await) }.boxed()
    })
    .with_checking(Checking::Handler)
}

/// `{ok:true, result}` → the result; anything else → why not. Any non-JSON body is an error,
/// whatever the status: the gateway always answers JSON, so text means something else answered.
fn interpret(response: ToolsInvokeResponse) -> Result<Value, ForwardError> {
    if let InvokeBody::Text(text) = &response.body {
        let excerpt: String = text.trim().chars().take(200).collect();
        return Err(ForwardError::NotJson { status: response.status, excerpt });
    }
    match response.outcome() {
        clawmcp_gateway::ToolOutcome::Success(result) => Ok(result),
        clawmcp_gateway::ToolOutcome::Failure { status, kind, message } => {
            Err(ForwardError::Refused { status, kind, message })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clawmcp_gateway::{Env, LoadedConfig, ToolsInvokeOptions};
    use serde_json::json;

    use super::*;

    fn forwarder(requester: Option<&str>) -> Forwarder {
        let env = Env::from_pairs(requester.map(|key| ("OPENCLAW_REQUESTER_SESSION_KEY", key)));
        let config = LoadedConfig { path: None, exists: false, value: json!({}) };
        let client = ToolsInvokeClient::new("ws://127.0.0.1:1", None, ToolsInvokeOptions::default()).unwrap();
        Forwarder::new(client, Arc::new(BridgeSettings::from_env(&env, &config)))
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn identity_tools_hoist_session_key_others_keep_it() {
        let fwd = forwarder(Some("agent:main:discord:direct:1"));
        let spawn = fwd.prepare("sessions_spawn", args(json!({"task": "t", "sessionKey": "agent:main:telegram:9"})));
        assert_eq!(spawn.request.args, json!({"task": "t"}));
        assert_eq!(spawn.request.session_key.as_deref(), Some("agent:main:telegram:9"));
        assert_eq!(spawn.request.agent_id, None);
        assert_eq!(spawn.requester.as_deref(), Some("agent:main:telegram:9"));

        let blank = fwd.prepare("subagents", args(json!({"action": "list", "sessionKey": " main "})));
        assert_eq!(blank.request.session_key.as_deref(), Some("agent:main:discord:direct:1"), "falls back");
        assert_eq!(blank.request.args, json!({"action": "list"}));

        let history = fwd.prepare("sessions_history", args(json!({"sessionKey": "agent:main:main"})));
        assert_eq!(history.request.args, json!({"sessionKey": "agent:main:main"}), "a target stays in args");
        assert_eq!(history.request.session_key.as_deref(), Some("agent:main:discord:direct:1"));
    }

    #[test]
    fn unscoped_or_missing_keys_carry_the_agent_id() {
        let none = forwarder(None).prepare("sessions_list", Map::new());
        assert_eq!(
            serde_json::to_value(&none.request).unwrap(),
            json!({"tool": "sessions_list", "args": {}, "agentId": "main"})
        );
        let unscoped = forwarder(Some("discord:direct:1")).prepare("sessions_list", Map::new());
        assert_eq!(unscoped.request.session_key.as_deref(), Some("discord:direct:1"));
        assert_eq!(unscoped.request.agent_id.as_deref(), Some("main"));
    }

    #[test]
    fn errors_read_clearly() {
        let text = |error: ForwardError| error.to_tool_result("tts").first_text().unwrap().to_owned();
        let timeout =
            ForwardError::Invoke(InvokeError::Timeout { tool: "tts".into(), after: Duration::from_millis(100) });
        assert!(text(timeout).starts_with("Gateway request timed out after 100ms: tts."));
        let not_found = ForwardError::Refused {
            status: 404,
            kind: Some("not_found".into()),
            message: "Tool not available: tts".into(),
        };
        let not_found = text(not_found);
        assert!(not_found.starts_with("Error: Tool not available: tts (gateway HTTP 404 not_found)."), "{not_found}");
        assert!(not_found.contains("gateway.tools.allow"));
        let unauthorized =
            ForwardError::Refused { status: 401, kind: Some("unauthorized".into()), message: "Unauthorized".into() };
        assert!(text(unauthorized).contains("OPENCLAW_GATEWAY_TOKEN"));
        let html = ForwardError::NotJson { status: 200, excerpt: "<html>".into() };
        assert!(text(html).contains("HTTP 200 and a body that is not JSON"));
        assert_eq!(ForwardError::Cancelled.to_tool_result("tts").first_text(), Some(CANCELLED));
    }

    #[test]
    fn non_json_is_an_error_even_with_200() {
        let response = ToolsInvokeResponse { status: 200, body: InvokeBody::Text("hello".into()) };
        assert!(matches!(interpret(response), Err(ForwardError::NotJson { status: 200, .. })));
        let ok = ToolsInvokeResponse { status: 200, body: InvokeBody::Json(json!({"ok": true, "result": {"a": 1}})) };
        assert_eq!(interpret(ok).unwrap(), json!({"a": 1}));
    }
}
