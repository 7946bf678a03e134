//! Shared fixtures for the `exec` and `process` integration tests: a server-like [`Bridge`]
//! (a temp-dir workspace and a `LocalTools` with its job registry), and ways to prove that a
//! process is gone. It reads results with `common`'s helpers.

use std::time::Duration;

use clawmcp_mcp::{CallContext, ToolResult};
use clawmcp_tools::{LocalTools, Workspace};
use serde_json::{Value, json};

// The result readers are the ones every local-tool test uses (`common`).
pub use crate::common::{err_text, ok_text};

pub struct Bridge {
    pub dir: tempfile::TempDir,
    pub tools: LocalTools,
}

impl Bridge {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tools = LocalTools::new(Workspace::new(dir.path()));
        Bridge { dir, tools }
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolResult {
        self.call_with(tool, args, &CallContext::detached()).await
    }

    pub async fn call_with(&self, tool: &str, args: Value, ctx: &CallContext) -> ToolResult {
        let args = args.as_object().cloned().expect("arguments must be an object");
        self.tools.call(tool, &args, ctx).await.expect("a local tool")
    }

    /// Starts `command` in the background; returns its session id and leader pid.
    pub async fn start(&self, command: Value) -> (String, i32) {
        let result = self.call("exec", json!({"command": command, "background": true})).await;
        running_session(&result)
    }

    /// Polls (waiting up to a second each time) until the output gathered so far satisfies
    /// `done`, or the process ended. Returns everything gathered.
    pub async fn poll_until(&self, id: &str, done: impl Fn(&str) -> bool) -> String {
        self.poll_while(id, |gathered| !done(gathered)).await.0
    }

    /// Polls until the process has ended; returns the output gathered and the final status
    /// line (`Process exited with code 0.`).
    pub async fn poll_to_end(&self, id: &str) -> (String, String) {
        self.poll_while(id, |_| true).await
    }

    async fn poll_while(&self, id: &str, more: impl Fn(&str) -> bool) -> (String, String) {
        let mut gathered = String::new();
        loop {
            let result = self.call("process", json!({"action": "poll", "sessionId": id, "timeout": 1000})).await;
            let text = ok_text(&result);
            let (output, status) = text.rsplit_once("\n\n").expect("output, then the status line");
            if output != "(no new output)" {
                gathered.push_str(output);
                gathered.push('\n');
            }
            if status != "Process still running." || !more(&gathered) {
                return (gathered, status.to_string());
            }
        }
    }
}

/// `(session id, pid)` from `Command still running (session bg-1, pid 4242). ...`.
pub fn running_session(result: &ToolResult) -> (String, i32) {
    let text = ok_text(result);
    let rest = text.strip_prefix("Command still running (session ").unwrap_or_else(|| panic!("not running: {text}"));
    let (id, rest) = rest.split_once(", pid ").unwrap();
    let (pid, _) = rest.split_once(')').unwrap();
    (id.to_string(), pid.parse().unwrap())
}

pub fn pids_in(text: &str) -> Vec<i32> {
    text.split_whitespace().filter_map(|word| word.parse().ok()).collect()
}

/// True once `pid` is gone or a zombie. Orphaned zombies may linger on machines whose PID 1
/// does not reap; a zombie has finished running, so it counts as dead.
pub fn pid_is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let after_name = &stat[stat.rfind(')').expect("a /proc stat line") + 1..];
            matches!(after_name.split_whitespace().next(), Some("Z" | "X"))
        }
        Err(_) => true,
    }
}

/// Waits for a process already sent SIGKILL to die (the kernel delivers it, not us). The bound
/// only turns a hang into a failure.
pub async fn wait_until_dead(pid: i32) {
    for _ in 0..2_000 {
        if pid_is_dead(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("pid {pid} is still alive 10 s after SIGKILL");
}

/// Waits until `path` holds at least `lines` lines (a script reporting its pids).
pub async fn wait_for_lines(path: &std::path::Path, lines: usize) -> String {
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
