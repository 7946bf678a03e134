//! The node trusts its data dir and state files only when nobody else could have written them
//! (issue: hostile local users). Each rule at its edge, against the real binary: it refuses to
//! start with the exact fix, never hangs on a FIFO, never serves a token it did not make.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use predicates::prelude::*;
use predicates::str::contains;

use crate::support::{BIN, Node, Sandbox, create_private_dir, free_port, mode, probe};

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// `clawmcp node` on this sandbox's data dir, expected to refuse to start.
fn refused_start(sandbox: &Sandbox) -> assert_cmd::assert::Assert {
    let port = free_port().to_string();
    sandbox
        .clawmcp(["node", "--port", &port, "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stderr(contains("panicked").not())
}

#[test]
fn a_data_dir_others_can_write_is_refused_sticky_or_not() {
    for writable in [0o770, 0o707, 0o777, 0o1777] {
        let sandbox = Sandbox::new();
        create_private_dir(&sandbox.data());
        set_mode(&sandbox.data(), writable);
        refused_start(&sandbox)
            .stderr(contains("writable by"))
            .stderr(contains(format!("chmod 700 {}", sandbox.data().display())));
        assert!(!sandbox.token_path().exists(), "nothing is written into a refused dir (mode {writable:o})");
    }
}

#[test]
fn state_files_others_can_write_are_refused() {
    for name in ["mcp-token.txt", "settings.json", "exec-approvals.json"] {
        let sandbox = Sandbox::new();
        let path = sandbox.write_data_file(name, "{}");
        set_mode(&path, 0o666);
        refused_start(&sandbox)
            .stderr(contains("writable by"))
            .stderr(contains(format!("chmod 600 {}", path.display())));
    }
}

#[test]
fn symlinked_and_special_state_files_are_refused_without_hanging() {
    for name in ["mcp-token.txt", "settings.json", "exec-approvals.json"] {
        let sandbox = Sandbox::new();
        let elsewhere = sandbox.root().join("elsewhere");
        fs::write(&elsewhere, "{}").unwrap();
        create_private_dir(&sandbox.data());
        std::os::unix::fs::symlink(&elsewhere, sandbox.data().join(name)).unwrap();
        refused_start(&sandbox).stderr(contains("symbolic link"));

        let sandbox = Sandbox::new();
        create_private_dir(&sandbox.data());
        // No writer ever opens it: a blocking open would hang the node (and this test, bounded
        // by the one-shot limit).
        mkfifo(&sandbox.data().join(name));
        refused_start(&sandbox).stderr(contains("FIFO")).stderr(contains("rm "));
    }
}

#[test]
fn a_token_that_is_not_43_base64url_characters_is_replaced_never_served() {
    for planted in ["x".to_string(), "A".repeat(42), "A".repeat(44), "a".repeat(1000), format!("{}!", "A".repeat(42))] {
        let sandbox = Sandbox::new();
        sandbox.write_data_file("mcp-token.txt", &planted);
        let node = Node::start(&sandbox);
        let served = node.token();
        assert_eq!(served.len(), 43, "{served:?}");
        assert_ne!(served, planted);
        assert_eq!(probe(node.port, Some(planted.trim())), Ok(401), "the planted token must not open the node");
        assert!(node.stderr().contains("does not hold a clawmcp token"), "{}", node.stderr());
    }
}

#[test]
fn a_token_file_past_its_size_bound_is_refused_not_read_whole() {
    let sandbox = Sandbox::new();
    let path = sandbox.write_data_file("mcp-token.txt", &"a".repeat(1025));
    refused_start(&sandbox)
        .stderr(contains("larger than the 1024 bytes"))
        .stderr(contains(format!("rm {}", path.display())));
}

#[test]
fn a_token_file_readable_by_others_is_made_private_and_kept() {
    let sandbox = Sandbox::new();
    let token = "A".repeat(43);
    let path = sandbox.write_data_file("mcp-token.txt", &token);
    set_mode(&path, 0o644);
    let node = Node::start(&sandbox);
    assert_eq!(node.token(), token, "a private-enough token is kept: clients are configured with it");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(probe(node.port, Some(&token)), Ok(200));
}

/// `tools/list` over HTTP with `token`: the tool names, or why there are none.
fn list_tools(port: u16, token: &str) -> Result<Vec<String>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .build()
        .into();
    let mut response = agent
        .post(format!("http://127.0.0.1:{port}/"))
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .map_err(|e| e.to_string())?;
    let text = response.body_mut().read_to_string().map_err(|e| e.to_string())?;
    let body: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    let tools = body["result"]["tools"].as_array().ok_or_else(|| format!("no tools in {body}"))?;
    Ok(tools.iter().filter_map(|tool| tool["name"].as_str().map(str::to_owned)).collect())
}

#[test]
fn a_fifo_swapped_in_while_running_never_blocks_a_request() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let token = node.token();
    assert!(list_tools(node.port, &token).unwrap().contains(&"system.run".to_string()));
    for name in ["mcp-token.txt", "settings.json", "exec-approvals.json"] {
        let path = sandbox.data().join(name);
        let _ = fs::remove_file(&path);
        mkfifo(&path);
        // Several at once: a blocking read would pin every runtime thread of the node.
        let answers: Vec<_> = (0..4)
            .map(|_| {
                let (token, port) = (token.clone(), node.port);
                std::thread::spawn(move || list_tools(port, &token))
            })
            .collect();
        for answer in answers {
            let tools = answer.join().unwrap().unwrap_or_else(|e| panic!("with a FIFO at {name}: {e}"));
            if name == "settings.json" {
                assert!(!tools.contains(&"system.run".to_string()), "unreadable settings switch system.run off");
            }
        }
        fs::remove_file(&path).unwrap();
    }
    assert!(node.stderr().contains("FIFO"), "the refusal is logged:\n{}", node.stderr());
}

#[test]
fn another_users_data_dir_is_refused() {
    let sandbox = Sandbox::new();
    if nix::unistd::geteuid().is_root() {
        // Root's node on a dir that belongs to nobody...
        create_private_dir(&sandbox.data());
        std::os::unix::fs::chown(sandbox.data(), Some(65534), Some(65534)).unwrap();
        refused_start(&sandbox).stderr(contains("owned by nobody")).stderr(contains("--data-dir"));
        // ...and nobody's node on a dir that belongs to root (setpriv drops to uid 65534).
        let root_dir = sandbox.root().join("root-owned");
        fs::create_dir(&root_dir).unwrap();
        set_mode(sandbox.root(), 0o755);
        set_mode(&root_dir, 0o755);
        let output = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "node", "--port", &free_port().to_string()])
            .arg("--data-dir")
            .arg(&root_dir)
            .env("HOME", &root_dir)
            .output()
            .expect("setpriv (Debian package util-linux) runs the node as nobody");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("owned by root") && stderr.contains("runs as nobody"), "{stderr}");
    } else {
        // A normal user's node on a directory root owns.
        sandbox
            .clawmcp(["node", "--port", &free_port().to_string(), "--data-dir", "/"])
            .assert()
            .code(1)
            .stderr(contains("owned by root"))
            .stderr(contains("--data-dir"));
    }
}
