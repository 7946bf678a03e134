//! `file.fetch {path, maxBytes?, followSymlinks?, preflightOnly?, expectedCanonicalPath?,
//! expectedBinding?}` -> `{ok, path, size, mimeType, base64, sha256, binding}`.
//!
//! `maxBytes` is upstream's: absent or not positive is 8 MiB, more than 16 MiB is 16 MiB. A file
//! larger is refused (`FILE_TOO_LARGE`) before anything is read, and the read is bounded by the
//! bytes actually read, so a file growing meanwhile is refused too. Over MCP the bytes are an
//! embedded resource blob after the metadata (never base64 in text); the gateway gets upstream's
//! JSON with `base64`. `transport: "binary"` (the duplex file channel) is not served: refused.

use std::path::Path;
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::{Content, EmbeddedResource, ToolAnnotations, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::capability::CommandSpec;
use crate::files::{
    FileError, FilePolicy, FileResult, Identity, answer, canonical_for_read, check_canonical, check_existing_binding,
    clamped, display, flag, mime, open_file, requested_path,
};

/// Upstream's default and hard maximum.
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

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
             expectedCanonicalPath and expectedBinding as file.stat. transport \"binary\" (the duplex channel) is \
             not served by this node. Devices, FIFOs, /proc, /sys and /dev are refused.",
        ),
        input_schema: Some(super::schema(json!({
            "maxBytes": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_BYTES, "description": "Refuse a larger file; at most 16 MiB (16777216)."},
            "transport": {"type": "string", "enum": ["binary"], "description": "Not served by this node (needs the duplex file channel)."}
        }))),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

pub fn run(policy: &FilePolicy, args: &Map<String, Value>) -> ToolOutcome {
    answer("file.fetch", fetch(policy, args))
}

fn fetch(policy: &FilePolicy, args: &Map<String, Value>) -> FileResult<ToolOutput> {
    let requested = requested_path(args)?;
    match args.get("transport") {
        None => {}
        Some(Value::String(binary)) if binary == "binary" => {
            return Err(FileError::new(
                "INVALID_PARAMS",
                "binary file.fetch requires duplex IO and an authorized filesystem binding; this node does not serve \
                 the duplex file channel: call file.fetch without transport (files up to 16 MiB)",
            ));
        }
        Some(_) => {
            return Err(FileError::new("INVALID_PARAMS", "file.fetch transport must be \"binary\" when supplied"));
        }
    }
    let max_bytes = clamped(args, "maxBytes", DEFAULT_MAX_BYTES, MAX_BYTES);
    let canonical = canonical_for_read(policy, &requested, flag(args, "followSymlinks"), "file not found")?;
    check_canonical(args, &canonical)?;
    let (mut file, meta) = open_file(&canonical)?;
    let identity = Identity::of(&meta);
    check_existing_binding(args, &identity, &canonical)?;
    if meta.len() > max_bytes {
        return Err(too_large(meta.len(), max_bytes, &canonical));
    }
    if flag(args, "preflightOnly") {
        return Ok(ToolOutput::from(json!({
            "ok": true, "path": display(&canonical), "size": meta.len(), "mimeType": "", "base64": "", "sha256": "",
            "preflightOnly": true, "binding": identity.binding(),
        })));
    }
    let read = clawmcp_fs::read_bounded(&mut file, max_bytes)
        .map_err(|error| super::io_error(&error, &format!("read failed: {error}")).at(&canonical))?;
    if read.truncated {
        return Err(FileError::new("FILE_TOO_LARGE", format!("file grew beyond the limit {max_bytes} while read"))
            .at(&canonical));
    }
    Ok(answer_with(&canonical, &read.bytes, &identity))
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
