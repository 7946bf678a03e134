//! [`FakeGateway`]: the listener on `127.0.0.1:0`, the shared state every connection task
//! reads, and the methods tests use to script, observe and break the gateway.
//!
//! One port serves WebSocket upgrades and plain HTTP (`/tools/invoke`, `/health`), like the real
//! gateway. All tasks live in one `JoinSet` owned by the accept task; dropping the
//! `FakeGateway` aborts that task, which aborts every connection (and every stalled or
//! trickling response) with it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tracing::debug;

use crate::config::{FakeAuth, FakeConfig};
use crate::connection::{self, Control};
use crate::reply::{Reply, ToolReply, gateway_error};
use crate::tools_http;

pub(crate) type Body = BoxBody<Bytes, Infallible>;
type MethodHandler = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;
type ToolHandler = Arc<dyn Fn(&ToolCall) -> ToolReply + Send + Sync>;

/// One text frame a client sent, in arrival order.
#[derive(Debug, Clone)]
pub struct Received {
    /// Which connection (1, 2, ... in accept order).
    pub conn: u64,
    pub text: String,
    /// The parsed frame, when it was JSON.
    pub json: Option<Value>,
}

impl Received {
    /// `method` of a `req` frame.
    pub fn method(&self) -> Option<&str> {
        let json = self.json.as_ref()?;
        (json.get("type")? == "req").then(|| json.get("method")?.as_str())?
    }

    /// `params` of a `req` frame (`Value::Null` when absent).
    pub fn params(&self) -> Value {
        self.json.as_ref().and_then(|j| j.get("params")).cloned().unwrap_or(Value::Null)
    }
}

/// One `/tools/invoke` call the fake received (after auth passed).
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// `name` if present, else `tool` (the gateway's precedence).
    pub tool: String,
    pub body: Value,
    pub headers: HeaderMap,
}

/// State shared by the listener, every connection and the test.
pub(crate) struct State {
    pub(crate) config: FakeConfig,
    handlers: Mutex<HashMap<String, MethodHandler>>,
    tool_handlers: Mutex<HashMap<String, ToolHandler>>,
    connections: Mutex<HashMap<u64, mpsc::UnboundedSender<Control>>>,
    next_conn: AtomicU64,
    received: Mutex<Vec<Received>>,
    tool_calls: Mutex<Vec<ToolCall>>,
    upgrade_headers: Mutex<Vec<HeaderMap>>,
    client_closes: Mutex<Vec<(u64, u16, String)>>,
    device_tokens: Mutex<Vec<String>>,
    /// Bootstrap tokens issued and not yet spent.
    bootstrap_tokens: Mutex<Vec<String>>,
    pub(crate) ticks: AtomicBool,
    accepting: AtomicBool,
    refusal: Mutex<Option<Value>>,
    /// The shared token after [`FakeGateway::rotate_token`], replacing `config.auth`.
    rotated_token: Mutex<Option<String>>,
    handshakes: AtomicU64,
    connect_attempts: AtomicU64,
    /// Bumped on every recorded change so waiters re-check.
    version: watch::Sender<u64>,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).expect("OS random number generator");
    buffer.iter().map(|b| format!("{b:02x}")).collect()
}

impl State {
    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    pub(crate) fn next_conn_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn record(&self, conn: u64, text: &str) {
        let json = serde_json::from_str(text).ok();
        lock(&self.received).push(Received { conn, text: text.to_owned(), json });
        self.bump();
    }

    pub(crate) fn record_client_close(&self, conn: u64, code: u16, reason: String) {
        lock(&self.client_closes).push((conn, code, reason));
        self.bump();
    }

    pub(crate) fn record_tool_call(&self, call: ToolCall) {
        lock(&self.tool_calls).push(call);
        self.bump();
    }

    pub(crate) fn note_connect_attempt(&self) {
        self.connect_attempts.fetch_add(1, Ordering::Relaxed);
        self.bump();
    }

