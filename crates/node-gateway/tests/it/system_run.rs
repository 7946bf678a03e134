//! `system.run` through the gateway link for real (real processes, real clock): the real node
//! host's payload keys, the `exec.finished` node event before the result, a cancel that kills
//! the process group, and an MCP call on the same registry beside it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawmcp_mcp::CallContext;
use clawmcp_node::settings::DataDir;
use clawmcp_node::{InvokeRequest, Registry};
use clawmcp_node_gateway::NodeLink;
use clawmcp_testkit::{FakeGateway, Reply};

use crate::common;
use serde_json::{Value, json};

const ALLOW_ALL_POLICY: &str = r#"{"version": 1, "defaults": {"security": "full", "ask": "off"}}"#;

struct Setup {
    fake: FakeGateway,
    link: NodeLink,
    registry: Arc<Registry>,
    dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let fake = FakeGateway::start().await;
    fake.on("node.invoke.result", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.pluginTools.update", |_| Reply::Ok(json!({"tools": []})));
    let dir = tempfile::tempdir().unwrap();
    let data = DataDir::at(dir.path().join("data"));
    data.ensure().unwrap();
    std::fs::write(data.exec_approvals_path(), ALLOW_ALL_POLICY).unwrap();
    let (link, registry) = common::builtin_node(&fake, &data, "run-test").await;
    Setup { fake, link, registry, dir }
}

fn invoke(id: &str, command: &str, params: Value, timeout_ms: u64) -> Value {
    json!({"id": id, "nodeId": "x", "command": command, "paramsJSON": params.to_string(), "timeoutMs": timeout_ms,
           "idempotencyKey": id})
}

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future).await.expect("no answer within 60 s")
}

async fn result_of(fake: &FakeGateway, id: &str) -> Value {
    let mut count = 1;
    loop {
        let result = bounded(fake.wait_for_request("node.invoke.result", count)).await;
        if result["id"] == id {
            return result;
        }
        count += 1;
    }
}

