//! The gateway side of the bridge: one operator connection, its readiness, and the event pump
//! that feeds the live queue, the approval list and the Claude channel.
//!
//! # Connection profile (`docs/serve.md` §1, `src/mcp/channel-bridge.ts` `start()`)
//!
//! `client {id:"cli", mode:"cli", displayName:"OpenClaw MCP"}`, role operator, caps
//! `["approvals"]` (approval events are only delivered to clients that advertise it), scopes
//! `operator.read`, `operator.write`, `operator.approvals` in that order, a persistent device
//! key when the caller gives one (loopback gateways pair it silently; remote ones need one
//! approval), and a 180 s request timeout.
//!
//! # Readiness
//!
//! Ready means `hello-ok` arrived and `sessions.subscribe {}` succeeded (without the
//! subscription the gateway sends no `session.message`). The MCP side is served from the first
//! moment; tools that need the gateway wait for readiness, tools that read local state (the
//! queue, the approval list) do not, as upstream.
//!
//! Unlike upstream, a failed first connect does not end the process (an MCP client would only
//! see "Connection closed"; the reason went to a stderr most clients hide). The session stays
//! up and every tool that needs the gateway answers with the reason and what to do
//! ([`crate::error::gateway_unavailable`]), also logged at WARN:
//! - a gateway that cannot be reached (nothing listening, a handshake that failed, a socket that
//!   closed, a gateway that says `retryable: true`) is tried again with backoff, and the session
//!   connects as soon as it is up;
//! - a refusal only the user can fix (a wrong token, a device that needs pairing, an unanswered
//!   subscription) is not retried: the calls say what to fix, then to restart.
//!
//! # After readiness
//!
//! [`GatewayClient`] reconnects by itself. Server-side subscriptions do not survive a new
//! socket, so on every `Reconnected` the pump re-issues `sessions.subscribe` and records a hole
//! in the queue: events of the outage are lost, and readers get a gap telling them to read
//! durable history (upstream re-subscribes too but records nothing). A subscriber that fell
//! behind our own event buffer (`Lagged`) is recorded the same way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use clawmcp_gateway::backoff::Backoff;
use clawmcp_gateway::{
    BackoffPolicy, ClientOptions, Credentials, DeviceIdentity, EventSubscription, GatewayClient, GatewayError,
    GatewayEvent, HelloOk,
};
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::approvals::{ApprovalKind, PendingApprovals};
use crate::claude::{
    Behavior, ClaudeChannelMode, Delivery, Notifier, PendingPermissions, PermissionRequest, channel_params,
    parse_permission_reply, permission_params,
};
use crate::clock::Clock;
use crate::conversation::event_conversation;
use crate::js::to_text;
use crate::queue::{EventQueue, QueueLimits};

/// `client.displayName` of the real bridge.
pub const CLIENT_DISPLAY_NAME: &str = "OpenClaw MCP";

/// The scopes the real bridge asks for, in the order the device signature covers them.
pub const OPERATOR_SCOPES: [&str; 3] = ["operator.read", "operator.write", "operator.approvals"];

/// The real bridge's gateway request timeout.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(180);

/// How often expired approvals and Claude permission requests are swept (upstream's interval).
pub const PENDING_SWEEP_INTERVAL: Duration = Duration::from_secs(300);

/// The gateway connection options of the real bridge.
pub(crate) fn client_options(
    url: &str,
    credentials: &Credentials,
    device: Option<Arc<DeviceIdentity>>,
    request_timeout: Duration,
) -> ClientOptions {
    let mut options = ClientOptions::operator(url, credentials, &OPERATOR_SCOPES);
    options.client.display_name = Some(CLIENT_DISPLAY_NAME.to_owned());
    options.caps = vec!["approvals".to_owned()];
    options.device = device;
    options.request_timeout = request_timeout;
    options
}

/// Where the connection stands.
#[derive(Clone)]
enum Readiness {
    Connecting {
        last_error: Option<String>,
    },
    Ready(GatewayClient),
    /// The last connect failed; retried in the background or not (the user must act), as the
    /// message, the tool calls' answer, says.
    Failed {
        message: String,
    },
    Closed,
}

