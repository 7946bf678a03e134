//! `clawmcp call --stdio`: a stdio MCP server that is only a relay to the running node, for MCP
//! clients that speak only stdio, or whose HTTP transport insists on OAuth discovery.
//!
//! Each stdin line is one JSON-RPC message, POSTed unchanged to the node (the endpoint and token
//! `call` uses), and the node's answer goes to stdout, one message per line:
//! - a request gets its response; a `tools/call` with a progress token first gets its progress
//!   notifications (the node streams them as SSE events; each event becomes a line);
//! - a notification, or a client's response, gets nothing (the node answers `202`);
//! - a request the node could not answer (node down, token refused, timeout, a reply that is not
//!   JSON-RPC) gets a `-32603` error for its id, naming the endpoint and what to do. One message
//!   failing never ends the relay.
//!
//! Messages are relayed concurrently, so a long `tools/call` never holds up a `ping` or the
//! `notifications/cancelled` that stops it: the node matches that cancellation to the call by its
//! id, exactly as for any HTTP client. Invalid lines (not JSON, batches, overlong) are answered
//! here with the error the node would give, at no round trip.
//!
//! The reader never waits for a slot, as in the stdio server ([`clawmcp_mcp::stdio`]): a reader
//! parked on a slot would stop reading the `ping`, the `notifications/cancelled` that could free
//! a slot, and EOF. `tools/call` requests have [`MAX_IN_FLIGHT`] slots, everything else its own
//! [`MAX_CONTROL_IN_FLIGHT`], so calls filling theirs never block a ping or a cancellation; a
//! request past its limit is answered at once with an error naming the limit ([`busy_message`]),
//! a notification past it is dropped with a warning (nothing can be answered).
//!
//! Once an `initialize` answer has been relayed, every later message carries the revision it
//! chose in `MCP-Protocol-Version`, as the streamable HTTP transport asks of a client.
//!
//! The token is read at start and re-read from the token file when the node answers `401` (a
//! `clawmcp token --reset` during the session); a `--token` value is never replaced. Only JSON-RPC
//! reaches stdout: one writer task owns it, logs go to stderr. EOF on stdin ends the session once
//! the messages in flight are answered, or after [`EOF_GRACE`]; the rest are dropped with their
//! connections, which the node takes as cancellation.

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clawmcp_http::client::Reply;
use clawmcp_mcp::client::{ServerMessage, parse_server_message};
use clawmcp_mcp::jsonrpc::{self, ErrorCode, Incoming, RequestId, RpcError};
use clawmcp_mcp::stdio::{BoundedLines, Line, write_frames};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::args::EndpointArgs;
use crate::client::{ClientError, NodeClient, TokenSource};
use crate::commands::{client_runtime, data_dir, node_client};
use crate::lifecycle::run_stdio_session;

/// Longest accepted line: the node's own request cap, since a longer message could only be
/// refused there (`413`).
pub const MAX_LINE_BYTES: usize = clawmcp_http::MAX_BODY_BYTES;

/// `tools/call` requests relayed at once; one more is answered at once with [`busy_message`].
/// Above the node's own pools (16 tool and 8 control slots, each answering `503` after 50 ms
/// when full), so on a working node the relay is never the bottleneck.
pub const MAX_IN_FLIGHT: usize = 64;

/// Other messages (pings, listings, notifications, the client's responses) relayed at once, in
/// slots of their own so that calls filling theirs never hold up a ping or a cancellation. These
/// are answered in milliseconds; more than this at once means the node is stuck.
pub const MAX_CONTROL_IN_FLIGHT: usize = 16;

/// How long the messages in flight at EOF get to be answered before they are dropped (and so
/// cancelled on the node). MCP clients close stdin when they are done and stop the server a
/// couple of seconds later, so waiting longer serves no one.
pub const EOF_GRACE: Duration = Duration::from_secs(3);

/// Frames waiting for stdout; relaying waits for room, so a client that stops reading slows the
/// relay down instead of growing memory.
const OUTPUT_QUEUE: usize = 256;

/// How long the writer gets to flush the last frames once everything else has stopped.
const FINAL_FLUSH: Duration = Duration::from_secs(2);