    pub(crate) fn note_handshake(&self, conn: u64, control: mpsc::UnboundedSender<Control>) {
        lock(&self.connections).insert(conn, control);
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        self.bump();
    }

    pub(crate) fn forget_connection(&self, conn: u64) {
        lock(&self.connections).remove(&conn);
        self.bump();
    }

    pub(crate) fn refusal(&self) -> Option<Value> {
        lock(&self.refusal).clone()
    }

    /// The admission config now: `config`, with the shared token rotated if it was.
    pub(crate) fn admission_config(&self) -> std::borrow::Cow<'_, FakeConfig> {
        match lock(&self.rotated_token).clone() {
            Some(token) => std::borrow::Cow::Owned(FakeConfig { auth: FakeAuth::Token(token), ..self.config.clone() }),
            None => std::borrow::Cow::Borrowed(&self.config),
        }
    }

    pub(crate) fn issue_device_token(&self) -> String {
        let token = random_hex(16);
        lock(&self.device_tokens).push(token.clone());
        token
    }

    pub(crate) fn device_token_known(&self, token: &str) -> bool {
        lock(&self.device_tokens).iter().any(|t| t == token)
    }

    pub(crate) fn spend_bootstrap(&self, token: &str) -> bool {
        let mut unspent = lock(&self.bootstrap_tokens);
        let found = unspent.iter().position(|t| t == token);
        found.map(|at| unspent.remove(at)).is_some()
    }

    /// The scripted reply for `method`, or the built-in default. Like the real gateway, an
    /// unknown method needs `operator.admin` before it is even reported as unknown.
    pub(crate) fn reply_for(&self, method: &str, params: &Value, scopes: &[String]) -> Reply {
        let handler = lock(&self.handlers).get(method).cloned();
        match handler {
            Some(handler) => handler(params),
            None if method == "health" => Reply::Ok(json!({"ok": true})),
            None if scopes.iter().any(|s| s == "operator.admin") => {
                Reply::error("INVALID_REQUEST", &format!("unknown method: {method}"))
            }
            None => Reply::Error(gateway_error(
                "FORBIDDEN",
                "missing scope: operator.admin",
                Some(
                    json!({"code": "MISSING_SCOPE", "missingScope": "operator.admin", "requiredScopes": ["operator.admin"]}),
                ),
            )),
        }
    }

    pub(crate) fn tool_reply_for(&self, call: &ToolCall) -> Option<ToolReply> {
        let handler = lock(&self.tool_handlers).get(&call.tool).cloned();
        handler.map(|handler| handler(call))
    }

    fn broadcast(&self, control: impl Fn() -> Control) -> usize {
        lock(&self.connections).values().filter(|sender| sender.send(control()).is_ok()).count()
    }
}

