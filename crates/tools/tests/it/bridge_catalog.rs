//! What `clawmcp tools` advertises and lets through: the allowlist on list and call, the live
//! discovery (`tools.effective` names, `attach.grant` schemas) and its fallbacks (regen
//! snapshot, bundled snapshot), denied tools neither listed nor callable, and regen itself.

use crate::bridge_support;

use std::time::Duration;

use bridge_support::{FakeLoopbackMcp, Setup, call, json_result, names, text, within};
use clawmcp_mcp::McpService;
use clawmcp_testkit::{Reply, ToolReply};
use clawmcp_tools::bridge::{self, ListSource, SchemaSource, Snapshot};
use serde_json::{Value, json};

const LOCAL_AND_YIELD: [&str; 8] = ["read", "write", "edit", "exec", "glob", "grep", "process", "sessions_yield"];

/// `tools.effective` as the real gateway answers it, for these ids.
fn effective(ids: &[&str]) -> Value {
    let tools: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "label": id, "description": "short", "rawDescription": format!("live {id}"), "source": "core"}))
        .collect();
    json!({"agentId": "main", "profile": "full", "groups": [{"id": "core", "label": "Built-in tools", "source": "core", "tools": tools}]})
}

fn loopback_tool(name: &str) -> Value {
    json!({"name": name, "description": format!("loopback {name}"), "inputSchema": {"type": "object", "properties": {"live": {"type": "string"}}}})
}

#[tokio::test(start_paused = true)]
async fn the_allowlist_filters_the_list_and_refuses_calls_before_the_gateway() {
    let setup = Setup::new().await.with_env("OPENCLAW_MCP_ENABLED_TOOLS", "subagents");
    setup.tool_details("subagents", bridge_support::subagents_details(&[], &[]));
    let bridge = setup.bridge().await;
    assert_eq!(names(&bridge.list_tools()), ["subagents"]);

    let allowed = within(call(&bridge, "subagents", json!({"action": "list"}))).await;
    assert!(!allowed.is_error, "{}", text(&allowed));
    assert_eq!(setup.fake.tool_calls().len(), 1);
    for (name, args) in
        [("read", json!({"path": "/etc/hosts"})), ("sessions_list", json!({})), ("sessions_yield", json!({}))]
    {
        let refused = within(call(&bridge, name, args)).await;
        assert!(refused.is_error, "{name}");
        assert!(
            text(&refused).starts_with(&format!("Tool is disabled by the server-side allowlist: {name}.")),
            "{}",
            text(&refused)
        );
    }
    assert_eq!(setup.fake.tool_calls().len(), 1, "refused calls never reach the gateway");
    assert!(!setup.workspace().join("temp").exists(), "a refused sessions_yield touched nothing");
}

#[tokio::test(start_paused = true)]
async fn live_discovery_lists_what_the_gateway_serves_with_live_schemas() {
    let setup = Setup::new().await.discovering();
    setup.fake.on("tools.effective", |_| {
        Reply::Ok(effective(&[
            "sessions_list",
            "sessions",
            "exec",
            "read",
            "sessions_spawn",
            "sessions_yield",
            "brand_new",
        ]))
    });
    let mcp = FakeLoopbackMcp::start(
        json!([loopback_tool("sessions_list"), loopback_tool("sessions_spawn"), loopback_tool("sessions_yield")]),
        "grant-token",
    )
    .await;
    mcp.serve_grants(&setup.fake, "grant-token");
    let bridge = setup.bridge().await;

    let tools = bridge.list_tools();
    let listed = names(&tools);
    assert_eq!(listed[..8], LOCAL_AND_YIELD);
    assert_eq!(
        listed[8..],
        ["brand_new", "sessions", "sessions_list"],
        "exec/read are coding tools, sessions_spawn is HTTP-denied"
    );
    let by_name = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
    assert_eq!(by_name("sessions_list").description, "live sessions_list");
    assert_eq!(by_name("sessions_list").input_schema.to_value()["properties"]["live"]["type"], "string");
    assert_eq!(
        by_name("sessions").input_schema.to_value()["properties"]["action"]["type"],
        "string",
        "from the bundled snapshot"
    );
    assert_eq!(by_name("brand_new").input_schema.to_value()["type"], "object");

    let catalog = bridge.catalog().current();
    assert_eq!(catalog.list_source, ListSource::Effective);
    assert_eq!(catalog.get("sessions_list").unwrap().schema_source, SchemaSource::Live);
    assert_eq!(catalog.get("sessions").unwrap().schema_source, SchemaSource::BundledSnapshot);
    assert_eq!(catalog.get("brand_new").unwrap().schema_source, SchemaSource::Open);

    let effective_params = setup.fake.wait_for_request("tools.effective", 1).await;
    assert_eq!(effective_params, json!({"sessionKey": "agent:main:main"}));
    let grant = setup.fake.wait_for_request("attach.grant", 1).await;
    assert_eq!(grant["sessionKey"], "agent:main:main");
    assert_eq!(setup.fake.wait_for_request("attach.revoke", 1).await, json!({"token": "grant-token"}));
    let mcp_calls = mcp.requests.lock().unwrap().clone();
    assert!(mcp_calls.iter().all(|(bearer, _)| bearer.as_deref() == Some("Bearer grant-token")));
    let methods: Vec<&str> = mcp_calls.iter().filter_map(|(_, body)| body["method"].as_str()).collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list"]);
}

