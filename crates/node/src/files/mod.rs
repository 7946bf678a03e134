//! The real node host's file commands (`openclaw node run`'s file-transfer plugin): `file.stat`,
//! `file.fetch`, `file.write`, `dir.list`, `dir.fetch`, and the directory picker `fs.listDir`,
//! with upstream's names, parameters, defaults, clamps, result fields and error codes, so a
//! gateway agent that drives the real node host drives this one.
//!
//! | file | what it does |
//! | --- | --- |
//! | [`policy`] | the roots the owner lets the node reach (`NodeFileRoots`, default home), never `/proc`, `/sys`, `/dev` |
//! | [`stat`] | `file.stat` |
//! | [`fetch`] | `file.fetch`: unary, or `transport:"binary"` over the file channel |
//! | [`create`] | `file.create`: over the file channel only, never overwriting, nothing partial left |
//! | [`channel`] | the file channel (`openclaw/files/*`): frames, leases, queues, the commands' [`channel::Duplex`] |
//! | [`write`] | `file.write`: temp file, fsync, atomic rename, nothing partial left |
//! | [`dir_list`] | `dir.list`: one page of a directory in a stable order |
//! | [`dir_fetch`] | `dir.fetch`: a tar.gz built in-process, bounded in bytes, entries and time |
//! | [`browse`] | `fs.listDir`: the subdirectories of one directory |
//! | [`mime`] | the MIME type of fetched bytes and listed names |
//! | this file | what the commands share: the path rules, the filesystem binding, the error shape |
//!
//! **The binding.** Upstream's gateway first calls a command with `preflightOnly: true`; the answer
//! carries the canonical path and a `binding` (`{kind:"existing", device, inode}` for what exists,
//! `{kind:"write", anchorPath, anchorDevice, anchorInode, targetDevice?, targetInode?}` for a
//! write). The real call then carries `expectedCanonicalPath` and `expectedBinding`, and the node
//! refuses with `CANONICAL_PATH_CHANGED` if the path now resolves elsewhere or names another
//! inode: a file swapped between the check and the use is never read or overwritten.
//!
//! **Symlinks.** `followSymlinks` defaults to false as upstream: a path that resolves through a
//! symlink is refused (`SYMLINK_REDIRECT`) with its canonical path, so the caller can retry with
//! that. Followed or not, the policy applies to where the path really leads.
//!
//! **Errors.** Like upstream, a refusal about the path (`NOT_FOUND`, `FILE_TOO_LARGE`,
//! `PATH_POLICY_DENIED`, ...) is answered in-band: the gateway gets a successful invoke whose
//! payload is `{ok:false, code, message, canonicalPath?}`; over MCP it is an `isError` result
//! saying `<command> <code>: <message>` (see [`ToolOutput::in_band_failure`]). `fs.listDir`
//! answers failures as invoke errors, as upstream does.

mod browse;
pub mod channel;
mod create;
mod dir_fetch;
mod dir_list;
mod fetch;
mod mime;
pub mod policy;
mod stat;
mod write;

#[cfg(test)]
mod tests;

/// The file-transfer commands, as the gateway's file-transfer plugin names them: the ones whose
/// request may declare itself in `X-OpenClaw-File-Command` on the node's HTTP listener for the
/// file allowance of body and result (docs/node-http.md §12), and that `clawmcp call` declares.
pub const TRANSFER_COMMANDS: [&str; 6] =
    ["file.fetch", "file.stat", "dir.list", "dir.fetch", "file.write", "file.create"];

