//! Test harness: a real server bound to 127.0.0.1:0 serving a fake MCP service, and small HTTP
//! clients (hyper's for well-formed requests, raw TCP for stalls and malformed framing).
#![allow(dead_code)] // Each test binary uses a different part of the harness.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use clawmcp_http::{HttpConfig, Limits, bind};
use clawmcp_mcp::{
    CallContext, DuplicatePolicy, McpServer, McpService, RpcError, ServerInfo, Tool, ToolResult, permissive_schema,
};
use futures_util::future::BoxFuture;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Tools: `count` (counts its runs), `wait_for_cancel` (runs until cancelled), `slow`
/// (`seconds` long unless cancelled), and the one file command, `file.echo` (a text of `bytes`
/// bytes, after `seconds` unless cancelled). Custom request `test/hang` never answers and
/// ignores cancellation.
pub struct FakeService {
    /// Calls of `wait_for_cancel` and `slow` that have started.
    pub started: watch::Sender<usize>,
    /// Calls whose cancel token fired.
    pub cancelled: watch::Sender<usize>,
    pub counted: AtomicUsize,
}

impl FakeService {
    fn new() -> Self {
        FakeService { started: watch::channel(0).0, cancelled: watch::channel(0).0, counted: AtomicUsize::new(0) }
    }

    pub async fn wait_started(&self, n: usize) {
        self.started.subscribe().wait_for(|started| *started >= n).await.unwrap();
    }

    pub async fn wait_cancelled(&self, n: usize) {
        self.cancelled.subscribe().wait_for(|cancelled| *cancelled >= n).await.unwrap();
    }

    pub fn cancelled_count(&self) -> usize {
        *self.cancelled.borrow()
    }
}

impl McpService for FakeService {
    fn list_tools(&self) -> Vec<Tool> {
        ["count", "wait_for_cancel", "slow", "file.echo"]
            .into_iter()
            .map(|name| Tool {
                title: None,
                output_schema: None,
                name: name.into(),
                description: format!("test tool {name}"),
                input_schema: permissive_schema(),
                annotations: None,
            })
            .collect()
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match name {
                "count" => ToolResult::text((self.counted.fetch_add(1, Ordering::SeqCst) + 1).to_string()),
                "wait_for_cancel" => {
                    self.started.send_modify(|n| *n += 1);
                    ctx.cancel.cancelled().await;
                    self.cancelled.send_modify(|n| *n += 1);
                    ToolResult::error("cancelled")
                }
                "slow" => {
                    self.started.send_modify(|n| *n += 1);
                    let seconds = arguments.get("seconds").and_then(Value::as_u64).unwrap_or(1);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(seconds)) => ToolResult::text("done"),
                        _ = ctx.cancel.cancelled() => {
                            self.cancelled.send_modify(|n| *n += 1);
                            ToolResult::error("cancelled")
                        }
                    }
                }
                "file.echo" => {
                    self.started.send_modify(|n| *n += 1);
                    let seconds = arguments.get("seconds").and_then(Value::as_u64).unwrap_or(0);
                    let bytes = arguments.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(seconds)) => ToolResult::text("x".repeat(bytes)),
                        _ = ctx.cancel.cancelled() => ToolResult::error("cancelled"),
                    }
                }
                other => ToolResult::error(format!("Unknown tool: {other}")),
            }
        })
    }

    fn custom_request<'a>(
        &'a self,
        method: &'a str,
        _params: Option<Value>,
    ) -> Option<BoxFuture<'a, Result<Value, RpcError>>> {
        (method == "test/hang").then(|| Box::pin(std::future::pending()) as BoxFuture<'a, _>)
    }

    fn is_file_command(&self, name: &str) -> bool {
        name == "file.echo"
    }
}

/// A running server and what a test needs to talk to it.
pub struct Harness {
    pub client: Client,
    pub token_path: PathBuf,
    pub service: Arc<FakeService>,
    pub shutdown: CancellationToken,
    pub served: JoinHandle<io::Result<()>>,
    pub limits: Limits,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub async fn start() -> Self {
        Self::with_limits(Limits::default()).await
    }