#[tokio::test(start_paused = true)]
async fn a_denied_tool_is_neither_listed_nor_forwarded() {
    let setup = Setup::new().await.discovering().with_config(json!({"gateway": {"tools": {"deny": ["tts"]}}}));
    setup.fake.on("tools.effective", |_| Reply::Ok(effective(&["tts", "sessions_list"])));
    setup.fake.on_tool("tts", |_| ToolReply::ok(json_result(&json!({"spoken": true}))));
    let bridge = setup.bridge().await;
    assert!(!names(&bridge.list_tools()).contains(&"tts"));
    let refused = within(call(&bridge, "tts", json!({"text": "hi"}))).await;
    assert!(refused.is_error);
    assert!(text(&refused).starts_with("Unknown tool: tts."), "{}", text(&refused));
    assert!(setup.fake.tool_calls().is_empty());
    let never_advertised = within(call(&bridge, "no_such_tool", json!({}))).await;
    assert!(text(&never_advertised).starts_with("Unknown tool: no_such_tool."));
    // A typo of a served tool (gateway or local) names it.
    for (typo, meant) in [("sessions_lst", "sessions_list"), ("gerp", "grep")] {
        let answer = within(call(&bridge, typo, json!({}))).await;
        assert!(text(&answer).contains(&format!("Did you mean `{meant}`?")), "{}", text(&answer));
    }
    assert!(setup.fake.tool_calls().is_empty(), "nothing forwarded for a typo");
}

#[tokio::test(start_paused = true)]
async fn gateway_tools_allow_lifts_the_default_deny() {
    let setup =
        Setup::new().await.discovering().with_config(json!({"gateway": {"tools": {"allow": ["sessions_spawn"]}}}));
    setup.fake.on("tools.effective", |_| Reply::Ok(effective(&["sessions_spawn", "sessions_send"])));
    let bridge = setup.bridge().await;
    let tools = bridge.list_tools();
    assert_eq!(names(&tools)[8..], ["sessions_spawn"]);
    let spawn = &tools[8];
    assert_eq!(
        spawn.input_schema.to_value()["required"],
        json!(["task"]),
        "the bundled snapshot knows allowable tools"
    );
    assert_eq!(spawn.input_schema.to_value()["properties"]["sessionKey"]["type"], "string", "the requester overlay");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_session_falls_back_to_the_loopback_list_plus_owner_only_tools() {
    let setup = Setup::new().await.discovering().with_env("OPENCLAW_REQUESTER_SESSION_KEY", "agent:main:fresh");
    setup.fake.on("tools.effective", |_| Reply::error("INVALID_REQUEST", "unknown session key \"agent:main:fresh\""));
    let mcp = FakeLoopbackMcp::start(json!([loopback_tool("tts"), loopback_tool("sessions_send")]), "t").await;
    mcp.serve_grants(&setup.fake, "t");
    let bridge = setup.bridge().await;
    assert_eq!(names(&bridge.list_tools())[8..], ["sessions", "tts"]);
    assert_eq!(bridge.catalog().current().list_source, ListSource::Loopback);
    assert_eq!(setup.fake.wait_for_request("tools.effective", 1).await["sessionKey"], "agent:main:fresh");
}

#[tokio::test(start_paused = true)]
async fn without_the_gateway_the_regen_snapshot_then_the_bundled_one_serve() {
    let setup = Setup::new().await.discovering();
    let mcp = FakeLoopbackMcp::start(json!([loopback_tool("tts"), loopback_tool("sessions_list")]), "t").await;
    mcp.serve_grants(&setup.fake, "t");
    setup.fake.on("tools.effective", |_| Reply::Ok(effective(&["tts", "sessions_list"])));
    let path = setup.dir.path().join("data/tools-snapshot.json");
    let report = within(bridge::regen(&setup.options(), path.clone())).await.unwrap();
    assert_eq!(report.catalog.tools.len(), 2);
    let written = Snapshot::load(&path).unwrap().unwrap();
    assert_eq!(written.openclaw_version, "2026.9.6-fake");
    assert_eq!(written.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["sessions_list", "tts"]);
    assert_eq!(written.tools[1].input_schema["properties"]["live"]["type"], "string", "raw live schema");

    // A session that cannot reach any gateway serves the regen snapshot.
    let mut options = setup.options();
    options.snapshot_path = Some(path);
    options.connect.url = Some("ws://127.0.0.1:1".into());
    options.connect.token_file = Some(write_token(&setup));
    let bridge = setup.bridge_with(options.clone()).await;
    assert_eq!(names(&bridge.list_tools())[8..], ["sessions_list", "tts"]);
    assert_eq!(bridge.catalog().current().list_source, ListSource::RegenSnapshot);

    // No regen snapshot either: the bundled 2026.9.6 list, minus what the gateway denies.
    options.snapshot_path = None;
    let bridge = setup.bridge_with(options).await;
    let listed = bridge.list_tools();
    assert_eq!(bridge.catalog().current().list_source, ListSource::BundledSnapshot);
    for expected in ["sessions", "sessions_list", "session_status", "subagents", "message", "web_fetch"] {
        assert!(names(&listed).contains(&expected), "{expected}");
    }
    for denied in ["sessions_spawn", "sessions_send", "automations", "gateway", "nodes"] {
        assert!(!names(&listed).contains(&denied), "{denied}");
    }
}

#[tokio::test(start_paused = true)]
async fn regen_fails_when_the_gateway_gives_no_list() {
    let setup = Setup::new().await;
    setup.fake.on("tools.effective", |_| Reply::error("INVALID_REQUEST", "unknown session key \"agent:main:main\""));
    setup.fake.on("attach.grant", |_| Reply::error("FORBIDDEN", "missing scope: operator.admin"));
    let path = setup.dir.path().join("s.json");
    let error = within(bridge::regen(&setup.options(), path.clone())).await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("unknown session key") && message.contains("missing scope"), "{message}");
    assert!(!path.exists());
}

