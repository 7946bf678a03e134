//! `clawmcp-node-gateway`: the node registry served to an OpenClaw gateway as a node, the second
//! transport of the node host beside the loopback MCP server (`clawmcp-http`). Both call the same
//! [`Registry`] commands, so one capability instance, one approval policy and one set of limits
//! answer an MCP `tools/call` and a gateway `node.invoke` alike.
//!
//! # Layout
//!
//! - this file: [`NodeLink`], one node connection: the connect frame derived from the registry,
//!   the event loop (invoke, cancel, pairing events), bounded concurrency, the status watch.
//! - [`invoke`]: one `node.invoke.request` -> command -> `node.invoke.result`.
//! - [`duplex`]: a file command's channel over `node.invoke.progress` / `node.invoke.input`.
//! - [`plugin_tools`]: the registry published as gateway plugin tools (`mcp.tools.call.v1`).
//! - [`status`]: connection and pairing state with the operator's next step.
//! - [`host_stats`]: the `node.host.stats` event.
//!
//! The socket, reconnects, the device key and the device token are `clawmcp-gateway`'s
//! (`GatewayClient::start` with `persistent`: a node waits for its operator instead of giving
//! up).
//!
//! # What the gateway sees (`docs/gateway-protocol.md` §4.2, as the real `openclaw node run`)
//!
//! role `node`, client `{id:"node-host", mode:"node", platform:"linux", deviceFamily:"Linux"}`
//! (the id that receives `node.invoke.cancel`; the pair the Linux command policy keys on), the
//! display name, `caps` = the served categories plus `mcp`, `commands` = the served commands
//! plus `mcp.tools.call.v1`, `pathEnv` = our `PATH`, scopes `[]`, and the signed device proof.
//! The surface is computed when the link starts: a command switched on later (the system-run
//! switch) is declared on the next link.

pub mod duplex;
pub mod host_stats;
pub mod invoke;
pub mod plugin_tools;
pub mod status;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use clawmcp_gateway::{
    BackoffPolicy, ClientOptions, Credentials, DeviceIdentity, DeviceTokenStore, EventFrame, EventSubscription,
    GatewayClient, GatewayError, GatewayEvent, StatusWatch, TlsFingerprint, UpgradeHeader,
};
use clawmcp_mcp::ToolFilter;
use clawmcp_mcp::tool::NodeEvent;
use clawmcp_node::Registry;
use clawmcp_node::capability::{Command, category_of};
use clawmcp_node::events::EventRoute;
use clawmcp_node::files::channel::GatewayChannel;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub use crate::invoke::InvokeEvent;
pub use crate::status::{ConnectionState, GatewayStatus, Pairing};

/// Invocations run at once, as the upstream node's ordinary tool handlers (and our HTTP side).
/// One more is answered `UNAVAILABLE` at once rather than queued behind a long `system.run`.
pub const MAX_CONCURRENT_INVOKES: usize = 16;

/// How long closing waits for running invocations to answer after they were cancelled.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// The surface probe's retry delays while the operator has not approved yet: 0.25 s doubling
/// to 5 s, as the real node host retries.
const PROBE_FIRST_RETRY: Duration = Duration::from_millis(250);
const PROBE_MAX_RETRY: Duration = Duration::from_secs(5);

/// Everything a node connection needs.
pub struct NodeLinkConfig {
    pub url: String,
    pub credentials: Credentials,
    /// The `wss://` gateway's certificate pin, if any.
    pub tls_fingerprint: Option<TlsFingerprint>,
    pub device: Arc<DeviceIdentity>,
    /// Where the issued device token is kept (survives a shared-token rotation).
    pub device_tokens: Option<Arc<DeviceTokenStore>>,
    /// `client.displayName` (`--name`, default the host name).
    pub display_name: String,
    /// `--tools`: the same filter the MCP side applies.
    pub filter: ToolFilter,
    /// `--gateway-header`: extra headers on the upgrade, for a gateway behind an access proxy.
    pub headers: Vec<UpgradeHeader>,
    pub max_concurrent_invokes: usize,
    pub backoff: BackoffPolicy,
}

/// A running node connection. Dropping it without [`NodeLink::close`] stops it too, without
/// waiting for running invocations.
pub struct NodeLink {
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
    /// This link as the registry's route for node events (A2UI actions), while it lives.
    route: Arc<dyn EventRoute>,
}

