//! The nine tools of `openclaw mcp serve`, with upstream's names, descriptions, input schemas,
//! limits, texts and `structuredContent` shapes (`docs/serve.md` §4; `src/mcp/channel-tools.ts`,
//! openclaw 2026.9.6; the golden `tools/list` test below was recorded from the real bridge).
//!
//! Every result carries a text block and `structuredContent`. Where upstream prints the payload
//! (`conversations_list`, `messages_read`) the text is `"<label>: <n>\n\n"` plus
//! `JSON.stringify(payload, null, 2)`; elsewhere it is a short summary. Failures are tool
//! errors (`isError`) whose text is what upstream would show: the gateway's own error message
//! for a refused request, the SDK's wording for bad arguments or an unknown tool.
//!
//! Tools that read the gateway wait for the bridge to be ready; `events_poll`, `events_wait`
//! and `permissions_list_open` read local state and answer at once, as upstream.
//!
//! One addition to upstream's `tools/list`: behaviour hints (`annotations`), which upstream
//! leaves out. Names, descriptions and schemas stay byte-identical, so a client keyed on them
//! sees no change; a client that reads hints learns that seven tools only read, that
//! `messages_send` reaches people outside (a new message per call), and that
//! `permissions_respond` can let a pending command run.

use std::sync::Arc;

use clawmcp_gateway::{GatewayClient, GatewayError};
use clawmcp_mcp::{Checking, Content, Tool, ToolAnnotations, ToolDef, ToolOutcome, ToolResult, ToolSet};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::Args;
use crate::attachments;
use crate::bridge::Bridge;
use crate::conversation::to_conversation;
use crate::js::{clamp_integer, is_nullish, is_truthy, pretty, to_js_string, to_text, trim};
use crate::queue::{EVENTS_POLL_LIMIT, EVENTS_WAIT_TIMEOUT_LIMIT, Filter, Gap};

/// Largest `limit` of `conversations_list` (upstream's `CONVERSATIONS_LIST_LIMIT`).
pub const CONVERSATIONS_LIST_LIMIT: u64 = 500;
/// Largest `limit` of `messages_read` and `attachments_fetch` (`MESSAGES_READ_LIMIT`).
pub const MESSAGES_READ_LIMIT: u64 = 200;

const APPROVAL_KINDS: [&str; 2] = ["exec", "plugin"];
const APPROVAL_DECISIONS: [&str; 3] = ["allow-once", "allow-always", "deny"];

/// Reads the gateway's sessions or this bridge's own queue: nothing changes, the same call
/// answers the same until new events arrive, and the domain is the gateway's, not the world's.
const READS: ToolAnnotations = ToolAnnotations::READ_ONLY;

/// Delivers a message to the conversation's people on their channel: nothing is destroyed, but
/// every call sends one more message, to recipients outside this machine.
const SENDS: ToolAnnotations =
    ToolAnnotations { read_only_hint: false, destructive_hint: false, idempotent_hint: false, open_world_hint: true };

/// Decides an approval: "allow" lets a pending command run on the gateway's hosts, which may do
/// anything, so a client should confirm. A decided request cannot be decided again (idempotent).
const DECIDES: ToolAnnotations =
    ToolAnnotations { read_only_hint: false, destructive_hint: true, idempotent_hint: true, open_world_hint: true };

/// What runs one tool: the bridge, the call's arguments (read and checked by the tool itself, in
/// zod's words), the call's cancellation.
type Run = for<'a> fn(&'a Bridge, Args<'a>, &'a CancellationToken) -> BoxFuture<'a, Outcome>;

/// One tool: its descriptor and what runs it.
fn def(tool: Tool, run: Run) -> (Tool, Run) {
    (tool, run)
}

/// The nine tools, in upstream order, as one [`ToolSet`] bound to `bridge`: what `tools/list`
/// shows and what `tools/call` runs.
pub(crate) fn tool_set(bridge: &Arc<Bridge>) -> ToolSet<Map<String, Value>> {
    ToolSet::new(definitions().into_iter().map(|(tool, run)| serve_tool(tool, run, bridge.clone())))
}

