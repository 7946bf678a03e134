//! `clawmcp node` in gateway node mode, driven as a user drives it against the in-repo fake
//! gateway: the mode matrix, the saved connection settings, one registry on both transports,
//! and `clawmcp node status`.

use std::process::Stdio;
use std::time::Duration;

use clawmcp_testkit::{FakeGateway, Reply};
use nix::sys::signal::Signal;
use predicates::str::contains;
use serde_json::{Value, json};

use crate::support::{Background, Node, Sandbox, free_port, mode, wait_for};

const FAKE_TOKEN: &str = "fake-gateway-token";
const WAIT: Duration = Duration::from_secs(30);

/// A runtime for the fake gateway, whose tasks run while the test thread blocks.
fn gateway() -> (tokio::runtime::Runtime, FakeGateway) {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a Tokio runtime");
    let fake = runtime.block_on(FakeGateway::start());
    fake.on("node.invoke.result", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.pluginTools.update", |_| Reply::Ok(json!({"tools": []})));
    (runtime, fake)
}

fn status_json(sandbox: &Sandbox) -> Value {
    let output = sandbox.clawmcp(["node", "status", "--json", "--data-dir"]).arg(sandbox.data()).output().unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("status --json is not JSON ({e}): {output:?}"))
}

#[test]
fn neither_transport_on_is_a_clear_error_saying_how_to_turn_one_on() {
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", r#"{"EnableMcpServer": false, "EnableNodeMode": false}"#);
    sandbox
        .clawmcp(["node", "--port", &free_port().to_string(), "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stderr(contains("nothing to serve"))
        .stderr(contains("clawmcp settings set EnableMcpServer true"))
        .stderr(contains("--gateway-url"));
}

#[test]
fn a_plaintext_gateway_url_to_another_host_is_refused_at_start() {
    let sandbox = Sandbox::new();
    sandbox
        .clawmcp(["node", "--port", &free_port().to_string(), "--gateway-url", "ws://gateway.example:18789"])
        .args(["--gateway-token", "t", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stderr(contains("gateway node mode"))
        .stderr(contains("gateway.example"))
        .stderr(contains("wss://"));
    assert!(!sandbox.settings_path().exists(), "a connection that cannot work is not saved");
}

#[test]
fn node_and_mcp_serve_one_registry_and_the_connection_settings_are_saved() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let token_file = sandbox.write_data_file("gateway.token", &format!("{FAKE_TOKEN}\n"));
    let url = fake.url();
    let node = Node::start_joined(&sandbox, &url, &token_file, &["--name", "box-1"]);
    runtime.block_on(fake.wait_for_handshakes(1));
    let connect = fake.requests("connect").remove(0);
    assert_eq!(connect["client"]["id"], "node-host");
    assert_eq!(connect["client"]["displayName"], "box-1");
    let commands = connect["commands"].as_array().unwrap();
    assert!(commands.contains(&json!("system.which")) && commands.contains(&json!("system.run")), "{commands:?}");
    assert!(commands.contains(&json!("device.info")) && commands.contains(&json!("mcp.tools.call.v1")));
    assert!(!commands.iter().any(|c| c.as_str().unwrap().starts_with("app.")), "app.* is local-only: {commands:?}");

    // A gateway invoke and an MCP call, same process, same command.
    fake.emit(
        "node.invoke.request",
        json!({"id": "g1", "nodeId": "x", "command": "system.which", "paramsJSON": "{\"bins\":[\"sh\"]}",
               "timeoutMs": 15000, "idempotencyKey": "k"}),
    );
    let result = runtime.block_on(fake.wait_for_request("node.invoke.result", 1));
    assert_eq!(result["id"], "g1");
    let gateway_payload: Value = serde_json::from_str(result["payloadJSON"].as_str().unwrap()).unwrap();
    let local = node.run(&sandbox, "call", &["system.which", "--params", r#"{"bins":["sh"]}"#]).output().unwrap();
    assert!(local.status.success(), "{local:?}");
    let local: Value = serde_json::from_slice(&local.stdout).unwrap();
    assert_eq!(local, gateway_payload, "one implementation answers both transports");

    // Saved for the next plain `clawmcp node`; the token value is not in settings.json.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(sandbox.settings_path()).unwrap()).unwrap();
    assert_eq!(saved["EnableNodeMode"], true);
    assert_eq!(saved["GatewayUrl"], url);
    assert_eq!(saved["GatewayTokenFile"], token_file.display().to_string());
    assert_eq!(saved["NodeDisplayName"], "box-1");
    assert!(!std::fs::read_to_string(sandbox.settings_path()).unwrap().contains(FAKE_TOKEN));

    let status = wait_for(
        WAIT,
        "node status to say connected and approved",
        || {
            let status = status_json(&sandbox);
            (status["gateway"]["state"] == "connected" && status["gateway"]["pairing"] == "approved").then_some(status)
        },
        || node.stderr(),
    );
    assert_eq!(status["running"], true);
    assert_eq!(status["mcp"]["state"], "listening");
    assert_eq!(status["mcp"]["endpoint"], format!("http://127.0.0.1:{}/", node.port));
    assert_eq!(status["gateway"]["url"], url);
    assert_eq!(status["gateway"]["displayName"], "box-1");
    sandbox
        .clawmcp(["node", "status", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .success()
        .stdout(contains("running"))
        .stdout(contains("pairing: approved"));

    // The node's own app.* tools, over MCP: the same state, credentials by presence only.
    let call = |args: &[&str]| {
        let output = node.run(&sandbox, "call", args).output().unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let connection = call(&["app.connection.status"]);
    assert_eq!(connection["mcp"], status["mcp"]);
    assert_eq!(connection["gateway"]["state"], "connected");
    assert_eq!(connection["gateway"]["nodeId"], status["gateway"]["nodeId"]);
    let gateways = call(&["app.connection.gateways"]);
    assert_eq!(gateways["gateways"][0]["url"], url);
    assert_eq!(gateways["gateways"][0]["token"], json!({"present": true, "source": "file", "file": token_file}));
    assert!(!gateways.to_string().contains(FAKE_TOKEN), "never a secret's value");
    assert_eq!(call(&["app.status"])["gateway"]["pairing"], "approved");
    // The gateway neither runs them...
    fake.emit(
        "node.invoke.request",
        json!({"id": "g2", "nodeId": "x", "command": "app.status", "paramsJSON": "{}", "timeoutMs": 15000}),
    );
    let refused = runtime.block_on(fake.wait_for_request("node.invoke.result", 2));
    assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{refused}");
    // The operator tools open an operator connection with the node's shared secret.
    fake.on("node.list", |_| Reply::Ok(json!({"ts": 1, "nodes": [{"nodeId": "n-1", "displayName": "box-1"}]})));
    fake.on("device.pair.list", |_| {
        Reply::Ok(json!({"pending": [{"requestId": "d-1", "deviceId": "dev"}], "paired": []}))
    });
    fake.on("node.pair.list", |_| Reply::Ok(json!({"pending": [{"requestId": "r-1", "nodeId": "n-2"}], "paired": []})));
    fake.on("node.pair.approve", |params| Reply::Ok(json!({"requestId": params["requestId"], "node": {}})));
    assert_eq!(call(&["app.nodes"])["nodes"][0]["nodeId"], "n-1");
    let pending = call(&["app.connection.pendingApprovals"]);
    assert_eq!(
        (pending["devices"][0]["requestId"].clone(), pending["nodes"][0]["requestId"].clone()),
        (json!("d-1"), json!("r-1"))
    );
    let approved = call(&["app.connection.approveNodePairing", "--params", r#"{"id":"r-1"}"#]);
    assert_eq!(approved["requestId"], "r-1");
    assert_eq!(fake.requests("node.pair.approve"), [json!({"requestId": "r-1"})]);
    let operator = fake.requests("connect").into_iter().find(|c| c["role"] == "operator").expect("an operator connect");
    assert_eq!(operator["auth"]["token"], FAKE_TOKEN);
    assert!(operator["scopes"].as_array().unwrap().contains(&json!("operator.pairing")), "{operator}");
    // It proves a device key of its own (a remote gateway strips a device-less client's scopes),
    // kept beside the node's in `<data-dir>/operator/`, 0600 in a 0700 directory.
    let operator_dir = sandbox.data().join("operator");
    let identity: Value =
        serde_json::from_str(&std::fs::read_to_string(operator_dir.join("device-identity.json")).unwrap()).unwrap();
    assert_eq!(operator["device"]["id"], identity["deviceId"], "{operator}");
    assert_ne!(operator["device"]["id"], connect["device"]["id"], "the operator is not the node's key");
    assert_eq!((mode(&operator_dir), mode(&operator_dir.join("device-identity.json"))), (0o700, 0o600));
    let tokens = std::fs::read_to_string(operator_dir.join("device-auth.json")).unwrap();
    assert!(tokens.contains(&format!("operator {url}")), "the issued operator device token is kept: {tokens}");
    fake.on("chat.send", |_| Reply::Ok(json!({"runId": "run-1", "status": "started"})));
    assert_eq!(call(&["app.chat.send", "--params", r#"{"message":"hello from local MCP"}"#])["runId"], "run-1");
    let sent = fake.requests("chat.send").remove(0);
    assert_eq!(
        (sent["sessionKey"].clone(), sent["message"].clone()),
        (json!("agent:main:main"), json!("hello from local MCP"))
    );
    assert!(sent["idempotencyKey"].as_str().is_some_and(|key| key.len() == 32), "{sent}");
    // ...while a local client can make the node reconnect.
    let reconnect = call(&["app.connection.reconnect"]);
    assert!(reconnect["note"].as_str().unwrap().contains(&url), "{reconnect}");
    runtime.block_on(fake.wait_for_handshakes(3));
    drop(node);
}

#[test]
fn app_settings_only_tighten_and_apply_at_once() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = Node::start(&sandbox);
    let call = |args: &[&str]| node.run(&sandbox, "call", args).output().unwrap();
    let text = |output: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    };
    let got = call(&["app.settings.get", "--params", r#"{"name":"NodeSystemRunEnabled"}"#]);
    assert!(got.status.success(), "{got:?}");
    assert_eq!(
        serde_json::from_slice::<Value>(&got.stdout).unwrap(),
        json!({"name": "NodeSystemRunEnabled", "value": true})
    );

    // Tightening applies at once: system.run is gone from the next list.
    let off = call(&["app.settings.set", "--params", r#"{"name":"NodeSystemRunEnabled","value":false}"#]);
    assert!(off.status.success(), "{off:?}");
    let listed = text(&call(&["--list-tools"]));
    assert!(!listed.contains("\"system.run\"") && listed.contains("app.settings.set"), "{listed}");

    // Widening is refused with the owner's command, and nothing changes.
    let on = call(&["app.settings.set", "--params", r#"{"name":"NodeSystemRunEnabled","value":true}"#]);
    assert!(!on.status.success());
    assert!(text(&on).contains("clawmcp settings set NodeSystemRunEnabled true"), "{}", text(&on));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(sandbox.settings_path()).unwrap()).unwrap();
    assert_eq!(saved["NodeSystemRunEnabled"], false);

    let unknown = call(&["app.settings.set", "--params", r#"{"name":"AutoStart","value":true}"#]);
    assert!(text(&unknown).contains("Setting 'AutoStart' is not accessible"), "{}", text(&unknown));
    let menu = call(&["app.menu"]);
    assert!(text(&menu).contains("not available on a headless node"), "{}", text(&menu));
    let reconnect = call(&["app.connection.reconnect"]);
    assert!(text(&reconnect).contains("gateway node mode is off"), "{}", text(&reconnect));
    let pair = call(&["app.connection.applySetupCode", "--params", r#"{"setupCode":"x"}"#]);
    assert!(text(&pair).contains("clawmcp settings set AppConnectionChangesEnabled true"), "{}", text(&pair));
    let allow = call(&["app.settings.set", "--params", r#"{"name":"AppConnectionChangesEnabled","value":true}"#]);
    assert!(!allow.status.success(), "an agent cannot allow itself to move the node: {}", text(&allow));
    let found = call(&["app.search", "--params", r#"{"query":"sandbox"}"#]);
    let found: Value = serde_json::from_slice(&found.stdout).unwrap();
    let titles: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"SystemRunSandbox.Enabled") && titles.len() <= 10, "{titles:?}");
    let config = call(&["app.config.get", "--params", r#"{"path":"NodeSystemRunEnabled"}"#]);
    assert_eq!(serde_json::from_slice::<Value>(&config.stdout).unwrap()["value"], false);
    drop(node);
}

#[test]
fn node_only_mode_binds_no_port_and_status_tells_after_the_stop() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", r#"{"EnableMcpServer": false}"#);
    let mut command = sandbox.command();
    command
        .args(["node", "--gateway-url", &fake.url(), "--gateway-token", FAKE_TOKEN])
        .args(["--gateway-header", "X-Proxy-Token: proxy-secret", "--data-dir"])
        .arg(sandbox.data());
    let mut node = Background::spawn(command, sandbox.root(), Stdio::null());
    runtime.block_on(fake.wait_for_handshakes(1));
    let status = wait_for(
        WAIT,
        "node status to say connected",
        || {
            let status = status_json(&sandbox);
            (status["gateway"]["state"] == "connected").then_some(status)
        },
        || node.stderr(),
    );
    assert_eq!(status["mcp"]["state"], "off");
    assert!(!sandbox.token_path().exists(), "no MCP server, no token");
    let upgrade = fake.upgrade_headers().remove(0);
    assert_eq!(
        upgrade.get("x-proxy-token").map(|v| v.to_str().unwrap().to_owned()),
        Some("proxy-secret".to_owned()),
        "--gateway-header is sent: {upgrade:?}"
    );
    let saved = std::fs::read_to_string(sandbox.settings_path()).unwrap();
    assert!(!saved.contains("proxy-secret"), "a header is not saved: {saved}");
    assert!(node.stderr().contains("this run only"), "the command-line token is not kept: {}", node.stderr());

    node.signal(Signal::SIGTERM);
    let finished = node.wait("the node to stop");
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr);
    let stopped = status_json(&sandbox);
    assert_eq!(stopped["running"], false);
    assert_eq!(stopped["mcp"]["state"], "off");
    assert_eq!(stopped["gateway"]["state"], "stopped", "a stopped node is not retrying: {stopped}");
    assert!(stopped["gateway"].get("hint").is_none(), "{stopped}");
    assert_eq!(stopped["gateway"]["url"], fake.url(), "the last gateway is still named");
    sandbox
        .clawmcp(["node", "status", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(3)
        .stdout(contains("not running"));
}

#[test]
fn a_gateway_header_the_handshake_owns_is_a_usage_error_and_nothing_is_saved() {
    let sandbox = Sandbox::new();
    sandbox
        .clawmcp(["node", "--port", &free_port().to_string(), "--gateway-url", "ws://127.0.0.1:1"])
        .args(["--gateway-token", "t", "--gateway-header", "Origin: https://evil.example", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(2)
        .stderr(contains("--gateway-header"))
        .stderr(contains("the WebSocket handshake owns it"));
    assert!(!sandbox.settings_path().exists(), "a refused start saves nothing");
}

#[test]
fn status_without_a_node_ever_run_says_so() {
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", "{}");
    sandbox
        .clawmcp(["node", "status", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(3)
        .stdout(contains("not running"))
        .stdout(contains("clawmcp node"));
}

#[test]
fn the_mode_matrix_switches_live_in_both_directions() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    let token_file = sandbox.write_data_file("gateway.token", FAKE_TOKEN);
    let saved = json!({"GatewayUrl": fake.url(), "GatewayTokenFile": token_file, "NodeDisplayName": "live"});
    sandbox.write_data_file("settings.json", &saved.to_string());
    let node = Node::start(&sandbox);
    assert_eq!(fake.connect_attempts(), 0, "MCP only: no gateway connection");
    let set = |key: &str, value: &str| {
        sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).args(["set", key, value]).assert().success();
    };
    let within = |what: &str, future: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>| {
        runtime
            .block_on(async { tokio::time::timeout(WAIT, future).await })
            .unwrap_or_else(|_| panic!("{what}\n{}", node.stderr()));
    };

    set("EnableNodeMode", "true");
    within("node mode on: the node joins the gateway", Box::pin(fake.wait_for_handshakes(1)));
    wait_for(
        WAIT,
        "status to show the gateway",
        || (status_json(&sandbox)["gateway"]["state"] == "connected").then_some(()),
        || node.stderr(),
    );
    assert_eq!(fake.requests("connect")[0]["client"]["displayName"], "live", "the saved name");

    set("EnableNodeMode", "false");
    within(
        "node mode off: the node leaves the gateway",
        Box::pin(async {
            fake.wait_for_client_closes(1).await;
        }),
    );
    wait_for(
        WAIT,
        "status to show the gateway off",
        || (status_json(&sandbox)["gateway"]["state"] == "off").then_some(()),
        || node.stderr(),
    );

    set("EnableMcpServer", "false");
    // The port closes first and the status file says so right after: wait for both (asserting
    // the status the moment the port closed raced its write).
    wait_for(
        WAIT,
        "the MCP port to close and the status to say off",
        || {
            (crate::support::probe(node.port, None).is_err() && status_json(&sandbox)["mcp"]["state"] == "off")
                .then_some(())
        },
        || node.stderr(),
    );
    set("EnableMcpServer", "true");
    wait_for(
        WAIT,
        "the MCP port to answer again",
        || (crate::support::probe(node.port, Some(&node.token())) == Ok(200)).then_some(()),
        || node.stderr(),
    );
    assert_eq!(status_json(&sandbox)["running"], true);
    drop(node);
}

/// `oc-pair://` + base64url(`payload`), as the gateway hands it out.
fn setup_code(payload: Value) -> String {
    use base64::Engine;
    format!("oc-pair://{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.to_string()))
}

fn in_ten_minutes_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    u64::try_from(now.as_millis()).unwrap() + 600_000
}

#[test]
fn pair_joins_with_the_bootstrap_token_saves_no_secret_and_comes_back_with_the_device_token() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    let bootstrap = fake.issue_bootstrap_token();
    let url = fake.url();
    let code = setup_code(json!({"url": url, "bootstrapToken": bootstrap, "expiresAtMs": in_ten_minutes_ms()}));
    let node = Node::start_with(&sandbox, |command, port| {
        command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(sandbox.data());
        command.args(["--pair", &code]);
    });
    runtime.block_on(fake.wait_for_handshakes(1));
    assert_eq!(fake.requests("connect")[0]["auth"], json!({"bootstrapToken": bootstrap}));
    wait_for(
        WAIT,
        "node status to say connected",
        || (status_json(&sandbox)["gateway"]["state"] == "connected").then_some(()),
        || node.stderr(),
    );
    let text = std::fs::read_to_string(sandbox.settings_path()).unwrap();
    let saved: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((saved["EnableNodeMode"].clone(), saved["GatewayUrl"].clone()), (json!(true), json!(url)));
    assert!(!text.contains(&bootstrap) && !text.contains("oc-pair"), "no secret saved: {text}");
    // Paired by setup code, the node has no operator secret: the operator tools say which to give.
    let refused = node.run(&sandbox, "call", &["app.nodes"]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).into_owned() + &String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success() && said.contains("--gateway-token-file"), "{said}");
    drop(node);

    // A plain start, no token anywhere: the device token the gateway issued is the credential.
    let node = Node::start(&sandbox);
    runtime.block_on(fake.wait_for_handshakes(2));
    let again = fake.requests("connect").pop().unwrap();
    assert!(again["auth"].get("bootstrapToken").is_none() && again["auth"]["deviceToken"].is_string(), "{again}");
    wait_for(
        WAIT,
        "the node to be connected again",
        || (status_json(&sandbox)["gateway"]["state"] == "connected").then_some(()),
        || node.stderr(),
    );
    drop(node);
}

#[test]
fn a_spent_setup_code_ends_node_mode_saying_how_to_get_a_new_one() {
    let (runtime, fake) = gateway();
    let bootstrap = fake.issue_bootstrap_token();
    let code = setup_code(json!({"url": fake.url(), "bootstrapToken": bootstrap, "expiresAtMs": in_ten_minutes_ms()}));
    let first = Sandbox::new();
    let node = Node::start_with(&first, |command, port| {
        command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(first.data()).args(["--pair", &code]);
    });
    runtime.block_on(fake.wait_for_handshakes(1));
    drop(node);

    // The same code again, from another machine: the gateway refuses it, and node mode ends at
    // once with what happened and what to do, instead of offering the spent code forever.
    let second = Sandbox::new();
    let mut command = second.command();
    command.arg("node").arg("--port").arg(free_port().to_string()).arg("--data-dir").arg(second.data());
    command.args(["--pair", &code]);
    let mut process = Background::spawn(command, second.root(), Stdio::null());
    let finished = process.wait("the node to end node mode on the spent setup code");
    assert_eq!(finished.code(), Some(1), "{finished:?}");
    for said in
        ["refused the setup code", "already used", "openclaw qr --setup-code-only", "clawmcp node --pair <new-code>"]
    {
        assert!(finished.stderr.contains(said), "no {said:?} in:\n{}", finished.stderr);
    }
    let offered = fake.requests("connect").iter().filter(|c| c["auth"]["bootstrapToken"] == bootstrap).count();
    assert_eq!(offered, 2, "the spent code was offered once by the second node, never retried");
    // The status left behind says the same (a hint that is still true once the node is gone).
    let status = status_json(&second);
    assert_eq!((status["running"].clone(), status["gateway"]["state"].clone()), (json!(false), json!("stopped")));
    assert!(status["gateway"]["hint"].as_str().is_some_and(|hint| hint.contains("<new-code>")), "{status}");
}

#[test]
fn a_setup_code_waits_for_a_gateway_that_is_down() {
    let (runtime, fake) = gateway();
    fake.set_accepting(false);
    let sandbox = Sandbox::new();
    let bootstrap = fake.issue_bootstrap_token();
    let code = setup_code(json!({"url": fake.url(), "bootstrapToken": bootstrap, "expiresAtMs": in_ten_minutes_ms()}));
    let node = Node::start_with(&sandbox, |command, port| {
        command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(sandbox.data()).args(["--pair", &code]);
    });
    // A gateway that is down is transient: the node waits with the code rather than exiting.
    wait_for(
        WAIT,
        "a refused upgrade in the status",
        || status_json(&sandbox)["gateway"]["lastError"].as_str().map(|_| ()),
        || node.stderr(),
    );
    fake.set_accepting(true);
    runtime.block_on(fake.wait_for_handshakes(1));
    assert_eq!(fake.requests("connect")[0]["auth"], json!({"bootstrapToken": bootstrap}));
    drop(node);
}

#[test]
fn the_operator_device_waits_for_approval_and_its_state_file_follows_the_trust_rules() {
    let (runtime, fake) = gateway();
    fake.on("node.list", |_| Reply::Ok(json!({"ts": 1, "nodes": []})));
    let sandbox = Sandbox::new();
    let token_file = sandbox.write_data_file("gateway.token", &format!("{FAKE_TOKEN}\n"));
    let url = fake.url();
    let node = Node::start_joined(&sandbox, &url, &token_file, &[]);
    runtime.block_on(fake.wait_for_handshakes(1));
    let call = |tool: &str| {
        let output = node.run(&sandbox, "call", &[tool]).output().unwrap();
        let said = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
        (output.status.success(), said)
    };

    // A gateway that does not know the operator device yet (a remote one) holds it for one
    // approval; the tool names the exact command, and the next call after it gets in.
    fake.refuse_auth(Some(clawmcp_testkit::gateway_error(
        "NOT_PAIRED",
        "pairing required: device is not approved yet",
        Some(json!({"code": "PAIRING_REQUIRED", "reason": "not-paired", "requestId": "req-op-7"})),
    )));
    let (ok, said) = call("app.nodes");
    assert!(!ok && said.contains("`openclaw devices approve req-op-7`") && said.contains("operator device"), "{said}");
    fake.refuse_auth(None);
    let (ok, said) = call("app.nodes");
    assert!(ok, "{said}");
    drop(node);

    // Its key file is a state file like the others: one others can read is refused (it may have
    // leaked), naming the fix; a symlink in its place is never followed.
    let identity = sandbox.data().join("operator").join("device-identity.json");
    let restart = || {
        Node::start_with(&sandbox, |command, port| {
            command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(sandbox.data());
        })
    };
    std::fs::set_permissions(&identity, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let node = restart();
    let before = fake.connect_attempts();
    let output = node.run(&sandbox, "call", &["app.nodes"]).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success() && said.contains("mode 0644") && said.contains("chmod 600"), "{said}");
    drop(node);
    let moved = sandbox.root().join("elsewhere.json");
    std::fs::rename(&identity, &moved).unwrap();
    std::fs::set_permissions(&moved, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&moved, &identity).unwrap();
    let node = restart();
    let output = node.run(&sandbox, "call", &["app.nodes"]).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success() && said.contains("symbolic link"), "{said}");
    assert!(std::fs::symlink_metadata(&identity).unwrap().file_type().is_symlink(), "left for the owner to look at");
    let operators = fake.requests("connect").into_iter().skip(usize::try_from(before).unwrap());
    assert!(operators.filter(|c| c["role"] == "operator").count() == 0, "no operator connect with a refused key");
    drop(node);
}

#[test]
fn a_bad_setup_code_or_a_pin_on_plaintext_is_a_usage_error_and_nothing_is_saved() {
    let sandbox = Sandbox::new();
    let expired = setup_code(json!({"url": "ws://127.0.0.1:1", "bootstrapToken": "b", "expiresAtMs": 1_000}));
    let pin = "ab".repeat(32);
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["--pair", "oc-pair://%%%"], "not an OpenClaw setup code"),
        (vec!["--pair", &expired], "expired"),
        (vec!["--gateway-url", "wss://127.0.0.1:1", "--gateway-token", "t", "--tls-fingerprint", "12:34"], "SHA-256"),
        (
            vec!["--gateway-url", "ws://127.0.0.1:1", "--gateway-token", "t", "--gateway-tls-fingerprint", &pin],
            "pins a wss://",
        ),
    ];
    for (flags, expected) in cases {
        sandbox
            .clawmcp(["node", "--port", &free_port().to_string(), "--data-dir"])
            .arg(sandbox.data())
            .args(&flags)
            .assert()
            .code(2)
            .stderr(contains(expected));
        assert!(!sandbox.settings_path().exists(), "{flags:?}: nothing saved");
    }
}

#[test]
fn a_switch_that_changes_the_command_surface_declares_it_again() {
    let (runtime, fake) = gateway();
    let sandbox = Sandbox::new();
    let token_file = sandbox.write_data_file("gateway.token", &format!("{FAKE_TOKEN}\n"));
    let url = fake.url();
    let node = Node::start_joined(&sandbox, &url, &token_file, &[]);
    runtime.block_on(fake.wait_for_handshakes(1));
    let declared = |connect: &Value| connect["commands"].as_array().unwrap().contains(&json!("system.run"));
    assert!(declared(&fake.requests("connect")[0]));
    sandbox
        .clawmcp(["settings", "--data-dir"])
        .arg(sandbox.data())
        .args(["set", "NodeSystemRunEnabled", "false"])
        .assert()
        .success();
    runtime.block_on(fake.wait_for_handshakes(2));
    let again = fake.requests("connect").pop().unwrap();
    assert!(!declared(&again), "system.run is no longer declared: {again}");
    assert!(again["commands"].as_array().unwrap().contains(&json!("system.which")));
    drop(node);
}

/// What `app.connection.applySetupCode` / `connectSharedToken` answered, or their error text.
fn join_call(node: &Node, sandbox: &Sandbox, tool: &str, params: &Value) -> Result<Value, String> {
    let output = node.run(sandbox, "call", &[tool, "--params", &params.to_string()]).output().unwrap();
    match output.status.success() {
        true => Ok(serde_json::from_slice(&output.stdout).unwrap()),
        false => Err(String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout)),
    }
}

#[test]
fn a_local_client_moves_the_node_to_another_gateway_only_while_the_owner_allows_it() {
    let (runtime, first) = gateway();
    let second = runtime.block_on(FakeGateway::start());
    second.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    second.on("node.pluginTools.update", |_| Reply::Ok(json!({"tools": []})));
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let shared = json!({"gatewayUrl": first.url(), "token": FAKE_TOKEN});

    // Off by default: not listed, and a call says how the owner turns it on; nothing is saved.
    let listed = node.run(&sandbox, "call", &["--list-tools"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("connectSharedToken"), "{listed:?}");
    let refused = join_call(&node, &sandbox, "app.connection.connectSharedToken", &shared).unwrap_err();
    assert!(refused.contains("clawmcp settings set AppConnectionChangesEnabled true"), "{refused}");
    assert_eq!(first.connect_attempts(), 0);

    // The owner allows it: it applies at once.
    sandbox
        .clawmcp(["settings", "set", "AppConnectionChangesEnabled", "true", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .success();
    // A URL or code that cannot work changes nothing.
    for (tool, params, said) in [
        ("app.connection.applySetupCode", json!({"setupCode": "oc-pair://%%%"}), "not an OpenClaw setup code"),
        ("app.connection.connectSharedToken", json!({"gatewayUrl": "ws://192.0.2.1:1", "token": "t"}), "ws://"),
        ("app.connection.connectSharedToken", json!({"gatewayUrl": first.url(), "token": "a b"}), "no spaces"),
    ] {
        let error = join_call(&node, &sandbox, tool, &params).unwrap_err();
        assert!(error.contains(said), "{tool} {params}: no {said:?} in {error}");
    }
    assert!(
        !sandbox.settings_path().exists()
            || !std::fs::read_to_string(sandbox.settings_path()).unwrap().contains("Gateway")
    );

    // A shared token: the node joins and says so; the token is in a 0600 file, never in settings.json.
    let joined = join_call(&node, &sandbox, "app.connection.connectSharedToken", &shared).unwrap();
    assert_eq!(
        (joined["outcome"].clone(), joined["connected"].clone(), joined["gatewayUrl"].clone()),
        (json!("Success"), json!(true), json!(first.url())),
        "{joined}"
    );
    assert_eq!(first.requests("connect")[0]["auth"]["token"], FAKE_TOKEN);
    let text = std::fs::read_to_string(sandbox.settings_path()).unwrap();
    let saved: Value = serde_json::from_str(&text).unwrap();
    let token_file = sandbox.data().join("gateway-token.txt");
    assert_eq!(
        (saved["EnableNodeMode"].clone(), saved["GatewayUrl"].clone(), saved["GatewayTokenFile"].clone()),
        (json!(true), json!(first.url()), json!(token_file.display().to_string()))
    );
    assert!(!text.contains(FAKE_TOKEN), "no secret in settings.json: {text}");
    assert_eq!((std::fs::read_to_string(&token_file).unwrap(), mode(&token_file)), (FAKE_TOKEN.to_owned(), 0o600));
    // The operator tools act on the gateway joined, with its token.
    first.on("node.list", |_| Reply::Ok(json!({"ts": 1, "nodes": [{"nodeId": "on-the-first"}]})));
    let nodes = node.run(&sandbox, "call", &["app.nodes"]).output().unwrap();
    assert!(String::from_utf8_lossy(&nodes.stdout).contains("on-the-first"), "{nodes:?}");

    // A setup code for another gateway: the node leaves the first, and the second never sees the
    // first one's token (nor does the saved state keep it).
    let bootstrap = second.issue_bootstrap_token();
    let code =
        setup_code(json!({"url": second.url(), "bootstrapToken": bootstrap, "expiresAtMs": in_ten_minutes_ms()}));
    let moved = join_call(&node, &sandbox, "app.connection.applySetupCode", &json!({"setupCode": code})).unwrap();
    assert_eq!(
        (moved["connected"].clone(), moved["gatewayUrl"].clone()),
        (json!(true), json!(second.url())),
        "{moved}"
    );
    assert_eq!(second.requests("connect")[0]["auth"], json!({"bootstrapToken": bootstrap}));
    runtime.block_on(first.wait_for_client_closes(1));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(sandbox.settings_path()).unwrap()).unwrap();
    assert_eq!((saved["GatewayUrl"].clone(), saved.get("GatewayTokenFile")), (json!(second.url()), None), "{saved}");
    // The operator connection to the first gateway is gone with it: the operator tools now name
    // the second, where this node holds only its node credential (a setup code gives no more).
    let asked_first = first.requests("node.list").len();
    let nodes = node.run(&sandbox, "call", &["app.nodes"]).output().unwrap();
    let said = String::from_utf8_lossy(&nodes.stderr).into_owned() + &String::from_utf8_lossy(&nodes.stdout);
    assert!(!nodes.status.success() && said.contains(&second.url()) && said.contains("--gateway-token-file"), "{said}");
    assert_eq!(first.requests("node.list").len(), asked_first, "app.nodes still asked the gateway the node left");
    wait_for(
        WAIT,
        "node status to name the second gateway, connected",
        || {
            let status = status_json(&sandbox);
            (status["gateway"]["url"] == second.url() && status["gateway"]["state"] == "connected").then_some(())
        },
        || node.stderr(),
    );

    // A code the gateway refuses (spent, revoked): the call says so and what to do, and the node
    // (and its MCP listener) stays, unlike a spent `--pair` at start.
    let third = runtime.block_on(FakeGateway::start());
    let code =
        setup_code(json!({"url": third.url(), "bootstrapToken": "never-issued", "expiresAtMs": in_ten_minutes_ms()}));
    let spent = join_call(&node, &sandbox, "app.connection.applySetupCode", &json!({"setupCode": code})).unwrap_err();
    assert!(spent.contains("refused") && spent.contains("<new-code>"), "{spent}");
    let alive = node.run(&sandbox, "call", &["app.status"]).output().unwrap();
    assert!(alive.status.success(), "the node outlives a spent code a client gave: {alive:?}");
    drop(node);
}
