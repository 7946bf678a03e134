//! `file.create {path, sizeBytes, expectedSha256, maxBytes?, createParents?, followSymlinks?,
//! preflightOnly?, expectedCanonicalPath?, expectedBinding?}` -> `{ok, status: "created" |
//! "exists", path, size, sha256, binding}`, over the file channel only.
//!
//! Upstream's contract (node-host-commands.md): duplex only and create-only, files written 0600,
//! each logical message of at most 1 MiB acknowledged, an empty message for EOF, size and hash
//! checked at the end; `maxBytes` defaults to 50 MiB. The create protocol (docs/node-http.md §12): ready, then
//! the client's messages; each non-empty one is written and acknowledged (an opaque UTF-8 ack:
//! `ack`, the real node host's, which the gateway's file-transfer plugin requires literally); the
//! empty one ends the file.
//!
//! It never overwrites: a target that exists when the call starts is answered `status: "exists"`
//! at once (no ready, nothing read); one that appears during the transfer is found by the
//! no-clobber publication and answered the same way. The bytes go to a 0600 temp file in the
//! nearest existing directory (the anchor, on the same filesystem as the target), fsynced, then
//! hard-linked to the target name (`link(2)` fails if the name exists: no check-then-rename race)
//! and the directory fsynced; the temp name is removed on every path, so a failure at any step
//! (a wrong size or hash, the channel closed, the call cancelled, the timeout) leaves no partial
//! file. Missing parents (`createParents`) are made only at that end, after the checks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use clawmcp_mcp::{ToolAnnotations, ToolOutput};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::capability::CommandSpec;
use crate::files::channel::{ChannelClosed, Duplex};
use crate::files::fetch::hex;
use crate::files::write::{Target, create_dirs, requested, resolve_target, write_binding, write_error};
use crate::files::{
    FileError, FilePolicy, FileResult, Identity, blocking_result, clamped, display, flag, transfer_closed,
};

/// Upstream's default `maxBytes`.
pub const DEFAULT_MAX_BYTES: u64 = 50 * 1024 * 1024;
/// The most `maxBytes` may ask for: the same bound as a binary `file.fetch` (ours; see
/// [`crate::files::fetch::BINARY_MAX_BYTES`]).
pub const MAX_BYTES: u64 = crate::files::fetch::BINARY_MAX_BYTES;
/// The acknowledgement of each non-empty message.
pub const ACK: &[u8] = b"ack";

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "file.create",
        title: Some("Create a file"),
        output_schema: None,
        description: Some(
            "Create one new file on this machine from bytes streamed over the file channel attached to the call \
             (see initialize's capabilities.experimental[\"openclaw/file-channel\"]; without one the call is \
             refused), inside the roots its owner serves (NodeFileRoots, default the home directory). Never \
             overwrites: an existing path answers status \"exists\". sizeBytes and expectedSha256 (hex) are checked \
             when the empty EOF message arrives (INTEGRITY_FAILURE, nothing left behind); maxBytes (default 50 MiB, \
             at most 1 GiB) refuses a larger sizeBytes; createParents (default false) creates missing directories. \
             The file is mode 0600 and appears whole or not at all. Returns {ok, status (created|exists), path \
             (canonical), size, sha256, binding}. followSymlinks, preflightOnly, expectedCanonicalPath and \
             expectedBinding as file.write.",
        ),
        input_schema: Some(super::schema(json!({
            "sizeBytes": {"type": "integer", "minimum": 0, "description": "The exact size of the content."},
            "expectedSha256": {"type": "string", "description": "Hex SHA-256 the content must have."},
            "maxBytes": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_BYTES, "description": "Refuse a larger sizeBytes; at most 1 GiB."},
            "createParents": {"type": "boolean", "default": false}
        }))),
        // Creates files but never replaces one: not destructive, not idempotent (a second call
        // answers "exists"), this machine only.
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: false,
            open_world_hint: false,
        },
    });
    SPEC.clone()
}

