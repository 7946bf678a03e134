//! JSON-RPC 2.0 envelopes as MCP uses them: parsing one incoming message into a typed
//! [`Incoming`], request ids with exact identity, and serialising responses.
//!
//! Parsing is deliberately hand-classified (not an untagged serde enum) so that we pick the exact
//! error code for every malformed input, in the order `docs/node-http.md` §6 gives:
//!
//! 1. not JSON at all -> `-32700` with `id: null`;
//! 2. root not an object (batches included) -> `-32600` with `id: null`;
//! 3. `id` present and not `null` -> a request; absent or `null` -> a notification;
//! 4. `jsonrpc` not exactly `"2.0"` (absent included) -> `-32600` for a request; a notification
//!    or a response is dropped (the upstream tray accepts any value; JSON-RPC 2.0 does not);
//! 5. a request without a string `method` -> `-32600`; a notification without one is dropped.
//!
//! `params` stay raw here; [`crate::params::decode`] turns them into a `Value` with a precise
//! error (depth, out-of-range numbers).
//!
//! Ids are echoed byte-for-byte (`RawValue`), so `99999999999999999999` or `1.5` round-trip
//! exactly, while matching uses [`IdKey`]: decoded strings, and numbers normalised at arbitrary
//! precision (`1.0e2` == `100`), with strings and numbers never equal to each other.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// JSON-RPC error codes this server emits. `-32602` answers undecodable `params` of methods
/// other than `tools/call` (and argument problems on some stdio surfaces); `tools/call`
/// reports argument problems as tool errors, as `docs/node-http.md` §6 says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    InternalError,
    /// 2026-07-28: a request named a protocol revision the server does not serve.
    UnsupportedProtocolVersion,
    /// 2026-07-28 over HTTP: an `Mcp-*` header disagrees with the body.
    HeaderMismatch,
}

impl ErrorCode {
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::HeaderMismatch => -32020,
        }
    }
}

/// A JSON-RPC error object, ready to be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: ErrorCode,
    pub message: String,
    /// Boxed: rarely present, and it keeps `Result<_, RpcError>` small.
    pub data: Option<Box<Value>>,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    /// The only text a handler failure ever shows: details stay in the server log.
    pub fn internal() -> Self {
        RpcError::new(ErrorCode::InternalError, "internal error")
    }

    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(ErrorCode::MethodNotFound, format!("Method not found: {}", clip(method, 128)))
    }
}

/// The identity used to match a request id across messages (cancellation, completion guards).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdKey {
    /// The decoded string value (`"\u0072equest"` and `"request"` are the same key).
    Str(String),
    /// A number in canonical form `[-]<digits>e<exp>` with no leading or trailing zeros in the
    /// digits, or `0` for zero; `100`, `1e2` and `1.00e2` share one key.
    Num(String),
}

/// A request id as the client sent it: raw bytes for echoing, plus its matching key.
#[derive(Debug, Clone)]
pub struct RequestId {
    raw: Box<RawValue>,
    key: IdKey,
}

impl RequestId {
    /// Classifies a raw JSON value as an id. Only strings and numbers are ids in JSON-RPC.
    pub fn from_raw(raw: Box<RawValue>) -> Result<Self, RpcError> {
        let text = raw.get();
        let key = match text.as_bytes().first() {
            Some(b'"') => IdKey::Str(serde_json::from_str::<String>(text).map_err(|_| invalid_id())?),
            Some(b'-' | b'0'..=b'9') => IdKey::Num(normalize_number(text).ok_or_else(invalid_id)?),
            _ => return Err(invalid_id()),
        };
        Ok(RequestId { raw, key })
    }

    /// A numeric id, as a client of ours would send.
    pub fn number(n: i64) -> Self {
        let raw = RawValue::from_string(n.to_string()).expect("an integer is valid JSON");
        RequestId::from_raw(raw).expect("an integer is a valid id")
    }

    /// A string id.
    pub fn string(s: &str) -> Self {
        let raw = RawValue::from_string(Value::from(s).to_string()).expect("a string is valid JSON");
        RequestId::from_raw(raw).expect("a string is a valid id")
    }