/// A tool of `serve` as a [`ToolDef`]. Its arguments are not checked against the schema before
/// it runs (`Checking::Handler`): each tool checks them as upstream's MCP SDK does, with zod's
/// wording (`args`), which a drop-in must answer byte for byte. Its answer is an MCP result
/// already (a summary text and `structuredContent`, as upstream), passed through unchanged.
fn serve_tool(tool: Tool, run: Run, bridge: Arc<Bridge>) -> ToolDef<Map<String, Value>> {
    let name: Arc<str> = tool.name.as_str().into();
    ToolDef::new(tool, move |arguments, ctx| {
        let (bridge, name) = (bridge.clone(), name.clone());
        async move {
            let outcome = run(&bridge, Args::new(&name, &arguments), &ctx.cancel).await;
            ToolOutcome::from(outcome.unwrap_or_else(ToolResult::error))
        }
        .boxed()
    })
    .with_checking(Checking::Handler)
}

/// The `tools/list` entries, in upstream order.
#[cfg(test)]
pub(crate) fn descriptors() -> Vec<Tool> {
    definitions().into_iter().map(|(tool, _)| tool).collect()
}

/// Every tool with what runs it, in upstream order.
fn definitions() -> Vec<(Tool, Run)> {
    let schema = |properties: Value, required: &[&str]| {
        let mut schema =
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": properties});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        schema
    };
    let int = |minimum: u64, maximum: u64| json!({"type": "integer", "minimum": minimum, "maximum": maximum});
    let string = || json!({"type": "string"});
    let non_empty = || json!({"type": "string", "minLength": 1});
    let cursor = || int(0, crate::args::MAX_SAFE_INTEGER);
    let tool = |name: &str, description: &str, input_schema: Value, annotations: ToolAnnotations| Tool {
        title: None,
        output_schema: None,
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: input_schema.into(),
        annotations: Some(annotations),
    };
    vec![
        def(
            tool(
                "conversations_list",
                "List OpenClaw channel-backed conversations available through session routes.",
                schema(
                    json!({"limit": int(1, CONVERSATIONS_LIST_LIMIT), "search": string(), "channel": string(),
                       "includeDerivedTitles": {"type": "boolean"}, "includeLastMessage": {"type": "boolean"}}),
                    &[],
                ),
                READS,
            ),
            |bridge, args, cancel| conversations_list(bridge, args, cancel).boxed(),
        ),
        def(
            tool(
                "conversation_get",
                "Get one OpenClaw conversation by session key.",
                schema(json!({"session_key": non_empty()}), &["session_key"]),
                READS,
            ),
            |bridge, args, cancel| conversation_get(bridge, args, cancel).boxed(),
        ),
        def(
            tool(
                "messages_read",
                "Read recent messages for one OpenClaw conversation.",
                schema(json!({"session_key": non_empty(), "limit": int(1, MESSAGES_READ_LIMIT)}), &["session_key"]),
                READS,
            ),
            |bridge, args, cancel| messages_read(bridge, args, cancel).boxed(),
        ),
        def(
            tool(
                "attachments_fetch",
                "List non-text attachments for a message in one OpenClaw conversation.",
                schema(
                    json!({"session_key": non_empty(), "message_id": non_empty(), "limit": int(1, MESSAGES_READ_LIMIT)}),
                    &["session_key", "message_id"],
                ),
                READS,
            ),
            |bridge, args, cancel| attachments_fetch(bridge, args, cancel).boxed(),
        ),
        def(
            tool(
                "events_poll",
                "Poll queued OpenClaw conversation events since a cursor.",
                schema(
                    json!({"after_cursor": cursor(), "session_key": string(), "limit": int(1, EVENTS_POLL_LIMIT)}),
                    &[],
                ),
                READS,
            ),
            |bridge, args, _| std::future::ready(events_poll(bridge, args)).boxed(),
        ),
        def(
            tool(
                "events_wait",
                "Wait for the next queued OpenClaw conversation event.",
                schema(
                    json!({"after_cursor": cursor(), "session_key": string(),
                       "timeout_ms": int(1, EVENTS_WAIT_TIMEOUT_LIMIT.as_millis() as u64)}),
                    &[],
                ),
                READS,
            ),
            |bridge, args, cancel| events_wait(bridge, args, cancel).boxed(),
        ),
        def(
            tool(
                "messages_send",
                "Send a message back through the same OpenClaw conversation route.",
                schema(json!({"session_key": non_empty(), "text": non_empty()}), &["session_key", "text"]),
                SENDS,
            ),
            |bridge, args, cancel| messages_send(bridge, args, cancel).boxed(),
        ),
        def(
            tool(
                "permissions_list_open",
                "List open OpenClaw exec or plugin approval requests visible through the Gateway.",
                schema(json!({}), &[]),
                READS,
            ),
            |bridge, args, _| std::future::ready(permissions_list_open(bridge, args)).boxed(),
        ),
        def(
            tool(
                "permissions_respond",
                "Allow or deny one pending OpenClaw exec or plugin approval request.",
                schema(
                    json!({"kind": {"type": "string", "enum": APPROVAL_KINDS}, "id": non_empty(),
                       "decision": {"type": "string", "enum": APPROVAL_DECISIONS}}),
                    &["kind", "id", "decision"],
                ),
                DECIDES,
            ),
            |bridge, args, cancel| permissions_respond(bridge, args, cancel).boxed(),
        ),
    ]
}

