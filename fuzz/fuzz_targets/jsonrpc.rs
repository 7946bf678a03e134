//! One MCP message body, as any transport hands it over: `clawmcp_mcp::jsonrpc::parse`, then the
//! whole dispatcher (`McpServer::handle`) with a small fake service.
//!
//! Beyond "never panics", every input is checked against the protocol's promises:
//! - a request is answered with exactly one JSON-RPC 2.0 frame echoing its id byte for byte;
//!   notifications and responses get no answer; an unreadable message is answered with id null;
//! - a numeric id's matching key is canonical (normalising it again changes nothing);
//! - the answer never amplifies the input (method names are clipped, ids echoed once).
//!
//! The revision the transport says the request speaks (HTTP's `MCP-Protocol-Version`) is taken
//! from the input's length: none, or one of the supported ones. Derived from the input, so a
//! crash reproduces from its file alone and the seeds need no extra byte.

#![no_main]

use std::sync::{Arc, LazyLock};

use clawmcp_mcp::jsonrpc::{self, IdKey, Incoming, Rejection};
use clawmcp_mcp::{
    CallContext, DuplicatePolicy, McpServer, McpService, ProtocolVersion, RequestContext, ServerInfo, Tool, ToolResult,
    permissive_schema,
};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// Answers at once with a result of fixed size, so any growth of the frame is the dispatcher's.
struct Fake;

impl McpService for Fake {
    fn list_tools(&self) -> Vec<Tool> {
        vec![Tool {
            name: "count".into(),
            // Set, so the per-revision rendering (dropped before 2025-06-18) is exercised.
            title: Some("Count".into()),
            description: "counts its arguments".into(),
            input_schema: permissive_schema(),
            output_schema: Some(permissive_schema()),
            annotations: None,
        }]
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        _: CallContext,
    ) -> BoxFuture<'a, ToolResult> {
        let result = match name {
            "count" => ToolResult::text(arguments.len().to_string()),
            _ => ToolResult::error("unknown tool"),
        };
        futures_util::future::ready(result).boxed()
    }
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime"));

/// A fresh server per input: the cancellation registry remembers ids for seconds, and an input
/// must behave the same whatever ran before it (or a crash would not reproduce alone).
fn server() -> McpServer<Fake> {
    let info = ServerInfo { name: "fuzz".into(), version: "0".into() };
    McpServer::new(info, Arc::new(Fake), DuplicatePolicy::Reject)
}

/// What every answer may add on top of the bytes it echoes (id, clipped method name).
const ANSWER_OVERHEAD: usize = 2048;

/// The parts of an answer frame the checks read; the id stays raw so it compares byte for byte.
#[derive(serde::Deserialize)]
struct Answer<'a> {
    jsonrpc: String,
    #[serde(borrow)]
    id: &'a RawValue,
    result: Option<&'a RawValue>,
    error: Option<AnswerError>,
}

#[derive(serde::Deserialize)]
struct AnswerError {
    code: i64,
}

fuzz_target!(|data: &[u8]| {
    let parsed = jsonrpc::parse(data);
    if let Ok(Incoming::Request { id, .. }) = &parsed
        && let IdKey::Num(key) = id.key()
    {
        assert_eq!(jsonrpc::normalize_number(key).as_deref(), Some(key.as_str()), "id key of {id} is not canonical");
    }
    // What the answer must echo: the request's id, or null when none could be read.
    let expected_id: Option<Option<String>> = match &parsed {
        Ok(Incoming::Request { id, .. }) => Some(Some(id.raw().get().to_owned())),
        Ok(Incoming::Notification { .. } | Incoming::Response) | Err(Rejection::Silent) => None,
        Err(Rejection::Reply { id, .. }) => Some(id.as_ref().map(|id| id.raw().get().to_owned())),
    };

    let mut ctx = RequestContext::new(CancellationToken::new());
    ctx.protocol_version = match data.len() % (ProtocolVersion::SUPPORTED.len() + 1) {
        0 => None,
        n => Some(ProtocolVersion::SUPPORTED[n - 1]),
    };
    let frame = RUNTIME.block_on(server().handle(data, ctx));

    match (expected_id, frame) {
        (None, None) => {}
        (None, Some(frame)) => panic!("a notification or response was answered: {frame}"),
        (Some(_), None) => panic!("a request went unanswered"),
        (Some(id), Some(frame)) => {
            let answer: Answer<'_> = serde_json::from_str(&frame).expect("answers are JSON-RPC frames");
            assert_eq!(answer.jsonrpc, "2.0");
            assert_eq!(answer.id.get(), id.as_deref().unwrap_or("null"), "the id is echoed exactly");
            assert!(answer.result.is_some() != answer.error.is_some(), "one of result and error: {frame}");
            if let Some(error) = answer.error {
                assert!((-32768..=-32000).contains(&error.code), "a JSON-RPC error code: {frame}");
            }
            assert!(frame.len() <= data.len() + ANSWER_OVERHEAD, "{} bytes answered {} bytes", frame.len(), data.len());
        }
    }
});
