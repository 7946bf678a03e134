//! The client side of JSON-RPC as MCP uses it: the frames a client sends, and reading what a
//! server sends back.
//!
//! [`parse_server_message`] turns one frame (a JSON body, or the data of one SSE event) into a
//! [`ServerMessage`]: a [`Response`], a notification, or a request from the server. A frame that
//! is none of these is a [`MalformedFrame`] saying what is wrong with it; nothing is guessed (a
//! client that guesses ends up waiting for an answer that already came, or taking another
//! request's answer for its own).
//!
//! A response answers a request only when its id is the request's id by the same identity the
//! server uses for cancellation ([`IdKey`](crate::IdKey): `1e2` is `100`, `"42"` is not `42`),
//! or when it is an error with a `null` id: the server could not read the request's id, and over
//! HTTP that error can only be about the request its POST carried ([`Response::answers`]).
//!
//! Results and params stay raw JSON text ([`RawValue`]), as on the server side: a relay passes
//! them on untouched without building a tree, and [`Response::decode`] turns a result into a
//! [`Value`] when the caller wants one (valid JSON can still fail there: nesting past
//! serde_json's recursion limit, numbers beyond a 64-bit float).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::jsonrpc::{Envelope, RequestId, is_version_2};

/// A JSON-RPC error object as a server sent it: any code, not only the ones we emit.
#[derive(Debug, Clone, PartialEq, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    /// `None` when absent or `null`.
    #[serde(default)]
    pub data: Option<Value>,
}

/// A response: the id it answers (`None` for `null`) and its result or error.
#[derive(Debug)]
pub struct Response {
    pub id: Option<RequestId>,
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// What a request came to, decoded: its result, or the server's error.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Result(Value),
    Error(ErrorObject),
}

impl Response {
    /// Whether this is the answer to the request with id `request`: the same id, or an error
    /// with a `null` id (the server could not read the id; see the module docs for why that is
    /// an answer over HTTP).
    pub fn answers(&self, request: &RequestId) -> bool {
        match &self.id {
            Some(id) => id == request,
            None => self.outcome.is_err(),
        }
    }

    /// The result as a [`Value`], or the error.
    pub fn decode(self) -> Result<Answer, MalformedFrame> {
        match self.outcome {
            Ok(raw) => serde_json::from_str(raw.get())
                .map(Answer::Result)
                .map_err(|e| MalformedFrame::UndecodableResult(e.to_string())),
            Err(error) => Ok(Answer::Error(error)),
        }
    }
}

/// One message from a server to a client.
#[derive(Debug)]
pub enum ServerMessage {
    Response(Response),
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A request from the server (`ping`, `sampling/createMessage`, ...), which the client owes
    /// an answer if it declared the capability.
    Request {
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    },
}

/// Why a frame is not a JSON-RPC message from a server. The `Display` text completes "the
/// response from <server> is not JSON-RPC: ...".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MalformedFrame {
    #[error("not UTF-8: {0}")]
    NotUtf8(String),
    #[error("not a JSON-RPC object")]
    NotAnObject,
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON-RPC envelope: {0}")]
    BadEnvelope(String),
    #[error(r#"the "jsonrpc" member is missing or not "2.0""#)]
    BadVersion,
    #[error(r#""method" is not a string"#)]
    BadMethod,
    #[error("the id is neither a string nor a number")]
    BadId,
    #[error("neither result nor error")]
    NeitherResultNorError,
    #[error("both a result and an error")]
    ResultAndError,
    #[error("a result without the id of its request")]
    ResultWithoutId,
    #[error("a message with a method and a result or an error")]
    MethodAndOutcome,
    #[error("the error object has no integer code and string message: {0}")]
    BadErrorObject(String),
    #[error("the result cannot be decoded: {0}")]
    UndecodableResult(String),
}

