//! Shared setup for the `system_*` integration tests: a [`SystemCapability`] over a private data
//! directory whose exec-approvals policy allows everything (these tests are about running, not
//! about policy), registered in a [`Registry`] and served by an [`McpServer`] exactly as the node
//! host serves it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawmcp_mcp::{CallContext, DuplicatePolicy, McpServer, ProtocolVersion, RequestContext, ServerInfo};
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::settings::{DataDir, LiveSettings, Settings};
use clawmcp_node::system::SystemCapability;
use clawmcp_node::{InvokeRequest, NodeMcpService, Registry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A policy under which every command runs without a prompt.
pub const ALLOW_ALL_POLICY: &str = r#"{"version": 1, "defaults": {"security": "full", "ask": "off"}}"#;

pub struct Node {
    pub dir: tempfile::TempDir,
    pub data: DataDir,
    pub approvals: Arc<ExecApprovals>,
    pub capability: Arc<SystemCapability>,
    pub server: Arc<McpServer<NodeMcpService>>,
}

impl Node {
    /// A node whose policy allows every command.
    pub fn new() -> Self {
        Node::with_policy(ALLOW_ALL_POLICY)
    }

    pub fn with_policy(policy: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::at(dir.path().join("data"));
        data.ensure().unwrap();
        std::fs::write(data.exec_approvals_path(), policy).unwrap();
        let settings = Arc::new(LiveSettings::open(data.settings_path()).unwrap());
        let approvals = Arc::new(ExecApprovals::open(data.exec_approvals_path()));
        let capability = Arc::new(SystemCapability::new(settings, approvals.clone()));
        let registry = Arc::new(Registry::new());
        registry.register(capability.as_ref());
        let info = ServerInfo { name: "clawmcp-test".into(), version: "0".into() };
        let server = Arc::new(McpServer::new(info, Arc::new(NodeMcpService::new(registry)), DuplicatePolicy::Allow));
        Node { dir, data, approvals, capability, server }
    }

    /// Flips the "Run system tools" switch the way `clawmcp settings` does: by saving the file.
    pub fn set_run_enabled(&self, enabled: bool) {
        let path = self.data.settings_path();
        let mut settings = Settings::load(&path).unwrap();
        settings.node_system_run_enabled = enabled;
        settings.save(&path).unwrap();
    }

    /// Sends one JSON-RPC request and returns its `result` (or the whole frame on an error).
    pub async fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let frame: Value = serde_json::from_str(&self.raw_request(&body).await).unwrap();
        frame.get("result").cloned().unwrap_or(frame)
    }

    /// Sends one JSON-RPC message and returns the response frame exactly as a transport would
    /// write it.
    pub async fn raw_request(&self, body: &Value) -> String {
        self.raw_request_at(body, None).await
    }

    /// [`Node::raw_request`] from a client that names `version` (the HTTP `MCP-Protocol-Version`
    /// header); `None` is a client that names none.
    pub async fn raw_request_at(&self, body: &Value, version: Option<ProtocolVersion>) -> String {
        let body = body.to_string();
        let mut ctx = RequestContext::new(CancellationToken::new());
        ctx.protocol_version = version;
        let frame = self.server.handle(body.as_bytes(), ctx).await;
        frame.expect("a request gets a response")
    }

    /// `tools/call`; returns the MCP result (`content`, `isError`).
    pub async fn call(&self, name: &str, arguments: Value) -> Value {
        self.request(1, "tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// Sends a notification (no response).
    pub async fn notify(&self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        let reply = self.server.handle(body.as_bytes(), RequestContext::new(CancellationToken::new())).await;
        assert!(reply.is_none());
    }

    pub async fn tool_names(&self) -> Vec<String> {
        let listed = self.request(1, "tools/list", json!({})).await;
        listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    }

    pub fn scratch(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// The text of a tool result's first content block.
/// A `system.run` invocation of `args`, as the MCP transport would build it.
pub fn run_request(args: Value) -> InvokeRequest {
    InvokeRequest {
        id: "test".into(),
        command: "system.run".into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: clawmcp_node::Caller::Mcp,
    }
}

/// A call context that only carries `cancel`.
pub fn context(cancel: &CancellationToken) -> CallContext {
    CallContext { cancel: cancel.clone(), progress: None, meta: None, request: None }
}

pub fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().expect("a text block")
}

/// The JSON payload of a successful tool result.
pub fn payload_of(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "expected success, got {result}");
    serde_json::from_str(text_of(result)).unwrap()
}

/// True once `pid` no longer runs: gone, or a zombie (finished, waiting for a parent that may
/// never reap it: orphans go to init, and a container's init may not reap).
pub fn pid_is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rfind(')').and_then(|end| stat[end + 1..].split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        }
        Err(_) => true,
    }
}

pub fn pids_in(text: &str) -> Vec<i32> {
    text.split_whitespace().map(|p| p.parse().expect("a pid")).collect()
}

/// A script that starts two background sleepers and waits for them, appending every pid of the
/// tree (the two sleepers and the shell, in no set order) to `pid_file`. One sleeper escapes into
/// a session (and process group) of its own with `setsid`, and writes its pid only once it has.
pub fn tree_script(pid_file: &Path) -> String {
    format!(
        "sleep 1000 & echo $! >> {0}; setsid sh -c 'echo $$ >> {0}; exec sleep 1000' & echo $$ >> {0}; wait",
        pid_file.display()
    )
}

/// Waits until `pid_file` lists the three pids of [`tree_script`] and returns them. The limit is
/// a failure bound (the script never started), not a performance assertion.
pub async fn tree_pids(pid_file: &Path) -> Vec<i32> {
    for _ in 0..2000 {
        if let Ok(text) = std::fs::read_to_string(pid_file)
            && text.lines().count() == 3
        {
            return pids_in(&text);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the process tree never started");
}

/// Waits until exactly one command is waiting for approval and returns its id. The limit is a
/// failure bound, not a performance assertion.
pub async fn single_pending(approvals: &ExecApprovals) -> String {
    for _ in 0..2000 {
        if let [pending] = approvals.pending().as_slice() {
            return pending.id.clone();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no command ever waited for approval");
}

/// Waits until every pid is dead. For checks after a drop, where the kill is asynchronous; the
/// limit is a failure bound, not a performance assertion.
pub async fn wait_until_dead(pids: &[i32]) {
    for _ in 0..2000 {
        if pids.iter().all(|&pid| pid_is_dead(pid)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let alive: Vec<_> = pids.iter().filter(|&&pid| !pid_is_dead(pid)).collect();
    panic!("pids {alive:?} survived");
}
