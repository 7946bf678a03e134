//! `file.fetch {path, maxBytes?, followSymlinks?, preflightOnly?, expectedCanonicalPath?,
//! expectedBinding?}` -> `{ok, path, size, mimeType, base64, sha256, binding}`.
//!
//! `maxBytes` is upstream's: absent or not positive is 8 MiB, more than 16 MiB is 16 MiB. A file
//! larger is refused (`FILE_TOO_LARGE`) before anything is read, and the read is bounded by the
//! bytes actually read, so a file growing meanwhile is refused too. Over MCP the bytes are an
//! embedded resource blob after the metadata (never base64 in text); the gateway gets upstream's
//! JSON with `base64`.
//!
//! `transport: "binary"` streams the file instead over the file channel attached to the call
//! ([`binary`], the fetch protocol of docs/node-http.md §12; see [`crate::files::channel`]): `maxBytes` then
//! defaults to 50 MiB and is at most 1 GiB, and the result is the metadata of what was sent.
//! Without an attached channel it is refused with what to do (a preflight needs none).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::{Content, EmbeddedResource, ToolAnnotations, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use std::io::Read;
use std::sync::Arc;

use crate::capability::CommandSpec;
use crate::files::channel::{ChannelClosed, Duplex, frame};
use crate::files::{
    FileError, FilePolicy, FileResult, Identity, answer, blocking_result as blocking, canonical_for_read,
    check_canonical, check_existing_binding, clamped, display, flag, mime, open_file, requested_path, transfer_closed,
};

/// Upstream's default and hard maximum.
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// `maxBytes` of a binary fetch: by default 50 MiB (upstream's `file.create` default, the same
/// size both ways), at most 1 GiB. The reference does not record upstream's binary cap; ours
/// bounds one transfer to what the channel's ten-minute timeout moves at under 2 MB/s.
pub const BINARY_DEFAULT_MAX_BYTES: u64 = 50 * 1024 * 1024;
pub const BINARY_MAX_BYTES: u64 = 1024 * 1024 * 1024;

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "file.fetch",
        title: Some("Fetch a file"),
        output_schema: None,
        description: Some(
            "Read one regular file on this machine, inside the roots its owner serves (NodeFileRoots, default the \
             home directory). path is absolute; maxBytes (default 8 MiB, at most 16 MiB) refuses a larger file \
             (FILE_TOO_LARGE). Returns {ok, path (canonical), size, mimeType, sha256, binding} and the bytes (over \
             MCP an embedded resource; for the gateway base64). followSymlinks, preflightOnly, \
             expectedCanonicalPath and expectedBinding as file.stat. transport \"binary\" streams the file over the \
             file channel attached to the call (see initialize's capabilities.experimental[\"openclaw/file-channel\"]) \
             instead: default 50 MiB, at most 1 GiB, and the result has no bytes. Devices, FIFOs, /proc, /sys and /dev \
             are refused.",
        ),
        input_schema: Some(super::schema(json!({
            "maxBytes": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_BYTES, "description": "Refuse a larger file; at most 16 MiB (16777216)."},
            "transport": {"type": "string", "enum": ["binary"], "description": "Stream the bytes over the file channel (openclaw/file-channel) attached to this call, in 1 MiB messages; maxBytes then defaults to 50 MiB, at most 1 GiB."}
        }))),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

pub fn run(policy: &FilePolicy, args: &Map<String, Value>) -> ToolOutcome {
    answer("file.fetch", fetch(policy, args))
}

/// Whether the call asks for the duplex transport (`transport: "binary"`), refusing any other
/// transport.
pub(crate) fn wants_binary(args: &Map<String, Value>) -> FileResult<bool> {
    match args.get("transport") {
        None => Ok(false),
        Some(Value::String(binary)) if binary == "binary" => Ok(true),
        Some(_) => Err(FileError::new("INVALID_PARAMS", "file.fetch transport must be \"binary\" when supplied")),
    }
}

/// The file a fetch reads, checked (policy, symlinks, canonical path, binding, size).
pub(crate) struct Opened {
    pub file: std::fs::File,
    pub canonical: PathBuf,
    pub identity: Identity,
    pub size: u64,
}

/// Opens what `args` names for a fetch of at most `max_bytes`.
pub(crate) fn open_checked(policy: &FilePolicy, args: &Map<String, Value>, max_bytes: u64) -> FileResult<Opened> {
    let requested = requested_path(args)?;
    let canonical = canonical_for_read(policy, &requested, flag(args, "followSymlinks"), "file not found")?;
    check_canonical(args, &canonical)?;
    let (file, meta) = open_file(&canonical)?;
    let identity = Identity::of(&meta);
    check_existing_binding(args, &identity, &canonical)?;
    if meta.len() > max_bytes {
        return Err(too_large(meta.len(), max_bytes, &canonical));
    }
    Ok(Opened { file, canonical, identity, size: meta.len() })
}

/// A preflight's answer: what a fetch would read, nothing read.
pub(crate) fn preflight(opened: &Opened) -> ToolOutput {
    ToolOutput::from(json!({
        "ok": true, "path": display(&opened.canonical), "size": opened.size, "mimeType": "", "base64": "", "sha256": "",
        "preflightOnly": true, "binding": opened.identity.binding(),
    }))
}

