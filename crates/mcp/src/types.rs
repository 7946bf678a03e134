//! MCP message bodies we produce: tool descriptors, tool results, content blocks, and the
//! per-call context handed to a tool (cancellation, progress).
//!
//! Hand-written rather than taken from an SDK so the wire stays exactly what the spec pins
//! (protocol 2024-11-05 shapes, `isError` always present, no newer-spec fields).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Behaviour hints a client may show to a user or use to decide on confirmation. All four are
/// always emitted so a reader never has to know the spec's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

impl ToolAnnotations {
    /// Reads local state only.
    pub const READ_ONLY: ToolAnnotations = ToolAnnotations {
        read_only_hint: true,
        destructive_hint: false,
        idempotent_hint: true,
        open_world_hint: false,
    };
    /// Changes something but never destroys data (e.g. shows a notification).
    pub const ADDITIVE: ToolAnnotations = ToolAnnotations {
        read_only_hint: false,
        destructive_hint: false,
        idempotent_hint: false,
        open_world_hint: false,
    };
    /// Can do anything the user can (runs programs, overwrites files).
    pub const DESTRUCTIVE: ToolAnnotations = ToolAnnotations {
        read_only_hint: false,
        destructive_hint: true,
        idempotent_hint: false,
        open_world_hint: true,
    };
}

/// One entry of `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

/// The schema for a command that publishes none: any object (spec 000's permissive fallback).
pub fn permissive_schema() -> Value {
    json!({"type": "object", "additionalProperties": true, "properties": {}})
}

/// A content block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

/// The result of `tools/call`. Tool failures are results with `is_error`, never JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

impl ToolResult {
    /// Success whose single text block is the compact JSON of `payload`.
    pub fn json(payload: &Value) -> Self {
        ToolResult::text(payload.to_string())
    }

    pub fn text(text: impl Into<String>) -> Self {
        ToolResult { content: vec![Content::Text { text: text.into() }], structured_content: None, is_error: false }
    }

    /// A tool error with a message for the model (and the human reading the transcript).
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult { content: vec![Content::Text { text: message.into() }], structured_content: None, is_error: true }
    }

    /// The text of the first text block, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.content.iter().find_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            Content::Image { .. } => None,
        })
    }
}

/// Sends serialised server-to-client frames (notifications) on transports that can carry them.
/// Progress and channel notifications use it; unary HTTP has none.
pub trait FrameSink: Send + Sync {
    /// Queues a frame without waiting. Returns false if it was dropped (queue full or closed):
    /// callers only use this for advisory frames such as progress.
    fn try_send(&self, frame: String) -> bool;
}

/// Reports `notifications/progress` for one call, only when the client asked with a
/// `progressToken`.
#[derive(Clone)]
pub struct Progress {
    token: Value,
    sink: Arc<dyn FrameSink>,
}

impl Progress {
    pub fn new(token: Value, sink: Arc<dyn FrameSink>) -> Self {
        Progress { token, sink }
    }

    /// Sends one progress notification; `progress` must increase between calls (MCP rule).
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut params = Map::new();
        params.insert("progressToken".into(), self.token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(total) = total {
            params.insert("total".into(), json!(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        let frame = crate::jsonrpc::notification_frame("notifications/progress", &Value::Object(params));
        if !self.sink.try_send(frame) {
            tracing::debug!("progress notification dropped: client is not reading");
        }
    }
}

/// What a tool gets besides its arguments.
#[derive(Clone)]
pub struct CallContext {
    /// Fires when the client cancels the call, or the transport gives up on it (deadline,
    /// shutdown). The tool must stop its work (kill processes, release waits) and return.
    pub cancel: CancellationToken,
    /// Present when the client sent `_meta.progressToken` and the transport can stream.
    pub progress: Option<Progress>,
    /// The request's `params._meta`, for extensions.
    pub meta: Option<Value>,
}

impl CallContext {
    /// A context that never cancels and reports no progress (tests, internal calls).
    pub fn detached() -> Self {
        CallContext { cancel: CancellationToken::new(), progress: None, meta: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_result_wire_shape() {
        let ok = serde_json::to_value(ToolResult::json(&json!({"a": 1}))).unwrap();
        assert_eq!(ok, json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "isError": false}));
        let err = serde_json::to_value(ToolResult::error("boom")).unwrap();
        assert_eq!(err, json!({"content": [{"type": "text", "text": "boom"}], "isError": true}));
        let image = Content::Image { data: "AA==".into(), mime_type: "image/png".into() };
        assert_eq!(
            serde_json::to_value(image).unwrap(),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
        );
    }

    #[test]
    fn tool_wire_shape_has_camel_case_and_all_hints() {
        let tool = Tool {
            name: "x.y".into(),
            description: "d".into(),
            input_schema: permissive_schema(),
            annotations: Some(ToolAnnotations::READ_ONLY),
        };
        let value = serde_json::to_value(tool).unwrap();
        assert_eq!(value["inputSchema"]["type"], "object");
        assert_eq!(
            value["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
    }
}
