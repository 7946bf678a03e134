//! `dir.fetch {path, maxBytes?, followSymlinks?, preflightOnly?, expectedCanonicalPath?,
//! expectedBinding?}` -> `{ok, path, tarBase64, tarBytes, sha256, fileCount, entries, binding}`.
//!
//! The archive is a tar.gz of the directory's tree (entries relative to it, as `tar -czf - .`),
//! built in-process with the `tar` and `flate2` crates, no child process. Upstream's bounds:
//! `maxBytes` (default 8 MiB, at most 16 MiB) on the compressed archive, refused mid-stream when
//! passed (`TREE_TOO_LARGE`); at most 5000 entries; 64 MiB of content in all and 16 MiB per file
//! (upstream's archive inspection limits); 60 s of wall-clock time. A cancelled call stops at the
//! next 64 KiB written. `entries` are the archive's paths (`a.txt`, `sub`, `sub/b.txt`), sorted,
//! and `fileCount` their number (directories included, as upstream counts).
//!
//! Only regular files and directories are archived: a symlink, FIFO, socket or device in the tree
//! refuses the whole archive, naming it (upstream's gateway rejects archives with links too).
//! Files are opened without following symlinks and type-checked on the descriptor, and a file
//! that changes size while read refuses the archive instead of corrupting it. A preflight walks
//! the tree and builds the archive to check its size, then answers without the bytes.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::{Content, EmbeddedResource, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::capability::CommandSpec;
use crate::files::dir_list::{BoundDir, bound_dir, names};
use crate::files::fetch::hex;
use crate::files::{FileError, FilePolicy, FileResult, answer, clamped, display, flag, open_dir, open_file};

/// Upstream's limits.
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
pub const MAX_ENTRIES: usize = 5000;
pub const MAX_CONTENT_BYTES: u64 = 64 * 1024 * 1024;
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
pub const TIME_LIMIT: Duration = Duration::from_secs(60);

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "dir.fetch",
        title: Some("Fetch a directory"),
        output_schema: None,
        description: Some(
            "Archive one directory tree on this machine (inside the roots its owner serves: NodeFileRoots, default \
             the home directory) as a tar.gz. maxBytes (default 8 MiB, at most 16 MiB) bounds the archive \
             (TREE_TOO_LARGE); at most 5000 entries, 64 MiB of content, 60 s. Only regular files and directories: a \
             symlink or special file in the tree refuses it. Returns {ok, path (canonical), tarBytes, sha256, \
             fileCount, entries (relative paths), binding} and the archive (over MCP an embedded resource; for the \
             gateway tarBase64). followSymlinks (for path itself), preflightOnly, expectedCanonicalPath and \
             expectedBinding as file.stat.",
        ),
        input_schema: Some(super::schema(json!({
            "maxBytes": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_BYTES, "description": "Refuse a larger archive; at most 16 MiB (16777216)."}
        }))),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

/// Builds the archive on the blocking pool; a cancelled call or the time limit stops it at its
/// next write, and the call returns once it has stopped.
pub async fn run(policy: Arc<FilePolicy>, args: Map<String, Value>, cancel: CancellationToken) -> ToolOutcome {
    let stop = Arc::new(AtomicBool::new(false));
    let mut work = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || build(&policy, &args, &Stop { flag: stop, deadline: Instant::now() + TIME_LIMIT })
    });
    tokio::select! {
        biased;
        () = cancel.cancelled() => {
            // Stopped at its next write; waited for, so no archive work outlives the call.
            stop.store(true, Ordering::SeqCst);
            let _ = work.await;
            Err(clawmcp_mcp::CANCELLED.into())
        }
        done = &mut work => {
            let done = done.map_err(|error| ToolFailure::new(format!("dir.fetch failed: {error}")))?;
            answer("dir.fetch", done)
        }
    }
}

/// When to stop: the call was cancelled, or the time limit passed.
struct Stop {
    flag: Arc<AtomicBool>,
    deadline: Instant,
}

