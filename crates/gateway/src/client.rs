//! [`GatewayClient`]: one logical connection to an OpenClaw gateway that survives socket drops.
//!
//! # Lifecycle
//!
//! [`GatewayClient::connect`] performs the first handshake inline (WebSocket upgrade without an
//! `Origin` header, `connect.challenge`, `connect`, `hello-ok`) and fails fast with the gateway's
//! answer, so a CLI can report "wrong token" instead of retrying forever. After that a
//! supervisor task owns the socket: when it drops, the supervisor reconnects with
//! [`BackoffPolicy`] until it succeeds, the client is closed, or the gateway gives a *terminal*
//! refusal ([`GatewayError::is_terminal`]: bad credentials, pairing required, protocol
//! mismatch), which stops the client and is handed to every later request.
//!
//! # Requests
//!
//! Each request gets a random id and a pending entry *on the link it was sent on*. Responses
//! are matched by id, so they may arrive in any order. When a link ends, every entry still
//! pending on it fails at once with [`GatewayError::Disconnected`] (the request may or may not
//! have run; nothing is retried, because gateway methods are not idempotent). A request issued
//! while no link is up waits for the next one, within its own timeout, and then fails with
//! [`GatewayError::NotConnected`] naming the last connection error. The timeout covers the
//! whole call: waiting for a link, queueing, and the response.
//!
//! # Liveness and limits
//!
//! - Tick watchdog: the gateway sends `tick` every `policy.tickIntervalMs`; no inbound frame
//!   for twice that closes the socket with 4000 "tick timeout" and reconnects.
//! - Outbound: a frame larger than the gateway's `policy.maxPayload` is refused locally with
//!   [`GatewayError::PayloadTooLarge`] (the gateway would close the socket, taking every other
//!   pending request with it).
//! - Inbound: frames above [`ClientOptions::max_inbound_frame_bytes`] (25 MiB, the gateway's
//!   own cap) are rejected by the WebSocket layer before allocation; the socket is closed with
//!   1009 and the client reconnects.
//! - Malformed frames (not JSON, unknown `type`, missing fields) are logged and skipped: one bad
//!   frame must not cost every pending request its answer.
//!
//! # Events
//!
//! See [`crate::events`]: a bounded broadcast that never blocks the socket, with
//! `Disconnected`/`Reconnected` markers and a `Lagged` count for slow subscribers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::backoff::{Backoff, BackoffPolicy};
use crate::config::Credentials;
use crate::device_token::DeviceTokenStore;
use crate::error::GatewayError;
use crate::events::{EventSubscription, GatewayEvent};
use crate::frames::{
    ClientInfo, ConnectAuth, DEFAULT_MAX_PAYLOAD, DEFAULT_TICK_INTERVAL_MS, ErrorShape, Frame, HelloOk, RequestFrame,
    ResponseFrame, Role, random_id,
};
use crate::handshake::{Established, Socket, handshake};
use crate::identity::DeviceIdentity;
use crate::tls_pin::TlsFingerprint;

/// Default per-request timeout (the reference client's 30 s).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long each handshake step (upgrade, challenge) may take; the gateway itself drops a
/// socket that has not authenticated within 15 s.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// The inbound frame cap: the gateway's own `maxPayload` (25 MiB), which is also the reference
/// client's socket limit. Nothing legitimate is bigger.
pub const DEFAULT_MAX_INBOUND_FRAME: usize = 26_214_400;

/// Events buffered per subscriber before the oldest are dropped (and counted as `Lagged`).
pub const DEFAULT_EVENT_BUFFER: usize = 1024;

/// Frames queued for the socket writer; senders wait when it is full (backpressure), within
/// their request timeout.
const OUTBOUND_QUEUE: usize = 256;

