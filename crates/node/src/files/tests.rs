//! The file commands against real files in a private temp root: every limit at its edge, the
//! binding defeating a swapped file, the policy, special files refused without blocking.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::{CallContext, Content, EmbeddedResource, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::capability::{Caller, Capability, InvokeRequest};

/// A root of its own (canonical: the temp dir may sit behind a symlink) and the commands serving
/// exactly it.
struct Root {
    _dir: tempfile::TempDir,
    path: PathBuf,
    files: FilesCapability,
}

fn root() -> Root {
    let dir = tempfile::tempdir().unwrap();
    let path = fs::canonicalize(dir.path()).unwrap().join("root");
    fs::create_dir(&path).unwrap();
    let files = FilesCapability::with_policy(FilePolicy::fixed(vec![path.clone()]));
    Root { _dir: dir, path, files }
}

impl Root {
    fn outcome(&self, command: &str, args: Value) -> ToolOutcome {
        self.outcome_with(command, args, CancellationToken::new())
    }

    fn outcome_with(&self, command: &str, args: Value, cancel: CancellationToken) -> ToolOutcome {
        let request = InvokeRequest {
            id: "t".into(),
            command: command.into(),
            args: args.as_object().cloned().unwrap_or_default(),
            session_key: None,
            caller: Caller::Gateway,
        };
        let ctx = CallContext { cancel, progress: None, meta: None, request: None };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(self.files.invoke(request, ctx))
    }

    /// What the gateway gets (the payload of a successful invoke).
    fn call(&self, command: &str, args: Value) -> Value {
        self.outcome(command, args).expect("file commands answer in-band").gateway_payload().clone()
    }

    /// The in-band refusal's code, asserting it is one (and an `isError` result over MCP).
    fn refused(&self, command: &str, args: Value) -> (String, Value) {
        let output = self.outcome(command, args).expect("refusals are in-band");
        let payload = output.gateway_payload().clone();
        assert_eq!(payload["ok"], false, "{payload}");
        let rendered = clawmcp_mcp::tool::render(Ok(output), false);
        assert!(rendered.is_error, "over MCP a refusal is an error result");
        let text = rendered.first_text().unwrap().to_owned();
        assert!(text.starts_with(&format!("{command} {}: ", payload["code"].as_str().unwrap())), "{text}");
        (payload["code"].as_str().unwrap().to_owned(), payload)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }

    /// Every name in the root, to prove nothing (no temp file) is left behind.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(&self.path).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }
}

