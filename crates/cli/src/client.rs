//! A small JSON-RPC client for the node's loopback HTTP endpoint, used by `call`, `approvals`
//! and the stdio relay (`call --stdio`). One connection per request: over loopback a connection
//! costs little, and a relayed call that is abandoned closes its own connection, which the node
//! takes as cancellation.
//!
//! It behaves like the upstream `winnode` client where users rely on it: the token comes from
//! the data dir's token file unless given; an auto-loaded token is never sent to a non-loopback
//! host; redirects are not followed; responses are capped at 16 MiB; every failure names the
//! endpoint and what to do.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::request_frame;
use futures_util::{Stream, StreamExt};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use sse_stream::SseStream;
use tokio::net::TcpStream;

/// Largest response accepted: well above any tool result (screenshots), bounded so a wrong
/// endpoint cannot exhaust memory.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Where and how to reach the node.
#[derive(Debug, Clone)]
pub struct NodeClient {
    host: String,
    port: u16,
    path: String,
    token: Option<String>,
    timeout: Duration,
}

/// Where the token came from, for error hints.
#[derive(Debug, Clone)]
pub enum TokenSource {
    Flag,
    File(PathBuf),
    None,
}

/// A JSON-RPC answer: a result or an error object.
#[derive(Debug)]
pub enum RpcAnswer {
    Result(Value),
    Error { code: i64, message: String },
}

/// What the node answered to one relayed message ([`NodeClient::post_message`]).
pub enum NodeReply {
    /// `202`/`204`: a notification (or a client's response) was taken; there is nothing to relay.
    Accepted,
    /// `200 application/json`: one JSON-RPC frame.
    Frame(Bytes),
    /// `200 text/event-stream`: the `data` of each event as it arrives (a `tools/call` with a
    /// progress token: its progress notifications, then its response).
    Events(EventFrames),
}

/// The frames of a streamed answer, in order; an error ends the stream.
pub type EventFrames = Pin<Box<dyn Stream<Item = Result<String, ClientError>> + Send>>;

/// Why a call did not produce a JSON-RPC answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no clawmcp node is listening on {endpoint}\nhint: start one with `clawmcp node` (same --data-dir), or pass --port/--url"
    )]
    Refused { endpoint: String },
    #[error("failed to reach the node at {endpoint}: {reason}")]
    Connect { endpoint: String, reason: String },
    #[error("timed out after {ms} ms calling {endpoint}")]
    Timeout { endpoint: String, ms: u128 },
    #[error("the node at {endpoint} rejected the bearer token (HTTP 401){hint}")]
    Unauthorized { endpoint: String, hint: String },
    #[error("MCP HTTP {status} from {endpoint}: {body}")]
    Http { endpoint: String, status: u16, body: String },
    #[error("the response from {endpoint} is larger than {MAX_RESPONSE_BYTES} bytes")]
    TooLarge { endpoint: String },
    #[error("the response from {endpoint} is not JSON-RPC: {reason}")]
    BadResponse { endpoint: String, reason: String },
}

impl ClientError {
    /// Adds a hint naming where the rejected token came from.
    pub fn with_token_hint(self, source: &TokenSource) -> Self {
        match self {
            ClientError::Unauthorized { endpoint, .. } => {
                let hint = match source {
                    TokenSource::Flag => "\nhint: the --token value (or $OPENCLAW_MCP_TOKEN) is wrong; drop it to use the token file".into(),
                    TokenSource::File(path) => format!(
                        "\nhint: the token in {} was rejected; if the node runs with another --data-dir, pass the same one (`clawmcp token` prints the path)",
                        path.display()
                    ),
                    TokenSource::None => "\nhint: no token was sent: start `clawmcp node` once to create the token file, or pass --data-dir/--token".into(),
                };
                ClientError::Unauthorized { endpoint, hint }
            }
            other => other,
        }
    }
}

/// The endpoint URL could not be used.
#[derive(Debug, thiserror::Error)]
#[error("invalid --url `{url}`: {reason}")]
pub struct BadUrl {
    url: String,
    reason: &'static str,
}