/// An OpenClaw gateway double on `127.0.0.1`. Stop it by dropping it.
pub struct FakeGateway {
    state: Arc<State>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for FakeGateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeGateway {
    /// Starts with [`FakeConfig::default`] (token `fake-gateway-token`).
    pub async fn start() -> FakeGateway {
        FakeGateway::start_with(FakeConfig::default()).await
    }

    pub async fn start_with(config: FakeConfig) -> FakeGateway {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State {
            ticks: AtomicBool::new(config.ticks),
            config,
            handlers: Mutex::default(),
            tool_handlers: Mutex::default(),
            connections: Mutex::default(),
            next_conn: AtomicU64::new(0),
            received: Mutex::default(),
            tool_calls: Mutex::default(),
            upgrade_headers: Mutex::default(),
            client_closes: Mutex::default(),
            device_tokens: Mutex::default(),
            bootstrap_tokens: Mutex::default(),
            accepting: AtomicBool::new(true),
            refusal: Mutex::default(),
            rotated_token: Mutex::default(),
            handshakes: AtomicU64::new(0),
            connect_attempts: AtomicU64::new(0),
            version: watch::Sender::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, state.clone()));
        FakeGateway { state, addr, task }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The configuration the fake started with.
    pub fn config(&self) -> &FakeConfig {
        &self.state.config
    }

    /// Scripts `method`: the handler gets the request's `params` (`null` when absent).
    pub fn on(&self, method: &str, handler: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        lock(&self.state.handlers).insert(method.to_owned(), Arc::new(handler));
    }

    /// Scripts the `/tools/invoke` answer for `tool`; unscripted tools get the real 404.
    pub fn on_tool(&self, tool: &str, handler: impl Fn(&ToolCall) -> ToolReply + Send + Sync + 'static) {
        lock(&self.state.tool_handlers).insert(tool.to_owned(), Arc::new(handler));
    }

    /// Sends `{type:"event", event, payload, seq}` to every authenticated connection (each with
    /// its own `seq`); returns how many connections it went to.
    pub fn emit(&self, event: &str, payload: Value) -> usize {
        self.state.broadcast(|| Control::Event { event: event.to_owned(), payload: payload.clone() })
    }

    /// Sends `text` verbatim to every authenticated connection (malformed or oversize frames).
    pub fn send_raw(&self, text: &str) -> usize {
        self.state.broadcast(|| Control::Raw(text.to_owned()))
    }

    /// Mints a single-use bootstrap token, as `openclaw qr` / the Devices page do for a setup
    /// code: it admits one device once, then is refused.
    pub fn issue_bootstrap_token(&self) -> String {
        let token = random_hex(16);
        lock(&self.state.bootstrap_tokens).push(token.clone());
        token
    }

    /// Closes every connection with 1012 "service restart" and keeps accepting new ones.
    pub fn restart(&self) -> usize {
        self.state.broadcast(|| Control::Close(1012, "service restart".to_owned()))
    }

    /// Changes the shared token as a hot-reloaded `gateway.auth.token` does: every connection is
    /// closed with 4001 "gateway auth changed", and later connects need the new token (or a
    /// device token this fake issued). Returns how many connections were closed.
    pub fn rotate_token(&self, token: &str) -> usize {
        *lock(&self.state.rotated_token) = Some(token.to_owned());
        self.state.broadcast(|| Control::Close(4001, "gateway auth changed".to_owned()))
    }

    /// Drops every connection without a close frame.
    pub fn drop_connections(&self) -> usize {
        self.state.broadcast(|| Control::Drop)
    }

    /// While `false`, WebSocket upgrades are answered 503 (a gateway that is down).
    pub fn set_accepting(&self, accepting: bool) {
        self.state.accepting.store(accepting, Ordering::SeqCst);
    }

    /// Turns `tick` events on or off for all connections.
    pub fn set_ticks(&self, enabled: bool) {
        self.state.ticks.store(enabled, Ordering::SeqCst);
    }

    /// While set, every `connect` is refused with this `ErrorShape` (then closed 1008).
    pub fn refuse_auth(&self, error: Option<Value>) {
        *lock(&self.state.refusal) = error;
    }

    /// Every text frame received so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }

    /// `params` of every `req` for `method`, in arrival order.
    pub fn requests(&self, method: &str) -> Vec<Value> {
        lock(&self.state.received).iter().filter(|r| r.method() == Some(method)).map(Received::params).collect()
    }

    /// Waits until the `count`-th request for `method` has arrived and returns its params.
    pub async fn wait_for_request(&self, method: &str, count: usize) -> Value {
        self.wait_until(|gateway| gateway.requests(method).get(count.saturating_sub(1)).cloned()).await
    }

    /// Waits until `handshakes() >= count`.
    pub async fn wait_for_handshakes(&self, count: u64) {
        self.wait_until(|gateway| (gateway.handshakes() >= count).then_some(())).await;
    }

    /// Waits until the fake has seen `count` close frames from clients; returns them.
    pub async fn wait_for_client_closes(&self, count: usize) -> Vec<(u64, u16, String)> {
        self.wait_until(|gateway| {
            let closes = lock(&gateway.state.client_closes).clone();
            (closes.len() >= count).then_some(closes)
        })
        .await
    }

    /// Successful handshakes so far.
    pub fn handshakes(&self) -> u64 {
        self.state.handshakes.load(Ordering::Relaxed)
    }

    /// `connect` requests seen so far (admitted or not).
    pub fn connect_attempts(&self) -> u64 {
        self.state.connect_attempts.load(Ordering::Relaxed)
    }

    /// Authenticated connections open right now.
    pub fn open_connections(&self) -> usize {
        lock(&self.state.connections).len()
    }

    /// Headers of every WebSocket upgrade request (to check, e.g., that no `Origin` was sent).
    pub fn upgrade_headers(&self) -> Vec<HeaderMap> {
        lock(&self.state.upgrade_headers).clone()
    }

    /// `/tools/invoke` calls that passed authentication.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        lock(&self.state.tool_calls).clone()
    }

