//! `clawmcp tools` (`docs/tools-bridge.md`): a stdio MCP server that gives an MCP client the
//! OpenClaw gateway's tools (forwarded to `POST /tools/invoke`), this crate's local coding tools,
//! and `sessions_yield` — a drop-in for the upstream Node bridge: the same environment
//! (`OPENCLAW_*`), the same `openclaw.json` (JSON5), the same tool names and aliases, so an
//! existing client config works by changing only the command.
//!
//! # Layout
//!
//! - [`run`] / [`run_with_io`]: one session, and [`regen`] for `clawmcp tools regen` (this file).
//! - `settings`: the environment variables and the requester agent rule.
//! - `policy`: which tools the gateway runs over HTTP (deny lists, `gateway.tools.*`).
//! - `discovery`: asking the live gateway (`tools.effective`, `attach.grant` → loopback MCP).
//! - `snapshot`: the regen snapshot and the bundled one (`data/`), one format.
//! - `catalog`: merging those into the advertised gateway tools; which source supplies what.
//! - `compat`: upstream aliases, schema overlays, requester hoisting.
//! - `forward`: one `/tools/invoke` call, its deadline, cancellation and error texts; a gateway
//!   tool as a tool that forwards.
//! - `result`: a gateway result as an MCP result (OpenClaw's own mapping).
//! - `pending` + `yielding`: the pending-yield store and `sessions_yield`.
//! - `service`: the `McpService`: every tool in one `ToolSet`, the allowlist and the `--tools`
//!   filter.
//!
//! # Lifecycle
//!
//! Configuration errors (a bad `--url`, an unreadable token file) fail before anything is served;
//! no gateway secret at all is not one of them: the local tools are then served alone, and the
//! gateway's tools are said to be missing and why (`BridgeSettings::gateway_off`). Then the
//! session starts at once on stdin/stdout while discovery runs in the background within
//! [`DISCOVERY_BUDGET`]; gateway calls wait for it at most that long and `tools/list` at most
//! [`LIST_WAIT`], then use the snapshots (a list answered from them is followed by
//! `notifications/tools/list_changed` when the live list arrives and differs). EOF on stdin ends the session: calls are cancelled, the local tools' background
//! jobs are stopped (`LocalTools::shutdown`), and [`run`] returns. Stdout carries JSON-RPC only;
//! logs go through `tracing` (the CLI sends them to stderr).

mod catalog;
mod compat;
mod discovery;
mod forward;
mod pending;
mod policy;
mod result;
mod service;
mod settings;
mod snapshot;
mod yielding;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawmcp_gateway::{ConfigError, GatewayTarget, InvokeError, ToolsInvokeClient, ToolsInvokeOptions};
use clawmcp_mcp::stdio::{self, SessionEnd, WeakOutbound};
use clawmcp_mcp::{DuplicatePolicy, McpServer, ServerInfo};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use clawmcp_gateway::{ConnectOverrides, Env};

pub use catalog::{
    GatewayCatalog, GatewayTool, ListSource, SESSIONS_YIELD, SchemaSource, gateway_annotations, is_proxy_owned,
};
pub use clawmcp_mcp::{ToolFilter, ToolFilterError};
pub use discovery::{DISCOVERY_SCOPES, EffectiveTool, LiveTools, discover};
pub use forward::{ForwardError, Forwarder, PreparedCall};
pub use pending::{MAX_RECORD_BYTES, PENDING_DIR, PENDING_MAX_AGE, PendingRun, PendingStore};
pub use policy::{CODING_SURFACE_TOOLS, DEFAULT_GATEWAY_HTTP_TOOL_DENY, HttpToolPolicy, OWNER_ONLY_TOOLS};
pub use result::tool_result;
pub use service::{CatalogCell, DiscoveryWaits, ToolsBridge, builtin_tools};
pub use settings::{
    Allowlist, BridgeSettings, DEFAULT_AGENT_ID, DEFAULT_GATEWAY_TIMEOUT, MAX_GATEWAY_TIMEOUT, is_agent_scoped,
    normalize_session_key,
};
pub use snapshot::{BUNDLED_OPENCLAW_VERSION, SNAPSHOT_FORMAT, Snapshot, SnapshotError, SnapshotTool};
pub use yielding::{DEFAULT_POLL_INTERVAL, DEFAULT_YIELD_WAIT, MAX_YIELD_WAIT, parse_subagent_list, spawned_run_id};

