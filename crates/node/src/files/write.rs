//! `file.write {path, contentBase64, overwrite?, createParents?, expectedSha256?, followSymlinks?,
//! rejectHardlinks?, preflightOnly?, expectedCanonicalPath?, expectedBinding?}` -> `{ok, path,
//! size, sha256, overwritten, binding}`.
//!
//! Upstream's rules: the content is at most 16 MiB decoded, strict base64; an existing file is
//! replaced only with `overwrite: true`; missing parents are created only with `createParents:
//! true`; `expectedSha256` must match the decoded content (`INTEGRITY_FAILURE`, nothing written).
//! A preflight returns a write binding: the nearest existing directory (the anchor) and, when
//! the target exists, its identity; the real call refuses if either changed.
//!
//! The write itself is clawmcp's: a temp file in the same directory, fsync, the binding checked
//! once more, an atomic rename over the target, fsync of the directory
//! (`clawmcp_fs::write_atomic`). Readers see the old file or the new one, never a torn one, and
//! a failure at any step leaves the old file as it was and no temp file. A new file is 0600; a
//! replaced one keeps its mode. (Upstream overwrites in place, which keeps hard links shared; a
//! rename gives the path a new inode, so other hard links keep the old content.)

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use clawmcp_mcp::{ToolAnnotations, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::capability::CommandSpec;
use crate::files::fetch::hex;
use crate::files::{
    FileError, FilePolicy, FileResult, IDENTITY_CHANGED, Identity, SYMLINK_REJECTED, answer, check_canonical, display,
    flag, normalize, unsupported,
};

/// Upstream's limit on the decoded content.
pub const MAX_CONTENT_BYTES: u64 = 16 * 1024 * 1024;
/// The mode of a file this command creates.
const NEW_FILE_MODE: u32 = 0o600;

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "file.write",
        title: Some("Write a file"),
        output_schema: None,
        description: Some(
            "Write one file on this machine, inside the roots its owner serves (NodeFileRoots, default the home \
             directory), atomically (a temp file renamed over the target: the old file or the new one, never a \
             torn one). contentBase64 is the content (at most 16 MiB decoded); overwrite (default false) replaces \
             an existing file; createParents (default false) creates missing directories; expectedSha256 refuses \
             (INTEGRITY_FAILURE) content with another digest. New files are mode 0600. Returns {ok, path \
             (canonical), size, sha256, overwritten, binding}. followSymlinks, preflightOnly (returns a write \
             binding), expectedCanonicalPath and expectedBinding as file.stat.",
        ),
        input_schema: Some(super::schema(json!({
            "contentBase64": {"type": "string", "description": "The content, base64 (at most 16 MiB decoded)."},
            "overwrite": {"type": "boolean", "default": false},
            "createParents": {"type": "boolean", "default": false},
            "expectedSha256": {"type": "string", "description": "Hex SHA-256 the decoded content must have."},
            "rejectHardlinks": {"type": "boolean", "default": false, "description": "Refuse to replace a file that has other hard links."}
        }))),
        // Overwrites files, but only on this machine (open world false).
        annotations: ToolAnnotations { open_world_hint: false, ..ToolAnnotations::DESTRUCTIVE },
    });
    SPEC.clone()
}

pub fn run(policy: &FilePolicy, args: &Map<String, Value>) -> ToolOutcome {
    answer("file.write", write(policy, args).map(ToolOutput::from))
}

/// Where a write (or a `file.create`) lands, checked: the canonical target, the nearest existing
/// directory above it (the anchor), whether its parent exists, and the preflight binding the
/// call carries back, if any.
pub(crate) struct Target {
    pub canonical: PathBuf,
    pub canonical_anchor: PathBuf,
    pub parent_exists: bool,
    pub bound: Option<Bound>,
}

/// Resolves `target` (from [`requested`]) as a write does: the policy on the path and on where it
/// really leads, `followSymlinks`, `expectedCanonicalPath`, `expectedBinding` (a write binding),
/// and a missing parent refused unless `createParents`.
pub(crate) fn resolve_target(policy: &FilePolicy, args: &Map<String, Value>, target: &Path) -> FileResult<Target> {
    policy.check(target)?;
    let parent = target.parent().unwrap_or(Path::new("/")).to_owned();
    let (anchor, canonical_anchor) = existing_ancestor(&parent)?;
    let canonical = canonical_anchor.join(target.strip_prefix(&anchor).unwrap_or(Path::new("")));
    if !flag(args, "followSymlinks") && canonical != target {
        return Err(FileError::new("SYMLINK_REDIRECT", SYMLINK_REJECTED).at(&canonical));
    }
    policy.check(&canonical).map_err(|error| error.at(&canonical))?;
    check_canonical(args, &canonical)?;
    let bound = expected_binding(args, &canonical)?;
    let parent_exists = anchor == parent;
    if !parent_exists && !flag(args, "createParents") {
        return Err(FileError::new(
            "PARENT_NOT_FOUND",
            format!("parent directory does not exist: {}", display(&parent)),
        ));
    }
    Ok(Target { canonical, canonical_anchor, parent_exists, bound })
}

