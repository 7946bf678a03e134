//! `clawmcp node`: what it prints, the files it creates, where its port and data dir come
//! from, how it fails, and how it stops.

use std::fs;

use nix::sys::signal::Signal;
use predicates::prelude::*;
use predicates::str::contains;

use crate::support::{Node, Sandbox, free_port, is_alive, mode};

#[test]
fn startup_names_the_endpoint_and_token_file_but_never_the_token() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let token = node.token();
    let stderr = node.stderr();

    assert!(stderr.contains(&format!("http://127.0.0.1:{}/", node.port)), "no endpoint in:\n{stderr}");
    assert!(stderr.contains(&sandbox.token_path().display().to_string()), "no token file path in:\n{stderr}");
    assert!(stderr.contains("MCP-only"), "the mode is not named in:\n{stderr}");
    assert!(!stderr.contains(&token), "the token itself leaked to stderr:\n{stderr}");
    assert_eq!(node.stdout(), "", "the node writes logs to stderr only");
}

#[test]
fn the_token_file_is_43_base64url_chars_private_in_a_private_dir() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let token = node.token();

    assert_eq!(token.len(), 43, "{token:?}");
    assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "not base64url: {token:?}");
    assert_eq!(mode(&sandbox.token_path()), 0o600);
    assert_eq!(mode(&sandbox.data()), 0o700, "the node created the data dir");
}

#[test]
fn the_token_survives_a_restart() {
    let sandbox = Sandbox::new();
    let mut first = Node::start(&sandbox);
    let token = first.token();
    assert!(first.stop_with(Signal::SIGTERM).status.success());

    let second = Node::start(&sandbox);
    assert_eq!(second.token(), token, "a restart must not lock out configured clients");
}

#[test]
fn a_port_in_use_is_a_clear_error_naming_the_port() {
    let sandbox = Sandbox::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();

    sandbox
        .clawmcp(["node", "--port", &port.to_string(), "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stderr(contains(format!("port {port}")))
        .stderr(contains("already in use"))
        .stderr(contains("--port"))
        .stderr(contains("panicked").not());
}

#[test]
fn the_port_comes_from_openclaw_mcp_port() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    let node = Node::start_with(&sandbox, |command, port| {
        command.env("OPENCLAW_MCP_PORT", port.to_string()).arg("--data-dir").arg(&data);
    });
    assert!(node.stderr().contains(&format!("http://127.0.0.1:{}/", node.port)), "{}", node.stderr());
}

#[test]
fn the_port_flag_wins_over_openclaw_mcp_port() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    // The variable names a port nobody will serve on: the node must ignore it for the flag.
    let ignored = free_port();
    let node = Node::start_with(&sandbox, |command, port| {
        command.env("OPENCLAW_MCP_PORT", ignored.to_string()).arg("--port").arg(port.to_string());
        command.arg("--data-dir").arg(&data);
    });
    assert!(node.stderr().contains(&format!("http://127.0.0.1:{}/", node.port)), "{}", node.stderr());
}

#[test]
fn the_data_dir_comes_from_clawmcp_data_dir() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    // Readiness reads the token from the sandbox's data dir: it only succeeds if the node
    // used the variable.
    let node = Node::start_with(&sandbox, |command, port| {
        command.env("CLAWMCP_DATA_DIR", &data).arg("--port").arg(port.to_string());
    });
    assert!(node.stderr().contains(&sandbox.token_path().display().to_string()), "{}", node.stderr());
    assert!(!sandbox.home().join(".config").exists(), "nothing may be written to the default dir");
}

#[test]
fn sigterm_stops_the_node_and_kills_an_in_flight_run_with_its_children() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let mut node = Node::start(&sandbox);
    let (mut call, pids) = node.call_long_run(&sandbox);
    assert!(pids.iter().all(|pid| is_alive(*pid)), "the run is in flight");

    let stopped = node.stop_with(Signal::SIGTERM);
    assert_eq!(stopped.code(), Some(0), "stderr:\n{}", stopped.stderr);
    assert!(stopped.stderr.contains("stopped"), "stderr:\n{}", stopped.stderr);
    // A cancelled run returns only once its whole process group is gone, and the node drains
    // in-flight calls before it exits: so this holds the moment the node has exited.
    for pid in &pids {
        assert!(!is_alive(*pid), "process {pid} of the cancelled run outlived the node");
    }

    let answered = call.wait("the interrupted call to end");
    assert_eq!(answered.code(), Some(1), "the caller learns the run did not complete: {answered:?}");
}

#[test]
fn sigint_stops_an_idle_node_cleanly() {
    let sandbox = Sandbox::new();
    let mut node = Node::start(&sandbox);
    let stopped = node.stop_with(Signal::SIGINT);
    assert_eq!(stopped.code(), Some(0), "stderr:\n{}", stopped.stderr);
    assert!(stopped.stderr.contains("stopped"), "stderr:\n{}", stopped.stderr);
}