/// Runs the relay on this process's stdin and stdout until EOF (exit 0).
pub fn run(endpoint: &EndpointArgs) -> anyhow::Result<ExitCode> {
    let (client, source) = node_client(endpoint)?;
    let token_file = match source {
        TokenSource::Flag => None,
        TokenSource::File(_) | TokenSource::None => Some(data_dir(&endpoint.data_dir)?.token_path()),
    };
    tracing::info!(endpoint = %client.endpoint(), "relaying MCP between stdio and the node");
    let node = Arc::new(NodeLink { client: Mutex::new(client), token_file });
    // The same lifecycle as the other stdio surfaces: signals and the parent's death stop it.
    let end = run_stdio_session(client_runtime()?, |shutdown| async move {
        Ok(relay(tokio::io::stdin(), tokio::io::stdout(), node, shutdown).await)
    })?;
    match end {
        RelayEnd::InputClosed | RelayEnd::OutputClosed | RelayEnd::Stopped => Ok(ExitCode::SUCCESS),
        RelayEnd::InputFailed(e) => Err(anyhow::Error::new(e).context("reading MCP messages from stdin")),
    }
}

/// Where messages are relayed to: the node over HTTP, or a fake in tests.
pub(crate) trait Upstream: Send + Sync + 'static {
    /// The endpoint, for error messages.
    fn endpoint(&self) -> String;
    /// How long one message's whole exchange may take.
    fn timeout(&self) -> Duration;
    /// Relays one message as it came and returns the answer.
    fn send(&self, message: Bytes) -> impl Future<Output = Result<Reply, ClientError>> + Send;
    /// The node answered `initialize` with this revision: send it with every later message.
    fn negotiated(&self, protocol_version: &str);
}

/// The node over loopback HTTP, following token rotation.
struct NodeLink {
    client: Mutex<NodeClient>,
    /// The token file to re-read on `401`; `None` when `--token` chose the token.
    token_file: Option<PathBuf>,
}

impl NodeLink {
    fn current(&self) -> NodeClient {
        self.client.lock().expect("the client lock is never poisoned").clone()
    }

    /// The token file's token, if it differs from the one the node just refused.
    fn reload(&self, refused: &NodeClient) -> Option<NodeClient> {
        let token_file = self.token_file.as_ref()?;
        let fresh = refused.with_reloaded_token(token_file)?;
        tracing::info!("the node refused the token; using the new one in {}", token_file.display());
        *self.client.lock().expect("the client lock is never poisoned") = fresh.clone();
        Some(fresh)
    }

    fn token_source(&self, client: &NodeClient) -> TokenSource {
        match &self.token_file {
            None => TokenSource::Flag,
            Some(path) if client.has_token() => TokenSource::File(path.clone()),
            Some(_) => TokenSource::None,
        }
    }
}

impl Upstream for NodeLink {
    fn endpoint(&self) -> String {
        self.current().endpoint()
    }

    fn timeout(&self) -> Duration {
        self.current().timeout()
    }

    async fn send(&self, message: Bytes) -> Result<Reply, ClientError> {
        let client = self.current();
        let (client, answer) = match client.post_message(message.clone()).await {
            Err(ClientError::Unauthorized { endpoint, hint }) => match self.reload(&client) {
                Some(fresh) => {
                    let answer = fresh.post_message(message).await;
                    (fresh, answer)
                }
                None => (client, Err(ClientError::Unauthorized { endpoint, hint })),
            },
            answer => (client, answer),
        };
        answer.map_err(|e| e.with_token_hint(&self.token_source(&client)))
    }

    fn negotiated(&self, protocol_version: &str) {
        self.client.lock().expect("the client lock is never poisoned").set_protocol_version(protocol_version);
    }
}

/// How a relay session ended.
#[derive(Debug)]
pub(crate) enum RelayEnd {
    /// EOF on stdin: the client is done.
    InputClosed,
    /// Writing to stdout failed: the client went away.
    OutputClosed,
    /// Asked to stop: SIGINT, SIGTERM or the client's death.
    Stopped,
    InputFailed(std::io::Error),
}

/// What a relayed line is, which decides its slots and what its failure looks like.
enum Kind {
    /// Owes the client a response with this id.
    Request {
        id: RequestId,
        method: String,
    },
    Notification(String),
    /// The client's answer to a server request.
    Response,
}

impl Kind {
    fn is_tool_call(&self) -> bool {
        matches!(self, Kind::Request { method, .. } if method == "tools/call")
    }
}

