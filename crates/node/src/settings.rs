//! The data directory and `settings.json`, read live.
//!
//! Everything clawmcp persists for the node host lives in one directory (created 0700): the MCP
//! bearer token, `settings.json`, `exec-approvals.json`. `--data-dir`, then `CLAWMCP_DATA_DIR`,
//! then the platform config dir (`~/.config/clawmcp` on Linux) choose it.
//!
//! `settings.json` uses the upstream tray's PascalCase keys so a settings file can move between
//! the two. The legacy `McpOnlyMode` flag is migrated on load and never written back; keys we do
//! not know are preserved on save.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use clawmcp_fs::FileStamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Environment variable naming the data directory.
pub const DATA_DIR_ENV: &str = "CLAWMCP_DATA_DIR";

/// The directory holding the node host's persistent state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

/// The data directory could not be determined or created.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("no home or config directory is known for this user; pass `--data-dir DIR` or set `{DATA_DIR_ENV}`")]
    NoDefault,
    #[error("cannot create the data directory `{path}`: {source}")]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot open `{path}` in the data directory: {source}")]
    Open { path: PathBuf, source: io::Error },
    /// It (or a state file in it) exists but another user owns it or could write to it, or a
    /// state file is a symlink or not a regular file; the message has the fix.
    #[error("{0}")]
    Untrusted(io::Error),
}

impl DataDir {
    /// `explicit` (from `--data-dir`), else `$CLAWMCP_DATA_DIR`, else `<config dir>/clawmcp`.
    pub fn resolve(explicit: Option<PathBuf>) -> Result<Self, DataDirError> {
        let root = explicit
            .or_else(|| std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from))
            .or_else(|| dirs::config_dir().map(|dir| dir.join("clawmcp")))
            .ok_or(DataDirError::NoDefault)?;
        Ok(DataDir { root })
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        DataDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the directory if needed, private to this user (0700 on Unix); an existing one must
    /// be ours and writable by nobody else, or the node refuses to start (whoever can write here
    /// can plant a policy that runs anything as us).
    /// The state files in it are checked the same way (each loader checks again on every read).
    pub fn ensure(&self) -> Result<(), DataDirError> {
        let refused = |source: io::Error| match clawmcp_fs::untrusted(&source) {
            Some(_) => DataDirError::Untrusted(source),
            None => DataDirError::Create { path: self.root.clone(), source },
        };
        create_private_dir(&self.root).map_err(refused)?;
        for path in [
            self.token_path(),
            self.settings_path(),
            self.exec_approvals_path(),
            self.status_path(),
            self.gateway_token_path(),
        ] {
            match clawmcp_fs::open_state_file(&path, clawmcp_fs::Exposed::MakePrivate) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) if clawmcp_fs::untrusted(&e).is_some() => return Err(DataDirError::Untrusted(e)),
                Err(e) => return Err(DataDirError::Open { path, source: e }),
            }
        }
        Ok(())
    }

    pub fn token_path(&self) -> PathBuf {
        self.root.join("mcp-token.txt")
    }

    /// The gateway's shared token, when a local client gave it (`app.connection.connectSharedToken`);
    /// settings.json names the file, never the value.
    pub fn gateway_token_path(&self) -> PathBuf {
        self.root.join("gateway-token.txt")
    }

    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.json")
    }

    pub fn exec_approvals_path(&self) -> PathBuf {
        self.root.join("exec-approvals.json")
    }

    /// The device key (and issued device token) of the operator connection the node's `app.*`
    /// tools open: a directory of its own, because a key paired as a node would need a new
    /// approval to act as an operator (and the reverse).
    pub fn operator_dir(&self) -> PathBuf {
        self.root.join("operator")
    }

    /// What a running `clawmcp node` reports about itself (`clawmcp node status` reads it).
    pub fn status_path(&self) -> PathBuf {
        self.root.join("node-status.json")
    }
}

pub use clawmcp_fs::{create_private_dir, write_private_atomic};