/// How long a closing socket waits for its close frame to be written and answered.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Everything needed to open (and reopen) the connection.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `ws://` or `wss://` URL of the gateway.
    pub url: String,
    /// Secrets sent in `connect.params.auth`.
    pub auth: ConnectAuth,
    pub client: ClientInfo,
    pub role: Role,
    /// Requested scopes, in the order the device signature covers them. Nodes send `[]`.
    pub scopes: Vec<String>,
    /// Client capabilities (`approvals` to receive approval events).
    pub caps: Vec<String>,
    /// Node only: the command allowlist claimed.
    pub commands: Option<Vec<String>>,
    /// Node only: the host's `PATH`.
    pub path_env: Option<String>,
    /// The device key; required for nodes, optional for operators (see `docs/gateway-protocol.md`
    /// §4).
    pub device: Option<Arc<DeviceIdentity>>,
    /// Where the gateway's `hello-ok.auth.deviceToken` is kept; with it, a connect refused with
    /// `canRetryWithDeviceToken` is retried once with the saved token (see
    /// [`crate::device_token`]).
    pub device_tokens: Option<Arc<DeviceTokenStore>>,
    /// Extra headers on every WebSocket upgrade, for a gateway behind an access proxy.
    pub headers: Vec<UpgradeHeader>,
    /// Trust exactly this certificate on a `wss://` URL instead of the CA roots (see
    /// [`crate::tls_pin`]). A pin on a `ws://` URL fails the connect.
    pub tls_fingerprint: Option<TlsFingerprint>,
    /// Keep reconnecting after refusals a human must resolve (pairing required, a wrong
    /// secret): a node waits for its operator, where a CLI reports and stops. A spent setup
    /// code still stops it ([`GatewayError::is_refusal`]): no operator action revives one.
    pub persistent: bool,
    pub request_timeout: Duration,
    pub handshake_timeout: Duration,
    pub backoff: BackoffPolicy,
    pub event_buffer: usize,
    pub max_inbound_frame_bytes: usize,
}

impl ClientOptions {
    /// An operator connection as `client {id:"cli", mode:"cli"}` with the given scopes: the
    /// identity that keeps its scopes on loopback without a device key.
    pub fn operator(url: impl Into<String>, credentials: &Credentials, scopes: &[&str]) -> Self {
        Self::base(url.into(), credentials, ClientInfo::cli(), Role::Operator, scopes.iter().map(|s| (*s).to_owned()))
    }

    /// A node connection as `client {id:"node-host", mode:"node"}`; nodes must prove a device key.
    pub fn node(url: impl Into<String>, credentials: &Credentials, device: Arc<DeviceIdentity>) -> Self {
        let mut options = Self::base(url.into(), credentials, ClientInfo::node_host(), Role::Node, std::iter::empty());
        options.device = Some(device);
        options
    }

    fn base(
        url: String,
        credentials: &Credentials,
        client: ClientInfo,
        role: Role,
        scopes: impl Iterator<Item = String>,
    ) -> Self {
        ClientOptions {
            url,
            auth: ConnectAuth {
                token: credentials.token.clone(),
                password: credentials.password.clone(),
                bootstrap_token: credentials.bootstrap_token.clone(),
                ..ConnectAuth::default()
            },
            client,
            role,
            scopes: scopes.collect(),
            caps: Vec::new(),
            commands: None,
            path_env: None,
            device: None,
            device_tokens: None,
            headers: Vec::new(),
            tls_fingerprint: None,
            persistent: false,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            backoff: BackoffPolicy::default(),
            event_buffer: DEFAULT_EVENT_BUFFER,
            max_inbound_frame_bytes: DEFAULT_MAX_INBOUND_FRAME,
        }
    }
}

/// One extra header of the WebSocket upgrade (`--gateway-header 'Name: value'`): what an access
/// proxy in front of a gateway asks for (a service token, say). Its value never shows in
/// `Debug` output. Headers the WebSocket handshake owns, `Host`, and `Origin` (which would make
/// the gateway treat us as a browser) are refused.
#[derive(Clone)]
pub struct UpgradeHeader {
    name: tungstenite::http::HeaderName,
    value: tungstenite::http::HeaderValue,
}

impl std::fmt::Debug for UpgradeHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UpgradeHeader({}: ***)", self.name)
    }
}