/// The error a request gets when every slot of its kind is taken.
pub fn busy_message(tool_call: bool) -> String {
    if tool_call {
        format!(
            "relay busy: {MAX_IN_FLIGHT} tool calls are already in flight through this `clawmcp call --stdio` \
             (the limit); wait for one to finish or cancel one, then retry"
        )
    } else {
        format!(
            "relay busy: {MAX_CONTROL_IN_FLIGHT} messages other than tool calls are already in flight through \
             this `clawmcp call --stdio` (the limit); the node is not answering them, retry later"
        )
    }
}

/// Relays `input` lines to `upstream` and answers on `output` until EOF or a closed output.
pub(crate) async fn relay<R, W, U>(input: R, output: W, upstream: Arc<U>, shutdown: CancellationToken) -> RelayEnd
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    U: Upstream,
{
    let (out, queued) = mpsc::channel(OUTPUT_QUEUE);
    let output_closed = CancellationToken::new();
    let writer = tokio::spawn(write_frames(output, queued, output_closed.clone()));
    let tool_slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let control_slots = Arc::new(Semaphore::new(MAX_CONTROL_IN_FLIGHT));
    let mut in_flight = JoinSet::new();
    let mut lines = BoundedLines::new(input, MAX_LINE_BYTES);
    let end = loop {
        let line = tokio::select! {
            _ = output_closed.cancelled() => break RelayEnd::OutputClosed,
            // SIGINT, SIGTERM or the client's death: dropping what is in flight closes those
            // connections, which the node treats as cancellation.
            _ = shutdown.cancelled() => break RelayEnd::Stopped,
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => continue,
            line = lines.next_line() => line,
        };
        let line = match line {
            Ok(Some(Line::Complete(line))) => Bytes::from(line),
            Ok(Some(Line::TooLong)) => {
                let error = RpcError::new(
                    ErrorCode::ParseError,
                    format!("Parse error: message longer than {MAX_LINE_BYTES} bytes, the node's request limit"),
                );
                let _ = out.send(jsonrpc::error_frame(None, &error)).await;
                continue;
            }
            Ok(None) => break RelayEnd::InputClosed,
            Err(e) => break RelayEnd::InputFailed(e),
        };
        let Some(kind) = classify(&line, &out).await else { continue };
        // Never wait for a slot: see the module docs.
        let slots = if kind.is_tool_call() { &tool_slots } else { &control_slots };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refuse_busy(kind, &out).await;
            continue;
        };
        in_flight.spawn(relay_one(upstream.clone(), line, kind, out.clone(), slot));
    };
    if matches!(end, RelayEnd::InputClosed) {
        let answered = async { while in_flight.join_next().await.is_some() {} };
        if tokio::time::timeout(EOF_GRACE, answered).await.is_err() {
            tracing::info!(
                "stdin closed with {} message(s) unanswered after {EOF_GRACE:?}; dropping them (the node cancels them)",
                in_flight.len()
            );
        }
    }
    // Aborting drops each exchange's connection: the node cancels the calls still running.
    in_flight.shutdown().await;
    drop(out);
    let _ = tokio::time::timeout(FINAL_FLUSH, writer).await;
    end
}

/// A message past its slots: a request gets the busy error, anything else is dropped (logged).
async fn refuse_busy(kind: Kind, out: &mpsc::Sender<String>) {
    let message = busy_message(kind.is_tool_call());
    match kind {
        Kind::Request { id, .. } => {
            let error = RpcError::new(ErrorCode::InternalError, message);
            let _ = out.send(jsonrpc::error_frame(Some(&id), &error)).await;
        }
        Kind::Notification(method) => tracing::warn!(%method, "dropped a notification: {message}"),
        Kind::Response => tracing::warn!("dropped a response to the node: {message}"),
    }
}

/// What to relay for a line, or `None` when it was answered here (invalid) or is blank.
async fn classify(line: &[u8], out: &mpsc::Sender<String>) -> Option<Kind> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match jsonrpc::parse(line) {
        Ok(Incoming::Request { id, method, .. }) => Some(Kind::Request { id, method }),
        Ok(Incoming::Notification { method, .. }) => Some(Kind::Notification(method)),
        Ok(Incoming::Response) => Some(Kind::Response),
        Err(rejection) => {
            if let Some(frame) = jsonrpc::rejection_frame(rejection) {
                let _ = out.send(frame).await;
            }
            None
        }
    }
}