fn sha(bytes: &[u8]) -> String {
    fetch::hex(&Sha256::digest(bytes))
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

const MIB: usize = 1024 * 1024;

#[test]
fn stat_gives_type_size_mtime_and_the_inode_binding() {
    let root = root();
    let file = root.file("a.txt", b"hello");
    let meta = fs::metadata(&file).unwrap();
    let stat = root.call("file.stat", json!({"path": p(&file)}));
    assert_eq!(stat["ok"], true);
    assert_eq!(
        (stat["path"].as_str(), stat["type"].as_str(), stat["size"].as_u64()),
        (Some(&*p(&file)), Some("file"), Some(5))
    );
    let binding = json!({"kind": "existing", "device": meta.dev().to_string(), "inode": meta.ino().to_string()});
    assert_eq!(stat["binding"], binding);
    let mtime = stat["mtimeMs"].as_f64().unwrap();
    assert!((mtime - (meta.mtime() as f64 * 1000.0 + meta.mtime_nsec() as f64 / 1e6)).abs() < 1e-3, "{mtime}");
    let dir = root.call("file.stat", json!({"path": p(&root.path), "preflightOnly": true}));
    assert_eq!((dir["type"].as_str(), dir["preflightOnly"].as_bool()), (Some("directory"), Some(true)));
    let (code, payload) = root.refused("file.stat", json!({"path": p(&root.path.join("missing"))}));
    assert_eq!((code.as_str(), payload["message"].as_str()), ("NOT_FOUND", Some("path not found")));
    let (code, _) = root.refused("file.stat", json!({"path": "relative/x"}));
    assert_eq!(code, "INVALID_PATH");
}

#[test]
fn fetch_at_max_bytes_passes_and_one_byte_more_is_refused() {
    let root = root();
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    let file = root.file("data.bin", &bytes);
    let exact = root.call("file.fetch", json!({"path": p(&file), "maxBytes": 1000}));
    assert_eq!((exact["ok"].as_bool(), exact["size"].as_u64()), (Some(true), Some(1000)));
    assert_eq!(STANDARD.decode(exact["base64"].as_str().unwrap()).unwrap(), bytes);
    assert_eq!(exact["sha256"], sha(&bytes));
    assert_eq!(exact["mimeType"], "application/octet-stream");
    let (code, payload) = root.refused("file.fetch", json!({"path": p(&file), "maxBytes": 999}));
    assert_eq!(code, "FILE_TOO_LARGE");
    assert_eq!(payload["message"], "file size 1000 exceeds limit 999");
    assert_eq!(payload["canonicalPath"], p(&file));
}

#[test]
fn fetch_clamps_max_bytes_to_16_mib_and_defaults_to_8() {
    let root = root();
    let cap = root.file("cap.bin", &vec![7u8; 16 * MIB]);
    let fetched = root.call("file.fetch", json!({"path": p(&cap), "maxBytes": 64 * MIB}));
    assert_eq!(fetched["size"].as_u64(), Some(16 * MIB as u64), "exactly the hard maximum");
    let over = root.file("over.bin", &vec![7u8; 16 * MIB + 1]);
    let (_, payload) = root.refused("file.fetch", json!({"path": p(&over), "maxBytes": 64 * MIB}));
    assert_eq!(payload["message"], format!("file size {} exceeds limit {}", 16 * MIB + 1, 16 * MIB));
    // No maxBytes, or one that is not positive: 8 MiB.
    let default = root.file("default.bin", &vec![1u8; 8 * MIB + 1]);
    for max in [Value::Null, json!(0), json!(-5), json!("big")] {
        let (_, payload) = root.refused("file.fetch", json!({"path": p(&default), "maxBytes": max}));
        assert_eq!(payload["message"], format!("file size {} exceeds limit {}", 8 * MIB + 1, 8 * MIB), "{max}");
    }
}

#[test]
fn an_empty_file_is_fetched_as_empty_text() {
    let root = root();
    let file = root.file("empty", b"");
    let fetched = root.call("file.fetch", json!({"path": p(&file)}));
    assert_eq!((fetched["size"].as_u64(), fetched["base64"].as_str()), (Some(0), Some("")));
    assert_eq!((fetched["sha256"].as_str(), fetched["mimeType"].as_str()), (Some(&*sha(b"")), Some("text/plain")));
}

#[test]
fn over_mcp_the_bytes_are_a_blob_and_never_base64_in_text() {
    let root = root();
    let png = b"\x89PNG\r\n\x1a\nrest-of-image";
    let file = root.file("pic one.png", png);
    let output: ToolOutput = root.outcome("file.fetch", json!({"path": p(&file)})).unwrap();
    let base64 = STANDARD.encode(png);
    assert_eq!(output.gateway_payload()["base64"], base64);
    let rendered = clawmcp_mcp::tool::render(Ok(output), false);
    assert!(!rendered.is_error);
    let text = rendered.first_text().unwrap();
    assert!(!text.contains(&base64) && text.contains("\"mimeType\":\"image/png\""), "{text}");
    match &rendered.content[1] {
        Content::Resource { resource: EmbeddedResource::Blob { uri, mime_type, blob } } => {
            assert_eq!((mime_type.as_deref(), blob.as_str()), (Some("image/png"), base64.as_str()));
            assert!(uri.starts_with("file:///") && uri.ends_with("/root/pic%20one.png"), "{uri}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_binary_transport_is_refused_with_what_to_do() {
    let root = root();
    let file = root.file("a", b"x");
    let (code, payload) = root.refused("file.fetch", json!({"path": p(&file), "transport": "binary", "maxBytes": 10}));
    assert_eq!(code, "INVALID_PARAMS");
    assert!(payload["message"].as_str().unwrap().contains("without transport"), "{payload}");
    let (code, _) = root.refused("file.fetch", json!({"path": p(&file), "transport": "stream"}));
    assert_eq!(code, "INVALID_PARAMS");
}

#[test]
fn a_file_swapped_between_preflight_and_call_is_refused() {
    let root = root();
    let file = root.file("report.txt", b"the authorized one");
    let preflight = root.call("file.fetch", json!({"path": p(&file), "preflightOnly": true}));
    assert_eq!((preflight["preflightOnly"].as_bool(), preflight["base64"].as_str()), (Some(true), Some("")));
    // Another file renamed over it: same path, another inode.
    let other = root.file("other.txt", b"something else");
    fs::rename(&other, &file).unwrap();
    let bound =
        json!({"path": p(&file), "expectedBinding": preflight["binding"], "expectedCanonicalPath": preflight["path"]});
    for command in ["file.fetch", "file.stat"] {
        let (code, payload) = root.refused(command, bound.clone());
        assert_eq!(code, "CANONICAL_PATH_CHANGED", "{command}");
        assert_eq!(payload["message"], IDENTITY_CHANGED);
    }
    // Unchanged, the bound call reads it.
    let fresh = root.call("file.stat", json!({"path": p(&file)}));
    let fetched = root.call("file.fetch", json!({"path": p(&file), "expectedBinding": fresh["binding"]}));
    assert_eq!(STANDARD.decode(fetched["base64"].as_str().unwrap()).unwrap(), b"something else");
    // A path authorized as another canonical path is refused too.
    let (code, payload) =
        root.refused("file.fetch", json!({"path": p(&file), "expectedCanonicalPath": p(&root.path.join("x"))}));
    assert_eq!(
        (code.as_str(), payload["message"].as_str()),
        ("CANONICAL_PATH_CHANGED", Some("canonical path differs from the authorized target"))
    );
    // A binding of the wrong kind is refused.
    let (code, _) = root.refused("file.fetch", json!({"path": p(&file), "expectedBinding": {"kind": "write"}}));
    assert_eq!(code, "CANONICAL_PATH_CHANGED");
}

#[test]
fn a_symlink_out_of_the_root_is_refused_followed_or_not() {
    let root = root();
    let outside = root.path.parent().unwrap().join("secret.txt");
    fs::write(&outside, b"outside").unwrap();
    let link = root.path.join("link.txt");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let (code, payload) = root.refused("file.fetch", json!({"path": p(&link)}));
    assert_eq!((code.as_str(), payload["canonicalPath"].as_str()), ("SYMLINK_REDIRECT", Some(&*p(&outside))));
    let (code, payload) = root.refused("file.fetch", json!({"path": p(&link), "followSymlinks": true}));
    assert_eq!(code, "PATH_POLICY_DENIED");
    let message = payload["message"].as_str().unwrap();
    assert!(
        message.contains("outside the file roots") && message.contains("clawmcp settings set NodeFileRoots"),
        "{message}"
    );
    // Straight at it, and through `..`.
    let (code, _) = root.refused("file.stat", json!({"path": p(&outside)}));
    assert_eq!(code, "PATH_POLICY_DENIED");
    let (code, _) = root.refused("file.stat", json!({"path": format!("{}/../secret.txt", p(&root.path))}));
    assert_eq!(code, "PATH_POLICY_DENIED");
    // A symlink inside the root to a file inside it is followed on request.
    let inner = root.file("real.txt", b"inside");
    let inner_link = root.path.join("inner-link");
    std::os::unix::fs::symlink(&inner, &inner_link).unwrap();
    let fetched = root.call("file.fetch", json!({"path": p(&inner_link), "followSymlinks": true}));
    assert_eq!(fetched["path"], p(&inner));
    // A write through the link out of the root is refused as well, and writes nothing.
    let (code, _) = root.refused(
        "file.write",
        json!({"path": p(&link), "contentBase64": STANDARD.encode("x"), "overwrite": true, "followSymlinks": true}),
    );
    assert_eq!(code, "SYMLINK_TARGET_DENIED");
    assert_eq!(fs::read(&outside).unwrap(), b"outside");
    // Through a symlinked directory that leads out of the root: refused, followed or not.
    let out_dir = root.path.parent().unwrap().join("elsewhere");
    fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::symlink(&out_dir, root.path.join("door")).unwrap();
    let through = root.path.join("door/planted.txt");
    let (code, _) = root.refused("file.write", Value::Object(write_args(&through, b"x")));
    assert_eq!(code, "SYMLINK_REDIRECT");
    let (code, _) = root.refused("file.write", with(write_args(&through, b"x"), json!({"followSymlinks": true})));
    assert_eq!(code, "PATH_POLICY_DENIED");
    assert_eq!(fs::read_dir(&out_dir).unwrap().count(), 0, "nothing was written out of the root");
}

#[test]
fn proc_sys_and_dev_are_never_served_even_under_a_root_of_slash() {
    let files = FilesCapability::with_policy(FilePolicy::fixed(vec![PathBuf::from("/")]));
    let root = Root { _dir: tempfile::tempdir().unwrap(), path: PathBuf::from("/"), files };
    for path in ["/proc/self/status", "/proc/1/mem", "/sys/kernel/mm", "/dev/zero", "/dev/../proc/self/environ"] {
        for command in ["file.fetch", "file.stat", "dir.list"] {
            let (code, payload) = root.refused(command, json!({"path": path}));
            assert_eq!(code, "PATH_POLICY_DENIED", "{command} {path}");
            assert!(payload["message"].as_str().unwrap().contains("never serves /proc, /sys or /dev"), "{payload}");
        }
    }
    let (code, _) =
        root.refused("file.write", json!({"path": "/proc/self/comm", "contentBase64": "eA==", "overwrite": true}));
    assert_eq!(code, "PATH_POLICY_DENIED");
}

#[test]
fn a_fifo_or_socket_is_refused_at_once_by_every_command() {
    let root = root();
    let fifo = root.path.join("pipe");
    mkfifo(&fifo);
    // No writer exists: a blocking open would hang these calls forever.
    for command in ["file.fetch", "file.stat"] {
        let (code, payload) = root.refused(command, json!({"path": p(&fifo)}));
        assert_eq!(code, "UNSUPPORTED_FILE_TYPE", "{command}");
        assert!(payload["message"].as_str().unwrap().contains("FIFO"), "{payload}");
    }
    let (code, _) = root.refused("file.write", json!({"path": p(&fifo), "contentBase64": "eA==", "overwrite": true}));
    assert_eq!(code, "UNSUPPORTED_FILE_TYPE");
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&fs::symlink_metadata(&fifo).unwrap().file_type()),
        "left as it was"
    );
    let socket = root.path.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let (code, payload) = root.refused("file.fetch", json!({"path": p(&socket)}));
    assert!(code == "UNSUPPORTED_FILE_TYPE" && payload["message"].as_str().unwrap().contains("socket"), "{payload}");
    let (code, payload) = root.refused("dir.fetch", json!({"path": p(&root.path)}));
    assert_eq!(code, "READ_ERROR");
    assert!(payload["message"].as_str().unwrap().contains("cannot archive pipe: it is a FIFO"), "{payload}");
}

fn write_args(path: &Path, content: &[u8]) -> Map<String, Value> {
    json!({"path": p(path), "contentBase64": STANDARD.encode(content)}).as_object().unwrap().clone()
}

fn with(mut args: Map<String, Value>, extra: Value) -> Value {
    args.extend(extra.as_object().unwrap().clone());
    Value::Object(args)
}

#[test]
fn a_new_file_is_written_0600_and_an_existing_one_only_with_overwrite() {
    let root = root();
    let target = root.path.join("new.txt");
    let written = root.call("file.write", Value::Object(write_args(&target, b"first")));
    assert_eq!(written["ok"], true);
    assert_eq!((written["size"].as_u64(), written["overwritten"].as_bool()), (Some(5), Some(false)));
    assert_eq!(written["sha256"], sha(b"first"));
    let meta = fs::metadata(&target).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(written["binding"]["inode"], meta.ino().to_string());
    let (code, _) = root.refused("file.write", Value::Object(write_args(&target, b"second")));
    assert_eq!(code, "EXISTS_NO_OVERWRITE");
    assert_eq!(fs::read(&target).unwrap(), b"first");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
    let replaced = root.call("file.write", with(write_args(&target, b"second"), json!({"overwrite": true})));
    assert_eq!(replaced["overwritten"], true);
    assert_eq!(fs::read(&target).unwrap(), b"second");
    assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o640, "a replaced file keeps its mode");
    let empty = root.call("file.write", with(write_args(&target, b""), json!({"overwrite": true})));
    assert_eq!((empty["size"].as_u64(), fs::read(&target).unwrap().len()), (Some(0), 0));
    assert_eq!(root.names(), ["new.txt"], "no temp file is left");
}

#[test]
fn a_sha256_mismatch_leaves_the_old_file_untouched_and_nothing_behind() {
    let root = root();
    let target = root.file("keep.txt", b"old content");
    let (code, payload) = root.refused(
        "file.write",
        with(write_args(&target, b"new content"), json!({"overwrite": true, "expectedSha256": sha(b"other")})),
    );
    assert_eq!(code, "INTEGRITY_FAILURE");
    assert_eq!(payload["message"], format!("sha256 mismatch: expected {}, got {}", sha(b"other"), sha(b"new content")));
    assert_eq!(fs::read(&target).unwrap(), b"old content");
    assert_eq!(root.names(), ["keep.txt"]);
    let matching = root.call(
        "file.write",
        with(
            write_args(&target, b"new content"),
            json!({"overwrite": true, "expectedSha256": sha(b"new content").to_uppercase()}),
        ),
    );
    assert_eq!(matching["ok"], true, "the digest is compared case-insensitively, as upstream");
}

#[test]
fn content_of_16_mib_is_written_and_one_byte_more_refused() {
    let root = root();
    let target = root.path.join("big.bin");
    let written = root.call("file.write", Value::Object(write_args(&target, &vec![3u8; 16 * MIB])));
    assert_eq!(written["size"].as_u64(), Some(16 * MIB as u64));
    let (code, payload) =
        root.refused("file.write", with(write_args(&target, &vec![3u8; 16 * MIB + 1]), json!({"overwrite": true})));
    assert_eq!(code, "FILE_TOO_LARGE");
    assert!(payload["message"].as_str().unwrap().starts_with(&format!("decoded content is {} bytes", 16 * MIB + 1)));
    assert_eq!(fs::metadata(&target).unwrap().len(), 16 * MIB as u64);
    let (code, _) =
        root.refused("file.write", json!({"path": p(&target), "contentBase64": "not base64!", "overwrite": true}));
    assert_eq!(code, "INVALID_BASE64");
    let (code, _) = root.refused("file.write", json!({"path": p(&target)}));
    assert_eq!(code, "INVALID_BASE64");
    assert_eq!(root.names(), ["big.bin"]);
}

#[test]
fn parents_are_created_only_when_asked() {
    let root = root();
    let target = root.path.join("a/b/c.txt");
    let (code, _) = root.refused("file.write", Value::Object(write_args(&target, b"x")));
    assert_eq!(code, "PARENT_NOT_FOUND");
    assert!(!root.path.join("a").exists());
    let written = root.call("file.write", with(write_args(&target, b"x"), json!({"createParents": true})));
    assert_eq!((written["path"].as_str(), fs::read(&target).unwrap()), (Some(&*p(&target)), b"x".to_vec()));
}

#[test]
fn a_write_binding_defeats_a_target_swapped_after_preflight() {
    let root = root();
    let target = root.file("conf.txt", b"v1");
    let args = with(write_args(&target, b"v2"), json!({"overwrite": true}));
    let preflight = root.call("file.write", with(args.as_object().unwrap().clone(), json!({"preflightOnly": true})));
    let binding = preflight["binding"].clone();
    assert_eq!((binding["kind"].as_str(), binding["anchorPath"].as_str()), (Some("write"), Some(&*p(&root.path))));
    assert_eq!(binding["targetInode"], fs::metadata(&target).unwrap().ino().to_string());
    assert_eq!(fs::read(&target).unwrap(), b"v1", "a preflight writes nothing");
    // Swapped for another file between the two calls.
    let swapped = root.file("swap.txt", b"someone else's");
    fs::rename(&swapped, &target).unwrap();
    let bound = with(
        args.as_object().unwrap().clone(),
        json!({"expectedBinding": binding, "expectedCanonicalPath": preflight["path"]}),
    );
    let (code, _) = root.refused("file.write", bound.clone());
    assert_eq!(code, "CANONICAL_PATH_CHANGED");
    assert_eq!(fs::read(&target).unwrap(), b"someone else's");
    assert_eq!(root.names(), ["conf.txt"]);
    // A binding for a file that did not exist refuses one that appeared since.
    let fresh = root.path.join("fresh.txt");
    let preflight = root.call(
        "file.write",
        json!({"path": p(&fresh), "contentBase64": "eA==", "overwrite": true, "preflightOnly": true}),
    );
    assert!(preflight["binding"].get("targetInode").is_none());
    fs::write(&fresh, b"planted").unwrap();
    let (code, _) = root.refused(
        "file.write",
        json!({"path": p(&fresh), "contentBase64": "eA==", "overwrite": true, "expectedBinding": preflight["binding"]}),
    );
    assert_eq!(code, "CANONICAL_PATH_CHANGED");
    assert_eq!(fs::read(&fresh).unwrap(), b"planted");
    // The bound call goes through when nothing changed.
    let preflight = root.call("file.write", with(args.as_object().unwrap().clone(), json!({"preflightOnly": true})));
    let done = root
        .call("file.write", with(args.as_object().unwrap().clone(), json!({"expectedBinding": preflight["binding"]})));
    assert_eq!((done["ok"].as_bool(), fs::read(&target).unwrap()), (Some(true), b"v2".to_vec()));
}

fn names_of(listing: &Value) -> Vec<String> {
    listing["entries"].as_array().unwrap().iter().map(|entry| entry["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn dir_list_pages_in_a_stable_order_at_5000_and_5001() {
    let root = root();
    let big = root.path.join("big");
    fs::create_dir(&big).unwrap();
    for i in 0..5001 {
        fs::write(big.join(format!("f{i:05}")), b"").unwrap();
    }
    let first = root.call("dir.list", json!({"path": p(&big), "maxEntries": 5000}));
    assert_eq!((first["entries"].as_array().unwrap().len(), first["truncated"].as_bool()), (5000, Some(true)));
    assert_eq!(first["nextPageToken"], "5000");
    let second = root.call("dir.list", json!({"path": p(&big), "maxEntries": 5000, "pageToken": "5000"}));
    assert_eq!((names_of(&second), second["truncated"].as_bool()), (vec!["f05000".to_owned()], Some(false)));
    assert!(second.get("nextPageToken").is_none());
    // 5001 is clamped to 5000.
    let clamped = root.call("dir.list", json!({"path": p(&big), "maxEntries": 5001}));
    assert_eq!(clamped["entries"].as_array().unwrap().len(), 5000);
    let default = root.call("dir.list", json!({"path": p(&big)}));
    assert_eq!((default["entries"].as_array().unwrap().len(), default["nextPageToken"].as_str()), (200, Some("200")));
}

#[test]
fn dir_list_pages_join_up_to_the_whole_directory_sorted() {
    let root = root();
    let dir = root.path.join("d");
    for name in ["b.txt", "a.md", "C", "sub/inner", ".hidden"] {
        root.file(&format!("d/{name}"), name.as_bytes());
    }
    std::os::unix::fs::symlink("/nowhere", dir.join("link")).unwrap();
    let (mut all, mut token) = (Vec::new(), None::<String>);
    loop {
        let mut args = json!({"path": p(&dir), "maxEntries": 2});
        if let Some(token) = &token {
            args["pageToken"] = json!(token);
        }
        let page = root.call("dir.list", args);
        all.extend(page["entries"].as_array().unwrap().clone());
        match page["nextPageToken"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
    }
    let names: Vec<&str> = all.iter().map(|entry| entry["name"].as_str().unwrap()).collect();
    assert_eq!(names, [".hidden", "C", "a.md", "b.txt", "link", "sub"]);
    let sub = &all[5];
    assert_eq!(
        (sub["isDir"].as_bool(), sub["size"].as_u64(), sub["mimeType"].as_str()),
        (Some(true), Some(0), Some("inode/directory"))
    );
    assert_eq!((all[2]["mimeType"].as_str(), all[2]["size"].as_u64()), (Some("text/markdown"), Some(4)));
    assert_eq!(all[4]["isDir"], false, "a symlink is listed as itself");
    assert_eq!(all[3]["path"], p(&dir.join("b.txt")));
    // A token that is not a whole number starts over.
    assert_eq!(
        names_of(&root.call("dir.list", json!({"path": p(&dir), "maxEntries": 1, "pageToken": "x"}))),
        [".hidden"]
    );
    let empty = root.path.join("empty");
    fs::create_dir(&empty).unwrap();
    let listed = root.call("dir.list", json!({"path": p(&empty)}));
    assert_eq!((listed["entries"].as_array().unwrap().len(), listed["truncated"].as_bool()), (0, Some(false)));
    let (code, _) = root.refused("dir.list", json!({"path": p(&dir.join("a.md"))}));
    assert_eq!(code, "IS_FILE");
}

/// The paths and contents in a tar.gz.
fn unpack(tar_gz: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().trim_end_matches('/').to_owned();
        let content = match entry.header().entry_type().is_dir() {
            true => None,
            false => {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                Some(bytes)
            }
        };
        out.push((path, content));
    }
    out
}

#[test]
fn dir_fetch_archives_the_tree_with_its_contents() {
    let root = root();
    root.file("tree/a.txt", b"alpha");
    root.file("tree/sub/b.bin", &[0u8, 1, 2, 255]);
    root.file("tree/sub/deeper/c", b"");
    fs::create_dir(root.path.join("tree/emptydir")).unwrap();
    let tree = root.path.join("tree");
    let output = root.outcome("dir.fetch", json!({"path": p(&tree)})).unwrap();
    let gateway = output.gateway_payload().clone();
    let archive = STANDARD.decode(gateway["tarBase64"].as_str().unwrap()).unwrap();
    assert_eq!(
        (gateway["tarBytes"].as_u64(), gateway["sha256"].as_str()),
        (Some(archive.len() as u64), Some(&*sha(&archive)))
    );
    let expected = ["a.txt", "emptydir", "sub", "sub/b.bin", "sub/deeper", "sub/deeper/c"];
    assert_eq!(gateway["entries"], json!(expected));
    assert_eq!(gateway["fileCount"], 6);
    let mut unpacked = unpack(&archive);
    unpacked.sort();
    assert_eq!(
        unpacked,
        [
            ("a.txt".to_owned(), Some(b"alpha".to_vec())),
            ("emptydir".to_owned(), None),
            ("sub".to_owned(), None),
            ("sub/b.bin".to_owned(), Some(vec![0, 1, 2, 255])),
            ("sub/deeper".to_owned(), None),
            ("sub/deeper/c".to_owned(), Some(vec![])),
        ]
    );
    let rendered = clawmcp_mcp::tool::render(Ok(output), false);
    assert!(!rendered.first_text().unwrap().contains("tarBase64"));
    assert!(
        matches!(&rendered.content[1], Content::Resource { resource: EmbeddedResource::Blob { mime_type: Some(m), .. } } if m == "application/gzip")
    );
    let preflight = root.call("dir.fetch", json!({"path": p(&tree), "preflightOnly": true}));
    assert_eq!((preflight["tarBase64"].as_str(), preflight["entries"].clone()), (Some(""), json!(expected)));
    // An empty directory is an empty archive.
    let empty = root.call("dir.fetch", json!({"path": p(&tree.join("emptydir"))}));
    assert_eq!((empty["fileCount"].as_u64(), empty["entries"].clone()), (Some(0), json!([])));
    assert!(unpack(&STANDARD.decode(empty["tarBase64"].as_str().unwrap()).unwrap()).is_empty());
}

#[test]
fn dir_fetch_is_bounded_in_bytes_and_entries_and_refuses_links() {
    let root = root();
    // Incompressible content: 64 KiB of it cannot fit in 16 KiB of archive.
    let mut noise = vec![0u8; 64 * 1024];
    getrandom::fill(&mut noise).unwrap();
    root.file("noisy/data", &noise);
    let (code, payload) =
        root.refused("dir.fetch", json!({"path": p(&root.path.join("noisy")), "maxBytes": 16 * 1024}));
    assert_eq!(
        (code.as_str(), payload["message"].as_str()),
        ("TREE_TOO_LARGE", Some("tarball exceeded 16384 byte limit mid-stream"))
    );
    let fits = root.call("dir.fetch", json!({"path": p(&root.path.join("noisy")), "maxBytes": 1024 * 1024}));
    assert_eq!(fits["ok"], true);
    let many = root.path.join("many");
    fs::create_dir(&many).unwrap();
    for i in 0..5000 {
        fs::write(many.join(format!("{i}")), b"").unwrap();
    }
    assert_eq!(root.call("dir.fetch", json!({"path": p(&many)}))["fileCount"], 5000);
    fs::write(many.join("one-more"), b"").unwrap();
    let (code, payload) = root.refused("dir.fetch", json!({"path": p(&many)}));
    assert_eq!(
        (code.as_str(), payload["message"].as_str()),
        ("TREE_TOO_LARGE", Some("directory tree exceeds 5000 entries"))
    );
    let linked = root.path.join("linked");
    fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", linked.join("passwd")).unwrap();
    let (code, payload) = root.refused("dir.fetch", json!({"path": p(&linked)}));
    assert_eq!(code, "READ_ERROR");
    assert!(payload["message"].as_str().unwrap().contains("passwd: it is a symbolic link"), "{payload}");
}

#[test]
fn a_cancelled_dir_fetch_answers_cancelled() {
    let root = root();
    root.file("t/a", b"a");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let failure = root.outcome_with("dir.fetch", json!({"path": p(&root.path.join("t"))}), cancel).unwrap_err();
    assert_eq!(failure.message, clawmcp_mcp::CANCELLED);
}

#[test]
fn fs_list_dir_lists_directories_visible_first_then_hidden() {
    let root = root();
    for dir in ["b", "a", ".cache", "a/inner"] {
        fs::create_dir(root.path.join(dir)).unwrap();
    }
    root.file("file.txt", b"x");
    std::os::unix::fs::symlink(root.path.join("a"), root.path.join("link-to-a")).unwrap();
    std::os::unix::fs::symlink("/nowhere", root.path.join("broken")).unwrap();
    let listing = root.call("fs.listDir", json!({"path": p(&root.path)}));
    let names: Vec<&str> = listing["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "link-to-a", ".cache"]);
    assert_eq!(listing["entries"][3], json!({"name": ".cache", "path": p(&root.path.join(".cache")), "hidden": true}));
    assert_eq!(listing["entries"][0], json!({"name": "a", "path": p(&root.path.join("a"))}));
    assert_eq!(
        (listing["path"].as_str(), listing["parent"].as_str()),
        (Some(&*p(&root.path)), root.path.parent().and_then(Path::to_str))
    );
    assert!(listing["home"].as_str().is_some_and(|home| home.starts_with('/')));
    // Failures are invoke errors, as upstream answers fs.listDir.
    let outside = root.outcome("fs.listDir", json!({"path": "/etc"})).unwrap_err();
    assert!(outside.message.contains("PATH_POLICY_DENIED") && outside.code == Some("INVALID_REQUEST"), "{outside:?}");
    let relative = root.outcome("fs.listDir", json!({"path": "etc"})).unwrap_err();
    assert_eq!(relative.message, "fs.listDir path must be absolute");
    let not_string = root.outcome("fs.listDir", json!({"path": 3})).unwrap_err();
    assert!(not_string.message.contains("path must be a string"));
}

#[test]
fn the_roots_come_from_settings_live_and_default_to_home() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    let live = std::sync::Arc::new(crate::settings::LiveSettings::open(path.clone()).unwrap());
    let policy = FilePolicy::new(live.clone());
    assert_eq!(policy.roots(), dirs::home_dir().into_iter().collect::<Vec<_>>());
    let served = fs::canonicalize(dir.path()).unwrap().join("served");
    fs::create_dir(&served).unwrap();
    fs::write(served.join("f"), b"x").unwrap();
    let files = FilesCapability::with_policy(policy.clone());
    let root = Root { _dir: tempfile::tempdir().unwrap(), path: served.clone(), files };
    let (code, payload) = root.refused("file.stat", json!({"path": p(&served.join("f"))}));
    assert_eq!(code, "PATH_POLICY_DENIED");
    assert!(payload["message"].as_str().unwrap().contains("NodeFileRoots"), "{payload}");
    fs::write(&path, json!({"NodeFileRoots": [p(&served)]}).to_string()).unwrap();
    assert_eq!(policy.roots(), std::slice::from_ref(&served));
    assert_eq!(root.call("file.stat", json!({"path": p(&served.join("f"))}))["ok"], true, "applies at once");
}