use std::fs::Metadata;
use std::future::Future;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use clawmcp_mcp::{CallContext, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use crate::capability::{Capability, Command, CommandSpec, InvokeRequest};
use crate::settings::LiveSettings;
use channel::{ChannelClosed, Duplex, FileChannels};
pub use policy::FilePolicy;

/// The `file`, `dir` and `fs` commands.
pub struct FilesCapability {
    commands: Vec<Command>,
}

impl FilesCapability {
    /// Serves the roots `settings` names (read live on every call).
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        FilesCapability::with_policy(FilePolicy::new(settings))
    }

    /// Serves `policy`'s roots, with a file channel of its own (tests).
    pub fn with_policy(policy: FilePolicy) -> Self {
        FilesCapability::with_channels(policy, FileChannels::new())
    }

    /// Serves `policy`'s roots; `file.fetch` (binary) and `file.create` attach to `channels`.
    pub fn with_channels(policy: FilePolicy, channels: Arc<FileChannels>) -> Self {
        let policy = Arc::new(policy);
        let (fetch_channels, create_channels) = (channels.clone(), channels);
        let commands = vec![
            handler(stat::spec(), policy.clone(), |policy, args, _ctx| async move {
                blocking(move || stat::run(&policy, &args)).await
            }),
            handler(fetch::spec(), policy.clone(), move |policy, args, ctx| {
                let attached = attach(&fetch_channels, &ctx, "file.fetch");
                async move {
                    match attached {
                        Ok(Some(duplex)) => answer("file.fetch", fetch::binary(policy, args, duplex).await),
                        Ok(None) => blocking(move || fetch::run(&policy, &args)).await,
                        Err(error) => answer("file.fetch", Err(error)),
                    }
                }
            }),
            handler(create::spec(), policy.clone(), move |policy, args, ctx| {
                let attached = attach(&create_channels, &ctx, "file.create");
                async move {
                    match attached {
                        Ok(duplex) => answer("file.create", create::run(policy, args, duplex).await),
                        Err(error) => answer("file.create", Err(error)),
                    }
                }
            }),
            handler(dir_list::spec(), policy.clone(), |policy, args, _ctx| async move {
                blocking(move || dir_list::run(&policy, &args)).await
            }),
            handler(dir_fetch::spec(), policy.clone(), |policy, args, ctx| async move {
                dir_fetch::run(policy, args, ctx.cancel).await
            }),
            handler(write::spec(), policy.clone(), |policy, args, _ctx| async move {
                blocking(move || write::run(&policy, &args)).await
            }),
            handler(browse::spec(), policy, |policy, args, _ctx| async move {
                blocking(move || browse::run(&policy, &args)).await
            }),
        ];
        FilesCapability { commands }
    }
}

impl Capability for FilesCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

fn handler<F, Fut>(spec: CommandSpec, policy: Arc<FilePolicy>, run: F) -> Command
where
    F: Fn(Arc<FilePolicy>, Map<String, Value>, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutcome> + Send + 'static,
{
    spec.with_output_handler(move |request: InvokeRequest, ctx| run(policy.clone(), request.args, ctx))
}

/// `work` on the blocking pool: every command here is filesystem I/O. The reads are bounded in
/// size, so a cancelled caller just stops waiting.
async fn blocking(work: impl FnOnce() -> ToolOutcome + Send + 'static) -> ToolOutcome {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolFailure::new(format!("file command failed: {error}")))?
}

/// The channel a call of `command` attached (see [`FileChannels::attach`]), its waits ended by
/// the call's cancellation too.
fn attach(channels: &FileChannels, ctx: &CallContext, command: &str) -> FileResult<Option<Duplex>> {
    match channels.attach(ctx.meta.as_ref(), ctx.request.as_ref(), command) {
        Ok(duplex) => Ok(duplex.map(|duplex| duplex.cancelled_by(ctx.cancel.clone()))),
        Err(message) => Err(FileError::new("INVALID_PARAMS", message)),
    }
}

/// `work` on the blocking pool, for the channel commands' steps between their waits.
pub(crate) async fn blocking_result<T: Send + 'static>(
    work: impl FnOnce() -> FileResult<T> + Send + 'static,
) -> FileResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| FileError::new("READ_ERROR", format!("file command failed: {error}")))?
}

/// A transfer that ended before its protocol did (`CHANNEL_CLOSED`, our code: the reference
/// names none): closed by the client, timed out, a violation, a rotation, the call cancelled.
pub(crate) fn transfer_closed(error: &ChannelClosed, canonical: &Path) -> FileError {
    FileError::new("CHANNEL_CLOSED", format!("{error}; nothing more was transferred")).at(canonical)
}

/// A refusal in upstream's shape, `{ok:false, code, message, canonicalPath?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct FileError {
    pub code: &'static str,
    pub message: String,
    pub canonical_path: Option<PathBuf>,
}

impl FileError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        FileError { code, message: message.into(), canonical_path: None }
    }

    pub fn at(mut self, canonical_path: &Path) -> Self {
        self.canonical_path = Some(canonical_path.to_owned());
        self
    }

    pub fn payload(&self) -> Value {
        let mut payload = json!({"ok": false, "code": self.code, "message": self.message});
        if let Some(path) = &self.canonical_path {
            payload["canonicalPath"] = json!(display(path));
        }
        payload
    }

    /// The answer: in-band for the gateway, an `isError` result over MCP.
    pub fn answer(&self, command: &str) -> ToolOutput {
        let mut text = format!("{command} {}: {}", self.code, self.message);
        if let Some(path) = &self.canonical_path {
            text.push_str(&format!(" (canonicalPath: {})", display(path)));
        }
        ToolOutput::in_band_failure(text, self.payload())
    }
}