/// Relays one message within the upstream's timeout; a request that got no response gets an
/// error response, any other failure is logged.
async fn relay_one<U: Upstream>(
    upstream: Arc<U>,
    message: Bytes,
    kind: Kind,
    out: mpsc::Sender<String>,
    _slot: OwnedSemaphorePermit,
) {
    let limit = upstream.timeout();
    let initialize = matches!(&kind, Kind::Request { method, .. } if method == "initialize");
    let outcome = match tokio::time::timeout(limit, forward(&*upstream, message, initialize, &out)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(ClientError::from(clawmcp_http::client::ClientError::Timeout {
            endpoint: upstream.endpoint(),
            ms: limit.as_millis(),
        })),
    };
    let failure = match (kind, outcome) {
        (_, Ok(Answered::Yes)) => return,
        (Kind::Request { id, .. }, Ok(Answered::No)) => {
            (id, format!("the node at {} accepted the request without answering it", upstream.endpoint()))
        }
        (Kind::Request { id, .. }, Err(e)) => (id, e.to_string()),
        (Kind::Notification(method), Err(e)) => {
            tracing::warn!(%method, "could not relay a notification to the node: {e}");
            return;
        }
        (Kind::Response, Err(e)) => {
            tracing::warn!("could not relay a response to the node: {e}");
            return;
        }
        (Kind::Notification(_) | Kind::Response, Ok(Answered::No)) => return,
    };
    let (id, message) = failure;
    let _ = out.send(jsonrpc::error_frame(Some(&id), &RpcError::new(ErrorCode::InternalError, message))).await;
}

/// Whether a response reached the output.
enum Answered {
    Yes,
    No,
}

/// Sends one message and writes every frame of its answer as a line. For an `initialize`, the
/// revision its answer chose is handed to the upstream.
async fn forward<U: Upstream>(
    upstream: &U,
    message: Bytes,
    initialize: bool,
    out: &mpsc::Sender<String>,
) -> Result<Answered, ClientError> {
    let bad = |reason: String| {
        ClientError::from(clawmcp_http::client::ClientError::BadResponse { endpoint: upstream.endpoint(), reason })
    };
    let relayed = |frame: Relayed| {
        if initialize && let Some(version) = frame.protocol_version() {
            upstream.negotiated(&version);
        }
        frame.line
    };
    match upstream.send(message).await? {
        Reply::Accepted => Ok(Answered::No),
        Reply::Frame(body) => {
            let frame = Relayed::read(&body).map_err(bad)?;
            let _ = out.send(relayed(frame)).await;
            Ok(Answered::Yes)
        }
        Reply::Events(mut events) => {
            let mut answered = Answered::No;
            while let Some(event) = events.next().await {
                let frame =
                    match event.map_err(ClientError::from).and_then(|data| Relayed::read(data.as_bytes()).map_err(bad))
                    {
                        Ok(frame) => frame,
                        // After the response nothing else is owed: a broken end of stream is harmless.
                        Err(e) if matches!(answered, Answered::Yes) => {
                            tracing::debug!("the node's event stream ended badly after its answer: {e}");
                            break;
                        }
                        Err(e) => return Err(e),
                    };
                if frame.is_response() {
                    answered = Answered::Yes;
                }
                if out.send(relayed(frame)).await.is_err() {
                    // stdout is gone: there is no one left to answer.
                    return Ok(Answered::Yes);
                }
            }
            Ok(answered)
        }
    }
}

/// A frame from the node, checked to be JSON-RPC, as one stdout line.
struct Relayed {
    line: String,
    message: ServerMessage,
}

impl Relayed {
    /// Reads a frame; what is not JSON-RPC never reaches stdout.
    fn read(frame: &[u8]) -> Result<Relayed, String> {
        let message = parse_server_message(frame).map_err(|e| e.to_string())?;
        // `parse_server_message` accepted it, so it is UTF-8 JSON.
        let text = String::from_utf8_lossy(frame);
        let text = text.trim();
        let line = if text.contains(['\n', '\r']) {
            // JSON strings cannot hold raw line breaks, so these sit between tokens: re-serialise.
            let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            value.to_string()
        } else {
            text.to_owned()
        };
        Ok(Relayed { line, message })
    }

    fn is_response(&self) -> bool {
        matches!(self.message, ServerMessage::Response(_))
    }