#[tokio::test(start_paused = true)]
async fn a_stalled_gateway_does_not_hold_the_list_beyond_the_budget() {
    let setup = Setup::new().await.discovering();
    setup.fake.on("tools.effective", |_| Reply::Stall);
    setup.fake.on("attach.grant", |_| Reply::Stall);
    let options = setup.options();
    let started = tokio::time::Instant::now();
    let bridge = setup.bridge_with(options).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5), "the discovery budget");
    assert_eq!(bridge.catalog().current().list_source, ListSource::BundledSnapshot);
    assert!(names(&bridge.list_tools()).contains(&"sessions_list"));
}

fn write_token(setup: &Setup) -> std::path::PathBuf {
    let path = setup.dir.path().join("token");
    std::fs::write(&path, bridge_support::TOKEN).unwrap();
    path
}

/// With no gateway credentials anywhere the bridge still starts: the local tools are served, no
/// gateway tool is listed, nothing is sent to the gateway, and a call of a gateway tool says why
/// it is not served (and which flags bring it). `regen` still needs credentials.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_the_local_tools_serve_and_a_gateway_tool_says_why_not() {
    let setup = Setup::new().await.discovering().with_config(json!({"gateway": {"auth": {"mode": "token"}}}));
    let mut options = setup.options();
    options.connect.url = Some(format!("ws://127.0.0.1:{}", setup.fake.addr().port()));
    let bridge = setup.bridge_with(options.clone()).await;
    assert_eq!(names(&bridge.list_tools()), LOCAL_AND_YIELD, "the local tools only");
    std::fs::write(setup.dir.path().join("note.txt"), "local works\n").unwrap();
    let read = call(&bridge, "read", json!({"path": "note.txt"})).await;
    assert!(text(&read).contains("local works"), "{}", text(&read));
    let gateway_tool = call(&bridge, "sessions_list", json!({})).await;
    assert!(gateway_tool.is_error);
    assert!(
        text(&gateway_tool).contains(
            "The gateway's tools are not served: no gateway credentials: --url was given, so credentials must be \
             explicit: pass --token/--token-file or --password/--password-file"
        ),
        "{}",
        text(&gateway_tool)
    );
    assert!(setup.fake.received().is_empty(), "nothing went to the gateway: {:?}", setup.fake.received().len());
    let regen = bridge::regen(&options, setup.dir.path().join("snapshot.json")).await.unwrap_err();
    assert!(regen.to_string().contains("no gateway credentials"), "{regen}");
}