pub(crate) struct Bridge {
    mode: ClaudeChannelMode,
    readiness: watch::Sender<Readiness>,
    queue: EventQueue,
    approvals: Mutex<PendingApprovals>,
    permissions: Mutex<PendingPermissions>,
    notifier: Notifier,
    /// Whether the gateway's latest `hello-ok` advertises `chat.message.get` (upstream's
    /// `supportsExactMessageLookup`, refreshed on every handshake).
    exact_message_lookup: AtomicBool,
    clock: Clock,
    /// How long a tool waits for readiness (the request timeout: one budget per call).
    ready_timeout: Duration,
    closed: CancellationToken,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Short critical sections that leave the data consistent even if a holder panicked.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Bridge {
    pub(crate) fn new(
        mode: ClaudeChannelMode,
        queue: QueueLimits,
        notifier: Notifier,
        ready_timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Bridge {
            mode,
            readiness: watch::Sender::new(Readiness::Connecting { last_error: None }),
            queue: EventQueue::new(queue),
            approvals: Mutex::default(),
            permissions: Mutex::default(),
            notifier,
            exact_message_lookup: AtomicBool::new(false),
            clock: Clock::new(),
            ready_timeout,
            closed: CancellationToken::new(),
        })
    }

    pub(crate) fn mode(&self) -> ClaudeChannelMode {
        self.mode
    }

    pub(crate) fn queue(&self) -> &EventQueue {
        &self.queue
    }

    pub(crate) fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    pub(crate) fn supports_exact_message_lookup(&self) -> bool {
        self.exact_message_lookup.load(Ordering::Relaxed)
    }

    fn note_hello(&self, hello: &HelloOk) {
        self.exact_message_lookup.store(hello.advertises_method("chat.message.get"), Ordering::Relaxed);
    }

    /// Connects in the background, then pumps events until [`close`](Self::close).
    /// `credentials` only name where the secret came from, for the hint on a refusal.
    pub(crate) fn start(self: &Arc<Self>, options: ClientOptions, retry: BackoffPolicy, credentials: Credentials) {
        let bridge = self.clone();
        tokio::spawn(async move {
            if let Some((client, events)) = bridge.connect(options, retry, &credentials).await {
                bridge.pump(client, events).await;
            }
        });
    }