impl Stop {
    fn check(&self) -> io::Result<()> {
        if self.flag.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, Halt::Cancelled));
        }
        if Instant::now() >= self.deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, Halt::TimedOut));
        }
        Ok(())
    }
}

/// Why the archive stopped before it was done.
#[derive(Debug, thiserror::Error)]
enum Halt {
    #[error("cancelled")]
    Cancelled,
    #[error("timed out")]
    TimedOut,
    #[error("the archive passed maxBytes")]
    TooLarge,
}

fn build(policy: &FilePolicy, args: &Map<String, Value>, stop: &Stop) -> FileResult<ToolOutput> {
    let max_bytes = clamped(args, "maxBytes", DEFAULT_MAX_BYTES, MAX_BYTES);
    let bound = bound_dir(policy, args, "directory not found")?;
    let canonical = bound.canonical.clone();
    let tree = walk(&bound, stop)?;
    let preflight = flag(args, "preflightOnly");
    let archive = archive(&canonical, &tree, max_bytes, stop)?;
    let entries: Vec<String> = tree.iter().map(|entry| entry.relative.clone()).collect();
    if preflight {
        return Ok(ToolOutput::from(json!({
            "ok": true, "path": display(&canonical), "tarBase64": "", "tarBytes": 0, "sha256": "",
            "fileCount": entries.len(), "entries": entries, "preflightOnly": true, "binding": bound.identity.binding(),
        })));
    }
    let sha256 = hex(&Sha256::digest(&archive));
    let base64 = STANDARD.encode(&archive);
    let meta = json!({
        "ok": true, "path": display(&canonical), "tarBytes": archive.len(), "sha256": sha256,
        "fileCount": entries.len(), "entries": entries, "binding": bound.identity.binding(),
    });
    let mut gateway = meta.clone();
    gateway["tarBase64"] = json!(base64);
    let name = canonical.file_name().map_or_else(|| "root".to_owned(), |name| name.to_string_lossy().into_owned());
    Ok(ToolOutput::from(meta)
        .with_block(Content::Resource {
            resource: EmbeddedResource::Blob {
                uri: format!(
                    "clawmcp://dir.fetch/{}.tar.gz",
                    name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-' && c != '_', "_")
                ),
                mime_type: Some("application/gzip".into()),
                blob: base64,
            },
        })
        .with_gateway_payload(gateway))
}

/// What stopped the walk or the archive, as the answer says it.
fn halted(error: io::Error, canonical: &Path, max_bytes: u64) -> FileError {
    let message = match error.get_ref().and_then(|inner| inner.downcast_ref::<Halt>()) {
        Some(Halt::TooLarge) => {
            return FileError::new("TREE_TOO_LARGE", format!("tarball exceeded {max_bytes} byte limit mid-stream"))
                .at(canonical);
        }
        Some(Halt::TimedOut) => "archive exceeded the 60s wall-clock limit (slow filesystem?)".to_owned(),
        Some(Halt::Cancelled) => "cancelled".to_owned(),
        None => format!("archive failed: {error}"),
    };
    FileError::new("READ_ERROR", message).at(canonical)
}

/// One entry of the tree: its path relative to the root (`sub/b.txt`) and whether a directory.
struct Entry {
    relative: String,
    path: PathBuf,
    is_dir: bool,
}

