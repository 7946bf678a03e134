//! `sessions_yield`: keep the MCP call open until the subagents this requester spawned have
//! finished, so the client's turn (and the channel it answers on) stays alive.
//!
//! The gateway's own `sessions_yield` needs an agent run to end; over `/tools/invoke` it answers
//! "Yield not supported in this context". So, like the upstream bridge (`docs/tools-bridge.md` §8):
//! 1. every successful `sessions_spawn` files its `runId` in the [`PendingStore`] under the
//!    requester key ([`capture_spawn`]);
//! 2. `sessions_yield` takes that requester's pending runs (or, with none, the gateway's current
//!    active list) and polls `subagents {action:"list"}` under each requester key until none of
//!    them is in `active`; finished runs leave the store as they are seen finishing.
//!
//! The upstream bridge read `active` from the top level of the gateway's result, but the gateway
//! answers `{content:[{type:"text", text:<json>}], details:{active, recent, ...}}`, so `active`
//! was always missing and every run looked finished on the first poll. We read `details`, then
//! the JSON text, then the top level, and a list we cannot read counts as *no answer* (poll
//! again), never as "finished". The wait is bounded (`timeoutMs`, default 30 min, at most
//! [`MAX_YIELD_WAIT`]) and ends at once on cancellation; runs still pending stay in the store
//! for the next yield.

use std::collections::BTreeMap;
use std::time::Duration;

use clawmcp_mcp::{CANCELLED, CallContext, Tool, ToolAnnotations, ToolOutcome, ToolResult};
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tracing::{info, warn};

use super::forward::{ForwardError, Forwarder};
use super::pending::PendingStore;
use super::settings::normalize_session_key;
use crate::BridgeTool;

/// The upstream default wait.
pub const DEFAULT_YIELD_WAIT: Duration = Duration::from_secs(30 * 60);

/// The longest wait accepted; a larger `timeoutMs` is clamped to it.
pub const MAX_YIELD_WAIT: Duration = Duration::from_secs(6 * 3600);

/// Between two polls of `subagents list` (upstream's interval).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(5);

pub fn descriptor() -> Tool {
    Tool {
        title: None,
        output_schema: None,
        name: super::catalog::SESSIONS_YIELD.into(),
        description: format!(
            "Suspend the current turn and wait until the subagents you spawned with sessions_spawn have \
             finished; returns when done, so the answer routes back to the originating channel. Waits for \
             every run this requester spawned and has not yielded on yet (or, if none was recorded, for the \
             gateway's currently active subagents). Optional timeoutMs (default {} = 30 min, at most {}); \
             runs still going at the timeout stay pending for the next sessions_yield.",
            DEFAULT_YIELD_WAIT.as_millis(),
            MAX_YIELD_WAIT.as_millis()
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "timeoutMs": {"type": "number", "minimum": 0, "description": format!(
                    "Maximum wait in milliseconds (default {}; 0 means the default).", DEFAULT_YIELD_WAIT.as_millis())},
                "sessionKey": {"type": "string", "description":
                    "Requester session key to wait for (normally unnecessary: OPENCLAW_REQUESTER_SESSION_KEY)."}
            }
        })
        .into(),
        annotations: Some(ToolAnnotations::READ_ONLY),
    }
}

/// Files the run id of a successful `sessions_spawn` result under `requester`. A result without
/// one (a refused spawn) records nothing.
pub fn capture_spawn(store: &PendingStore, result: &Value, requester: Option<&str>) {
    match spawned_run_id(result) {
        Some(run_id) => match store.record(&run_id, requester) {
            Ok(()) => info!(
                run_id,
                session_key = requester.unwrap_or("(none)"),
                "sessions_spawn: run recorded for sessions_yield"
            ),
            Err(error) => warn!(run_id, %error, "sessions_spawn: cannot record the run for sessions_yield"),
        },
        None => info!("sessions_spawn returned no runId; nothing to yield on"),
    }
}

