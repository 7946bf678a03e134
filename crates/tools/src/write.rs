//! `write`: create or replace a whole file, atomically.
//!
//! Schema is OpenClaw's (`path` alias `file_path`, `content`; `docs/tools-bridge.md` §2). Compared
//! with the upstream bridge (plain overwrite, null content written as an empty file) the
//! write is atomic, keeps the existing file's mode, refuses directories and non-string content,
//! and writes through a symlink to its target instead of replacing the link. It only ever
//! creates or replaces a regular file: a FIFO, device node or socket at the path is refused and
//! stays what it was, and a file changed or created by another program during the write is not
//! overwritten (a conflict error instead; see `atomic`).

use std::fs;
use std::io;
use std::path::Path;

use clawmcp_fs::FileKind;

use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolAnnotations, ToolResult};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{Args, Param};
use crate::atomic::{self, Basis};
use crate::fs_error;
use crate::workspace::{TargetPath, Workspace};
use crate::{BridgeTool, ToolContext};

pub(crate) const NAME: &str = "write";

const PATH: Param = Param::new(&["path", "file_path"]);
const CONTENT: Param = Param::new(&["content"]);

/// Overwrites files (destructive) but writing the same content twice leaves the same result.
const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations { read_only_hint: false, destructive_hint: true, idempotent_hint: true, open_world_hint: false };

/// The `write` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Numbers and booleans may come as strings; the parser reads them (see the crate docs).
    crate::local_tool(descriptor(), Checking::StringifiedScalars, context, |context, arguments, ctx| async move {
        run(&context.workspace, &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    let path = json!({"type": "string", "description": "Path to the file to write (relative or absolute)"});
    Tool {
        title: None,
        output_schema: None,
        name: NAME.into(),
        description: "Write content to a file, creating it or replacing it entirely. Missing parent directories \
                      are created. The write is atomic (a reader sees the old file or the new one, never a partial \
                      file) and an existing file keeps its permissions. Prefer edit to change part of an existing \
                      file. Relative paths resolve against the workspace root."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": path,
                "file_path": path,
                "content": {"type": "string", "description": "Content to write to the file"},
            },
            "required": ["content"],
        })
        .into(),
        annotations: Some(ANNOTATIONS),
    }
}

pub(crate) async fn run(workspace: &Workspace, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
    let parsed = Args::new(args);
    let request = parsed
        .required_string(PATH, false)
        .and_then(|path| Ok((path, parsed.required_string(CONTENT, true)?)))
        .map_err(|e| e.to_string())
        .and_then(|(path, content)| Ok((workspace.resolve(&path)?, content)));
    let (target, content) = match request {
        Ok(request) => request,
        Err(message) => return ToolResult::error(message),
    };
    let cancel = ctx.cancel.clone();
    let path = target.abs.clone();
    crate::blocking_locked(NAME, &path, &ctx.cancel, move |real| {
        real.map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => format!(
                "Cannot write {}: it is a symlink whose target does not exist. Create the target or write another \
                 path.",
                target.describe()
            ),
            _ => fs_error::describe("follow the symlink", &target, &e),
        })
        .and_then(|real| write_file(&target, &real, content.as_bytes(), &cancel))
        .unwrap_or_else(ToolResult::error)
    })
    .await
}

/// Writes `real` (the target's real path, whose lock the caller holds).
fn write_file(
    target: &TargetPath,
    real: &Path,
    bytes: &[u8],
    cancel: &CancellationToken,
) -> Result<ToolResult, String> {
    let io_error = |action: &str, e: io::Error| fs_error::describe(action, target, &e);
    // What is there now decides what the rename may replace: nothing, or this regular file.
    // Anything else (a FIFO, a device node, a socket, a directory) is refused, never replaced.
    let existing = match fs::symlink_metadata(real) {
        Ok(meta) => match FileKind::of(&meta) {
            None => Some(meta),
            Some(FileKind::Directory) => {
                return Err(format!(
                    "Cannot write {}: it is a directory. Pass the path of a file inside it.",
                    target.describe()
                ));
            }
            Some(kind) => return Err(fs_error::not_regular(NAME, target, kind)),
        },
        // A missing parent, or a file where a parent should be: creating the parents says which.
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => None,
        Err(e) => return Err(io_error("write", e)),
    };
    if existing.is_none()
        && let Some(parent) = real.parent().filter(|p| !p.as_os_str().is_empty())
    {
        fs::create_dir_all(parent).map_err(|e| io_error("create the parent directories of", e))?;
    }
    if cancel.is_cancelled() {
        return Err(CANCELLED.into());
    }
    let basis = existing.as_ref().map_or(Basis::Missing, Basis::Unread);
    atomic::replace(real, basis, bytes).map_err(|e| {
        fs_error::replace_failure(
            NAME,
            target,
            &e,
            "Read the file to see what changed, then write again if you still mean to replace it.",
        )
    })?;
    Ok(ToolResult::text(format!("Successfully wrote {} bytes to {}", bytes.len(), target.given)))
}