/// Reads one frame a server sent.
pub fn parse_server_message(frame: &[u8]) -> Result<ServerMessage, MalformedFrame> {
    let text = std::str::from_utf8(frame).map_err(|e| MalformedFrame::NotUtf8(e.to_string()))?.trim();
    if !text.starts_with('{') {
        return Err(MalformedFrame::NotAnObject);
    }
    let envelope: Envelope = serde_json::from_str(text).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => MalformedFrame::BadEnvelope(e.to_string()),
        _ => MalformedFrame::NotJson(e.to_string()),
    })?;
    if !envelope.jsonrpc.is_some_and(is_version_2) {
        return Err(MalformedFrame::BadVersion);
    }
    let id = envelope.id.map(|raw| RequestId::from_raw(raw).map_err(|_| MalformedFrame::BadId)).transpose()?;
    match (envelope.method, envelope.result, envelope.error) {
        (Some(Value::String(method)), None, None) => Ok(match id {
            Some(id) => ServerMessage::Request { id, method, params: envelope.params },
            None => ServerMessage::Notification { method, params: envelope.params },
        }),
        (Some(Value::String(_)), _, _) => Err(MalformedFrame::MethodAndOutcome),
        (Some(_), _, _) => Err(MalformedFrame::BadMethod),
        (None, Some(_), Some(_)) => Err(MalformedFrame::ResultAndError),
        (None, Some(result), None) => match id {
            Some(id) => Ok(ServerMessage::Response(Response { id: Some(id), outcome: Ok(result.to_owned()) })),
            None => Err(MalformedFrame::ResultWithoutId),
        },
        (None, None, Some(error)) => {
            let error: ErrorObject =
                serde_json::from_str(error.get()).map_err(|e| MalformedFrame::BadErrorObject(e.to_string()))?;
            Ok(ServerMessage::Response(Response { id, outcome: Err(error) }))
        }
        (None, None, None) => Err(MalformedFrame::NeitherResultNorError),
    }
}

#[derive(Serialize)]
struct RequestFrame<'a, P: ?Sized> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

/// Serialises a request (client to server); the id goes out exactly as given, and so do params
/// already serialized (a `RawValue`).
pub fn request_frame<P: Serialize + ?Sized>(id: &RequestId, method: &str, params: Option<&P>) -> String {
    let frame = RequestFrame { jsonrpc: "2.0", id: id.raw(), method, params };
    serde_json::to_string(&frame).expect("a request frame always serialises")
}

/// [`request_frame`] around `params`, JSON text the caller wrote, put in as it is: not parsed
/// again (a `RawValue` of it would check every byte of it, which for a file channel's input is
/// 11 KB per request). Text that is not JSON makes a frame the server refuses.
pub fn request_frame_around(id: &RequestId, method: &str, params: &str) -> String {
    let method = serde_json::to_string(method).expect("a string always serialises");
    let id = id.raw().get();
    let mut frame = String::with_capacity(params.len() + method.len() + id.len() + 48);
    for part in [r#"{"jsonrpc":"2.0","id":"#, id, r#","method":"#, &method, r#","params":"#, params, "}"] {
        frame.push_str(part);
    }
    frame
}

#[derive(Serialize)]
struct CancelledParams<'a> {
    #[serde(rename = "requestId")]
    request_id: &'a RawValue,
    reason: &'a str,
}

#[derive(Serialize)]
struct NotificationFrame<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    params: P,
}