    pub fn key(&self) -> &IdKey {
        &self.key
    }

    /// The id exactly as received.
    pub fn raw(&self) -> &RawValue {
        &self.raw
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl std::fmt::Display for RequestId {
    /// Strings keep their quotes so `42` and `"42"` never look alike in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.raw.get())
    }
}

fn invalid_id() -> RpcError {
    RpcError::new(ErrorCode::InvalidRequest, "Invalid 'id': must be a string or a number")
}

/// Parses a JSON id value (`"7"`, `7`, `7.0`) into its key. Used where an id arrives inside
/// params, e.g. `notifications/cancelled` `requestId`.
pub fn id_key_of(value: &Value) -> Option<IdKey> {
    match value {
        Value::String(s) => Some(IdKey::Str(s.clone())),
        Value::Number(n) => normalize_number(&n.to_string()).map(IdKey::Num),
        _ => None,
    }
}

/// Like [`id_key_of`] but from raw JSON text, keeping full precision for huge numbers.
pub fn id_key_of_raw(raw: &RawValue) -> Option<IdKey> {
    RequestId::from_raw(raw.to_owned()).ok().map(|id| id.key)
}

/// Canonical form of a JSON number literal: value = digits x 10^exp, digits without leading or
/// trailing zeros. Returns `None` if the text is not a JSON number.
pub fn normalize_number(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let negative = bytes.first() == Some(&b'-');
    if negative {
        i += 1;
    }
    let int_start = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    if i == int_start {
        return None;
    }
    // Borrowed unless a fraction must be appended: one allocation (the result) per id.
    let mut digits = std::borrow::Cow::Borrowed(&text[int_start..i]);
    let mut exp: i128 = 0;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == frac_start {
            return None;
        }
        digits.to_mut().push_str(&text[frac_start..i]);
        exp -= (i - frac_start) as i128;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        let exp_text = &text[i..];
        let parsed: i128 = exp_text.strip_prefix('+').unwrap_or(exp_text).parse().ok()?;
        exp = exp.checked_add(parsed)?;
        i = bytes.len();
    }
    if i != bytes.len() {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        return Some("0".to_string());
    }
    let without_trailing = trimmed.trim_end_matches('0');
    // Checked: `10e<i128::MAX>` would overflow (a panic in debug builds, a wrapped key that
    // collides with another id's in release ones). Such an id is refused, not matched.
    exp = exp.checked_add((trimmed.len() - without_trailing.len()) as i128)?;
    let mut key = String::with_capacity(without_trailing.len() + 6);
    if negative {
        key.push('-');
    }
    key.push_str(without_trailing);
    key.push('e');
    let _ = std::fmt::Write::write_fmt(&mut key, format_args!("{exp}"));
    Some(key)
}

/// One parsed incoming message.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    },
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A response to a server-to-client request. We send none, so these are acknowledged and
    /// dropped.
    Response,
}

impl Incoming {
    pub fn method(&self) -> Option<&str> {
        match self {
            Incoming::Request { method, .. } | Incoming::Notification { method, .. } => Some(method),
            Incoming::Response => None,
        }
    }
}

/// Why a message could not be turned into an [`Incoming`].
#[derive(Debug, PartialEq)]
pub enum Rejection {
    /// Answer with this error (id is `null` unless the id could be read).
    Reply { id: Option<RequestId>, error: RpcError },
    /// A malformed notification: JSON-RPC says never answer a notification.
    Silent,
}

impl PartialEq for Incoming {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Incoming::Request { id: a, method: m, params: p }, Incoming::Request { id: b, method: n, params: q }) => {
                a == b && m == n && raw_eq(p, q)
            }
            (Incoming::Notification { method: m, params: p }, Incoming::Notification { method: n, params: q }) => {
                m == n && raw_eq(p, q)
            }
            (Incoming::Response, Incoming::Response) => true,
            _ => false,
        }
    }
}

fn raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    a.as_ref().map(|r| r.get()) == b.as_ref().map(|r| r.get())
}

