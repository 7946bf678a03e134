//! The one HTTP MCP client of clawmcp: `clawmcp call` (and `approvals`), the stdio relay
//! (`call --stdio`) and `clawmcp tools`' gateway discovery all speak MCP over HTTP through it.
//!
//! It speaks the streamable HTTP transport as a client needs it against a loopback server:
//! - every message is one `POST` of one JSON-RPC frame, with `Accept: application/json,
//!   text/event-stream`, the bearer token if any, and once [`initialize`](McpClient::initialize)
//!   negotiated them the `MCP-Protocol-Version` and `Mcp-Session-Id` headers;
//! - an answer is `202`/`204` (nothing to read), one JSON frame, or an event stream whose events
//!   are read one by one ([`Reply::Events`]: a `tools/call` with a progress token gets its
//!   progress, then its response); every body, streamed or not, is capped at the client's
//!   [`max_response_bytes`](McpClient::with_max_response_bytes);
//! - [`request`](McpClient::request) waits, within the client's timeout, for the response whose
//!   id is the request's ([`clawmcp_mcp::client`] reads the frames: ids matched exactly,
//!   notifications skipped, malformed frames a clear error); [`cancel`](McpClient::cancel) sends
//!   `notifications/cancelled` for a request.
//!
//! Plain `http://` only. Connections are kept alive: a message whose whole answer was read
//! gives its connection back to the client's pool (shared by its clones; at most
//! [`MAX_IDLE_CONNECTIONS`] idle, each reused only within [`IDLE_REUSE`], well inside the
//! node's keep-alive idle deadlines), and the next message takes it instead of connecting
//! (a file transfer's hundreds of polls are one connection, not hundreds). A connection is only
//! ever pooled idle: one with an exchange in flight or a streamed answer is the exchange's alone,
//! so dropping a reply (or the future waiting for it) still closes its connection, which a
//! clawmcp node takes as cancellation. Redirects are not followed. The JSON-RPC side lives in
//! `clawmcp_mcp::client`, which knows no transport; this module knows no command: the node's
//! wording ("no clawmcp node is listening", token hints) is the CLI's.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::{Answer, ServerMessage, cancelled_frame, parse_server_message, request_frame};
use futures_util::{Stream, StreamExt};
use http::HeaderValue;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use sse_stream::SseStream;
use tokio::net::TcpStream;
use tokio::time::Instant;

mod pipelined;

/// The default cap on a response body (a whole event stream included): well above any tool
/// result (screenshots), bounded so a wrong endpoint cannot exhaust memory.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The response cap of a declared file command ([`McpClient::declaring_file_command`]): the
/// node's 24 MiB file allowance for the result, and room for the event stream around it.
pub const FILE_RESPONSE_BYTES: usize = 25 * 1024 * 1024;

/// The default time one exchange may take ([`McpClient::with_timeout`]).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Idle connections a client (and its clones) keeps for its next messages.
pub const MAX_IDLE_CONNECTIONS: usize = 4;

/// How long an idle connection is reused: a fifth of the node's shortest idle deadline (an
/// unauthenticated connection must start a request within 2 s, docs/node-http.md §3), so the
/// node never closes one just as a message is sent on it.
pub const IDLE_REUSE: Duration = Duration::from_millis(400);

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
const SESSION_ID_HEADER: &str = "mcp-session-id";

/// An MCP server reached over loopback HTTP.
#[derive(Debug, Clone)]
pub struct McpClient {
    /// Without the brackets of an IPv6 literal.
    host: String,
    port: u16,
    /// Path and query, at least `/`.
    path: String,
    bearer: Option<String>,
    timeout: Duration,
    max_response_bytes: usize,
    /// The revision `initialize` agreed on, sent on every later message.
    protocol_version: Option<HeaderValue>,
    /// The session the server assigned at `initialize`, echoed on every later message.
    session_id: Option<HeaderValue>,
    /// The file command every message declares (`X-OpenClaw-File-Command`), if any.
    file_command: Option<HeaderValue>,
    /// Idle keep-alive connections to this endpoint, shared by the clones.
    pool: Arc<Pool>,
}

/// Connections whose last exchange is over, newest last, each with when it became idle.
#[derive(Default)]
struct Pool {
    idle: Mutex<Vec<(SendRequest<Full<Bytes>>, Instant)>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("idle", &self.idle().len()).finish()
    }
}

impl Pool {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(SendRequest<Full<Bytes>>, Instant)>> {
        self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The most recently idle connection still open and young enough; older ones are closed.
    fn take(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle();
        idle.retain(|(sender, since)| !sender.is_closed() && since.elapsed() < IDLE_REUSE);
        idle.pop().map(|(sender, _)| sender)
    }

    /// Keeps a connection whose answer was read whole, if there is room (else it closes).
    fn give_back(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self.idle();
        if !sender.is_closed() && idle.len() < MAX_IDLE_CONNECTIONS {
            idle.push((sender, Instant::now()));
        }
    }
}

/// The connection of one exchange, given back to the pool once its answer is read whole.
struct Kept(SendRequest<Full<Bytes>>);

/// What the server answered to one message ([`McpClient::post`]).
pub enum Reply {
    /// `202`/`204`: a notification (or a client's response) was taken; there is nothing to read.
    Accepted,
    /// One JSON-RPC frame (a JSON body).
    Frame(Bytes),
    /// An event stream: the `data` of each event as it arrives, in order.
    Events(EventFrames),
}

/// The frames of a streamed answer, in order; an error ends the stream.
pub type EventFrames = Pin<Box<dyn Stream<Item = Result<String, ClientError>> + Send>>;

/// Why an exchange did not produce an answer. Each names the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("nothing is listening on {endpoint}")]
    Refused { endpoint: String },
    #[error("failed to reach {endpoint}: {reason}")]
    Connect { endpoint: String, reason: String },
    #[error("timed out after {ms} ms calling {endpoint}")]
    Timeout { endpoint: String, ms: u128 },
    #[error("{endpoint} rejected the bearer token (HTTP 401)")]
    Unauthorized { endpoint: String },
    #[error("the bearer token for {endpoint} is not a valid HTTP header value (a control character?)")]
    BadBearer { endpoint: String },
    #[error("MCP HTTP {status} from {endpoint}: {body}")]
    Http { endpoint: String, status: u16, body: String },
    #[error("the response from {endpoint} is larger than {limit} bytes")]
    TooLarge { endpoint: String, limit: usize },
    #[error("the response from {endpoint} is not JSON-RPC: {reason}")]
    BadResponse { endpoint: String, reason: String },
    #[error("{endpoint} accepted the request without answering it")]
    Unanswered { endpoint: String },
}

