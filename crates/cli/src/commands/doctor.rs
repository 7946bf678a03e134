//! `clawmcp doctor`: what clawmcp relies on, checked on this machine. Each finding is `ok`,
//! `warn` or `fail`, says why, and gives the exact command that fixes it. The exit status is 1
//! when any finding fails (warnings are allowed), else 0; `--json` prints the findings as one
//! document `{ok, worst, findings: [{level, what, why, fix?}]}`.
//!
//! Every check reuses what the checked command itself uses: the node client and token choice of
//! `call`, the state trust rules of `clawmcp-fs`, the policy as the node reads it, the registry's
//! availability gates, `clawmcp node`'s gateway resolution and the gateway resolution of
//! `serve`/`tools`. Nothing is created (no token, key or policy file); the one change a check
//! can make is the state readers' own: a settings, policy or status file others can read is
//! made 0600 as it is read. A token file others can read is reported and not read (reading it
//! would fix it silently). Each network check is bounded by [`PROBE_TIMEOUT`].

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clawmcp_gateway::{
    ClientOptions, ConnectOverrides, DeviceIdentity, DeviceTokenStore, Env, GatewayClient, GatewayError, GatewayTarget,
    Role,
};
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::Answer;
use clawmcp_node::Registry;
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::approvals::owner::OwnerError;
use clawmcp_node::settings::{DataDir, LiveSettings, Settings};
use clawmcp_node::system::sandbox;
use serde::Serialize;
use serde_json::{Value, json};

use crate::args::{DoctorArgs, EndpointArgs, GatewayNodeArgs};
use crate::client::{ClientError, NodeClient, TokenSource};
use crate::commands::{approvals, approvals_policy, client_runtime, data_dir, node, node_status};
use crate::output;

