//! `node-status.json` and `clawmcp node status`: what a running node serves, in one place an
//! operator (or a script) can read without a token and without either transport being up.
//!
//! The running node rewrites the file (0600, atomically, in its 0700 data dir) at start, on
//! every change of its gateway connection, and at a clean stop. The reader checks that the
//! recorded process still runs, so a node killed with SIGKILL reads as "not running", never as
//! connected.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use clawmcp_node::Registry;
use clawmcp_node::settings::DataDir;
use clawmcp_node_gateway::{GatewayStatus, NodeLink};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::args::NodeStatusArgs;
use crate::commands::data_dir;
use crate::output;

/// How long the file lags the node's state at most under a stream of changes.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(500);

/// How often the running node re-checks what it can serve (a switch turned on, ffmpeg
/// installed, the display gone) for the file; tools/list itself checks on every list.
const AVAILABILITY_POLL: std::time::Duration = std::time::Duration::from_secs(3);

/// The largest status file read (a few KiB in practice).
const MAX_STATUS_BYTES: u64 = 1024 * 1024;

/// The file's contents.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusFile {
    pub pid: u32,
    started_at_ms: u64,
    pub version: String,
    /// False once the node stopped cleanly.
    pub running: bool,
    pub mcp: McpStatus,
    /// `{"state":"off"}` when gateway node mode is off, else [`GatewayStatus`].
    pub gateway: Value,
    /// What the node serves right now, and why the rest is not served.
    #[serde(default)]
    tools: ToolsStatus,
}

/// The node's commands as its `tools/list` shows them now, and each one left out with why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsStatus {
    pub served: Vec<String>,
    pub unavailable: Vec<Unavailable>,
    /// The roots `file.*`, `dir.*` and `fs.listDir` serve (`NodeFileRoots`, default home).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_roots: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    pub command: String,
    pub reason: String,
}