use crate::{LocalTools, Workspace};

/// How long discovery may take, and so how long a gateway call can wait for it.
pub const DISCOVERY_BUDGET: Duration = Duration::from_secs(5);

/// How long a `tools/list` waits for discovery. The real gateway answers in about a second (a
/// seeded 2026.9.6 on a 2-core machine: 0.2-1 s);
/// a slower one does not hold the client's first list: it gets the snapshot list, then
/// `notifications/tools/list_changed` once the live list is in and differs.
pub const LIST_WAIT: Duration = Duration::from_secs(3);

/// `serverInfo.name`.
pub const SERVER_NAME: &str = "clawmcp-tools";

/// The regen snapshot's file name in the clawmcp data directory.
pub const SNAPSHOT_FILE: &str = "tools-snapshot.json";

/// Everything one session needs.
#[derive(Debug, Clone)]
pub struct BridgeOptions {
    /// `--url`, `--token-file`.
    pub connect: ConnectOverrides,
    /// The environment the `OPENCLAW_*` variables and the config path come from.
    pub env: Env,
    /// Where `clawmcp tools regen` writes (and the server reads) the regen snapshot.
    pub snapshot_path: Option<PathBuf>,
    /// The root relative paths of the local tools resolve against (the process's cwd, where
    /// an MCP client starts its servers, as the upstream bridge did).
    pub local_root: PathBuf,
    /// Ask the gateway for its tools (off: snapshots only).
    pub discover: bool,
    pub discovery_budget: Duration,
    /// How long a `tools/list` waits for discovery (at most the budget); see [`LIST_WAIT`].
    pub list_wait: Duration,
    /// `sessions_yield`'s poll interval.
    pub poll_interval: Duration,
    /// `--tools`: serve only the tools these globs match (and `OPENCLAW_MCP_ENABLED_TOOLS`
    /// allows).
    pub tool_filter: ToolFilter,
}

impl BridgeOptions {
    pub fn new(connect: ConnectOverrides, env: Env, local_root: PathBuf) -> Self {
        BridgeOptions {
            connect,
            env,
            snapshot_path: None,
            local_root,
            discover: true,
            discovery_budget: DISCOVERY_BUDGET,
            list_wait: LIST_WAIT,
            poll_interval: DEFAULT_POLL_INTERVAL,
            tool_filter: ToolFilter::all(),
        }
    }
}

/// A failure before or while serving.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot use the gateway URL: {0}")]
    Invoke(#[from] InvokeError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error("{0}")]
    Transport(String),
    #[error(
        "could not read the tool list from the gateway at {url}: {problems}. Is the gateway running, and does \
         the secret grant operator.read (tools.effective) and operator.admin (attach.grant)?"
    )]
    Discovery { url: String, problems: String },
}

/// A bridge and what it needs at run time, before serving.
pub struct Prepared {
    pub bridge: Arc<ToolsBridge>,
    pub target: GatewayTarget,
    pub settings: Arc<BridgeSettings>,
    regen: Option<Snapshot>,
    policy: HttpToolPolicy,
}