/// The endpoint URL could not be used.
#[derive(Debug, thiserror::Error)]
#[error("invalid --url `{url}`: {reason}")]
pub struct BadUrl {
    url: String,
    reason: &'static str,
}

impl McpClient {
    /// The server at `http://127.0.0.1:<port>/`.
    pub fn loopback(port: u16) -> Self {
        McpClient {
            host: "127.0.0.1".into(),
            port,
            path: "/".into(),
            bearer: None,
            timeout: DEFAULT_TIMEOUT,
            max_response_bytes: MAX_RESPONSE_BYTES,
            protocol_version: None,
            session_id: None,
            file_command: None,
            pool: Arc::default(),
        }
    }

    /// The server at `url`. Only plain `http://` is spoken: the servers we talk to listen on
    /// loopback without TLS.
    pub fn new(url: &str) -> Result<Self, BadUrl> {
        let bad = |reason| BadUrl { url: url.to_string(), reason };
        let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(bad("only http:// is supported (the node listens on loopback without TLS)"));
        }
        let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
        let path = uri.path_and_query().map(|p| p.as_str().to_string()).filter(|p| !p.is_empty());
        Ok(McpClient {
            host: host.trim_matches(['[', ']']).to_string(),
            port: uri.port_u16().unwrap_or(80),
            path: path.unwrap_or_else(|| "/".into()),
            ..McpClient::loopback(0)
        })
    }

    /// Sends `Authorization: Bearer <token>` (trimmed; a blank token is no token).
    pub fn with_bearer(mut self, token: Option<String>) -> Self {
        self.bearer = token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        self
    }

    /// How long [`request`](Self::request) and [`notify`](Self::notify) may take, answer
    /// included.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The cap on one response body, a whole event stream included.
    pub fn with_max_response_bytes(mut self, limit: usize) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// This client, declaring `command` in `X-OpenClaw-File-Command` on every message
    /// (`docs/node-http.md` §12): the node then reads its body and answers its result under the
    /// file allowance, so its response cap becomes [`FILE_RESPONSE_BYTES`] too. Only for the
    /// `tools/call` of that command: the node refuses the header on anything else. A command
    /// that is not a header value is not declared.
    pub fn declaring_file_command(&self, command: &str) -> Self {
        McpClient {
            file_command: HeaderValue::from_str(command).ok(),
            max_response_bytes: self.max_response_bytes.max(FILE_RESPONSE_BYTES),
            ..self.clone()
        }
    }

    /// Sends `MCP-Protocol-Version: <version>` from now on (what [`initialize`](Self::initialize)
    /// does with the revision the server chose; a relay sets it from the answer it relayed).
    /// A version that is not a header value is not sent.
    pub fn set_protocol_version(&mut self, version: &str) {
        self.protocol_version = HeaderValue::from_str(version).ok();
    }

    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_ref().and_then(|v| v.to_str().ok())
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// True when the endpoint is this machine (`localhost`, 127.0.0.0/8, `::1`): only then may
    /// a token read from a file be sent.
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn bearer(&self) -> Option<&str> {
        self.bearer.as_deref()
    }

    /// The URL, for messages.
    pub fn endpoint(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("http://{host}:{}{}", self.port, self.path)
    }

    /// `initialize` with `params`, then `notifications/initialized`; afterwards every message
    /// carries the revision the server chose and the session it assigned. Returns the result.
    pub async fn initialize(&mut self, params: &Value) -> Result<Value, ClientError> {
        let id = RequestId::number(0);
        let exchange = async {
            let (response, kept) = self.send(Bytes::from(request_frame(&id, "initialize", Some(params)))).await?;
            let session = response.headers().get(SESSION_ID_HEADER).cloned();
            let reply = self.reply(response, kept).await?;
            Ok::<_, ClientError>((session, self.answer_of(&id, reply, &mut |_| {}).await?))
        };
        let (session, answer) = self.within_timeout(exchange).await?;
        let result = match answer {
            Answer::Result(result) => result,
            Answer::Error(error) => {
                return Err(self.bad_response(format!("initialize failed: {error}")));
            }
        };
        if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
            self.set_protocol_version(version);
        }
        self.session_id = session;
        self.notify("notifications/initialized", None).await?;
        Ok(result)
    }

    /// Sends a request and waits, within the timeout, for its answer: the result, or the
    /// server's error. Notifications streamed before it are skipped.
    pub async fn request(&self, id: &RequestId, method: &str, params: Option<&Value>) -> Result<Answer, ClientError> {
        self.request_observing(id, method, params, |_| {}).await
    }

    /// [`request`](Self::request), handing every other message the server sends before the
    /// answer (progress notifications of a call made with a progress token, log messages) to
    /// `observe` as it arrives.
    pub async fn request_observing(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&Value>,
        mut observe: impl FnMut(&ServerMessage),
    ) -> Result<Answer, ClientError> {
        let body = Bytes::from(request_frame(id, method, params));
        self.within_timeout(async { self.answer_of(id, self.post(body).await?, &mut observe).await }).await
    }

    /// Sends a notification, within the timeout; only the HTTP status is awaited.
    pub async fn notify(&self, method: &str, params: Option<&Value>) -> Result<(), ClientError> {
        let frame = match params {
            Some(params) => clawmcp_mcp::jsonrpc::notification_frame(method, params),
            None => serde_json::json!({"jsonrpc": "2.0", "method": method}).to_string(),
        };
        self.notify_frame(frame).await
    }

    /// Asks the server to cancel the request `id` (`notifications/cancelled`, the id exactly as
    /// it was sent). The request's own exchange should then be awaited a little: the server's
    /// answer says whether the work stopped.
    pub async fn cancel(&self, id: &RequestId, reason: &str) -> Result<(), ClientError> {
        self.notify_frame(cancelled_frame(id, reason)).await
    }

    async fn notify_frame(&self, frame: String) -> Result<(), ClientError> {
        let exchange = async {
            match self.post(Bytes::from(frame)).await? {
                Reply::Accepted | Reply::Frame(_) => Ok(()),
                // Nothing is owed for a notification; dropping the stream closes it.
                Reply::Events(_) => Ok(()),
            }
        };
        self.within_timeout(exchange).await
    }

    /// Sends one JSON-RPC message exactly as given and returns the answer, streamed when the
    /// server streams it. Unbounded in time: the caller bounds the whole exchange, stream
    /// included (a relay does, with [`timeout`](Self::timeout)). Dropping the reply closes the
    /// connection.
    pub async fn post(&self, body: Bytes) -> Result<Reply, ClientError> {
        let (response, kept) = self.send(body).await?;
        self.reply(response, kept).await
    }

    /// Reads the answer to `id` out of a reply.
    async fn answer_of(
        &self,
        id: &RequestId,
        reply: Reply,
        observe: &mut impl FnMut(&ServerMessage),
    ) -> Result<Answer, ClientError> {
        match reply {
            Reply::Accepted => Err(ClientError::Unanswered { endpoint: self.endpoint() }),
            Reply::Frame(body) => match self.message(&body)? {
                ServerMessage::Response(response) if response.answers(id) => self.decoded(response),
                other => Err(self.bad_response(format!("{} instead of the answer to request {id}", describe(&other)))),
            },
            Reply::Events(mut events) => {
                while let Some(frame) = events.next().await {
                    match self.message(frame?.as_bytes())? {
                        ServerMessage::Response(response) if response.answers(id) => return self.decoded(response),
                        other => {
                            tracing::debug!("read {} while waiting for request {id}", describe(&other));
                            observe(&other);
                        }
                    }
                }
                Err(self.bad_response(format!("the event stream ended without the answer to request {id}")))
            }
        }
    }

    fn message(&self, frame: &[u8]) -> Result<ServerMessage, ClientError> {
        parse_server_message(frame).map_err(|e| self.bad_response(e.to_string()))
    }

    fn decoded(&self, response: clawmcp_mcp::client::Response) -> Result<Answer, ClientError> {
        response.decode().map_err(|e| self.bad_response(e.to_string()))
    }

    fn bad_response(&self, reason: String) -> ClientError {
        ClientError::BadResponse { endpoint: self.endpoint(), reason }
    }

    async fn within_timeout<T>(
        &self,
        exchange: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout { endpoint: self.endpoint(), ms: self.timeout.as_millis() })?
    }

    /// Sends one POST on a kept connection or a new one; the response head is back, its body
    /// not yet read.
    async fn send(&self, body: Bytes) -> Result<(Response<Incoming>, Kept), ClientError> {
        let endpoint = self.endpoint();
        let mut request = self.request_to(&body)?.body(Full::new(body)).expect("a request of checked parts");
        let connect_error =
            |e: hyper::Error| ClientError::Connect { endpoint: endpoint.clone(), reason: e.to_string() };

        // A kept connection the node closed meanwhile gives the request back unsent (hyper hands
        // back a request it has not written), and the next one, or a new connection, takes it.
        while let Some(mut sender) = self.pool.take() {
            if sender.ready().await.is_err() {
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => return Ok((response, Kept(sender))),
                Err(mut error) => match error.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(connect_error(error.into_error())),
                },
            }
        }
        let mut sender = self.connect().await?;
        let response = sender.send_request(request).await.map_err(connect_error)?;
        Ok((response, Kept(sender)))
    }

    /// The method, path and headers of a POST of `body`: the bearer, the negotiated revision and
    /// session, the declared file command, and a stateless request's routing headers.
    pub(crate) fn request_to(&self, body: &[u8]) -> Result<http::request::Builder, ClientError> {
        let mut request = Request::post(self.path.as_str())
            .header(HOST, self.host_header())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(token) = &self.bearer {
            let mut bearer = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| ClientError::BadBearer { endpoint: self.endpoint() })?;
            bearer.set_sensitive(true);
            request = request.header(AUTHORIZATION, bearer);
        }
        // A stateless (2026-07-28) request repeats its revision, method and name in headers, or
        // the server refuses it; what its body says wins over the session's revision.
        match clawmcp_mcp::modern::stateless_routing(body) {
            Some(routing) => {
                request = request.header(PROTOCOL_VERSION_HEADER, routing.protocol_version);
                // A method no header can carry (control bytes) is left out: the server then
                // says the header is missing, rather than this client failing to build a request.
                if let Ok(method) = HeaderValue::from_str(&routing.method) {
                    request = request.header("mcp-method", method);
                }
                // Always visible ASCII: `encode_header_value` wraps anything else.
                if let Some(name) = routing.name.and_then(|name| HeaderValue::from_str(&name).ok()) {
                    request = request.header("mcp-name", name);
                }
            }
            None => {
                if let Some(version) = &self.protocol_version {
                    request = request.header(PROTOCOL_VERSION_HEADER, version);
                }
            }
        }
        if let Some(session) = &self.session_id {
            request = request.header(SESSION_ID_HEADER, session);
        }
        if let Some(command) = &self.file_command {
            request = request.header("x-openclaw-file-command", command);
        }
        // Every part was checked above (the path came from a parsed URI).
        Ok(request)
    }

    /// A new connection to the endpoint, its task spawned: it ends once its sender is dropped
    /// (or, mid-exchange, once the response or its body is).
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ClientError> {
        let stream = self.connect_tcp().await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::Connect { endpoint: self.endpoint(), reason: e.to_string() })?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// A new TCP connection to the endpoint, without Nagle's delay.
    async fn connect_tcp(&self) -> Result<TcpStream, ClientError> {
        let stream = TcpStream::connect((self.host.as_str(), self.port)).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                ClientError::Refused { endpoint: self.endpoint() }
            } else {
                ClientError::Connect { endpoint: self.endpoint(), reason: e.to_string() }
            }
        })?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == 80 { host } else { format!("{host}:{}", self.port) }
    }

    /// What a response head says about its body.
    /// A connection is given back only once its whole answer was read: a streamed answer's is
    /// the stream's alone, and closes with it.
    async fn reply(&self, response: Response<Incoming>, kept: Kept) -> Result<Reply, ClientError> {
        let endpoint = self.endpoint();
        let status = response.status().as_u16();
        let media_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        match status {
            202 | 204 => {
                // Read to its end (nothing, normally) so that the connection can be kept.
                self.read_body(response, kept).await?;
                Ok(Reply::Accepted)
            }
            200..=299 if media_type.as_deref() == Some("text/event-stream") => {
                Ok(Reply::Events(self.event_frames(response)))
            }
            200..=299 => Ok(Reply::Frame(self.read_body(response, kept).await?)),
            401 => Err(ClientError::Unauthorized { endpoint }),
            _ => {
                let body = self.read_body(response, kept).await.unwrap_or_default();
                Err(ClientError::Http { endpoint, status, body: first_line(&body) })
            }
        }
    }

    /// The data of each event, bounded as a whole by the body cap. Events without data (a
    /// server's priming event, keep-alive comments) carry no frame and are skipped.
    fn event_frames(&self, response: Response<Incoming>) -> EventFrames {
        let (endpoint, limit) = (self.endpoint(), self.max_response_bytes);
        // The SSE decoder wants a concrete error type; the cap's error travels inside it.
        let limited = Limited::new(response.into_body(), limit).map_err(std::io::Error::other);
        let frames = SseStream::new(limited).filter_map(move |event| {
            let frame = match event {
                Ok(event) => event.data.filter(|data| !data.trim().is_empty()).map(Ok),
                Err(sse_stream::Error::Body(e)) => Some(Err(body_error(&endpoint, limit, e.as_ref()))),
                Err(e) => Some(Err(ClientError::BadResponse { endpoint: endpoint.clone(), reason: e.to_string() })),
            };
            std::future::ready(frame)
        });
        Box::pin(frames)
    }

    /// A whole response body, capped; read whole, its connection is kept for the next message.
    async fn read_body(&self, response: Response<Incoming>, kept: Kept) -> Result<Bytes, ClientError> {
        match Limited::new(response.into_body(), self.max_response_bytes).collect().await {
            Ok(collected) => {
                self.pool.give_back(kept.0);
                Ok(collected.to_bytes())
            }
            Err(e) => Err(body_error(&self.endpoint(), self.max_response_bytes, e.as_ref())),
        }
    }
}

