//! MCP message bodies we produce: tool descriptors, tool results, content blocks, and the
//! per-call context handed to a tool (cancellation, progress with its monotonic value rule).
//!
//! Hand-written rather than taken from an SDK so the wire stays exactly what each revision pins:
//! a field or block a revision introduced is written only for clients that negotiated it
//! ([`Rendered`]: the same value, serialised for one [`ProtocolVersion`]), so a 2024-11-05 client
//! sees 2024-11-05 shapes (`isError` always present, no newer-spec fields).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::version::ProtocolVersion;

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

/// One entry of `tools/list`. Serialise it with [`Rendered`] for a client's revision: `title`
/// and `outputSchema` exist from 2025-06-18 on.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    /// A human-readable name for clients' UIs (2025-06-18).
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Schema,
    /// The JSON Schema of `structuredContent` when the result shape is fixed (2025-06-18).
    pub output_schema: Option<Schema>,
    pub annotations: Option<ToolAnnotations>,
}

/// `value` as a client speaking `version` may see it.
#[derive(Debug, Clone, Copy)]
pub struct Rendered<'a, T> {
    pub value: &'a T,
    pub version: ProtocolVersion,
}

impl<'a, T> Rendered<'a, T> {
    pub fn new(value: &'a T, version: ProtocolVersion) -> Self {
        Rendered { value, version }
    }
}

/// Every field, as the newest revision has them (snapshots, `--list-tools`, logs). What a client
/// receives goes through [`Rendered`] instead.
impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Rendered::new(self, ProtocolVersion::NEWEST).serialize(serializer)
    }
}

impl Serialize for Rendered<'_, Tool> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let tool = self.value;
        let newer = self.version.at_least(ProtocolVersion::V2025_06_18);
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &tool.name)?;
        if let (true, Some(title)) = (newer, &tool.title) {
            map.serialize_entry("title", title)?;
        }
        map.serialize_entry("description", &tool.description)?;
        map.serialize_entry("inputSchema", &tool.input_schema)?;
        if let (true, Some(schema)) = (newer, &tool.output_schema) {
            map.serialize_entry("outputSchema", schema)?;
        }
        if let Some(annotations) = &tool.annotations {
            map.serialize_entry("annotations", annotations)?;
        }
        map.end()
    }
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

/// The schema for a command that publishes none: any object (the upstream tray's permissive
/// fallback).
pub fn permissive_schema() -> Schema {
    static PERMISSIVE: std::sync::LazyLock<Schema> = std::sync::LazyLock::new(|| {
        Schema::new(&json!({"type": "object", "additionalProperties": true, "properties": {}}))
    });
    PERMISSIVE.clone()
}

/// A content block of a tool result. Binary data (`data`, `blob`) is base64, as the spec has it;
/// images and audio always travel in their own blocks, never as base64 inside text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// 2025-03-26; an older client gets a text block saying what was left out.
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An embedded resource (a file's contents with its URI).
    Resource {
        resource: EmbeddedResource,
    },
    /// A link to a resource the client may fetch (2025-06-18); an older client gets a text block
    /// with the URI.
    ResourceLink {
        uri: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
}

/// The `resource` of an embedded resource block: text or base64 `blob` contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EmbeddedResource {
    Text {
        uri: String,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        text: String,
    },
    Blob {
        uri: String,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        blob: String,
    },
}

impl Content {
    /// The block as `version` can carry it: a block type the revision does not define becomes a
    /// text block that says what it held, so an older client still learns of it.
    pub fn for_version(&self, version: ProtocolVersion) -> std::borrow::Cow<'_, Content> {
        use std::borrow::Cow;
        match self {
            Content::Audio { data, mime_type } if !version.at_least(ProtocolVersion::V2025_03_26) => {
                Cow::Owned(Content::Text {
                    text: format!(
                        "[audio ({mime_type}, {} bytes) left out: protocol revision {version} has no audio content; \
                         connect with 2025-03-26 or newer to receive it]",
                        base64_decoded_len(data)
                    ),
                })
            }
            Content::ResourceLink { uri, name, description, .. } if !version.at_least(ProtocolVersion::V2025_06_18) => {
                let about = description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
                Cow::Owned(Content::Text { text: format!("Resource {name} at {uri}{about}") })
            }
            other => Cow::Borrowed(other),
        }
    }
}