impl NodeClient {
    /// `url` overrides `port`. Only plain `http://` is spoken: the node is loopback-only.
    pub fn new(url: Option<&str>, port: u16, timeout: Duration) -> Result<Self, BadUrl> {
        let Some(url) = url else {
            return Ok(NodeClient { host: "127.0.0.1".into(), port, path: "/".into(), token: None, timeout });
        };
        let bad = |reason| BadUrl { url: url.to_string(), reason };
        let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(bad("only http:// is supported (the node listens on loopback without TLS)"));
        }
        let host = uri.host().ok_or_else(|| bad("no host"))?.trim_matches(['[', ']']).to_string();
        let path = uri.path_and_query().map(|p| p.as_str().to_string()).filter(|p| !p.is_empty());
        Ok(NodeClient {
            host,
            port: uri.port_u16().unwrap_or(80),
            path: path.unwrap_or_else(|| "/".into()),
            token: None,
            timeout,
        })
    }

    /// True when the endpoint is this machine.
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost") || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// How long one exchange may take (`--timeout-ms`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    pub fn endpoint(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("http://{host}:{}{}", self.port, self.path)
    }

    /// Chooses the token: the flag, else the token file. A token read from the file is only
    /// sent to loopback endpoints.
    pub fn with_token(mut self, flag: Option<String>, token_file: &Path) -> (Self, TokenSource) {
        if let Some(token) = flag.filter(|t| !t.trim().is_empty()) {
            if !self.is_loopback() {
                tracing::warn!("sending the --token bearer to non-loopback host {}", self.host);
            }
            self.token = Some(token.trim().to_string());
            return (self, TokenSource::Flag);
        }
        match clawmcp_http::token::read_token_file(token_file) {
            Ok(Some(token)) => {
                if self.is_loopback() {
                    self.token = Some(token);
                    (self, TokenSource::File(token_file.to_path_buf()))
                } else {
                    tracing::warn!(
                        "not sending the token from {} to non-loopback host {}; pass --token to do so",
                        token_file.display(),
                        self.host
                    );
                    (self, TokenSource::None)
                }
            }
            Ok(None) => (self, TokenSource::None),
            Err(error) => {
                tracing::warn!("not using the token file: {error}");
                (self, TokenSource::None)
            }
        }
    }

    /// Re-reads the token file after the node refused our token (`clawmcp token --reset` while
    /// we run): a client holding a different token than the file, for a loopback endpoint, or
    /// `None` when there is nothing new to try.
    pub fn with_reloaded_token(&self, token_file: &Path) -> Option<Self> {
        if !self.is_loopback() {
            return None;
        }
        let fresh = clawmcp_http::token::read_token_file(token_file).ok()??;
        if self.token.as_deref() == Some(fresh.as_str()) {
            return None;
        }
        Some(NodeClient { token: Some(fresh), ..self.clone() })
    }

    /// Sends a request and waits for its answer.
    pub async fn request(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&Value>,
    ) -> Result<RpcAnswer, ClientError> {
        let body = request_frame(id, method, params);
        let (status, bytes) = self.post(body).await?;
        let endpoint = self.endpoint();
        match status {
            200 => {}
            401 => return Err(ClientError::Unauthorized { endpoint, hint: String::new() }),
            _ => return Err(ClientError::Http { endpoint, status, body: first_line(&bytes) }),
        }
        let frame: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ClientError::BadResponse { endpoint: endpoint.clone(), reason: e.to_string() })?;
        if let Some(error) = frame.get("error") {
            return Ok(RpcAnswer::Error {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            });
        }
        match frame.get("result") {
            Some(result) => Ok(RpcAnswer::Result(result.clone())),
            None => Err(ClientError::BadResponse { endpoint, reason: "neither result nor error".into() }),
        }
    }

    /// Sends a notification (no answer expected beyond the HTTP status).
    pub async fn notify(&self, method: &str, params: &Value) -> Result<(), ClientError> {
        let body = clawmcp_mcp::jsonrpc::notification_frame(method, params);
        let (status, bytes) = self.post(body).await?;
        match status {
            200 | 202 | 204 => Ok(()),
            401 => Err(ClientError::Unauthorized { endpoint: self.endpoint(), hint: String::new() }),
            _ => Err(ClientError::Http { endpoint: self.endpoint(), status, body: first_line(&bytes) }),
        }
    }

    /// Relays one JSON-RPC message exactly as given and returns the node's answer, streamed when
    /// the node streams it (`Accept` names `text/event-stream`, so a `tools/call` with a progress
    /// token is answered with its progress). Unbounded in time: the caller bounds the whole
    /// exchange, stream included, with [`timeout`](Self::timeout). Dropping the reply closes the
    /// connection, which cancels the call on the node.
    pub async fn post_message(&self, body: Bytes) -> Result<NodeReply, ClientError> {
        let endpoint = self.endpoint();
        let response = self.send(body, "application/json, text/event-stream").await?;
        let status = response.status().as_u16();
        let media_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        match status {
            200 if media_type.as_deref() == Some("text/event-stream") => {
                // The SSE decoder wants a concrete error type; the cap's error travels inside it.
                let limited = Limited::new(response.into_body(), MAX_RESPONSE_BYTES).map_err(std::io::Error::other);
                let frames = SseStream::new(limited).filter_map(move |event| {
                    let frame = match event {
                        Ok(event) => event.data.map(Ok),
                        Err(sse_stream::Error::Body(e)) => Some(Err(body_error(&endpoint, e.as_ref()))),
                        Err(e) => {
                            Some(Err(ClientError::BadResponse { endpoint: endpoint.clone(), reason: e.to_string() }))
                        }
                    };
                    std::future::ready(frame)
                });
                Ok(NodeReply::Events(Box::pin(frames)))
            }
            200 => Ok(NodeReply::Frame(self.read_body(response).await?)),
            202 | 204 => Ok(NodeReply::Accepted),
            401 => Err(ClientError::Unauthorized { endpoint, hint: String::new() }),
            _ => {
                let body = self.read_body(response).await.unwrap_or_default();
                Err(ClientError::Http { endpoint, status, body: first_line(&body) })
            }
        }
    }

    async fn post(&self, body: String) -> Result<(u16, Bytes), ClientError> {
        let exchange = async {
            let response = self.send(Bytes::from(body), "application/json").await?;
            let status = response.status().as_u16();
            Ok((status, self.read_body(response).await?))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout { endpoint: self.endpoint(), ms: self.timeout.as_millis() })?
    }

    /// Connects and sends one POST; the response head is back, its body not yet read.
    async fn send(&self, body: Bytes, accept: &'static str) -> Result<Response<Incoming>, ClientError> {
        let endpoint = self.endpoint();
        let stream = TcpStream::connect((self.host.as_str(), self.port)).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                ClientError::Refused { endpoint: endpoint.clone() }
            } else {
                ClientError::Connect { endpoint: endpoint.clone(), reason: e.to_string() }
            }
        })?;
        let connect_error =
            |e: hyper::Error| ClientError::Connect { endpoint: endpoint.clone(), reason: e.to_string() };
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(connect_error)?;
        tokio::spawn(connection);
        let host_header = if self.port == 80 { self.host.clone() } else { format!("{}:{}", self.host, self.port) };
        let mut request = Request::post(self.path.as_str())
            .header(HOST, host_header)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept);
        if let Some(token) = &self.token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Full::new(body)).expect("a valid request");
        sender.send_request(request).await.map_err(connect_error)
    }

    /// A whole response body, capped at [`MAX_RESPONSE_BYTES`].
    async fn read_body(&self, response: Response<Incoming>) -> Result<Bytes, ClientError> {
        match Limited::new(response.into_body(), MAX_RESPONSE_BYTES).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) => Err(body_error(&self.endpoint(), e.as_ref())),
        }
    }
}