/// The longest any one network check (the node's endpoint, a gateway handshake) may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The port `clawmcp node` listens on unless told otherwise.
const DEFAULT_PORT: u16 = 8765;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    fn label(self) -> &'static str {
        match self {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct Finding {
    level: Level,
    what: String,
    why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Finding {
    fn new(level: Level, what: impl Into<String>, why: impl Into<String>) -> Self {
        Finding { level, what: what.into(), why: why.into(), fix: None }
    }

    fn ok(what: impl Into<String>, why: impl Into<String>) -> Self {
        Finding::new(Level::Ok, what, why)
    }

    fn warn(what: impl Into<String>, why: impl Into<String>) -> Self {
        Finding::new(Level::Warn, what, why)
    }

    fn fail(what: impl Into<String>, why: impl Into<String>) -> Self {
        Finding::new(Level::Fail, what, why)
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let data = data_dir(&args.endpoint.data_dir)?;
    let runtime = client_runtime()?;
    let gateway = GatewayNodeArgs {
        gateway_url: args.gateway_url,
        gateway_token_file: args.gateway_token_file,
        gateway_password_file: args.gateway_password_file,
        ..GatewayNodeArgs::default()
    };
    let context = Context {
        data,
        explicit_data_dir: args.endpoint.data_dir.data_dir.is_some(),
        endpoint: args.endpoint,
        gateway,
    };
    let mut findings = vec![data_dir_finding(&context)];
    let token = token_file_finding(&context);
    // Reading an exposed token (as any client does) would make it private: the finding must
    // show the file as it was found and stay so, so the node is not asked.
    let token_unsafe = token.level == Level::Fail && context.endpoint.token.is_none();
    let token_fix = token.fix.clone();
    findings.push(token);
    if token_unsafe {
        findings.push(
            Finding::warn(
                "node: not checked",
                "the token file is unusable (see above), and reading it would change it",
            )
            .fix(token_fix.unwrap_or_else(|| "fix the token file first".into())),
        );
    } else {
        findings.extend(runtime.block_on(node_findings(&context)));
    }
    findings.push(exec_policy_finding(&context.data));
    findings.extend(node_tools_findings(&context.data));
    findings.push(sandbox_finding(&context.data));
    findings.extend(runtime.block_on(gateway_findings(&context)));

    let worst = findings.iter().map(|finding| finding.level).max().unwrap_or(Level::Ok);
    if args.json {
        let document = json!({"ok": worst != Level::Fail, "worst": worst.name(), "findings": findings});
        output::data(&document.to_string());
    } else {
        output::data(&describe(&findings));
    }
    Ok(if worst == Level::Fail { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn describe(findings: &[Finding]) -> String {
    let mut lines = Vec::new();
    for finding in findings {
        lines.push(format!("{} {}", finding.level.label(), finding.what));
        lines.push(format!("     why: {}", finding.why));
        if let Some(fix) = &finding.fix {
            lines.push(format!("     fix: {fix}"));
        }
    }
    lines.join("\n")
}

struct Context {
    data: DataDir,
    /// Whether `--data-dir` (or `$CLAWMCP_DATA_DIR`) chose it: the fix commands then repeat it.
    explicit_data_dir: bool,
    endpoint: EndpointArgs,
    /// `--gateway-url` and its secret file: the gateway every gateway check probes, when given.
    gateway: GatewayNodeArgs,
}

impl Context {
    /// `clawmcp node` with the flags this doctor run was given, so the fix starts the node it
    /// checked.
    fn node_command(&self) -> String {
        let mut command = "clawmcp node".to_owned();
        if self.endpoint.url.is_none() && self.endpoint.port != DEFAULT_PORT {
            command.push_str(&format!(" --port {}", self.endpoint.port));
        }
        command.push_str(&self.data_dir_flag());
        command
    }

    fn data_dir_flag(&self) -> String {
        let explicit = self.explicit_data_dir || std::env::var_os(clawmcp_node::settings::DATA_DIR_ENV).is_some();
        if explicit { format!(" --data-dir {}", quote(self.data.root())) } else { String::new() }
    }
}

/// A path as a shell word.
fn quote(path: &Path) -> String {
    let text = path.display().to_string();
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c)) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The data dir: ours and writable by nobody else (the node refuses to start otherwise).
fn data_dir_finding(context: &Context) -> Finding {
    let root = context.data.root();
    let what = format!("data dir {}", root.display());
    match clawmcp_fs::check_private_dir(root) {
        Ok(()) => Finding::ok(what, "owned by you and writable by nobody else"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Finding::warn(what, "it does not exist yet: no node has run with it (the node creates it, 0700)")
                .fix(context.node_command())
        }
        Err(error) => untrusted(what, &error),
    }
}

/// A refusal of the state trust rules as a failed finding, with the fix they name.
fn untrusted(what: String, error: &std::io::Error) -> Finding {
    match clawmcp_fs::untrusted(error) {
        Some(refusal) => Finding::fail(what, refusal.problem.clone()).fix(refusal.fix.clone()),
        None => Finding::fail(what, error.to_string()),
    }
}

/// The token file: present, well formed, private. A file others can read is a failure here
/// (the node would quietly make it private; the token may have leaked).
fn token_file_finding(context: &Context) -> Finding {
    let path = context.data.token_path();
    let what = format!("token file {}", path.display());
    match clawmcp_fs::open_state_file(&path, clawmcp_fs::Exposed::Refuse) {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Finding::warn(what, "it does not exist yet: the node writes it at its first start")
                .fix(context.node_command());
        }
        Err(error) => return untrusted(what, &error),
    }
    match clawmcp_http::token::read_token_file(&path) {
        Ok(Some(token)) if clawmcp_http::token::is_well_formed(&token) => {
            Finding::ok(what, "a well-formed token, private to you (0600)")
        }
        Ok(_) => Finding::fail(what, "it holds no well-formed token, so no client can use it")
            .fix(format!("clawmcp token --reset{}", context.data_dir_flag())),
        Err(error) => untrusted(what, &error),
    }
}

/// Is a node listening where the clients look, and does it take the token file's token; then
/// the commands waiting for approval on it.
async fn node_findings(context: &Context) -> Vec<Finding> {
    let timeout = PROBE_TIMEOUT.min(Duration::from_millis(context.endpoint.timeout_ms));
    let client = match NodeClient::new(context.endpoint.url.as_deref(), context.endpoint.port, timeout) {
        Ok(client) => client,
        Err(error) => {
            return vec![Finding::fail("node endpoint", error.to_string()).fix("pass --url http://127.0.0.1:PORT/")];
        }
    };
    let (client, source) = client.with_token(context.endpoint.token.clone(), &context.data.token_path());
    let endpoint = client.endpoint();
    let what = format!("node at {endpoint}");
    let listed = client.request(&RequestId::number(1), "tools/list", None).await;
    let mut findings = vec![match listed.map_err(|e| e.with_token_hint(&source)) {
        Ok(Answer::Result(result)) => {
            let tools = result.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
            let token = match &source {
                TokenSource::Flag => "the --token value".to_owned(),
                TokenSource::File(path) => format!("the token in {}", path.display()),
                TokenSource::None => "no token".to_owned(),
            };
            Finding::ok(what, format!("listening; it accepts {token} and serves {tools} tools"))
        }
        Ok(Answer::Error(error)) => {
            Finding::fail(what, format!("it answers, but not as a clawmcp node: {}", error.message))
                .fix(format!("{} (on a free port, with --port)", context.node_command()))
        }
        Err(ClientError::Refused { .. }) => {
            let mut why =
                "nothing is listening there, so MCP clients and `clawmcp call` cannot reach a node".to_owned();
            if let Ok(Some(status)) = node_status::read(&context.data)
                && status.running
                && let Some(elsewhere) = status.mcp.endpoint.filter(|e| *e != endpoint)
            {
                why.push_str(&format!("; the node of this data dir (pid {}) listens on {elsewhere}", status.pid));
            }
            Finding::fail(what, why).fix(context.node_command())
        }
        Err(ClientError::Unauthorized { .. }) => Finding::fail(
            what,
            match &source {
                TokenSource::File(path) => format!(
                    "the node rejects the token in {}: it runs with another data dir, whose token differs",
                    path.display()
                ),
                TokenSource::Flag => "the node rejects the --token value (or $OPENCLAW_MCP_TOKEN)".to_owned(),
                TokenSource::None => "the node wants a token and there is none in this data dir".to_owned(),
            },
        )
        .fix(format!(
            "clawmcp doctor --data-dir <the node's data dir>, or stop that node and start `{}`",
            context.node_command()
        )),
        Err(error) => Finding::fail(what, error.to_string()).fix(context.node_command()),
    }];
    if findings[0].level == Level::Ok {
        findings.push(match approvals::list(&client, &source).await {
            Ok(pending) if pending.is_empty() => {
                Finding::ok("pending approvals", "no command is waiting for a decision")
            }
            Ok(pending) => {
                let ids: Vec<&str> = pending.iter().filter_map(|p| p.get("id").and_then(Value::as_str)).collect();
                let commands: Vec<String> = pending
                    .iter()
                    .map(|p| {
                        let field = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or("-").to_owned();
                        format!("{} `{}`", field("id"), field("command"))
                    })
                    .collect();
                Finding::warn(
                    format!("pending approvals: {}", pending.len()),
                    format!("waiting for a decision: {}", commands.join(", ")),
                )
                .fix(format!(
                    "clawmcp approvals allow-once {} (or `clawmcp approvals deny {0}`)",
                    ids.first().unwrap_or(&"<id>")
                ))
            }
            Err(error) => Finding::warn("pending approvals", format!("cannot list them: {error:#}")),
        });
    }
    findings
}

/// The exec policy as the node reads it: its values for calls without agentId, its rules.
fn exec_policy_finding(data: &DataDir) -> Finding {
    let approvals = ExecApprovals::open(data.exec_approvals_path());
    match approvals.owner_view() {
        Ok(view) => {
            let (policy, rules) = approvals_policy::effective_summary(&view.file);
            let source =
                if view.exists { view.path.display().to_string() } else { "built-in defaults, no file".into() };
            let what = format!("exec policy: {policy}, {rules} allow rule{}", if rules == 1 { "" } else { "s" });
            let why = format!("{source}; a command no rule allows waits for `clawmcp approvals`");
            let open = view.file.effective(clawmcp_node::approvals::model::DEFAULT_AGENT).policy;
            if open.security == clawmcp_node::approvals::model::Security::Full
                && open.ask == clawmcp_node::approvals::model::Ask::Off
            {
                Finding::warn(what, format!("{source}; every command runs without anyone asked"))
                    .fix("clawmcp approvals set-default --security allowlist --ask on-miss")
            } else {
                Finding::ok(what, why)
            }
        }
        Err(OwnerError::Unusable { path, reason }) => {
            Finding::fail("exec policy: unusable, so every command is denied", format!("{}: {reason}", path.display()))
                .fix(format!("mv {0} {0}.bak (the built-in defaults then apply), or fix the file", quote(&path)))
        }
        Err(error) => Finding::fail("exec policy", error.to_string()),
    }
}

/// What `clawmcp node` started from this shell would serve (its environment decides the
/// backends), and each command left out with why: a switch off is the owner's choice (ok), a
/// missing backend is a warning with the package to install.
fn node_tools_findings(data: &DataDir) -> Vec<Finding> {
    let settings = match LiveSettings::open(data.settings_path()) {
        Ok(settings) => settings,
        Err(error) => {
            return vec![
                Finding::fail("node tools", error.to_string())
                    .fix(format!("clawmcp settings --data-dir {}", quote(data.root()))),
            ];
        }
    };
    let approvals = Arc::new(ExecApprovals::open(data.exec_approvals_path()));
    let tools = node_status::ToolsStatus::of(&Registry::builtin(Arc::new(settings), approvals));
    let served = if tools.served.is_empty() { "none".to_owned() } else { tools.served.join(", ") };
    let mut findings = vec![Finding::ok(
        format!("node tools: {} served", tools.served.len()),
        format!("as `clawmcp node` started from this shell would serve them: {served}"),
    )];
    // Commands sharing one reason (camera.list, camera.snap, ...) are one finding.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for unavailable in tools.unavailable {
        match groups.iter_mut().find(|(reason, _)| *reason == unavailable.reason) {
            Some((_, commands)) => commands.push(unavailable.command),
            None => groups.push((unavailable.reason, vec![unavailable.command])),
        }
    }
    for (reason, commands) in groups {
        let what = format!("not served: {}", commands.join(", "));
        findings.push(match reason.strip_prefix("unavailable: ") {
            // `<what is missing>; <what provides it>` (`availability::MissingBackend`).
            Some(missing) => match missing.split_once("; ") {
                Some((why, fix)) => Finding::warn(what, why).fix(fix.trim_start_matches("install it: ")),
                None => Finding::warn(what, missing),
            },
            None => Finding::ok(what, reason),
        });
    }
    findings
}

/// The system.run sandbox as `settings.json` configures it, and which of its rules hold here.
fn sandbox_finding(data: &DataDir) -> Finding {
    match Settings::load(&data.settings_path()) {
        Ok(settings) => {
            let lines = sandbox::summary(&settings.system_run_sandbox);
            Finding::ok("system.run sandbox", lines.join("; "))
        }
        Err(error) => Finding::fail(
            "system.run sandbox",
            format!("{error}: a running node treats this as system.run switched off"),
        )
        .fix(format!("clawmcp settings --data-dir {}", quote(data.root()))),
    }
}

/// How a bounded handshake with a gateway went.
enum Probe {
    Up {
        scopes: Vec<String>,
        version: String,
    },
    /// Reachable, but the connect was refused (wrong or missing secret, pairing).
    Refused(String),
    Unreachable(String),
}

async fn probe_gateway(target: &GatewayTarget, scopes: &[&str], device: Option<Arc<DeviceIdentity>>) -> Probe {
    let mut options = ClientOptions::operator(&target.url, &target.credentials, scopes);
    options.device = device;
    options.tls_fingerprint.clone_from(&target.tls_fingerprint);
    options.handshake_timeout = PROBE_TIMEOUT;
    options.request_timeout = PROBE_TIMEOUT;
    match tokio::time::timeout(PROBE_TIMEOUT, GatewayClient::connect(options)).await {
        Ok(Ok(client)) => {
            let hello = client.hello();
            client.close().await;
            Probe::Up {
                scopes: hello.as_ref().map(|h| h.auth.scopes.clone()).unwrap_or_default(),
                version: hello.map(|h| h.server.version.clone()).unwrap_or_default(),
            }
        }
        Ok(Err(error @ (GatewayError::ConnectRejected { .. } | GatewayError::HandshakeClosed { .. }))) => {
            Probe::Refused(error.to_string())
        }
        Ok(Err(error)) => Probe::Unreachable(error.to_string()),
        Err(_) => Probe::Unreachable(format!("no handshake within {PROBE_TIMEOUT:?}")),
    }
}

/// The gateway as `serve`/`tools` (no flags) and node mode would reach it, the node's pairing,
/// and what `serve`'s Claude channel mode needs.
async fn gateway_findings(context: &Context) -> Vec<Finding> {
    let data = &context.data;
    // An unreadable settings.json is a failed finding already (node tools); here it reads as
    // the defaults, node mode off.
    let settings = Settings::load(&data.settings_path()).unwrap_or_default();
    let node_mode = settings.enable_node_mode;
    let mut findings = Vec::new();

    // serve / tools, as started without gateway flags, or with the ones this run was given.
    let serve_identity = data.root().join("serve");
    let serve_device =
        DeviceIdentity::load(&serve_identity.join(clawmcp_gateway::identity::IDENTITY_FILE)).ok().map(Arc::new);
    let overrides = ConnectOverrides {
        url: context.gateway.gateway_url.clone(),
        token_file: context.gateway.gateway_token_file.clone(),
        password_file: context.gateway.gateway_password_file.clone(),
        flag_prefix: "gateway-",
        ..ConnectOverrides::default()
    };
    let serve_probe = match GatewayTarget::resolve(&overrides, &Env::from_process()) {
        Err(error) => {
            findings.push(Finding::warn("gateway for serve/tools", format!("not usable as configured: {error}")).fix(
                "export OPENCLAW_GATEWAY_URL=wss://HOST:18789 OPENCLAW_GATEWAY_TOKEN=... (or pass --url/--token-file to \
                 serve/tools, and check that gateway with `clawmcp doctor --gateway-url URL --gateway-token-file FILE`)",
            ));
            None
        }
        Ok(target) => {
            let probe = probe_gateway(&target, &clawmcp_serve::OPERATOR_SCOPES, serve_device).await;
            let what = format!("gateway for serve/tools at {} ({})", target.url, target.url_source);
            findings.push(match &probe {
                Probe::Up { version, .. } => Finding::ok(
                    what,
                    format!(
                        "reachable and authenticated with {}; OpenClaw {version}",
                        target.credentials.token_source.as_deref().or(target.credentials.password_source.as_deref()).unwrap_or("no secret")
                    ),
                ),
                Probe::Refused(why) => Finding::warn(what, format!("reachable, but it refused the connection: {why}"))
                    .fix("check the secret: OPENCLAW_GATEWAY_TOKEN, gateway.auth.token in openclaw.json, or --token-file"),
                Probe::Unreachable(why) => Finding::warn(what, format!("unreachable: {why}"))
                    .fix("start the gateway (`openclaw gateway`), or point OPENCLAW_GATEWAY_URL at it"),
            });
            Some(probe)
        }
    };

    // Gateway node mode and its pairing.
    if !node_mode {
        findings.push(Finding::ok(
            "gateway node mode: off",
            "EnableNodeMode is false: the node serves MCP only (`clawmcp node --gateway-url URL` or `--pair CODE` joins a gateway)",
        ));
        findings.push(Finding::ok("device pairing: not used", "gateway node mode is off"));
    } else {
        findings.extend(node_mode_findings(context, &settings).await);
    }

    findings.push(claude_channel_finding(&serve_identity, serve_probe.as_ref()));
    findings
}

async fn node_mode_findings(context: &Context, settings: &Settings) -> Vec<Finding> {
    let data = &context.data;
    let target = match node::node_gateway_target(&context.gateway, settings, data) {
        Ok((target, _)) => target,
        Err(error) => {
            return vec![
                Finding::fail("gateway node mode: on", format!("{error:#}"))
                    .fix("clawmcp node --gateway-url wss://HOST:18789 --gateway-token-file FILE"),
            ];
        }
    };
    let what = format!("gateway node mode: {}", target.url);
    let status = node_status::read(data).ok().flatten().filter(|status| status.running);
    let text = |gateway: &Value, key: &str| gateway.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut findings = Vec::new();
    match &status {
        Some(status) if text(&status.gateway, "state").as_deref() == Some("connected") => {
            findings.push(Finding::ok(what, format!("the running node (pid {}) is connected", status.pid)));
        }
        Some(status) => {
            let watch = format!("clawmcp node status{}", context.data_dir_flag());
            findings.push(match text(&status.gateway, "lastError") {
                None => Finding::warn(what, format!("the running node (pid {}) is still connecting", status.pid))
                    .fix(format!("wait a moment, then `{watch}`")),
                Some(error) => {
                    Finding::fail(what, format!("the running node (pid {}) is not connected: {error}", status.pid))
                        .fix(text(&status.gateway, "hint").unwrap_or(watch))
                }
            });
        }
        None if target.credentials.is_empty() => {
            // The node presents its own device credential; an operator handshake cannot stand in.
            findings.push(match probe_gateway(&target, &[], None).await {
                Probe::Unreachable(why) => Finding::fail(what, format!("unreachable: {why}"))
                    .fix("start the gateway, or fix GatewayUrl (`clawmcp settings`)"),
                _ => Finding::ok(what, "reachable; the node authenticates with its device token"),
            });
        }
        None => findings.push(match probe_gateway(&target, &[], None).await {
            Probe::Up { .. } => Finding::ok(what, "reachable and authenticated (node not running)"),
            Probe::Refused(why) => Finding::fail(what, format!("reachable, but it refused the node's secret: {why}"))
                .fix("fix the token: clawmcp node --gateway-token-file FILE"),
            Probe::Unreachable(why) => Finding::fail(what, format!("unreachable: {why}"))
                .fix("start the gateway, or fix GatewayUrl (`clawmcp node --gateway-url URL`)"),
        }),
    }
    findings.push(pairing_finding(context, &target.url, status.as_ref().map(|s| &s.gateway)));
    findings.push(operator_device_finding(data, &target.url));
    findings
}

/// The device key the node's `app.*` operator tools prove (`<data-dir>/operator/`), read as they
/// would read it: created on their first call, and refused there if it is not private.
fn operator_device_finding(data: &DataDir, url: &str) -> Finding {
    let what = "operator device (app tools)";
    let dir = data.operator_dir();
    let identity = dir.join(clawmcp_gateway::identity::IDENTITY_FILE);
    match DeviceIdentity::load(&identity) {
        Ok(device) => match DeviceTokenStore::new(&dir, url, Role::Operator).load() {
            Some(_) => Finding::ok(what, format!("device {} holds a device token from {url}", device.device_id())),
            None => Finding::ok(
                what,
                format!(
                    "device {} is not paired with {url} yet: the first app.nodes (or another operator tool) pairs it, \
                     silently on loopback, after `openclaw devices approve <requestId>` on a remote gateway",
                    device.device_id()
                ),
            ),
        },
        Err(_) if std::fs::symlink_metadata(&identity).is_err() => {
            Finding::ok(what, "no key yet: the first app.nodes (or another operator tool) creates it")
        }
        Err(error) => Finding::fail(what, error.to_string())
            .fix(format!("mv {0} {0}.bak (a new key needs a new approval on a remote gateway)", quote(&identity))),
    }
}

/// Where this device stands with the gateway's operator.
fn pairing_finding(context: &Context, url: &str, running: Option<&Value>) -> Finding {
    let data = &context.data;
    let text = |key: &str| running.and_then(|g| g.get(key)).and_then(Value::as_str).map(str::to_owned);
    match text("pairing").as_deref() {
        Some("approved") => return Finding::ok("device pairing: approved", "the gateway invokes this node's commands"),
        Some("device-pending") => {
            let request = text("requestId").unwrap_or_else(|| "<requestId>".into());
            return Finding::warn(
                "device pairing: waiting for the operator",
                "the gateway refuses this device until it is approved",
            )
            .fix(format!("openclaw devices approve {request}"));
        }
        Some("pending") => {
            return Finding::warn(
                "device pairing: commands waiting for approval",
                "the device is paired; its command surface is not approved yet",
            )
            .fix("openclaw nodes pending, then openclaw nodes approve <requestId>");
        }
        Some("rejected") => {
            return Finding::fail(
                "device pairing: rejected",
                "the operator rejected this node's commands; it serves nothing",
            )
            .fix("openclaw nodes pending, then openclaw nodes approve <requestId>");
        }
        _ => {}
    }
    let identity = data.root().join(clawmcp_gateway::identity::IDENTITY_FILE);
    match DeviceIdentity::load(&identity) {
        Ok(device) => match DeviceTokenStore::new(data.root(), url, Role::Node).load() {
            Some(_) => Finding::ok(
                "device pairing: paired before",
                format!("device {} holds a device token from {url}", device.device_id()),
            ),
            None => Finding::warn(
                "device pairing: not paired yet",
                format!("device {} has no device token from {url}", device.device_id()),
            )
            .fix(format!("{} (then approve it: openclaw devices approve <requestId>)", context.node_command())),
        },
        Err(_) if !identity.exists() => {
            Finding::warn("device pairing: no device key yet", "the node creates it at its first gateway start")
                .fix(format!("{} --pair CODE (a setup code from the gateway: openclaw qr)", context.node_command()))
        }
        Err(error) => Finding::fail("device pairing: device key unusable", error.to_string())
            .fix(format!("mv {0} {0}.bak (a new key needs a new pairing)", quote(&identity))),
    }
}

/// What `clawmcp serve`'s Claude channel mode needs at launch: `clawmcp` on the PATH the MCP
/// client starts it from, a trusted key directory, and the operator scopes its tools and
/// notifications use (read for events, write for replies, approvals for permission relays).
fn claude_channel_finding(identity_dir: &Path, probe: Option<&Probe>) -> Finding {
    let what = "Claude channel (clawmcp serve)";
    let cwd = std::env::current_dir().ok();
    let search = std::env::var_os("PATH");
    if let Err(why) =
        clawmcp_node::approvals::resolve::resolve(&["clawmcp".to_owned()], cwd.as_deref(), search.as_deref())
    {
        return Finding::warn(what, format!("MCP clients launch `clawmcp serve` by name, and {why}"))
            .fix("cargo install --locked --path crates/cli");
    }
    if identity_dir.exists()
        && let Err(error) = clawmcp_fs::check_private_dir(identity_dir)
    {
        return untrusted(format!("{what}: key directory"), &error);
    }
    match probe {
        Some(Probe::Up { scopes, .. }) => {
            let missing: Vec<&str> = clawmcp_serve::OPERATOR_SCOPES
                .iter()
                .copied()
                .filter(|scope| !scopes.iter().any(|s| s == scope))
                .collect();
            if missing.is_empty() {
                Finding::ok(
                    what,
                    "clawmcp is on PATH and the gateway grants operator.read, operator.write and operator.approvals",
                )
            } else {
                Finding::warn(
                    what,
                    format!(
                        "the gateway does not grant {}: channel replies or permission relays fail",
                        missing.join(", ")
                    ),
                )
                .fix("openclaw devices list, then approve the serve device with those scopes")
            }
        }
        _ => Finding::warn(what, "clawmcp is on PATH, but the gateway is not usable (see above)")
            .fix("fix the gateway for serve/tools first"),
    }
}
