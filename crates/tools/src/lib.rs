//! The local coding tools of `clawmcp tools` (`docs/tools-bridge.md` §2): `read`, `write`, `edit`,
//! `exec`, `glob`, `grep`, `process`, run in this process against a [`Workspace`] instead of being
//! proxied to the gateway.
//!
//! # Why they exist and what they promise
//!
//! The upstream Node bridge implemented these tools itself with known defects: whole-file reads,
//! first-match edits, errors swallowed as "(no matches)", globs without `{a,b}`, an `exec` without
//! timeout and a `process kill` that killed nothing. Ours keep OpenClaw's own schemas where
//! OpenClaw has the tool (`read`, `write`, `edit`, with the Claude Code aliases
//! `file_path`/`old_string`/`new_string`; `exec` and `process`) and Claude-Code-like schemas for
//! `glob` and `grep`, which OpenClaw does not ship. Bad input never corrupts a file: writes are
//! atomic and an edit that fails changes nothing. A command `exec` runs is always stoppable: a
//! timeout, a cancellation or `process kill` ends its whole process tree (the `clawmcp-process`
//! crate, shared with the node's `system.run`).
//!
//! # Layout
//!
//! - [`LocalTool`]: the registry; one variant per tool, each tool one module exposing its
//!   descriptor and `run`.
//! - [`LocalTools`]: what a server holds: the workspace and the [`JobRegistry`] of background
//!   jobs `exec` hands to `process`. Dropping it kills every job still running.
//! - `workspace`: path resolution; `args`: aliased arguments; `fs_error`: I/O error wording;
//!   `atomic`: atomic replace with conflict detection; `path_lock`: one writer per file in this
//!   process; `text`: lossy lines; `walk` and `ignore_files`: the ignore-aware walk glob and
//!   grep share; `jobs`: the bounded job registry.
//! - [`bridge`]: the `clawmcp tools` server around them: gateway tools over `POST
//!   /tools/invoke` (live discovery, snapshots, aliases, deadline), the allowlist and
//!   `sessions_yield`.

mod args;
mod atomic;
pub mod bridge;
mod edit;
mod exec;
mod fs_error;
mod glob;
mod grep;
mod ignore_files;
mod jobs;
mod path_lock;
mod process;
mod read;
mod text;
mod walk;
mod workspace;
mod write;

use clawmcp_mcp::{CANCELLED, CallContext, Tool, ToolResult};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use jobs::JobRegistry;
pub use workspace::Workspace;

/// One local tool. The order of [`LocalTool::ALL`] is the advertised order (the upstream
/// bridge's: read, write, edit, exec, glob, grep, process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalTool {
    Read,
    Write,
    Edit,
    Exec,
    Glob,
    Grep,
    Process,
}

impl LocalTool {
    pub const ALL: [LocalTool; 7] = [
        LocalTool::Read,
        LocalTool::Write,
        LocalTool::Edit,
        LocalTool::Exec,
        LocalTool::Glob,
        LocalTool::Grep,
        LocalTool::Process,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LocalTool::Read => read::NAME,
            LocalTool::Write => write::NAME,
            LocalTool::Edit => edit::NAME,
            LocalTool::Exec => exec::NAME,
            LocalTool::Glob => glob::NAME,
            LocalTool::Grep => grep::NAME,
            LocalTool::Process => process::NAME,
        }
    }

    pub fn from_name(name: &str) -> Option<LocalTool> {
        LocalTool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// The `tools/list` entry: name, description, JSON Schema, annotations.
    pub fn descriptor(self) -> Tool {
        match self {
            LocalTool::Read => read::descriptor(),
            LocalTool::Write => write::descriptor(),
            LocalTool::Edit => edit::descriptor(),
            LocalTool::Exec => exec::descriptor(),
            LocalTool::Glob => glob::descriptor(),
            LocalTool::Grep => grep::descriptor(),
            LocalTool::Process => process::descriptor(),
        }
    }

    /// Runs the tool. Every failure is a `ToolResult::error` saying what, why and what to do.
    /// The file work runs on tokio's blocking pool and polls `ctx.cancel` as it goes;
    /// `write`/`edit` check it only before they commit, so "cancelled" never hides a write.
    /// `exec` and `process` keep background jobs in `jobs`; without one, `exec` runs in the
    /// foreground only.
    pub async fn run(
        self,
        workspace: &Workspace,
        jobs: Option<&JobRegistry>,
        args: &Map<String, Value>,
        ctx: &CallContext,
    ) -> ToolResult {
        match self {
            LocalTool::Read => read::run(workspace, args, ctx).await,
            LocalTool::Write => write::run(workspace, args, ctx).await,
            LocalTool::Edit => edit::run(workspace, args, ctx).await,
            LocalTool::Exec => exec::run(workspace, jobs, args, ctx).await,
            LocalTool::Glob => glob::run(workspace, args, ctx).await,
            LocalTool::Grep => grep::run(workspace, args, ctx).await,
            LocalTool::Process => process::run(jobs, args, ctx).await,
        }
    }
}

/// The local tools of one server: the workspace they work in and the background jobs `exec`
/// started. Dropping it SIGKILLs every job still running, with everything it started, so no child
/// outlives the server; [`LocalTools::shutdown`] stops them gracefully first.
#[derive(Debug)]
pub struct LocalTools {
    workspace: Workspace,
    jobs: JobRegistry,
}

