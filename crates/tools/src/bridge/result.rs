//! A gateway tool's `result` (the `result` of `{ok:true, result}`) as an MCP tool result.
//!
//! We map it the way OpenClaw's own MCP server maps the same tools (2026.9.6
//! `src/gateway/mcp-http.handlers.ts`), so a client sees what OpenClaw itself would show:
//! - `result.content`, when it is an array, becomes the MCP content: each valid text or image
//!   block as is, anything else as its compact JSON in a text block;
//! - any other result becomes one text block: a string as is, other values as compact JSON;
//! - `isError` follows OpenClaw's `isToolResultError` on `result.details`: `ok`/`success` false,
//!   an error-like `status` (not overridden by `ok`/`success` true), `timedOut`, a truthy `error`,
//!   or a non-zero `exitCode`.
//!
//! The upstream Node bridge instead printed the whole `{content, details}` object as indented
//! JSON, which doubled every payload and hid images; the content blocks are what the gateway
//! means the model to read.

use clawmcp_mcp::{Content, ToolResult};
use serde_json::Value;

/// `details.status` values OpenClaw treats as a failed tool run.
const ERROR_STATUSES: [&str; 16] = [
    "error",
    "failed",
    "failure",
    "timeout",
    "timed_out",
    "blocked",
    "denied",
    "forbidden",
    "unavailable",
    "approval-unavailable",
    "disabled",
    "aborted",
    "cancelled",
    "canceled",
    "killed",
    "invalid",
];

/// Maps a gateway `result` to the MCP result.
pub fn tool_result(result: &Value) -> ToolResult {
    let content = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().map(content_block).collect(),
        _ => vec![Content::Text { text: compact_text(result) }],
    };
    ToolResult { content, structured_content: None, is_error: is_tool_result_error(result) }
}

fn content_block(block: &Value) -> Content {
    let field = |key: &str| block.get(key).and_then(Value::as_str);
    match field("type") {
        Some("text") if field("text").is_some() => Content::Text { text: field("text").unwrap_or_default().to_owned() },
        Some("image") if field("data").is_some() && field("mimeType").is_some() => Content::Image {
            data: field("data").unwrap_or_default().to_owned(),
            mime_type: field("mimeType").unwrap_or_default().to_owned(),
        },
        _ => Content::Text { text: compact_text(block) },
    }
}

fn compact_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// OpenClaw's `isToolResultError`, on `result.details`.
pub fn is_tool_result_error(result: &Value) -> bool {
    let Some(details) = result.get("details").filter(|d| d.is_object()) else { return false };
    let flag = |key: &str| details.get(key).and_then(Value::as_bool);
    if flag("ok") == Some(false) || flag("success") == Some(false) {
        return true;
    }
    let explicitly_successful = flag("ok") == Some(true) || flag("success") == Some(true);
    let status = details.get("status").and_then(Value::as_str).map(|s| s.trim().to_lowercase());
    if status.as_deref().is_some_and(|s| ERROR_STATUSES.contains(&s)) && !explicitly_successful {
        return true;
    }
    if flag("timedOut") == Some(true) || details.get("error").is_some_and(truthy) {
        return true;
    }
    if status.as_deref() == Some("completed") {
        return false;
    }
    details.get("exitCode").and_then(Value::as_f64).is_some_and(|code| code != 0.0)
}

/// JavaScript truthiness, for `Boolean(details.error)`.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_blocks_pass_through_and_details_stay_out() {
        let result = json!({
            "content": [{"type": "text", "text": "{\n  \"count\": 1\n}"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
            "details": {"count": 1}
        });
        let mapped = tool_result(&result);
        assert!(!mapped.is_error);
        assert_eq!(
            mapped.content,
            vec![
                Content::Text { text: "{\n  \"count\": 1\n}".into() },
                Content::Image { data: "AA==".into(), mime_type: "image/png".into() }
            ]
        );
    }

    #[test]
    fn unknown_blocks_and_non_content_results_become_compact_json_text() {
        let odd = tool_result(&json!({"content": [{"type": "resource", "resource": {"uri": "x"}}, {"type": "text"}]}));
        assert_eq!(
            odd.content,
            vec![
                Content::Text { text: r#"{"type":"resource","resource":{"uri":"x"}}"#.into() },
                Content::Text { text: r#"{"type":"text"}"#.into() }
            ]
        );
        assert_eq!(tool_result(&json!("plain")).first_text(), Some("plain"));
        assert_eq!(tool_result(&json!({"status": "ok"})).first_text(), Some(r#"{"status":"ok"}"#));
        assert_eq!(tool_result(&json!(null)).first_text(), Some("null"));
    }

    #[test]
    fn error_detection_follows_openclaw() {
        let error = |details: Value| is_tool_result_error(&json!({"content": [], "details": details}));
        assert!(error(json!({"status": "error", "error": "Yield not supported in this context"})));
        assert!(error(json!({"status": " Forbidden "})));
        assert!(error(json!({"ok": false})));
        assert!(error(json!({"success": false, "ok": true})));
        assert!(error(json!({"timedOut": true})));
        assert!(error(json!({"error": "boom"})));
        assert!(error(json!({"exitCode": 2})));
        assert!(!error(json!({"status": "error", "ok": true})), "explicit success overrides the status");
        assert!(!error(json!({"status": "completed", "exitCode": 1})));
        assert!(!error(json!({"error": "", "exitCode": 0, "status": "accepted"})));
        assert!(!error(json!({"error": null, "count": 0})));
        assert!(!is_tool_result_error(&json!({"status": "error"})), "only details count");
        assert!(!is_tool_result_error(&json!({"details": "error"})));
    }
}