/// `notifications/cancelled` for the request `id` (exactly as it was sent), with a reason the
/// server may log.
pub fn cancelled_frame(id: &RequestId, reason: &str) -> String {
    let params = CancelledParams { request_id: id.raw(), reason };
    let frame = NotificationFrame { jsonrpc: "2.0", method: "notifications/cancelled", params };
    serde_json::to_string(&frame).expect("a cancellation always serialises")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id(raw: &str) -> RequestId {
        RequestId::from_raw(RawValue::from_string(raw.into()).unwrap()).unwrap()
    }

    fn response(frame: &str) -> Response {
        match parse_server_message(frame.as_bytes()) {
            Ok(ServerMessage::Response(response)) => response,
            other => panic!("{frame} is not a response: {other:?}"),
        }
    }

    fn malformed(frame: &[u8]) -> MalformedFrame {
        match parse_server_message(frame) {
            Err(error) => error,
            Ok(message) => panic!("{} was read as {message:?}", String::from_utf8_lossy(frame)),
        }
    }

    #[test]
    fn results_and_errors_are_read_with_their_ids() {
        let ok = response(r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#);
        assert!(ok.answers(&RequestId::number(7)));
        assert_eq!(ok.decode().unwrap(), Answer::Result(json!({"tools": []})));

        let error = response(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found: x"}}"#);
        assert!(error.answers(&RequestId::string("a")));
        let Answer::Error(error) = error.decode().unwrap() else { panic!("an error") };
        assert_eq!((error.code, error.message.as_str(), &error.data), (-32601, "Method not found: x", &None));
        assert_eq!(error.to_string(), "JSON-RPC error -32601: Method not found: x");

        let with_data = response(r#"{"jsonrpc":"2.0","id":1,"error":{"code":5,"message":"m","data":{"why":1}}}"#);
        let Err(error) = with_data.outcome else { panic!("an error") };
        assert_eq!(error.data, Some(json!({"why": 1})));

        let null_result = response(r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        assert_eq!(null_result.decode().unwrap(), Answer::Result(Value::Null), "a null result is a result");
    }

    #[test]
    fn ids_are_matched_exactly() {
        let hundred = response(r#"{"jsonrpc":"2.0","id":1e2,"result":{}}"#);
        assert!(hundred.answers(&RequestId::number(100)), "1e2 is 100, as for cancellation");
        assert!(!hundred.answers(&RequestId::number(10)));
        assert!(!hundred.answers(&RequestId::string("100")), "a string id is never a number id");
        let huge = response(r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#);
        assert!(huge.answers(&id("99999999999999999999")));
        assert!(!huge.answers(&id("100000000000000000000")), "no float rounding");
    }

    #[test]
    fn an_error_with_a_null_id_answers_any_request_and_a_result_never_does() {
        let unreadable = response(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
        assert!(unreadable.id.is_none());
        assert!(unreadable.answers(&RequestId::number(1)) && unreadable.answers(&RequestId::string("x")));
        let without_id = response(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#);
        assert!(without_id.answers(&RequestId::number(1)));
        assert_eq!(malformed(br#"{"jsonrpc":"2.0","id":null,"result":{}}"#), MalformedFrame::ResultWithoutId);
        assert_eq!(malformed(br#"{"jsonrpc":"2.0","result":{}}"#), MalformedFrame::ResultWithoutId);
    }

    #[test]
    fn notifications_and_server_requests_are_told_apart_from_responses() {
        let progress = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#;
        let Ok(ServerMessage::Notification { method, params }) = parse_server_message(progress) else {
            panic!("a notification")
        };
        assert_eq!((method.as_str(), params.unwrap().get()), ("notifications/progress", r#"{"progress":1}"#));
        let Ok(ServerMessage::Request { id, method, params }) =
            parse_server_message(br#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#)
        else {
            panic!("a request")
        };
        assert_eq!((id, method.as_str(), params.is_none()), (RequestId::string("s1"), "ping", true));
        let null_id = parse_server_message(br#"{"jsonrpc":"2.0","id":null,"method":"notifications/x"}"#);
        assert!(matches!(null_id, Ok(ServerMessage::Notification { .. })), "a null id is a notification");
    }

    #[test]
    fn malformed_frames_say_what_is_wrong() {
        let cases: [(&[u8], MalformedFrame); 11] = [
            (b"<html>oops</html>", MalformedFrame::NotAnObject),
            (b"", MalformedFrame::NotAnObject),
            (b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]", MalformedFrame::NotAnObject),
            (br#"{"jsonrpc":"2.0","id":1,"result":{}"#, MalformedFrame::NotJson(String::new())),
            (br#"{"jsonrpc":"2.0","id":1,"result":{},"id":2}"#, MalformedFrame::BadEnvelope(String::new())),
            (br#"{"id":1,"result":{}}"#, MalformedFrame::BadVersion),
            (br#"{"jsonrpc":"1.0","id":1,"result":{}}"#, MalformedFrame::BadVersion),
            (br#"{"jsonrpc":"2.0","id":true,"result":{}}"#, MalformedFrame::BadId),
            (br#"{"jsonrpc":"2.0","id":1}"#, MalformedFrame::NeitherResultNorError),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
                MalformedFrame::ResultAndError,
            ),
            (br#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#, MalformedFrame::MethodAndOutcome),
        ];
        for (frame, expected) in cases {
            let error = malformed(frame);
            assert_eq!(
                std::mem::discriminant(&error),
                std::mem::discriminant(&expected),
                "{}: {error}",
                String::from_utf8_lossy(frame)
            );
        }
        assert_eq!(malformed(&[b'{', 0xff, b'}']).to_string().split(':').next(), Some("not UTF-8"));
        assert_eq!(malformed(br#"{"jsonrpc":"2.0","method":7}"#), MalformedFrame::BadMethod);
        for error in [r#""boom""#, r#"{"code":"x","message":"m"}"#, r#"{"code":1}"#, "null"] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
            assert!(matches!(malformed(frame.as_bytes()), MalformedFrame::BadErrorObject(_)), "{error}");
        }
        assert_eq!(malformed(b"not json").to_string(), "not a JSON-RPC object");
    }

    #[test]
    fn a_result_too_deep_for_a_value_is_a_clear_error_not_a_panic() {
        let deep = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#, "[".repeat(200), "]".repeat(200));
        let error = response(&deep).decode().unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("the result cannot be decoded: recursion limit exceeded"), "{text}");
    }

    #[test]
    fn frames_a_client_sends_keep_the_id_exact() {
        let huge = id("99999999999999999999");
        assert_eq!(
            request_frame(&huge, "tools/list", None::<&Value>),
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"tools/list"}"#
        );
        assert_eq!(
            request_frame(&RequestId::number(1), "tools/call", Some(&json!({"name": "x"}))),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#
        );
        assert_eq!(
            cancelled_frame(&RequestId::string("a"), "interrupted"),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"interrupted"}}"#
        );
        assert_eq!(
            cancelled_frame(&huge, "r"),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99999999999999999999,"reason":"r"}}"#
        );
    }
}