impl LocalTools {
    pub fn new(workspace: Workspace) -> Self {
        LocalTools { workspace, jobs: JobRegistry::new() }
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Runs `name` if it is a local tool; `None` means "not mine" (forward it to the gateway).
    pub async fn call(&self, name: &str, args: &Map<String, Value>, ctx: &CallContext) -> Option<ToolResult> {
        let tool = LocalTool::from_name(name)?;
        Some(tool.run(&self.workspace, Some(&self.jobs), args, ctx).await)
    }

    /// Stops every background job (SIGTERM, grace, SIGKILL, whole process trees) and waits
    /// until all are gone: for a server about to exit.
    pub async fn shutdown(&self) {
        self.jobs.shutdown().await;
    }
}

/// The descriptors of every local tool, in advertised order.
pub fn local_tools() -> Vec<Tool> {
    LocalTool::ALL.into_iter().map(LocalTool::descriptor).collect()
}

/// Runs `name` if it is a local tool; `None` means "not mine" (forward it to the gateway).
/// For one-off callers with no [`LocalTools`]: nothing outlives the call, so `exec` runs in
/// the foreground only (stdin at /dev/null) and `process` finds no sessions.
pub async fn call_local(
    name: &str,
    args: &Map<String, Value>,
    ctx: &CallContext,
    workspace: &Workspace,
) -> Option<ToolResult> {
    let tool = LocalTool::from_name(name)?;
    Some(tool.run(workspace, None, args, ctx).await)
}

/// Runs blocking file work off the async threads. A panic becomes a tool error rather than
/// taking the server down.
async fn blocking<F>(tool: &'static str, work: F) -> ToolResult
where
    F: FnOnce() -> ToolResult + Send + 'static,
{
    run_blocking(tool, work).await.unwrap_or_else(|error| error)
}

/// [`blocking`] for work that returns something other than the result: `Err` is the panic, as
/// a tool error.
async fn run_blocking<T, F>(tool: &'static str, work: F) -> Result<T, ToolResult>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|err| {
        ToolResult::error(format!(
            "Internal error in the {tool} tool: {err}. This is a clawmcp bug; please report it with the arguments used."
        ))
    })
}

/// Runs `work` off the async threads while holding this process's lock on the file at `path`
/// (`write` and `edit`), so that no two of them interleave their read and rename. `work` gets
/// the file's [`atomic::real_path`] (the lock's key), or the error resolving it (then no lock
/// is held: there is nothing to write). Waiting for the lock ends early with [`CANCELLED`].
async fn blocking_locked<F>(
    tool: &'static str,
    path: &std::path::Path,
    cancel: &CancellationToken,
    work: F,
) -> ToolResult
where
    F: FnOnce(std::io::Result<std::path::PathBuf>) -> ToolResult + Send + 'static,
{
    let abs = path.to_path_buf();
    let real = match run_blocking(tool, move || atomic::real_path(&abs)).await {
        Ok(real) => real,
        Err(panicked) => return panicked,
    };
    let guard = match &real {
        Ok(key) => match path_lock::lock(key.clone(), cancel).await {
            Some(guard) => Some(guard),
            None => return ToolResult::error(CANCELLED),
        },
        Err(_) => None,
    };
    blocking(tool, move || {
        let _held = guard;
        work(real)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_not_local() {
        for tool in LocalTool::ALL {
            assert_eq!(LocalTool::from_name(tool.name()), Some(tool));
            assert_eq!(tool.descriptor().name, tool.name());
        }
        assert_eq!(LocalTool::from_name("exec"), Some(LocalTool::Exec));
        assert_eq!(LocalTool::from_name("process"), Some(LocalTool::Process));
        assert_eq!(LocalTool::from_name("sessions_spawn"), None);
    }

    #[test]
    fn advertised_order_matches_the_upstream_bridge() {
        let names: Vec<String> = local_tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["read", "write", "edit", "exec", "glob", "grep", "process"]);
    }

    #[test]
    fn every_schema_is_an_object_whose_required_keys_are_properties() {
        for tool in local_tools() {
            let schema = &tool.input_schema.to_value();
            assert_eq!(schema["type"], "object", "{}", tool.name);
            let properties = schema["properties"].as_object().unwrap();
            for key in schema["required"].as_array().unwrap() {
                assert!(properties.contains_key(key.as_str().unwrap()), "{}: {key}", tool.name);
            }
            assert!(tool.annotations.is_some(), "{}", tool.name);
            assert!(tool.description.len() > 80, "{}: description too thin", tool.name);
        }
    }

    #[tokio::test]
    async fn a_cancelled_call_stops_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let workspace = Workspace::new(dir.path());
        let ctx = CallContext::detached();
        ctx.cancel.cancel();
        let calls = [
            ("read", serde_json::json!({"path": "a.txt"})),
            ("write", serde_json::json!({"path": "a.txt", "content": "new"})),
            ("edit", serde_json::json!({"path": "a.txt", "oldText": "old", "newText": "new"})),
            ("glob", serde_json::json!({"pattern": "*"})),
            ("grep", serde_json::json!({"pattern": "old"})),
            ("exec", serde_json::json!({"command": "echo new > a.txt"})),
            ("process", serde_json::json!({"action": "list"})),
        ];
        for (name, args) in calls {
            let result = call_local(name, args.as_object().unwrap(), &ctx, &workspace).await.unwrap();
            assert!(result.is_error, "{name}");
            assert_eq!(result.first_text(), Some(clawmcp_mcp::CANCELLED), "{name}");
        }
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "old\n");
    }

    #[tokio::test]
    async fn call_local_returns_none_for_gateway_tools() {
        let workspace = Workspace::new(std::env::temp_dir());
        let ctx = CallContext::detached();
        assert!(call_local("web_search", &Map::new(), &ctx, &workspace).await.is_none());
        let missing = call_local("read", &Map::new(), &ctx, &workspace).await.unwrap();
        assert!(missing.is_error);
        assert_eq!(missing.first_text(), Some("Missing required parameter: path (path or file_path)"));
    }
}
