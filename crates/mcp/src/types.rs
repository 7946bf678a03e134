//! MCP message bodies we produce: tool descriptors, tool results, content blocks, and the
//! per-call context handed to a tool (cancellation, progress with its monotonic value rule).
//!
//! Hand-written rather than taken from an SDK so the wire stays exactly what the spec pins
//! (protocol 2024-11-05 shapes, `isError` always present, no newer-spec fields).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
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
    pub input_schema: Schema,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

/// A tool's input JSON Schema, serialised once and shared.
///
/// `tools/list` is answered from the live tool list on every call, and schemas are most of its
/// bytes. Building them as `Value` trees per call cost ~250 us of allocation and string
/// escaping per list (measured in bench/node.sh); holding the finished JSON text behind an `Arc`
/// makes a list a handful of reference-count bumps and one memcpy per schema.
#[derive(Clone)]
pub struct Schema(Arc<RawValue>);

impl Schema {
    /// Serialises `schema` once.
    pub fn new(schema: &Value) -> Schema {
        let raw = serde_json::value::to_raw_value(schema).expect("a JSON value always serialises");
        Schema(Arc::from(raw))
    }

    /// The schema as a `Value`, for code that inspects or rewrites it (parses the text).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).expect("a Schema always holds valid JSON")
    }

    /// The exact JSON text served.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