/// `runId` from `details`, the JSON text of the first content block, or the top level.
pub fn spawned_run_id(result: &Value) -> Option<String> {
    payloads(result).into_iter().find_map(|payload| {
        payload.get("runId").and_then(Value::as_str).map(str::trim).filter(|id| !id.is_empty()).map(str::to_owned)
    })
}

/// The places a gateway result may carry its payload, best first: `details`, the parsed text of
/// `content[0]`, the result itself (or a JSON string result, parsed).
fn payloads(result: &Value) -> Vec<Value> {
    let mut found = Vec::new();
    if let Some(details) = result.get("details").filter(|d| d.is_object()) {
        found.push(details.clone());
    }
    let text = result.pointer("/content/0/text").and_then(Value::as_str);
    if let Some(parsed) = text.and_then(|t| serde_json::from_str::<Value>(t).ok()).filter(Value::is_object) {
        found.push(parsed);
    }
    match result {
        Value::String(text) => found.extend(serde_json::from_str::<Value>(text).ok().filter(Value::is_object)),
        other if other.is_object() => found.push(other.clone()),
        _ => {}
    }
    found
}

/// `timeoutMs`: absent, null or 0 = the default; clamped to [`MAX_YIELD_WAIT`].
fn wait_from_args(args: &Map<String, Value>) -> Result<Duration, String> {
    let Some(value) = args.get("timeoutMs").filter(|v| !v.is_null()) else { return Ok(DEFAULT_YIELD_WAIT) };
    match value.as_f64() {
        Some(ms) if ms.is_finite() && ms >= 0.0 => match Duration::from_millis(ms as u64) {
            Duration::ZERO => Ok(DEFAULT_YIELD_WAIT),
            wait => Ok(wait.min(MAX_YIELD_WAIT)),
        },
        _ => Err(format!("Parameter `timeoutMs` must be a non-negative number of milliseconds, got {value}")),
    }
}

/// A readable `subagents list` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentList {
    pub active: Vec<Value>,
    pub recent: Vec<Value>,
}

impl SubagentList {
    fn active_ids(&self) -> Vec<&str> {
        self.active.iter().filter_map(run_id_of).collect()
    }

    fn recent_item(&self, run_id: &str) -> Option<&Value> {
        self.recent.iter().find(|item| run_id_of(item) == Some(run_id))
    }
}

fn run_id_of(item: &Value) -> Option<&str> {
    item.get("runId").or_else(|| item.get("id")).and_then(Value::as_str)
}

/// Finds `active` (an array) in the gateway's answer; `None` when no payload has one.
pub fn parse_subagent_list(result: &Value) -> Option<SubagentList> {
    payloads(result).into_iter().find_map(|payload| {
        let active = payload.get("active")?.as_array()?.clone();
        let recent = payload.get("recent").and_then(Value::as_array).cloned().unwrap_or_default();
        Some(SubagentList { active, recent })
    })
}

/// The `sessions_yield` implementation for one bridge.
#[derive(Debug, Clone)]
pub struct SessionsYield {
    pub forwarder: Forwarder,
    pub store: PendingStore,
    pub poll_interval: Duration,
}

/// A run being waited for and the requester key it is polled under.
struct Waiting {
    run_id: String,
    key: Option<String>,
}

impl SessionsYield {
    /// `sessions_yield` as a tool of the bridge: [`descriptor`] and [`SessionsYield::run`].
    /// Its arguments are checked against the schema as they are: its parser takes a number for
    /// `timeoutMs` and a string for `sessionKey`, nothing else.
    pub fn tool(self) -> BridgeTool {
        BridgeTool::new(descriptor(), move |arguments, ctx| {
            let yielder = self.clone();
            async move { ToolOutcome::from(yielder.run(&arguments, &ctx).await) }.boxed()
        })
    }