type Outcome = Result<ToolResult, String>;

fn success(text: String, structured: Value) -> ToolResult {
    ToolResult { content: vec![Content::Text { text }], structured_content: Some(structured), is_error: false }
}

/// `"<label>: <n>\n\n<JSON.stringify(payload, null, 2)>"` with `payload` as structured content.
fn printed(label: &str, count: usize, payload: Value) -> ToolResult {
    success(format!("{label}: {count}\n\n{}", pretty(&payload)), payload)
}

/// What a tool shows for a failed gateway request: the gateway's own message when it refused
/// (as upstream, e.g. `unsupported channel: imessage`), our description otherwise.
fn gateway_error_text(error: &GatewayError) -> String {
    match error {
        GatewayError::Rejected { error, .. } => error.message.clone(),
        other => other.to_string(),
    }
}

async fn request(
    client: &GatewayClient,
    method: &str,
    params: Value,
    cancel: &CancellationToken,
) -> Result<Value, String> {
    tokio::select! {
        response = client.request(method, params) => response.map_err(|error| gateway_error_text(&error)),
        () = cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.to_owned()),
    }
}

fn array_field(response: &Value, key: &str) -> Vec<Value> {
    response.get(key).and_then(Value::as_array).cloned().unwrap_or_default()
}

async fn conversations_list(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let limit = args.optional_int("limit", 1, Some(CONVERSATIONS_LIST_LIMIT));
    let search = args.optional_string("search");
    let channel = args.optional_string("channel");
    let derived_titles = args.optional_bool("includeDerivedTitles");
    let last_message = args.optional_bool("includeLastMessage");
    args.finish()?;

    let client = bridge.ready_client(cancel).await?;
    let mut params = Map::new();
    params.insert("limit".into(), clamp_integer(limit, 50, 1, CONVERSATIONS_LIST_LIMIT).into());
    if let Some(search) = search {
        params.insert("search".into(), search.into());
    }
    params.insert("includeDerivedTitles".into(), derived_titles.unwrap_or(true).into());
    params.insert("includeLastMessage".into(), last_message.unwrap_or(true).into());
    let response = request(&client, "sessions.list", Value::Object(params), cancel).await?;

    // Applied after the gateway's `limit`, as upstream.
    let wanted_channel = to_text(channel.map(Value::String).as_ref()).map(|c| c.to_lowercase());
    let conversations: Vec<Value> = array_field(&response, "sessions")
        .iter()
        .filter_map(to_conversation)
        .filter(|conversation| wanted_channel.as_ref().is_none_or(|wanted| conversation["channel"] == **wanted))
        .collect();
    Ok(printed("conversations", conversations.len(), json!({"conversations": conversations})))
}

