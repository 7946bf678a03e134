//! `clawmcp node`: the node host. One registry, two transports, chosen by the mode matrix of
//! settings.json (the upstream tray's keys): `EnableMcpServer` serves the capabilities as MCP tools
//! on `http://127.0.0.1:<port>/` (no gateway, no account, no pairing); `EnableNodeMode` connects to
//! an OpenClaw gateway as a node (`clawmcp-node-gateway`). Both, either, or neither (then there is
//! nothing to serve, and the error says how to turn one on).
//!
//! Wiring only: the capabilities live in `clawmcp-node`, the transports in `clawmcp-http` and
//! `clawmcp-node-gateway`. What runs is reported in `node-status.json` for `clawmcp node
//! status`. SIGINT/SIGTERM shut down gracefully (in-flight calls are cancelled within a bound).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clawmcp_gateway::{
    BackoffPolicy, ConnectOverrides, DeviceIdentity, DeviceTokenStore, Env, GatewayError, GatewayTarget, Role, Secret,
    SetupCode, TlsFingerprint, UpgradeHeader,
};
use clawmcp_http::{HttpConfig, Limits};
use clawmcp_mcp::{DuplicatePolicy, McpServer, ServerInfo, VersionRule, WireStyle};
use clawmcp_node::approvals::{ApprovalsApi, ExecApprovals};
use clawmcp_node::registry::ToolFilter;
use clawmcp_node::settings::{DataDir, LiveSettings, Settings};
use clawmcp_node::system::sandbox;
use clawmcp_node::{NodeMcpService, Registry};
use clawmcp_node_gateway::status::GatewayStatus;
use clawmcp_node_gateway::{NodeLink, NodeLinkConfig};
use tokio_util::sync::CancellationToken;

use crate::args::{GatewayNodeArgs, NodeAction, NodeArgs};
use crate::commands::{data_dir, node_app, node_service, node_status, stop_on_signal};
use crate::exit::UsageError;
use crate::output;

/// `serverInfo.name` in `initialize`.
pub const SERVER_NAME: &str = "clawmcp-node";