/// Resolves the gateway, reads the settings and snapshots, builds the service (not yet
/// discovering).
pub fn prepare(options: &BridgeOptions) -> Result<Prepared, BridgeError> {
    let connect = ConnectOverrides { credentials_optional: true, ..options.connect.clone() };
    let target = GatewayTarget::resolve(&connect, &options.env)?;
    let gateway_off = target.missing_credentials.as_ref().map(|why| format!("no gateway credentials: {why}"));
    if let Some(why) = &gateway_off {
        warn!(
            "clawmcp tools: serving the local tools only ({}); the gateway's tools are not served: {why}",
            crate::local_tool_names().join(", ")
        );
    }
    let settings = Arc::new(BridgeSettings {
        tool_filter: options.tool_filter.clone(),
        gateway_off,
        ..BridgeSettings::from_env(&options.env, &target.config)
    });
    let policy = HttpToolPolicy::from_config(&target.config);
    let regen = match options.snapshot_path.as_deref().map(Snapshot::load).transpose() {
        Ok(found) => found.flatten(),
        Err(error) => {
            warn!(%error, "ignoring the regen snapshot; using the bundled one");
            None
        }
    };
    let catalog = Arc::new(match (&settings.gateway_off, options.discover) {
        // Nothing to ask and nothing a call could reach: no gateway tool is listed.
        (Some(_), _) => CatalogCell::settled(GatewayCatalog::none()),
        (None, true) => CatalogCell::new(GatewayCatalog::build(None, regen.as_ref(), Snapshot::bundled(), &policy)),
        (None, false) => {
            CatalogCell::settled(GatewayCatalog::build(None, regen.as_ref(), Snapshot::bundled(), &policy))
        }
    });
    let invoke_options = ToolsInvokeOptions { deadline: settings.gateway_timeout, ..ToolsInvokeOptions::default() };
    let client = ToolsInvokeClient::new(&target.url, bearer(&target).as_ref(), invoke_options)?;
    let forwarder = Forwarder::new(client, settings.clone());
    let local = LocalTools::new(Workspace::new(&options.local_root));
    let bridge = Arc::new(ToolsBridge::new(
        settings.clone(),
        local,
        forwarder,
        catalog,
        DiscoveryWaits { list: options.list_wait.min(options.discovery_budget), call: options.discovery_budget },
        options.poll_interval,
    ));
    Ok(Prepared { bridge, target, settings, regen, policy })
}

/// The `Authorization: Bearer` secret: the password when `gateway.auth.mode` is `password`
/// (the gateway compares the bearer with the secret of its mode), else the token.
fn bearer(target: &GatewayTarget) -> Option<clawmcp_gateway::Secret> {
    let credentials = &target.credentials;
    let password_mode = target.config.get_str("gateway.auth.mode") == Some("password");
    let preferred = if password_mode { credentials.password.as_ref() } else { credentials.token.as_ref() };
    preferred.or(credentials.bearer()).cloned()
}

impl Prepared {
    /// Starts the background discovery that settles the catalog (at once when disabled), then
    /// warns about `--tools` patterns that match none of the tools finally known.
    ///
    /// `session`, when given, is told `notifications/tools/list_changed` if a list was already
    /// answered from the snapshot and the live catalog differs.
    pub fn start_discovery(
        &self,
        options: &BridgeOptions,
        session: Option<WeakOutbound>,
    ) -> tokio::task::JoinHandle<()> {
        let (target, settings, regen, policy) =
            (self.target.clone(), self.settings.clone(), self.regen.clone(), self.policy.clone());
        let bridge = self.bridge.clone();
        let cell = self.bridge.catalog().clone();
        let (enabled, budget) = (options.discover && self.settings.gateway_off.is_none(), options.discovery_budget);
        tokio::spawn(async move {
            if !enabled {
                cell.settle(None);
                bridge.warn_unmatched_tool_patterns();
                return;
            }
            let key = settings.discovery_session_key();
            let live = discover(&target, &key, settings.agent_id_for(Some(&key)), budget).await;
            if live.is_empty() {
                // Nothing live: the session serves a recorded list, and every gateway call will
                // fail the same way. Said where a user looks (WARN), with what to check.
                warn!(
                    "clawmcp tools: the gateway at {} could not be asked for its tools ({}); serving the recorded \
                     list. Check that the gateway is running (openclaw gateway status) and the credentials \
                     (--token-file, OPENCLAW_GATEWAY_TOKEN or openclaw.json); calls are sent to it anyway",
                    target.url,
                    live.problems.join("; ")
                );
            } else {
                for problem in &live.problems {
                    info!(problem = problem.as_str(), "gateway tool discovery");
                }
            }
            let discovered = (!live.is_empty())
                .then(|| GatewayCatalog::build(Some(&live), regen.as_ref(), Snapshot::bundled(), &policy));
            let catalog = discovered.as_ref().unwrap_or(&cell.current()).describe();
            info!("clawmcp tools: {catalog}");
            let stale_list = cell.settle(discovered);
            bridge.warn_unmatched_tool_patterns();
            if let (true, Some(session)) = (stale_list, session.as_ref().and_then(WeakOutbound::upgrade)) {
                info!("the live gateway tool list differs from the one already served: sending list_changed");
                // Fails only when the session is over, when no one is left to tell.
                let _ = session.notify("notifications/tools/list_changed", &serde_json::json!({})).await;
            }
        })
    }
}

