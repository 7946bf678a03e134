//! The listener, connections and the request pipeline: bind to 127.0.0.1, admit each
//! connection into the connection budget (see `connections`: who may stay open, for how long,
//! who is evicted when it is full), and take each request through gate, pools, body read and
//! dispatch.
//!
//! One request, in order (`docs/node-http.md` §2):
//! 1. the gate (loopback, browser signals, Host, bearer token) for every verb; an OAuth
//!    discovery `GET` (`/.well-known/oauth-protected-resource`, ...) is answered `404` just
//!    before the token check, so clients with a static bearer header learn there is no OAuth
//!    here (see `gate`);
//! 2. `GET` is the probe, any other verb but `POST` is `405`;
//! 3. media type, declared length;
//! 4. an ingress slot, then the body (size- and time-capped) and its JSON-RPC parse;
//! 5. a tool or control slot by message class, then the dispatcher, under the request deadline;
//! 6. the answer: plain `application/json`, except for a `tools/call` that carries
//!    `params._meta.progressToken` from a client whose `Accept` lists `text/event-stream`.
//!    That one request is answered `200 text/event-stream`: its progress notifications, then its
//!    response, then the end of the stream (see `sse`).
//!
//! Step 6 is the one streamed answer (`docs/node-http.md` §7): the node otherwise answers plain
//! JSON, and this optional upgrade exists for long-running tools, because clients abandon calls
//! that stay silent for about 60 s. It is limited to that one
//! case, runs after every gate check above, holds the same slot and deadline as a plain call,
//! and is served on the same listener; there is still no second listener and no standalone
//! `GET` event stream.
//!
//! The dispatch runs in a task of its own, holding its slot, so that when the client goes away
//! (hyper drops the request's future) the tool is *cancelled and allowed to clean up* instead of
//! being dropped mid-work: a drop guard fires the request's transport token, the dispatcher turns
//! that into cancelling the tool, and the slot stays taken until the tool has really stopped.
//! A streamed answer moves that guard into its body, so leaving mid-stream cancels the same way.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use clawmcp_mcp::jsonrpc::{self, Incoming, RequestId};
use clawmcp_mcp::modern;
use clawmcp_mcp::{
    HttpEra, McpServer, McpService, MessageClass, ProtocolVersion, RequestContext, RpcError, SHUTTING_DOWN, TIMED_OUT,
    ToolResult, TransportEnd,
};
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{Either, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;

use crate::body::read_body;
use crate::coalesce::CoalescedWrites;
use crate::connections::{Admitted, Budget, Check, ConnectionState, ObservedIo, RequestActivity, Stop, Timeouts};
use crate::gate::{self, Refusal, plain_text};
use crate::limits::Limits;
use crate::pools::Pools;
use crate::sse::{self, EventSources, ResponseBody};
use crate::token::{LiveToken, TokenError};

/// What [`bind`] needs.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Port on 127.0.0.1; 0 picks a free one (tests).
    pub port: u16,
    /// The bearer token file, created on first bind if missing or blank.
    pub token_path: PathBuf,
    pub limits: Limits,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error("port {port} on 127.0.0.1 is already in use: stop the other process or pass --port")]
    AddrInUse { port: u16 },
    #[error(
        "permission denied listening on port {port} of 127.0.0.1: ports below 1024 need privileges; pass --port with a higher port"
    )]
    PermissionDenied { port: u16 },
    #[error("cannot listen on port {port} of 127.0.0.1: {source}")]
    Io { port: u16, source: io::Error },
    #[error(transparent)]
    Token(#[from] TokenError),
}

impl BindError {
    fn from_io(port: u16, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::AddrInUse => BindError::AddrInUse { port },
            io::ErrorKind::PermissionDenied => BindError::PermissionDenied { port },
            _ => BindError::Io { port, source },
        }
    }
}

/// Binds 127.0.0.1:`port` (never another interface) and loads or creates the bearer token.
pub async fn bind(config: HttpConfig) -> Result<HttpServer, BindError> {
    let HttpConfig { port, token_path, limits } = config;
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .map_err(|e| BindError::from_io(port, e))?;
    let local_addr = listener.local_addr().map_err(|e| BindError::Io { port, source: e })?;
    let token = Arc::new(LiveToken::load_or_create(&token_path)?);
    Ok(HttpServer { listener, local_addr, token, limits })
}