/// Processes whose command line contains `marker` (from /proc).
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_run_answers_with_the_real_node_hosts_keys_after_exec_finished() {
    let setup = setup().await;
    let params = json!({"command": ["sh", "-c", "echo hi; echo oops >&2"], "runId": "run-7"});
    setup.fake.emit("node.invoke.request", invoke("r1", "system.run", params, 30_000));
    let result = result_of(&setup.fake, "r1").await;
    assert_eq!(result["ok"], true, "{result}");
    let payload: Value = serde_json::from_str(result["payloadJSON"].as_str().unwrap()).unwrap();
    assert_eq!(
        payload,
        json!({"stdout": "hi\n", "stderr": "oops\n", "exitCode": 0, "timedOut": false, "success": true, "error": null})
    );
    // exec.finished went out before the result.
    let received = setup.fake.received();
    let position = |predicate: &dyn Fn(&Value) -> bool| {
        received.iter().position(|r| r.json.as_ref().is_some_and(|frame| predicate(&frame["params"])))
    };
    let finished_at = position(&|params| params["event"] == "exec.finished").expect("exec.finished was sent");
    let result_at = position(&|params| params["id"] == "r1").unwrap();
    assert!(finished_at < result_at, "exec.finished precedes the result");
    let finished = received[finished_at].params();
    let note: Value = serde_json::from_str(finished["payloadJSON"].as_str().unwrap()).unwrap();
    assert_eq!(note["runId"], "run-7");
    assert_eq!(note["host"], "node");
    assert_eq!(note["sessionKey"], "node");
    assert_eq!(note["command"], "sh -c \"echo hi; echo oops >&2\"");
    assert_eq!(note["output"], "hi\noops");
    assert_eq!(note["success"], true);
    setup.link.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_cancel_kills_the_running_process_group() {
    let setup = setup().await;
    let marker = format!("clawmcp-cancel-marker-{}", std::process::id());
    let started = setup.dir.path().join("started");
    let script = format!("echo up > {}; sleep 300 # {marker}", started.display());
    let params = json!({"command": ["sh", "-c", script], "timeoutMs": 600_000});
    setup.fake.emit("node.invoke.request", invoke("long", "system.run", params, 600_000));
    bounded(async {
        while !Path::new(&started).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(!processes_with(&marker).is_empty(), "the command runs");
    setup.fake.emit("node.invoke.cancel", json!({"invokeId": "long", "nodeId": setup.link.status().node_id}));
    let result = result_of(&setup.fake, "long").await;
    assert_eq!(result["ok"], false);
    assert_eq!(result["error"]["code"], "CANCELLED", "{result}");
    assert!(processes_with(&marker).is_empty(), "no process of the run outlives the cancel");
    setup.link.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_and_a_gateway_invoke_reach_the_same_registry() {
    let setup = setup().await;
    setup.fake.emit("node.invoke.request", invoke("w", "system.which", json!({"bins": ["sh"]}), 30_000));
    let result = result_of(&setup.fake, "w").await;
    let gateway: Value = serde_json::from_str(result["payloadJSON"].as_str().unwrap()).unwrap();
    let command = setup.registry.find("system.which").unwrap();
    let request = InvokeRequest {
        id: "local".into(),
        command: "system.which".into(),
        args: json!({"bins": ["sh"]}).as_object().unwrap().clone(),
        session_key: None,
        caller: clawmcp_node::Caller::Mcp,
    };
    let local = command.call(request, CallContext::detached()).await.unwrap();
    assert_eq!(local.payload.as_ref(), Some(&gateway), "one implementation answers both transports");
    assert!(gateway["bins"]["sh"].as_str().unwrap().ends_with("/sh"));
    setup.link.close().await;
}

/// The node event `event` the fake received, decoded, if any.
fn node_event(fake: &FakeGateway, event: &str) -> Option<(usize, Value)> {
    fake.received().iter().enumerate().find_map(|(at, received)| {
        let frame = received.json.as_ref()?;
        (frame["method"] == "node.event" && frame["params"]["event"] == event)
            .then(|| (at, serde_json::from_str(frame["params"]["payloadJSON"].as_str().unwrap()).unwrap()))
    })
}

fn position_of_result(fake: &FakeGateway, id: &str) -> usize {
    fake.received()
        .iter()
        .position(|r| r.json.as_ref().is_some_and(|f| f["method"] == "node.invoke.result" && f["params"]["id"] == id))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_prepare_approve_reinvoke_flow_runs_what_the_operator_approved() {
    let setup = setup().await;
    let policy = r#"{"version": 1, "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny"}}"#;
    std::fs::write(setup.dir.path().join("data/exec-approvals.json"), policy).unwrap();
    let command = json!(["echo", "approved run"]);
    let session = "agent:main:main";

    // 1. Not allowlisted: refused at once (nobody here is asked), exec.denied first.
    let plain = json!({"command": command, "runId": "run-1", "sessionKey": session});
    setup.fake.emit("node.invoke.request", invoke("d1", "system.run", plain, 30_000));
    let refused = result_of(&setup.fake, "d1").await;
    assert_eq!(refused["error"]["code"], "SYSTEM_RUN_DENIED", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("approval required"), "{refused}");
    let (denied_at, denied) = node_event(&setup.fake, "exec.denied").expect("exec.denied was sent");
    assert!(denied_at < position_of_result(&setup.fake, "d1"), "exec.denied precedes the result");
    assert_eq!(
        denied,
        json!({"sessionKey": session, "runId": "run-1", "host": "node", "command": "echo \"approved run\"",
               "reason": "approval-required", "suppressNotifyOnExit": false})
    );

    // 2. The exec tool prepares; 3. re-invokes with the operator's decision and the plan.
    let prepare = json!({"command": command, "rawCommand": "echo \"approved run\"", "sessionKey": session});
    setup.fake.emit("node.invoke.request", invoke("p1", "system.run.prepare", prepare, 30_000));
    let prepared = result_of(&setup.fake, "p1").await;
    let prepared: Value = serde_json::from_str(prepared["payloadJSON"].as_str().unwrap()).unwrap();
    let plan = prepared["plan"].clone();
    assert_eq!(plan["sessionKey"], session);
    assert_eq!(prepared["execPolicy"], json!({"security": "allowlist", "ask": "on-miss"}));
    assert!(plan["argv"][0].as_str().unwrap().ends_with("/echo"), "the plan names the binary: {plan}");
    // As the gateway forwards it: the approved plan's argv and command text.
    let approved = json!({"command": plan["argv"], "rawCommand": plan["commandText"], "runId": "appr-1", "approved": true,
                          "approvalDecision": "allow-once", "systemRunPlan": plan, "sessionKey": session});
    setup.fake.emit("node.invoke.request", invoke("r2", "system.run", approved.clone(), 30_000));
    let ran = result_of(&setup.fake, "r2").await;
    assert_eq!(ran["ok"], true, "{ran}");
    let payload: Value = serde_json::from_str(ran["payloadJSON"].as_str().unwrap()).unwrap();
    assert_eq!(payload["stdout"], "approved run\n");

    // The same fields from an MCP client, or through a plugin-tool call, approve nothing.
    let mcp = InvokeRequest {
        id: "local".into(),
        command: "system.run".into(),
        args: approved.as_object().unwrap().clone(),
        session_key: None,
        caller: clawmcp_node::Caller::Mcp,
    };
    let error = setup.registry.find("system.run").unwrap().call(mcp, CallContext::detached()).await.unwrap_err();
    assert_eq!(error.code, Some("INVALID_REQUEST"));
    assert!(error.message.starts_with("approved is set by an OpenClaw gateway"), "{}", error.message);
    let via_plugin = json!({"server": "clawmcp", "tool": "system.run", "arguments": approved});
    setup.fake.emit("node.invoke.request", invoke("t1", "mcp.tools.call.v1", via_plugin, 30_000));
    let refused = result_of(&setup.fake, "t1").await;
    assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("not a plugin tool"), "{refused}");

    // 4. A plan for another command does not carry the approval over.
    let mut other = approved;
    other["command"] = json!(["echo", "something else"]);
    other["rawCommand"] = json!("echo \"something else\"");
    setup.fake.emit("node.invoke.request", invoke("r3", "system.run", other, 30_000));
    let refused = result_of(&setup.fake, "r3").await;
    assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "explicit approval requires matching systemRunPlan (argv differs from the prepared plan)"
    );
    setup.link.close().await;
}

/// The gateway gets upstream's reason for arguments of the wrong shape, as the real node host
/// answers them (an MCP client gets them named against the input schema instead: the node's
/// `system_run` tests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_system_run_gets_upstreams_reason_over_the_gateway() {
    let setup = setup().await;
    let cases = [
        ("v1", json!({"command": "ls"}), "command-array-required"),
        ("v2", json!({"command": [1]}), "malformed-command"),
        ("v3", json!({}), "missing-command"),
        ("v4", json!({"command": ["ls"], "cwd": 1}), "malformed-cwd"),
    ];
    for (id, params, reason) in cases {
        setup.fake.emit("node.invoke.request", invoke(id, "system.run", params.clone(), 30_000));
        let result = result_of(&setup.fake, id).await;
        assert_eq!(result["ok"], false, "{params}: {result}");
        assert_eq!(
            result["error"]["message"],
            format!("exec-approvals-v2: ValidationFailed ({reason})"),
            "{params}: {result}"
        );
    }
    setup.link.close().await;
}

/// A gateway plugin-tool call (`mcp.tools.call.v1`) is an MCP call in all but transport: its
/// arguments are checked against the published schema before the handler runs, and the agent
/// gets the MCP error result naming the argument, as an MCP client would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_tool_call_of_the_wrong_shape_is_refused_naming_the_argument() {
    let setup = setup().await;
    let call = json!({"server": "clawmcp", "tool": "system.which", "arguments": {"bins": 5}});
    setup.fake.emit("node.invoke.request", invoke("pt1", "mcp.tools.call.v1", call, 30_000));
    let result = result_of(&setup.fake, "pt1").await;
    assert_eq!(result["ok"], true, "a tool failure is an MCP error result, not a failed invoke: {result}");
    let payload_of =
        |result: &Value| -> Value { serde_json::from_str(result["payloadJSON"].as_str().unwrap()).unwrap() };
    let payload = payload_of(&result);
    assert_eq!(payload["isError"], true, "{payload}");
    let text = payload["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Invalid arguments for system.which: `bins` must be an array"), "{text}");

    let fine = json!({"server": "clawmcp", "tool": "system.which", "arguments": {"bins": ["sh"]}});
    setup.fake.emit("node.invoke.request", invoke("pt2", "mcp.tools.call.v1", fine, 30_000));
    let result = result_of(&setup.fake, "pt2").await;
    let payload = payload_of(&result);
    assert_ne!(payload["isError"], true, "{payload}");
    setup.link.close().await;
}