impl UpgradeHeader {
    /// Parses `Name: value`; the error says what is wrong and what to pass instead.
    pub fn parse(text: &str) -> Result<UpgradeHeader, String> {
        let Some((name, value)) = text.split_once(':') else {
            return Err(format!("`{}` is not a header: use 'Name: value'", preview(text)));
        };
        let name = name.trim();
        let lowered = name.to_ascii_lowercase();
        let owned = ["host", "origin", "connection", "upgrade", "content-length", "transfer-encoding"];
        if owned.contains(&lowered.as_str()) || lowered.starts_with("sec-websocket-") {
            return Err(format!("the header `{name}` cannot be set: the WebSocket handshake owns it"));
        }
        let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{}` is not a valid header name", preview(name)))?;
        let mut value = tungstenite::http::HeaderValue::from_str(value.trim())
            .map_err(|_| format!("the value of header `{name}` has characters a header cannot carry"))?;
        value.set_sensitive(true);
        Ok(UpgradeHeader { name, value })
    }

    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    pub(crate) fn append_to(&self, headers: &mut tungstenite::http::HeaderMap) {
        headers.append(self.name.clone(), self.value.clone());
    }
}

/// The start of `text` for an error message (a header value may be a secret: never all of it).
fn preview(text: &str) -> String {
    let head: String = text.chars().take(24).collect();
    if head.len() < text.len() { format!("{head}...") } else { head }
}

/// What [`GatewayClient::status`] reports.
#[derive(Debug, Clone)]
pub enum LinkStatus {
    /// A socket is up; its `hello-ok`.
    Connected(Arc<HelloOk>),
    /// No socket right now: the first attempt is running, or reconnecting after `last_error`.
    Connecting { last_error: String, error: Option<GatewayError> },
    /// Final: closed by us, a terminal refusal of a non-persistent client, or one no operator
    /// can resolve (a spent setup code) of a persistent one.
    Stopped(GatewayError),
}

impl LinkStatus {
    fn of(state: &LinkState) -> LinkStatus {
        match state {
            LinkState::Up(link) => LinkStatus::Connected(link.hello.clone()),
            LinkState::Down { last_error, error } => {
                LinkStatus::Connecting { last_error: last_error.clone(), error: error.clone() }
            }
            LinkState::Stopped(error) => LinkStatus::Stopped(error.clone()),
        }
    }
}

/// Changes of a client's [`LinkStatus`], from [`GatewayClient::watch_status`].
pub struct StatusWatch(watch::Receiver<LinkState>);

impl StatusWatch {
    /// Waits for a change since the last [`current`](Self::current) (or since the watch was
    /// made); `false` once the client is gone.
    pub async fn changed(&mut self) -> bool {
        self.0.changed().await.is_ok()
    }

    /// The status now, marking it seen.
    pub fn current(&mut self) -> LinkStatus {
        LinkStatus::of(&self.0.borrow_and_update())
    }
}

/// Per-call knobs for [`GatewayClient::request_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestOptions {
    /// Overrides [`ClientOptions::request_timeout`] for this call.
    pub timeout: Option<Duration>,
    /// Skip interim `{status:"accepted"}` responses and wait for the final one.
    pub expect_final: bool,
}

/// A cheap, cloneable handle (`Clone + Send + Sync`). The connection closes gracefully when
/// [`close`](Self::close) is called or the last handle is dropped.
#[derive(Clone)]
pub struct GatewayClient {
    shared: Arc<Shared>,
    _owner: Arc<CloseOnDrop>,
}

impl std::fmt::Debug for GatewayClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayClient").field("url", &self.shared.options.url).finish_non_exhaustive()
    }
}

struct CloseOnDrop(CancellationToken);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

struct Shared {
    options: ClientOptions,
    state: watch::Sender<LinkState>,
    /// Taken (dropped) when the client stops, which ends every subscription.
    events: Mutex<Option<broadcast::Sender<GatewayEvent>>>,
    shutdown: CancellationToken,
}

