//! Gateway calls through `clawmcp tools` against the fake gateway: what goes on the wire
//! (requester fallback, the `agentId` rule, aliases, hoisting, the bearer), how every answer
//! becomes an MCP result, the wall-clock deadline against a stalling and a trickling gateway,
//! and cancellation aborting the HTTP request.

use crate::bridge_support;

use std::time::Duration;

use bridge_support::{Setup, TOKEN, call, call_with, json_result, text, within};
use clawmcp_mcp::{CANCELLED, CallContext, Content};
use clawmcp_testkit::{FakeAuth, FakeConfig, FakeGateway, ToolReply};
use clawmcp_tools::bridge::{self, BridgeOptions, ConnectOverrides, Env};
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

const REQUESTER: &str = "agent:main:discord:direct:integration-test";

#[tokio::test(start_paused = true)]
async fn the_requester_key_is_sent_and_scoped_keys_carry_no_agent_id() {
    let setup = Setup::new().await.with_env("OPENCLAW_REQUESTER_SESSION_KEY", REQUESTER);
    setup.tool_details("subagents", bridge_support::subagents_details(&[], &[]));
    setup.tool_details("sessions_history", json!({"messages": []}));
    let bridge = setup.bridge().await;

    let listed = within(call(&bridge, "subagents", json!({"action": "list"}))).await;
    assert!(!listed.is_error, "{}", text(&listed));
    let history = within(call(&bridge, "sessions_history", json!({"sessionKey": "agent:main:main"}))).await;
    assert!(!history.is_error);

    assert_eq!(
        setup.bodies("subagents"),
        [json!({"tool": "subagents", "args": {"action": "list"}, "sessionKey": REQUESTER})]
    );
    assert_eq!(
        setup.bodies("sessions_history"),
        [json!({"tool": "sessions_history", "args": {"sessionKey": "agent:main:main"}, "sessionKey": REQUESTER})],
        "a target sessionKey stays in args; the requester goes in the body"
    );
    let call = setup.fake.tool_calls().remove(0);
    assert_eq!(call.headers["authorization"], format!("Bearer {TOKEN}"));
}

#[tokio::test(start_paused = true)]
async fn without_a_requester_the_agent_id_is_the_system_agent() {
    let config = json!({"agents": {"ownership": "explicit", "defaults": {"systemAgent": {"agentId": "main"}}, "entries": {"main": {}, "dad": {}}}});
    let setup = Setup::new().await.with_config(config);
    setup.tool_details("subagents", bridge_support::subagents_details(&[], &[]));
    let bridge = setup.bridge().await;
    within(call(&bridge, "subagents", json!({"action": "list"}))).await;
    assert_eq!(
        setup.bodies("subagents"),
        [json!({"tool": "subagents", "args": {"action": "list"}, "agentId": "main"})]
    );
}

#[tokio::test(start_paused = true)]
async fn unscoped_keys_get_the_sole_agent() {
    let setup = Setup::new()
        .await
        .with_config(json!({"agents": {"entries": {"dad": {}}}}))
        .with_env("OPENCLAW_REQUESTER_SESSION_KEY", "discord:direct:1");
    setup.tool_details("sessions_list", json!({"count": 0, "sessions": []}));
    let bridge = setup.bridge().await;
    within(call(&bridge, "sessions_list", json!({}))).await;
    assert_eq!(
        setup.bodies("sessions_list"),
        [json!({"tool": "sessions_list", "args": {}, "sessionKey": "discord:direct:1", "agentId": "dad"})]
    );
}

#[tokio::test(start_paused = true)]
async fn aliases_are_rewritten_before_forwarding() {
    let setup = Setup::new().await.with_env("OPENCLAW_REQUESTER_SESSION_KEY", REQUESTER);
    setup.tool_details("web_search", json!({"results": []}));
    let bridge = setup.bridge().await;
    let result = within(call(&bridge, "web_search", json!({"query": "rust", "limit": 3}))).await;
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(setup.bodies("web_search")[0]["args"], json!({"query": "rust", "count": 3}));
}