struct Shared {
    client: GatewayClient,
    registry: Arc<Registry>,
    filter: ToolFilter,
    node_id: String,
    /// The commands declared on this link, in order.
    served: Vec<Command>,
    slots: Arc<Semaphore>,
    max_slots: usize,
    /// Running invocations by gateway invoke id.
    in_flight: Mutex<HashMap<String, CancellationToken>>,
    /// The file channels of running duplex invocations, by invoke id (for `node.invoke.input`).
    transfers: Mutex<HashMap<String, Arc<GatewayChannel>>>,
    status: watch::Sender<GatewayStatus>,
    shutdown: CancellationToken,
}

impl NodeLink {
    /// Starts connecting in the background (the gateway may not be up yet).
    pub fn start(config: NodeLinkConfig, registry: Arc<Registry>) -> NodeLink {
        let served = served_commands(&registry, &config.filter);
        let commands = declared_commands(&served);
        let node_id = config.device.device_id().to_owned();
        let mut options = ClientOptions::node(config.url.clone(), &config.credentials, config.device.clone());
        options.tls_fingerprint.clone_from(&config.tls_fingerprint);
        options.client.display_name = Some(config.display_name.clone());
        options.caps = declared_caps(&served);
        options.commands = Some(commands.clone());
        options.path_env = std::env::var("PATH").ok();
        options.device_tokens = config.device_tokens;
        options.persistent = true;
        options.headers = config.headers;
        options.backoff = config.backoff;
        let client = GatewayClient::start(options);
        // Subscribed before the first connect can complete, so its `Reconnected` is seen.
        let events = client.subscribe();
        let link = client.watch_status();
        let status = GatewayStatus::new(config.url, node_id.clone(), config.display_name, commands);
        let shared = Arc::new(Shared {
            client,
            registry,
            filter: config.filter,
            node_id,
            served,
            slots: Arc::new(Semaphore::new(config.max_concurrent_invokes.max(1))),
            max_slots: config.max_concurrent_invokes.max(1),
            in_flight: Mutex::default(),
            transfers: Mutex::default(),
            status: watch::Sender::new(status),
            shutdown: CancellationToken::new(),
        });
        let task = tokio::spawn(drive(shared.clone(), events, link));
        let route: Arc<dyn EventRoute> = Arc::new(LinkRoute(Arc::downgrade(&shared)));
        shared.registry.events().route_through(route.clone());
        NodeLink { shared, task: Some(task), route }
    }

    /// The state now.
    pub fn status(&self) -> GatewayStatus {
        self.shared.status.borrow().clone()
    }

    /// A watch on [`NodeLink::status`].
    pub fn watch_status(&self) -> watch::Receiver<GatewayStatus> {
        self.shared.status.subscribe()
    }

    /// Whether the commands this link declared at connect are still what the registry serves
    /// the gateway through the filter. The gateway learns a command surface only in `connect`, so
    /// when a switch changes it (system.run off, a capability on) the link must connect again.
    pub fn declares_current_surface(&self) -> bool {
        let now = served_commands(&self.shared.registry, &self.shared.filter);
        now.iter().map(Command::name).eq(self.shared.served.iter().map(Command::name))
    }

    /// Why the link stopped for good on its own (a refusal no operator can resolve: a spent
    /// setup code), if it did. `None` while it runs or retries, and after [`NodeLink::close`].
    pub fn gave_up(&self) -> Option<GatewayError> {
        // Read off the status this link publishes (not the client's own state) so that whoever
        // acts on it also finds the stop, and its hint, in `status()`.
        if self.shared.status.borrow().state != ConnectionState::Stopped {
            return None;
        }
        self.shared.client.stop_reason().filter(|reason| !matches!(reason, GatewayError::Closed))
    }

    /// The gateway client (for requests of the node's own, and tests).
    pub fn client(&self) -> &GatewayClient {
        &self.shared.client
    }