    async fn wait_until<T>(&self, mut check: impl FnMut(&FakeGateway) -> Option<T>) -> T {
        let mut version = self.state.version.subscribe();
        loop {
            version.borrow_and_update();
            if let Some(found) = check(self) {
                return found;
            }
            // The sender lives in `State`, which we hold: `changed` cannot fail.
            let _ = version.changed().await;
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Small frames must leave at once: Nagle's real-time delay would otherwise
                    // race tests that run on tokio's paused clock.
                    let _ = stream.set_nodelay(true);
                    tasks.spawn(serve_tcp(stream, state.clone()));
                }
                Err(error) => debug!(%error, "fake gateway accept failed"),
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

/// One TCP connection: HTTP/1.1 until (unless) it upgrades to a WebSocket.
async fn serve_tcp(stream: TcpStream, state: Arc<State>) {
    let (upgrade_tx, upgrade_rx) = oneshot::channel::<OnUpgrade>();
    let upgrade_tx = Arc::new(Mutex::new(Some(upgrade_tx)));
    let service_state = state.clone();
    let service = service_fn(move |request| {
        let state = service_state.clone();
        let upgrade_tx = upgrade_tx.clone();
        async move { Ok::<_, Infallible>(route(request, &state, &upgrade_tx).await) }
    });
    let served = http1::Builder::new().serve_connection(TokioIo::new(stream), service).with_upgrades().await;
    if let Err(error) = served {
        debug!(%error, "fake gateway HTTP connection ended with an error");
    }
    if let Ok(on_upgrade) = upgrade_rx.await
        && let Ok(upgraded) = on_upgrade.await
    {
        connection::run(TokioIo::new(upgraded), state).await;
    }
}

async fn route(
    mut request: Request<Incoming>,
    state: &State,
    upgrade_tx: &Mutex<Option<oneshot::Sender<OnUpgrade>>>,
) -> Response<Body> {
    let is_upgrade = request
        .headers()
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if is_upgrade {
        lock(&state.upgrade_headers).push(request.headers().clone());
        state.bump();
        let Some(key) = request.headers().get(SEC_WEBSOCKET_KEY).cloned() else {
            return text_response(StatusCode::BAD_REQUEST, "missing Sec-WebSocket-Key");
        };
        if !state.accepting.load(Ordering::SeqCst) {
            return text_response(StatusCode::SERVICE_UNAVAILABLE, "gateway starting");
        }
        if let Some(sender) = lock(upgrade_tx).take() {
            let _ = sender.send(hyper::upgrade::on(&mut request));
        }
        return Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(UPGRADE, "websocket")
            .header(CONNECTION, "Upgrade")
            .header(SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.as_bytes()))
            .body(empty())
            .expect("static response");
    }
    match request.uri().path() {
        "/tools/invoke" => tools_http::handle(request, state).await,
        "/health" | "/healthz" => json_response(StatusCode::OK, &json!({"ok": true, "status": "live"})),
        _ => text_response(StatusCode::NOT_FOUND, "Not Found"),
    }
}

pub(crate) fn empty() -> Body {
    Full::new(Bytes::new()).boxed()
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json; charset=utf-8")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("static response")
}

pub(crate) fn text_response(status: StatusCode, text: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(text.to_owned())).boxed())
        .expect("static response")
}
