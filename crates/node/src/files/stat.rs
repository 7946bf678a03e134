//! `file.stat {path, followSymlinks?, preflightOnly?, expectedCanonicalPath?, expectedBinding?}`
//! -> `{ok, path, type: "file"|"directory", size, mtimeMs, binding, preflightOnly?}`.

use std::sync::LazyLock;

use clawmcp_mcp::{ToolAnnotations, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use crate::capability::CommandSpec;
use crate::files::{
    FilePolicy, FileResult, Identity, answer, canonical_for_read, check_canonical, check_existing_binding, display,
    flag, mtime_ms, open_dir, open_file, requested_path, unsupported,
};

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "file.stat",
        title: Some("File metadata"),
        output_schema: None,
        description: Some(
            "Metadata of one file or directory on this machine, inside the roots its owner serves (NodeFileRoots, \
             default the home directory). path is absolute; followSymlinks (default false) follows a path that \
             resolves through a symlink instead of refusing it. Returns {ok, path (canonical), type: file|directory, \
             size, mtimeMs, binding: {kind:\"existing\", device, inode}}. preflightOnly: true asks for the same \
             without acting; expectedCanonicalPath / expectedBinding (from a preflight) make the call refuse \
             (CANONICAL_PATH_CHANGED) if the path now leads elsewhere. A refusal is {ok:false, code, message, \
             canonicalPath}.",
        ),
        input_schema: Some(super::schema(json!({}))),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

pub fn run(policy: &FilePolicy, args: &Map<String, Value>) -> ToolOutcome {
    answer("file.stat", stat(policy, args).map(ToolOutput::from))
}

fn stat(policy: &FilePolicy, args: &Map<String, Value>) -> FileResult<Value> {
    let requested = requested_path(args)?;
    let canonical = canonical_for_read(policy, &requested, flag(args, "followSymlinks"), "path not found")?;
    check_canonical(args, &canonical)?;
    let link = std::fs::symlink_metadata(&canonical)
        .map_err(|error| super::io_error(&error, &format!("could not read file metadata: {error}")).at(&canonical))?;
    let (_, meta) = if link.is_dir() {
        open_dir(&canonical)?
    } else if link.is_file() {
        open_file(&canonical)?
    } else {
        return Err(unsupported(clawmcp_fs::FileKind::of(&link).unwrap_or(clawmcp_fs::FileKind::Other), &canonical));
    };
    let identity = Identity::of(&meta);
    check_existing_binding(args, &identity, &canonical)?;
    let mut result = json!({
        "ok": true,
        "path": display(&canonical),
        "type": if meta.is_dir() { "directory" } else { "file" },
        "size": meta.len(),
        "mtimeMs": mtime_ms(&meta),
        "binding": identity.binding(),
    });
    if flag(args, "preflightOnly") {
        result["preflightOnly"] = json!(true);
    }
    Ok(result)
}