/// `sessions.describe` for a trimmed key; `None` when the key is blank or has no route.
async fn find_conversation(
    bridge: &Bridge,
    session_key: &str,
    cancel: &CancellationToken,
) -> Result<Option<Value>, String> {
    let key = trim(session_key);
    if key.is_empty() {
        return Ok(None);
    }
    let client = bridge.ready_client(cancel).await?;
    let params = json!({"key": key, "includeDerivedTitles": true, "includeLastMessage": true});
    let response = request(&client, "sessions.describe", params, cancel).await?;
    Ok(response.get("session").filter(|session| is_truthy(session)).and_then(to_conversation))
}

fn session_key_text(conversation: &Value) -> String {
    conversation.get("sessionKey").map_or_else(|| "undefined".to_owned(), to_js_string)
}

async fn conversation_get(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let session_key = args.required_string("session_key");
    args.finish()?;
    let session_key = session_key.unwrap_or_default();
    match find_conversation(bridge, &session_key, cancel).await? {
        Some(conversation) => Ok(success(
            format!("conversation {}", session_key_text(&conversation)),
            json!({"conversation": conversation}),
        )),
        None => Err(format!("conversation not found: {session_key}")),
    }
}

async fn messages_read(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let session_key = args.required_string("session_key");
    let limit = args.optional_int("limit", 1, Some(MESSAGES_READ_LIMIT));
    args.finish()?;
    let client = bridge.ready_client(cancel).await?;
    let params =
        json!({"key": session_key.unwrap_or_default(), "limit": clamp_integer(limit, 20, 1, MESSAGES_READ_LIMIT)});
    let messages = array_field(&request(&client, "sessions.get", params, cancel).await?, "messages");
    Ok(printed("messages", messages.len(), json!({"messages": messages})))
}

/// Upstream `resolveMessageId`: `entry.id`, else `entry.__openclaw.id`, trimmed.
fn message_id_of(entry: &Value) -> Option<String> {
    to_text(entry.get("id")).or_else(|| to_text(entry.get("__openclaw").and_then(|meta| meta.get("id"))))
}

async fn attachments_fetch(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let session_key = args.required_string("session_key");
    let message_id = args.required_string("message_id");
    let limit = args.optional_int("limit", 1, Some(MESSAGES_READ_LIMIT));
    args.finish()?;
    let (session_key, message_id) = (session_key.unwrap_or_default(), message_id.unwrap_or_default());

    let client = bridge.ready_client(cancel).await?;
    let message = if bridge.supports_exact_message_lookup() {
        let params = json!({"sessionKey": session_key, "messageId": message_id});
        let response = request(&client, "chat.message.get", params, cancel).await?;
        (response.get("ok") == Some(&Value::Bool(true))).then(|| response.get("message").cloned()).flatten()
    } else {
        // Gateways without `chat.message.get`: scan the newest `limit` messages (default 100).
        let params = json!({"key": session_key, "limit": clamp_integer(limit, 100, 1, MESSAGES_READ_LIMIT)});
        let messages = array_field(&request(&client, "sessions.get", params, cancel).await?, "messages");
        messages.into_iter().find(|entry| message_id_of(entry).as_deref() == Some(message_id.as_str()))
    };
    let Some(message) = message.filter(is_truthy) else {
        return Err(format!("message not found: {message_id}"));
    };
    let attachments = attachments::extract(&message);
    Ok(success(format!("attachments: {}", attachments.len()), json!({"attachments": attachments, "message": message})))
}