/// The settings clawmcp reads. Field names match the upstream tray's `SettingsData`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Settings {
    /// Connect to an OpenClaw gateway as a node (gateway node mode).
    #[serde(default)]
    pub enable_node_mode: bool,
    /// Run the local MCP HTTP server.
    #[serde(default = "yes")]
    pub enable_mcp_server: bool,
    /// The "Run system tools" permission: off removes `system.run`/`system.run.prepare`.
    #[serde(default = "yes")]
    pub node_system_run_enabled: bool,
    /// The "Screen" permission: `screen.snapshot` is served only while it is on (off by default:
    /// a capture shows whatever is on the screen).
    #[serde(default)]
    pub node_screen_enabled: bool,
    /// The "Camera" permission: `camera.*` are served only while it is on (off by default).
    #[serde(default)]
    pub node_camera_enabled: bool,
    /// Reading the clipboard (`clipboard.read`; off by default: it may hold passwords). Writing
    /// needs no switch. No upstream node has a clipboard, so the name is clawmcp's own.
    #[serde(default)]
    pub node_clipboard_read_enabled: bool,
    /// The "Location" permission: `location.get` is served only while it is on (off by default:
    /// it says where this machine, and likely its owner, is). Upstream's name; upstream's default
    /// is on, ours is off like the other sensitive capabilities.
    #[serde(default)]
    pub node_location_enabled: bool,
    /// Microphone input for speech to text (`stt.transcribe` without `path`, `stt.listen`); off
    /// by default: an agent would hear the room. Transcribing a file needs only `NodeFileRoots`.
    /// Upstream's Windows node has the same opt-in (its speech-to-text is off unless enabled).
    #[serde(default)]
    pub node_stt_enabled: bool,
    /// `canvas.*`: a Chromium window (headless without a display) the agent fills with any page
    /// and runs JavaScript in; off by default, like the other sensitive capabilities.
    #[serde(default)]
    pub node_canvas_enabled: bool,
    /// Whether a local MCP client may point this node at another gateway
    /// (`app.connection.applySetupCode`, `app.connection.connectSharedToken`). Off by default:
    /// that gateway's operators would reach every command this node serves, so it is the
    /// owner's choice, as `clawmcp node --pair` on the command line is. The upstream tray lets
    /// any local MCP client do it; the name is clawmcp's own.
    #[serde(default)]
    pub app_connection_changes_enabled: bool,
    /// Web origins (`https://host:port`) whose pages in the canvas may hand the node a user's
    /// A2UI action (the bridge an A2UI renderer calls), beside the node's own renderer page and
    /// the connected gateway's origin, which always may. Empty by default; clawmcp's own name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_canvas_trusted_origins: Vec<String>,
    /// The directories `file.*`, `dir.*` and `fs.listDir` may read and write (absolute paths,
    /// symlinks resolved when used). Absent: the user's home directory. `/proc`, `/sys` and `/dev`
    /// are never served, whatever this says (`crate::files::policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_file_roots: Option<Vec<PathBuf>>,
    /// The provider `tts.speak` uses when a call names none (`piper`, `espeak-ng` or
    /// `speech-dispatcher`). Absent: the best ready one. Not ready when used: the best ready one,
    /// and the answer says `fellBack`. Upstream's `TtsProvider` names Windows providers, so the
    /// name is clawmcp's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_tts_provider: Option<String>,
    /// The optional Linux containment of `system.run` (off by default).
    #[serde(default, skip_serializing_if = "SandboxSettings::is_default")]
    pub system_run_sandbox: SandboxSettings,
    /// Gateway node mode: the gateway's URL (saved from `clawmcp node --gateway-url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_url: Option<String>,
    /// Gateway node mode: a file holding the gateway's shared token. Secret *values* are never
    /// written here (`settings show` prints this file): files and `OPENCLAW_GATEWAY_*` keep them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_token_file: Option<PathBuf>,
    /// Gateway node mode: a file holding the gateway's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_password_file: Option<PathBuf>,
    /// The node's display name on the gateway (default: the host name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_display_name: Option<String>,
    /// Gateway node mode: the SHA-256 pin of a `wss://` gateway's certificate (from
    /// `--gateway-tls-fingerprint` or a setup code). Not a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_tls_fingerprint: Option<String>,
    /// Legacy flag, migrated on load and never written.
    #[serde(default, skip_serializing)]
    mcp_only_mode: Option<bool>,
    /// Keys this version does not know, kept as they were.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

fn yes() -> bool {
    true
}