/// The tree under `bound`, depth first, each directory's names sorted; refused past
/// [`MAX_ENTRIES`] or at the first entry that is neither a regular file nor a directory.
fn walk(bound: &BoundDir, stop: &Stop) -> FileResult<Vec<Entry>> {
    let mut out = Vec::new();
    let dir = bound.dir.try_clone().map_err(|error| read_error(&error, &bound.canonical))?;
    let mut pending = vec![(String::new(), bound.canonical.clone(), dir)];
    while let Some((prefix, path, dir)) = pending.pop() {
        let mut subdirs = Vec::new();
        for name in names(dir, &path)? {
            stop.check().map_err(|error| halted(error, &bound.canonical, 0))?;
            let child = path.join(&name);
            let relative = format!("{prefix}{}", name.to_string_lossy());
            let meta = std::fs::symlink_metadata(&child).map_err(|error| read_error(&error, &child))?;
            if let Some(kind) = clawmcp_fs::FileKind::of(&meta).filter(|kind| *kind != clawmcp_fs::FileKind::Directory)
            {
                return Err(FileError::new(
                    "READ_ERROR",
                    format!(
                        "cannot archive {relative}: it is {kind}; dir.fetch archives only regular files and directories"
                    ),
                )
                .at(&bound.canonical));
            }
            if out.len() == MAX_ENTRIES {
                return Err(FileError::new("TREE_TOO_LARGE", format!("directory tree exceeds {MAX_ENTRIES} entries"))
                    .at(&bound.canonical));
            }
            if meta.is_dir() {
                subdirs.push((format!("{relative}/"), child.clone()));
            }
            out.push(Entry { relative, path: child, is_dir: meta.is_dir() });
        }
        // Depth first in name order: push the subdirectories so the first is walked next.
        for (prefix, child) in subdirs.into_iter().rev() {
            let (dir, _) = open_dir(&child)?;
            pending.push((prefix, child, dir));
        }
    }
    // Bytewise by path, as the entries are answered (and as upstream sorts them).
    out.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(out)
}

fn read_error(error: &io::Error, path: &Path) -> FileError {
    FileError::new("READ_ERROR", format!("cannot read {}: {error}", display(path)))
}

/// The tar.gz of `tree`, at most `max_bytes`.
fn archive(root: &Path, tree: &[Entry], max_bytes: u64, stop: &Stop) -> FileResult<Vec<u8>> {
    let io_stop = |error: io::Error| halted(error, root, max_bytes);
    let sink = Bounded { bytes: Vec::new(), max: max_bytes, stop };
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(sink, flate2::Compression::default()));
    let mut content = 0u64;
    for entry in tree {
        stop.check().map_err(io_stop)?;
        let name = if entry.is_dir { format!("{}/", entry.relative) } else { entry.relative.clone() };
        if entry.is_dir {
            let (_, meta) = open_dir(&entry.path)?;
            let mut header = tar::Header::new_gnu();
            header.set_metadata_in_mode(&meta, tar::HeaderMode::Complete);
            header.set_size(0);
            builder.append_data(&mut header, &name, io::empty()).map_err(io_stop)?;
            continue;
        }
        let (mut file, meta) = open_file(&entry.path)?;
        if meta.len() > MAX_FILE_BYTES || content + meta.len() > MAX_CONTENT_BYTES {
            return Err(FileError::new(
                "TREE_TOO_LARGE",
                format!(
                    "{} is {} bytes: past the archive's limits ({MAX_FILE_BYTES} bytes a file, \
                         {MAX_CONTENT_BYTES} in all)",
                    entry.relative,
                    meta.len()
                ),
            )
            .at(root));
        }
        content += meta.len();
        let read = clawmcp_fs::read_bounded(&mut file, meta.len()).map_err(|error| read_error(&error, &entry.path))?;
        if read.truncated || read.bytes.len() as u64 != meta.len() {
            return Err(
                FileError::new("READ_ERROR", format!("{} changed size while it was archived", entry.relative)).at(root)
            );
        }
        let mut header = tar::Header::new_gnu();
        header.set_metadata_in_mode(&meta, tar::HeaderMode::Complete);
        builder.append_data(&mut header, &name, read.bytes.as_slice()).map_err(io_stop)?;
    }
    let encoder = builder.into_inner().map_err(io_stop)?;
    let sink = encoder.finish().map_err(io_stop)?;
    Ok(sink.bytes)
}

/// The archive's bytes, refused past `max` and checked against the stop on every write.
struct Bounded<'a> {
    bytes: Vec<u8>,
    max: u64,
    stop: &'a Stop,
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stop.check()?;
        if self.bytes.len() as u64 + buf.len() as u64 > self.max {
            return Err(io::Error::other(Halt::TooLarge));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