/// What the call asks, checked before anything is read.
struct Plan {
    target: Target,
    size: u64,
    sha256: String,
}

fn plan(policy: &FilePolicy, args: &Map<String, Value>) -> FileResult<Plan> {
    let path = requested(args)?;
    let max_bytes = clamped(args, "maxBytes", DEFAULT_MAX_BYTES, MAX_BYTES);
    let Some(size) = args.get("sizeBytes").and_then(Value::as_u64) else {
        return Err(FileError::new("INVALID_PARAMS", "sizeBytes (the content's exact size, an integer) is required"));
    };
    if size > max_bytes {
        return Err(FileError::new("FILE_TOO_LARGE", format!("sizeBytes {size} exceeds maxBytes {max_bytes}")));
    }
    let sha256 = match args.get("expectedSha256").and_then(Value::as_str) {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => hex.to_ascii_lowercase(),
        _ => {
            return Err(FileError::new(
                "INVALID_PARAMS",
                "expectedSha256 (the content's SHA-256, 64 hex digits) is required",
            ));
        }
    };
    let target = resolve_target(policy, args, &path)?;
    Ok(Plan { target, size, sha256 })
}

/// What is at the target now: `None` when nothing; refused when it is not a file we could answer
/// "exists" for (a directory, a special file, a symlink).
fn existing(canonical: &Path) -> FileResult<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(canonical) {
        Ok(meta) if meta.is_file() => Ok(Some(meta)),
        Ok(meta) if meta.is_dir() => {
            Err(FileError::new("IS_DIRECTORY", format!("path resolves to a directory: {}", display(canonical))))
        }
        Ok(meta) if meta.file_type().is_symlink() => Err(FileError::new(
            "SYMLINK_TARGET_DENIED",
            format!("path is a symlink; refusing to create through it: {}", display(canonical)),
        )),
        Ok(meta) => {
            Err(super::unsupported(clawmcp_fs::FileKind::of(&meta).unwrap_or(clawmcp_fs::FileKind::Other), canonical))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(write_error(&error, canonical)),
    }
}

fn exists_answer(canonical: &Path, meta: &std::fs::Metadata) -> ToolOutput {
    ToolOutput::from(json!({
        "ok": true, "status": "exists", "path": display(canonical), "size": meta.len(),
        "binding": Identity::of(meta).binding(),
    }))
}