    /// The connected client, once ready; waits up to the request timeout. The error is the text
    /// for the tool result.
    pub(crate) async fn ready_client(&self, cancel: &CancellationToken) -> Result<GatewayClient, String> {
        let mut state = self.readiness.subscribe();
        let settled = async { state.wait_for(|s| !matches!(s, Readiness::Connecting { .. })).await.map(|s| s.clone()) };
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(self.ready_timeout, settled) => outcome,
            () = cancel.cancelled() => return Err(clawmcp_mcp::CANCELLED.to_owned()),
        };
        match outcome {
            Ok(Ok(Readiness::Ready(client))) => Ok(client),
            Ok(Ok(Readiness::Failed { message, .. })) => Err(message),
            Ok(Ok(Readiness::Closed) | Err(_)) => Err("the bridge is shutting down".to_owned()),
            Ok(Ok(Readiness::Connecting { .. })) => unreachable!("wait_for skips this state"),
            Err(_) => {
                let last_error = match &*self.readiness.borrow() {
                    Readiness::Connecting { last_error: Some(error) } => error.clone(),
                    _ => "still connecting".to_owned(),
                };
                Err(format!(
                    "the OpenClaw gateway connection is not ready after {}s (last error: {last_error})",
                    self.ready_timeout.as_secs()
                ))
            }
        }
    }

    /// Stops everything: releases waiters, forgets pending approvals and permissions, stops
    /// notifications and closes the gateway connection gracefully. Idempotent.
    pub(crate) async fn close(&self) {
        self.closed.cancel();
        self.queue.close();
        lock(&self.approvals).clear();
        lock(&self.permissions).clear();
        self.notifier.close();
        if let Readiness::Ready(client) = self.readiness.send_replace(Readiness::Closed) {
            client.close().await;
        }
    }

    /// Open approvals, after sweeping expired ones.
    pub(crate) fn open_approvals(&self) -> Vec<Value> {
        lock(&self.approvals).list(self.clock.now_ms())
    }

    /// `notifications/claude/channel/permission_request` from the client.
    pub(crate) fn claude_permission_request(&self, params: Option<&Value>) {
        if !self.mode.enabled() {
            debug!("ignoring a Claude permission request: --claude-channel-mode is off");
            return;
        }
        if self.closed.is_cancelled() {
            return;
        }
        let Some(request) = PermissionRequest::parse(params) else {
            warn!(
                "ignoring a malformed notifications/claude/channel/permission_request (needs request_id, tool_name, description, input_preview as strings)"
            );
            return;
        };
        lock(&self.permissions).track(&request.request_id, self.clock.now_ms());
        self.queue.push(None, request.event_fields());
        debug!(request_id = %request.request_id, "pending Claude permission");
    }

    /// Moves out of `Connecting` unless the bridge was closed meanwhile.
    fn settle(&self, next: Readiness) -> bool {
        self.readiness.send_if_modified(|state| {
            if matches!(state, Readiness::Closed) {
                return false;
            }
            *state = next;
            true
        })
    }

    /// The gateway refused us in a way only the user can fix: every call says so from now on.
    fn fail_for_good(&self, error: &GatewayError, credentials: &Credentials) {
        let message = crate::error::gateway_unavailable(error, credentials, false);
        warn!("{message}");
        self.settle(Readiness::Failed { message });
    }

    async fn connect(
        &self,
        options: ClientOptions,
        retry: BackoffPolicy,
        credentials: &Credentials,
    ) -> Option<(GatewayClient, EventSubscription)> {
        let mut backoff = Backoff::new(retry);
        let mut warned = false;
        let client = loop {
            let attempt = tokio::select! {
                attempt = GatewayClient::connect(options.clone()) => attempt,
                () = self.closed.cancelled() => return None,
            };
            match attempt {
                Ok(client) => break client,
                Err(error) if retryable_at_startup(&error) => {
                    let delay = backoff.next_delay().max(error.retry_after().unwrap_or_default());
                    warn!(%error, ?delay, "the gateway is not ready yet; retrying");
                    self.settle(Readiness::Connecting { last_error: Some(error.to_string()) });
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = self.closed.cancelled() => return None,
                    }
                }
                Err(error) if !needs_the_user(&error) => {
                    let delay = backoff.next_delay();
                    let message = crate::error::gateway_unavailable(&error, credentials, true);
                    if warned {
                        info!(%error, ?delay, "the gateway is still unreachable; retrying");
                    } else {
                        warn!("{message}");
                        warned = true;
                    }
                    self.settle(Readiness::Failed { message });
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = self.closed.cancelled() => return None,
                    }
                }
                Err(error) => {
                    self.fail_for_good(&error, credentials);
                    return None;
                }
            }
        };
        // Subscribe to our own event stream first: nothing the gateway sends after the
        // subscription may be missed.
        let events = client.subscribe();
        let subscribed = tokio::select! {
            subscribed = client.request("sessions.subscribe", json!({})) => subscribed,
            () = self.closed.cancelled() => Err(GatewayError::Closed),
        };
        if let Err(error) = subscribed {
            client.close().await;
            self.fail_for_good(&error, credentials);
            return None;
        }
        if let Some(hello) = client.hello() {
            self.note_hello(&hello);
        }
        warn_about_missing_scopes(&client);
        if !self.settle(Readiness::Ready(client.clone())) {
            client.close().await;
            return None;
        }
        info!("connected to the OpenClaw gateway and subscribed to session events");
        Some((client, events))
    }

    async fn pump(&self, client: GatewayClient, mut events: EventSubscription) {
        let mut sweep =
            tokio::time::interval_at(tokio::time::Instant::now() + PENDING_SWEEP_INTERVAL, PENDING_SWEEP_INTERVAL);
        loop {
            let item = tokio::select! {
                () = self.closed.cancelled() => return,
                _ = sweep.tick() => {
                    self.sweep();
                    continue;
                }
                item = events.recv() => item,
            };
            match item {
                Some(GatewayEvent::Event(frame)) => self.handle_event(&frame.event, frame.payload.as_ref()).await,
                Some(GatewayEvent::Disconnected { reason }) => {
                    warn!(%reason, "lost the gateway connection; live events are missed until it is back");
                }
                Some(GatewayEvent::Reconnected { hello }) => {
                    self.note_hello(&hello);
                    let hole = self.queue.mark_hole();
                    info!(
                        cursor = hole,
                        "reconnected to the gateway; re-subscribing (events of the outage are lost: readers get a gap)"
                    );
                    tokio::spawn(resubscribe(client.clone()));
                }
                Some(GatewayEvent::Lagged { missed }) => {
                    let hole = self.queue.mark_hole();
                    warn!(
                        missed,
                        cursor = hole,
                        "dropped gateway events because the bridge fell behind; readers get a gap"
                    );
                }
                None => {
                    if let Some(reason) = client.stop_reason().filter(|_| !self.closed.is_cancelled()) {
                        warn!(%reason, "the gateway connection stopped; tools will report this error");
                    }
                    return;
                }
            }
        }
    }

    fn sweep(&self) {
        let now = self.clock.now_ms();
        lock(&self.approvals).sweep(now);
        lock(&self.permissions).sweep(now);
    }

    async fn handle_event(&self, event: &str, payload: Option<&Value>) {
        let approval = match event {
            "session.message" => {
                if let Some(payload) = payload {
                    self.handle_session_message(payload).await;
                }
                return;
            }
            "exec.approval.requested" => ("exec_approval_requested", Some(ApprovalKind::Exec)),
            "exec.approval.resolved" => ("exec_approval_resolved", None),
            "plugin.approval.requested" => ("plugin_approval_requested", Some(ApprovalKind::Plugin)),
            "plugin.approval.resolved" => ("plugin_approval_resolved", None),
            _ => return,
        };
        let raw = payload.cloned().unwrap_or_else(|| json!({}));
        let (kind, requested) = approval;
        match requested {
            Some(approval_kind) => lock(&self.approvals).track(approval_kind, &raw, self.clock.now_ms()),
            None => lock(&self.approvals).resolve(&raw),
        }
        let mut fields = Map::new();
        fields.insert("type".into(), kind.into());
        fields.insert("raw".into(), raw);
        self.queue.push(None, fields);
    }

    async fn handle_session_message(&self, payload: &Value) {
        let Some(session_key) = to_text(payload.get("sessionKey")) else { return };
        let conversation = event_conversation(&session_key, payload);
        let message = payload.get("message");
        let role = to_text(message.and_then(|message| message.get("role")));
        let text = message.and_then(first_text_block);
        let is_user = role.as_deref() == Some("user");

        let from_owner = is_user && payload.get("senderIsOwner") == Some(&Value::Bool(true));
        let reply = text.as_deref().filter(|_| from_owner).and_then(parse_permission_reply);
        if let Some((behavior, request_id)) = reply
            && self.is_pending_permission(&request_id)
        {
            self.answer_permission(&request_id, behavior).await;
            return;
        }

        let message_id = to_text(payload.get("messageId"));
        let mut fields = Map::new();
        fields.insert("type".into(), "message".into());
        fields.insert("sessionKey".into(), session_key.clone().into());
        if let Some(conversation) = &conversation {
            fields.insert("conversation".into(), conversation.clone());
        }
        if let Some(message_id) = &message_id {
            fields.insert("messageId".into(), message_id.clone().into());
        }
        if let Some(seq) = payload.get("messageSeq").filter(|seq| seq.is_number()) {
            fields.insert("messageSeq".into(), seq.clone());
        }
        if let Some(role) = &role {
            fields.insert("role".into(), role.clone().into());
        }
        if let Some(text) = &text {
            fields.insert("text".into(), text.clone().into());
        }
        fields.insert("raw".into(), payload.clone());
        self.queue.push(Some(session_key.clone()), fields);

        if let (true, true, Some(conversation)) = (self.mode.enabled(), is_user, &conversation) {
            let params = channel_params(&session_key, conversation, text.as_deref(), message_id.as_deref());
            self.notifier.notify("notifications/claude/channel", &params).await;
        }
    }

    /// Expired requests are never answered, even before the periodic sweep removes them.
    fn is_pending_permission(&self, request_id: &str) -> bool {
        let mut permissions = lock(&self.permissions);
        permissions.sweep(self.clock.now_ms());
        permissions.contains(request_id)
    }

    /// The owner answered a tracked Claude permission request; the entry is forgotten only
    /// once the client has the answer.
    async fn answer_permission(&self, request_id: &str, behavior: Behavior) {
        let params = permission_params(request_id, behavior);
        if self.notifier.notify("notifications/claude/channel/permission", &params).await == Delivery::Delivered {
            lock(&self.permissions).remove(request_id);
        }
    }
}