impl ToolsStatus {
    pub fn of(registry: &Registry) -> ToolsStatus {
        ToolsStatus {
            served: registry.listed().iter().map(|command| command.name().to_owned()).collect(),
            unavailable: registry
                .unavailable()
                .into_iter()
                .map(|(command, reason)| Unavailable { command, reason })
                .collect(),
            file_roots: registry
                .file_roots()
                .map(|roots| roots.iter().map(|root| root.display().to_string()).collect()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpStatus {
    /// `listening` or `off`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Keeps the status file current while the node runs.
pub struct Reporter {
    path: PathBuf,
    file: StatusFile,
    gateway: Option<watch::Receiver<GatewayStatus>>,
    task: Option<JoinHandle<()>>,
    /// Bumped by every update and the stop; a write of an older generation (a blocking write
    /// still running when its task was replaced) is dropped, so the newest view always wins.
    generation: Arc<Mutex<u64>>,
    /// What the file says (or is about to say), for the node's own `app.*` tools.
    latest: StatusView,
    registry: Arc<Registry>,
}

/// The running node's status as its status file shows it, read in memory (no file, no lag).
#[derive(Clone)]
pub struct StatusView(Arc<Mutex<StatusFile>>);

impl StatusView {
    /// `{pid, startedAtMs, version, running, mcp:{state, endpoint?}, gateway:{state, ...}}`, the
    /// shape of `clawmcp node status --json`.
    pub fn json(&self) -> Value {
        serde_json::to_value(&*lock(&self.0)).unwrap_or_default()
    }

    fn set(&self, file: &StatusFile) {
        lock(&self.0).clone_from(file);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Reporter {
    /// Nothing is written until the first [`Reporter::update`].
    pub fn new(path: PathBuf, registry: Arc<Registry>) -> Reporter {
        let file = StatusFile {
            pid: std::process::id(),
            started_at_ms: now_ms(),
            version: env!("CARGO_PKG_VERSION").into(),
            running: true,
            mcp: McpStatus { state: "off".into(), endpoint: None },
            gateway: serde_json::json!({"state": "off"}),
            tools: ToolsStatus::of(&registry),
        };
        let latest = StatusView(Arc::new(Mutex::new(file.clone())));
        Reporter { path, file, gateway: None, task: None, generation: Arc::default(), latest, registry }
    }

    /// The in-memory view of what this reporter publishes.
    pub fn view(&self) -> StatusView {
        self.latest.clone()
    }

    /// What runs now: the MCP endpoint (if listening) and the gateway link (if any). The file
    /// follows the link's state from here on.
    pub fn update(&mut self, mcp_endpoint: Option<String>, link: Option<&NodeLink>) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let generation = self.next_generation();
        let guard = self.generation.clone();
        self.file.mcp = match mcp_endpoint {
            Some(endpoint) => McpStatus { state: "listening".into(), endpoint: Some(endpoint) },
            None => McpStatus { state: "off".into(), endpoint: None },
        };
        self.file.gateway = serde_json::json!({"state": "off"});
        let gateway = link.map(NodeLink::watch_status);
        self.gateway.clone_from(&gateway);
        let mut file = self.file.clone();
        self.latest.set(&file);
        let latest = self.latest.clone();
        let path = self.path.clone();
        let registry = self.registry.clone();
        self.task = Some({
            tokio::spawn(async move {
                let mut gateway = gateway;
                let mut last_hint = None;
                loop {
                    if let Some(gateway) = &mut gateway {
                        let current = gateway.borrow_and_update().clone();
                        file.gateway = serde_json::to_value(&current).unwrap_or_default();
                        if current.hint != last_hint {
                            log_hint(&current);
                            last_hint.clone_from(&current.hint);
                        }
                    }
                    file.tools = ToolsStatus::of(&registry);
                    latest.set(&file);
                    // Two fsyncs: off the runtime's threads, never in an invocation's path.
                    let (target, snapshot, guard) = (path.clone(), file.clone(), guard.clone());
                    let _ =
                        tokio::task::spawn_blocking(move || write_if_current(&guard, generation, &target, &snapshot))
                            .await;
                    // Until the link or what can be served changes.
                    loop {
                        let link_changed = async {
                            match &mut gateway {
                                Some(watch) => watch.changed().await.is_ok(),
                                None => std::future::pending().await,
                            }
                        };
                        tokio::select! {
                            open = link_changed => {
                                if !open {
                                    gateway = None;
                                }
                                break;
                            }
                            () = tokio::time::sleep(AVAILABILITY_POLL) => {
                                if ToolsStatus::of(&registry) != file.tools {
                                    break;
                                }
                            }
                        }
                    }
                    // A burst of changes (every answered invocation is one) is one write.
                    tokio::time::sleep(COALESCE).await;
                }
            })
        });
    }

    /// Records a clean stop.
    pub async fn stopped(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        if let Some(gateway) = &self.gateway {
            self.file.gateway = serde_json::to_value(&*gateway.borrow()).unwrap_or_default();
        }
        self.file.tools = ToolsStatus::of(&self.registry);
        mark_stopped(&mut self.file);
        self.latest.set(&self.file);
        let generation = self.next_generation();
        write_if_current(&self.generation, generation, &self.path, &self.file);
    }

    fn next_generation(&self) -> u64 {
        let mut current = lock(&self.generation);
        *current += 1;
        *current
    }
}

/// One line on stderr each time what the operator should do changes (not on every invoke).
fn log_hint(status: &GatewayStatus) {
    if let Some(hint) = &status.hint {
        tracing::warn!(state = ?status.state, pairing = ?status.pairing, "gateway: {hint}");
    }
}

/// A node that no longer runs serves nothing: the last endpoint and gateway facts stay for the
/// reader, the states say so, and no hint promises a retry that will not happen. A link that had
/// already stopped on its own (a spent setup code) keeps its hint: it says what to do next, not
/// that the node retries.
fn mark_stopped(file: &mut StatusFile) {
    file.running = false;
    file.mcp.state = "off".into();
    if let Some(gateway) = file.gateway.as_object_mut() {
        match gateway.get("state").and_then(Value::as_str) {
            Some("off" | "stopped") => {}
            _ => {
                gateway.insert("state".into(), "stopped".into());
                gateway.remove("hint");
            }
        }
    }
}

/// Writes `file` unless a newer generation has been started since.
fn write_if_current(current: &Mutex<u64>, generation: u64, path: &Path, file: &StatusFile) {
    let current = lock(current);
    if *current == generation {
        write(path, file);
    }
}

fn write(path: &Path, file: &StatusFile) {
    let text = serde_json::to_vec_pretty(file).unwrap_or_default();
    if let Err(error) = clawmcp_fs::write_private_atomic(path, &text) {
        tracing::warn!(path = %path.display(), %error, "cannot write the node status file");
    }
}

/// `clawmcp node status [--json]`.
pub fn run(args: NodeStatusArgs) -> anyhow::Result<ExitCode> {
    let data = data_dir(&args.data_dir)?;
    let path = data.status_path();
    let Some(file) = read(&data)? else {
        if args.json {
            output::data(
                &serde_json::json!({"running": false, "reason": "never started with this data dir"}).to_string(),
            );
        } else {
            output::data(&format!(
                "clawmcp node: not running (no {} yet: no node has run with this data dir)\nhint: `clawmcp node`",
                path.display()
            ));
        }
        return Ok(ExitCode::from(3));
    };
    if args.json {
        output::data(&serde_json::to_string(&file)?);
    } else {
        output::data(&describe(&file));
    }
    Ok(if file.running { ExitCode::SUCCESS } else { ExitCode::from(3) })
}

/// The data dir's status file, `None` when no node has run with it. A node killed without a
/// clean stop left `running: true` behind; it reads as stopped.
pub fn read(data: &DataDir) -> anyhow::Result<Option<StatusFile>> {
    let path = data.status_path();
    let rules = clawmcp_fs::StateRules { max_bytes: MAX_STATUS_BYTES, exposed: clawmcp_fs::Exposed::MakePrivate };
    let Some(bytes) = clawmcp_fs::read_state_file(&path, rules)? else { return Ok(None) };
    let mut file: StatusFile = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not a node status file: {e}", path.display()))?;
    if file.running && !i32::try_from(file.pid).is_ok_and(clawmcp_fs::pid_is_alive) {
        mark_stopped(&mut file);
    }
    Ok(Some(file))
}

fn describe(file: &StatusFile) -> String {
    let mut lines = Vec::new();
    lines.push(match file.running {
        true => format!("clawmcp node {}: running (pid {})", file.version, file.pid),
        false => format!("clawmcp node {}: not running (last run: pid {})", file.version, file.pid),
    });
    lines.push(match (&file.mcp.endpoint, file.running && file.mcp.state == "listening") {
        (Some(endpoint), true) => format!("  MCP server: listening on {endpoint}"),
        (Some(endpoint), false) => format!("  MCP server: off (last on {endpoint})"),
        (None, _) => "  MCP server: off (EnableMcpServer is false)".to_owned(),
    });
    let gateway = &file.gateway;
    let text = |key: &str| gateway.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    match text("state").as_str() {
        "off" => {
            lines.push("  gateway: off (EnableNodeMode is false; `clawmcp node --gateway-url URL` joins one)".into())
        }
        state => {
            lines.push(format!("  gateway: {} ({state})", text("url")));
            lines.push(format!("  node: {} `{}`", text("nodeId"), text("displayName")));
            let mut pairing = format!("  pairing: {}", text("pairing"));
            if let Some(request) = gateway.get("requestId").and_then(Value::as_str) {
                pairing.push_str(&format!(" (request {request})"));
            }
            lines.push(pairing);
            if let Some(invokes) = gateway.get("invokes").and_then(Value::as_u64) {
                lines.push(format!("  invocations answered: {invokes}"));
            }
            if let Some(error) = gateway.get("lastError").and_then(Value::as_str) {
                lines.push(format!("  last error: {error}"));
            }
            if let Some(hint) = gateway.get("hint").and_then(Value::as_str) {
                lines.push(format!("  hint: {hint}"));
            }
        }
    }
    lines.extend(describe_tools(&file.tools, file.running));
    lines.join("\n")
}

/// The tools lines of `clawmcp node status`.
fn describe_tools(tools: &ToolsStatus, running: bool) -> Vec<String> {
    let mut lines = vec![format!(
        "  tools {}: {}",
        if running { "served" } else { "served at the last stop" },
        if tools.served.is_empty() { "none".to_owned() } else { tools.served.join(", ") }
    )];
    for Unavailable { command, reason } in &tools.unavailable {
        lines.push(format!("  not served: {command}: {reason}"));
    }
    if let Some(roots) = &tools.file_roots {
        lines.push(format!(
            "  file roots (file.*, dir.*, fs.listDir): {} (`clawmcp settings set NodeFileRoots DIR:DIR` changes them)",
            if roots.is_empty() { "none".to_owned() } else { roots.join(", ") }
        ));
    }
    lines
}