/// Bytes a padded base64 text decodes to.
fn base64_decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// An image a client may show for a server (MCP 2025-11-25 `Icon`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// A `data:` URI: a loopback or stdio server has no URL a client could fetch, and a client
    /// must not need the network to show it.
    pub src: String,
    pub mime_type: &'static str,
    /// `["any"]` for a scalable image.
    pub sizes: Vec<&'static str>,
}

impl Icon {
    /// clawmcp's own icon (three claw marks), which `clawmcp node` and `clawmcp tools` send.
    pub fn clawmcp() -> Icon {
        Icon::svg(include_str!("../assets/clawmcp.svg"))
    }

    /// An SVG document as an icon of any size.
    pub fn svg(document: &str) -> Icon {
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(document);
        Icon { src: format!("data:image/svg+xml;base64,{data}"), mime_type: "image/svg+xml", sizes: vec!["any"] }
    }
}

/// The result of `tools/call`. Tool failures are results with `is_error`, never JSON-RPC errors.
/// The derived `Serialize` writes every field as it is (the shape `openclaw mcp serve`'s SDK
/// writes whatever the revision); [`ResultFrame`] writes it for one revision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

/// A tool result as a client of `version` sees it: blocks the revision lacks become text
/// ([`Content::for_version`]), `structuredContent` only from 2025-06-18 (a text block is always
/// there for older clients), and `isError: false` written or left out as the wire style says.
pub struct ResultFrame<'a> {
    pub result: &'a ToolResult,
    pub version: ProtocolVersion,
    pub explicit_success_flag: bool,
}

impl Serialize for ResultFrame<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Blocks<'a>(&'a [Content], ProtocolVersion);
        impl Serialize for Blocks<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().map(|block| block.for_version(self.1)))
            }
        }
        let result = self.result;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &Blocks(&result.content, self.version))?;
        if let (true, Some(structured)) =
            (self.version.at_least(ProtocolVersion::V2025_06_18), &result.structured_content)
        {
            map.serialize_entry("structuredContent", structured)?;
        }
        if result.is_error || self.explicit_success_flag {
            map.serialize_entry("isError", &result.is_error)?;
        }
        map.end()
    }
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
            _ => None,
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

    /// Says what the call is doing now (`waiting for approval ...`) with the next whole number
    /// above the last value; it also resets the heartbeat's quiet time, so a tool that repeats
    /// this more often than [`crate::server::PROGRESS_INTERVAL`] keeps its own words on screen.
    /// Returns false if it was not sent (the call is answered, or the client is not reading).
    pub fn note(&self, message: &str) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        let next = state.last_value.map_or(1.0, |last| last.floor() + 1.0);
        self.send(&mut state, next, None, Some(message))
    }

    /// The heartbeat: if nothing was sent for `quiet`, sends the next whole number above the last
    /// value with `message()`. Returns when the next heartbeat is due.
    pub(crate) fn heartbeat_if_quiet(&self, quiet: Duration, message: impl FnOnce() -> String) -> Instant {
        let now = Instant::now();
        let due = self.lock().last_sent_at + quiet;
        if now < due {
            return due;
        }
        self.note(&message());
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
    /// The request behind the call, when it was one (a `tools/call` notification has no id):
    /// for extensions that bind to its exact id and authentication (the node's file channel).
    pub request: Option<RequestFacts>,
}

/// What the transport knows of the request behind a tool call.
#[derive(Debug, Clone)]
pub struct RequestFacts {
    /// The JSON-RPC id, exactly as sent (matched as cancellation matches ids).
    pub id: crate::jsonrpc::RequestId,
    /// The authentication generation that admitted the request (see
    /// [`crate::RequestContext::auth_generation`]); `None` on a transport without one.
    pub auth_generation: Option<u64>,
}

