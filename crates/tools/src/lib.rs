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
//! - `LOCAL_TOOLS`: the registry, one constructor per tool; each tool is one module building its
//!   own [`BridgeTool`] (a `clawmcp_mcp::ToolDef`: descriptor and handler in one value) around
//!   what its handler needs. Listing, dispatch and `--tools` filtering derive from the
//!   resulting `ToolSet`, as on the node.
//! - [`LocalTools`]: what a server holds: the workspace, the [`JobRegistry`] of background
//!   jobs `exec` hands to `process`, and the tools bound to both. Dropping it kills every job
//!   still running.
//!
//! # Arguments
//!
//! A call's arguments are checked against the tool's input schema before its handler runs
//! (`clawmcp_mcp::arguments`), as on every surface. The schemas of `read`, `write`, `edit`,
//! `process` (OpenClaw's), `glob` and `grep` are published as they are, and their parsers
//! (`args`) take more than those schemas say in one way: a number or a boolean sent as a string
//! (`"limit": "10"`), which some clients do for every argument. Those tools are checked with
//! `Checking::StringifiedScalars`, so the check refuses nothing their parsers (and upstream's)
//! accept. `exec` is left to its own parser (`Checking::Handler`): it also reads `cmd` for the
//! required `command` (the upstream bridge's name), which its published schema cannot say.
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

use std::future::Future;
use std::sync::{Arc, LazyLock};

use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolDef, ToolOutcome, ToolResult, ToolSet};
use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use jobs::JobRegistry;
pub use workspace::Workspace;

/// What a tool of `clawmcp tools` is called with: its MCP arguments.
pub type Arguments = Map<String, Value>;

/// One tool of `clawmcp tools` (local, `sessions_yield` or forwarded to the gateway): its
/// descriptor and its handler in one value (`clawmcp_mcp::tool`).
pub type BridgeTool = ToolDef<Arguments>;

/// What the local tools' handlers work with, captured by each when it is built: the workspace,
/// and the background jobs `exec` starts and `process` manages (none for a one-off caller:
/// `exec` then runs in the foreground only and `process` finds no sessions).
#[derive(Debug, Clone)]
pub(crate) struct ToolContext {
    workspace: Arc<Workspace>,
    jobs: Option<Arc<JobRegistry>>,
}

/// Every local tool, in advertised order (the upstream bridge's: read, write, edit, exec, glob,
/// grep, process): each module builds its own [`BridgeTool`] around a [`ToolContext`]. This is
/// the one list; names, descriptors, dispatch and filtering derive from it.
const LOCAL_TOOLS: [fn(&ToolContext) -> BridgeTool; 7] =
    [read::tool, write::tool, edit::tool, exec::tool, glob::tool, grep::tool, process::tool];

fn local_tool_set(context: &ToolContext) -> ToolSet<Arguments> {
    ToolSet::new(LOCAL_TOOLS.iter().map(|tool| tool(context)))
}

/// The descriptors of every local tool, in advertised order.
pub fn local_tools() -> Vec<Tool> {
    let context = ToolContext { workspace: Arc::new(Workspace::new(std::env::temp_dir())), jobs: None };
    LOCAL_TOOLS.iter().map(|tool| tool(&context).tool().clone()).collect()
}

/// The names of the local tools, in advertised order.
pub fn local_tool_names() -> &'static [String] {
    static NAMES: LazyLock<Vec<String>> = LazyLock::new(|| local_tools().into_iter().map(|tool| tool.name).collect());
    &NAMES
}

/// A local tool's [`BridgeTool`]: `descriptor`, and `run` called with the context and the
/// call's arguments (checked as `checking` says first). `run` answers with an MCP result, which
/// is what these tools build; it reaches the client unchanged.
fn local_tool<F, Fut>(descriptor: Tool, checking: Checking, context: &ToolContext, run: F) -> BridgeTool
where
    F: Fn(ToolContext, Arguments, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    let context = context.clone();
    ToolDef::new(descriptor, move |arguments, ctx| run(context.clone(), arguments, ctx).map(ToolOutcome::from).boxed())
        .with_checking(checking)
}

/// The local tools of one server: the workspace they work in and the background jobs `exec`
/// started. Dropping it (and the calls still running) SIGKILLs every job still running, with
/// everything it started, so no child outlives the server; [`LocalTools::shutdown`] stops them
/// gracefully first.
pub struct LocalTools {
    context: ToolContext,
    tools: ToolSet<Arguments>,
}

