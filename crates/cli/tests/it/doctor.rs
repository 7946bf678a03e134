//! `clawmcp doctor` as a user runs it: against a running node, a stopped one, a data dir whose
//! token the node rejects, state files with unsafe permissions, pending approvals, and the in-repo
//! fake gateway up and down (the real gateway is exercised only by the e2e suites). Each failure
//! must name the fix, and the fixes are run to prove they fix it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use clawmcp_testkit::{FakeConfig, FakeGateway, Reply};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::support::{Background, Node, Sandbox, WAIT_LIMIT, free_port, stdout_of, wait_for};

const FAKE_TOKEN: &str = "fake-gateway-token";

/// `clawmcp doctor --json` with `configure`'s extra arguments and environment: (exit code, the
/// document). The document's shape is checked on every run.
fn doctor_json(sandbox: &Sandbox, configure: impl FnOnce(&mut assert_cmd::Command)) -> (i32, Value) {
    let mut command = sandbox.clawmcp(["doctor", "--json"]);
    configure(&mut command);
    let output = command.timeout(Duration::from_secs(30)).output().expect("doctor runs");
    let document: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("doctor --json is not JSON ({e}): {output:?}"));
    let findings = document["findings"].as_array().expect("findings");
    let levels: Vec<&str> = findings.iter().map(|f| f["level"].as_str().expect("a level")).collect();
    assert!(levels.iter().all(|level| ["ok", "warn", "fail"].contains(level)), "{document}");
    for finding in findings {
        assert!(finding["what"].is_string() && finding["why"].is_string(), "{finding}");
        if finding["level"] != "ok" {
            assert!(finding["fix"].as_str().is_some_and(|fix| !fix.is_empty()), "a problem without a fix: {finding}");
        }
    }
    let worst = ["fail", "warn", "ok"].into_iter().find(|level| levels.contains(level)).unwrap_or("ok");
    assert_eq!(document["worst"], worst, "{document}");
    assert_eq!(document["ok"], json!(worst != "fail"), "{document}");
    let code = output.status.code().expect("an exit code");
    assert_eq!(code, if worst == "fail" { 1 } else { 0 }, "exit status follows the worst finding: {document}");
    (code, document)
}

/// The one finding whose `what` starts with `prefix`.
fn finding<'a>(document: &'a Value, prefix: &str) -> &'a Value {
    let matching: Vec<&Value> = document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["what"].as_str().is_some_and(|what| what.starts_with(prefix)))
        .collect();
    assert_eq!(matching.len(), 1, "one finding starting with `{prefix}` in {document}");
    matching[0]
}

fn at_node(node: &Node, sandbox: &Sandbox) -> impl FnOnce(&mut assert_cmd::Command) {
    let (port, data) = (node.port.to_string(), sandbox.data());
    move |command| {
        command.args(["--port", &port, "--data-dir"]).arg(data);
    }
}

/// Runs a `fix` the doctor printed, as a user pastes it into a shell.
fn run_fix(sandbox: &Sandbox, fix: &str) {
    let status = Command::new("sh").arg("-c").arg(fix).env("HOME", sandbox.home()).status().expect("sh runs");
    assert!(status.success(), "the fix `{fix}` failed");
}

#[test]
fn doctor_against_a_running_node_finds_it_listening_with_the_token_and_exits_0() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["ok"], true);
    for prefix in ["data dir", "token file", "node at", "pending approvals", "exec policy", "node tools:"] {
        assert_eq!(finding(&document, prefix)["level"], "ok", "{prefix}: {document}");
    }
    let node_finding = finding(&document, "node at");
    assert_eq!(node_finding["what"], format!("node at http://127.0.0.1:{}/", node.port));
    let served = node.tool_names(&sandbox).len();
    assert!(node_finding["why"].as_str().unwrap().contains(&format!("serves {served} tools")), "{node_finding}");
    let policy = finding(&document, "exec policy");
    assert_eq!(policy["what"], "exec policy: security=allowlist ask=on-miss askFallback=deny, 0 allow rules");
    assert!(finding(&document, "node tools:")["why"].as_str().unwrap().contains("system.run"), "{document}");
    assert_eq!(finding(&document, "gateway node mode")["level"], "ok");

    // The human form: one line per finding, then why and fix indented.
    let assert = node.run(&sandbox, "doctor", &[]).assert().success();
    let text = stdout_of(&assert);
    let line = text.lines().find(|line| line.contains("node at")).expect("the node line");
    assert_eq!(line, format!("ok   node at http://127.0.0.1:{}/", node.port));
    assert!(text.lines().any(|line| line.starts_with("     why: listening")), "{text}");
    for line in text.lines() {
        let tagged = ["ok   ", "warn ", "fail ", "     why: ", "     fix: "].iter().any(|tag| line.starts_with(tag));
        assert!(tagged, "an untagged line `{line}` in\n{text}");
    }
}

