//! Scripted answers: [`Reply`] for a WebSocket method call, [`ToolReply`] for an HTTP
//! `/tools/invoke` call. The fault-injection cases (stall, drop, raw bytes, trickle) are
//! ordinary variants so a test states its scenario in one handler.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

/// What the fake does with one `req` frame.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `{type:"res", ok:true, payload}`.
    Ok(Value),
    /// `{type:"res", ok:false, error}`; build the error with [`gateway_error`].
    Error(Value),
    /// Never answer.
    Stall,
    /// Drop the TCP connection without a close frame.
    DropConnection,
    /// Answer with the inner reply after a delay (other requests are served meanwhile).
    Delay(Duration, Box<Reply>),
    /// Answer with the inner reply once the test opens the gate (other requests are served
    /// meanwhile): for orderings a delay could only make likely.
    Held(Gate, Box<Reply>),
    /// An interim `{status:"accepted"}` response, then the inner reply (expect-final methods).
    AcceptedThen(Box<Reply>),
    /// Send this text verbatim instead of a response (malformed or oversize frames).
    Raw(String),
}

impl Reply {
    pub fn delay(after: Duration, reply: Reply) -> Reply {
        Reply::Delay(after, Box::new(reply))
    }

    pub fn held(gate: &Gate, reply: Reply) -> Reply {
        Reply::Held(gate.clone(), Box::new(reply))
    }

    pub fn error(code: &str, message: &str) -> Reply {
        Reply::Error(gateway_error(code, message, None))
    }
}

/// A switch a test opens to release [`Reply::Held`] answers. Opening is permanent.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<watch::Sender<bool>>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    pub fn open(&self) {
        self.0.send_replace(true);
    }

    /// Resolves once the gate is open.
    pub async fn opened(self) {
        let _ = self.0.subscribe().wait_for(|open| *open).await;
    }
}

/// An `ErrorShape` value: `{code, message, details?}`.
pub fn gateway_error(code: &str, message: &str, details: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(details) = details {
        error["details"] = details;
    }
    error
}

/// What the fake's `/tools/invoke` answers.
#[derive(Debug, Clone)]
pub enum ToolReply {
    Json {
        status: u16,
        body: Value,
    },
    Text {
        status: u16,
        content_type: String,
        body: String,
    },
    /// Never send a response (not even headers).
    Stall,
    /// Send the status and headers at once, then `chunk` every `interval`, forever.
    Trickle {
        status: u16,
        chunk: String,
        interval: Duration,
    },
}

impl ToolReply {
    /// 200 `{ok:true, result}`.
    pub fn ok(result: Value) -> ToolReply {
        ToolReply::Json { status: 200, body: json!({"ok": true, "result": result}) }
    }

    pub fn json(status: u16, body: Value) -> ToolReply {
        ToolReply::Json { status, body }
    }

    pub fn text(status: u16, body: &str) -> ToolReply {
        ToolReply::Text { status, content_type: "text/plain; charset=utf-8".to_owned(), body: body.to_owned() }
    }
}