#[derive(Clone)]
enum LinkState {
    Up(Arc<Link>),
    Down {
        last_error: String,
        /// The last failed attempt's error, when there was one (a refusal carries the gateway's
        /// codes: pairing required, token mismatch).
        error: Option<GatewayError>,
    },
    /// Final: [`GatewayError::Closed`] or [`GatewayError::Stopped`].
    Stopped(GatewayError),
}

impl GatewayClient {
    /// Opens the connection and completes the handshake, or returns why it could not.
    pub async fn connect(options: ClientOptions) -> Result<GatewayClient, GatewayError> {
        let established = connect_once(&options).await?;
        let (client, shared) = Self::unstarted(options);
        let first = install_link(&shared, established);
        tokio::spawn(supervise(shared, Some(first)));
        Ok(client)
    }

    /// Starts connecting in the background and returns at once: for a long-running node whose
    /// gateway may not be up yet. [`status`](Self::status) and the event stream tell how it goes.
    pub fn start(options: ClientOptions) -> GatewayClient {
        let (client, shared) = Self::unstarted(options);
        tokio::spawn(supervise(shared, None));
        client
    }

    fn unstarted(options: ClientOptions) -> (GatewayClient, Arc<Shared>) {
        let (events, _) = broadcast::channel(options.event_buffer.max(1));
        let shared = Arc::new(Shared {
            options,
            state: watch::Sender::new(LinkState::Down { last_error: "connecting".to_owned(), error: None }),
            events: Mutex::new(Some(events)),
            shutdown: CancellationToken::new(),
        });
        (GatewayClient { _owner: Arc::new(CloseOnDrop(shared.shutdown.clone())), shared: shared.clone() }, shared)
    }

    /// Calls `method` with `params` (anything serializable; `Value::Null` or `()` sends no
    /// `params`) and returns the response payload (`Value::Null` when it has none).
    pub async fn request(&self, method: &str, params: impl Serialize) -> Result<Value, GatewayError> {
        self.request_with(method, params, RequestOptions::default()).await
    }