/// Any JSON-RPC message, as both sides read it: this module (messages to a server) and
/// [`crate::client`] (messages from one).
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    /// Raw and never `None` when present, so that `"jsonrpc": null` is told apart from a
    /// missing member.
    #[serde(default, borrow, deserialize_with = "present")]
    pub jsonrpc: Option<&'a RawValue>,
    /// `null` reads as `None`, like an absent id.
    #[serde(default)]
    pub id: Option<Box<RawValue>>,
    #[serde(default)]
    pub method: Option<Value>,
    #[serde(default)]
    pub params: Option<Box<RawValue>>,
    /// Present whatever its value: `"result": null` is a result.
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub error: Option<&'a RawValue>,
}

/// A member that is present, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// Parses one message. Batches (JSON arrays) are refused with `-32600`: MCP removed batching in
/// 2025-06-18, our protocol version 2024-11-05 predates it, and a batch would let one HTTP
/// request bypass the per-call concurrency slots and per-id cancellation.
pub fn parse(body: &[u8]) -> Result<Incoming, Rejection> {
    // The common case in one pass: UTF-8 text that opens an object, read straight into the
    // envelope. Whatever that does not parse takes the careful path below, which tells the
    // exact error apart (it accepts nothing the fast path would refuse, and vice versa).
    if let Ok(text) = std::str::from_utf8(body)
        && text.trim_start_matches([' ', '\t', '\r', '\n']).starts_with('{')
        && let Ok(envelope) = serde_json::from_str::<Envelope>(text)
    {
        return classify(envelope);
    }
    let raw: Box<RawValue> = serde_json::from_slice(body).map_err(|e| Rejection::Reply {
        id: None,
        error: RpcError::new(ErrorCode::ParseError, format!("Parse error: {e}")),
    })?;
    match raw.get().as_bytes().first() {
        Some(b'{') => {}
        Some(b'[') => {
            return Err(Rejection::Reply {
                id: None,
                error: RpcError::new(
                    ErrorCode::InvalidRequest,
                    "Batch requests are not supported: send one JSON-RPC object per request",
                ),
            });
        }
        _ => {
            return Err(Rejection::Reply {
                id: None,
                error: RpcError::new(ErrorCode::InvalidRequest, "Request must be a JSON object"),
            });
        }
    }
    let envelope: Envelope = serde_json::from_str(raw.get()).map_err(|e| Rejection::Reply {
        id: None,
        error: RpcError::new(ErrorCode::InvalidRequest, format!("Invalid request: {e}")),
    })?;
    classify(envelope)
}

/// Tells a request, a notification and a response apart, applying rules 3 to 5 above.
fn classify(envelope: Envelope<'_>) -> Result<Incoming, Rejection> {
    let id = match envelope.id {
        Some(raw_id) => Some(RequestId::from_raw(raw_id).map_err(|error| Rejection::Reply { id: None, error })?),
        None => None,
    };
    let method = match envelope.method {
        Some(Value::String(m)) => Some(m),
        _ => None,
    };
    if let Some(problem) = version_problem(envelope.jsonrpc) {
        // Only a request is answered: a notification never is (JSON-RPC 2.0 section 4.1), and
        // answering a response could start an endless exchange with a peer that does the same.
        let is_response = method.is_none() && (envelope.result.is_some() || envelope.error.is_some());
        return Err(match id {
            Some(id) if !is_response => {
                Rejection::Reply { id: Some(id), error: RpcError::new(ErrorCode::InvalidRequest, problem) }
            }
            _ => Rejection::Silent,
        });
    }
    match (id, method) {
        (Some(id), Some(method)) => Ok(Incoming::Request { id, method, params: envelope.params }),
        (None, Some(method)) => Ok(Incoming::Notification { method, params: envelope.params }),
        (_, None) if envelope.result.is_some() || envelope.error.is_some() => Ok(Incoming::Response),
        (Some(id), None) => {
            Err(Rejection::Reply { id: Some(id), error: RpcError::new(ErrorCode::InvalidRequest, "Missing 'method'") })
        }
        (None, None) => Err(Rejection::Silent),
    }
}

