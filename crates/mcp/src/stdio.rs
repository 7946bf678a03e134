//! Newline-delimited JSON-RPC over a byte stream pair (stdin/stdout for the `serve` and
//! `tools` surfaces; in-memory pipes in tests).
//!
//! - One reader, bounded lines ([`MAX_LINE_BYTES`]): an overlong line is answered with a parse
//!   error and skipped, never buffered whole.
//! - Tool calls run concurrently (they can take minutes), at most [`MAX_IN_FLIGHT`] at once;
//!   control messages (ping, cancellation, listing) are handled inline by the reader so they
//!   never queue behind tool calls.
//! - The reader never waits for a tool call. A `tools/call` that arrives with every slot taken is
//!   answered at once with a tool error naming the limit ([`busy_text`]) instead of waiting for a
//!   slot: a reader parked on a slot would stop reading `ping`, the `notifications/cancelled`
//!   that could free a slot, and EOF. An immediate answer is also what an MCP client handles
//!   best: a queued call is silent (no progress), so the client's own request timeout would end
//!   it with a vaguer error, while "busy" lets the model cancel or retry. The HTTP transport
//!   answers the same situation with `503 server busy`.
//! - One writer task owns the output: responses and server notifications are whole lines, so
//!   frames never interleave. Nothing else may write to stdout.
//! - EOF on input ends the session: in-flight calls are cancelled (their tools stop their work)
//!   and the function returns once they have answered or the grace period passed.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, ErrorCode, Incoming, RpcError};
use crate::server::{CANCEL_GRACE, McpServer, McpService, MessageClass, RequestContext, SHUTTING_DOWN, TransportEnd};
use crate::types::{FrameSink, ToolResult};

/// Longest accepted input line. Generous for large tool arguments (file writes), bounded so a
/// client cannot make us buffer without limit.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Tool calls running at once per session; one more is answered with [`busy_text`] at once.
pub const MAX_IN_FLIGHT: usize = 32;

/// The tool error a `tools/call` gets when all [`MAX_IN_FLIGHT`] slots are taken.
pub fn busy_text() -> String {
    format!(
        "server busy: {MAX_IN_FLIGHT} tool calls are already running in this session (the limit); \
         wait for one to finish or cancel one, then retry"
    )
}

/// Frames queued for the writer. Beyond this, senders of responses wait and advisory frames
/// (progress) are dropped.
pub const OUTBOUND_QUEUE: usize = 1024;

/// The sending half of a session's output. Clone it into services that push notifications.
#[derive(Clone)]
pub struct Outbound {
    tx: mpsc::Sender<String>,
}

impl Outbound {
    /// Queues a frame, waiting for room. Errors only when the session is over.
    pub async fn send(&self, frame: String) -> Result<(), SessionClosed> {
        self.tx.send(frame).await.map_err(|_| SessionClosed)
    }

    /// Sends a notification frame.
    pub async fn notify(&self, method: &str, params: &serde_json::Value) -> Result<(), SessionClosed> {
        self.send(jsonrpc::notification_frame(method, params)).await
    }

    /// A handle that does not hold the output open: the session's writer ends when the last
    /// `Outbound` is gone, so a background task that may outlive the session holds this.
    pub fn downgrade(&self) -> WeakOutbound {
        WeakOutbound { tx: self.tx.downgrade() }
    }
}

/// See [`Outbound::downgrade`].
#[derive(Clone)]
pub struct WeakOutbound {
    tx: mpsc::WeakSender<String>,
}

impl WeakOutbound {
    /// The output, while the session still has it open.
    pub fn upgrade(&self) -> Option<Outbound> {
        self.tx.upgrade().map(|tx| Outbound { tx })
    }
}

impl FrameSink for Outbound {
    fn try_send(&self, frame: String) -> bool {
        self.tx.try_send(frame).is_ok()
    }
}

/// The session's output is gone (client closed stdout or the session ended).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the MCP session is closed")]
pub struct SessionClosed;

/// Creates the output channel before the session starts, so services can hold an [`Outbound`].
pub fn outbound_channel() -> (Outbound, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE);
    (Outbound { tx }, rx)
}

/// What a call still running answers when the client closes stdin: the call stopped because the
/// session ended, not because a deadline passed.
pub const INPUT_CLOSED: &str =
    "cancelled: the client closed the server's input (stdin) before this call finished, so it was stopped";

/// How a session ended.
#[derive(Debug)]
pub enum SessionEnd {
    /// Input reached EOF (the client closed stdin): a clean end.
    InputClosed,
    /// The session was told to stop (`shutdown` token).
    Shutdown,
    /// Writing to the output failed (the client went away).
    OutputFailed(std::io::Error),
    /// Reading the input failed.
    InputFailed(std::io::Error),
}