#[test]
fn doctor_against_a_stopped_node_fails_with_the_command_that_starts_it() {
    let sandbox = Sandbox::new();
    let mut node = Node::start(&sandbox);
    let port = node.port;
    node.stop_with(Signal::SIGTERM);
    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!(code, 1);
    let failed = finding(&document, "node at");
    assert_eq!(failed["level"], "fail", "{document}");
    assert!(failed["why"].as_str().unwrap().contains("nothing is listening"), "{failed}");
    let fix = failed["fix"].as_str().unwrap();
    assert_eq!(fix, format!("clawmcp node --port {port} --data-dir {}", sandbox.data().display()));
    assert!(document["findings"].as_array().unwrap().iter().all(|f| f["what"] != "pending approvals"));

    // The fix, run as printed: the node is back and the doctor says so.
    let mut command = sandbox.command();
    command.args(fix.split(' ').skip(1));
    let mut restarted = Background::spawn(command, sandbox.root(), Stdio::null());
    let at = |command: &mut assert_cmd::Command| {
        command.args(["--port", &port.to_string(), "--data-dir"]).arg(sandbox.data());
    };
    wait_for(
        WAIT_LIMIT,
        "the doctor to find the restarted node",
        || {
            let (code, document) = doctor_json(&sandbox, at);
            (code == 0 && finding(&document, "node at")["level"] == "ok").then_some(())
        },
        || format!("{:?} {}", restarted.try_status(), restarted.stderr()),
    );
    restarted.signal(Signal::SIGTERM);
    restarted.wait("the restarted node to stop");
}

#[test]
fn a_token_file_the_node_rejects_fails_and_names_the_data_dir_mismatch() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    // Another data dir, with its own (well-formed) token: the node serves the first one's.
    let other = sandbox.root().join("other");
    sandbox.clawmcp(["token", "--reset", "--data-dir"]).arg(&other).assert().success();
    assert_ne!(std::fs::read_to_string(other.join("mcp-token.txt")).unwrap().trim(), node.token());
    let port = node.port.to_string();
    let (code, document) = doctor_json(&sandbox, |command| {
        command.args(["--port", &port, "--data-dir"]).arg(&other);
    });
    assert_eq!(code, 1, "{document}");
    assert_eq!(finding(&document, "token file")["level"], "ok", "the file itself is fine");
    let failed = finding(&document, "node at");
    assert_eq!(failed["level"], "fail");
    let why = failed["why"].as_str().unwrap();
    assert!(why.contains("rejects the token in") && why.contains("another data dir"), "{why}");
    assert!(failed["fix"].as_str().unwrap().contains("--data-dir"), "{failed}");
}

#[test]
fn unsafe_permissions_fail_with_the_chmod_that_fixes_them() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let set_mode = |path: &Path, mode| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();

    // A token file others can read may have leaked: a failure, and the doctor does not fix it.
    set_mode(&sandbox.token_path(), 0o644);
    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!(code, 1);
    let token = finding(&document, "token file");
    assert_eq!(token["level"], "fail", "{document}");
    assert_eq!(finding(&document, "node:")["what"], "node: not checked");
    assert!(token["why"].as_str().unwrap().contains("readable by other users"), "{token}");
    let fix = token["fix"].as_str().unwrap();
    let command = fix.split('`').nth(1).expect("the fix names a command in backticks");
    assert_eq!(command, format!("chmod 600 {}", sandbox.token_path().display()));
    assert_eq!(crate::support::mode(&sandbox.token_path()), 0o644, "the doctor changes nothing");
    run_fix(&sandbox, command);

    // A data dir others can write to: whoever can write there can plant a policy.
    set_mode(&sandbox.data(), 0o777);
    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!(code, 1);
    let dir = finding(&document, "data dir");
    assert_eq!(dir["level"], "fail", "{document}");
    assert!(dir["why"].as_str().unwrap().contains("writable by"), "{dir}");
    let fix = dir["fix"].as_str().unwrap().to_owned();
    let command = fix.split('`').nth(1).expect("the fix names a command in backticks");
    assert_eq!(command, format!("chmod 700 {}", sandbox.data().display()));
    run_fix(&sandbox, command);

    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!(code, 0, "fixed as the doctor said: {document}");
    assert_eq!(finding(&document, "data dir")["level"], "ok");
    assert_eq!(finding(&document, "token file")["level"], "ok");
}