/// A preflight's write binding: the anchor's identity, and the target's when it exists.
pub(crate) fn write_binding(target: &Target, existing: Option<&fs::Metadata>) -> FileResult<Value> {
    let anchor_meta = fs::metadata(&target.canonical_anchor).map_err(|error| write_error(&error, &target.canonical))?;
    let anchor = Identity::of(&anchor_meta);
    let mut binding = json!({
        "kind": "write",
        "anchorPath": display(&target.canonical_anchor),
        "anchorDevice": anchor.device,
        "anchorInode": anchor.inode,
    });
    if let Some(existing) = existing {
        binding["targetDevice"] = json!(Identity::of(existing).device);
        binding["targetInode"] = json!(Identity::of(existing).inode);
    }
    Ok(binding)
}

fn write(policy: &FilePolicy, args: &Map<String, Value>) -> FileResult<Value> {
    let target = requested(args)?;
    let content = decode(args)?;
    let overwrite = flag(args, "overwrite");
    let reject_hardlinks = flag(args, "rejectHardlinks");
    let resolved = resolve_target(policy, args, &target)?;
    let (canonical, canonical_anchor, bound) = (&resolved.canonical, &resolved.canonical_anchor, &resolved.bound);
    let existing = existing_target(canonical, overwrite, reject_hardlinks)?;
    let sha256 = hex(&Sha256::digest(&content));
    if let Some(expected) = args.get("expectedSha256").and_then(Value::as_str).filter(|text| !text.is_empty()) {
        let expected = expected.to_ascii_lowercase();
        if expected != sha256 {
            return Err(FileError::new(
                "INTEGRITY_FAILURE",
                format!("sha256 mismatch: expected {expected}, got {sha256}"),
            )
            .at(canonical));
        }
    }
    if flag(args, "preflightOnly") {
        let binding = write_binding(&resolved, existing.as_ref())?;
        let mut result = json!({
            "ok": true, "path": display(canonical), "size": content.len(), "sha256": sha256,
            "overwritten": existing.is_some(), "binding": binding,
        });
        if reject_hardlinks {
            result["rejectHardlinks"] = json!(true);
        }
        return Ok(result);
    }
    if let Some(bound) = bound {
        bound.check_anchor(canonical)?;
    }
    if !resolved.parent_exists {
        create_dirs(canonical, canonical_anchor)?;
    }
    let mode = existing.as_ref().map_or(NEW_FILE_MODE, |meta| meta.permissions().mode() & 0o7777);
    let was = existing.as_ref().map(Identity::of);
    let meta = clawmcp_fs::write_atomic(canonical, &content, mode, || {
        // The last look before the rename: the target is still what was checked (and bound).
        let now = fs::symlink_metadata(canonical).ok();
        let same = match (&now, &was) {
            (None, None) => true,
            (Some(now), Some(was)) => now.is_file() && Identity::of(now) == *was,
            _ => false,
        };
        let bound_ok = bound.as_ref().is_none_or(|bound| bound.target == was);
        match same && bound_ok {
            true => Ok(()),
            false => Err(io::Error::other(IDENTITY_CHANGED)),
        }
    })
    .map_err(|error| match error.to_string() == IDENTITY_CHANGED {
        true => FileError::new("CANONICAL_PATH_CHANGED", IDENTITY_CHANGED).at(canonical),
        false => write_error(&error, canonical),
    })?;
    Ok(json!({
        "ok": true, "path": display(canonical), "size": content.len(), "sha256": sha256,
        "overwritten": existing.is_some(), "binding": Identity::of(&meta).binding(),
    }))
}

/// `args.path` with upstream's write-side messages.
pub(crate) fn requested(args: &Map<String, Value>) -> FileResult<PathBuf> {
    let text = args.get("path").and_then(Value::as_str).unwrap_or("");
    if text.is_empty() {
        return Err(FileError::new("INVALID_PATH", "path is required"));
    }
    if text.contains('\0') {
        return Err(FileError::new("INVALID_PATH", "path must not contain NUL bytes"));
    }
    if !Path::new(text).is_absolute() {
        return Err(FileError::new("INVALID_PATH", "path must be absolute"));
    }
    let path = normalize(Path::new(text));
    if path == Path::new("/") {
        return Err(FileError::new("IS_DIRECTORY", "path resolves to a directory: /"));
    }
    Ok(path)
}

/// `contentBase64` decoded: strict base64 (padding optional), its decoded size checked before
/// decoding.
fn decode(args: &Map<String, Value>) -> FileResult<Vec<u8>> {
    let Some(text) = args.get("contentBase64").and_then(Value::as_str) else {
        return Err(FileError::new("INVALID_BASE64", "contentBase64 is required"));
    };
    let unpadded = text.trim_end_matches('=');
    let decoded_len = unpadded.len() as u64 * 3 / 4;
    if decoded_len > MAX_CONTENT_BYTES {
        return Err(FileError::new(
            "FILE_TOO_LARGE",
            format!("decoded content is {decoded_len} bytes; maximum is {MAX_CONTENT_BYTES} bytes (16 MB)"),
        ));
    }
    let decoded = if unpadded.len() == text.len() { STANDARD_NO_PAD.decode(text) } else { STANDARD.decode(text) };
    decoded.map_err(|_| FileError::new("INVALID_BASE64", "contentBase64 is not valid base64"))
}