    /// Cancels running invocations, gives them [`CLOSE_GRACE`] to send their answers, then
    /// closes the socket.
    pub async fn close(mut self) {
        self.shared.registry.events().unroute(&self.route);
        self.shared.shutdown.cancel();
        let all = u32::try_from(self.shared.max_slots).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(CLOSE_GRACE, self.shared.slots.acquire_many(all)).await;
        self.shared.client.close().await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for NodeLink {
    fn drop(&mut self) {
        self.shared.registry.events().unroute(&self.route);
        self.shared.shutdown.cancel();
    }
}

/// Node events of the registry's capabilities (an A2UI action's `agent.request`), sent on this
/// link as `node.event` while it is connected.
struct LinkRoute(std::sync::Weak<Shared>);

impl EventRoute for LinkRoute {
    fn send(&self, event: NodeEvent) -> BoxFuture<'static, Result<(), String>> {
        let shared = self.0.upgrade();
        Box::pin(async move {
            let shared = shared.ok_or("the gateway link has closed")?;
            if shared.status.borrow().state != ConnectionState::Connected {
                return Err("the gateway is not connected right now (the node is reconnecting)".to_owned());
            }
            let params = json!({"event": event.event, "payloadJSON": event.payload.to_string()});
            shared.client.request("node.event", params).await.map(drop).map_err(|error| error.to_string())
        })
    }

    fn node_id(&self) -> String {
        self.0.upgrade().map(|shared| shared.node_id.clone()).unwrap_or_default()
    }

    fn gateway_url(&self) -> String {
        self.0.upgrade().map(|shared| shared.status.borrow().url.clone()).unwrap_or_default()
    }
}

/// The commands this node serves to the gateway: what MCP lists through the same filter, less
/// the local-only ones.
fn served_commands(registry: &Registry, filter: &ToolFilter) -> Vec<Command> {
    registry.gateway_surface(filter)
}

fn declared_commands(served: &[Command]) -> Vec<String> {
    let mut commands: Vec<String> = served.iter().map(|command| command.name().to_owned()).collect();
    commands.push(plugin_tools::MCP_TOOLS_CALL.to_owned());
    commands
}

fn declared_caps(served: &[Command]) -> Vec<String> {
    let mut caps: Vec<String> = Vec::new();
    for category in served.iter().map(|command| category_of(command.name())).chain(["mcp"]) {
        if !caps.iter().any(|known| known == category) {
            caps.push(category.to_owned());
        }
    }
    caps
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn drive(shared: Arc<Shared>, mut events: EventSubscription, mut link: StatusWatch) {
    let mut announce: Option<JoinHandle<()>> = None;
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => break,
            alive = link.changed() => {
                let current = link.current();
                shared.status.send_modify(|status| status.observe_link(&current));
                if !alive {
                    break;
                }
            }
            event = events.recv() => match event {
                // The client stopped (it ends the stream after setting its final state): take that
                // state in before leaving, or a stop seen here first would never be published.
                None => {
                    let current = link.current();
                    shared.status.send_modify(|status| status.observe_link(&current));
                    break;
                }
                Some(GatewayEvent::Reconnected { .. }) => {
                    info!(url = %shared.status.borrow().url, node = %shared.node_id, "connected to the gateway as a node");
                    if let Some(previous) = announce.replace(tokio::spawn(announce_surface(shared.clone()))) {
                        previous.abort();
                    }
                }
                Some(GatewayEvent::Disconnected { reason }) => {
                    warn!(%reason, "gateway connection lost; reconnecting");
                    if let Some(previous) = announce.take() {
                        previous.abort();
                    }
                }
                Some(GatewayEvent::Event(frame)) => on_event(&shared, &frame),
                Some(GatewayEvent::Lagged { missed }) => {
                    warn!(missed, "gateway events were dropped before the node read them");
                }
            },
        }
    }
    if let Some(task) = announce {
        task.abort();
    }
}