    /// [`request`](Self::request) with a per-call timeout and expect-final handling.
    pub async fn request_with(
        &self,
        method: &str,
        params: impl Serialize,
        options: RequestOptions,
    ) -> Result<Value, GatewayError> {
        let params = match serde_json::to_value(params) {
            Ok(Value::Null) => None,
            Ok(value) => Some(value),
            Err(e) => return Err(GatewayError::InvalidParams { method: method.to_owned(), reason: e.to_string() }),
        };
        let timeout = options.timeout.unwrap_or(self.shared.options.request_timeout);
        let started = Instant::now();
        let deadline = started + timeout;
        let link = self.link_before(method, started, deadline).await?;

        let id = random_id();
        let text = Frame::Req(RequestFrame { id: id.clone(), method: method.to_owned(), params }).to_text();
        // A gateway advertising 0 cannot mean "send nothing"; fall back to its documented cap.
        let limit = match link.hello.policy.max_payload {
            0 => DEFAULT_MAX_PAYLOAD,
            limit => limit,
        };
        if text.len() > limit {
            return Err(GatewayError::PayloadTooLarge { method: method.to_owned(), size: text.len(), limit });
        }
        let (reply, response) = oneshot::channel();
        link.register(&id, Pending { method: method.to_owned(), expect_final: options.expect_final, reply })
            .map_err(|reason| GatewayError::Disconnected { method: method.to_owned(), reason })?;
        // Dropping the caller's future (or timing out) must not leave the entry behind.
        let _forget = ForgetOnDrop { link: &link, id: &id };
        let exchange = async {
            if link.outbound.send(Message::text(text)).await.is_err() {
                return Err(GatewayError::Disconnected { method: method.to_owned(), reason: link.end_reason() });
            }
            response.await.unwrap_or_else(|_| {
                Err(GatewayError::Disconnected { method: method.to_owned(), reason: link.end_reason() })
            })
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::Timeout { method: method.to_owned(), after: timeout }),
        }
    }

    /// A new subscriber to the event stream, starting with the next event.
    pub fn subscribe(&self) -> EventSubscription {
        match lock(&self.shared.events).as_ref() {
            Some(sender) => EventSubscription::new(sender.subscribe()),
            // Stopped: hand out a stream that is already over.
            None => EventSubscription::new(broadcast::channel(1).1),
        }
    }

    /// The current link's `hello-ok`, or `None` while reconnecting or after stopping.
    pub fn hello(&self) -> Option<Arc<HelloOk>> {
        match &*self.shared.state.borrow() {
            LinkState::Up(link) => Some(link.hello.clone()),
            _ => None,
        }
    }

    /// Where the connection stands right now.
    pub fn status(&self) -> LinkStatus {
        LinkStatus::of(&self.shared.state.borrow())
    }

    /// A watch on [`status`](Self::status): changes after this call are never missed.
    pub fn watch_status(&self) -> StatusWatch {
        StatusWatch(self.shared.state.subscribe())
    }

    pub fn is_connected(&self) -> bool {
        matches!(&*self.shared.state.borrow(), LinkState::Up(_))
    }

    /// Why the client stopped (`Closed`, or the terminal gateway refusal), if it has.
    pub fn stop_reason(&self) -> Option<GatewayError> {
        match &*self.shared.state.borrow() {
            LinkState::Stopped(error) => Some(error.clone()),
            _ => None,
        }
    }

    /// Closes gracefully (close frame 1000, pending requests fail with `Closed`) and waits until
    /// the connection is gone. Idempotent, and safe to call from several tasks at once.
    pub async fn close(&self) {
        self.shared.shutdown.cancel();
        let mut state = self.shared.state.subscribe();
        // The sender lives in `Shared`, which we hold, so this only returns once stopped.
        let _ = state.wait_for(|s| matches!(s, LinkState::Stopped(_))).await;
    }

    async fn link_before(&self, method: &str, started: Instant, deadline: Instant) -> Result<Arc<Link>, GatewayError> {
        let mut state = self.shared.state.subscribe();
        let settled = tokio::time::timeout_at(deadline, async {
            // Clone out of the `Ref` at once: it must not be held across an await.
            state.wait_for(|s| !matches!(s, LinkState::Down { .. })).await.map(|current| current.clone())
        })
        .await;
        match settled {
            Ok(Ok(LinkState::Up(link))) => Ok(link),
            Ok(Ok(LinkState::Stopped(error))) => Err(error),
            Ok(Ok(LinkState::Down { .. })) => unreachable!("wait_for returned a state it was told to skip"),
            Ok(Err(_)) => Err(GatewayError::Closed),
            Err(_) => {
                let last_error = match &*self.shared.state.borrow() {
                    LinkState::Down { last_error, .. } => last_error.clone(),
                    _ => "unknown".to_owned(),
                };
                Err(GatewayError::NotConnected { method: method.to_owned(), waited: started.elapsed(), last_error })
            }
        }
    }
}

impl Shared {
    fn emit(&self, event: GatewayEvent) {
        if let Some(sender) = lock(&self.events).as_ref() {
            // An error only means nobody is subscribed right now.
            let _ = sender.send(event);
        }
    }