fn fetch(policy: &FilePolicy, args: &Map<String, Value>) -> FileResult<ToolOutput> {
    requested_path(args)?;
    if wants_binary(args)? && !flag(args, "preflightOnly") {
        // Reached only without a channel attached: the handler serves an attached one.
        return Err(FileError::new(
            "INVALID_PARAMS",
            "binary file.fetch requires duplex IO: open a file channel (openclaw/files/open, advertised in \
             initialize under capabilities.experimental[\"openclaw/file-channel\"]) and attach it to this call, or \
             call file.fetch without transport (files up to 16 MiB)",
        ));
    }
    let max_bytes = max_bytes(args)?;
    let Opened { mut file, canonical, identity, .. } = match open_checked(policy, args, max_bytes)? {
        opened if flag(args, "preflightOnly") => return Ok(preflight(&opened)),
        opened => opened,
    };
    let read = clawmcp_fs::read_bounded(&mut file, max_bytes)
        .map_err(|error| super::io_error(&error, &format!("read failed: {error}")).at(&canonical))?;
    if read.truncated {
        return Err(grew(max_bytes, &canonical));
    }
    Ok(answer_with(&canonical, &read.bytes, &identity))
}

/// `maxBytes` clamped for the transport asked.
fn max_bytes(args: &Map<String, Value>) -> FileResult<u64> {
    Ok(match wants_binary(args)? {
        true => clamped(args, "maxBytes", BINARY_DEFAULT_MAX_BYTES, BINARY_MAX_BYTES),
        false => clamped(args, "maxBytes", DEFAULT_MAX_BYTES, MAX_BYTES),
    })
}

/// `file.fetch` with `transport: "binary"` over an attached channel (the fetch protocol of docs/node-http.md §12):
/// ready, the client's start message (opaque UTF-8), then each chunk of at most 1 MiB as one
/// logical message, waiting for the client's ack (opaque UTF-8) before reading the next; an
/// empty file sends no data message. The result is the metadata of the bytes sent.
pub async fn binary(policy: Arc<FilePolicy>, args: Map<String, Value>, duplex: Duplex) -> FileResult<ToolOutput> {
    requested_path(&args)?;
    if !wants_binary(&args)? {
        return Err(FileError::new(
            "INVALID_PARAMS",
            "a file channel is attached to this file.fetch: ask for transport \"binary\", or call without the channel",
        ));
    }
    let max_bytes = max_bytes(&args)?;
    let opened = {
        let args = args.clone();
        blocking(move || open_checked(&policy, &args, max_bytes)).await?
    };
    if flag(&args, "preflightOnly") {
        return Ok(preflight(&opened));
    }
    let Opened { file, canonical, identity, .. } = opened;
    let closed = |error: ChannelClosed| transfer_closed(&error, &canonical);
    duplex.ready().await.map_err(closed)?;
    duplex.recv_text("start").await.map_err(closed)?;
    let mut hash = Sha256::new();
    let (mut size, mut head, mut file) = (0u64, None, file);
    loop {
        let (returned, chunk) = blocking(move || {
            let mut chunk = Vec::new();
            let read = (&file).take(frame::MAX_MESSAGE_BYTES as u64).read_to_end(&mut chunk).map(|_| chunk);
            Ok((file, read))
        })
        .await?;
        file = returned;
        let chunk = chunk.map_err(|error| super::io_error(&error, &format!("read failed: {error}")).at(&canonical))?;
        if chunk.is_empty() {
            break;
        }
        size += chunk.len() as u64;
        if size > max_bytes {
            return Err(grew(max_bytes, &canonical));
        }
        duplex.send(&chunk).await.map_err(closed)?;
        // Hashed once the chunk is queued, while the client takes its last frames and acks it:
        // off the path between the ack and the next chunk's first frames.
        hash.update(&chunk);
        if head.is_none() {
            head = Some(mime::of_content(&chunk, &canonical));
        }
        duplex.recv_text("ack").await.map_err(closed)?;
    }
    let mime_type = head.unwrap_or_else(|| mime::of_content(&[], &canonical));
    Ok(ToolOutput::from(json!({
        "ok": true, "path": display(&canonical), "size": size, "mimeType": mime_type, "sha256": hex(&hash.finalize()),
        "binding": identity.binding(), "transport": "binary",
    })))
}

pub(crate) fn grew(max_bytes: u64, canonical: &Path) -> FileError {
    FileError::new("FILE_TOO_LARGE", format!("file grew beyond the limit {max_bytes} while read")).at(canonical)
}

fn too_large(size: u64, max_bytes: u64, canonical: &Path) -> FileError {
    FileError::new("FILE_TOO_LARGE", format!("file size {size} exceeds limit {max_bytes}")).at(canonical)
}

/// The metadata as text and the bytes as a blob over MCP; upstream's JSON for the gateway.
fn answer_with(canonical: &Path, bytes: &[u8], identity: &Identity) -> ToolOutput {
    let sha256 = hex(&Sha256::digest(bytes));
    let mime_type = mime::of_content(bytes, canonical);
    let base64 = STANDARD.encode(bytes);
    let meta = json!({
        "ok": true, "path": display(canonical), "size": bytes.len(), "mimeType": mime_type, "sha256": sha256,
        "binding": identity.binding(),
    });
    let mut gateway = meta.clone();
    gateway["base64"] = json!(base64);
    ToolOutput::from(meta)
        .with_block(Content::Resource {
            resource: EmbeddedResource::Blob {
                uri: file_uri(canonical),
                mime_type: Some(mime_type.to_owned()),
                blob: base64,
            },
        })
        .with_gateway_payload(gateway)
}

/// `file://` and the path, percent-encoding what a URI cannot hold.
fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => uri.push(byte as char),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// Lower-case hex, as upstream's digests.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