/// A command's result: a success answer, or a refusal answered in-band.
pub(crate) type FileResult<T> = Result<T, FileError>;

/// `result` as a handler's answer for `command`.
pub(crate) fn answer(command: &str, result: FileResult<ToolOutput>) -> ToolOutcome {
    Ok(result.unwrap_or_else(|error| error.answer(command)))
}

pub(crate) fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The flags every command reads as upstream does: only the JSON value `true` turns one on.
pub(crate) fn flag(args: &Map<String, Value>, key: &str) -> bool {
    args.get(key) == Some(&Value::Bool(true))
}

/// A positive size or count from `args[key]`, floored and clamped to `max`; anything else (absent,
/// not a number, zero or less) is `default`, as upstream's clamps do.
pub(crate) fn clamped(args: &Map<String, Value>, key: &str, default: u64, max: u64) -> u64 {
    match args.get(key).and_then(Value::as_f64) {
        Some(number) if number.is_finite() && number > 0.0 => (number.floor() as u64).clamp(1, max),
        _ => default,
    }
}

/// `args.path`: a non-empty absolute path without NUL, lexically normalized (`.` and `..`
/// resolved as upstream's `path.resolve` does, before any symlink is looked at).
pub(crate) fn requested_path(args: &Map<String, Value>) -> FileResult<PathBuf> {
    let Some(text) = args.get("path").and_then(Value::as_str).filter(|text| !text.is_empty()) else {
        return Err(FileError::new("INVALID_PATH", "path required"));
    };
    if text.contains('\0') {
        return Err(FileError::new("INVALID_PATH", "path contains NUL byte"));
    }
    let path = Path::new(text);
    if !path.is_absolute() {
        return Err(FileError::new("INVALID_PATH", "path must be absolute"));
    }
    Ok(normalize(path))
}

/// `path` with `.` and `..` resolved lexically (`/a/../b` is `/b`; `..` at the root stays there).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Upstream's refusal of a path that resolves through a symlink while `followSymlinks` is false.
pub(crate) const SYMLINK_REJECTED: &str = "path traverses a symlink; refusing because followSymlinks=false (pass \
     followSymlinks: true to follow it, or use the canonical path)";

/// Where `requested` really leads (every symlink resolved), refused as `SYMLINK_REDIRECT` when
/// that differs from `requested` and `follow` is false, and checked against the policy.
pub(crate) fn canonical_for_read(
    policy: &FilePolicy,
    requested: &Path,
    follow: bool,
    not_found: &str,
) -> FileResult<PathBuf> {
    policy.check(requested)?;
    let canonical = std::fs::canonicalize(requested).map_err(|error| match error.kind() {
        io::ErrorKind::NotFound => FileError::new("NOT_FOUND", not_found),
        _ => io_error(&error, &format!("realpath failed: {error}")),
    })?;
    if !follow && canonical != requested {
        return Err(FileError::new("SYMLINK_REDIRECT", SYMLINK_REJECTED).at(&canonical));
    }
    policy.check(&canonical).map_err(|error| error.at(&canonical))?;
    Ok(canonical)
}

/// The `expectedCanonicalPath` check: refused when the caller authorized another path.
pub(crate) fn check_canonical(args: &Map<String, Value>, canonical: &Path) -> FileResult<()> {
    match args.get("expectedCanonicalPath").and_then(Value::as_str) {
        Some(expected) if Path::new(expected) != canonical => {
            Err(FileError::new("CANONICAL_PATH_CHANGED", "canonical path differs from the authorized target")
                .at(canonical))
        }
        _ => Ok(()),
    }
}

/// A file's identity as upstream shapes it: device and inode as decimal strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub device: String,
    pub inode: String,
}

impl Identity {
    pub fn of(meta: &Metadata) -> Self {
        Identity { device: meta.dev().to_string(), inode: meta.ino().to_string() }
    }

    /// `{kind:"existing", device, inode}`.
    pub fn binding(&self) -> Value {
        json!({"kind": "existing", "device": self.device, "inode": self.inode})
    }
}

pub(crate) const IDENTITY_CHANGED: &str = "filesystem identity differs from the authorized target";