/// `after_cursor` and `session_key` as upstream reads them (a blank key means no filter).
fn event_filter(args: &mut Args<'_>) -> Filter {
    let after_cursor = args.optional_int("after_cursor", 0, None).unwrap_or(0);
    let session_key = args.optional_string("session_key");
    Filter { after_cursor, session_key: to_text(session_key.map(Value::String).as_ref()) }
}

fn with_gap(mut structured: Value, gap: Option<Gap>) -> Value {
    if let Some(gap) = gap {
        structured["gap"] = gap.to_value();
    }
    structured
}

fn events_poll(bridge: &Bridge, mut args: Args<'_>) -> Outcome {
    let filter = event_filter(&mut args);
    let limit = args.optional_int("limit", 1, Some(EVENTS_POLL_LIMIT));
    args.finish()?;
    let limit = clamp_integer(limit, 20, 1, EVENTS_POLL_LIMIT) as usize;
    let polled = bridge.queue().poll(&filter, limit);
    let text = format!("events: {}", polled.events.len());
    Ok(success(text, with_gap(json!({"events": polled.events, "next_cursor": polled.next_cursor}), polled.gap)))
}

async fn events_wait(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let filter = event_filter(&mut args);
    let max_timeout = EVENTS_WAIT_TIMEOUT_LIMIT.as_millis() as u64;
    let timeout_ms = args.optional_int("timeout_ms", 1, Some(max_timeout));
    args.finish()?;
    let timeout = std::time::Duration::from_millis(clamp_integer(timeout_ms, 30_000, 1, max_timeout));
    let waited = bridge.queue().wait(&filter, timeout, cancel).await;
    let text = match (&waited.event, waited.gap) {
        (Some(event), _) => format!("event {}", event["cursor"]),
        (None, Some(gap)) => format!("event gap before {}", gap.oldest_available_cursor),
        (None, None) => "timeout".to_owned(),
    };
    Ok(success(text, with_gap(json!({"event": waited.event}), waited.gap)))
}

async fn messages_send(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let session_key = args.required_string("session_key");
    let text = args.required_string("text");
    args.finish()?;
    let (session_key, text) = (session_key.unwrap_or_default(), text.unwrap_or_default());
    let Some(conversation) = find_conversation(bridge, &session_key, cancel).await? else {
        return Err(format!("Conversation not found for session {session_key}"));
    };
    // The stored route, exactly: nothing here can address a recipient the gateway did not record.
    let mut params = Map::new();
    for key in ["to", "channel", "accountId"] {
        if let Some(value) = conversation.get(key) {
            params.insert(key.into(), value.clone());
        }
    }
    let thread = conversation.get("threadId");
    if !is_nullish(thread) {
        params.insert("threadId".into(), thread.map(to_js_string).unwrap_or_default().into());
    }
    params.insert("message".into(), text.into());
    if let Some(key) = conversation.get("sessionKey") {
        params.insert("sessionKey".into(), key.clone());
    }
    params.insert("idempotencyKey".into(), uuid::Uuid::new_v4().to_string().into());
    let client = bridge.ready_client(cancel).await?;
    let result = request(&client, "send", Value::Object(params), cancel).await?;
    Ok(success("sent".to_owned(), json!({"result": result})))
}

fn permissions_list_open(bridge: &Bridge, args: Args<'_>) -> Outcome {
    // No arguments; any sent are ignored, as zod's object strips them.
    args.finish()?;
    let approvals = bridge.open_approvals();
    Ok(success(format!("approvals: {}", approvals.len()), json!({"approvals": approvals})))
}