    /// The `protocolVersion` of a successful answer, if it has one.
    fn protocol_version(&self) -> Option<String> {
        let ServerMessage::Response(response) = &self.message else { return None };
        let result = response.outcome.as_ref().ok()?;
        #[derive(serde::Deserialize)]
        struct Initialized {
            #[serde(rename = "protocolVersion")]
            protocol_version: String,
        }
        serde_json::from_str::<Initialized>(result.get()).ok().map(|r| r.protocol_version)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines as TextLines};
    use tokio::sync::watch;
    use tokio::task::JoinHandle;
    use tokio::time::Instant;

    use super::*;

    const ENDPOINT: &str = "http://127.0.0.1:9/";

    /// A node stand-in that answers by method (a `tools/call` by tool name): `hang` waits for a
    /// `release` permit, `refused` fails like a stopped node, `stream*` answer as event streams,
    /// `multiline`/`html`/`accepted` answer oddly, `initialize` chooses 2025-06-18; other
    /// requests get `{}` and notifications `202`.
    struct Fake {
        sent: watch::Sender<usize>,
        /// The method of every message relayed, in order.
        methods: Mutex<Vec<String>>,
        release: Semaphore,
        /// `hang` exchanges dropped before they answered.
        dropped: AtomicUsize,
        timeout: Duration,
        /// What [`Upstream::negotiated`] was told.
        negotiated: Mutex<Option<String>>,
    }

    impl Fake {
        fn new() -> Arc<Self> {
            Fake::with_timeout(Duration::from_secs(3600))
        }

        fn with_timeout(timeout: Duration) -> Arc<Self> {
            Arc::new(Fake {
                sent: watch::channel(0).0,
                methods: Mutex::default(),
                release: Semaphore::new(0),
                dropped: AtomicUsize::new(0),
                timeout,
                negotiated: Mutex::default(),
            })
        }

        fn sent(&self) -> usize {
            *self.sent.borrow()
        }

        fn last_method(&self) -> Option<String> {
            self.methods.lock().unwrap().last().cloned()
        }
    }