/// Serves on this process's stdin and stdout until EOF or `shutdown`.
pub async fn run(options: BridgeOptions, shutdown: CancellationToken) -> Result<(), BridgeError> {
    run_with_io(options, tokio::io::stdin(), tokio::io::stdout(), shutdown).await
}

/// [`run`] over any byte streams (tests use in-memory pipes).
pub async fn run_with_io<R, W>(
    options: BridgeOptions,
    input: R,
    output: W,
    shutdown: CancellationToken,
) -> Result<(), BridgeError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let prepared = prepare(&options)?;
    // Two different directories, named as such: the local tools resolve relative paths against
    // the directory the client started us in; OPENCLAW_WORKSPACE (or openclaw.json's) only holds
    // sessions_yield's pending state, and need not exist until a yield is recorded.
    info!(
        url = %prepared.target.url,
        local_tools_root = %options.local_root.display(),
        yield_state = %prepared.settings.workspace.join(pending::PENDING_DIR).display(),
        "clawmcp tools: serving on stdio"
    );
    let (outbound, outbound_rx) = stdio::outbound_channel();
    let discovery = prepared.start_discovery(&options, Some(outbound.downgrade()));
    let bridge = prepared.bridge.clone();
    let info = ServerInfo { name: SERVER_NAME.to_owned(), version: env!("CARGO_PKG_VERSION").to_owned() };
    let server = Arc::new(
        McpServer::new(info, bridge.clone(), DuplicatePolicy::Reject)
            .for_one_session()
            .with_icons(vec![clawmcp_mcp::Icon::clawmcp()]),
    );
    let end = stdio::serve(server, input, output, outbound, outbound_rx, shutdown).await;
    discovery.abort();
    bridge.local().shutdown().await;
    match end {
        SessionEnd::InputClosed | SessionEnd::Shutdown => Ok(()),
        SessionEnd::OutputFailed(error) => Err(BridgeError::Transport(format!("writing to stdout: {error}"))),
        SessionEnd::InputFailed(error) => Err(BridgeError::Transport(format!("reading stdin: {error}"))),
    }
}

/// What `clawmcp tools regen` did.
#[derive(Debug, Clone)]
pub struct RegenReport {
    pub path: PathBuf,
    pub catalog: GatewayCatalog,
    pub problems: Vec<String>,
}

/// Asks the running gateway for its tools and writes the regen snapshot to `path`. Fails when
/// the gateway gave no tool list at all (a snapshot of the bundled list would be a lie).
pub async fn regen(options: &BridgeOptions, path: PathBuf) -> Result<RegenReport, BridgeError> {
    let target = GatewayTarget::resolve(&options.connect, &options.env)?;
    let settings = BridgeSettings::from_env(&options.env, &target.config);
    let policy = HttpToolPolicy::from_config(&target.config);
    let key = settings.discovery_session_key();
    let live = discover(&target, &key, settings.agent_id_for(Some(&key)), options.discovery_budget).await;
    if live.is_empty() {
        return Err(BridgeError::Discovery { url: target.url.clone(), problems: live.problems.join("; ") });
    }
    // The previous regen snapshot is not a source here: each regen starts from the gateway.
    let catalog = GatewayCatalog::build(Some(&live), None, Snapshot::bundled(), &policy);
    let snapshot = Snapshot {
        format: SNAPSHOT_FORMAT,
        openclaw_version: catalog.gateway_version.clone().unwrap_or_default(),
        generated_at: OffsetDateTime::now_utc().format(&Rfc3339).ok(),
        source: format!("clawmcp tools regen from {} ({:?} list)", target.url, catalog.list_source),
        tools: catalog.tools.iter().map(GatewayTool::to_snapshot_tool).collect(),
    };
    snapshot.save(&path)?;
    Ok(RegenReport { path, catalog, problems: live.problems })
}