impl From<Value> for Schema {
    fn from(schema: Value) -> Schema {
        Schema::new(&schema)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.0.get() == other.0.get()
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for Schema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// The schema for a command that publishes none: any object (spec 000's permissive fallback).
pub fn permissive_schema() -> Schema {
    static PERMISSIVE: std::sync::LazyLock<Schema> = std::sync::LazyLock::new(|| {
        Schema::new(&json!({"type": "object", "additionalProperties": true, "properties": {}}))
    });
    PERMISSIVE.clone()
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
///
/// Two sources share one `Progress`: the tool (through [`CallContext::progress`]) and the
/// dispatcher's heartbeat, which speaks whenever the tool has been quiet for a while so that
/// clients which reset their request timeout on progress keep waiting. MCP requires `progress`
/// to increase with every notification, so all clones share one state and a value that is not
/// above the last one sent, from either source, is dropped rather than sent. Once the call's
/// answer is decided the dispatcher closes it: nothing follows the response.
#[derive(Clone)]
pub struct Progress {
    token: Value,
    sink: Arc<dyn FrameSink>,
    state: Arc<Mutex<ProgressState>>,
}

struct ProgressState {
    /// The last `progress` value sent; every later one must be greater.
    last_value: Option<f64>,
    /// When the last notification went out, or when the call started: the heartbeat measures
    /// the tool's silence from here.
    last_sent_at: Instant,
    /// The call's answer is decided; progress after it would arrive after the response.
    closed: bool,
}

impl Progress {
    pub fn new(token: Value, sink: Arc<dyn FrameSink>) -> Self {
        let state = ProgressState { last_value: None, last_sent_at: Instant::now(), closed: false };
        Progress { token, sink, state: Arc::new(Mutex::new(state)) }
    }

    /// The client's `progressToken`, echoed in every notification.
    pub fn token(&self) -> &Value {
        &self.token
    }

    /// Sends one progress notification. Returns false if it was not sent: `progress` is not a
    /// finite number above the last value sent (by the tool or the heartbeat), the call has
    /// already been answered, or the client is not reading (progress is advisory).
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let mut state = self.lock();
        if state.closed || !progress.is_finite() || state.last_value.is_some_and(|last| progress <= last) {
            tracing::debug!(progress, last = ?state.last_value, "progress not sent: not above the last value or call over");
            return false;
        }
        self.send(&mut state, progress, total, message)
    }

    /// The heartbeat: if nothing was sent for `quiet`, sends the next whole number above the last
    /// value with `message()`. Returns when the next heartbeat is due.
    pub(crate) fn heartbeat_if_quiet(&self, quiet: Duration, message: impl FnOnce() -> String) -> Instant {
        let mut state = self.lock();
        let now = Instant::now();
        let due = state.last_sent_at + quiet;
        if state.closed || now < due {
            return due;
        }
        let next = state.last_value.map_or(1.0, |last| last.floor() + 1.0);
        self.send(&mut state, next, None, Some(&message()));
        now + quiet
    }

    /// Ends reporting: the call's answer is about to be sent.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
    }

    /// Sends under the state lock, so that two sources can never put values on the wire out of
    /// order. The value counts as used even if the frame is dropped: the next one must still be
    /// above anything the client may have seen.
    fn send(&self, state: &mut ProgressState, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let mut params = Map::new();
        params.insert("progressToken".into(), self.token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(total) = total {
            params.insert("total".into(), json!(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        state.last_value = Some(progress);
        state.last_sent_at = Instant::now();
        let frame = crate::jsonrpc::notification_frame("notifications/progress", &Value::Object(params));
        let sent = self.sink.try_send(frame);
        if !sent {
            tracing::debug!("progress notification dropped: client is not reading");
        }
        sent
    }

    fn lock(&self) -> MutexGuard<'_, ProgressState> {
        // The state is three plain fields, consistent after any panic; keep reporting.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What a tool gets besides its arguments.
#[derive(Clone)]
pub struct CallContext {
    /// Fires when the client cancels the call, or the transport gives up on it (deadline,
    /// shutdown). The tool must stop its work (kill processes, release waits) and return.
    pub cancel: CancellationToken,
    /// Present when the client sent `_meta.progressToken` and the transport can stream. The
    /// dispatcher already keeps the client waiting with a heartbeat while the call runs; a tool
    /// reports here only when it has real progress to tell (bytes done, step n of m).
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

    struct Recorded(Mutex<Vec<Value>>);

    impl FrameSink for Recorded {
        fn try_send(&self, frame: String) -> bool {
            self.0.lock().unwrap().push(serde_json::from_str(&frame).unwrap());
            true
        }
    }

    #[tokio::test(start_paused = true)]
    async fn progress_values_only_ever_increase_and_stop_at_close() {
        let sink = Arc::new(Recorded(Mutex::new(Vec::new())));
        let progress = Progress::new(json!("t"), sink.clone());
        assert!(progress.report(0.5, Some(1.0), None));
        assert!(!progress.report(0.5, Some(1.0), None), "equal to the last value");
        assert!(!progress.report(0.25, None, None), "below the last value");
        assert!(!progress.report(f64::NAN, None, None) && !progress.report(f64::INFINITY, None, None));
        // The heartbeat waits for silence, then takes the next whole number above the last value.
        let quiet = Duration::from_secs(5);
        let due = progress.heartbeat_if_quiet(quiet, || "never sent".into());
        assert_eq!(due, Instant::now() + quiet, "not quiet yet: nothing sent, due a full interval after the report");
        tokio::time::advance(quiet).await;
        progress.heartbeat_if_quiet(quiet, || "beat".into());
        assert!(progress.report(1.5, None, None));
        progress.close();
        assert!(!progress.report(2.0, None, None), "nothing after close");
        tokio::time::advance(quiet).await;
        progress.heartbeat_if_quiet(quiet, || "after close".into());
        let sent: Vec<(f64, Value)> = sink
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|frame| (frame["params"]["progress"].as_f64().unwrap(), frame["params"]["message"].clone()))
            .collect();
        assert_eq!(sent, [(0.5, Value::Null), (1.0, json!("beat")), (1.5, Value::Null)]);
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

    #[test]
    fn a_schema_serialises_exactly_as_the_value_it_was_built_from() {
        let value = json!({"type": "object", "properties": {"z": {"type": "string"}, "a": {"enum": ["é", "\"q\""]}}});
        let schema = Schema::from(value.clone());
        let tool = Tool { name: "t".into(), description: "d".into(), input_schema: schema.clone(), annotations: None };
        // Embedded in a tool, in a frame: byte for byte what the Value tree would have produced.
        let via_schema = serde_json::to_string(&tool).unwrap();
        let expected =
            format!(r#"{{"name":"t","description":"d","inputSchema":{}}}"#, serde_json::to_string(&value).unwrap());
        assert_eq!(via_schema, expected);
        assert_eq!(serde_json::value::to_raw_value(&tool).unwrap().get(), expected);
        assert_eq!(schema.to_value(), value, "key order survives the round trip");
        assert_eq!(schema, Schema::new(&value));
        assert_ne!(schema, permissive_schema());
    }
}