impl std::fmt::Debug for LocalTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTools").field("context", &self.context).finish_non_exhaustive()
    }
}

impl LocalTools {
    pub fn new(workspace: Workspace) -> Self {
        let context = ToolContext { workspace: Arc::new(workspace), jobs: Some(Arc::new(JobRegistry::new())) };
        LocalTools { tools: local_tool_set(&context), context }
    }

    pub fn workspace(&self) -> &Workspace {
        &self.context.workspace
    }

    /// The local tools, each bound to this server's workspace and jobs.
    pub fn tools(&self) -> &ToolSet<Arguments> {
        &self.tools
    }

    /// Runs `name` if it is a local tool (arguments checked first); `None` means "not mine".
    pub async fn call(&self, name: &str, args: &Arguments, ctx: &CallContext) -> Option<ToolResult> {
        let tool = self.tools.find(name)?;
        Some(tool.call_mcp(args.clone(), ctx.clone()).await)
    }

    /// Stops every background job (SIGTERM, grace, SIGKILL, whole process trees) and waits
    /// until all are gone: for a server about to exit.
    pub async fn shutdown(&self) {
        if let Some(jobs) = &self.context.jobs {
            jobs.shutdown().await;
        }
    }
}

/// Runs `name` if it is a local tool (arguments checked first); `None` means "not mine"
/// (forward it to the gateway). For one-off callers with no [`LocalTools`]: nothing outlives
/// the call, so `exec` runs in the foreground only (stdin at /dev/null) and `process` finds no
/// sessions.
pub async fn call_local(name: &str, args: &Arguments, ctx: &CallContext, workspace: &Workspace) -> Option<ToolResult> {
    let context = ToolContext { workspace: Arc::new(workspace.clone()), jobs: None };
    let tool = local_tool_set(&context).find(name)?;
    Some(tool.call_mcp(args.clone(), ctx.clone()).await)
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
    fn each_module_names_its_own_tool() {
        let names = [read::NAME, write::NAME, edit::NAME, exec::NAME, glob::NAME, grep::NAME, process::NAME];
        assert_eq!(local_tool_names(), names);
        assert!(!local_tool_names().iter().any(|name| name == "sessions_spawn"));
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
    async fn what_upstream_accepts_passes_the_argument_check_and_a_wrong_shape_does_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let workspace = Workspace::new(dir.path());
        let call = |name: &'static str, args: Value| {
            let workspace = workspace.clone();
            async move { call_local(name, args.as_object().unwrap(), &CallContext::detached(), &workspace).await.unwrap() }
        };
        // Numbers and booleans as strings, as some clients send every argument.
        let read = call("read", serde_json::json!({"path": "a.txt", "offset": "2", "limit": "1"})).await;
        let text = read.first_text().unwrap();
        assert!(!read.is_error && text.trim_start().starts_with("2\ttwo") && !text.contains("three"), "{text}");
        let grep =
            call("grep", serde_json::json!({"pattern": "TWO", "-i": "true", "-n": "false", "head_limit": "5"})).await;
        assert!(!grep.is_error && grep.first_text().unwrap().contains("two"), "{:?}", grep.first_text());
        let edit =
            call("edit", serde_json::json!({"path": "a.txt", "oldText": "o", "newText": "0", "replace_all": "true"}))
                .await;
        assert!(!edit.is_error, "{:?}", edit.first_text());
        // `cmd`, the upstream bridge's name for `command`, which the schema cannot require.
        let exec = call("exec", serde_json::json!({"cmd": "echo hi", "timeout": "5"})).await;
        assert!(!exec.is_error && exec.first_text().unwrap().starts_with("hi"), "{:?}", exec.first_text());
        // A wrong shape is refused before the tool runs, naming the argument and what it is.
        let refused = call("read", serde_json::json!({"path": "a.txt", "limit": "ten"})).await;
        assert!(refused.is_error);
        assert!(
            refused.first_text().unwrap().starts_with(
                "Invalid arguments for read: `limit` must be a number, not \"ten\" (Maximum number of lines to read)"
            ),
            "{:?}",
            refused.first_text()
        );
        let refused = call("write", serde_json::json!({"path": "b.txt", "content": ["x"]})).await;
        assert!(refused.first_text().unwrap().contains("`content` must be a string, not [\"x\"]"));
        assert!(!dir.path().join("b.txt").exists(), "the tool did not run");
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