async fn permissions_respond(bridge: &Bridge, mut args: Args<'_>, cancel: &CancellationToken) -> Outcome {
    let kind = args.required_enum("kind", &APPROVAL_KINDS);
    let id = args.required_string("id");
    let decision = args.required_enum("decision", &APPROVAL_DECISIONS);
    args.finish()?;
    let (Some(kind), Some(id), Some(decision)) = (kind, id, decision) else {
        unreachable!("finish() refuses missing fields");
    };
    let method = if APPROVAL_KINDS[kind] == "exec" { "exec.approval.resolve" } else { "plugin.approval.resolve" };
    let client = bridge.ready_client(cancel).await?;
    let result = request(&client, method, json!({"id": id, "decision": APPROVAL_DECISIONS[decision]}), cancel).await?;
    Ok(success("approval resolved".to_owned(), json!({"result": result})))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden `tools/list` of the real bridge (`openclaw mcp serve` 2026.9.6, `docs/serve.md`
    /// §4), minus `execution`, which the dispatcher's wire style adds to every entry.
    const GOLDEN_TOOLS: &str = r#"[{"name":"conversations_list","description":"List OpenClaw channel-backed conversations available through session routes.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":500},"search":{"type":"string"},"channel":{"type":"string"},"includeDerivedTitles":{"type":"boolean"},"includeLastMessage":{"type":"boolean"}}}},{"name":"conversation_get","description":"Get one OpenClaw conversation by session key.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"session_key":{"type":"string","minLength":1}},"required":["session_key"]}},{"name":"messages_read","description":"Read recent messages for one OpenClaw conversation.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"session_key":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":200}},"required":["session_key"]}},{"name":"attachments_fetch","description":"List non-text attachments for a message in one OpenClaw conversation.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"session_key":{"type":"string","minLength":1},"message_id":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":200}},"required":["session_key","message_id"]}},{"name":"events_poll","description":"Poll queued OpenClaw conversation events since a cursor.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"after_cursor":{"type":"integer","minimum":0,"maximum":9007199254740991},"session_key":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":200}}}},{"name":"events_wait","description":"Wait for the next queued OpenClaw conversation event.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"after_cursor":{"type":"integer","minimum":0,"maximum":9007199254740991},"session_key":{"type":"string"},"timeout_ms":{"type":"integer","minimum":1,"maximum":300000}}}},{"name":"messages_send","description":"Send a message back through the same OpenClaw conversation route.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"session_key":{"type":"string","minLength":1},"text":{"type":"string","minLength":1}},"required":["session_key","text"]}},{"name":"permissions_list_open","description":"List open OpenClaw exec or plugin approval requests visible through the Gateway.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}}},{"name":"permissions_respond","description":"Allow or deny one pending OpenClaw exec or plugin approval request.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"kind":{"type":"string","enum":["exec","plugin"]},"id":{"type":"string","minLength":1},"decision":{"type":"string","enum":["allow-once","allow-always","deny"]}},"required":["kind","id","decision"]}}]"#;

    #[test]
    fn tools_list_is_byte_identical_to_the_golden_one_apart_from_the_added_hints() {
        let upstream: Vec<Tool> = descriptors().into_iter().map(|tool| Tool { annotations: None, ..tool }).collect();
        assert_eq!(serde_json::to_string(&upstream).unwrap(), GOLDEN_TOOLS);
    }

    #[test]
    fn only_sending_and_deciding_are_not_read_only() {
        for tool in descriptors() {
            let hints = tool.annotations.expect("every tool has hints");
            let hints = (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint);
            // (read-only, destructive, idempotent, open world)
            let expected = match tool.name.as_str() {
                "messages_send" => (false, false, false, true),
                "permissions_respond" => (false, true, true, true),
                _ => (true, false, true, false),
            };
            assert_eq!(hints, expected, "{}", tool.name);
        }
    }

    #[test]
    fn refused_requests_show_the_gateway_message_verbatim() {
        let refused = GatewayError::Rejected {
            method: "send".into(),
            error: Box::new(clawmcp_gateway::ErrorShape::new("INVALID_REQUEST", "unsupported channel: imessage")),
        };
        assert_eq!(gateway_error_text(&refused), "unsupported channel: imessage");
        let timeout = GatewayError::Timeout { method: "send".into(), after: std::time::Duration::from_secs(180) };
        assert!(gateway_error_text(&timeout).contains("no response within 180s"));
    }
}