impl Default for Settings {
    /// No settings file: MCP-only, the mode `clawmcp node` exists for.
    fn default() -> Self {
        Settings {
            enable_node_mode: false,
            enable_mcp_server: true,
            node_system_run_enabled: true,
            node_screen_enabled: false,
            node_camera_enabled: false,
            node_clipboard_read_enabled: false,
            node_location_enabled: false,
            node_stt_enabled: false,
            node_canvas_enabled: false,
            app_connection_changes_enabled: false,
            node_canvas_trusted_origins: Vec::new(),
            node_file_roots: None,
            node_tts_provider: None,
            system_run_sandbox: SandboxSettings::default(),
            gateway_url: None,
            gateway_token_file: None,
            gateway_password_file: None,
            node_display_name: None,
            gateway_tls_fingerprint: None,
            mcp_only_mode: None,
            other: Map::new(),
        }
    }
}

/// `SystemRunSandbox`: how `system.run` contains what it runs (see `crate::system::sandbox`).
/// Unknown keys inside it are refused, so a misspelt `Netwrok: false` cannot silently leave the
/// network open; a `null` limit means "no limit", an absent one the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct SandboxSettings {
    /// Contain every `system.run`. Off: commands run uncontained (as upstream does outside MXC).
    #[serde(default)]
    pub enabled: bool,
    /// False cuts contained commands off the network.
    #[serde(default = "yes")]
    pub network: bool,
    /// Absolute paths writable beyond the run's working directory and the temp directory.
    #[serde(default)]
    pub writable_paths: Vec<PathBuf>,
    /// Heap and private writable memory per process, MiB.
    #[serde(rename = "MemoryMiB", default = "default_memory_mib")]
    pub memory_mib: Option<u64>,
    /// Tasks (processes and threads) a command's tree may have at once.
    #[serde(default = "default_max_processes")]
    pub max_processes: Option<u32>,
    /// CPU seconds per process.
    #[serde(default = "default_cpu_seconds")]
    pub cpu_seconds: Option<u64>,
}

/// Defaults for an enabled sandbox: generous for builds and test suites, small enough that a
/// runaway command cannot take the machine down.
pub const DEFAULT_SANDBOX_MEMORY_MIB: u64 = 4096;
pub const DEFAULT_SANDBOX_MAX_PROCESSES: u32 = 512;
/// As long as the longest `system.run` (10 minutes), per process.
pub const DEFAULT_SANDBOX_CPU_SECONDS: u64 = 600;
/// The largest memory limit accepted (1 TiB): beyond it a typo, not a limit.
pub const MAX_SANDBOX_MEMORY_MIB: u64 = 1024 * 1024;

fn default_memory_mib() -> Option<u64> {
    Some(DEFAULT_SANDBOX_MEMORY_MIB)
}

fn default_max_processes() -> Option<u32> {
    Some(DEFAULT_SANDBOX_MAX_PROCESSES)
}

fn default_cpu_seconds() -> Option<u64> {
    Some(DEFAULT_SANDBOX_CPU_SECONDS)
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: false,
            network: true,
            writable_paths: Vec::new(),
            memory_mib: default_memory_mib(),
            max_processes: default_max_processes(),
            cpu_seconds: default_cpu_seconds(),
        }
    }
}