fn on_event(shared: &Arc<Shared>, frame: &EventFrame) {
    let payload = frame.payload.clone().unwrap_or(Value::Null);
    match frame.event.as_str() {
        "node.invoke.request" => start_invoke(shared, payload),
        "node.invoke.input" => match duplex::parse_input(&payload) {
            Ok((id, seq, frame)) => match lock(&shared.transfers).get(id).cloned() {
                Some(transfer) => {
                    if let Err(reason) = transfer.input(seq, frame) {
                        warn!(invoke = id, %reason, "a gateway transfer broke its protocol and was closed");
                    }
                }
                None => debug!(invoke = id, "input for no running transfer (it ended)"),
            },
            Err(missing) => warn!(missing, "skipping a malformed node.invoke.input"),
        },
        "node.invoke.cancel" => {
            let id = payload.get("invokeId").or_else(|| payload.get("id")).and_then(Value::as_str);
            if let Some(token) = id.and_then(|id| lock(&shared.in_flight).get(id).cloned()) {
                debug!(invoke = id.unwrap_or_default(), "the gateway cancelled an invocation");
                token.cancel();
            }
        }
        "node.pair.resolved" => match payload.get("decision").and_then(Value::as_str) {
            Some("approved") => {
                info!("the operator approved this node's commands");
                shared.status.send_modify(|status| status.observe_pairing(Pairing::Approved));
                let shared = shared.clone();
                tokio::spawn(async move { publish_plugin_tools(&shared).await });
            }
            Some("rejected") => {
                warn!("the operator rejected this node's commands");
                shared.status.send_modify(|status| status.observe_pairing(Pairing::Rejected));
            }
            _ => {}
        },
        _ => {}
    }
}