    /// Marks the client stopped (unless it already is) and ends every subscription.
    fn stop(&self, error: GatewayError) {
        self.state.send_if_modified(|state| {
            if matches!(state, LinkState::Stopped(_)) {
                return false;
            }
            *state = LinkState::Stopped(error);
            true
        });
        lock(&self.events).take();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these short critical sections leaves consistent data.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One live socket after a successful handshake.
struct Link {
    hello: Arc<HelloOk>,
    outbound: mpsc::Sender<Message>,
    pending: Mutex<PendingTable>,
}

#[derive(Default)]
struct PendingTable {
    /// Set when the link ends; later registrations fail with this reason.
    ended: Option<String>,
    entries: HashMap<String, Pending>,
}

struct Pending {
    method: String,
    expect_final: bool,
    reply: oneshot::Sender<Result<Value, GatewayError>>,
}

impl Link {
    fn register(&self, id: &str, pending: Pending) -> Result<(), String> {
        let mut table = lock(&self.pending);
        if let Some(reason) = &table.ended {
            return Err(reason.clone());
        }
        table.entries.insert(id.to_owned(), pending);
        Ok(())
    }

    fn forget(&self, id: &str) {
        lock(&self.pending).entries.remove(id);
    }

    fn end_reason(&self) -> String {
        lock(&self.pending).ended.clone().unwrap_or_else(|| "the connection closed".to_owned())
    }

    fn complete(&self, response: ResponseFrame) {
        let mut table = lock(&self.pending);
        let Some(entry) = table.entries.get(&response.id) else {
            debug!(id = %response.id, "response for a request that is no longer pending (timed out or unknown)");
            return;
        };
        if entry.expect_final && response.is_interim_accepted() {
            return;
        }
        let Some(entry) = table.entries.remove(&response.id) else { return };
        drop(table);
        let result = if response.ok {
            Ok(response.payload.unwrap_or(Value::Null))
        } else {
            let error = response
                .error
                .unwrap_or_else(|| ErrorShape::new("UNKNOWN", "the gateway answered ok:false without an error object"));
            Err(GatewayError::Rejected { method: entry.method, error: Box::new(error) })
        };
        let _ = entry.reply.send(result);
    }

    /// Ends the link: fails everything pending with `error_for(method)`, refuses newcomers.
    fn end(&self, reason: &str, error_for: impl Fn(&str) -> GatewayError) {
        let drained: Vec<Pending> = {
            let mut table = lock(&self.pending);
            table.ended = Some(reason.to_owned());
            table.entries.drain().map(|(_, pending)| pending).collect()
        };
        for pending in drained {
            let _ = pending.reply.send(Err(error_for(&pending.method)));
        }
    }
}

struct ForgetOnDrop<'a> {
    link: &'a Link,
    id: &'a str,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.link.forget(self.id);
    }
}

/// A link ready to be driven: the socket and the writer queue's receiving end.
struct Installed {
    link: Arc<Link>,
    socket: Socket,
    outbound: mpsc::Receiver<Message>,
}

fn install_link(shared: &Shared, established: Established) -> Installed {
    let (sender, outbound) = mpsc::channel(OUTBOUND_QUEUE);
    let link = Arc::new(Link {
        hello: Arc::new(established.hello),
        outbound: sender,
        pending: Mutex::new(PendingTable::default()),
    });
    shared.state.send_replace(LinkState::Up(link.clone()));
    Installed { link, socket: established.socket, outbound }
}

/// Sets the final state if the supervisor exits any other way (including a panic), so
/// [`GatewayClient::close`] and waiting requests never hang.
struct StopOnExit(Arc<Shared>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        self.0.stop(GatewayError::Closed);
    }
}

async fn supervise(shared: Arc<Shared>, first: Option<Installed>) {
    let _stop = StopOnExit(shared.clone());
    let mut backoff = Backoff::new(shared.options.backoff);
    let mut current = first;
    let mut retry_after = None;
    // A background start tries at once; later attempts wait for the backoff.
    let mut wait = current.is_some();
    loop {
        if let Some(installed) = current.take() {
            backoff.reset();
            let link = installed.link.clone();
            let end = drive_link(&shared, installed).await;
            if matches!(end, LinkEnd::Shutdown) {
                link.end("the client was closed", |_| GatewayError::Closed);
                break;
            }
            let reason = end.describe();
            warn!(url = %shared.options.url, %reason, "gateway connection lost; reconnecting");
            shared.state.send_replace(LinkState::Down { last_error: reason.clone(), error: None });
            link.end(&reason, |method| GatewayError::Disconnected {
                method: method.to_owned(),
                reason: reason.clone(),
            });
            shared.emit(GatewayEvent::Disconnected { reason });
        }

        if wait {
            let delay = backoff.next_delay().max(retry_after.take().unwrap_or_default());
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = shared.shutdown.cancelled() => break,
            }
        }
        wait = true;
        let attempt = tokio::select! {
            attempt = connect_once(&shared.options) => attempt,
            () = shared.shutdown.cancelled() => break,
        };
        match attempt {
            Ok(established) => {
                info!(url = %shared.options.url, "reconnected to the gateway");
                let installed = install_link(&shared, established);
                shared.emit(GatewayEvent::Reconnected { hello: installed.link.hello.clone() });
                current = Some(installed);
            }
            Err(error) if error.is_terminal() && !(shared.options.persistent && error.is_refusal()) => {
                warn!(url = %shared.options.url, %error, "the gateway refused the connection; giving up");
                shared.stop(GatewayError::Stopped(Box::new(error)));
                break;
            }
            Err(error) => {
                if error.is_terminal() {
                    warn!(url = %shared.options.url, %error, "the gateway refused the connection; retrying");
                } else {
                    debug!(url = %shared.options.url, %error, "connect attempt failed");
                }
                retry_after = error.retry_after();
                shared.state.send_replace(LinkState::Down { last_error: error.to_string(), error: Some(error) });
            }
        }
    }
}