impl Settings {
    /// The first setting in which `after` lets more run, or reach further, than `self`: a
    /// switch turned on (`NodeSystemRunEnabled`, `EnableNodeMode`, `EnableMcpServer`), the
    /// sandbox turned off or given the network, a writable path added, a limit raised or
    /// removed, the gateway or its credentials changed. `None` when `after` only tightens (or
    /// changes nothing). A change made for an agent over MCP (`app.settings.set`) must pass this;
    /// the owner widens with `clawmcp settings set`.
    pub fn widening_in(&self, after: &Settings) -> Option<&'static str> {
        let turned_on = |before: bool, now: bool| !before && now;
        let raised = |before: Option<u64>, now: Option<u64>| match (before, now) {
            (Some(before), Some(now)) => now > before,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let (sandbox, next) = (&self.system_run_sandbox, &after.system_run_sandbox);
        if turned_on(self.node_system_run_enabled, after.node_system_run_enabled) {
            Some("NodeSystemRunEnabled")
        } else if turned_on(self.node_screen_enabled, after.node_screen_enabled) {
            Some("NodeScreenEnabled")
        } else if turned_on(self.node_camera_enabled, after.node_camera_enabled) {
            Some("NodeCameraEnabled")
        } else if turned_on(self.node_clipboard_read_enabled, after.node_clipboard_read_enabled) {
            Some("NodeClipboardReadEnabled")
        } else if turned_on(self.node_location_enabled, after.node_location_enabled) {
            Some("NodeLocationEnabled")
        } else if turned_on(self.node_stt_enabled, after.node_stt_enabled) {
            Some("NodeSttEnabled")
        } else if turned_on(self.node_canvas_enabled, after.node_canvas_enabled) {
            Some("NodeCanvasEnabled")
        } else if turned_on(self.app_connection_changes_enabled, after.app_connection_changes_enabled) {
            Some("AppConnectionChangesEnabled")
        } else if file_roots_widen(self.node_file_roots.as_deref(), after.node_file_roots.as_deref()) {
            Some("NodeFileRoots")
        } else if after
            .node_canvas_trusted_origins
            .iter()
            .any(|origin| !self.node_canvas_trusted_origins.contains(origin))
        {
            Some("NodeCanvasTrustedOrigins")
        } else if turned_on(self.enable_node_mode, after.enable_node_mode) {
            Some("EnableNodeMode")
        } else if turned_on(self.enable_mcp_server, after.enable_mcp_server) {
            Some("EnableMcpServer")
        } else if sandbox.enabled && !next.enabled {
            Some("SystemRunSandbox.Enabled")
        } else if turned_on(sandbox.network, next.network) {
            Some("SystemRunSandbox.Network")
        } else if next.writable_paths.iter().any(|path| !sandbox.writable_paths.contains(path)) {
            Some("SystemRunSandbox.WritablePaths")
        } else if raised(sandbox.memory_mib, next.memory_mib) {
            Some("SystemRunSandbox.MemoryMiB")
        } else if raised(sandbox.max_processes.map(u64::from), next.max_processes.map(u64::from)) {
            Some("SystemRunSandbox.MaxProcesses")
        } else if raised(sandbox.cpu_seconds, next.cpu_seconds) {
            Some("SystemRunSandbox.CpuSeconds")
        } else if self.gateway_url != after.gateway_url
            || self.gateway_token_file != after.gateway_token_file
            || self.gateway_password_file != after.gateway_password_file
            || self.gateway_tls_fingerprint != after.gateway_tls_fingerprint
        {
            Some("GatewayUrl")
        } else {
            None
        }
    }
}

/// Whether the file roots `after` reach a path the roots `before` do not: a root added that is not
/// inside one of `before`'s (lexically; `None` is the home directory). Removing or narrowing a
/// root tightens.
fn file_roots_widen(before: Option<&[PathBuf]>, after: Option<&[PathBuf]>) -> bool {
    let home = || dirs::home_dir().into_iter().collect::<Vec<_>>();
    let before = before.map_or_else(home, <[PathBuf]>::to_vec);
    let after = after.map_or_else(home, <[PathBuf]>::to_vec);
    after.iter().any(|root| !before.iter().any(|old| root.starts_with(old)))
}