/// A body that could not be read: over the cap, or the connection failed.
fn body_error(endpoint: &str, error: &(dyn std::error::Error + Send + Sync + 'static)) -> ClientError {
    let wrapped = error.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref);
    if error.is::<LengthLimitError>() || wrapped.is_some_and(|inner| inner.is::<LengthLimitError>()) {
        ClientError::TooLarge { endpoint: endpoint.to_string() }
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
    use super::*;

    #[test]
    fn urls_are_parsed_and_limited_to_http() {
        let client = NodeClient::new(Some("http://localhost:9000/mcp"), 1, Duration::from_secs(1)).unwrap();
        assert_eq!(client.endpoint(), "http://localhost:9000/mcp");
        assert!(client.is_loopback());
        let v6 = NodeClient::new(Some("http://[::1]:9000/"), 1, Duration::from_secs(1)).unwrap();
        assert!(v6.is_loopback());
        assert_eq!(v6.endpoint(), "http://[::1]:9000/");
        assert!(NodeClient::new(Some("https://127.0.0.1:1/"), 1, Duration::from_secs(1)).is_err());
        assert!(NodeClient::new(Some("not a url"), 1, Duration::from_secs(1)).is_err());
        let default = NodeClient::new(None, 8765, Duration::from_secs(1)).unwrap();
        assert_eq!(default.endpoint(), "http://127.0.0.1:8765/");
    }

    #[test]
    fn file_tokens_are_not_sent_off_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp-token.txt");
        std::fs::write(&file, "tok\n").unwrap();
        let remote = NodeClient::new(Some("http://192.0.2.1:1/"), 1, Duration::from_secs(1)).unwrap();
        let (remote, source) = remote.with_token(None, &file);
        assert!(remote.token.is_none() && matches!(source, TokenSource::None));
        let local = NodeClient::new(None, 1, Duration::from_secs(1)).unwrap();
        let (local, source) = local.with_token(None, &file);
        assert_eq!(local.token.as_deref(), Some("tok"));
        assert!(matches!(source, TokenSource::File(_)));
        let (flagged, source) =
            NodeClient::new(None, 1, Duration::from_secs(1)).unwrap().with_token(Some("x".into()), &file);
        assert_eq!(flagged.token.as_deref(), Some("x"));
        assert!(matches!(source, TokenSource::Flag));
    }

    #[test]
    fn a_rotated_token_is_reloaded_only_when_it_changed_and_only_for_loopback() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp-token.txt");
        std::fs::write(&file, "old\n").unwrap();
        let (client, _) = NodeClient::new(None, 1, Duration::from_secs(1)).unwrap().with_token(None, &file);
        assert!(client.with_reloaded_token(&file).is_none(), "the same token is nothing new to try");
        std::fs::write(&file, "new\n").unwrap();
        let reloaded = client.with_reloaded_token(&file).expect("a new token");
        assert_eq!(reloaded.token.as_deref(), Some("new"));
        assert_eq!(reloaded.endpoint(), client.endpoint());
        std::fs::write(&file, " \n").unwrap();
        assert!(client.with_reloaded_token(&file).is_none(), "a blank file is no token");
        std::fs::remove_file(&file).unwrap();
        assert!(client.with_reloaded_token(&file).is_none());
        std::fs::write(&file, "new\n").unwrap();
        let tokenless = NodeClient::new(None, 1, Duration::from_secs(1)).unwrap();
        assert_eq!(tokenless.with_reloaded_token(&file).and_then(|c| c.token), Some("new".into()));
        let remote = NodeClient::new(Some("http://192.0.2.1:1/"), 1, Duration::from_secs(1)).unwrap();
        assert!(remote.with_reloaded_token(&file).is_none(), "file tokens never go off the machine");
    }

    /// A one-shot HTTP server on loopback: answers the first request `200` with `body` as `content_type`.
    async fn answering_once(content_type: &'static str, body: Vec<u8>) -> NodeClient {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            // The relayed message is `{}`: the request is complete once it arrived.
            while !request.ends_with(b"{}") {
                let read = socket.read(&mut chunk).await.unwrap();
                assert_ne!(read, 0, "the client closed before sending its request");
                request.extend_from_slice(&chunk[..read]);
            }
            let head =
                format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n", body.len());
            socket.write_all(head.as_bytes()).await.unwrap();
            let _ = socket.write_all(&body).await;
        });
        NodeClient::new(None, port, Duration::from_secs(60)).unwrap()
    }

    /// An SSE body of exactly `len` bytes carrying one event.
    fn sse_body(len: usize) -> Vec<u8> {
        let framing = "data: \n\n".len();
        format!("data: {}\n\n", "x".repeat(len - framing)).into_bytes()
    }

    #[tokio::test]
    async fn streamed_answers_are_capped_at_max_response_bytes() {
        let client = answering_once("text/event-stream", sse_body(MAX_RESPONSE_BYTES)).await;
        let Ok(NodeReply::Events(mut events)) = client.post_message(Bytes::from_static(b"{}")).await else {
            panic!("an event stream was expected");
        };
        let data = events.next().await.expect("one event").expect("within the cap");
        assert_eq!(data.len(), MAX_RESPONSE_BYTES - "data: \n\n".len());
        assert!(events.next().await.is_none());

        let client = answering_once("text/event-stream", sse_body(MAX_RESPONSE_BYTES + 1)).await;
        let Ok(NodeReply::Events(mut events)) = client.post_message(Bytes::from_static(b"{}")).await else {
            panic!("an event stream was expected");
        };
        assert!(matches!(events.next().await, Some(Err(ClientError::TooLarge { .. }))));
    }

    #[tokio::test]
    async fn whole_answers_are_capped_at_max_response_bytes() {
        let client = answering_once("application/json", vec![b' '; MAX_RESPONSE_BYTES]).await;
        let Ok(NodeReply::Frame(body)) = client.post_message(Bytes::from_static(b"{}")).await else {
            panic!("a whole answer was expected");
        };
        assert_eq!(body.len(), MAX_RESPONSE_BYTES);
        let client = answering_once("application/json", vec![b' '; MAX_RESPONSE_BYTES + 1]).await;
        assert!(matches!(client.post_message(Bytes::from_static(b"{}")).await, Err(ClientError::TooLarge { .. })));
    }

    #[test]
    fn error_bodies_are_one_sanitised_line() {
        assert_eq!(first_line(b"bad\x07 thing\nsecond"), "bad thing");
        assert_eq!(first_line(b""), "(empty body)");
    }
}