#[tokio::test(start_paused = true)]
async fn results_map_like_openclaws_own_mcp_server() {
    let setup = Setup::new().await;
    let details = json!({"count": 1, "sessions": [{"key": "agent:main:main"}]});
    setup.tool_details("sessions_list", details.clone());
    setup.tool_details("sessions_search", json!({"status": "error", "error": "query required"}));
    let bridge = setup.bridge().await;

    let listed = within(call(&bridge, "sessions_list", json!({}))).await;
    assert!(!listed.is_error);
    assert_eq!(listed.content, vec![Content::Text { text: serde_json::to_string_pretty(&details).unwrap() }]);
    let failed = within(call(&bridge, "sessions_search", json!({"query": ""}))).await;
    assert!(failed.is_error, "details.status error is a tool error");
}

#[tokio::test(start_paused = true)]
async fn http_errors_and_non_json_bodies_are_clear_tool_errors() {
    let setup = Setup::new().await;
    setup.fake.on_tool("sessions_history", |_| {
        ToolReply::json(400, json!({"ok": false, "error": {"type": "tool_error", "message": "sessionKey required"}}))
    });
    setup.fake.on_tool("web_fetch", |_| ToolReply::text(502, "<html>Bad Gateway</html>"));
    setup.fake.on_tool("tts", |_| ToolReply::text(200, "OK"));
    setup.fake.on_tool("session_status", |_| {
        ToolReply::json(500, json!({"ok": false, "error": {"type": "tool_error", "message": "tool execution failed"}}))
    });
    let bridge = setup.bridge().await;

    let bad_args = within(call(&bridge, "sessions_history", json!({}))).await;
    assert!(bad_args.is_error);
    assert_eq!(text(&bad_args), "Error: sessionKey required (gateway HTTP 400 tool_error).");
    let html = within(call(&bridge, "web_fetch", json!({"url": "http://x"}))).await;
    assert!(html.is_error);
    assert!(
        text(&html).contains("HTTP 502 and a body that is not JSON (\"<html>Bad Gateway</html>\")"),
        "{}",
        text(&html)
    );
    let plain_200 = within(call(&bridge, "tts", json!({"text": "hi"}))).await;
    assert!(plain_200.is_error, "a 200 that is not the gateway's JSON is not a result");
    let internal = within(call(&bridge, "session_status", json!({}))).await;
    assert!(internal.is_error);
    assert!(text(&internal).starts_with("Error: tool execution failed (gateway HTTP 500 tool_error)"));
}

#[tokio::test(start_paused = true)]
async fn a_tool_the_gateway_does_not_serve_is_a_404_error_with_the_reason() {
    // Advertised from the snapshot, but this gateway answers 404 (its policy changed).
    let setup = Setup::new().await;
    let bridge = setup.bridge().await;
    let result = within(call(&bridge, "tts", json!({"text": "hi"}))).await;
    assert!(result.is_error);
    assert!(
        text(&result).starts_with("Error: Tool not available: tts (gateway HTTP 404 not_found)."),
        "{}",
        text(&result)
    );
    assert!(text(&result).contains("gateway.tools.deny"));
}