impl CallContext {
    /// A context that never cancels and reports no progress (tests, internal calls).
    pub fn detached() -> Self {
        CallContext { cancel: CancellationToken::new(), progress: None, meta: None, request: None }
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
            title: None,
            description: "d".into(),
            input_schema: permissive_schema(),
            output_schema: None,
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
        let tool = Tool {
            name: "t".into(),
            title: None,
            description: "d".into(),
            input_schema: schema.clone(),
            output_schema: None,
            annotations: None,
        };
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

    fn full_tool() -> Tool {
        Tool {
            name: "device.info".into(),
            title: Some("Device info".into()),
            description: "d".into(),
            input_schema: permissive_schema(),
            output_schema: Some(Schema::new(&json!({"type": "object"}))),
            annotations: Some(ToolAnnotations::READ_ONLY),
        }
    }

    fn keys(value: &Value) -> Vec<&str> {
        value.as_object().unwrap().keys().map(String::as_str).collect()
    }

    /// Which `tools/list` fields each revision sees: `title` and `outputSchema` from 2025-06-18.
    #[test]
    fn tool_fields_per_revision() {
        let tool = full_tool();
        let table = [
            (ProtocolVersion::V2024_11_05, vec!["name", "description", "inputSchema", "annotations"]),
            (ProtocolVersion::V2025_03_26, vec!["name", "description", "inputSchema", "annotations"]),
            (
                ProtocolVersion::V2025_06_18,
                vec!["name", "title", "description", "inputSchema", "outputSchema", "annotations"],
            ),
            (
                ProtocolVersion::V2025_11_25,
                vec!["name", "title", "description", "inputSchema", "outputSchema", "annotations"],
            ),
        ];
        for (version, expected) in table {
            let value = serde_json::to_value(Rendered::new(&tool, version)).unwrap();
            assert_eq!(keys(&value), expected, "{version}");
        }
    }

    /// The block shapes of the 2025-11-25 schema, byte for byte.
    #[test]
    fn content_blocks_serialise_exactly_per_spec() {
        let cases = [
            (
                Content::Image { data: "iVBO".into(), mime_type: "image/png".into() },
                r#"{"type":"image","data":"iVBO","mimeType":"image/png"}"#,
            ),
            (
                Content::Audio { data: "UklG".into(), mime_type: "audio/wav".into() },
                r#"{"type":"audio","data":"UklG","mimeType":"audio/wav"}"#,
            ),
            (
                Content::Resource {
                    resource: EmbeddedResource::Text {
                        uri: "file:///a.txt".into(),
                        mime_type: Some("text/plain".into()),
                        text: "hi".into(),
                    },
                },
                r#"{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hi"}}"#,
            ),
            (
                Content::Resource {
                    resource: EmbeddedResource::Blob {
                        uri: "file:///a.bin".into(),
                        mime_type: None,
                        blob: "AAE=".into(),
                    },
                },
                r#"{"type":"resource","resource":{"uri":"file:///a.bin","blob":"AAE="}}"#,
            ),
            (
                Content::ResourceLink {
                    uri: "file:///shot.png".into(),
                    name: "shot.png".into(),
                    title: None,
                    description: Some("a screenshot".into()),
                    mime_type: Some("image/png".into()),
                    size: Some(1234),
                },
                r#"{"type":"resource_link","uri":"file:///shot.png","name":"shot.png","description":"a screenshot","mimeType":"image/png","size":1234}"#,
            ),
        ];
        for (block, expected) in cases {
            assert_eq!(serde_json::to_string(&block).unwrap(), expected);
        }
    }

    /// Older clients get a text block for what their revision cannot carry, and never
    /// `structuredContent`; the text block is always there.
    #[test]
    fn results_per_revision() {
        let result = ToolResult {
            content: vec![
                Content::Text { text: "{\"a\":1}".into() },
                Content::Audio { data: "AAAA".into(), mime_type: "audio/wav".into() },
                Content::ResourceLink {
                    uri: "file:///x".into(),
                    name: "x".into(),
                    title: None,
                    description: None,
                    mime_type: None,
                    size: None,
                },
            ],
            structured_content: Some(json!({"a": 1})),
            is_error: false,
        };
        let render = |version| {
            serde_json::to_value(ResultFrame { result: &result, version, explicit_success_flag: true }).unwrap()
        };
        let old = render(ProtocolVersion::V2024_11_05);
        assert_eq!(keys(&old), ["content", "isError"]);
        let types: Vec<&str> = old["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["text", "text", "text"]);
        assert!(old["content"][1]["text"].as_str().unwrap().contains("audio (audio/wav, 3 bytes) left out"));
        assert_eq!(old["content"][2]["text"], "Resource x at file:///x");
        let mid = render(ProtocolVersion::V2025_03_26);
        assert_eq!(mid["content"][1]["type"], "audio");
        assert_eq!(mid["content"][2]["type"], "text");
        let new = render(ProtocolVersion::V2025_06_18);
        assert_eq!(keys(&new), ["content", "structuredContent", "isError"]);
        assert_eq!(new["content"][2]["type"], "resource_link");
        let sdk = serde_json::to_value(ResultFrame {
            result: &result,
            version: ProtocolVersion::NEWEST,
            explicit_success_flag: false,
        })
        .unwrap();
        assert_eq!(keys(&sdk), ["content", "structuredContent"], "the SDK style leaves isError:false out");
    }
}