/// Runs a `file.create`: checks, then (when the target is free) the create protocol on `duplex`,
/// which only a preflight may lack.
pub async fn run(policy: Arc<FilePolicy>, args: Map<String, Value>, duplex: Option<Duplex>) -> FileResult<ToolOutput> {
    let preflight = flag(&args, "preflightOnly");
    let (plan, existing) = blocking_result(move || {
        let plan = plan(&policy, &args)?;
        let existing = existing(&plan.target.canonical)?;
        Ok((plan, existing))
    })
    .await?;
    let canonical = plan.target.canonical.clone();
    if preflight {
        let binding = blocking_result({
            let target = plan.target;
            let existing = existing.clone();
            move || write_binding(&target, existing.as_ref())
        })
        .await?;
        return Ok(ToolOutput::from(json!({
            "ok": true, "path": display(&canonical), "size": plan.size, "sha256": plan.sha256,
            "status": if existing.is_some() { "exists" } else { "created" }, "preflightOnly": true, "binding": binding,
        })));
    }
    let Some(duplex) = duplex else {
        return Err(FileError::new(
            "INVALID_PARAMS",
            "file.create requires duplex IO: open a file channel (openclaw/files/open, advertised in initialize under \
             capabilities.experimental[\"openclaw/file-channel\"]) and attach it to this call",
        ));
    };
    if let Some(meta) = existing {
        return Ok(exists_answer(&canonical, &meta));
    }
    if let Some(bound) = &plan.target.bound {
        bound.check_anchor(&canonical)?;
    }
    let anchor = plan.target.canonical_anchor.clone();
    let temp = blocking_result(move || temp_file(&anchor, &canonical)).await?;
    let canonical = plan.target.canonical.clone();
    let closed = |error: ChannelClosed| transfer_closed(&error, &canonical);
    duplex.ready().await.map_err(closed)?;
    let mut received = 0u64;
    // The temp file and the hash so far, lent to each blocking write and handed back by it. Each
    // message starts on its way to the disk once written, so `publish`'s fsync waits for little.
    let mut written = (clawmcp_fs::Writeback::new(temp), Sha256::new());
    loop {
        let message = duplex.recv().await.map_err(closed)?;
        if message.is_empty() {
            break;
        }
        received += message.len() as u64;
        if received > plan.size {
            duplex.abort("more bytes than sizeBytes");
            return Err(integrity(format!("received more than sizeBytes {} bytes", plan.size), &canonical));
        }
        // Acknowledged on arrival, before it is hashed and written: the client sends the next
        // message meanwhile (a write that fails still fails the call, and nothing is published
        // before the size and hash of the whole file match).
        duplex.send(ACK).await.map_err(closed)?;
        let (mut file, mut hasher) = written;
        let target_path = canonical.clone();
        written = blocking_result(move || {
            hasher.update(&message);
            file.write_all(&message).map_err(|error| write_error(&error, &target_path))?;
            Ok((file, hasher))
        })
        .await?;
    }
    let (temp, hash) = written;
    let temp = temp.into_inner();
    let sha256 = hex(&hash.finalize());
    if received != plan.size {
        return Err(integrity(format!("size mismatch: expected {} bytes, got {received}", plan.size), &canonical));
    }
    if sha256 != plan.sha256 {
        return Err(integrity(format!("sha256 mismatch: expected {}, got {sha256}", plan.sha256), &canonical));
    }
    let target = plan.target;
    blocking_result(move || publish(temp, &target, received, &sha256)).await
}

fn integrity(message: String, canonical: &Path) -> FileError {
    FileError::new("INTEGRITY_FAILURE", message).at(canonical)
}

/// A 0600 temp file in `dir`, named as every clawmcp temp file (`.<name>.<pid>.<random>.clawmcp-tmp`:
/// the sweep of dead writers' temp files recognises it), removed when dropped.
fn temp_file(dir: &Path, canonical: &Path) -> FileResult<tempfile::NamedTempFile> {
    let name = canonical.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}.{}.", std::process::id()))
        .suffix(".clawmcp-tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|error| write_error(&error, canonical))
}

/// Makes the verified temp file the target without replacing anything: fsync, parents, link,
/// fsync of the directory. The temp name goes when `temp` drops, whatever happened.
fn publish(temp: tempfile::NamedTempFile, target: &Target, size: u64, sha256: &str) -> FileResult<ToolOutput> {
    let canonical = &target.canonical;
    temp.as_file().sync_all().map_err(|error| write_error(&error, canonical))?;
    if !target.parent_exists {
        create_dirs(canonical, &target.canonical_anchor)?;
    }
    match std::fs::hard_link(temp.path(), canonical) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            // Created by someone else during the transfer: theirs stays.
            let meta = std::fs::symlink_metadata(canonical).map_err(|error| write_error(&error, canonical))?;
            return Ok(exists_answer(canonical, &meta));
        }
        Err(error) => return Err(write_error(&error, canonical)),
    }
    let parent: PathBuf = canonical.parent().map_or_else(|| PathBuf::from("/"), Path::to_owned);
    if let Ok(dir) = std::fs::File::open(&parent) {
        // The link is durable once the directory is; a failure here leaves a whole file anyway.
        let _ = dir.sync_all();
    }
    let meta = std::fs::symlink_metadata(canonical).map_err(|error| write_error(&error, canonical))?;
    Ok(ToolOutput::from(json!({
        "ok": true, "status": "created", "path": display(canonical), "size": size, "sha256": sha256,
        "binding": Identity::of(&meta).binding(),
    })))
}