/// Whether a `jsonrpc` member is the string `"2.0"`: the literal every peer sends first, or an
/// escaped spelling (`"2\u002e0"`).
pub(crate) fn is_version_2(version: &RawValue) -> bool {
    version.get() == r#""2.0""# || serde_json::from_str::<String>(version.get()).is_ok_and(|v| v == "2.0")
}

/// What is wrong with a message's `jsonrpc` member, if anything. JSON-RPC 2.0 requires it to be
/// exactly the string `"2.0"`; the upstream tray does not check it, we do (issue 8): a message
/// without it is not JSON-RPC 2.0, and guessing its meaning is how two peers end up disagreeing.
fn version_problem(version: Option<&RawValue>) -> Option<String> {
    let Some(version) = version else {
        return Some(
            r#"Invalid Request: the "jsonrpc" member is missing; every JSON-RPC 2.0 message must carry "jsonrpc": "2.0""#
                .into(),
        );
    };
    if is_version_2(version) {
        return None;
    }
    Some(format!(r#"Invalid Request: "jsonrpc" must be the string "2.0", got {}"#, clip(version.get(), 32)))
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

#[derive(Serialize)]
struct ResponseFrame<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody<'a>>,
}

/// Serialises a success response, echoing the id exactly as received.
pub fn success_frame<R: Serialize>(id: &RequestId, result: &R) -> String {
    let frame = ResponseFrame { jsonrpc: "2.0", id: Some(id.raw()), result: Some(result), error: None };
    serde_json::to_string(&frame).unwrap_or_else(|_| error_frame(Some(id), &RpcError::internal()))
}

/// [`success_frame`] for a result that is already JSON (what the dispatcher has): the same
/// bytes, written as three pieces around the two raw values instead of through the serializer
/// (which costs more than the rest of answering a `ping`).
pub fn raw_success_frame(id: &RequestId, result: &RawValue) -> String {
    const OPEN: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let (id, result) = (id.raw().get(), result.get());
    let mut frame = String::with_capacity(OPEN.len() + id.len() + RESULT.len() + result.len() + 1);
    frame.push_str(OPEN);
    frame.push_str(id);
    frame.push_str(RESULT);
    frame.push_str(result);
    frame.push('}');
    frame
}

/// The `error.code` of a response frame this crate wrote, or `None` for a result (the
/// result is skipped, not parsed into values).
pub fn error_code_of_frame(frame: &str) -> Option<i64> {
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    #[derive(Deserialize)]
    struct Frame {
        error: Option<Code>,
    }
    serde_json::from_str::<Frame>(frame).ok()?.error.map(|error| error.code)
}

/// Serialises an error response; `id: null` when the id could not be read.
pub fn error_frame(id: Option<&RequestId>, error: &RpcError) -> String {
    let frame: ResponseFrame<'_, ()> = ResponseFrame {
        jsonrpc: "2.0",
        id: id.map(RequestId::raw),
        result: None,
        error: Some(ErrorBody { code: error.code.code(), message: &error.message, data: error.data.as_deref() }),
    };
    serde_json::to_string(&frame).expect("error frames always serialise")
}

/// The frame answering a message that could not be parsed (`None` for a malformed
/// notification, which JSON-RPC says is never answered).
pub fn rejection_frame(rejection: Rejection) -> Option<String> {
    match rejection {
        Rejection::Reply { id, error } => Some(error_frame(id.as_ref(), &error)),
        Rejection::Silent => None,
    }
}

/// Serialises a notification (server to client).
pub fn notification_frame(method: &str, params: &Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// Truncates user-supplied text we echo back (method names) so a hostile client cannot make us
/// reflect megabytes.
pub(crate) fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_raw_success_frame_is_byte_for_byte_the_serialised_one() {
        let ids = ["1", "0", "-7", "1.5e3", r#""abc""#, r#""with \"quotes\" and \u00e9""#, "9007199254740993"];
        let results = ["{}", r#"{"tools":[]}"#, r#"{"a":[1,2,{"b":null}],"c":"\n"}"#, "null", "[]"];
        for id in ids {
            let id = RequestId::from_raw(RawValue::from_string(id.to_owned()).unwrap()).unwrap();
            for result in results {
                let result = RawValue::from_string(result.to_owned()).unwrap();
                let frame = raw_success_frame(&id, &result);
                assert_eq!(frame, success_frame(&id, &result), "{id} {result}");
                assert!(serde_json::from_str::<Value>(&frame).is_ok(), "{frame}");
            }
        }
    }

    fn reply(body: &str) -> (Option<String>, i64, String) {
        match parse(body.as_bytes()) {
            Err(Rejection::Reply { id, error }) => (id.map(|i| i.to_string()), error.code.code(), error.message),
            other => panic!("expected a reply rejection for {body}, got {other:?}"),
        }
    }

    #[test]
    fn garbage_is_a_parse_error_with_null_id() {
        let (id, code, msg) = reply("{not json");
        assert_eq!((id, code), (None, -32700));
        assert!(msg.starts_with("Parse error: "), "{msg}");
        let frame = error_frame(None, &RpcError::new(ErrorCode::ParseError, "Parse error: x"));
        assert_eq!(frame, r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}"#);
    }

    #[test]
    fn non_object_roots_are_invalid_requests() {
        for body in ["[1,2,3]", "42", "\"x\"", "null", "true"] {
            let (id, code, _) = reply(body);
            assert_eq!((id, code), (None, -32600), "{body}");
        }
        let (_, _, msg) = reply(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert!(msg.contains("Batch requests are not supported"), "{msg}");
    }

    #[test]
    fn request_notification_and_response_are_told_apart() {
        let req = parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(req, Incoming::Request { id: RequestId::number(7), method: "ping".into(), params: None });
        let note = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert_eq!(note, Incoming::Notification { method: "notifications/initialized".into(), params: None });
        let null_id = parse(br#"{"jsonrpc":"2.0","id":null,"method":"x","params":{"a":1}}"#).unwrap();
        let Incoming::Notification { method, params } = null_id else { panic!("a null id is a notification") };
        assert_eq!((method.as_str(), crate::params::decode(params.as_deref())), ("x", Ok(Some(json!({"a":1})))));
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap(), Incoming::Response);
        // A client's answer with a `null` result is still an answer, not a request missing its
        // method (the envelope is shared with `client`, where `null` results are common).
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":3,"result":null}"#).unwrap(), Incoming::Response);
    }

    #[test]
    fn missing_method_is_invalid_for_requests_and_silent_for_notifications() {
        let (id, code, msg) = reply(r#"{"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!((id.as_deref(), code, msg.as_str()), (Some("\"a\""), -32600, "Missing 'method'"));
        let (_, code, _) = reply(r#"{"jsonrpc":"2.0","id":1,"method":5}"#);
        assert_eq!(code, -32600);
        assert_eq!(parse(br#"{"jsonrpc":"2.0"}"#), Err(Rejection::Silent));
    }

    #[test]
    fn ids_must_be_strings_or_numbers() {
        for body in [r#"{"id":true,"method":"ping"}"#, r#"{"id":{},"method":"ping"}"#, r#"{"id":[1],"method":"ping"}"#]
        {
            let (id, code, _) = reply(body);
            assert_eq!((id, code), (None, -32600), "{body}");
        }
    }

    #[test]
    fn a_request_without_jsonrpc_2_0_is_an_invalid_request() {
        let (id, code, msg) = reply(r#"{"id":1,"method":"ping"}"#);
        assert_eq!((id.as_deref(), code), (Some("1"), -32600));
        assert_eq!(
            msg,
            r#"Invalid Request: the "jsonrpc" member is missing; every JSON-RPC 2.0 message must carry "jsonrpc": "2.0""#
        );
        for (version, shown) in [(r#""1.0""#, r#""1.0""#), ("2.0", "2.0"), ("null", "null"), (r#""2.0 ""#, r#""2.0 ""#)]
        {
            let (id, code, msg) = reply(&format!(r#"{{"jsonrpc":{version},"id":"a","method":"ping"}}"#));
            assert_eq!((id.as_deref(), code), (Some(r#""a""#), -32600), "{version}");
            assert_eq!(msg, format!(r#"Invalid Request: "jsonrpc" must be the string "2.0", got {shown}"#));
        }
        assert!(parse(br#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#).is_ok(), "an escaped \"2.0\" is \"2.0\"");
        let long = format!(r#"{{"jsonrpc":"{}","id":1,"method":"ping"}}"#, "x".repeat(1000));
        assert!(reply(&long).2.len() < 120, "the echoed value is clipped");
    }

    #[test]
    fn notifications_and_responses_without_jsonrpc_2_0_are_dropped_silently() {
        for body in [
            r#"{"method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"1.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"id":null,"method":"ping"}"#,
            r#"{"id":3,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":3,"error":{"code":1,"message":"x"}}"#,
        ] {
            assert_eq!(parse(body.as_bytes()), Err(Rejection::Silent), "{body}");
        }
    }

    #[test]
    fn the_one_pass_path_and_the_careful_path_agree() {
        // Leading JSON whitespace still takes the one-pass path.
        assert!(matches!(
            parse(b" \r\n\t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
            Ok(Incoming::Request { .. })
        ));
        // Invalid UTF-8 in a member nobody reads is still not JSON.
        let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":""#.to_vec();
        body.extend_from_slice(&[0xff, b'"', b'}']);
        let Err(Rejection::Reply { error, .. }) = parse(&body) else { panic!("refused") };
        assert_eq!(error.code, ErrorCode::ParseError);
        // Trailing garbage after the object, and an object that is not a valid envelope.
        assert_eq!(reply(r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#).1, -32700);
        assert_eq!(reply(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":1,"params":2}"#).1, -32600);
    }

    #[test]
    fn duplicate_keys_are_invalid_requests() {
        let (_, code, _) = reply(r#"{"id":1,"id":2,"method":"ping"}"#);
        assert_eq!(code, -32600);
    }

    #[test]
    fn ids_echo_their_raw_text() {
        for raw in ["1.5", "99999999999999999999", "\"abc\"", "0", "-3", "1e2"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"ping"}}"#);
            let Incoming::Request { id, .. } = parse(body.as_bytes()).unwrap() else { panic!() };
            let frame = success_frame(&id, &json!({}));
            assert_eq!(frame, format!(r#"{{"jsonrpc":"2.0","id":{raw},"result":{{}}}}"#));
        }
    }

    #[test]
    fn number_keys_compare_by_value_and_strings_by_decoded_text() {
        let key = |raw: &str| RequestId::from_raw(RawValue::from_string(raw.into()).unwrap()).unwrap().key;
        assert_eq!(key("100"), key("1e2"));
        assert_eq!(key("100"), key("1.0e2"));
        assert_eq!(key("100"), key("1.00E+2"));
        assert_eq!(key("100"), key("10000e-2"));
        assert_eq!(key("0"), key("-0.0"));
        assert_ne!(key("100"), key("101"));
        assert_ne!(key("1"), key("-1"));
        assert_ne!(key("42"), key("\"42\""));
        assert_eq!(key(r#""\u0072equest""#), key(r#""request""#));
        assert_eq!(key("99999999999999999999"), key("9.9999999999999999999e19"));
        assert_ne!(key("99999999999999999999"), key("100000000000000000000"));
    }

    #[test]
    fn normalize_rejects_non_numbers() {
        for text in ["", "-", "1.", ".5", "1e", "01x", "1e+", "abc"] {
            assert_eq!(normalize_number(text), None, "{text}");
        }
        assert_eq!(normalize_number("0012.500").as_deref(), Some("125e-1"));
    }

    #[test]
    fn id_key_of_values_matches_raw_keys() {
        assert_eq!(id_key_of(&json!(100)), Some(IdKey::Num("1e2".into())));
        assert_eq!(id_key_of(&json!(100.0)), Some(IdKey::Num("1e2".into())));
        assert_eq!(id_key_of(&json!("x")), Some(IdKey::Str("x".into())));
        assert_eq!(id_key_of(&json!(null)), None);
        assert_eq!(id_key_of(&json!(true)), None);
    }

    #[test]
    fn method_names_are_clipped_when_echoed() {
        let long = "m".repeat(1000);
        let err = RpcError::method_not_found(&long);
        assert!(err.message.len() < 200, "{}", err.message.len());
    }
}