/// One handshake; when the gateway refuses the shared secret but offers the device-token path
/// (`canRetryWithDeviceToken`, after a token rotation), a second one with the saved device
/// token. A token the gateway issues is saved for next time.
///
/// With no shared secret, a saved device token is the credential: a setup code's bootstrap
/// token is single-use, so once the gateway has issued this device a token (the first connect
/// after `--pair`), every later connect presents that instead.
async fn connect_once(options: &ClientOptions) -> Result<Established, GatewayError> {
    let store = options.device_tokens.as_deref();
    let saved_instead =
        (options.auth.token.is_none() && options.auth.password.is_none() && options.auth.device_token.is_none())
            .then(|| store.and_then(DeviceTokenStore::load))
            .flatten();
    let device_only;
    let options = match saved_instead {
        Some(token) => {
            let mut with_token = options.clone();
            with_token.auth.bootstrap_token = None;
            with_token.auth.device_token = Some(token);
            device_only = with_token;
            &device_only
        }
        None => options,
    };
    let established = match handshake(options).await {
        Err(GatewayError::ConnectRejected { error, .. }) if may_retry_with_device_token(&error) && store.is_some() => {
            let saved = store.and_then(DeviceTokenStore::load).filter(|_| options.auth.device_token.is_none());
            let Some(token) = saved else {
                return Err(GatewayError::ConnectRejected { url: options.url.clone(), error });
            };
            info!(url = %options.url, "the gateway refused the shared secret; retrying with this device's token");
            let mut retry = options.clone();
            retry.auth.device_token = Some(token);
            handshake(&retry).await?
        }
        other => other?,
    };
    if let (Some(store), Some(token)) = (store, established.hello.auth.device_token.as_ref())
        && let Err(error) = store.save(token)
    {
        warn!(path = %store.path().display(), %error, "cannot save the device token the gateway issued");
    }
    Ok(established)
}

fn may_retry_with_device_token(error: &ErrorShape) -> bool {
    let details = error.details.as_ref();
    details.and_then(|d| d.get("canRetryWithDeviceToken")).and_then(Value::as_bool) == Some(true)
}

/// Why a link ended.
enum LinkEnd {
    Shutdown,
    TickTimeout(Duration),
    ClosedByGateway { code: u16, reason: String },
    Dropped,
    Failed(tungstenite::Error),
}

impl LinkEnd {
    fn describe(&self) -> String {
        match self {
            LinkEnd::Shutdown => "the client was closed".to_owned(),
            LinkEnd::TickTimeout(window) => {
                format!("no frame from the gateway for {window:?} (twice its tick interval)")
            }
            LinkEnd::ClosedByGateway { code, reason } if reason.is_empty() => {
                format!("the gateway closed the connection (code {code})")
            }
            LinkEnd::ClosedByGateway { code, reason } => {
                format!("the gateway closed the connection (code {code}: {reason})")
            }
            LinkEnd::Dropped => "the connection closed without a close frame".to_owned(),
            LinkEnd::Failed(tungstenite::Error::Capacity(CapacityError::MessageTooLong { size, max_size })) => {
                format!("the gateway sent a {size}-byte frame, over the {max_size}-byte inbound limit")
            }
            LinkEnd::Failed(error) => format!("WebSocket error: {error}"),
        }
    }