/// After each connect: report host stats, which also tells whether the surface is approved
/// (while it is not, node methods fail `PAIRING_CHANGED`); retry until it is, then publish the
/// plugin tools.
async fn announce_surface(shared: Arc<Shared>) {
    let mut delay = PROBE_FIRST_RETRY;
    let mut told = false;
    loop {
        let stats = json!({"event": host_stats::HOST_STATS, "payloadJSON": host_stats::read().to_string()});
        match shared.client.request("node.event", stats).await {
            Ok(_) => {
                shared.status.send_modify(|status| status.observe_pairing(Pairing::Approved));
                publish_plugin_tools(&shared).await;
                return;
            }
            Err(error) if awaits_approval(&error) => {
                shared.status.send_modify(|status| status.observe_pairing(Pairing::Pending));
                if !told && let Some(request_id) = surface_request_id(&shared).await {
                    shared.status.send_modify(|status| status.observe_surface_request(request_id));
                }
                if !told {
                    warn!(
                        node = %shared.node_id,
                        "the gateway holds this node's commands until an operator approves them: run `openclaw nodes \
                         pending`, then `openclaw nodes approve <requestId>` on the gateway host (retrying)"
                    );
                    told = true;
                }
            }
            Err(error) => {
                debug!(%error, "node.event failed; the next connect tries again");
                return;
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(PROBE_MAX_RETRY);
    }
}

/// The id of the pending surface request. The gateway names it only in its refusal of
/// `node.runnerInventory.update` (`docs/gateway-protocol.md` §11.2). We host no agent workers, so
/// we declare no runner features: exactly `{protocolFeatures: []}` (the gateway refuses any other
/// key beside an empty list).
async fn surface_request_id(shared: &Shared) -> Option<String> {
    let inventory = json!({"protocolFeatures": []});
    match shared.client.request("node.runnerInventory.update", inventory).await {
        Err(error) => error.error_shape().and_then(|shape| status::approve_request_in(&shape.message)),
        Ok(_) => None,
    }
}

/// The gateway's answer to node methods while the surface waits for `openclaw nodes approve`.
fn awaits_approval(error: &GatewayError) -> bool {
    let Some(shape) = error.error_shape() else { return false };
    shape.detail_code() == Some("PAIRING_CHANGED") || shape.message.contains("awaiting operator approval")
}

/// How often the plugin tools are offered before giving up until the next connect.
const PUBLISH_ATTEMPTS: u32 = 5;

async fn publish_plugin_tools(shared: &Shared) {
    let params = plugin_tools::update_params(&shared.served);
    let mut delay = PROBE_FIRST_RETRY;
    for attempt in 1..=PUBLISH_ATTEMPTS {
        match shared.client.request("node.pluginTools.update", params.clone()).await {
            Ok(_) => return,
            // Right after an approval the gateway may still be settling the surface it just
            // approved ("node pairing changed before request dispatch", UNAVAILABLE): the real
            // node host loses its tools there; we offer them again shortly.
            Err(error) if attempt < PUBLISH_ATTEMPTS && settling(&error) => {
                debug!(%error, attempt, "the gateway was not ready for the plugin tools; offering them again");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(PROBE_MAX_RETRY);
            }
            Err(error) => {
                warn!(%error, "cannot publish the plugin tools; gateway agents reach only the allowlisted commands");
                return;
            }
        }
    }
}

/// A refusal that passes once the gateway has settled the node's pairing.
fn settling(error: &GatewayError) -> bool {
    awaits_approval(error) || error.error_shape().is_some_and(|shape| shape.code == "UNAVAILABLE")
}

fn start_invoke(shared: &Arc<Shared>, payload: Value) {
    let event: InvokeEvent = match serde_json::from_value(payload) {
        Ok(event) => event,
        Err(error) => {
            warn!(%error, "skipping a node.invoke.request without id or command");
            return;
        }
    };
    let shared = shared.clone();
    let Ok(permit) = shared.slots.clone().try_acquire_owned() else {
        let answer = invoke::Answer::Failed {
            code: invoke::UNAVAILABLE.to_owned(),
            message: format!(
                "node busy: {} invocations are running (the limit); retry when one finishes",
                shared.max_slots
            ),
        };
        tokio::spawn(async move { send_result(&shared, &event.id, &answer).await });
        return;
    };
    tokio::spawn(async move {
        let transfer = match open_transfer(&shared, &event) {
            Ok(transfer) => transfer,
            Err(message) => {
                let answer = invoke::Answer::Failed { code: invoke::UNAVAILABLE.to_owned(), message };
                send_result(&shared, &event.id, &answer).await;
                return;
            }
        };
        let cancel = shared.shutdown.child_token();
        lock(&shared.in_flight).insert(event.id.clone(), cancel.clone());
        let work = async {
            let completed = invoke::run(&shared.registry, &shared.filter, &event, cancel, transfer.as_deref()).await;
            if let Some(transfer) = &transfer {
                transfer.command_finished();
            }
            completed
        };
        let completed = match &transfer {
            None => work.await,
            Some(transfer) => {
                let progress = duplex::pump(transfer, |seq, chunk| send_progress(&shared, &event.id, seq, chunk));
                let (completed, ()) = tokio::join!(work, progress);
                lock(&shared.transfers).remove(&event.id);
                completed
            }
        };
        drop(transfer);
        lock(&shared.in_flight).remove(&event.id);
        for note in &completed.events {
            let params = json!({"event": note.event, "payloadJSON": note.payload.to_string()});
            if let Err(error) = shared.client.request("node.event", params).await {
                debug!(%error, event = note.event, "cannot send a node event");
            }
        }
        send_result(&shared, &event.id, &completed.answer).await;
        shared.status.send_modify(|status| status.invokes += 1);
        drop(permit);
    });
}

/// The file channel of a duplex invocation (see [`invoke::wants_duplex`]), registered for its
/// input events; `Ok(None)` for any other invocation or a node serving no file commands.
fn open_transfer(shared: &Shared, event: &InvokeEvent) -> Result<Option<Arc<GatewayChannel>>, String> {
    let Some(channels) = shared.registry.file_channels().filter(|_| invoke::wants_duplex(event)) else {
        return Ok(None);
    };
    let transfer = Arc::new(channels.open_for_gateway(&event.command, &event.id, event.budget())?);
    lock(&shared.transfers).insert(event.id.clone(), transfer.clone());
    Ok(Some(transfer))
}

/// One `node.invoke.progress` of invocation `id`, answered.
async fn send_progress(shared: &Shared, id: &str, seq: u64, chunk: Arc<str>) -> Result<(), String> {
    let params = json!({"invokeId": id, "nodeId": shared.node_id, "seq": seq, "chunk": &*chunk});
    match shared.client.request("node.invoke.progress", params).await {
        Ok(response) => duplex::progress_taken(&response),
        Err(error) => Err(error.to_string()),
    }
}

async fn send_result(shared: &Shared, id: &str, answer: &invoke::Answer) {
    let params = answer.result_params(id, &shared.node_id);
    match shared.client.request("node.invoke.result", params).await {
        Ok(_) => {}
        Err(GatewayError::PayloadTooLarge { size, limit, .. }) => {
            let too_large = invoke::Answer::Failed {
                code: invoke::UNAVAILABLE.to_owned(),
                message: format!("the result is {size} bytes, over the gateway's {limit}-byte frame limit"),
            };
            if let Err(error) =
                shared.client.request("node.invoke.result", too_large.result_params(id, &shared.node_id)).await
            {
                warn!(%error, invoke = id, "cannot send the result of an invocation");
            }
        }
        Err(error) => warn!(%error, invoke = id, "cannot send the result of an invocation"),
    }
}
