//! `dir.list {path, maxEntries?, pageToken?, followSymlinks?, preflightOnly?,
//! expectedCanonicalPath?, expectedBinding?}` -> `{ok, path, entries: [{name, path, size,
//! mimeType, isDir, mtime}], nextPageToken?, truncated, binding}`.
//!
//! Upstream's paging: `maxEntries` absent or not positive is 200, more than 5000 is 5000;
//! `pageToken` is the offset into the directory sorted by name (a token that is not a whole
//! number starts over), `nextPageToken` the next offset while more remain. The order is bytewise
//! by name, stable across calls. The directory is listed through the descriptor whose identity
//! was checked, each entry `lstat`ed relative to it (a symlink is listed as itself, never
//! followed). A directory of more than [`MAX_SCANNED`] names is refused rather than sorted.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::LazyLock;

use clawmcp_mcp::{ToolAnnotations, ToolOutcome, ToolOutput};
use nix::fcntl::AtFlags;
use serde_json::{Map, Value, json};

use crate::capability::CommandSpec;
use crate::files::{
    FileError, FilePolicy, FileResult, Identity, answer, canonical_for_read, check_canonical, check_existing_binding,
    clamped, display, flag, mime, open_dir, requested_path,
};

/// Upstream's default and hard maximum page size.
pub const DEFAULT_MAX_ENTRIES: u64 = 200;
pub const MAX_ENTRIES: u64 = 5000;
/// The most names read from one directory to sort them (memory: about 100 bytes a name).
pub const MAX_SCANNED: usize = 200_000;

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "dir.list",
        title: Some("List a directory"),
        output_schema: None,
        description: Some(
            "List one directory on this machine, inside the roots its owner serves (NodeFileRoots, default the \
             home directory), sorted by name, one page at a time: maxEntries (default 200, at most 5000), pageToken \
             (the nextPageToken of the previous page). Returns {ok, path (canonical), entries: [{name, path, size, \
             mimeType, isDir, mtime}], nextPageToken, truncated, binding}. followSymlinks, preflightOnly, \
             expectedCanonicalPath and expectedBinding as file.stat.",
        ),
        input_schema: Some(super::schema(json!({
            "maxEntries": {"type": "integer", "minimum": 1, "maximum": MAX_ENTRIES, "default": DEFAULT_MAX_ENTRIES},
            "pageToken": {"type": "string", "description": "nextPageToken from the previous page."}
        }))),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

pub fn run(policy: &FilePolicy, args: &Map<String, Value>) -> ToolOutcome {
    answer("dir.list", list(policy, args).map(ToolOutput::from))
}

/// A directory opened and checked: its canonical path, descriptor and identity.
pub(crate) struct BoundDir {
    pub canonical: std::path::PathBuf,
    pub dir: std::fs::File,
    pub identity: Identity,
}

/// Upstream's bound directory read: resolved, policy-checked, a directory, the one authorized.
pub(crate) fn bound_dir(policy: &FilePolicy, args: &Map<String, Value>, not_found: &str) -> FileResult<BoundDir> {
    let requested = requested_path(args)?;
    let canonical = canonical_for_read(policy, &requested, flag(args, "followSymlinks"), not_found)?;
    check_canonical(args, &canonical)?;
    let (dir, meta) = open_dir(&canonical)?;
    let identity = Identity::of(&meta);
    check_existing_binding(args, &identity, &canonical)?;
    Ok(BoundDir { canonical, dir, identity })
}

fn list(policy: &FilePolicy, args: &Map<String, Value>) -> FileResult<Value> {
    let max_entries = clamped(args, "maxEntries", DEFAULT_MAX_ENTRIES, MAX_ENTRIES) as usize;
    let offset = args.get("pageToken").and_then(Value::as_str).and_then(page_offset).unwrap_or(0);
    let bound = bound_dir(policy, args, "path not found")?;
    if flag(args, "preflightOnly") {
        return Ok(json!({
            "ok": true, "path": display(&bound.canonical), "entries": [], "truncated": false, "preflight": true,
            "binding": bound.identity.binding(),
        }));
    }
    let dir = bound.dir.try_clone().map_err(|error| read_error(&error.to_string(), &bound.canonical))?;
    let names = names(dir, &bound.canonical)?;
    let total = names.len();
    let mut entries = Vec::new();
    for name in names.iter().skip(offset).take(max_entries) {
        let Ok(stat) = nix::sys::stat::fstatat(&bound.dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
            // Removed since it was read: it is no longer there to list.
            continue;
        };
        let is_dir = stat.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR;
        let path = bound.canonical.join(name);
        entries.push(json!({
            "name": name.to_string_lossy(),
            "path": display(&path),
            "size": if is_dir { 0 } else { stat.st_size },
            "mimeType": if is_dir { "inode/directory" } else { mime::of_listed(&path) },
            "isDir": is_dir,
            "mtime": stat.st_mtime as f64 * 1000.0 + stat.st_mtime_nsec as f64 / 1.0e6,
        }));
    }
    let truncated = offset.saturating_add(max_entries) < total;
    let mut result = json!({
        "ok": true, "path": display(&bound.canonical), "entries": entries, "truncated": truncated,
        "binding": bound.identity.binding(),
    });
    if truncated {
        result["nextPageToken"] = json!((offset + max_entries).to_string());
    }
    Ok(result)
}

/// A page token: a non-negative whole number in decimal digits, as upstream's strict parse.
fn page_offset(token: &str) -> Option<usize> {
    (!token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit())).then(|| token.parse().ok()).flatten()
}

/// Every name in `dir` but `.` and `..`, sorted bytewise; refused past [`MAX_SCANNED`].
pub(crate) fn names(dir: std::fs::File, canonical: &Path) -> FileResult<Vec<OsString>> {
    let mut handle = nix::dir::Dir::from_fd(dir.into()).map_err(|error| read_error(&error.to_string(), canonical))?;
    let mut names = Vec::new();
    for entry in handle.iter() {
        let entry = entry.map_err(|error| read_error(&error.to_string(), canonical))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if names.len() == MAX_SCANNED {
            return Err(FileError::new(
                "READ_ERROR",
                format!("list failed: the directory has more than {MAX_SCANNED} entries, more than this node sorts"),
            )
            .at(canonical));
        }
        names.push(OsString::from_vec(name.to_vec()));
    }
    names.sort();
    Ok(names)
}

fn read_error(error: &str, canonical: &Path) -> FileError {
    FileError::new("READ_ERROR", format!("list failed: {error}")).at(canonical)
}