/// Serves one MCP session until input EOF, output failure or `shutdown`.
pub async fn serve<S, R, W>(
    server: Arc<McpServer<S>>,
    input: R,
    output: W,
    outbound: Outbound,
    outbound_rx: mpsc::Receiver<String>,
    shutdown: CancellationToken,
) -> SessionEnd
where
    S: McpService + ?Sized,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let writer_failed = CancellationToken::new();
    let writer = tokio::spawn(write_frames(output, outbound_rx, writer_failed.clone()));
    let calls_cancel = CancellationToken::new();
    let calls_end = TransportEnd::default();
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut calls = JoinSet::new();
    let mut lines = BoundedLines::new(input, MAX_LINE_BYTES);
    let sink: Arc<dyn FrameSink> = Arc::new(outbound.clone());

    let end = loop {
        let line = tokio::select! {
            _ = shutdown.cancelled() => break SessionEnd::Shutdown,
            _ = writer_failed.cancelled() => break SessionEnd::OutputFailed(std::io::Error::other("stdout closed")),
            Some(_) = calls.join_next(), if !calls.is_empty() => continue,
            line = lines.next_line() => line,
        };
        let line = match line {
            Ok(None) => break SessionEnd::InputClosed,
            Ok(Some(Line::Complete(line))) => line,
            Ok(Some(Line::TooLong)) => {
                let error = RpcError::new(
                    ErrorCode::ParseError,
                    format!("Parse error: message longer than {MAX_LINE_BYTES} bytes"),
                );
                if outbound.send(jsonrpc::error_frame(None, &error)).await.is_err() {
                    break SessionEnd::OutputFailed(std::io::Error::other("stdout closed"));
                }
                continue;
            }
            Err(e) => break SessionEnd::InputFailed(e),
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message = match jsonrpc::parse(&line) {
            Ok(message) => message,
            Err(rejection) => {
                if let Some(frame) = jsonrpc::rejection_frame(rejection) {
                    let _ = outbound.send(frame).await;
                }
                continue;
            }
        };
        let ctx = RequestContext {
            transport_cancel: calls_cancel.child_token(),
            transport_end: calls_end.clone(),
            sink: Some(sink.clone()),
            protocol_version: None,
            auth_generation: None,
            result_allowance: None,
        };
        match McpServer::<S>::classify(&message) {
            MessageClass::Control => {
                if let Some(frame) = server.dispatch(message, ctx).await {
                    let _ = outbound.send(frame).await;
                }
            }
            MessageClass::Tool => {
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    if let Some(frame) = busy_frame(&message) {
                        let _ = outbound.send(frame).await;
                    }
                    continue;
                };
                let server = server.clone();
                let outbound = outbound.clone();
                calls.spawn(async move {
                    // The slot is free before the answer is queued: a client that sends its next
                    // call on reading this answer finds the slot it just saw freed.
                    let answer = {
                        let _slot = permit;
                        server.dispatch(message, ctx).await
                    };
                    if let Some(frame) = answer {
                        let _ = outbound.send(frame).await;
                    }
                });
            }
        }
    };

    // Stop every call still running and let each answer (or be dropped) within the grace, saying
    // why: no deadline passed, the session ended.
    calls_end.set(match &end {
        SessionEnd::InputClosed | SessionEnd::InputFailed(_) => INPUT_CLOSED,
        SessionEnd::Shutdown | SessionEnd::OutputFailed(_) => SHUTTING_DOWN,
    });
    calls_cancel.cancel();
    let drain = async { while calls.join_next().await.is_some() {} };
    if tokio::time::timeout(CANCEL_GRACE + Duration::from_secs(1), drain).await.is_err() {
        calls.abort_all();
    }
    drop(outbound);
    drop(sink);
    // The writer ends when every Outbound clone is gone; services may hold clones, so bound it.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    end
}

/// The answer to a tool call refused for lack of a slot: a tool error, so the model reads it.
/// A `tools/call` notification has no one to tell; the refusal is logged.
fn busy_frame(message: &Incoming) -> Option<String> {
    match message {
        Incoming::Request { id, .. } => Some(jsonrpc::success_frame(id, &ToolResult::error(busy_text()))),
        _ => {
            tracing::warn!("a tools/call notification was dropped: {}", busy_text());
            None
        }
    }
}

/// One input line, or the fact that a line was too long (its bytes were discarded).
pub enum Line {
    Complete(Vec<u8>),
    TooLong,
}

/// Reads newline-terminated lines without ever holding more than `max` bytes of one line:
/// past the cap the rest of the line is skipped as it streams in. Cancel-safe: partial lines
/// stay in `self` between calls.
pub struct BoundedLines<R> {
    reader: BufReader<R>,
    max: usize,
    line: Vec<u8>,
    discarding: bool,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    pub fn new(input: R, max: usize) -> Self {
        BoundedLines { reader: BufReader::new(input), max, line: Vec::new(), discarding: false }
    }

    /// The next line (without its newline), `None` at EOF.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // EOF: a final unterminated line still counts.
                let rest = std::mem::take(&mut self.line);
                return Ok(match std::mem::take(&mut self.discarding) {
                    true => Some(Line::TooLong),
                    false if rest.is_empty() => None,
                    false => Some(Line::Complete(rest)),
                });
            }
            let (chunk, found_newline) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            if !self.discarding {
                if self.line.len() + chunk.len() > self.max {
                    self.discarding = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = chunk.len() + usize::from(found_newline);
            self.reader.consume(used);
            if found_newline {
                return Ok(Some(match std::mem::take(&mut self.discarding) {
                    true => Line::TooLong,
                    false => Line::Complete(std::mem::take(&mut self.line)),
                }));
            }
        }
    }
}

/// Owns an output: every frame is written whole followed by a newline, so frames never
/// interleave; flushes when nothing else is queued. Cancels `failed` if writing fails.
pub async fn write_frames<W: AsyncWrite + Unpin>(
    mut output: W,
    mut frames: mpsc::Receiver<String>,
    failed: CancellationToken,
) {
    while let Some(mut frame) = frames.recv().await {
        frame.push('\n');
        let written = async {
            output.write_all(frame.as_bytes()).await?;
            // Flush only when no more frames are queued, so bursts go out in one write.
            if frames.is_empty() {
                output.flush().await?;
            }
            Ok::<_, std::io::Error>(())
        };
        if let Err(e) = written.await {
            tracing::debug!(error = %e, "MCP output closed");
            failed.cancel();
            return;
        }
    }
    let _ = output.flush().await;
}