/// A bound server, ready to [`serve`](HttpServer::serve).
pub struct HttpServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    token: Arc<LiveToken>,
    limits: Limits,
}

/// State every connection and request shares.
struct Shared<S: McpService + ?Sized> {
    mcp: Arc<McpServer<S>>,
    token: Arc<LiveToken>,
    limits: Limits,
    timeouts: Timeouts,
    pools: Pools,
    probe: String,
    /// Parent of every request's transport token; cancelled on shutdown.
    requests: CancellationToken,
    /// Why `requests` was cancelled, for the answers of the calls it stopped (shutdown).
    requests_end: TransportEnd,
    /// Connections and dispatch tasks, so shutdown can wait for them.
    tasks: TaskTracker,
}

/// How a dispatch task ended.
enum Handled {
    /// The dispatcher's frame (`None`: nothing to send back, e.g. a notification).
    Answered(Option<String>),
    /// The handler ignored cancellation past `abandon_after_cancel` and was dropped.
    Abandoned,
}

impl HttpServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://127.0.0.1:<port>/`, what clients are configured with.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/", self.local_addr.port())
    }

    /// Serves until `shutdown` fires; then stops accepting, closes idle connections, cancels
    /// every in-flight request
    /// (tools see their cancel token, callers get `request timed out`), waits up to
    /// `limits.shutdown_grace` for them to answer, and returns. Accept errors (a burst of
    /// EMFILE, an aborted handshake) are logged and retried, never fatal.
    pub async fn serve<S: McpService + ?Sized>(
        self,
        mcp: Arc<McpServer<S>>,
        shutdown: CancellationToken,
    ) -> io::Result<()> {
        let probe = format!("OpenClaw MCP server. POST JSON-RPC to {}", self.endpoint());
        tracing::info!(endpoint = %self.endpoint(), "MCP HTTP server listening");
        let HttpServer { listener, token, limits, .. } = self;
        let budget = Budget::new(&limits);
        let shared = Arc::new(Shared {
            mcp,
            token,
            pools: Pools::new(&limits),
            timeouts: Timeouts::of(&limits),
            limits,
            probe,
            requests: CancellationToken::new(),
            requests_end: TransportEnd::default(),
            tasks: TaskTracker::new(),
        });
        loop {
            // Always accept: waiting for a free place instead (a semaphore before `accept`) is
            // what let silent sockets of a process without the token hold every place. The
            // budget decides who stays.
            let (stream, peer) = tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        accept_backoff(&e).await;
                        continue;
                    }
                },
            };
            let Some(admitted) = budget.admit() else {
                tracing::debug!(%peer, "connection refused: every place is held by a request in progress");
                continue;
            };
            shared.tasks.spawn(serve_connection(shared.clone(), stream, peer, admitted));
            // Let the new connection read the request it has usually sent already: under a flood
            // of accepts it would otherwise still look idle, and be the next one evicted.
            tokio::task::yield_now().await;
        }
        drop(listener);
        budget.shut_down_all();
        shared.requests_end.set(SHUTTING_DOWN);
        shared.requests.cancel();
        shared.tasks.close();
        if tokio::time::timeout(shared.limits.shutdown_grace, shared.tasks.wait()).await.is_err() {
            tracing::warn!(
                grace = ?shared.limits.shutdown_grace,
                "MCP HTTP shutdown: some requests did not finish in time and were left behind"
            );
        }
        Ok(())
    }
}