    /// The close frame we send, where the protocol has words for the situation.
    fn close_frame(&self) -> Option<CloseFrame> {
        let (code, reason) = match self {
            LinkEnd::Shutdown => (CloseCode::Normal, "client closing"),
            LinkEnd::TickTimeout(_) => (CloseCode::Library(4000), "tick timeout"),
            LinkEnd::Failed(tungstenite::Error::Capacity(_)) => (CloseCode::Size, "message too big"),
            _ => return None,
        };
        Some(CloseFrame { code, reason: reason.into() })
    }
}

async fn drive_link(shared: &Shared, installed: Installed) -> LinkEnd {
    let Installed { link, socket, mut outbound } = installed;
    // A gateway advertising 0 would make every quiet moment a "timeout"; use the default instead.
    let tick = match link.hello.policy.tick_interval_ms {
        0 => DEFAULT_TICK_INTERVAL_MS,
        tick => tick,
    };
    let watchdog = Duration::from_millis(tick.saturating_mul(2));
    let (mut sink, mut stream) = socket.split();
    let end = {
        let reader = async {
            let mut last_seq = None;
            loop {
                let Ok(next) = tokio::time::timeout(watchdog, stream.next()).await else {
                    return LinkEnd::TickTimeout(watchdog);
                };
                match next {
                    None => return LinkEnd::Dropped,
                    Some(Err(error)) => return LinkEnd::Failed(error),
                    Some(Ok(Message::Text(text))) => dispatch(shared, &link, text.as_str(), &mut last_seq),
                    Some(Ok(Message::Binary(bytes))) => {
                        warn!(
                            len = bytes.len(),
                            "skipping a binary frame from the gateway (the protocol is text-only)"
                        );
                    }
                    Some(Ok(Message::Close(frame))) => {
                        let (code, reason) =
                            frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                        return LinkEnd::ClosedByGateway { code, reason };
                    }
                    Some(Ok(_)) => {}
                }
            }
        };
        let writer = async {
            while let Some(message) = outbound.recv().await {
                if let Err(error) = sink.send(message).await {
                    return LinkEnd::Failed(error);
                }
            }
            std::future::pending().await
        };
        tokio::select! {
            end = reader => end,
            end = writer => end,
            () = shared.shutdown.cancelled() => LinkEnd::Shutdown,
        }
    };
    if let Some(frame) = end.close_frame() {
        let goodbye = async {
            sink.send(Message::Close(Some(frame))).await?;
            // Read until the gateway's close reply so the closing handshake completes.
            while let Some(message) = stream.next().await {
                if message?.is_close() {
                    break;
                }
            }
            Ok::<(), tungstenite::Error>(())
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, goodbye).await;
    }
    end
}

fn dispatch(shared: &Shared, link: &Link, text: &str, last_seq: &mut Option<u64>) {
    let frame = match Frame::parse(text) {
        Ok(frame) => frame,
        Err(error) => {
            let preview: String = text.chars().take(120).collect();
            warn!(%error, %preview, "skipping a malformed frame from the gateway");
            return;
        }
    };
    match frame {
        Frame::Res(response) => link.complete(response),
        Frame::Event(event) => {
            if let Some(seq) = event.seq {
                if let Some(last) = *last_seq
                    && seq > last + 1
                {
                    warn!(missed = seq - last - 1, "gateway event sequence gap");
                }
                *last_seq = Some(seq);
            }
            if event.event == "tick" || event.event == "connect.challenge" {
                return;
            }
            shared.emit(GatewayEvent::Event(Arc::new(event)));
        }
        Frame::Req(request) => debug!(method = %request.method, "ignoring a request frame sent by the gateway"),
    }
}
