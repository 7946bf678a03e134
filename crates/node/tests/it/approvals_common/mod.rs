//! Shared fixture for the `approvals_*` integration tests: a private temp dir holding fake
//! executables (never run, only resolved) and the policy file, plus helpers to wait for prompts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawmcp_node::approvals::{Approver, Authorization, Denial, ExecApprovals, PendingApproval, RunRequest};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub approvals: Arc<ExecApprovals>,
}

impl Fixture {
    pub fn new() -> Self {
        Fixture::build(None)
    }

    pub fn with_policy(policy: Value) -> Self {
        Fixture::build(Some(policy))
    }

    fn build(policy: Option<Value>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        for name in ["tool", "other"] {
            let path = root.join("bin").join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let data = root.join("data");
        fs::create_dir_all(&data).unwrap();
        let fixture =
            Fixture { _dir: dir, approvals: Arc::new(ExecApprovals::open(data.join("exec-approvals.json"))), root };
        if let Some(policy) = policy {
            fixture.write_policy(&policy);
        }
        fixture
    }

    pub fn policy_path(&self) -> PathBuf {
        self.root.join("data/exec-approvals.json")
    }

    pub fn write_policy(&self, policy: &Value) {
        fs::write(self.policy_path(), serde_json::to_string_pretty(policy).unwrap()).unwrap();
    }

    pub fn read_policy(&self) -> Value {
        serde_json::from_str(&fs::read_to_string(self.policy_path()).unwrap()).unwrap()
    }

    /// Another fake executable in the fixture's `bin`.
    pub fn add_exe(&self, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root.join("bin").join(name);
        fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn exe(&self, name: &str) -> String {
        self.root.join("bin").join(name).to_str().unwrap().to_string()
    }

    pub fn request(&self, name: &str, args: &[&str]) -> RunRequest {
        let mut argv = vec![self.exe(name)];
        argv.extend(args.iter().map(|a| a.to_string()));
        RunRequest { argv, ..RunRequest::default() }
    }

    pub async fn authorize(&self, request: &RunRequest) -> Result<Authorization, Denial> {
        self.approvals.authorize(request, &Approver::Terminal, &CancellationToken::new()).await
    }

    pub async fn authorize_as(&self, request: &RunRequest, approver: &Approver) -> Result<Authorization, Denial> {
        self.approvals.authorize(request, approver, &CancellationToken::new()).await
    }

    /// Starts an authorization in the background (it may wait for a prompt).
    pub fn spawn(&self, request: RunRequest, cancel: CancellationToken) -> JoinHandle<Result<Authorization, Denial>> {
        let approvals = self.approvals.clone();
        tokio::spawn(async move { approvals.authorize(&request, &Approver::Terminal, &cancel).await })
    }

    /// Yields (without letting paused time advance) until `count` prompts are pending.
    pub async fn wait_pending(&self, count: usize) -> Vec<PendingApproval> {
        for _ in 0..10_000 {
            let pending = self.approvals.pending();
            if pending.len() >= count {
                return pending;
            }
            tokio::task::yield_now().await;
        }
        panic!("expected {count} pending prompts, have {:?}", self.approvals.pending());
    }
}

pub fn path_exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}
