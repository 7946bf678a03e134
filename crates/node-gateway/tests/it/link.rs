//! The node side of the gateway protocol against the in-repo fake gateway: the connect frame,
//! invoke round trips through the registry, cancel, budget, concurrency, pairing states and the
//! plugin tools. Throwaway commands on the paused clock (no sleeps); `system.run` for real in
//! `system_run`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clawmcp_gateway::{BackoffPolicy, Credentials, DeviceIdentity, DeviceTokenStore, Role, Secret};
use clawmcp_mcp::{ToolAnnotations, ToolFailure, ToolFilter};
use clawmcp_node::Registry;
use clawmcp_node::capability::{Command, CommandSpec};
use clawmcp_node_gateway::{ConnectionState, GatewayStatus, NodeLink, NodeLinkConfig, Pairing};
use clawmcp_testkit::{FakeGateway, Reply, gateway_error};
use serde_json::{Value, json};

const TOKEN: &str = "fake-gateway-token";

fn spec(name: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        title: None,
        description: Some("a throwaway command for tests"),
        input_schema: None,
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
}

/// `test.echo` answers its arguments; `test.wait` waits for its cancel and says so;
/// `other.fail` fails with a code; `test.local` is local-only.
fn registry(counters: Counters) -> Arc<Registry> {
    let registry = Registry::new();
    let echo: Command =
        spec("test.echo").with_handler(|request, _ctx| async move { Ok(json!({"args": request.args})) });
    let wait: Command = spec("test.wait").with_handler(move |_request, ctx| {
        let Counters { started, cancelled } = counters.clone();
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            ctx.cancel.cancelled().await;
            cancelled.fetch_add(1, Ordering::SeqCst);
            Err(ToolFailure::new("stopped: cancelled"))
        }
    });
    let fail: Command = spec("other.fail")
        .with_handler(|_request, _ctx| async move { Err(ToolFailure::new("it broke").with_code("SYSTEM_RUN_DENIED")) });
    // Local MCP clients only: the gateway neither sees nor runs it.
    let local: Command =
        spec("test.local").with_handler(|_request, _ctx| async move { Ok(json!("local")) }).local_only();
    registry.register_commands([echo, wait, fail, local]);
    Arc::new(registry)
}

#[derive(Clone, Default)]
struct Counters {
    started: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
}