pub fn run(args: NodeArgs, matches: &clap::ArgMatches) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(NodeAction::Status(status)) => return node_status::run(status),
        Some(NodeAction::Service(service)) => {
            return node_service::run(service.action, matches, &data_dir(&args.data_dir)?);
        }
        None => {}
    }
    let filter = ToolFilter::parse(args.tools.as_deref().unwrap_or_default()).map_err(|e| UsageError(e.to_string()))?;
    let data = data_dir(&args.data_dir)?;
    data.ensure()?;
    // Gateway flags turn node mode on; the connection is resolved before anything is saved or
    // started, so a URL or secret that cannot work is a startup error and never lands in
    // settings.json.
    let saved = Settings::load(&data.settings_path())?;
    let node_mode = args.gateway.any() || saved.enable_node_mode;
    if !saved.enable_mcp_server && !node_mode {
        anyhow::bail!(
            "nothing to serve: both the local MCP server (EnableMcpServer) and gateway node mode (EnableNodeMode) are \
             off in {}\nhint: `clawmcp settings set EnableMcpServer true` for local MCP clients, or `clawmcp node \
             --gateway-url ws://HOST:18789 --gateway-token-file FILE` to join a gateway",
            data.settings_path().display()
        );
    }
    let gateway = match node_mode {
        true => Some(gateway_link_config(&args.gateway, &saved, &data, filter.clone())?),
        false => None,
    };
    if args.gateway.any() {
        save_gateway_settings(&data.settings_path(), &args.gateway, gateway.as_ref())?;
    }
    // The setup code's bootstrap token is single-use: from here on the gateway is the saved URL
    // and pin, and the credential the device token it issues.
    let mut args = args;
    let link_from_pair_flag = args.gateway.pair.take().is_some();
    let settings = Arc::new(LiveSettings::open(data.settings_path())?);
    let mode = settings.current();

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let approvals = Arc::new(
            ExecApprovals::open(data.exec_approvals_path())
                .with_prompt_timeout(Duration::from_millis(args.approval_timeout_ms)),
        );
        let registry = Arc::new(Registry::builtin(settings.clone(), approvals.clone()));
        let reporter = node_status::Reporter::new(data.status_path(), registry.clone());
        let (control, mut controls) = tokio::sync::mpsc::channel(8);
        // The gateway flags in force: the start's, until an app tool moves the node to another
        // gateway. The node link and the app tools' operator connection both resolve from them.
        let gateway_args = Arc::new(std::sync::Mutex::new(args.gateway.clone()));
        let operator = {
            let (args, data) = (gateway_args.clone(), data.clone());
            node_app::OperatorAccess::new(move || {
                let settings = Settings::load(&data.settings_path()).map_err(|error| error.to_string())?;
                let args = args.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                let link = gateway_link_config(&args, &settings, &data, ToolFilter::all())
                    .map_err(|error| format!("the gateway cannot be reached as configured: {error:#}"))?;
                // Its own key, never the node's: one key paired in two roles needs a new approval.
                let dir = data.operator_dir();
                let device = DeviceIdentity::load_or_create(&dir)
                    .map_err(|error| format!("cannot load the operator device identity of the app tools: {error}"))?;
                Ok(node_app::OperatorTarget {
                    device_tokens: Arc::new(DeviceTokenStore::new(&dir, &link.url, Role::Operator)),
                    url: link.url,
                    credentials: link.credentials,
                    tls_fingerprint: link.tls_fingerprint,
                    headers: link.headers,
                    device: Arc::new(device),
                })
            })
        };
        let operator = Arc::new(operator);
        registry.register_commands(node_app::commands(node_app::AppContext {
            status: reporter.view(),
            settings: settings.clone(),
            control,
            registry: Arc::downgrade(&registry),
            operator: operator.clone(),
        }));
        check_filter(&registry, &filter)?;
        let filter_for_gateway = filter.clone();
        let service = NodeMcpService::new(registry.clone())
            .with_filter(filter)
            .with_local_methods(Arc::new(ApprovalsApi(approvals)))
            // This service is served only by the HTTP listener below: the file channel's home.
            .with_file_channel();
        let info = ServerInfo { name: SERVER_NAME.into(), version: env!("CARGO_PKG_VERSION").into() };
        let mut wire = WireStyle::NEGOTIATING;
        if let Some(version) = args.pin_protocol_version {
            wire.versions = VersionRule::Pinned(version);
        }
        let mcp = Arc::new(
            McpServer::new(info, Arc::new(service), DuplicatePolicy::Allow)
                .with_wire(wire)
                .with_icons(vec![clawmcp_mcp::Icon::clawmcp()]),
        );

        let server = match mode.enable_mcp_server {
            true => {
                let config = HttpConfig { port: args.port, token_path: data.token_path(), limits: Limits::default() };
                Some(clawmcp_http::bind(config).await.context("cannot start the MCP server")?)
            }
            false => None,
        };
        let endpoint = server.as_ref().map(|server| server.endpoint().to_string());
        match (&endpoint, &gateway) {
            (Some(endpoint), None) => output::note(&format!(
                "clawmcp node: MCP-only mode (no gateway); serving MCP on {endpoint}\n  token file: {}\n  data dir: {}",
                data.token_path().display(),
                data.root().display()
            )),
            (Some(endpoint), Some(link)) => output::note(&format!(
                "clawmcp node: serving MCP on {endpoint} and joining the gateway at {} as node `{}`\n  token \
                 file: {}\n  data dir: {}",
                link.url,
                link.display_name,
                data.token_path().display(),
                data.root().display()
            )),
            (None, Some(link)) => output::note(&format!(
                "clawmcp node: gateway node mode only (EnableMcpServer is off); joining the gateway at {} as node \
                 `{}`\n  data dir: {}",
                link.url,
                link.display_name,
                data.root().display()
            )),
            (None, None) => unreachable!("checked above: one transport is on"),
        }

        // What the sandbox holds on this kernel, once at start (upstream warns the same way when
        // it runs commands uncontained). The settings are read live: this is the start's view.
        let sandbox = settings.current().system_run_sandbox;
        if sandbox.enabled {
            output::note(&format!("system.run sandbox:\n  {}", sandbox::summary(&sandbox).join("\n  ")));
        } else {
            output::note(
                "warning: system.run runs commands uncontained (SystemRunSandbox is off): \
                 `clawmcp doctor` shows what the sandbox would hold here, \
                 `clawmcp settings set SystemRunSandbox.Enabled true` turns it on",
            );
        }

        let shutdown = CancellationToken::new();
        stop_on_signal(shutdown.clone(), Some("clawmcp node: shutting down"));
        let mut transports = Transports {
            mcp,
            registry,
            data,
            port: args.port,
            gateway_args,
            operator,
            filter: filter_for_gateway,
            listener: None,
            link: None,
            reporter,
            gateway_error: None,
            link_from_pair_flag,
        };
        if let Some(server) = server {
            transports.serve(server);
        }
        if let Some(config) = gateway {
            transports.link = Some(NodeLink::start(config, transports.registry.clone()));
        }
        transports.report();
        // The mode matrix is live: `clawmcp settings set EnableNodeMode|EnableMcpServer` on a
        // running node starts or stops that transport within one poll (one `stat` per poll).
        let outcome = loop {
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = tokio::time::sleep(SETTINGS_POLL) => {}
                Some(control) = controls.recv() => {
                    transports.obey(control).await;
                    continue;
                }
            }
            if let Some(failed) = transports.listener_failed().await {
                break failed;
            }
            if let Some(ended) = transports.node_mode_ended() {
                break Err(ended);
            }
            transports.reconcile(&settings.current()).await;
        };
        let registry = transports.registry.clone();
        transports.stop().await;
        // The canvas's browser (a process tree of its own) ends with the node.
        registry.shutdown().await;
        outcome?;
        output::note("clawmcp node: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// How often a running node looks at settings.json for a mode change.
const SETTINGS_POLL: Duration = Duration::from_millis(500);

/// The node's transports as they run right now, started and stopped as the mode matrix says.
struct Transports {
    mcp: Arc<McpServer<NodeMcpService>>,
    registry: Arc<Registry>,
    data: DataDir,
    port: u16,
    /// The gateway flags in force (shared with the operator connection's resolver).
    gateway_args: Arc<std::sync::Mutex<GatewayNodeArgs>>,
    /// The app tools' operator connection, forgotten when the node moves to another gateway.
    operator: Arc<node_app::OperatorAccess>,
    filter: ToolFilter,
    /// The MCP listener: its endpoint, stop switch and task.
    listener: Option<(String, CancellationToken, tokio::task::JoinHandle<std::io::Result<()>>)>,
    link: Option<NodeLink>,
    reporter: node_status::Reporter,
    /// The last reason node mode could not start (logged once per distinct reason).
    gateway_error: Option<String>,
    /// Whether the link was started from `--pair`: its spent code ends the node (the person at
    /// the terminal must get a new one), while a code an app tool applied ends only that link.
    link_from_pair_flag: bool,
}

impl Transports {
    fn gateway_args(&self) -> GatewayNodeArgs {
        self.gateway_args.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn serve(&mut self, server: clawmcp_http::HttpServer) {
        let endpoint = server.endpoint();
        let stop = CancellationToken::new();
        let task = tokio::spawn(server.serve(self.mcp.clone(), stop.clone()));
        self.listener = Some((endpoint, stop, task));
    }

    fn report(&mut self) {
        let endpoint = self.listener.as_ref().map(|(endpoint, _, _)| endpoint.clone());
        self.reporter.update(endpoint, self.link.as_ref());
    }

    /// The listener's error if it stopped on its own (it only does on a fatal error).
    async fn listener_failed(&mut self) -> Option<anyhow::Result<()>> {
        if !self.listener.as_ref().is_some_and(|(_, _, task)| task.is_finished()) {
            return None;
        }
        let (_, _, task) = self.listener.take()?;
        Some(match task.await {
            Ok(result) => result.context("the MCP server failed"),
            Err(error) => Err(anyhow::anyhow!("the MCP server task failed: {error}")),
        })
    }

    /// The error node mode ends with when the gateway refused the setup code of `--pair` (spent,
    /// expired or revoked). The real node host exits there too: retrying a code that admits one
    /// device once only fills the gateway's log, and the person who pasted it must get a new one.
    fn node_mode_ended(&self) -> Option<anyhow::Error> {
        let link = self.link.as_ref().filter(|_| self.link_from_pair_flag)?;
        let reason = link.gave_up().filter(GatewayError::is_spent_setup_code)?;
        // The gateway's own refusal, not the client's "stopped reconnecting" wrapper around it.
        let refusal = match &reason {
            GatewayError::Stopped(refusal) => refusal.as_ref(),
            other => other,
        };
        let advice = clawmcp_node_gateway::status::spent_setup_code_advice(&link.status().url);
        Some(anyhow::anyhow!("gateway node mode ended: {advice}\n  {refusal}"))
    }

    /// Starts or stops each transport to match `settings`. A transport that cannot start is
    /// reported (log and status) and retried at the next change; nothing else stops.
    async fn reconcile(&mut self, settings: &Settings) {
        let mut changed = false;
        match (settings.enable_mcp_server, self.listener.is_some()) {
            (true, false) => {
                let config =
                    HttpConfig { port: self.port, token_path: self.data.token_path(), limits: Limits::default() };
                match clawmcp_http::bind(config).await {
                    Ok(server) => {
                        output::note(&format!(
                            "clawmcp node: EnableMcpServer is on: serving MCP on {}",
                            server.endpoint()
                        ));
                        self.serve(server);
                        changed = true;
                    }
                    Err(error) => tracing::warn!(%error, "EnableMcpServer is on, but the MCP server cannot start"),
                }
            }
            (false, true) => {
                if let Some((endpoint, stop, task)) = self.listener.take() {
                    self.end_file_transfers("EnableMcpServer was turned off");
                    stop.cancel();
                    let _ = task.await;
                    output::note(&format!("clawmcp node: EnableMcpServer is off: stopped serving MCP on {endpoint}"));
                    changed = true;
                }
            }
            _ => {}
        }
        match (settings.enable_node_mode, self.link.is_some()) {
            (true, false) => match gateway_link_config(&self.gateway_args(), settings, &self.data, self.filter.clone())
            {
                Ok(config) => {
                    output::note(&format!(
                        "clawmcp node: EnableNodeMode is on: joining the gateway at {} as node `{}`",
                        config.url, config.display_name
                    ));
                    self.link = Some(NodeLink::start(config, self.registry.clone()));
                    self.gateway_error = None;
                    changed = true;
                }
                Err(error) => {
                    let reason = format!("{error:#}");
                    if self.gateway_error.as_deref() != Some(reason.as_str()) {
                        tracing::warn!("EnableNodeMode is on, but node mode cannot start: {reason}");
                        self.gateway_error = Some(reason);
                    }
                }
            },
            (false, true) => {
                if let Some(link) = self.link.take() {
                    link.close().await;
                    output::note("clawmcp node: EnableNodeMode is off: left the gateway");
                    changed = true;
                }
            }
            _ => {}
        }
        if changed {
            self.report();
        }
        // The gateway learns the command surface only at connect: a switch that changed it
        // (system.run off, a capability on) means connecting again to declare it.
        if self.link.as_ref().is_some_and(|link| !link.declares_current_surface())
            && let Err(error) = self.rejoin("the command surface changed").await
        {
            tracing::warn!("{error}");
        }
    }

    /// What an `app.*` tool asked for.
    async fn obey(&mut self, control: node_app::Control) {
        match control {
            node_app::Control::ReconnectGateway { reply } => {
                let answer = self.rejoin("app.connection.reconnect").await;
                let _ = reply.send(answer);
            }
            node_app::Control::Join { join, reply } => {
                let answer = self.join(join).await;
                let _ = reply.send(answer);
            }
        }
    }

    /// Joins the gateway an app tool names, as the same flags on the command line would: the
    /// new connection is resolved first (a code or URL that cannot work changes nothing), then
    /// saved, then the old link makes way. The flags this node was started with belonged to the
    /// previous gateway (an access proxy's header is a secret of that path), so only `--name`
    /// carries over; from here on settings.json names the gateway.
    async fn join(&mut self, join: node_app::Join) -> Result<tokio::sync::watch::Receiver<GatewayStatus>, String> {
        let mut args = GatewayNodeArgs { name: self.gateway_args().name, ..GatewayNodeArgs::default() };
        match join {
            node_app::Join::SetupCode(code) => args.pair = Some(code),
            node_app::Join::SharedToken { url, token } => {
                args.gateway_url = Some(url);
                // Resolved in memory first; written to its file only once the join is sure.
                args.gateway_token = Some(token);
            }
        }
        let saved = Settings::load(&self.data.settings_path()).map_err(|error| error.to_string())?;
        let config = gateway_link_config(&args, &saved, &self.data, self.filter.clone())
            .map_err(|error| format!("{error:#}"))?;
        if let Some(token) = args.gateway_token.take() {
            let path = self.data.gateway_token_path();
            clawmcp_fs::write_private_atomic(&path, token.as_bytes())
                .map_err(|error| format!("cannot save the gateway token to {}: {error}", path.display()))?;
            args.gateway_token_file = Some(path);
        }
        save_gateway_settings(&self.data.settings_path(), &args, Some(&config))
            .map_err(|error| format!("{error:#}"))?;
        if let Some(link) = self.link.take() {
            link.close().await;
        }
        output::note(&format!(
            "clawmcp node: joining the gateway at {} as node `{}` (asked by a local MCP client)",
            config.url, config.display_name
        ));
        let link = NodeLink::start(config, self.registry.clone());
        let status = link.watch_status();
        self.link = Some(link);
        // A spent code given by a client ends this link, not the node (unlike `--pair`).
        self.link_from_pair_flag = false;
        *self.gateway_args.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            GatewayNodeArgs { name: args.name, ..GatewayNodeArgs::default() };
        // Its operator connection went to the previous gateway: the next app tool opens a new one.
        self.operator.forget().await;
        self.gateway_error = None;
        self.report();
        Ok(status)
    }

    /// Leaves the gateway and joins it again (a new handshake, the device token kept).
    async fn rejoin(&mut self, why: &str) -> Result<String, String> {
        let Some(link) = self.link.take() else {
            return Err("gateway node mode is off: nothing to reconnect (`clawmcp settings set EnableNodeMode true` \
                        joins the saved gateway)"
                .to_owned());
        };
        link.close().await;
        let settings = Settings::load(&self.data.settings_path()).unwrap_or_default();
        let answer = match gateway_link_config(&self.gateway_args(), &settings, &self.data, self.filter.clone()) {
            Ok(config) => {
                let note = format!("reconnecting to {} as node `{}`", config.url, config.display_name);
                self.link = Some(NodeLink::start(config, self.registry.clone()));
                output::note(&format!("clawmcp node: {note} ({why})"));
                Ok(note)
            }
            Err(error) => Err(format!("left the gateway but cannot join it again: {error:#}")),
        };
        self.report();
        answer
    }

    /// Ends every file channel of the MCP listener: their commands stop at once (a
    /// `file.create` removes its temp file) rather than wait for polls the stopping listener
    /// would never answer, so the listener's drain is not held up by them.
    fn end_file_transfers(&self, reason: &str) {
        if let Some(channels) = self.registry.file_channels() {
            channels.close_all(reason);
        }
    }

    async fn stop(mut self) {
        if let Some((_, stop, task)) = self.listener.take() {
            self.end_file_transfers("the node is shutting down");
            stop.cancel();
            let _ = task.await;
        }
        if let Some(link) = self.link.take() {
            link.close().await;
        }
        self.reporter.stopped().await;
    }
}

/// Saves the gateway flags given on the command line into settings.json and turns gateway node
/// mode on, so the next plain `clawmcp node` joins the same gateway. Secret values are not
/// written (see `Settings::gateway_token_file`).
fn save_gateway_settings(
    path: &std::path::Path,
    args: &GatewayNodeArgs,
    link: Option<&NodeLinkConfig>,
) -> anyhow::Result<()> {
    let mut saved = Settings::load(path)?;
    saved.enable_node_mode = true;
    let new_url = link.map(|link| link.url.as_str()).or(args.gateway_url.as_deref());
    if new_url.is_some_and(|url| !saved.gateway_url.as_deref().is_some_and(|old| same_gateway(old, url))) {
        // Another gateway: the secrets and the pin saved were the previous one's.
        saved.gateway_token_file = None;
        saved.gateway_password_file = None;
        saved.gateway_tls_fingerprint = None;
    }
    if let Some(url) = &args.gateway_url {
        saved.gateway_url = Some(url.clone());
    }
    // A setup code names the gateway (and its pin) in place of --gateway-url.
    if let Some(link) = link.filter(|_| args.pair.is_some() || args.gateway_tls_fingerprint.is_some()) {
        saved.gateway_url = Some(link.url.clone());
        saved.gateway_tls_fingerprint = link.tls_fingerprint.as_ref().map(ToString::to_string);
    }
    if let Some(file) = &args.gateway_token_file {
        saved.gateway_token_file = Some(absolute(file)?);
    }
    if let Some(file) = &args.gateway_password_file {
        saved.gateway_password_file = Some(absolute(file)?);
    }
    if let Some(name) = &args.name {
        saved.node_display_name = Some(name.clone());
    }
    saved.save(path)?;
    if args.gateway_token.is_some() || args.gateway_password.is_some() {
        output::note(
            "note: the gateway secret from the command line is used for this run only; pass --gateway-token-file / --gateway-password-file (or set OPENCLAW_GATEWAY_TOKEN) to keep it",
        );
    }
    Ok(())
}

fn absolute(path: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    Ok(std::path::absolute(path)?)
}

/// The gateway connection: flags win, then what settings.json saved, then OpenClaw's own
/// resolution (`OPENCLAW_GATEWAY_*`, `~/.openclaw/openclaw.json`, the local gateway's port).
fn gateway_link_config(
    args: &GatewayNodeArgs,
    settings: &Settings,
    data: &DataDir,
    filter: ToolFilter,
) -> anyhow::Result<NodeLinkConfig> {
    let (target, code) = node_gateway_target(args, settings, data)?;
    let headers = args
        .gateway_headers
        .iter()
        .map(|text| UpgradeHeader::parse(text).map_err(|reason| UsageError(format!("--gateway-header: {reason}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let flag_pin = args
        .gateway_tls_fingerprint
        .as_deref()
        .map(TlsFingerprint::parse)
        .transpose()
        .map_err(|reason| UsageError(format!("--gateway-tls-fingerprint: {reason}")))?;
    let saved_pin = settings
        .gateway_tls_fingerprint
        .as_deref()
        .map(TlsFingerprint::parse)
        .transpose()
        .map_err(|reason| anyhow::anyhow!("GatewayTlsFingerprint in settings.json: {reason}"))?;
    let tls_fingerprint = flag_pin
        .or_else(|| code.as_ref().and_then(|code| code.tls_fingerprint.clone()))
        .or(saved_pin)
        .or_else(|| target.tls_fingerprint.clone());
    if tls_fingerprint.is_some() && !target.url.starts_with("wss://") {
        return Err(UsageError(format!(
            "a TLS fingerprint pins a wss:// gateway, and {} is not wss://; drop --gateway-tls-fingerprint or use the \
             gateway's wss:// URL",
            target.url
        ))
        .into());
    }
    let device = DeviceIdentity::load_or_create(data.root()).context("cannot load this node's device identity")?;
    let display_name = args.name.clone().or_else(|| settings.node_display_name.clone()).unwrap_or_else(host_name);
    Ok(NodeLinkConfig {
        device_tokens: Some(Arc::new(DeviceTokenStore::new(data.root(), &target.url, Role::Node))),
        url: target.url,
        credentials: target.credentials,
        tls_fingerprint,
        device: Arc::new(device),
        display_name,
        filter,
        headers,
        max_concurrent_invokes: clawmcp_node_gateway::MAX_CONCURRENT_INVOKES,
        backoff: BackoffPolicy::default(),
    })
}

/// The gateway node mode connects to, and the setup code it pairs with (`--pair`): flags, then
/// settings.json, then OpenClaw's resolution. `clawmcp doctor` checks this same target.
pub fn node_gateway_target(
    args: &GatewayNodeArgs,
    settings: &Settings,
    data: &DataDir,
) -> anyhow::Result<(GatewayTarget, Option<SetupCode>)> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
    let code = args
        .pair
        .as_deref()
        .map(|text| SetupCode::parse(text, now_ms))
        .transpose()
        .map_err(|reason| UsageError(format!("--pair: {reason}")))?;
    let url = args
        .gateway_url
        .clone()
        .or_else(|| code.as_ref().map(|code| code.url.clone()))
        .or_else(|| settings.gateway_url.clone());
    // The secret files settings.json names were saved for its gateway: never offered to another
    // one a flag or a setup code names.
    let saved_gateway =
        url.as_deref().is_none_or(|url| settings.gateway_url.as_deref().is_some_and(|saved| same_gateway(saved, url)));
    let saved_file = |file: &Option<std::path::PathBuf>| file.clone().filter(|_| saved_gateway);
    // Paired through a setup code, this device has its own credential: the code's bootstrap
    // token first, the device token the gateway issued it afterwards.
    let device_token_saved =
        url.as_deref().is_some_and(|url| DeviceTokenStore::new(data.root(), url, Role::Node).load().is_some());
    let overrides = ConnectOverrides {
        device_credential: code.is_some() || device_token_saved,
        url,
        token: args.gateway_token.as_deref().map(Secret::from),
        token_file: args.gateway_token_file.clone().or_else(|| saved_file(&settings.gateway_token_file)),
        password: args.gateway_password.as_deref().map(Secret::from),
        password_file: args.gateway_password_file.clone().or_else(|| saved_file(&settings.gateway_password_file)),
        flag_prefix: "gateway-",
        credentials_optional: false,
    };
    let mut target = GatewayTarget::resolve(&overrides, &Env::from_process())
        .context("gateway node mode (EnableNodeMode) is on, but the gateway cannot be reached as configured")?;
    if let Some(code) = &code {
        target.credentials.bootstrap_token = Some(code.bootstrap_token.clone());
    }
    Ok((target, code))
}

/// Whether two gateway URLs name the same gateway (a trailing slash and letter case aside).
fn same_gateway(a: &str, b: &str) -> bool {
    a.trim_end_matches('/').eq_ignore_ascii_case(b.trim_end_matches('/'))
}

/// The display name upstream's node host uses by default: the host name.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "clawmcp-node".to_owned())
}

/// A `--tools` pattern that selects nothing is a typo or a stale list: refuse to start rather
/// than serve less than the user meant.
fn check_filter(registry: &Registry, filter: &ToolFilter) -> Result<(), UsageError> {
    let unmatched = registry.unmatched_patterns(filter);
    if unmatched.is_empty() {
        return Ok(());
    }
    let listed = registry.listed();
    let available: Vec<&str> = listed.iter().map(|command| command.name()).collect();
    Err(UsageError(format!(
        "--tools pattern{} {} match{} no tool this node serves\nhint: available tools: {}",
        if unmatched.len() == 1 { "" } else { "s" },
        unmatched.iter().map(|pattern| format!("`{pattern}`")).collect::<Vec<_>>().join(", "),
        if unmatched.len() == 1 { "es" } else { "" },
        available.join(", ")
    )))
}
