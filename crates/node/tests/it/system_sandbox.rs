//! `system.run` with `SystemRunSandbox` enabled: the settings reach the program (read live), a
//! blocked operation is the program's own failure, a killed fork bomb is noted in the result and
//! leaves the node healthy, and a sandbox that cannot be set up refuses the run.
//!
//! Paths that must be outside every writable tree live under cargo's target tmp dir: the temp
//! directory (`/tmp`) is writable in the sandbox by design.

use std::net::TcpListener;
use std::path::Path;

use crate::system_support::{Node, payload_of, text_of};
use clawmcp_node::settings::Settings;
use serde_json::{Value, json};

/// A directory outside `/tmp` (which a contained run may write), removed when dropped.
fn outside_tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn set_sandbox(node: &Node, sandbox: Value) {
    let path = node.data.settings_path();
    let mut settings = serde_json::to_value(Settings::load(&path).unwrap()).unwrap();
    settings["SystemRunSandbox"] = sandbox;
    std::fs::write(&path, settings.to_string()).unwrap();
}

async fn run_in(node: &Node, cwd: &Path, script: &str) -> Value {
    node.call("system.run", json!({"command": ["sh", "-c", script], "cwd": cwd})).await
}

#[tokio::test]
async fn writes_land_only_in_the_working_directory_and_temp_and_the_switch_is_read_live() {
    let node = Node::new();
    let (workspace, outside) = (outside_tmp(), outside_tmp());
    let target = outside.path().join("written");
    let script = format!(
        "echo w > in-workspace && echo ok-workspace; echo t > \"${{TMPDIR:-/tmp}}/clawmcp-sandbox-$$\" && rm \"${{TMPDIR:-/tmp}}/clawmcp-sandbox-$$\" && echo ok-temp; echo x > '{}' || echo denied; cat /usr/bin/env > /dev/null && echo ok-read",
        target.display()
    );

    set_sandbox(&node, json!({"Enabled": true}));
    let payload = payload_of(&run_in(&node, workspace.path(), &script).await);
    assert_eq!(payload["stdout"], "ok-workspace\nok-temp\ndenied\nok-read\n", "{payload}");
    assert!(payload["stderr"].as_str().unwrap().contains("Permission denied"), "{payload}");
    assert_eq!(payload["exitCode"], 0, "the command ran; its blocked write is its own failure");
    assert!(payload.get("sandbox").is_none(), "everything held on this kernel: nothing to note: {payload}");
    assert!(!target.exists());

    // Switched off in the file, the next call runs uncontained.
    set_sandbox(&node, json!({"Enabled": false}));
    let payload = payload_of(&run_in(&node, workspace.path(), &script).await);
    assert_eq!(payload["stdout"], "ok-workspace\nok-temp\nok-read\n", "{payload}");
    assert!(target.exists());
}

#[tokio::test]
async fn extra_writable_paths_are_writable() {
    let node = Node::new();
    let (workspace, extra) = (outside_tmp(), outside_tmp());
    set_sandbox(&node, json!({"Enabled": true, "WritablePaths": [extra.path()]}));
    let script = format!("echo x > '{}/f' && echo ok", extra.path().display());
    assert_eq!(payload_of(&run_in(&node, workspace.path(), &script).await)["stdout"], "ok\n");
}

#[tokio::test]
async fn without_network_a_listener_outside_cannot_be_reached() {
    let node = Node::new();
    let workspace = outside_tmp();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec bash -c 'echo hi > /dev/tcp/127.0.0.1/{port} && echo connected'");

    set_sandbox(&node, json!({"Enabled": true, "Network": false}));
    let payload = payload_of(&run_in(&node, workspace.path(), &script).await);
    assert_ne!(payload["exitCode"], 0);
    assert!(payload["stderr"].as_str().unwrap().contains("Network is unreachable"), "{payload}");

    set_sandbox(&node, json!({"Enabled": true, "Network": true}));
    let payload = payload_of(&run_in(&node, workspace.path(), &script).await);
    assert_eq!(payload["stdout"], "connected\n", "{payload}");
}

#[tokio::test]
async fn a_fork_bomb_is_killed_noted_and_the_node_stays_healthy() {
    let node = Node::new();
    let workspace = outside_tmp();
    set_sandbox(&node, json!({"Enabled": true, "MaxProcesses": 16}));
    // Bounded by construction, as the process crate's bomb (see `fork_bomb` there): each copy
    // below depth 9 starts two more, then becomes a `sleep` that outlasts the time limit. It
    // grows exponentially, far past 16, but never past 2^10 - 1 = 1023 processes even if the
    // limit failed (as root, RLIMIT_NPROC does not bind: only the reaper's count stops it).
    let bomb = "bomb() { if [ \"$1\" -lt 9 ]; then bomb $(($1 + 1)) & bomb $(($1 + 1)) & fi; exec sleep 60; }; bomb 0";
    let result = node
        .call("system.run", json!({"command": ["sh", "-c", bomb], "cwd": workspace.path(), "timeoutMs": 20000}))
        .await;
    let payload = payload_of(&result);
    assert_eq!((payload["exitCode"].clone(), payload["timedOut"].clone()), (json!(137), json!(false)), "{payload}");
    let note = payload["sandbox"].as_str().unwrap();
    assert!(note.contains("MaxProcesses (16)") && note.contains("killed"), "{note}");
    let after = payload_of(&run_in(&node, workspace.path(), "echo healthy").await);
    assert_eq!(after["stdout"], "healthy\n");
    assert!(after.get("sandbox").is_none());
}

#[tokio::test]
async fn a_memory_hog_fails_at_memory_mib() {
    let node = Node::new();
    let workspace = outside_tmp();
    set_sandbox(&node, json!({"Enabled": true, "MemoryMiB": 64}));
    let hog = "perl -e '$x = \"a\" x (256 * 1024 * 1024); print \"allocated\\n\"'";
    let payload = payload_of(&run_in(&node, workspace.path(), hog).await);
    assert_ne!(payload["exitCode"], 0);
    assert!(payload["stderr"].as_str().unwrap().contains("Out of memory"), "{payload}");
}

#[tokio::test]
async fn a_sandbox_that_would_make_everything_writable_refuses_the_run() {
    let node = Node::new();
    let marker = outside_tmp();
    set_sandbox(&node, json!({"Enabled": true}));
    let script = format!("touch '{}/ran'", marker.path().display());
    let result = run_in(&node, Path::new("/"), &script).await;
    assert_eq!(result["isError"], true, "{result}");
    let text = text_of(&result);
    assert!(
        text.contains("sandbox") && text.contains("root of the filesystem") && text.contains("did not run"),
        "{text}"
    );
    assert!(!marker.path().join("ran").exists());
}