impl Counters {
    /// Waits (virtual time, bounded) until `test.wait` has started `count` times.
    async fn started(&self, count: usize) {
        for _ in 0..100_000 {
            if self.started.load(Ordering::SeqCst) >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("test.wait never started");
    }
}

struct Node {
    fake: FakeGateway,
    link: NodeLink,
    registry: Arc<Registry>,
    counters: Counters,
    _dir: tempfile::TempDir,
}

async fn node_with(filter: ToolFilter, max_concurrent: usize, script: impl FnOnce(&FakeGateway)) -> Node {
    let fake = FakeGateway::start().await;
    fake.on("node.invoke.result", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.pluginTools.update", |params| Reply::Ok(json!({"nodeId": "n", "tools": params["tools"]})));
    script(&fake);
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("data");
    clawmcp_node::settings::create_private_dir(&private).unwrap();
    let device = Arc::new(DeviceIdentity::load_or_create(&private).unwrap());
    let counters = Counters::default();
    let config = NodeLinkConfig {
        url: fake.url(),
        credentials: Credentials { token: Some(Secret::new(TOKEN)), ..Credentials::default() },
        tls_fingerprint: None,
        device,
        device_tokens: Some(Arc::new(DeviceTokenStore::new(&private, &fake.url(), Role::Node))),
        display_name: "test-node".into(),
        filter,
        headers: Vec::new(),
        max_concurrent_invokes: max_concurrent,
        backoff: BackoffPolicy::default(),
    };
    let registry = registry(counters.clone());
    let link = NodeLink::start(config, registry.clone());
    fake.wait_for_handshakes(1).await;
    Node { fake, link, registry, counters, _dir: dir }
}

async fn node() -> Node {
    node_with(ToolFilter::all(), 16, |_| {}).await
}

async fn until_status(link: &NodeLink, done: impl Fn(&GatewayStatus) -> bool) -> GatewayStatus {
    let mut watch = link.watch_status();
    let status = tokio::time::timeout(Duration::from_secs(3600), watch.wait_for(|status| done(status)))
        .await
        .expect("the status never got there")
        .expect("the link is gone");
    status.clone()
}

fn invoke(id: &str, command: &str, params: Option<Value>, timeout_ms: u64) -> Value {
    json!({
        "id": id,
        "nodeId": "ignored",
        "command": command,
        "paramsJSON": params.map(|p| p.to_string()),
        "timeoutMs": timeout_ms,
        "idempotencyKey": format!("key-{id}"),
    })
}

/// The `node.invoke.result` params for invoke `id`, once sent.
async fn result_of(fake: &FakeGateway, id: &str) -> Value {
    let mut count = 1;
    loop {
        let result = fake.wait_for_request("node.invoke.result", count).await;
        if result["id"] == id {
            return result;
        }
        count += 1;
    }
}

fn payload(result: &Value) -> Value {
    assert_eq!(result["ok"], true, "{result}");
    serde_json::from_str(result["payloadJSON"].as_str().unwrap()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn connects_as_the_real_node_host_does_with_the_registrys_surface() {
    let node = node_with(ToolFilter::parse("test.*").unwrap(), 16, |_| {}).await;
    let connect = node.fake.requests("connect").remove(0);
    assert_eq!(connect["role"], "node");
    assert_eq!(connect["scopes"], json!([]));
    let client = &connect["client"];
    assert_eq!(client["id"], "node-host", "the id the gateway sends node.invoke.cancel to");
    assert_eq!(client["mode"], "node");
    assert_eq!(client["platform"], "linux");
    assert_eq!(client["deviceFamily"], "Linux", "the Linux command policy needs both");
    assert_eq!(client["displayName"], "test-node");
    // The --tools filter narrows the gateway surface exactly as the MCP one; local-only
    // `test.local` is not declared.
    assert_eq!(connect["commands"], json!(["test.echo", "test.wait", "mcp.tools.call.v1"]));
    assert!(node.registry.listed().iter().any(|command| command.name() == "test.local"), "MCP lists it");
    assert_eq!(connect["caps"], json!(["test", "mcp"]));
    assert!(connect["pathEnv"].is_string());
    assert!(connect["device"]["signature"].is_string());
    assert_eq!(connect["device"]["id"], node.link.status().node_id);
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn an_invoke_runs_the_registrys_command_and_answers_with_our_node_id() {
    let node = node().await;
    node.fake.emit("node.invoke.request", invoke("inv-1", "test.echo", Some(json!({"x": 1})), 15_000));
    let result = result_of(&node.fake, "inv-1").await;
    assert_eq!(result["nodeId"], node.link.status().node_id, "the gateway rejects a foreign nodeId");
    assert_eq!(payload(&result), json!({"args": {"x": 1}}));
    until_status(&node.link, |status| status.invokes == 1).await;
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn params_json_null_reaches_the_command_as_an_empty_object() {
    let node = node().await;
    node.fake.emit("node.invoke.request", invoke("inv-null", "test.echo", None, 15_000));
    assert_eq!(payload(&result_of(&node.fake, "inv-null").await), json!({"args": {}}));
    node.fake.emit("node.invoke.request", json!({"id":"inv-bad","command":"test.echo","paramsJSON":"[1,2]"}));
    let bad = result_of(&node.fake, "inv-bad").await;
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
    assert!(bad["error"]["message"].as_str().unwrap().contains("JSON object"), "{bad}");
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn unknown_filtered_and_failing_commands_get_the_gateways_codes() {
    let node = node_with(ToolFilter::parse("test.*").unwrap(), 16, |_| {}).await;
    node.fake.emit("node.invoke.request", invoke("u", "no.such", Some(json!({})), 15_000));
    let unknown = result_of(&node.fake, "u").await;
    assert_eq!(unknown["error"]["code"], "INVALID_REQUEST");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("unknown command: no.such"));
    node.fake.emit("node.invoke.request", invoke("l", "test.local", Some(json!({})), 15_000));
    let local = result_of(&node.fake, "l").await;
    assert_eq!(local["error"]["code"], "INVALID_REQUEST");
    assert!(local["error"]["message"].as_str().unwrap().contains("local MCP clients of this node only"), "{local}");
    let via_plugin = json!({"server": "clawmcp", "tool": "test.local", "arguments": {}});
    node.fake.emit("node.invoke.request", invoke("lp", "mcp.tools.call.v1", Some(via_plugin), 15_000));
    let local = result_of(&node.fake, "lp").await;
    assert_eq!(local["error"]["code"], "INVALID_REQUEST", "nor through a plugin-tool call: {local}");
    node.fake.emit("node.invoke.request", invoke("f", "other.fail", Some(json!({})), 15_000));
    let filtered = result_of(&node.fake, "f").await;
    assert!(filtered["error"]["message"].as_str().unwrap().contains("tool filter `test.*`"), "{filtered}");
    node.link.close().await;

    let served = node_with(ToolFilter::all(), 16, |_| {}).await;
    served.fake.emit("node.invoke.request", invoke("c", "other.fail", Some(json!({})), 15_000));
    let failed = result_of(&served.fake, "c").await;
    assert_eq!(failed["error"], json!({"code": "SYSTEM_RUN_DENIED", "message": "it broke"}));
    served.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn node_invoke_cancel_stops_the_command_and_a_result_still_goes_back() {
    let node = node().await;
    node.fake.emit("node.invoke.request", invoke("slow", "test.wait", Some(json!({})), 600_000));
    node.counters.started(1).await;
    node.fake.emit("node.invoke.cancel", json!({"invokeId": "slow", "nodeId": node.link.status().node_id}));
    let result = result_of(&node.fake, "slow").await;
    assert_eq!(result["ok"], false);
    assert_eq!(result["error"]["code"], "CANCELLED");
    assert_eq!(node.counters.cancelled.load(Ordering::SeqCst), 1, "the command saw the cancel");
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn an_invoke_past_its_budget_is_cancelled_and_answered_timeout() {
    let node = node().await;
    node.fake.emit("node.invoke.request", invoke("late", "test.wait", Some(json!({})), 2_000));
    let result = result_of(&node.fake, "late").await;
    assert_eq!(result["error"]["code"], "TIMEOUT");
    assert!(result["error"]["message"].as_str().unwrap().contains("2000 ms"), "{result}");
    assert_eq!(node.counters.started.load(Ordering::SeqCst), 1);
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn one_invoke_over_the_concurrency_bound_is_answered_busy_at_once() {
    let node = node_with(ToolFilter::all(), 1, |_| {}).await;
    node.fake.emit("node.invoke.request", invoke("first", "test.wait", Some(json!({})), 600_000));
    node.counters.started(1).await;
    node.fake.emit("node.invoke.request", invoke("second", "test.echo", Some(json!({})), 600_000));
    let busy = result_of(&node.fake, "second").await;
    assert_eq!(busy["error"]["code"], "UNAVAILABLE");
    assert!(busy["error"]["message"].as_str().unwrap().contains("node busy: 1 invocations"), "{busy}");
    // The bound is a bound, not a stall: once the first ends, the next one runs.
    node.fake.emit("node.invoke.cancel", json!({"invokeId": "first"}));
    result_of(&node.fake, "first").await;
    node.fake.emit("node.invoke.request", invoke("third", "test.echo", Some(json!({})), 600_000));
    assert_eq!(payload(&result_of(&node.fake, "third").await), json!({"args": {}}));
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_pending_surface_is_reported_retried_and_approved() {
    let pending = gateway_error(
        "UNAVAILABLE",
        "node pairing changed while invocation was active",
        Some(json!({"code": "PAIRING_CHANGED"})),
    );
    let awaiting = gateway_error(
        "UNAVAILABLE",
        "node capability surface is awaiting operator approval; run `openclaw nodes approve req-77` (see `openclaw \
         nodes pending`), then this node retries automatically",
        None,
    );
    let node = node_with(ToolFilter::all(), 16, |fake| {
        fake.on("node.event", move |_| Reply::Error(pending.clone()));
        fake.on("node.runnerInventory.update", move |_| Reply::Error(awaiting.clone()));
    })
    .await;
    let status = until_status(&node.link, |status| status.request_id.is_some()).await;
    assert_eq!(status.pairing, Pairing::Pending);
    assert_eq!(status.request_id.as_deref(), Some("req-77"), "the id the gateway named");
    assert!(status.hint.as_deref().unwrap().contains("`openclaw nodes approve req-77`"), "{status:?}");
    let inventory = node.fake.wait_for_request("node.runnerInventory.update", 1).await;
    assert_eq!(inventory, json!({"protocolFeatures": []}), "no runner features are claimed, in the only shape allowed");
    assert!(node.fake.requests("node.pluginTools.update").is_empty(), "published only once approved");
    // It keeps asking, as the real node host does.
    node.fake.wait_for_request("node.event", 3).await;
    node.fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    until_status(&node.link, |status| status.pairing == Pairing::Approved).await;
    let stats = node.fake.wait_for_request("node.event", 4).await;
    assert_eq!(stats["event"], "node.host.stats");
    let host: Value = serde_json::from_str(stats["payloadJSON"].as_str().unwrap()).unwrap();
    assert!(host["cpuCount"].as_u64().unwrap() >= 1);
    // Approval publishes the plugin tools.
    let update = node.fake.wait_for_request("node.pluginTools.update", 1).await;
    let names: Vec<&str> = update["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["test_echo", "test_wait", "other_fail"]);
    assert_eq!(update["tools"][0]["command"], "mcp.tools.call.v1");
    assert_eq!(update["tools"][0]["mcp"], json!({"server": "clawmcp", "tool": "test.echo"}));
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn node_pair_resolved_moves_the_state_at_once() {
    let pending = gateway_error("UNAVAILABLE", "awaiting operator approval", Some(json!({"code": "PAIRING_CHANGED"})));
    let node = node_with(ToolFilter::all(), 16, |fake| {
        fake.on("node.event", move |_| Reply::Error(pending.clone()));
    })
    .await;
    until_status(&node.link, |status| status.pairing == Pairing::Pending).await;
    node.fake.emit("node.pair.resolved", json!({"requestId": "r", "nodeId": "n", "decision": "approved", "ts": 1}));
    until_status(&node.link, |status| status.pairing == Pairing::Approved).await;
    node.fake.wait_for_request("node.pluginTools.update", 1).await;
    node.fake.emit("node.pair.resolved", json!({"requestId": "r2", "decision": "rejected"}));
    let rejected = until_status(&node.link, |status| status.pairing == Pairing::Rejected).await;
    assert!(rejected.hint.is_some());
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn mcp_tools_call_v1_answers_with_the_mcp_call_tool_result() {
    let node = node().await;
    let call = json!({"server": "clawmcp", "tool": "test.echo", "arguments": {"y": 2}});
    node.fake.emit("node.invoke.request", invoke("p1", "mcp.tools.call.v1", Some(call), 15_000));
    let result = payload(&result_of(&node.fake, "p1").await);
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(result["content"][0]["text"], r#"{"args":{"y":2}}"#);
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");

    let failing = json!({"tool": "other.fail"});
    node.fake.emit("node.invoke.request", invoke("p2", "mcp.tools.call.v1", Some(failing), 15_000));
    let result = payload(&result_of(&node.fake, "p2").await);
    assert_eq!(result["isError"], true, "a tool failure is an MCP error result, not a failed invoke");

    let wrong_server = json!({"server": "elsewhere", "tool": "test.echo"});
    node.fake.emit("node.invoke.request", invoke("p3", "mcp.tools.call.v1", Some(wrong_server), 15_000));
    assert_eq!(result_of(&node.fake, "p3").await["error"]["code"], "INVALID_REQUEST");
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn the_link_comes_back_after_a_gateway_restart_and_a_token_rotation() {
    let node = node().await;
    node.fake.restart();
    node.fake.wait_for_handshakes(2).await;
    node.fake.rotate_token("rotated-shared-token");
    node.fake.wait_for_handshakes(3).await;
    let status =
        until_status(&node.link, |status| status.state == clawmcp_node_gateway::ConnectionState::Connected).await;
    assert!(status.last_error.is_none());
    let last = node.fake.requests("connect").pop().unwrap();
    assert!(last["auth"]["deviceToken"].is_string(), "back in with the device token: {}", last["auth"]);
    node.fake.emit("node.invoke.request", invoke("after", "test.echo", Some(json!({})), 15_000));
    assert_eq!(payload(&result_of(&node.fake, "after").await), json!({"args": {}}));
    node.link.close().await;
}

#[tokio::test(start_paused = true)]
async fn plugin_tools_refused_while_the_gateway_settles_an_approval_are_offered_again() {
    let refusals = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = refusals.clone();
    let node = node_with(ToolFilter::all(), 16, move |fake| {
        fake.on("node.pluginTools.update", move |params| {
            // The real gateway, just after a bootstrap approval: the first offer is refused.
            match seen.fetch_add(1, Ordering::SeqCst) {
                0 => Reply::Error(clawmcp_testkit::gateway_error(
                    "UNAVAILABLE",
                    "node pairing changed before request dispatch",
                    None,
                )),
                _ => Reply::Ok(json!({"nodeId": "n", "tools": params["tools"]})),
            }
        });
    })
    .await;
    let second = node.fake.wait_for_request("node.pluginTools.update", 2).await;
    assert_eq!(second["tools"].as_array().unwrap().len(), 3, "the same tools, offered again");
    assert_eq!(refusals.load(Ordering::SeqCst), 2);
    node.link.close().await;
}

/// A spent setup code stops the link for good, and the stop is always published (the client
/// ends its event stream right after its final state; the link must not leave on the first
/// without the second). Repeated: the order the two arrive in varies from run to run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_setup_code_stops_the_link_and_the_status_says_so() {
    let fake = FakeGateway::start().await;
    fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    let spent = fake.issue_bootstrap_token();
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str| {
        let private = dir.path().join(name);
        clawmcp_node::settings::create_private_dir(&private).unwrap();
        NodeLinkConfig {
            url: fake.url(),
            credentials: Credentials { bootstrap_token: Some(Secret::new(&spent)), ..Credentials::default() },
            tls_fingerprint: None,
            device: Arc::new(DeviceIdentity::load_or_create(&private).unwrap()),
            device_tokens: Some(Arc::new(DeviceTokenStore::new(&private, &fake.url(), Role::Node))),
            display_name: name.into(),
            filter: ToolFilter::all(),
            headers: Vec::new(),
            max_concurrent_invokes: 16,
            backoff: BackoffPolicy::default(),
        }
    };
    // Real time here (the race is between two tasks), so the waits have a real bound.
    let reach = |link: &NodeLink, state: ConnectionState| {
        let mut watch = link.watch_status();
        async move {
            let reached = tokio::time::timeout(Duration::from_secs(10), watch.wait_for(|status| status.state == state));
            reached.await.expect("the status never got there").expect("the link is gone").clone()
        }
    };
    let first = NodeLink::start(config("first"), registry(Counters::default()));
    reach(&first, ConnectionState::Connected).await;
    first.close().await;
    for attempt in 0..20 {
        let link = NodeLink::start(config(&format!("again-{attempt}")), registry(Counters::default()));
        let status = reach(&link, ConnectionState::Stopped).await;
        assert!(status.hint.as_deref().is_some_and(|hint| hint.contains("<new-code>")), "{status:?}");
        assert!(link.gave_up().is_some_and(|reason| reason.is_spent_setup_code()), "attempt {attempt}");
        link.close().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_capabilitys_own_event_goes_out_as_node_event_while_the_link_lives() {
    use clawmcp_mcp::tool::NodeEvent;
    let node = node().await;
    until_status(&node.link, |status| status.state == ConnectionState::Connected).await;
    let events = node.registry.events().clone();
    assert_eq!(events.node_id(), Some(node.link.status().node_id.clone()), "the link's node id names the instance");
    let event = NodeEvent { event: "agent.request", payload: json!({"message": "CANVAS_A2UI action=go", "key": "a1"}) };
    events.send(event).await.unwrap();
    let sent = node
        .fake
        .requests("node.event")
        .into_iter()
        .find(|params| params["event"] == "agent.request")
        .expect("the event reached the gateway");
    let payload: Value = serde_json::from_str(sent["payloadJSON"].as_str().unwrap()).unwrap();
    assert_eq!(payload, json!({"message": "CANVAS_A2UI action=go", "key": "a1"}));

    // The gateway's refusal is the sender's answer; once the link is closed, events are refused.
    node.fake.on("node.event", |_| Reply::Error(gateway_error("INVALID_REQUEST", "no such session", None)));
    let refused = events.send(NodeEvent { event: "agent.request", payload: json!({}) }).await.unwrap_err();
    assert!(refused.contains("no such session"), "{refused}");
    node.link.close().await;
    let closed = events.send(NodeEvent { event: "agent.request", payload: json!({}) }).await.unwrap_err();
    assert_eq!(closed, clawmcp_node::events::NOT_JOINED);
}