    pub async fn run(&self, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
        let wait = match wait_from_args(args) {
            Ok(wait) => wait,
            Err(message) => return ToolResult::error(message),
        };
        let caller = normalize_session_key(args.get("sessionKey").and_then(Value::as_str))
            .or_else(|| self.forwarder.settings().default_session_key().map(str::to_owned));
        let started = Instant::now();
        let deadline = started + wait;

        let mut waiting: Vec<Waiting> = self
            .store
            .read(caller.as_deref())
            .into_iter()
            .map(|run| Waiting { run_id: run.run_id, key: run.session_key })
            .collect();
        if waiting.is_empty() {
            let list = match self.list(caller.as_deref(), ctx).await {
                Ok(list) => list,
                Err(ListError::Cancelled) => return ToolResult::error(CANCELLED),
                Err(ListError::Failed(message)) => {
                    return ToolResult::error(
                        json!({"status": "error", "message": format!("Could not list subagents: {message}")})
                            .to_string(),
                    );
                }
            };
            let active = list.active_ids();
            if active.is_empty() {
                return ToolResult::json(
                    &json!({"status": "no_pending_subagent", "message": "No active subagents found to yield on."}),
                );
            }
            waiting = active.into_iter().map(|id| Waiting { run_id: id.to_owned(), key: caller.clone() }).collect();
        }

        let mut finished: Vec<Value> = Vec::new();
        loop {
            let keys: Vec<Option<String>> = {
                let mut keys: Vec<Option<String>> = waiting.iter().map(|w| w.key.clone()).collect();
                keys.sort();
                keys.dedup();
                keys
            };
            let mut lists: BTreeMap<Option<String>, SubagentList> = BTreeMap::new();
            for key in keys {
                let remaining = deadline.saturating_duration_since(Instant::now());
                let listed = tokio::time::timeout(remaining, self.list(key.as_deref(), ctx)).await;
                match listed {
                    Ok(Ok(list)) => {
                        lists.insert(key, list);
                    }
                    Ok(Err(ListError::Cancelled)) => return ToolResult::error(CANCELLED),
                    Ok(Err(ListError::Failed(message))) => {
                        warn!(
                            session_key = key.as_deref().unwrap_or("(none)"),
                            message, "sessions_yield: list failed; polling again"
                        );
                    }
                    Err(_) => break,
                }
            }
            waiting.retain(|run| {
                let Some(list) = lists.get(&run.key) else { return true };
                if list.active_ids().contains(&run.run_id.as_str()) {
                    return true;
                }
                self.store.remove(&run.run_id);
                info!(run_id = %run.run_id, "sessions_yield: subagent finished");
                finished.push(json!({"runId": run.run_id, "subagent": list.recent_item(&run.run_id).cloned()}));
                false
            });
            if waiting.is_empty() {
                return ToolResult::json(&json!({
                    "status": "completed",
                    "count": finished.len(),
                    "elapsed": format!("{}s", started.elapsed().as_secs()),
                    "subagents": finished,
                }));
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            tokio::select! {
                () = ctx.cancel.cancelled() => return ToolResult::error(CANCELLED),
                () = tokio::time::sleep_until((now + self.poll_interval).min(deadline)) => {}
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        ToolResult::json(&json!({
            "status": "timeout",
            "pending": waiting.iter().map(|w| w.run_id.as_str()).collect::<Vec<_>>(),
            "completed": finished,
            "message": "Some subagents did not complete within the timeout window; they stay pending for the next sessions_yield.",
        }))
    }

    /// `subagents {action:"list"}` under `key`, bypassing the allowlist (an internal call).
    async fn list(&self, key: Option<&str>, ctx: &CallContext) -> Result<SubagentList, ListError> {
        let request = self.forwarder.request("subagents", json!({"action": "list"}), key);
        match self.forwarder.send(&request, ctx).await {
            Ok(result) => parse_subagent_list(&result)
                .ok_or_else(|| ListError::Failed(format!("unrecognized subagents list answer: {}", excerpt(&result)))),
            Err(ForwardError::Cancelled) => Err(ListError::Cancelled),
            Err(error) => {
                Err(ListError::Failed(error.to_tool_result("subagents").first_text().unwrap_or_default().to_owned()))
            }
        }
    }
}

enum ListError {
    Cancelled,
    Failed(String),
}

fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real 2026.9.6 `subagents list` answer shape (openclaw-tools `createSubagentsTool`).
    fn gateway_list(active: &[&str]) -> Value {
        let details = json!({
            "status": "ok", "action": "list", "requesterSessionKey": "agent:main:main", "total": active.len(),
            "tasks": [], "active": active.iter().map(|id| json!({"runId": id, "status": "running"})).collect::<Vec<_>>(),
            "recent": [{"runId": "done-1", "status": "done"}], "text": "active subagents:"
        });
        json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&details).unwrap()}], "details": details})
    }

    #[test]
    fn timeout_defaults_and_clamps_at_the_edges() {
        let wait = |value: Value| wait_from_args(json!({ "timeoutMs": value }).as_object().unwrap());
        assert_eq!(wait_from_args(&Map::new()), Ok(DEFAULT_YIELD_WAIT));
        assert_eq!(wait(Value::Null), Ok(DEFAULT_YIELD_WAIT));
        assert_eq!(wait(json!(0)), Ok(DEFAULT_YIELD_WAIT));
        assert_eq!(wait(json!(1)), Ok(Duration::from_millis(1)));
        assert_eq!(wait(json!(100.9)), Ok(Duration::from_millis(100)));
        let max = MAX_YIELD_WAIT.as_millis() as u64;
        assert_eq!(wait(json!(max)), Ok(MAX_YIELD_WAIT));
        assert_eq!(wait(json!(max + 1)), Ok(MAX_YIELD_WAIT));
        for bad in [json!(-1), json!("100"), json!(true)] {
            assert!(wait(bad.clone()).unwrap_err().contains("timeoutMs"), "{bad}");
        }
    }

    #[test]
    fn the_real_envelope_is_read_from_details() {
        let list = parse_subagent_list(&gateway_list(&["r1", "r2"])).unwrap();
        assert_eq!(list.active_ids(), ["r1", "r2"]);
        assert_eq!(list.recent_item("done-1").unwrap()["status"], "done");
    }

    #[test]
    fn text_only_top_level_and_string_answers_are_read_too() {
        let text_only = json!({"content": [{"type": "text", "text": "{\"active\":[{\"id\":\"x\"}]}"}]});
        assert_eq!(parse_subagent_list(&text_only).unwrap().active_ids(), ["x"]);
        let top = json!({"active": [], "recent": []});
        assert!(parse_subagent_list(&top).unwrap().active.is_empty());
        let string = json!("{\"active\":[{\"runId\":\"s\"}]}");
        assert_eq!(parse_subagent_list(&string).unwrap().active_ids(), ["s"]);
    }

    #[test]
    fn an_answer_without_active_is_unreadable_not_empty() {
        for result in [
            json!({"content": [{"type": "text", "text": "active subagents:\n(none)"}]}),
            json!({"details": {"status": "error", "error": "subagent controller agent required"}}),
            json!({"content": [], "details": {"active": "none"}}),
            json!(null),
        ] {
            assert_eq!(parse_subagent_list(&result), None, "{result}");
        }
    }

    #[test]
    fn spawned_run_ids_come_from_every_shape() {
        let accepted = json!({"status": "accepted", "childSessionKey": "agent:main:subagent:1", "runId": "run-9"});
        let real = json!({"content": [{"type": "text", "text": accepted.to_string()}], "details": accepted});
        assert_eq!(spawned_run_id(&real).as_deref(), Some("run-9"));
        let text_only = json!({"content": [{"type": "text", "text": "{\"runId\":\"t\"}"}]});
        assert_eq!(spawned_run_id(&text_only).as_deref(), Some("t"));
        assert_eq!(spawned_run_id(&json!({"runId": "top"})).as_deref(), Some("top"));
        assert_eq!(spawned_run_id(&json!("{\"runId\":\"s\"}")).as_deref(), Some("s"));
        assert_eq!(spawned_run_id(&json!({"details": {"status": "forbidden", "runId": " "}})), None);
    }
}