#[test]
fn an_unusable_exec_policy_fails_with_the_command_that_moves_it_away() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    sandbox.write_data_file("exec-approvals.json", "{ not json");
    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!(code, 1);
    let policy = finding(&document, "exec policy");
    assert_eq!(policy["what"], "exec policy: unusable, so every command is denied", "{document}");
    assert!(policy["why"].as_str().unwrap().contains("not a valid approvals file"), "{policy}");
    let fix = policy["fix"].as_str().unwrap();
    let command = fix.split(" (").next().unwrap();
    assert_eq!(command, format!("mv {0} {0}.bak", sandbox.approvals_path().display()));
    run_fix(&sandbox, command);
    let (code, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
    assert_eq!((code, &finding(&document, "exec policy")["level"]), (0, &json!("ok")), "{document}");
}

#[test]
fn a_command_waiting_for_approval_is_a_warning_with_the_allow_once_command() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let mut call = node.spawn(&sandbox, "call", &["system.run", "--params", r#"{"command":["echo","doctored"]}"#]);
    let document = wait_for(
        WAIT_LIMIT,
        "the doctor to see the pending approval",
        || {
            let (_, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
            (finding(&document, "pending approvals")["level"] == "warn").then_some(document)
        },
        || call.stderr(),
    );
    let pending = finding(&document, "pending approvals");
    assert_eq!(pending["what"], "pending approvals: 1");
    assert!(pending["why"].as_str().unwrap().contains("`echo doctored`"), "{pending}");
    let fix = pending["fix"].as_str().unwrap();
    let allow = fix.split(" (or").next().unwrap();
    assert!(allow.starts_with("clawmcp approvals allow-once "), "{fix}");
    let id = allow.rsplit(' ').next().unwrap();
    node.run(&sandbox, "approvals", &["allow-once", id]).assert().success();
    let done = call.wait("the approved call");
    assert_eq!(done.code(), Some(0), "{done:?}");
    assert!(done.stdout.contains("doctored"), "{done:?}");
}

/// A runtime for the fake gateway, whose tasks run while the test thread blocks.
fn gateway() -> (tokio::runtime::Runtime, FakeGateway) {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a Tokio runtime");
    let fake = runtime.block_on(FakeGateway::start());
    (runtime, fake)
}

#[test]
fn the_gateway_for_serve_and_tools_is_checked_up_down_and_with_a_wrong_token() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let url = fake.url();
    let with_gateway = |url: String, token: &'static str| {
        let at = at_node(&node, &sandbox);
        move |command: &mut assert_cmd::Command| {
            at(command);
            command.env("OPENCLAW_GATEWAY_URL", url).env("OPENCLAW_GATEWAY_TOKEN", token);
        }
    };

    let (code, document) = doctor_json(&sandbox, with_gateway(url.clone(), FAKE_TOKEN));
    assert_eq!(code, 0, "{document}");
    let up = finding(&document, "gateway for serve/tools");
    assert_eq!(up["level"], "ok", "{document}");
    assert_eq!(up["what"], format!("gateway for serve/tools at {url} (OPENCLAW_GATEWAY_URL)"));
    let why = up["why"].as_str().unwrap();
    assert!(why.contains("authenticated") && why.contains("2026.9.6-fake"), "{why}");
    let handshakes = fake.handshakes();
    assert!(handshakes >= 1, "the doctor completed a real handshake");
    let connect = fake.requests("connect").pop().unwrap();
    assert_eq!(connect["auth"]["token"], FAKE_TOKEN);
    // With `clawmcp` where MCP clients look for it, the Claude channel has what it needs: the
    // scopes its tools and notifications use, granted by the gateway in that handshake.
    let bin_dir = Path::new(crate::support::BIN).parent().unwrap().display().to_string();
    let (_, document) = doctor_json(&sandbox, |command| {
        with_gateway(url.clone(), FAKE_TOKEN)(command);
        command.env("PATH", format!("{bin_dir}:/usr/bin:/bin"));
    });
    let channel = finding(&document, "Claude channel");
    assert_eq!(channel["level"], "ok", "{document}");
    assert!(
        channel["why"].as_str().unwrap().contains("operator.read, operator.write and operator.approvals"),
        "{channel}"
    );
    let (_, document) = doctor_json(&sandbox, |command| {
        with_gateway(url.clone(), FAKE_TOKEN)(command);
        command.env("PATH", "/usr/bin:/bin");
    });
    let channel = finding(&document, "Claude channel");
    assert_eq!(channel["level"], "warn", "{document}");
    assert!(channel["why"].as_str().unwrap().contains("`clawmcp` was not found"), "{channel}");
    runtime
        .block_on(async { tokio::time::timeout(WAIT_LIMIT, fake.wait_for_client_closes(1)).await })
        .expect("the doctor closes its connection");

    let (code, document) = doctor_json(&sandbox, with_gateway(url.clone(), "not-the-token"));
    assert_eq!(code, 0, "node mode is off: a refused gateway is a warning");
    let refused = finding(&document, "gateway for serve/tools");
    assert_eq!(refused["level"], "warn");
    assert!(refused["why"].as_str().unwrap().contains("refused"), "{refused}");

    drop(fake);
    let (code, document) = doctor_json(&sandbox, with_gateway(url.clone(), FAKE_TOKEN));
    assert_eq!(code, 0);
    let down = finding(&document, "gateway for serve/tools");
    assert_eq!(down["level"], "warn");
    assert!(down["why"].as_str().unwrap().starts_with("unreachable"), "{down}");
    assert!(down["fix"].as_str().unwrap().contains("OPENCLAW_GATEWAY_URL"), "{down}");
    drop(runtime);
}