/// Refuses `NodeFileRoots` entries that could not mean what they say (what, why, what to do).
/// `NodeCanvasTrustedOrigins` from the command line: origins separated by commas or spaces,
/// each an http or https URL with nothing after its port (a trailing `/` is fine), answered in
/// their canonical spelling (`https://example.com`, the default port dropped, the host lower case).
pub fn parse_canvas_origins(value: &str) -> Result<Vec<String>, String> {
    let mut origins: Vec<String> = Vec::new();
    for given in value.split([',', ' ', '\t', '\n']).map(str::trim).filter(|given| !given.is_empty()) {
        let refuse = |why: &str| {
            Err(format!(
                "NodeCanvasTrustedOrigins: `{given}` {why}; give origins such as https://gateway.example:18789"
            ))
        };
        let Ok(url) = url::Url::parse(given) else { return refuse("is not a URL") };
        if !matches!(url.scheme(), "http" | "https") {
            return refuse("is not http or https");
        }
        if !url.username().is_empty() || url.password().is_some() {
            return refuse("carries a user name or password");
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return refuse("has a path, query or fragment (an origin is scheme, host and port)");
        }
        let origin = url.origin().ascii_serialization();
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

pub fn validate_file_roots(roots: &[PathBuf]) -> Result<(), String> {
    match roots.iter().find(|root| !root.is_absolute()) {
        Some(root) => Err(format!("NodeFileRoots: `{}` is relative; list absolute paths", root.display())),
        None => Ok(()),
    }
}

impl SandboxSettings {
    fn is_default(&self) -> bool {
        *self == SandboxSettings::default()
    }

    /// Refuses values that could not mean what they say (what, why, what to do).
    pub fn validate(&self) -> Result<(), String> {
        let max_tasks = clawmcp_process::containment::MAX_TASKS_LIMIT;
        if let Some(path) = self.writable_paths.iter().find(|path| !path.is_absolute()) {
            return Err(format!(
                "SystemRunSandbox.WritablePaths: `{}` is relative; list absolute paths",
                path.display()
            ));
        }
        match self.memory_mib {
            Some(mib) if mib == 0 || mib > MAX_SANDBOX_MEMORY_MIB => {
                return Err(format!(
                    "SystemRunSandbox.MemoryMiB: {mib} is out of range; use 1..={MAX_SANDBOX_MEMORY_MIB}, or null (`none` with `clawmcp settings set`) for no limit"
                ));
            }
            _ => {}
        }
        match self.max_processes {
            Some(tasks) if tasks == 0 || tasks > max_tasks => {
                return Err(format!(
                    "SystemRunSandbox.MaxProcesses: {tasks} is out of range; use 1..={max_tasks}, or null (`none` with `clawmcp settings set`) for no limit"
                ));
            }
            _ => {}
        }
        if self.cpu_seconds == Some(0) {
            return Err(
                "SystemRunSandbox.CpuSeconds: 0 would kill every command at once; use 1 or more, or null (`none` with `clawmcp settings set`) for no limit"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The largest `settings.json` read; a settings file is a few hundred bytes.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// `settings.json` exists but cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot use `{path}`: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("`{path}` is not valid settings JSON: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot write `{path}`: {source}")]
    Write { path: PathBuf, source: io::Error },
}

impl Settings {
    /// Parses settings text, migrating `McpOnlyMode: true` to MCP-only.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let mut settings: Settings = serde_json::from_str(text)?;
        settings.system_run_sandbox.validate().map_err(<serde_json::Error as serde::de::Error>::custom)?;
        if let Some(roots) = &settings.node_file_roots {
            validate_file_roots(roots).map_err(<serde_json::Error as serde::de::Error>::custom)?;
        }
        if settings.mcp_only_mode.take() == Some(true) {
            settings.enable_mcp_server = true;
            settings.enable_node_mode = false;
        }
        Ok(settings)
    }

    /// Loads `path` under the state trust rules (`clawmcp_fs::read_state_file`: no symlink, FIFO
    /// or foreign file, at most [`MAX_SETTINGS_BYTES`]); a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Self, SettingsError> {
        let read_error = |source| SettingsError::Read { path: path.into(), source };
        let limits = clawmcp_fs::StateRules::private(MAX_SETTINGS_BYTES);
        let Some(bytes) = clawmcp_fs::read_state_file(path, limits).map_err(read_error)? else {
            return Ok(Settings::default());
        };
        let text = clawmcp_fs::into_text(bytes).map_err(read_error)?;
        Settings::from_json(&text).map_err(|source| SettingsError::Parse { path: path.into(), source })
    }

    /// Saves atomically (0600), pretty-printed, without the legacy flag.
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
        let mut text = serde_json::to_string_pretty(self).expect("settings always serialise");
        text.push('\n');
        write_private_atomic(path, text.as_bytes()).map_err(|source| SettingsError::Write { path: path.into(), source })
    }
}

/// `settings.json` re-read whenever the file changes: one `stat` per read, so a change saved by
/// `clawmcp settings` (or by hand) applies to the next call without a restart.
pub struct LiveSettings {
    path: PathBuf,
    cache: Mutex<(FileStamp, Settings)>,
}

impl LiveSettings {
    /// Loads the current file; a malformed file is an error at startup.
    pub fn open(path: PathBuf) -> Result<Self, SettingsError> {
        let current = Settings::load(&path)?;
        Ok(LiveSettings { cache: Mutex::new((FileStamp::of(&path), current)), path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings as the file says now. If the file became unreadable or malformed after
    /// startup, the last good settings are kept except that `system.run` is switched off: a
    /// broken save must never grant execution permission.
    pub fn current(&self) -> Settings {
        self.read(Settings::clone)
    }

    /// `read` applied to [`LiveSettings::current`]'s settings, without copying them: for the
    /// checks made on every list and call (a capability's switch).
    pub fn read<R>(&self, read: impl FnOnce(&Settings) -> R) -> R {
        let now = FileStamp::of(&self.path);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.0 != now {
            match Settings::load(&self.path) {
                Ok(settings) => cache.1 = settings,
                Err(error) => {
                    tracing::warn!(%error, "settings reload failed; system.run disabled until the file is fixed");
                    cache.1.node_system_run_enabled = false;
                }
            }
            cache.0 = now;
        }
        read(&cache.1)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn missing_file_means_mcp_only_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::load(&dir.path().join("settings.json")).unwrap();
        assert!(settings.enable_mcp_server && !settings.enable_node_mode && settings.node_system_run_enabled);
    }

    #[test]
    fn legacy_mcp_only_mode_is_migrated_and_never_written() {
        let settings =
            Settings::from_json(r#"{"EnableNodeMode":true,"EnableMcpServer":false,"McpOnlyMode":true}"#).unwrap();
        assert!(settings.enable_mcp_server);
        assert!(!settings.enable_node_mode);
        let written = serde_json::to_string(&settings).unwrap();
        assert!(!written.contains("McpOnlyMode"), "{written}");
    }

    #[test]
    fn legacy_false_changes_nothing() {
        let settings =
            Settings::from_json(r#"{"EnableNodeMode":true,"EnableMcpServer":false,"McpOnlyMode":false}"#).unwrap();
        assert!(settings.enable_node_mode && !settings.enable_mcp_server);
    }

    #[test]
    fn all_four_modes_round_trip() {
        for (node, mcp) in [(false, false), (false, true), (true, false), (true, true)] {
            let text = format!(r#"{{"EnableNodeMode":{node},"EnableMcpServer":{mcp}}}"#);
            let settings = Settings::from_json(&text).unwrap();
            assert_eq!((settings.enable_node_mode, settings.enable_mcp_server), (node, mcp));
        }
    }

    #[test]
    fn unknown_keys_survive_a_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, r#"{"EnableMcpServer":true,"TtsProvider":"piper"}"#).unwrap();
        let mut settings = Settings::load(&path).unwrap();
        settings.node_system_run_enabled = false;
        settings.save(&path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"TtsProvider\": \"piper\""), "{text}");
        assert!(text.contains("\"NodeSystemRunEnabled\": false"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn saved_files_and_created_dirs_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::at(dir.path().join("a/b"));
        data.ensure().unwrap();
        assert_eq!(fs::metadata(data.root()).unwrap().permissions().mode() & 0o777, 0o700);
        Settings::default().save(&data.settings_path()).unwrap();
        assert_eq!(fs::metadata(data.settings_path()).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn live_settings_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let live = LiveSettings::open(path.clone()).unwrap();
        assert!(live.current().node_system_run_enabled);
        Settings { node_system_run_enabled: false, ..Settings::default() }.save(&path).unwrap();
        assert!(!live.current().node_system_run_enabled);
        Settings::default().save(&path).unwrap();
        assert!(live.current().node_system_run_enabled);
    }

    #[test]
    fn live_settings_fail_closed_on_a_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        Settings::default().save(&path).unwrap();
        let live = LiveSettings::open(path.clone()).unwrap();
        fs::write(&path, "{ not json").unwrap();
        let current = live.current();
        assert!(!current.node_system_run_enabled, "a broken file must not keep execution enabled");
        assert!(current.enable_mcp_server, "other settings keep their last good value");
    }

    #[test]
    fn the_sandbox_is_off_by_default_and_an_enabled_one_gets_the_default_limits() {
        let settings = Settings::from_json("{}").unwrap();
        assert!(!settings.system_run_sandbox.enabled);
        assert!(!serde_json::to_string(&settings).unwrap().contains("SystemRunSandbox"), "defaults are not written");
        let settings = Settings::from_json(r#"{"SystemRunSandbox":{"Enabled":true}}"#).unwrap();
        let sandbox = &settings.system_run_sandbox;
        assert!(sandbox.enabled && sandbox.network && sandbox.writable_paths.is_empty());
        assert_eq!(
            (sandbox.memory_mib, sandbox.max_processes, sandbox.cpu_seconds),
            (Some(DEFAULT_SANDBOX_MEMORY_MIB), Some(DEFAULT_SANDBOX_MAX_PROCESSES), Some(DEFAULT_SANDBOX_CPU_SECONDS))
        );
        let unlimited = Settings::from_json(
            r#"{"SystemRunSandbox":{"Enabled":true,"MemoryMiB":null,"MaxProcesses":null,"CpuSeconds":null}}"#,
        )
        .unwrap();
        let sandbox = &unlimited.system_run_sandbox;
        assert_eq!((sandbox.memory_mib, sandbox.max_processes, sandbox.cpu_seconds), (None, None, None));
        let text = serde_json::to_string(&unlimited).unwrap();
        assert!(text.contains(r#""MemoryMiB":null"#), "{text}");
        assert_eq!(Settings::from_json(&text).unwrap(), unlimited, "round trip");
    }

    #[test]
    fn a_sandbox_setting_that_cannot_mean_what_it_says_is_refused() {
        for (bad, says) in [
            (r#"{"Enabled":true,"Netwrok":false}"#, "unknown field `Netwrok`"),
            (r#"{"Enabled":true,"WritablePaths":["relative/dir"]}"#, "is relative"),
            (r#"{"Enabled":true,"MemoryMiB":0}"#, "MemoryMiB: 0 is out of range"),
            (r#"{"Enabled":true,"MaxProcesses":0}"#, "MaxProcesses: 0 is out of range"),
            (r#"{"Enabled":true,"MaxProcesses":1025}"#, "MaxProcesses: 1025 is out of range"),
            (r#"{"Enabled":true,"CpuSeconds":0}"#, "CpuSeconds: 0"),
            (r#"{"Enabled":"yes"}"#, "expected a boolean"),
        ] {
            let error = Settings::from_json(&format!(r#"{{"SystemRunSandbox":{bad}}}"#)).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let edge = r#"{"SystemRunSandbox":{"Enabled":true,"MaxProcesses":1024,"MemoryMiB":1,"CpuSeconds":1}}"#;
        assert!(Settings::from_json(edge).is_ok());
    }

    #[test]
    fn a_broken_sandbox_section_switches_system_run_off_live() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, r#"{"SystemRunSandbox":{"Enabled":true,"Network":false}}"#).unwrap();
        let live = LiveSettings::open(path.clone()).unwrap();
        assert!(live.current().node_system_run_enabled);
        fs::write(&path, r#"{"SystemRunSandbox":{"Enabled":true,"Networks":false}}"#).unwrap();
        assert!(!live.current().node_system_run_enabled, "a sandbox that cannot be read must not run uncontained");
    }

    #[test]
    fn data_dir_resolution_prefers_the_flag() {
        let explicit = DataDir::resolve(Some(PathBuf::from("/tmp/x"))).unwrap();
        assert_eq!(explicit.root(), Path::new("/tmp/x"));
        assert_eq!(explicit.token_path(), Path::new("/tmp/x/mcp-token.txt"));
    }
}

#[cfg(test)]
mod widening_tests {
    use super::*;

    fn sandboxed() -> Settings {
        let mut settings = Settings::default();
        settings.system_run_sandbox.enabled = true;
        settings.system_run_sandbox.network = false;
        settings
    }

    #[test]
    fn tightening_and_no_change_are_not_widening() {
        let before = sandboxed();
        assert_eq!(before.widening_in(&before), None);
        let mut after = before.clone();
        after.node_system_run_enabled = false;
        after.enable_mcp_server = false;
        after.system_run_sandbox.memory_mib = Some(1024);
        after.system_run_sandbox.max_processes = Some(8);
        after.system_run_sandbox.cpu_seconds = Some(1);
        assert_eq!(before.widening_in(&after), None);
        let mut unlimited = before.clone();
        unlimited.system_run_sandbox.memory_mib = None;
        let mut limited = unlimited.clone();
        limited.system_run_sandbox.memory_mib = Some(64);
        assert_eq!(unlimited.widening_in(&limited), None, "a limit where there was none tightens");
        let mut roots = before.clone();
        roots.node_file_roots = Some(vec!["/srv/a".into(), "/srv/b".into()]);
        let mut narrower = roots.clone();
        narrower.node_file_roots = Some(vec!["/srv/a/inner".into()]);
        assert_eq!(roots.widening_in(&narrower), None, "a root inside an old one, one removed: tighter");
    }

    #[test]
    fn file_roots_must_be_absolute() {
        assert!(Settings::from_json(r#"{"NodeFileRoots":["/srv","/home/me"]}"#).is_ok());
        let error = Settings::from_json(r#"{"NodeFileRoots":["srv"]}"#).unwrap_err().to_string();
        assert!(error.contains("NodeFileRoots: `srv` is relative"), "{error}");
    }

    #[test]
    fn canvas_origins_are_canonical_origins_or_refused_with_the_reason() {
        assert_eq!(
            parse_canvas_origins(" https://GW.example:443/, http://127.0.0.1:18789 https://gw.example").unwrap(),
            ["https://gw.example", "http://127.0.0.1:18789"],
            "canonical (default port dropped, host lower case), duplicates once"
        );
        assert_eq!(parse_canvas_origins("  ").unwrap(), Vec::<String>::new(), "empty: none");
        for (given, why) in [
            ("gw.example", "is not a URL"),
            ("file:///etc", "is not http or https"),
            ("https://me:secret@gw.example", "user name or password"),
            ("https://gw.example/page", "has a path"),
            ("https://gw.example/?q=1", "has a path, query"),
        ] {
            let error = parse_canvas_origins(given).unwrap_err();
            assert!(error.contains(why) && error.contains("https://gateway.example:18789"), "{given}: {error}");
        }
    }

    #[test]
    fn every_widening_is_named() {
        type Change = fn(&mut Settings);
        // (the setting named, how the start differs from `sandboxed()`, the widening change)
        let cases: [(&str, Change, Change); 21] = [
            ("NodeFileRoots", |_| {}, |s| s.node_file_roots = Some(vec!["/".into()])),
            (
                "NodeFileRoots",
                |s| s.node_file_roots = Some(vec!["/srv/a".into()]),
                |s| s.node_file_roots = Some(vec!["/srv/a".into(), "/srv/b".into()]),
            ),
            (
                "NodeCanvasTrustedOrigins",
                |s| s.node_canvas_trusted_origins = vec!["https://a.example".into()],
                |s| s.node_canvas_trusted_origins = vec!["https://a.example".into(), "https://b.example".into()],
            ),
            ("NodeScreenEnabled", |_| {}, |s| s.node_screen_enabled = true),
            ("NodeCameraEnabled", |_| {}, |s| s.node_camera_enabled = true),
            ("NodeClipboardReadEnabled", |_| {}, |s| s.node_clipboard_read_enabled = true),
            ("NodeLocationEnabled", |_| {}, |s| s.node_location_enabled = true),
            ("NodeSttEnabled", |_| {}, |s| s.node_stt_enabled = true),
            ("NodeCanvasEnabled", |_| {}, |s| s.node_canvas_enabled = true),
            ("AppConnectionChangesEnabled", |_| {}, |s| s.app_connection_changes_enabled = true),
            ("NodeSystemRunEnabled", |s| s.node_system_run_enabled = false, |s| s.node_system_run_enabled = true),
            ("EnableNodeMode", |_| {}, |s| s.enable_node_mode = true),
            ("EnableMcpServer", |s| s.enable_mcp_server = false, |s| s.enable_mcp_server = true),
            ("SystemRunSandbox.Enabled", |_| {}, |s| s.system_run_sandbox.enabled = false),
            ("SystemRunSandbox.Network", |_| {}, |s| s.system_run_sandbox.network = true),
            ("SystemRunSandbox.WritablePaths", |_| {}, |s| s.system_run_sandbox.writable_paths.push("/srv".into())),
            ("SystemRunSandbox.MemoryMiB", |_| {}, |s| s.system_run_sandbox.memory_mib = None),
            (
                "SystemRunSandbox.MaxProcesses",
                |_| {},
                |s| s.system_run_sandbox.max_processes = Some(DEFAULT_SANDBOX_MAX_PROCESSES + 1),
            ),
            (
                "SystemRunSandbox.CpuSeconds",
                |_| {},
                |s| s.system_run_sandbox.cpu_seconds = Some(DEFAULT_SANDBOX_CPU_SECONDS * 2),
            ),
            ("GatewayUrl", |_| {}, |s| s.gateway_url = Some("ws://127.0.0.1:1/".into())),
            ("GatewayUrl", |_| {}, |s| s.gateway_token_file = Some("/tmp/other-token".into())),
        ];
        for (name, start_from, widen) in cases {
            let mut start = sandboxed();
            start_from(&mut start);
            let mut after = start.clone();
            widen(&mut after);
            assert_eq!(start.widening_in(&after), Some(name));
        }
    }
}