/// The `expectedBinding` check for what exists: present, it must be an `existing` binding naming
/// exactly `actual`.
pub(crate) fn check_existing_binding(args: &Map<String, Value>, actual: &Identity, canonical: &Path) -> FileResult<()> {
    let Some(expected) = args.get("expectedBinding") else { return Ok(()) };
    let matches = expected.get("kind").and_then(Value::as_str) == Some("existing")
        && expected.get("device").and_then(Value::as_str) == Some(actual.device.as_str())
        && expected.get("inode").and_then(Value::as_str) == Some(actual.inode.as_str());
    match matches {
        true => Ok(()),
        false => Err(FileError::new("CANONICAL_PATH_CHANGED", IDENTITY_CHANGED).at(canonical)),
    }
}

/// An I/O error as upstream classifies it: missing, permission, else `fallback_code`'s family.
pub(crate) fn io_error(error: &io::Error, message: &str) -> FileError {
    let code = match error.kind() {
        io::ErrorKind::NotFound => "NOT_FOUND",
        io::ErrorKind::PermissionDenied => "PERMISSION_DENIED",
        _ => "READ_ERROR",
    };
    FileError::new(code, message)
}

/// A file's modification time in milliseconds, fractional as upstream's `mtimeMs`.
pub(crate) fn mtime_ms(meta: &Metadata) -> f64 {
    meta.mtime() as f64 * 1000.0 + meta.mtime_nsec() as f64 / 1.0e6
}

/// What a refused file kind says (`a FIFO (named pipe)`, ...): never opened for reading.
pub(crate) fn unsupported(kind: clawmcp_fs::FileKind, canonical: &Path) -> FileError {
    FileError::new(
        "UNSUPPORTED_FILE_TYPE",
        format!("only regular files and directories are supported; {} is {kind}", display(canonical)),
    )
    .at(canonical)
}

/// Opens the regular file at `canonical` (no symlink followed: it is already resolved), checked
/// on the descriptor, never blocking on a FIFO (`clawmcp_fs::open_regular`).
pub(crate) fn open_file(canonical: &Path) -> FileResult<(std::fs::File, Metadata)> {
    clawmcp_fs::open_regular(canonical, clawmcp_fs::Symlinks::Refuse).map_err(|error| opened(&error, canonical))
}

/// Opens the directory at `canonical` (`O_DIRECTORY | O_NOFOLLOW`), for its identity and listing.
pub(crate) fn open_dir(canonical: &Path) -> FileResult<(std::fs::File, Metadata)> {
    use nix::fcntl::OFlag;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let dir = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(canonical).map_err(|error| {
        match error.raw_os_error() == Some(nix::errno::Errno::ENOTDIR as i32) {
            true => FileError::new("IS_FILE", "path is not a directory").at(canonical),
            false => opened(&error, canonical),
        }
    })?;
    let meta = dir.metadata().map_err(|error| io_error(&error, &format!("stat failed: {error}")).at(canonical))?;
    Ok((dir, meta))
}

/// Why `canonical` could not be opened, as the commands answer it.
fn opened(error: &io::Error, canonical: &Path) -> FileError {
    if let Some(kind) = clawmcp_fs::not_regular_kind(error) {
        return match kind {
            clawmcp_fs::FileKind::Directory => FileError::new("IS_DIRECTORY", "path is a directory").at(canonical),
            kind => unsupported(kind, canonical),
        };
    }
    if clawmcp_fs::is_refused_symlink(error) {
        // It was resolved a moment ago: something replaced a part of it with a symlink since.
        return FileError::new("CANONICAL_PATH_CHANGED", "the path became a symlink after it was resolved")
            .at(canonical);
    }
    io_error(error, &format!("open failed: {error}")).at(canonical)
}

/// The input schema of a path command: `path` and the binding parameters every one of them takes,
/// plus `extra` (more properties).
pub(crate) fn schema(extra: Value) -> clawmcp_mcp::Schema {
    let mut properties = json!({
        "path": {"type": "string", "description": "Absolute path."},
        "followSymlinks": {"type": "boolean", "default": false, "description": "Follow a path that resolves through a symlink instead of refusing it (SYMLINK_REDIRECT)."},
        "preflightOnly": {"type": "boolean", "default": false, "description": "Check and return the canonical path and binding without acting."},
        "expectedCanonicalPath": {"type": "string", "description": "From a preflight: refuse if the path now resolves elsewhere."},
        "expectedBinding": {"type": "object", "description": "From a preflight: refuse if the path now names another file."}
    });
    if let (Some(properties), Value::Object(extra)) = (properties.as_object_mut(), extra) {
        properties.extend(extra);
    }
    json!({"type": "object", "properties": properties, "required": ["path"], "additionalProperties": false}).into()
}