/// `--gateway-url` with `--gateway-token-file` checks the gateway a user starts serve/tools with
/// flags (not what the environment names): the flags' secret is the one sent; without a secret
/// file the finding names doctor's own flags.
#[test]
fn the_gateway_flags_name_the_gateway_to_check() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let token_file = sandbox.write_data_file("gateway.token", &format!("{FAKE_TOKEN}\n"));
    let (code, document) = doctor_json(&sandbox, |command| {
        at_node(&node, &sandbox)(command);
        command
            .env("OPENCLAW_GATEWAY_URL", "ws://127.0.0.1:1")
            .args(["--gateway-url", &fake.url(), "--gateway-token-file"])
            .arg(&token_file);
    });
    assert_eq!(code, 0, "{document}");
    let up = finding(&document, "gateway for serve/tools");
    assert_eq!(up["level"], "ok", "{document}");
    assert_eq!(
        up["what"],
        format!("gateway for serve/tools at {} (--gateway-url)", fake.url()),
        "the flag as given: {up}"
    );
    assert!(up["why"].as_str().unwrap().contains(&token_file.display().to_string()), "the flag's file: {up}");
    assert_eq!(fake.requests("connect").pop().unwrap()["auth"]["token"], FAKE_TOKEN);

    let (_, document) = doctor_json(&sandbox, |command| {
        at_node(&node, &sandbox)(command);
        command.args(["--gateway-url", &fake.url()]);
    });
    let missing = finding(&document, "gateway for serve/tools");
    assert_eq!(missing["level"], "warn", "{document}");
    assert!(
        missing["why"].as_str().unwrap().contains("pass --gateway-token/--gateway-token-file"),
        "the flags doctor takes: {missing}"
    );
    drop(runtime);
}