    /// Counts a drop unless disarmed: the exchange was abandoned.
    struct DropCounter<'a>(&'a AtomicUsize, bool);

    impl Drop for DropCounter<'_> {
        fn drop(&mut self) {
            if self.1 {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn events(frames: Vec<Result<Value, clawmcp_http::client::ClientError>>) -> Reply {
        let frames = frames.into_iter().map(|frame| frame.map(|value| value.to_string()));
        Reply::Events(Box::pin(futures_util::stream::iter(frames)))
    }

    fn progress() -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}})
    }

    impl Upstream for Fake {
        fn endpoint(&self) -> String {
            ENDPOINT.into()
        }

        fn timeout(&self) -> Duration {
            self.timeout
        }

        fn negotiated(&self, protocol_version: &str) {
            *self.negotiated.lock().unwrap() = Some(protocol_version.to_owned());
        }

        async fn send(&self, message: Bytes) -> Result<Reply, ClientError> {
            let request: Value = serde_json::from_slice(&message).expect("the relay sends JSON");
            let method = request["method"].as_str().expect("a method");
            self.methods.lock().unwrap().push(method.to_owned());
            self.sent.send_modify(|sent| *sent += 1);
            let id = request["id"].clone();
            let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
            let frame = |value: Value| Reply::Frame(Bytes::from(value.to_string()));
            let broken = || clawmcp_http::client::ClientError::Connect {
                endpoint: ENDPOINT.into(),
                reason: "connection reset".into(),
            };
            let what = match method {
                "tools/call" => request["params"]["name"].as_str().expect("a tool name"),
                method => method,
            };
            Ok(match what {
                "initialize" => frame(answer(json!({"protocolVersion": "2025-06-18"}))),
                "hang" => {
                    let mut abandoned = DropCounter(&self.dropped, true);
                    self.release.acquire().await.expect("never closed").forget();
                    abandoned.1 = false;
                    frame(answer(json!({"released": true})))
                }
                "refused" => return Err(ClientError::Refused { endpoint: ENDPOINT.into() }),
                "stream" => events(vec![Ok(progress()), Ok(answer(json!({"done": true})))]),
                "broken_stream" => events(vec![Ok(progress()), Err(broken())]),
                "unanswered_stream" => events(vec![Ok(progress())]),
                "answered_then_broken_stream" => events(vec![Ok(answer(json!({}))), Err(broken())]),
                "multiline" => {
                    Reply::Frame(Bytes::from(serde_json::to_string_pretty(&answer(json!({"a": 1}))).unwrap()))
                }
                "html" => Reply::Frame(Bytes::from_static(b"<html>oops</html>")),
                "accepted" => Reply::Accepted,
                _ if request.get("id").is_none() => Reply::Accepted,
                _ => frame(answer(json!({}))),
            })
        }
    }

    /// A relay on in-memory pipes, driven as an MCP client drives `clawmcp call --stdio`.
    struct Session {
        stdin: Option<DuplexStream>,
        stdout: TextLines<BufReader<DuplexStream>>,
        relay: JoinHandle<RelayEnd>,
    }

    impl Session {
        fn start(fake: &Arc<Fake>) -> Self {
            let (stdin, relay_input) = tokio::io::duplex(64 * 1024);
            let (relay_output, stdout) = tokio::io::duplex(64 * 1024);
            let relay = tokio::spawn(relay(relay_input, relay_output, fake.clone(), CancellationToken::new()));
            Session { stdin: Some(stdin), stdout: BufReader::new(stdout).lines(), relay }
        }

        async fn write(&mut self, line: &str) {
            let stdin = self.stdin.as_mut().expect("stdin is open");
            stdin.write_all(line.as_bytes()).await.unwrap();
            stdin.write_all(b"\n").await.unwrap();
        }

        async fn request(&mut self, id: Value, method: &str) {
            self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method}).to_string()).await;
        }

        /// Takes `tool_calls` tool slots and `others` other slots with `hang`s that reached the
        /// fake (ids `t0..`, `c0..`).
        async fn fill(&mut self, fake: &Fake, tool_calls: usize, others: usize) {
            for id in 0..tool_calls {
                self.call(json!(format!("t{id}")), "hang").await;
            }
            for id in 0..others {
                self.request(json!(format!("c{id}")), "hang").await;
            }
            fake.sent.subscribe().wait_for(|sent| *sent >= tool_calls + others).await.unwrap();
        }

        /// A `tools/call` of the fake's `tool`.
        async fn call(&mut self, id: Value, tool: &str) {
            let params = json!({"name": tool, "arguments": {}});
            self.write(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string())
                .await;
        }

        /// The next stdout line as JSON; virtual time makes a missing line fail, not hang.
        async fn next(&mut self) -> Value {
            let line = tokio::time::timeout(Duration::from_secs(7200), self.stdout.next_line())
                .await
                .expect("a line within the (virtual) time limit")
                .unwrap()
                .expect("stdout is still open");
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
        }

        /// Closes stdin and returns how the relay ended, asserting nothing more was written.
        async fn finish(mut self) -> RelayEnd {
            drop(self.stdin.take());
            let end = self.relay.await.unwrap();
            assert_eq!(self.stdout.next_line().await.unwrap(), None, "nothing after the last answer");
            end
        }
    }

    fn assert_error(frame: &Value, id: Value, code: i64, text: &str) {
        assert_eq!(frame["id"], id, "{frame}");
        assert_eq!(frame["error"]["code"], code, "{frame}");
        let message = frame["error"]["message"].as_str().unwrap();
        assert!(message.contains(text), "{message:?} lacks {text:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn requests_are_answered_and_notifications_get_nothing() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.write(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        session.request(json!(1), "ping").await;
        assert_eq!(session.next().await, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert!(matches!(session.finish().await, RelayEnd::InputClosed));
        assert_eq!(fake.sent(), 2, "the notification was relayed too");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_request_does_not_hold_up_the_next_one() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!("slow"), "hang").await;
        session.request(json!(2), "ping").await;
        assert_eq!(session.next().await["id"], 2);
        fake.release.add_permits(1);
        assert_eq!(session.next().await, json!({"jsonrpc": "2.0", "id": "slow", "result": {"released": true}}));
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn at_eof_answers_in_flight_are_still_written() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(1), "hang").await;
        fake.sent.subscribe().wait_for(|sent| *sent >= 1).await.unwrap();
        drop(session.stdin.take());
        tokio::time::sleep(EOF_GRACE / 2).await;
        fake.release.add_permits(1);
        assert_eq!(session.next().await["result"]["released"], true);
        assert!(matches!(session.finish().await, RelayEnd::InputClosed));
        assert_eq!(fake.dropped.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn at_eof_what_is_unanswered_after_the_grace_is_dropped() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(1), "hang").await;
        fake.sent.subscribe().wait_for(|sent| *sent >= 1).await.unwrap();
        let closed = Instant::now();
        drop(session.stdin.take());
        let end = (&mut session.relay).await.unwrap();
        assert!(matches!(end, RelayEnd::InputClosed));
        assert!(closed.elapsed() >= EOF_GRACE, "left after {:?}", closed.elapsed());
        assert_eq!(fake.dropped.load(Ordering::SeqCst), 1, "the exchange (and its connection) was dropped");
        assert_eq!(session.stdout.next_line().await.unwrap(), None, "no answer is invented for it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_call_past_the_limit_is_refused_at_once_and_pings_and_cancellations_still_flow() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.fill(&fake, MAX_IN_FLIGHT, 0).await;
        session.call(json!("one too many"), "hang").await;
        let refused = session.next().await;
        assert_error(&refused, json!("one too many"), -32603, &busy_message(true));
        assert_error(&refused, json!("one too many"), -32603, "64 tool calls are already in flight");
        assert_eq!(fake.sent(), MAX_IN_FLIGHT, "the call past the limit never reached the node");

        session.request(json!("ping"), "ping").await;
        assert_eq!(session.next().await, json!({"jsonrpc": "2.0", "id": "ping", "result": {}}), "pings still flow");
        session.write(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"t0"}}"#).await;
        fake.sent.subscribe().wait_for(|sent| *sent >= MAX_IN_FLIGHT + 2).await.unwrap();
        assert_eq!(fake.last_method().as_deref(), Some("notifications/cancelled"), "the cancellation was relayed");

        fake.release.add_permits(1);
        assert_eq!(session.next().await["result"]["released"], true);
        session.call(json!("again"), "echo").await;
        assert_eq!(session.next().await["id"], "again", "the freed slot takes the next call");
        fake.release.add_permits(MAX_IN_FLIGHT);
        for _ in 1..MAX_IN_FLIGHT {
            assert_eq!(session.next().await["result"]["released"], true);
        }
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn eof_is_read_with_every_slot_taken() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.fill(&fake, MAX_IN_FLIGHT, MAX_CONTROL_IN_FLIGHT).await;
        drop(session.stdin.take());
        assert!(matches!((&mut session.relay).await.unwrap(), RelayEnd::InputClosed));
        assert_eq!(fake.dropped.load(Ordering::SeqCst), MAX_IN_FLIGHT + MAX_CONTROL_IN_FLIGHT);
        assert_eq!(session.stdout.next_line().await.unwrap(), None, "no answer is invented");
    }

    #[tokio::test(start_paused = true)]
    async fn other_messages_have_slots_of_their_own_up_to_their_limit() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.fill(&fake, 0, MAX_CONTROL_IN_FLIGHT).await;
        session.request(json!("ping"), "ping").await;
        assert_error(&session.next().await, json!("ping"), -32603, "16 messages other than tool calls");
        session.write(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        session.call(json!("call"), "echo").await;
        assert_eq!(session.next().await["id"], "call", "tool calls have their own slots");
        assert_eq!(fake.sent(), MAX_CONTROL_IN_FLIGHT + 1, "the notification past the limit was dropped");
        fake.release.add_permits(MAX_CONTROL_IN_FLIGHT);
        for _ in 0..MAX_CONTROL_IN_FLIGHT {
            assert_eq!(session.next().await["result"]["released"], true);
        }
        session.request(json!("ping again"), "ping").await;
        assert_eq!(session.next().await["id"], "ping again", "freed slots are taken again");
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_revision_initialize_chose_is_kept_for_later_messages() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(1), "ping").await;
        assert_eq!(session.next().await["id"], 1);
        assert_eq!(*fake.negotiated.lock().unwrap(), None, "only an initialize answer negotiates");
        session.request(json!(2), "initialize").await;
        assert_eq!(session.next().await["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(fake.negotiated.lock().unwrap().as_deref(), Some("2025-06-18"));
        session.finish().await;
    }

    /// A ping padded to exactly `len` bytes.
    fn ping_of_length(id: i64, len: usize) -> String {
        let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"pad":""#);
        let tail = r#""}}"#;
        format!("{head}{}{tail}", "x".repeat(len - head.len() - tail.len()))
    }

    #[tokio::test(start_paused = true)]
    async fn lines_are_bounded_at_the_nodes_request_limit() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        let largest = ping_of_length(1, MAX_LINE_BYTES);
        assert_eq!(largest.len(), MAX_LINE_BYTES);
        session.write(&largest).await;
        assert_eq!(session.next().await["id"], 1, "a line of exactly the limit is relayed");
        session.write(&ping_of_length(2, MAX_LINE_BYTES + 1)).await;
        assert_error(&session.next().await, Value::Null, -32700, "longer than 4194304 bytes");
        session.request(json!(3), "ping").await;
        assert_eq!(session.next().await["id"], 3, "the relay carries on after an overlong line");
        session.finish().await;
        assert_eq!(fake.sent(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_the_node_cannot_answer_gets_an_error_naming_the_endpoint() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(7), "refused").await;
        let error = session.next().await;
        assert_error(&error, json!(7), -32603, &format!("no clawmcp node is listening on {ENDPOINT}"));
        assert_error(&error, json!(7), -32603, "start one with `clawmcp node`");
        // A notification that fails has no one to answer: nothing is written.
        session.write(r#"{"jsonrpc":"2.0","method":"refused"}"#).await;
        session.request(json!(8), "ping").await;
        assert_eq!(session.next().await["id"], 8);
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_only_accepted_by_the_node_gets_an_error() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(4), "accepted").await;
        assert_error(&session.next().await, json!(4), -32603, "accepted the request without answering");
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_past_the_timeout_gets_an_error() {
        let fake = Fake::with_timeout(Duration::from_secs(10));
        let mut session = Session::start(&fake);
        let sent = Instant::now();
        session.request(json!(5), "hang").await;
        assert_error(&session.next().await, json!(5), -32603, &format!("timed out after 10000 ms calling {ENDPOINT}"));
        assert!(sent.elapsed() >= Duration::from_secs(10));
        assert_eq!(fake.dropped.load(Ordering::SeqCst), 1);
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn streamed_answers_are_relayed_event_by_event() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(1), "stream").await;
        assert_eq!(session.next().await, progress());
        assert_eq!(session.next().await, json!({"jsonrpc": "2.0", "id": 1, "result": {"done": true}}));
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_ends_before_its_answer_gets_an_error() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(2), "broken_stream").await;
        assert_eq!(session.next().await, progress());
        assert_error(&session.next().await, json!(2), -32603, "connection reset");
        session.request(json!(3), "unanswered_stream").await;
        assert_eq!(session.next().await, progress());
        assert_error(&session.next().await, json!(3), -32603, "without answering");
        // Once answered, a broken end of the stream adds nothing: no second response.
        session.request(json!(4), "answered_then_broken_stream").await;
        assert_eq!(session.next().await, json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn answers_become_one_line_and_what_is_not_json_rpc_never_reaches_stdout() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.request(json!(1), "multiline").await;
        assert_eq!(session.next().await, json!({"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}));
        session.request(json!(2), "html").await;
        assert_error(&session.next().await, json!(2), -32603, "is not JSON-RPC: not a JSON-RPC object");
        session.finish().await;
    }

    #[tokio::test(start_paused = true)]
    async fn invalid_lines_are_answered_here_without_asking_the_node() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        session.write("not json").await;
        assert_error(&session.next().await, Value::Null, -32700, "Parse error");
        session.write(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).await;
        assert_error(&session.next().await, Value::Null, -32600, "Batch");
        session.write("   ").await;
        session.write(r#"{"jsonrpc":"2.0","id":9}"#).await;
        assert_error(&session.next().await, json!(9), -32600, "Missing 'method'");
        session.finish().await;
        assert_eq!(fake.sent(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_last_line_without_a_newline_is_still_relayed() {
        let fake = Fake::new();
        let mut session = Session::start(&fake);
        let stdin = session.stdin.as_mut().unwrap();
        stdin.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await.unwrap();
        drop(session.stdin.take());
        assert_eq!(session.next().await["id"], 1);
        assert!(matches!(session.relay.await.unwrap(), RelayEnd::InputClosed));
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_stdout_ends_the_relay() {
        let fake = Fake::new();
        let Session { mut stdin, stdout, relay } = Session::start(&fake);
        drop(stdout);
        let stdin = stdin.as_mut().unwrap();
        stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
        assert!(matches!(relay.await.unwrap(), RelayEnd::OutputClosed));
    }
}