    pub async fn with_limits(limits: Limits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let token_path = dir.path().join("data").join("mcp-token.txt");
        let server =
            bind(HttpConfig { port: 0, token_path: token_path.clone(), limits: limits.clone() }).await.unwrap();
        let token = std::fs::read_to_string(&token_path).unwrap().trim().to_owned();
        let service = Arc::new(FakeService::new());
        let info = ServerInfo { name: "test".into(), version: "0".into() };
        let mcp = Arc::new(McpServer::new(info, service.clone(), DuplicatePolicy::Allow));
        let shutdown = CancellationToken::new();
        let client = Client { addr: server.local_addr(), token };
        let served = tokio::spawn(server.serve(mcp, shutdown.clone()));
        Harness { client, token_path, service, shutdown, served, limits, _dir: dir }
    }

    pub fn addr(&self) -> SocketAddr {
        self.client.addr
    }
}

/// Talks to the server; cheap to clone into spawned tasks.
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub token: String,
}

/// A complete answer.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The first text of a `tools/call` result and its `isError`.
    pub fn tool_outcome(&self) -> (String, bool) {
        assert_eq!(self.status, StatusCode::OK, "{}", self.text());
        let json = self.json();
        let result = &json["result"];
        (result["content"][0]["text"].as_str().unwrap().to_owned(), result["isError"].as_bool().unwrap())
    }

    pub fn assert_text(&self, status: StatusCode, text: &str) {
        assert_eq!((self.status, self.text()), (status, text));
        assert_eq!(self.headers[CONTENT_TYPE], "text/plain; charset=utf-8");
        assert!(self.headers.keys().all(|name| !name.as_str().starts_with("access-control-")));
    }
}

impl Client {
    /// A request with a loopback Host and the bearer token.
    pub fn request(&self, method: Method) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri("/")
            .header(HOST, self.addr.to_string())
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
    }

    /// An authenticated JSON POST.
    pub fn post_json(&self) -> http::request::Builder {
        self.request(Method::POST).header(CONTENT_TYPE, "application/json")
    }

    /// Sends one request on a fresh connection.
    pub async fn send<B>(&self, request: Request<B>) -> Reply
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.connect().await.send(request).await
    }

    pub async fn rpc(&self, message: Value) -> Reply {
        self.send(self.post_json().body(Full::new(Bytes::from(message.to_string()))).unwrap()).await
    }

    pub async fn connect<B>(&self) -> Connection<B>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let stream = TcpStream::connect(self.addr).await.unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Connection { sender, driver }
    }

    /// Writes `bytes` on a fresh TCP connection and returns it unread.
    pub async fn raw_open(&self, bytes: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        stream
    }

    /// Writes `bytes` and reads until the server closes the connection.
    pub async fn raw(&self, bytes: &[u8]) -> String {
        read_to_close(&mut self.raw_open(bytes).await).await
    }

    /// The head of a raw authenticated JSON POST.
    pub fn raw_post_head(&self, extra_headers: &str) -> String {
        format!(
            "POST / HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n{extra_headers}\r\n",
            self.addr, self.token
        )
    }
}

/// Reads until the peer closes; a reset after the response counts as a close.
pub async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read failed: {e}"),
        }
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// Reads until the text received so far contains `needle`.
pub async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut received = Vec::new();
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&received).contains(needle) {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before {needle:?} arrived: {}", String::from_utf8_lossy(&received));
        received.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// One client connection, kept alive across requests.
pub struct Connection<B> {
    sender: hyper::client::conn::http1::SendRequest<B>,
    driver: JoinHandle<()>,
}

impl<B> Connection<B>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    pub async fn send(&mut self, request: Request<B>) -> Reply {
        self.sender.ready().await.unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Reply { status: parts.status, headers: parts.headers, body }
    }

    /// Whether the server has closed this connection.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

impl<B> Drop for Connection<B> {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

pub fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

pub fn call(id: Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

pub fn cancel(request_id: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id, "reason": "test"}})
}