#[tokio::test(start_paused = true)]
async fn a_wrong_token_is_a_401_naming_where_the_secret_comes_from() {
    let setup = Setup::new().await.with_config(json!({"gateway": {"auth": {"mode": "token", "token": "wrong"}}}));
    let bridge = setup.bridge().await;
    let result = within(call(&bridge, "sessions_list", json!({}))).await;
    assert!(result.is_error);
    assert!(text(&result).starts_with("Error: Unauthorized (gateway HTTP 401 unauthorized)."), "{}", text(&result));
    assert!(text(&result).contains("OPENCLAW_GATEWAY_TOKEN"));
    assert!(setup.fake.tool_calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn password_mode_sends_the_password_as_the_bearer() {
    let fake =
        FakeGateway::start_with(FakeConfig { auth: FakeAuth::Password("pw-123".into()), ..FakeConfig::default() })
            .await;
    fake.on_tool("sessions_list", |_| ToolReply::ok(json_result(&json!({"count": 0}))));
    let setup = Setup { fake, ..Setup::new().await }
        .with_config(json!({"gateway": {"auth": {"mode": "password", "password": "pw-123"}}}))
        .with_env("OPENCLAW_GATEWAY_TOKEN", "not-the-password");
    let bridge = setup.bridge().await;
    let result = within(call(&bridge, "sessions_list", json!({}))).await;
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(setup.fake.tool_calls()[0].headers["authorization"], "Bearer pw-123");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_a_call_the_gateway_accepted_and_stalls() {
    let setup = Setup::new().await.with_env("OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS", "100");
    setup.fake.on_tool("sessions_list", |_| ToolReply::Stall);
    let bridge = setup.bridge().await;
    let started = tokio::time::Instant::now();
    let result = within(call(&bridge, "sessions_list", json!({}))).await;
    assert!(result.is_error);
    assert!(text(&result).starts_with("Gateway request timed out after 100ms: sessions_list."), "{}", text(&result));
    assert_eq!(started.elapsed(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_also_ends_a_trickling_answer() {
    let setup = Setup::new().await.with_env("OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS", "5000");
    setup.fake.on_tool("sessions_list", |_| ToolReply::Trickle {
        status: 200,
        chunk: " ".into(),
        interval: Duration::from_millis(500),
    });
    let bridge = setup.bridge().await;
    let started = tokio::time::Instant::now();
    let result = within(call(&bridge, "sessions_list", json!({}))).await;
    assert!(text(&result).starts_with("Gateway request timed out after 5000ms"), "{}", text(&result));
    assert_eq!(started.elapsed(), Duration::from_secs(5), "bytes arriving do not extend the deadline");
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_call_aborts_the_http_request() {
    // A bare TCP "gateway" that reads the request, never answers, and reports when the client
    // hangs up: the proof that cancellation closes the connection rather than leaving it open.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let (received_tx, received) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let (mut seen, mut buffer) = (Vec::new(), vec![0u8; 64 * 1024]);
        while !String::from_utf8_lossy(&seen).contains("sessions_list") {
            let n = socket.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the client hung up before sending its request");
            seen.extend_from_slice(&buffer[..n]);
        }
        received_tx.send(()).unwrap();
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    });
    let setup = Setup::new().await.with_env("OPENCLAW_GATEWAY_PORT", &port);
    let bridge = setup.bridge().await;
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let pending = tokio::spawn({
        let bridge = bridge.clone();
        async move { call_with(&bridge, "sessions_list", json!({}), ctx).await }
    });
    within(received).await.unwrap();
    cancel.cancel();
    let result = within(pending).await.unwrap();
    assert!(result.is_error);
    assert_eq!(text(&result), CANCELLED);
    within(server).await.expect("the gateway saw the connection close");
}

#[tokio::test(start_paused = true)]
async fn a_stopped_gateway_is_a_transport_error_that_says_so() {
    let setup = Setup::new().await;
    let bridge = setup.bridge().await;
    let port = setup.fake.addr().port();
    drop(setup.fake);
    let result = within(call(&bridge, "sessions_list", json!({}))).await;
    assert!(result.is_error);
    assert!(text(&result).contains(&format!("127.0.0.1:{port}")), "{}", text(&result));
    assert!(text(&result).contains("Is the OpenClaw gateway running"), "{}", text(&result));
}

#[tokio::test(start_paused = true)]
async fn a_json5_openclaw_json_under_openclaw_home_is_read_like_openclaw_reads_it() {
    let setup = Setup::new().await;
    setup.tool_details("sessions_list", json!({"count": 0}));
    let home = setup.dir.path().join("openclaw-home");
    std::fs::create_dir_all(&home).unwrap();
    let json5 = format!(
        "// written by hand, as OpenClaw allows\n{{\n  gateway: {{ port: {}, auth: {{ mode: 'token', token: '{TOKEN}', }}, }},\n  \
         agents: {{ entries: {{ ops: {{}}, }} }},\n}}\n",
        setup.fake.addr().port()
    );
    std::fs::write(home.join("openclaw.json"), json5).unwrap();
    let env = Env::from_pairs([
        ("HOME", setup.dir.path().join("user").display().to_string()),
        ("OPENCLAW_HOME", home.display().to_string()),
    ]);
    let mut options = BridgeOptions::new(ConnectOverrides::default(), env, setup.dir.path().into());
    options.discover = false;
    let prepared = bridge::prepare(&options).unwrap();
    assert_eq!(prepared.settings.workspace, home.join("workspace"));
    let result = within(call(&prepared.bridge, "sessions_list", json!({}))).await;
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(setup.bodies("sessions_list"), [json!({"tool": "sessions_list", "args": {}, "agentId": "ops"})]);
    assert_eq!(setup.fake.tool_calls()[0].headers["authorization"], format!("Bearer {TOKEN}"));
}