/// Upstream `extractFirstTextBlock`: string `content`, or the `text` of `content[0]`.
fn first_text_block(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => blocks.first()?.get("text")?.as_str().map(str::to_owned),
        _ => None,
    }
}

/// A failure trying again cannot cure: the gateway refused this client (credentials, pairing,
/// protocol) rather than being unreachable.
fn needs_the_user(error: &GatewayError) -> bool {
    use GatewayError::*;
    matches!(
        error,
        ConnectRejected { .. }
            | ProtocolMismatch { .. }
            | InvalidUrl { .. }
            | BadHandshake { .. }
            | Rejected { .. }
            | Timeout { .. }
            | PayloadTooLarge { .. }
            | InvalidParams { .. }
            | Stopped(_)
    )
}

/// Retried as upstream retries the first connect (`shouldRetryInitialMcpGatewayConnect`): the
/// gateway said so, or the handshake timed out. Calls keep waiting (bounded) through these.
fn retryable_at_startup(error: &GatewayError) -> bool {
    match error {
        GatewayError::ConnectRejected { error, .. } => error.retryable == Some(true),
        GatewayError::HandshakeTimeout { .. } => true,
        _ => false,
    }
}

async fn resubscribe(client: GatewayClient) {
    match client.request("sessions.subscribe", json!({})).await {
        Ok(_) => info!("re-subscribed to session events"),
        Err(error) => {
            warn!(%error, "could not re-subscribe to session events; session messages stop until the next reconnect")
        }
    }
}