/// `localhost`, 127.0.0.0/8 or `::1` (with or without a URL's brackets).
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What a message that is not the awaited answer is, for errors and logs.
fn describe(message: &ServerMessage) -> String {
    match message {
        ServerMessage::Response(response) => match &response.id {
            Some(id) => format!("the answer to request {id}"),
            None => "an answer without an id".into(),
        },
        ServerMessage::Notification { method, .. } => format!("a `{}` notification", clip(method)),
        ServerMessage::Request { method, .. } => format!("a `{}` request from the server", clip(method)),
    }
}

/// A server-chosen method name, short enough for one line.
fn clip(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(64).collect()
}

/// A body that could not be read: over the cap, or the connection failed.
fn body_error(endpoint: &str, limit: usize, error: &(dyn std::error::Error + Send + Sync + 'static)) -> ClientError {
    let wrapped = error.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref);
    if error.is::<LengthLimitError>() || wrapped.is_some_and(|inner| inner.is::<LengthLimitError>()) {
        ClientError::TooLarge { endpoint: endpoint.to_string(), limit }
    } else {
        ClientError::Connect { endpoint: endpoint.to_string(), reason: error.to_string() }
    }
}

/// The first line of an error body, without control characters and capped, for one-line errors.
fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line: String = text.lines().next().unwrap_or("").chars().filter(|c| !c.is_control()).take(512).collect();
    if line.is_empty() { "(empty body)".into() } else { line }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use serde_json::json;
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    use super::*;

    /// One request as the server saw it.
    #[derive(Debug, Clone)]
    struct Seen {
        headers: http::HeaderMap,
        body: Value,
    }

    /// An answer: status, content type, body.
    type Answerer = dyn Fn(&Seen) -> (u16, &'static str, Vec<u8>) + Send + Sync;

    /// An MCP server stand-in on 127.0.0.1, answering each POST with `answer`; stopped on drop.
    struct Server {
        port: u16,
        seen: Arc<Mutex<Vec<Seen>>>,
        /// Connections accepted so far.
        accepted: Arc<AtomicUsize>,
        task: JoinHandle<()>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Server {
        async fn start(answer: impl Fn(&Seen) -> (u16, &'static str, Vec<u8>) + Send + Sync + 'static) -> Server {
            Server::start_with(true, Duration::ZERO, answer).await
        }

        /// [`start`](Self::start), keeping connections alive across requests or closing each
        /// after its answer, and answering `delay` after each request arrived.
        async fn start_with(
            keep_alive: bool,
            delay: Duration,
            answer: impl Fn(&Seen) -> (u16, &'static str, Vec<u8>) + Send + Sync + 'static,
        ) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
            let answer: Arc<Answerer> = Arc::new(answer);
            let recorded = seen.clone();
            let accepted: Arc<AtomicUsize> = Arc::default();
            let counted = accepted.clone();
            let task = tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else { return };
                    counted.fetch_add(1, Ordering::SeqCst);
                    let (answer, recorded) = (answer.clone(), recorded.clone());
                    tokio::spawn(async move {
                        let service = service_fn(move |request: Request<Incoming>| {
                            let (answer, recorded) = (answer.clone(), recorded.clone());
                            async move {
                                let headers = request.headers().clone();
                                let body = request.into_body().collect().await.unwrap().to_bytes();
                                let seen = Seen { headers, body: serde_json::from_slice(&body).unwrap_or_default() };
                                recorded.lock().unwrap().push(seen.clone());
                                tokio::time::sleep(delay).await;
                                let (status, content_type, body) = answer(&seen);
                                let response = Response::builder()
                                    .status(status)
                                    .header(CONTENT_TYPE, content_type)
                                    .body(Full::new(Bytes::from(body)))
                                    .unwrap();
                                Ok::<_, Infallible>(response)
                            }
                        });
                        let _ = http1::Builder::new()
                            .keep_alive(keep_alive)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
            Server { port, seen, accepted, task }
        }

        fn accepted(&self) -> usize {
            self.accepted.load(Ordering::SeqCst)
        }

        fn client(&self) -> McpClient {
            McpClient::loopback(self.port).with_timeout(Duration::from_secs(60))
        }

        fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }

    fn json_answer(frame: Value) -> (u16, &'static str, Vec<u8>) {
        (200, "application/json", frame.to_string().into_bytes())
    }

    fn events(frames: &[Value]) -> Vec<u8> {
        frames.iter().map(|frame| format!("data: {frame}\n\n")).collect::<String>().into_bytes()
    }

    fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
        seen.headers.get(name).map(|v| v.to_str().unwrap())
    }

    #[test]
    fn urls_are_parsed_and_limited_to_http() {
        let client = McpClient::new("http://localhost:9000/mcp").unwrap();
        assert_eq!(client.endpoint(), "http://localhost:9000/mcp");
        assert!(client.is_loopback());
        let v6 = McpClient::new("http://[::1]:9000/").unwrap();
        assert!(v6.is_loopback());
        assert_eq!((v6.endpoint().as_str(), v6.host_header().as_str()), ("http://[::1]:9000/", "[::1]:9000"));
        assert_eq!(McpClient::new("http://10.0.0.1").unwrap().endpoint(), "http://10.0.0.1:80/");
        assert!(!McpClient::new("http://10.0.0.1").unwrap().is_loopback());
        for bad in ["https://127.0.0.1:1/", "not a url", "/just/a/path"] {
            assert!(McpClient::new(bad).is_err(), "{bad}");
        }
        assert_eq!(McpClient::loopback(8765).endpoint(), "http://127.0.0.1:8765/");
    }

    #[test]
    fn loopback_hosts() {
        for host in ["localhost", "127.0.0.1", "127.3.2.1", "[::1]", "::1"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["10.0.0.1", "gw.example", "0.0.0.0", "", "[::]"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[tokio::test]
    async fn a_request_sends_the_headers_and_reads_its_answer() {
        let server =
            Server::start(|seen| json_answer(json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {"ok": 1}})))
                .await;
        let client = server.client().with_bearer(Some(" tok \n".into()));
        let answer = client.request(&RequestId::number(3), "tools/list", None).await.unwrap();
        assert_eq!(answer, Answer::Result(json!({"ok": 1})));
        let seen = &server.seen()[0];
        assert_eq!(seen.body, json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
        assert_eq!(header(seen, "authorization"), Some("Bearer tok"));
        assert_eq!(header(seen, "accept"), Some("application/json, text/event-stream"));
        assert_eq!(header(seen, "content-type"), Some("application/json"));
        assert_eq!(header(seen, "host"), Some(format!("127.0.0.1:{}", server.port).as_str()));
        assert_eq!(header(seen, PROTOCOL_VERSION_HEADER), None, "no revision before initialize");

        let anonymous = server.client().with_bearer(Some("  ".into()));
        anonymous.request(&RequestId::number(4), "ping", None).await.unwrap();
        assert_eq!(header(&server.seen()[1], "authorization"), None, "a blank token is no token");
    }

    fn echo(seen: &Seen) -> (u16, &'static str, Vec<u8>) {
        match seen.body.get("id") {
            Some(id) => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            None => (202, "application/json", Vec::new()),
        }
    }

    #[tokio::test]
    async fn sequential_messages_share_one_kept_connection() {
        let server = Server::start(echo).await;
        let client = server.client();
        let declared = client.declaring_file_command("file.fetch");
        for n in 0..20 {
            client.request(&RequestId::number(n), "ping", None).await.unwrap();
            declared.request(&RequestId::number(100 + n), "tools/call", None).await.unwrap();
            client.notify("notifications/initialized", None).await.unwrap();
        }
        assert_eq!(server.seen().len(), 60);
        assert_eq!(server.accepted(), 1, "60 messages one after another, clones included, on one connection");
        assert_eq!(header(&server.seen()[1], "x-openclaw-file-command"), Some("file.fetch"));
        assert_eq!(header(&server.seen()[2], "x-openclaw-file-command"), None, "the header is per client");
    }

    #[tokio::test]
    async fn concurrent_messages_keep_at_most_the_idle_bound() {
        let server = Server::start(echo).await;
        let client = server.client();
        // Each exchange holds its connection until its answer is read: all at once need their own.
        let many = MAX_IDLE_CONNECTIONS + 3;
        let held: Vec<_> =
            futures_util::future::join_all((0..many).map(|n| client.send(Bytes::from(json!({"id": n}).to_string()))))
                .await;
        assert_eq!(server.accepted(), many);
        for sent in held {
            let (response, kept) = sent.unwrap();
            client.reply(response, kept).await.unwrap();
        }
        assert_eq!(client.pool.idle().len(), MAX_IDLE_CONNECTIONS, "the rest closed");
        for n in 0..many {
            client.request(&RequestId::number(n as i64), "ping", None).await.unwrap();
        }
        assert_eq!(server.accepted(), many, "later messages reuse the kept ones");
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_reused() {
        let server = Server::start_with(false, Duration::ZERO, echo).await;
        let client = server.client();
        for n in 0..5 {
            client.request(&RequestId::number(n), "ping", None).await.unwrap();
        }
        assert_eq!(server.accepted(), 5, "a server that closes after each answer gets a connection per message");
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_idle_past_the_reuse_window_is_replaced() {
        let server = Server::start(echo).await;
        let client = server.client();
        client.request(&RequestId::number(1), "ping", None).await.unwrap();
        tokio::time::advance(IDLE_REUSE - Duration::from_millis(1)).await;
        client.request(&RequestId::number(2), "ping", None).await.unwrap();
        assert_eq!(server.accepted(), 1, "reused within the window");
        tokio::time::advance(IDLE_REUSE).await;
        client.request(&RequestId::number(3), "ping", None).await.unwrap();
        assert_eq!(server.accepted(), 2, "idle for the whole window: a new connection");
    }

    #[tokio::test]
    async fn a_streamed_answer_keeps_its_connection_to_itself() {
        let server = Server::start(|seen| {
            let frame = json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}});
            (200, "text/event-stream", events(&[frame]))
        })
        .await;
        let client = server.client();
        for n in 0..3 {
            client.request(&RequestId::number(n), "tools/call", None).await.unwrap();
        }
        assert_eq!(server.accepted(), 3, "a streamed answer's connection closes with the stream");
        assert!(client.pool.idle().is_empty());
    }

    #[tokio::test]
    async fn initialize_negotiates_the_revision_and_session_for_later_messages() {
        let server = Server::start(|seen| match seen.body["method"].as_str() {
            Some("initialize") => json_answer(
                json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {"protocolVersion": "2025-06-18"}}),
            ),
            Some("notifications/initialized") => (202, "application/json", Vec::new()),
            _ => json_answer(json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}})),
        })
        .await;
        let mut client = server.client();
        let result = client.initialize(&json!({"protocolVersion": "2025-11-25"})).await.unwrap();
        assert_eq!(result["protocolVersion"], "2025-06-18");
        assert_eq!(client.protocol_version(), Some("2025-06-18"));
        client.request(&RequestId::number(1), "tools/list", None).await.unwrap();
        let seen = server.seen();
        let methods: Vec<&str> = seen.iter().map(|s| s.body["method"].as_str().unwrap()).collect();
        assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list"]);
        assert_eq!(header(&seen[0], PROTOCOL_VERSION_HEADER), None);
        assert_eq!(header(&seen[1], PROTOCOL_VERSION_HEADER), Some("2025-06-18"));
        assert_eq!(header(&seen[2], PROTOCOL_VERSION_HEADER), Some("2025-06-18"));
    }

    #[tokio::test]
    async fn a_stateless_request_carries_its_routing_headers_whatever_the_session_says() {
        let server =
            Server::start(|seen| json_answer(json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}}))).await;
        let mut client = server.client();
        client.set_protocol_version("2025-06-18");
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        let params = json!({"name": "device.info", "arguments": {}, "_meta": meta});
        client.request(&RequestId::number(1), "tools/call", Some(&params)).await.unwrap();
        client.request(&RequestId::number(2), "tools/list", None).await.unwrap();
        let seen = server.seen();
        assert_eq!(header(&seen[0], PROTOCOL_VERSION_HEADER), Some("2026-07-28"));
        assert_eq!(header(&seen[0], "mcp-method"), Some("tools/call"));
        assert_eq!(header(&seen[0], "mcp-name"), Some("device.info"));
        // A legacy request keeps the session's revision and gets no routing headers.
        assert_eq!(header(&seen[1], PROTOCOL_VERSION_HEADER), Some("2025-06-18"));
        assert_eq!((header(&seen[1], "mcp-method"), header(&seen[1], "mcp-name")), (None, None));
    }

    #[tokio::test]
    async fn a_session_id_assigned_at_initialize_is_echoed() {
        // The stand-in cannot set a response header through `Answerer`: a raw server does (one
        // connection per answer, so it says `connection: close`).
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let mut heads = Vec::new();
            for answer in [
                "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: 45\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"ok\":true}}",
                "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
            ] {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                while !request.ends_with(b"}") {
                    let read = socket.read(&mut chunk).await.unwrap();
                    assert_ne!(read, 0);
                    request.extend_from_slice(&chunk[..read]);
                }
                socket.write_all(answer.as_bytes()).await.unwrap();
                heads.push(String::from_utf8_lossy(&request).to_ascii_lowercase());
            }
            heads
        });
        let mut client = McpClient::loopback(port);
        client.initialize(&json!({})).await.unwrap();
        let heads = server.await.unwrap();
        assert!(!heads[0].contains("mcp-session-id"), "{}", heads[0]);
        assert!(heads[1].contains("mcp-session-id: s-1"), "{}", heads[1]);
    }

    #[tokio::test]
    async fn streamed_notifications_are_skipped_until_the_answer() {
        let server = Server::start(|seen| {
            let id = &seen.body["id"];
            let frames = [
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
                json!({"jsonrpc": "2.0", "id": "other", "result": {"not": "ours"}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"done": true}}),
            ];
            let mut body = b": keep-alive\n\nid: prime\ndata:\n\n".to_vec();
            body.extend(events(&frames));
            (200, "text/event-stream; charset=utf-8", body)
        })
        .await;
        let answer = server.client().request(&RequestId::string("x"), "tools/call", None).await.unwrap();
        assert_eq!(answer, Answer::Result(json!({"done": true})));
    }

    #[tokio::test]
    async fn what_is_not_the_answer_is_a_clear_error() {
        let server = Server::start(|seen| match seen.body["method"].as_str().unwrap() {
            "other_id" => json_answer(json!({"jsonrpc": "2.0", "id": 99, "result": {}})),
            "html" => (200, "application/json", b"<html>oops</html>".to_vec()),
            "no_answer" => (200, "text/event-stream", events(&[json!({"jsonrpc": "2.0", "method": "n"})])),
            "accepted" => (202, "application/json", Vec::new()),
            "error" => json_answer(json!({"jsonrpc": "2.0", "id": seen.body["id"], "error": {"code": -32601, "message": "Method not found: error"}})),
            "unauthorized" => (401, "application/json", b"{}".to_vec()),
            _ => (503, "text/plain", b"server busy\x07\nsecond line".to_vec()),
        })
        .await;
        let client = server.client();
        let endpoint = client.endpoint();
        let error = |method: &'static str| {
            let client = client.clone();
            async move { client.request(&RequestId::number(1), method, None).await.unwrap_err().to_string() }
        };
        assert_eq!(
            error("other_id").await,
            format!(
                "the response from {endpoint} is not JSON-RPC: the answer to request 99 instead of the answer to request 1"
            )
        );
        assert_eq!(error("html").await, format!("the response from {endpoint} is not JSON-RPC: not a JSON-RPC object"));
        assert_eq!(
            error("no_answer").await,
            format!(
                "the response from {endpoint} is not JSON-RPC: the event stream ended without the answer to request 1"
            )
        );
        assert_eq!(error("accepted").await, format!("{endpoint} accepted the request without answering it"));
        assert_eq!(error("unauthorized").await, format!("{endpoint} rejected the bearer token (HTTP 401)"));
        assert_eq!(error("busy").await, format!("MCP HTTP 503 from {endpoint}: server busy"));
        let Answer::Error(rpc) = client.request(&RequestId::number(1), "error", None).await.unwrap() else {
            panic!("the server's error is an answer")
        };
        assert_eq!((rpc.code, rpc.message.as_str()), (-32601, "Method not found: error"));
    }

    #[tokio::test]
    async fn cancel_names_the_request_exactly() {
        let server = Server::start(|_| (202, "application/json", Vec::new())).await;
        let huge =
            RequestId::from_raw(serde_json::value::RawValue::from_string("12345678901234567890".into()).unwrap())
                .unwrap();
        server.client().cancel(&huge, "interrupted").await.unwrap();
        server.client().notify("notifications/initialized", None).await.unwrap();
        let seen = server.seen();
        assert_eq!(seen[0].body["method"], "notifications/cancelled");
        assert_eq!(seen[0].body["params"]["reason"], "interrupted");
        assert_eq!(seen[0].body["params"]["requestId"].to_string(), "12345678901234567890");
        assert_eq!(seen[1].body, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    #[tokio::test]
    async fn nothing_listening_is_refused() {
        let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
        let error = McpClient::loopback(port).request(&RequestId::number(1), "ping", None).await.unwrap_err();
        assert!(matches!(error, ClientError::Refused { .. }), "{error}");
        assert_eq!(error.to_string(), format!("nothing is listening on http://127.0.0.1:{port}/"));
    }

    #[tokio::test]
    async fn a_bearer_that_is_no_header_value_is_an_error_not_a_panic() {
        let client = McpClient::loopback(1).with_bearer(Some("a\u{7}b".into()));
        let error = client.request(&RequestId::number(1), "ping", None).await.unwrap_err();
        assert!(matches!(error, ClientError::BadBearer { .. }), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_past_the_timeout_is_a_timeout() {
        // Accepts and never answers; with the clock paused the timeout fires once all is idle.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let _server = tokio::spawn(async move {
            let _held = listener.accept().await;
            std::future::pending::<()>().await
        });
        let client = McpClient::loopback(port).with_timeout(Duration::from_millis(2500));
        let error = client.request(&RequestId::number(1), "ping", None).await.unwrap_err();
        assert_eq!(error.to_string(), format!("timed out after 2500 ms calling http://127.0.0.1:{port}/"));
    }

    /// An SSE body of exactly `len` bytes carrying one event.
    fn sse_body(len: usize) -> Vec<u8> {
        let framing = "data: \n\n".len();
        format!("data: {}\n\n", "x".repeat(len - framing)).into_bytes()
    }

    const CAP: usize = 64 * 1024;

    #[tokio::test]
    async fn streamed_answers_are_capped() {
        let server =
            Server::start(|seen| (200, "text/event-stream", sse_body(seen.body["len"].as_u64().unwrap() as usize)))
                .await;
        let client = server.client().with_max_response_bytes(CAP);
        let post = |len: usize| client.post(Bytes::from(json!({"len": len}).to_string()));
        let Ok(Reply::Events(mut events)) = post(CAP).await else { panic!("an event stream") };
        let data = events.next().await.expect("one event").expect("within the cap");
        assert_eq!(data.len(), CAP - "data: \n\n".len());
        assert!(events.next().await.is_none());

        let Ok(Reply::Events(mut events)) = post(CAP + 1).await else { panic!("an event stream") };
        let error = events.next().await.expect("an error").unwrap_err();
        assert!(matches!(error, ClientError::TooLarge { limit: CAP, .. }), "{error}");
    }

    #[tokio::test]
    async fn whole_answers_are_capped() {
        let server =
            Server::start(|seen| (200, "application/json", vec![b' '; seen.body["len"].as_u64().unwrap() as usize]))
                .await;
        let client = server.client().with_max_response_bytes(CAP);
        let post = |len: usize| client.post(Bytes::from(json!({"len": len}).to_string()));
        let Ok(Reply::Frame(body)) = post(CAP).await else { panic!("a whole answer") };
        assert_eq!(body.len(), CAP);
        let Err(error) = post(CAP + 1).await else { panic!("over the cap") };
        assert_eq!(error.to_string(), format!("the response from {} is larger than {CAP} bytes", client.endpoint()));
    }

    #[test]
    fn error_bodies_are_one_sanitised_line() {
        assert_eq!(first_line(b"bad\x07 thing\nsecond"), "bad thing");
        assert_eq!(first_line(b""), "(empty body)");
    }

    /// The answer to a request the stand-in saw: its `params.n` and `method` back, under its id.
    fn echo_n(seen: &Seen) -> (u16, &'static str, Vec<u8>) {
        let (id, params) = (&seen.body["id"], &seen.body["params"]);
        json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"n": params["n"], "method": seen.body["method"]}}))
    }

    #[tokio::test]
    async fn a_pipelined_burst_goes_on_one_connection_and_its_answers_come_back_in_order() {
        let server = Server::start(echo_n).await;
        let client = server.client().with_bearer(Some("secret".into()));
        // 300 requests of 10 KB: far more than the socket buffers hold, so the answers must be
        // read while the requests are still being written.
        let pad = "x".repeat(10_000);
        let requests: Vec<_> =
            (0..300).map(|n| (RequestId::string(&format!("r{n}")), json!({"n": n, "pad": pad}).to_string())).collect();
        let answers = client.request_pipelined("openclaw/files/input", requests).await.unwrap();
        let numbers: Vec<u64> = answers
            .iter()
            .map(|answer| match answer {
                Answer::Result(result) => result["n"].as_u64().unwrap(),
                Answer::Error(error) => panic!("{error:?}"),
            })
            .collect();
        assert_eq!(numbers, (0..300).collect::<Vec<u64>>());
        assert_eq!(server.accepted(), 1, "one connection");
        let seen = server.seen();
        assert_eq!(seen.len(), 300);
        // Each carries the head every message carries.
        assert_eq!(header(&seen[299], "authorization"), Some("Bearer secret"));
        assert_eq!(header(&seen[299], "content-type"), Some("application/json"));
        assert_eq!(seen[299].body["params"]["pad"].as_str().map(str::len), Some(10_000));
        // The connection stays open until the last answer came: a server that takes a half-closed
        // connection as the client gone (hyper's default) still answers a slow last request.
        let slow = Server::start_with(true, Duration::from_millis(100), echo_n).await;
        let answers = slow.client().request_pipelined("m", vec![(RequestId::number(7), r#"{"n":7}"#)]).await.unwrap();
        assert!(matches!(&answers[..], [Answer::Result(result)] if result["n"] == 7));
        // A JSON-RPC error is an answer, not a failure of the burst.
        let server = Server::start(|seen| {
            json_answer(json!({"jsonrpc": "2.0", "id": seen.body["id"], "error": {"code": -32602, "message": "no"}}))
        })
        .await;
        let answers = server.client().request_pipelined("m", vec![(RequestId::number(1), "{}")]).await.unwrap();
        assert!(matches!(&answers[..], [Answer::Error(error)] if error.code == -32602));
    }

    #[tokio::test]
    async fn a_pipelined_burst_fails_with_what_it_could_not_read() {
        let burst = || (0..3).map(|n| (RequestId::number(n), json!({"n": n}).to_string())).collect::<Vec<_>>();
        let streamed = Server::start(|seen| (200, "text/event-stream", events(std::slice::from_ref(&seen.body)))).await;
        let error = streamed.client().request_pipelined("m", burst()).await.unwrap_err();
        assert!(error.to_string().contains("event stream"), "{error}");
        let refused = Server::start(|_| (401, "text/plain", b"no".to_vec())).await;
        let error = refused.client().request_pipelined("m", burst()).await.unwrap_err();
        assert!(matches!(error, ClientError::Unauthorized { .. }), "{error}");
        // A server that closes the connection after one answer: the burst says how far it got.
        let closing = Server::start_with(false, Duration::ZERO, echo_n).await;
        let error = closing.client().request_pipelined("m", burst()).await.unwrap_err();
        assert!(error.to_string().contains("closed after answering 1 of the pipelined requests"), "{error}");
        // An answer larger than the response cap.
        let large = Server::start(|seen| {
            json_answer(json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": "y".repeat(5000)}))
        })
        .await;
        let error = large.client().with_max_response_bytes(4096).request_pipelined("m", burst()).await.unwrap_err();
        assert!(matches!(error, ClientError::TooLarge { limit: 4096, .. }), "{error}");
        // Nothing to send is nothing to connect for.
        assert!(refused.client().request_pipelined("m", Vec::<(RequestId, String)>::new()).await.unwrap().is_empty());
        assert_eq!(refused.accepted(), 1);
    }
}