/// Per-connection accept failures are the client's problem; anything else (out of file
/// descriptors or memory) gets a pause so the loop does not spin while it lasts.
async fn accept_backoff(error: &io::Error) {
    match error.kind() {
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted => {
            tracing::debug!(%error, "accept failed for one connection");
        }
        _ => {
            tracing::warn!(%error, "accept failed; retrying shortly");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// What every request on one connection shares.
struct ConnectionCtx<S: McpService + ?Sized> {
    shared: Arc<Shared<S>>,
    state: Arc<ConnectionState>,
    peer: SocketAddr,
}

/// Serves one connection until it ends, is evicted, misses a deadline of its phase (first byte,
/// head, keep-alive idle; see `connections`), or the server shuts down. hyper's own header
/// timeout is off: the watchdog here covers it, with one timer per connection that is re-armed
/// only when it fires, instead of one allocated and registered per request.
async fn serve_connection<S: McpService + ?Sized>(
    shared: Arc<Shared<S>>,
    stream: TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
) {
    let state = admitted.state().clone();
    let timeouts = shared.timeouts;
    // Each answer goes out whole as soon as it is written. With Nagle's algorithm an answer
    // written while the one before is unacknowledged waits for that ack, which a client delays
    // up to 40 ms: every burst of pipelined requests (the file channel's inputs) stalled on it.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "TCP_NODELAY could not be set");
    }
    let mut builder = http1::Builder::new();
    builder
        .header_read_timeout(None)
        .max_header_size(shared.limits.max_header_bytes)
        .max_headers(shared.limits.max_headers)
        .keep_alive(true);
    let service = {
        let conn = Arc::new(ConnectionCtx { shared, state: state.clone(), peer });
        service_fn(move |request| {
            let conn = conn.clone();
            async move { Ok::<_, Infallible>(respond(&conn, request).await) }
        })
    };
    let connection =
        builder.serve_connection(TokioIo::new(CoalescedWrites::new(ObservedIo::new(stream, state.clone()))), service);
    tokio::pin!(connection);
    let Check::Until(first_check) = state.check(&timeouts, Instant::now()) else { return };
    let watchdog = tokio::time::sleep_until(first_check);
    tokio::pin!(watchdog);
    let mut shutting_down = false;
    let ended = loop {
        tokio::select! {
            biased;
            ended = connection.as_mut() => break ended,
            stop = std::future::poll_fn(|cx| state.poll_stop(cx)), if !shutting_down => match stop {
                Stop::Evicted => {
                    tracing::debug!(%peer, "MCP HTTP connection evicted to admit a new one");
                    return;
                }
                Stop::Shutdown => {
                    // Idle connections close now; busy ones after their (already cancelled)
                    // request. The watchdog still bounds one caught halfway through a head.
                    connection.as_mut().graceful_shutdown();
                    shutting_down = true;
                }
            },
            () = &mut watchdog => match state.check(&timeouts, Instant::now()) {
                Check::Expired => {
                    tracing::debug!(%peer, phase = ?state.phase(), "MCP HTTP connection closed at its deadline");
                    return;
                }
                Check::Until(next) => watchdog.as_mut().reset(next),
            },
        }
    };
    drop(admitted);
    if let Err(error) = ended {
        tracing::debug!(%peer, %error, "MCP HTTP connection ended with an error");
    }
}

async fn respond<S: McpService + ?Sized>(
    conn: &ConnectionCtx<S>,
    request: Request<hyper::body::Incoming>,
) -> Response<ResponseBody> {
    let received = Instant::now();
    let method = request.method().clone();
    // Evicted between reading this head and now: the connection is closing anyway.
    let Some(activity) = conn.state.begin_request() else { return whole(Refusal::Busy.into_response()) };
    answer(conn, request, received, activity).await.unwrap_or_else(|refusal| {
        let peer = conn.peer;
        tracing::debug!(%peer, %method, status = refusal.status().as_u16(), reason = refusal.text(), "request refused");
        whole(refusal.into_response())
    })
}

async fn answer<S: McpService + ?Sized>(
    conn: &ConnectionCtx<S>,
    request: Request<hyper::body::Incoming>,
    received: Instant,
    activity: RequestActivity,
) -> Result<Response<ResponseBody>, Refusal> {
    let shared = &conn.shared;
    let limits = &shared.limits;
    let (head, body) = request.into_parts();
    let headers = gate::Headers::scan(&head.headers);
    let auth_generation = Some(gate::admit(conn.peer.ip(), &head.method, &head.uri, &headers, &shared.token)?);
    // From now on this connection holds a place of the whole budget, not of the small one
    // kept for connections that have not shown the token.
    conn.state.authenticate();
    match head.method {
        // MCP clients open `GET` with `Accept: text/event-stream` for a server-push stream we do
        // not offer; the streamable-HTTP spec says to answer 405 so they carry on without it.
        Method::GET if gate::wants_event_stream(&headers) => return Err(Refusal::MethodNotAllowed),
        Method::GET => return Ok(whole(plain_text(StatusCode::OK, shared.probe.clone()))),
        Method::POST => {}
        _ => return Err(Refusal::MethodNotAllowed),
    }
    gate::require_json(&headers)?;
    // A declared file command (`docs/node-http.md` §12) reads and answers under the file
    // allowance, holding one of the few file envelopes; it must be one of the service's file
    // commands, and (checked once parsed) the body's own tools/call.
    let file_command = gate::file_command(&headers)?.map(str::to_owned);
    if let Some(command) = &file_command
        && !shared.mcp.service().is_file_command(command)
    {
        return Err(Refusal::FileCommandUnknown);
    }
    let (max_body, too_large) = match file_command {
        Some(_) => (limits.file_envelope_bytes, Refusal::FileEnvelopeTooLarge),
        None => (limits.max_body_bytes, Refusal::TooLarge),
    };
    gate::refuse_declared_oversize(&body, max_body).map_err(|_| too_large)?;
    let accepts_event_stream = gate::accepts_event_stream(&headers);
    let protocol_version = gate::protocol_version(&headers);
    let routing = gate::routing_headers(&headers);

    let deadline = received + limits.request_timeout;
    let mut file_envelope = match file_command {
        Some(_) => Some(shared.pools.file_envelope().await?),
        None => None,
    };
    let ingress = shared.pools.ingress().await?;
    let body_deadline = deadline.min(received + limits.body_read_timeout);
    // Shutdown (the parent of every request's token) also ends a body read.
    let body = read_body(body, max_body, body_deadline, &shared.requests)
        .await
        .map_err(|refusal| if refusal == Refusal::TooLarge { too_large } else { refusal })?;
    let message = match jsonrpc::parse(&body) {
        Ok(message) => message,
        Err(rejection) => return Ok(whole(jsonrpc_response(jsonrpc::rejection_frame(rejection)))),
    };
    drop(body);
    drop(ingress);
    if let Some(command) = &file_command {
        match declared_file_call(&message) {
            Some(call) if call.name == *command => {
                // Its bytes go over the file channel: the envelope was only the metadata.
                if call.streams {
                    file_envelope = None;
                }
            }
            _ => return Err(Refusal::FileCommandMismatch),
        }
    }
    let result_allowance = file_envelope.is_some().then_some(limits.file_envelope_bytes);
    let stateless = match shared.mcp.http_era(&message, &routing) {
        HttpEra::Legacy => false,
        HttpEra::Stateless => true,
        HttpEra::Rejected(error) => {
            let id = match &message {
                Incoming::Request { id, .. } => Some(id),
                _ => None,
            };
            let status = modern::http_status_of_error(error.code.code());
            return Ok(whole(with_status(jsonrpc_response(Some(jsonrpc::error_frame(id, &error))), status)));
        }
    };
    drop(head);

    let class = McpServer::<S>::classify(&message);
    // The transport's side of this request. For a tool call it fires at the deadline, on
    // shutdown (parent token), or when hyper drops this future (or a streamed body) because the
    // client went away (the guard). A control request is answered inline at once and dropped
    // with the connection, so it gets a plain token (no parent link: nothing to lock per ping).
    let transport_cancel = match class {
        MessageClass::Tool => shared.requests.child_token(),
        MessageClass::Control => CancellationToken::new(),
    };
    // Only a tool call outlives this future (it runs as a task of its own), so only it needs
    // the guard; held to the end of this function, or moved into a streamed body.
    let mut cancel_on_disconnect = (class == MessageClass::Tool).then(|| transport_cancel.clone().drop_guard());
    let handler_slot = shared.pools.handler(class).await?;
    let streamed_id = match &message {
        Incoming::Request { id, .. } if accepts_event_stream && McpServer::<S>::wants_progress(&message) => {
            Some(id.clone())
        }
        _ => None,
    };
    if let Some(id) = streamed_id
        && let Some(cancel_on_disconnect) = cancel_on_disconnect.take()
    {
        let call = StreamedCall {
            id,
            message,
            transport_cancel,
            deadline,
            slots: (handler_slot, file_envelope),
            protocol_version,
            auth_generation,
            result_allowance,
        };
        return Ok(stream_answer(shared, call, cancel_on_disconnect, activity));
    }
    let dispatch = dispatch_bounded(
        shared.mcp.clone(),
        message,
        RequestContext {
            transport_end: shared.requests_end.clone(),
            protocol_version,
            auth_generation,
            result_allowance,
            ..RequestContext::new(transport_cancel.clone())
        },
        deadline,
        limits.abandon_after_cancel,
        (handler_slot, file_envelope),
    );
    let handled = match class {
        // A tool call runs as its own task: when the client disconnects, hyper drops this
        // future, and the tool must still see the cancellation, stop its work and only then
        // give its slot back.
        MessageClass::Tool => shared.tasks.spawn(dispatch).await.map_err(|error| {
            tracing::error!(%error, "MCP request handler failed");
            Refusal::Internal
        })?,
        // Everything else is answered at once and owns nothing worth finishing for a client
        // that left, so it runs inline: no task spawn on the hot path (`ping` keep-alives).
        MessageClass::Control => dispatch.await,
    };
    match handled {
        Handled::Answered(frame) => {
            // A stateless request's error goes out at its own status (404 for an unknown
            // method, 400 for a malformed request); the legacy era answers every frame at 200.
            let status = match (&frame, stateless) {
                (Some(frame), true) => jsonrpc::error_code_of_frame(frame).map_or(200, modern::http_status_of_error),
                _ => 200,
            };
            Ok(whole(with_status(jsonrpc_response(frame), status)))
        }
        Handled::Abandoned => Err(Refusal::TimedOut),
    }
}

/// A `tools/call` admitted for a streamed answer, with everything a plain call holds.
struct StreamedCall {
    id: RequestId,
    message: Incoming,
    transport_cancel: CancellationToken,
    deadline: Instant,
    slots: Slots,
    protocol_version: Option<ProtocolVersion>,
    auth_generation: Option<u64>,
    result_allowance: Option<usize>,
}

/// What a running message holds: its handler slot and, for a declared unary file command, its
/// file envelope.
type Slots = (OwnedSemaphorePermit, Option<OwnedSemaphorePermit>);

/// The `tools/call` a declared file request must be: its command, and whether it attaches a file
/// channel (its bytes then stream there).
struct DeclaredFileCall {
    name: String,
    streams: bool,
}

fn declared_file_call(message: &Incoming) -> Option<DeclaredFileCall> {
    // Borrowed and skipped, not copied: the arguments may be the whole 24 MiB envelope.
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
        #[serde(rename = "_meta", default, borrow)]
        meta: Option<std::collections::HashMap<std::borrow::Cow<'a, str>, serde::de::IgnoredAny>>,
    }
    let Incoming::Request { method, params: Some(params), .. } = message else { return None };
    if method != "tools/call" {
        return None;
    }
    let params: Params<'_> = serde_json::from_str(params.get()).ok()?;
    let streams = params.meta.is_some_and(|meta| meta.contains_key(clawmcp_mcp::FILE_CHANNEL_EXTENSION));
    Some(DeclaredFileCall { name: params.name.into_owned(), streams })
}

/// Answers a `tools/call` that asked for progress as an event stream (see `sse`). The call runs
/// exactly like a plain one (same slot, deadline, cancellation and abandonment), with a sink for
/// its progress. Headers go out at once; the body carries the disconnect guard, so a client that
/// leaves mid-stream cancels the call. It also carries the connection's busy mark, so a
/// connection streaming an answer is not idle.
fn stream_answer<S: McpService + ?Sized>(
    shared: &Arc<Shared<S>>,
    call: StreamedCall,
    cancel_on_disconnect: DropGuard,
    activity: RequestActivity,
) -> Response<ResponseBody> {
    let StreamedCall {
        id,
        message,
        transport_cancel,
        deadline,
        slots,
        protocol_version,
        auth_generation,
        result_allowance,
    } = call;
    let (sink, progress) = sse::progress_channel();
    let (answer, response) = oneshot::channel();
    // What a plain request would have got as 408 (a handler that ignored cancellation) is, once
    // the 200 is out, the tool error a transport timeout gives.
    let timed_out = jsonrpc::success_frame(&id, &ToolResult::error(TIMED_OUT));
    let fallback = jsonrpc::error_frame(Some(&id), &RpcError::internal());
    let ctx = RequestContext {
        transport_end: shared.requests_end.clone(),
        sink: Some(Arc::new(sink)),
        protocol_version,
        auth_generation,
        result_allowance,
        ..RequestContext::new(transport_cancel)
    };
    let abandon_after = shared.limits.abandon_after_cancel;
    let dispatch = dispatch_bounded(shared.mcp.clone(), message, ctx, deadline, abandon_after, slots);
    shared.tasks.spawn(async move {
        let frame = match dispatch.await {
            Handled::Answered(Some(frame)) => frame,
            // A request is always answered; should that ever change, the fallback is sent.
            Handled::Answered(None) => return,
            Handled::Abandoned => timed_out,
        };
        // Fails only when the client has gone: there is no one left to tell.
        let _ = answer.send(frame);
    });
    sse::event_stream(EventSources { progress, response, fallback }, (cancel_on_disconnect, activity))
}

/// Runs one message through the dispatcher under the request deadline. Holding `_slots` for the
/// whole run keeps a cancelled tool counted until it has actually stopped (and a file envelope
/// held until its result is encoded).
async fn dispatch_bounded<S: McpService + ?Sized>(
    mcp: Arc<McpServer<S>>,
    message: Incoming,
    ctx: RequestContext,
    deadline: Instant,
    abandon_after: Duration,
    _slots: Slots,
) -> Handled {
    let transport_cancel = ctx.transport_cancel.clone();
    let dispatch = mcp.dispatch(message, ctx);
    tokio::pin!(dispatch);
    // Most control requests answer on their first poll: then no deadline timer is created.
    if let Poll::Ready(frame) = std::future::poll_fn(|cx| Poll::Ready(dispatch.as_mut().poll(cx))).await {
        return Handled::Answered(frame);
    }
    tokio::select! {
        biased;
        frame = &mut dispatch => return Handled::Answered(frame),
        _ = tokio::time::sleep_until(deadline) => transport_cancel.cancel(),
        _ = transport_cancel.cancelled() => {}
    }
    // The dispatcher has seen the cancellation too: a tool call now answers `request timed
    // out` once the tool has cleaned up (bounded by the dispatcher's own grace).
    match tokio::time::timeout(abandon_after, dispatch).await {
        Ok(frame) => Handled::Answered(frame),
        Err(_) => {
            tracing::warn!("an MCP request handler ignored cancellation and was abandoned");
            Handled::Abandoned
        }
    }
}

/// `response` with `status`, unless that is 200 (what it has, or `202` for no frame).
fn with_status(mut response: Response<Full<Bytes>>, status: u16) -> Response<Full<Bytes>> {
    if status != 200
        && let Ok(status) = StatusCode::from_u16(status)
    {
        *response.status_mut() = status;
    }
    response
}

/// A whole (non-streamed) response in the body type every response shares.
fn whole(response: Response<Full<Bytes>>) -> Response<ResponseBody> {
    response.map(Either::Left)
}

/// A JSON-RPC frame is `200 application/json`, errors included (TypeScript clients lose the
/// JSON-RPC error of a non-2xx answer); no frame (a notification or a client's response) is
/// `202 Accepted` with an empty body.
fn jsonrpc_response(frame: Option<String>) -> Response<Full<Bytes>> {
    match frame {
        Some(frame) => {
            let mut response = Response::new(Full::new(Bytes::from(frame)));
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        None => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::ACCEPTED;
            response
        }
    }
}