/// A gateway may accept the connection but grant fewer scopes (device-less clients off
/// loopback get none); say which tools will fail instead of letting each call discover it.
fn warn_about_missing_scopes(client: &GatewayClient) {
    let Some(hello) = client.hello() else { return };
    let granted = &hello.auth.scopes;
    if granted.iter().any(|scope| scope == "operator.admin") {
        return;
    }
    let missing: Vec<&str> = OPERATOR_SCOPES.into_iter().filter(|scope| !granted.iter().any(|g| g == scope)).collect();
    if !missing.is_empty() {
        warn!(
            ?granted,
            ?missing,
            "the gateway granted fewer scopes than requested: conversations and messages need operator.read, messages_send operator.write, approvals operator.approvals; pair this device or use a loopback gateway"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_text_block_is_upstreams() {
        assert_eq!(first_text_block(&json!({"content": "hi"})).as_deref(), Some("hi"));
        assert_eq!(first_text_block(&json!({"content": ""})).as_deref(), Some(""));
        assert_eq!(
            first_text_block(&json!({"content": [{"type": "text", "text": "a"}, {"text": "b"}]})).as_deref(),
            Some("a")
        );
        assert_eq!(
            first_text_block(&json!({"content": [{"type": "image"}, {"type": "text", "text": "b"}]})),
            None,
            "only content[0]"
        );
        assert_eq!(first_text_block(&json!({"content": []})), None);
        assert_eq!(first_text_block(&json!({"content": 5})), None);
        assert_eq!(first_text_block(&json!("text")), None);
    }

    #[test]
    fn only_retryable_refusals_and_handshake_timeouts_are_retried_at_startup() {
        let rejected = |retryable| {
            let mut error = clawmcp_gateway::ErrorShape::new("UNAVAILABLE", "starting");
            error.retryable = retryable;
            GatewayError::ConnectRejected { url: "ws://127.0.0.1:1".into(), error: Box::new(error) }
        };
        assert!(retryable_at_startup(&rejected(Some(true))));
        assert!(!retryable_at_startup(&rejected(None)));
        assert!(!retryable_at_startup(&rejected(Some(false))));
        let timeout = GatewayError::HandshakeTimeout {
            url: String::new(),
            stage: "connect.challenge",
            waited: Duration::from_secs(15),
        };
        assert!(retryable_at_startup(&timeout));
        let refused = GatewayError::HandshakeClosed { url: String::new(), code: Some(1013), reason: String::new() };
        assert!(!retryable_at_startup(&refused));
    }
}