#[test]
fn with_node_mode_on_an_unreachable_gateway_fails_and_a_connected_node_is_ok() {
    let (_runtime, fake) = gateway();
    // What a node asks of the gateway once connected (as in the node-mode tests).
    fake.on("node.invoke.result", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.pluginTools.update", |_| Reply::Ok(json!({"tools": []})));
    let sandbox = Sandbox::new();
    let token_file = sandbox.write_data_file("gateway.token", &format!("{FAKE_TOKEN}\n"));
    let url = fake.url();
    let node = Node::start_joined(&sandbox, &url, &token_file, &[]);
    let document = wait_for(
        WAIT_LIMIT,
        "the doctor to see the node connected",
        || {
            let (_, document) = doctor_json(&sandbox, at_node(&node, &sandbox));
            let approved = finding(&document, "device pairing")["what"] == "device pairing: approved";
            (finding(&document, "gateway node mode")["level"] == "ok" && approved).then_some(document)
        },
        || node.stderr(),
    );
    let mode = finding(&document, "gateway node mode");
    assert_eq!(mode["what"], format!("gateway node mode: {url}"));
    assert!(mode["why"].as_str().unwrap().contains("is connected"), "{mode}");
    assert_eq!(finding(&document, "device pairing")["level"], "ok");

    // The node stopped and the gateway gone: node mode cannot work, which fails.
    drop(node);
    drop(fake);
    let dead = format!("ws://127.0.0.1:{}", free_port());
    sandbox.write_data_file(
        "settings.json",
        &json!({"EnableNodeMode": true, "GatewayUrl": dead, "GatewayTokenFile": token_file}).to_string(),
    );
    let port = free_port().to_string();
    let (code, document) = doctor_json(&sandbox, |command| {
        command.args(["--port", &port, "--data-dir"]).arg(sandbox.data());
    });
    assert_eq!(code, 1);
    let mode = finding(&document, "gateway node mode");
    assert_eq!(mode["level"], "fail", "{document}");
    assert_eq!(mode["what"], format!("gateway node mode: {dead}"));
    assert!(mode["why"].as_str().unwrap().starts_with("unreachable"), "{mode}");
}

#[test]
fn a_gateway_that_never_completes_the_handshake_is_given_up_on_after_the_probe_bound() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a Tokio runtime");
    // Accepts the WebSocket, then never sends connect.challenge.
    let silent =
        runtime.block_on(FakeGateway::start_with(FakeConfig { send_challenge: false, ..FakeConfig::default() }));
    let sandbox = Sandbox::new();
    let port = free_port().to_string();
    let (_, document) = doctor_json(&sandbox, |command| {
        command.args(["--port", &port, "--data-dir"]).arg(sandbox.data());
        command.env("OPENCLAW_GATEWAY_URL", silent.url()).env("OPENCLAW_GATEWAY_TOKEN", FAKE_TOKEN);
    });
    let stuck = finding(&document, "gateway for serve/tools");
    assert_eq!(stuck["level"], "warn", "{document}");
    let why = stuck["why"].as_str().unwrap();
    assert!(why.starts_with("unreachable") && why.contains("3s"), "the bound is named: {why}");
    assert_eq!(silent.handshakes(), 0);
}

#[test]
fn the_operator_device_of_the_app_tools_is_checked_as_they_read_it() {
    let sandbox = Sandbox::new();
    let token_file = sandbox.write_data_file("gateway.token", &format!("{FAKE_TOKEN}\n"));
    let url = format!("ws://127.0.0.1:{}", free_port());
    sandbox.write_data_file(
        "settings.json",
        &json!({"EnableNodeMode": true, "GatewayUrl": url, "GatewayTokenFile": token_file}).to_string(),
    );
    let port = free_port().to_string();
    let doctor = || {
        let (_, document) = doctor_json(&sandbox, |command| {
            command.args(["--port", &port, "--data-dir"]).arg(sandbox.data());
        });
        finding(&document, "operator device").clone()
    };
    let absent = doctor();
    assert_eq!(absent["level"], "ok", "{absent}");
    assert!(absent["why"].as_str().unwrap().contains("no key yet"), "{absent}");

    // The key the tools create on first use (the same loader), not paired with this gateway yet.
    let dir = sandbox.data().join("operator");
    let device = clawmcp_gateway::DeviceIdentity::load_or_create(&dir).unwrap();
    let unpaired = doctor();
    assert_eq!(unpaired["level"], "ok", "{unpaired}");
    let why = unpaired["why"].as_str().unwrap();
    assert!(why.contains(device.device_id()) && why.contains("openclaw devices approve"), "{unpaired}");

    // One others can read fails, naming the fix, as the tools would refuse it.
    let identity = dir.join("device-identity.json");
    std::fs::set_permissions(&identity, std::fs::Permissions::from_mode(0o644)).unwrap();
    let exposed = doctor();
    assert_eq!(exposed["level"], "fail", "{exposed}");
    assert!(exposed["why"].as_str().unwrap().contains("chmod 600"), "{exposed}");
    assert!(exposed["fix"].as_str().unwrap().contains(".bak"), "{exposed}");
}