/// The nearest existing directory at or above `dir`, as written and resolved.
fn existing_ancestor(dir: &Path) -> FileResult<(PathBuf, PathBuf)> {
    let mut at = dir.to_owned();
    loop {
        match fs::canonicalize(&at) {
            Ok(real) if real.is_dir() => return Ok((at, real)),
            Ok(real) => {
                return Err(FileError::new("WRITE_ERROR", format!("{} is not a directory", display(&at))).at(&real));
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound && at.pop() => {}
            Err(error) => return Err(write_error(&error, &at)),
        }
    }
}

/// What `canonical` is now: `None` when missing; refused when it is a symlink, a directory, a
/// special file, an existing file without `overwrite`, or hard-linked under `rejectHardlinks`.
fn existing_target(canonical: &Path, overwrite: bool, reject_hardlinks: bool) -> FileResult<Option<fs::Metadata>> {
    let meta = match fs::symlink_metadata(canonical) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(write_error(&error, canonical)),
    };
    let path = display(canonical);
    if meta.file_type().is_symlink() {
        return Err(FileError::new(
            "SYMLINK_TARGET_DENIED",
            format!("path is a symlink; refusing to write through it: {path}"),
        ));
    }
    if meta.is_dir() {
        return Err(FileError::new("IS_DIRECTORY", format!("path resolves to a directory: {path}")));
    }
    if let Some(kind) = clawmcp_fs::FileKind::of(&meta) {
        return Err(unsupported(kind, canonical));
    }
    if !overwrite {
        return Err(FileError::new(
            "EXISTS_NO_OVERWRITE",
            format!("file already exists and overwrite is false: {path}"),
        ));
    }
    if reject_hardlinks && meta.nlink() > 1 {
        return Err(FileError::new("HARDLINK_TARGET_DENIED", "refusing to overwrite a file with hard links"));
    }
    Ok(Some(meta))
}

/// A preflight's write binding, as the real call carries it back.
pub(crate) struct Bound {
    anchor_path: PathBuf,
    anchor: Identity,
    /// The target's identity then; `None`: it did not exist, and must not now.
    target: Option<Identity>,
}

impl Bound {
    /// Refused when the anchor directory is not the one bound.
    pub(crate) fn check_anchor(&self, canonical: &Path) -> FileResult<()> {
        let changed = || FileError::new("CANONICAL_PATH_CHANGED", IDENTITY_CHANGED).at(canonical);
        let meta = fs::metadata(&self.anchor_path).map_err(|_| changed())?;
        if !meta.is_dir() || Identity::of(&meta) != self.anchor || !canonical.starts_with(&self.anchor_path) {
            return Err(changed());
        }
        Ok(())
    }
}

/// `expectedBinding`, which for a write must be a write binding.
fn expected_binding(args: &Map<String, Value>, canonical: &Path) -> FileResult<Option<Bound>> {
    let Some(binding) = args.get("expectedBinding") else { return Ok(None) };
    let text = |key: &str| binding.get(key).and_then(Value::as_str).map(str::to_owned);
    let changed = || FileError::new("CANONICAL_PATH_CHANGED", IDENTITY_CHANGED).at(canonical);
    if text("kind").as_deref() != Some("write") {
        return Err(changed());
    }
    let (Some(anchor_path), Some(device), Some(inode)) =
        (text("anchorPath"), text("anchorDevice"), text("anchorInode"))
    else {
        return Err(changed());
    };
    let target = match (text("targetDevice"), text("targetInode")) {
        (Some(device), Some(inode)) => Some(Identity { device, inode }),
        (None, None) => None,
        _ => return Err(changed()),
    };
    Ok(Some(Bound { anchor_path: PathBuf::from(anchor_path), anchor: Identity { device, inode }, target }))
}

/// Creates the missing directories between `anchor` and `canonical`'s parent (0700).
pub(crate) fn create_dirs(canonical: &Path, anchor: &Path) -> FileResult<()> {
    let parent = canonical.parent().unwrap_or(anchor);
    let mut builder = fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(builder.recursive(true), 0o700);
    builder.create(parent).map_err(|error| {
        FileError::new("WRITE_ERROR", format!("failed to create parent directories: {error}")).at(canonical)
    })
}

pub(crate) fn write_error(error: &io::Error, path: &Path) -> FileError {
    let code = match error.kind() {
        io::ErrorKind::PermissionDenied => "PERMISSION_DENIED",
        _ => "WRITE_ERROR",
    };
    FileError::new(code, format!("failed to write file: {error}")).at(path)
}