#[test]
fn a_disabled_mcp_server_is_a_clear_error() {
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", r#"{"EnableMcpServer": false}"#);

    sandbox
        .clawmcp(["node", "--port", &free_port().to_string(), "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stderr(contains("nothing to serve"))
        .stderr(contains(sandbox.settings_path().display().to_string()))
        .stderr(contains("clawmcp settings set EnableMcpServer true"));
    assert!(!sandbox.token_path().exists(), "a node that does not serve must not mint a token");
}

#[test]
fn legacy_mcp_only_mode_is_migrated_and_the_file_is_not_rewritten() {
    let sandbox = Sandbox::new();
    let legacy = "{\"EnableNodeMode\": true, \"EnableMcpServer\": false, \"McpOnlyMode\": true}\n";
    let path = sandbox.write_data_file("settings.json", legacy);

    let node = Node::start(&sandbox);
    node.run(&sandbox, "call", &["system.which", "--params", r#"{"bins":["sh"]}"#]).assert().success();

    assert!(
        !node.stderr().contains("EnableNodeMode"),
        "McpOnlyMode: true means no gateway mode, so no gateway note:\n{}",
        node.stderr()
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), legacy, "the node must not rewrite settings.json");
}

#[test]
fn malformed_settings_are_a_clear_error() {
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", "{ not json");

    sandbox
        .clawmcp(["node", "--port", &free_port().to_string(), "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stderr(contains(sandbox.settings_path().display().to_string()))
        .stderr(contains("not valid settings JSON"));
}

#[test]
fn port_flag_limits_are_usage_errors() {
    let sandbox = Sandbox::new();
    for port in ["0", "65536", "http"] {
        sandbox.clawmcp(["node", "--port", port]).assert().code(2).stderr(contains("--port"));
    }
}

/// `initialize` over HTTP with `asked`; the revision answered.
fn initialize_version(port: u16, token: &str, asked: &str) -> String {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .build()
        .into();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{asked}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let mut response = agent
        .post(format!("http://127.0.0.1:{port}/"))
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(body.as_str())
        .unwrap();
    let frame: serde_json::Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    frame["result"]["protocolVersion"].as_str().unwrap().to_string()
}

#[test]
fn the_node_negotiates_the_protocol_revision_unless_pinned() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let token = node.token();
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2026-07-28", "2025-11-25"),
    ] {
        assert_eq!(initialize_version(node.port, &token, asked), answered, "{asked}");
    }
    drop(node);

    let data = sandbox.data();
    let pinned = Node::start_with(&sandbox, |command, port| {
        command
            .arg("--port")
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(&data)
            .args(["--pin-protocol-version", "2024-11-05"]);
    });
    assert_eq!(initialize_version(pinned.port, &pinned.token(), "2025-11-25"), "2024-11-05");
}

#[test]
fn an_unknown_pinned_revision_is_a_usage_error_listing_the_served_ones() {
    let sandbox = Sandbox::new();
    sandbox
        .clawmcp(["node", "--pin-protocol-version", "2030-01-01"])
        .assert()
        .code(2)
        .stderr(contains("2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"));
}

#[test]
fn status_names_what_is_served_and_why_the_rest_is_not_and_follows_the_switches() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    let node = Node::start_with(&sandbox, |command, port| {
        command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(&data);
        command.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    });
    let status = |sandbox: &Sandbox| -> serde_json::Value {
        let output = sandbox.clawmcp(["node", "status", "--json", "--data-dir"]).arg(sandbox.data()).output().unwrap();
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let reason_of = |status: &serde_json::Value, command: &str| -> Option<String> {
        status["tools"]["unavailable"].as_array()?.iter().find(|entry| entry["command"] == command)?["reason"]
            .as_str()
            .map(str::to_owned)
    };
    let first = crate::support::wait_for(
        std::time::Duration::from_secs(20),
        "the status file's tools",
        || Some(status(&sandbox)).filter(|status| status["tools"]["served"].is_array()),
        || node.stderr(),
    );
    assert!(first["tools"]["served"].as_array().unwrap().iter().any(|name| name == "system.run"), "{first}");
    let off = reason_of(&first, "screen.snapshot").expect("screen.snapshot is not served");
    assert!(off.contains("clawmcp settings set NodeScreenEnabled true"), "{off}");
    // The clipboard: reading waits for its switch; writing has none, and lacks only a display.
    let read_off = reason_of(&first, "clipboard.read").expect("clipboard.read is not served");
    assert!(read_off.starts_with("off: NodeClipboardReadEnabled is false"), "{read_off}");
    let no_display = reason_of(&first, "clipboard.write").expect("clipboard.write is not served without a display");
    assert!(no_display.starts_with("unavailable: no X display: DISPLAY is unset"), "{no_display}");
    sandbox
        .clawmcp(["node", "status", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .success()
        .stdout(contains("not served: screen.snapshot: off: NodeScreenEnabled is false"));

    // The switch on: still not served here, now because there is no display (and what fixes that).
    sandbox
        .clawmcp(["settings", "--data-dir"])
        .arg(sandbox.data())
        .args(["set", "NodeScreenEnabled", "true"])
        .assert()
        .success();
    let missing = crate::support::wait_for(
        std::time::Duration::from_secs(20),
        "the status to follow the switch",
        || reason_of(&status(&sandbox), "screen.snapshot").filter(|reason| reason.starts_with("unavailable")),
        || node.stderr(),
    );
    assert!(missing.contains("no X display: DISPLAY is unset") && missing.contains("apt install xvfb"), "{missing}");

    // The file commands' roots: one (the home directory) by default, then what the owner sets.
    assert_eq!(first["tools"]["fileRoots"].as_array().map(Vec::len), Some(1), "{first}");
    sandbox
        .clawmcp(["settings", "--data-dir"])
        .arg(sandbox.data())
        .args(["set", "NodeFileRoots", "/srv/a:/srv/b"])
        .assert()
        .success();
    crate::support::wait_for(
        std::time::Duration::from_secs(20),
        "the status to follow NodeFileRoots",
        || {
            Some(status(&sandbox))
                .filter(|status| status["tools"]["fileRoots"] == serde_json::json!(["/srv/a", "/srv/b"]))
        },
        || node.stderr(),
    );
    sandbox
        .clawmcp(["node", "status", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .success()
        .stdout(contains("file roots (file.*, dir.*, fs.listDir): /srv/a, /srv/b"));
}
