//! The dispatcher's protocol rules, driven with a fake service and no transport: the
//! conformance checklist of the upstream bridge tests (reference windows-node-mcp.md §7.1)
//! plus the cancellation races of §7.4 as seen through whole messages.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawmcp_mcp::{
    CallContext, DuplicatePolicy, FrameSink, McpServer, McpService, RequestContext, RpcError, ServerInfo, Tool,
    ToolAnnotations, ToolResult, permissive_schema,
};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A service whose tools exercise every dispatcher path.
#[derive(Default)]
struct Fake {
    tools: Mutex<Vec<&'static str>>,
    executed: AtomicUsize,
    /// Signalled when `wait` starts, so tests cancel a call that is really in flight.
    started: Notify,
    /// Set when a `wait` call saw its cancel token fire (its "work" stopped).
    stopped: AtomicUsize,
}

impl Fake {
    fn with_tools(names: &[&'static str]) -> Arc<Self> {
        let fake = Fake::default();
        *fake.tools.lock().unwrap() = names.to_vec();
        Arc::new(fake)
    }
}

impl McpService for Fake {
    fn list_tools(&self) -> Vec<Tool> {
        self.tools
            .lock()
            .unwrap()
            .iter()
            .map(|name| Tool {
                name: name.to_string(),
                description: format!("{name} tool"),
                input_schema: permissive_schema(),
                annotations: Some(ToolAnnotations::READ_ONLY),
            })
            .collect()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Map<String, Value>, ctx: CallContext) -> BoxFuture<'a, ToolResult> {
        async move {
            self.executed.fetch_add(1, Ordering::SeqCst);
            match name {
                "echo" => ToolResult::json(&Value::Object(args)),
                "fail" => ToolResult::error("kaboom"),
                "panic" => panic!("secret internal detail"),
                "wait" => {
                    self.started.notify_one();
                    ctx.cancel.cancelled().await;
                    self.stopped.fetch_add(1, Ordering::SeqCst);
                    ToolResult::text("stopped")
                }
                "self_cancelled" => {
                    self.started.notify_one();
                    ctx.cancel.cancelled().await;
                    ToolResult::error("cancelled")
                }
                "progress" => {
                    if let Some(progress) = &ctx.progress {
                        progress.report(1.0, Some(2.0), Some("half"));
                        progress.report(2.0, Some(2.0), None);
                    }
                    ToolResult::text("done")
                }
                other => ToolResult::error(format!("Unknown tool: {other}")),
            }
        }
        .boxed()
    }

    fn custom_request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> Option<BoxFuture<'a, Result<Value, RpcError>>> {
        (method == "local/echo").then(|| async move { Ok(params.unwrap_or(Value::Null)) }.boxed())
    }
}

fn server(fake: Arc<Fake>) -> Arc<McpServer<Fake>> {
    Arc::new(McpServer::new(
        ServerInfo { name: "test-server".into(), version: "9.9.9".into() },
        fake,
        DuplicatePolicy::Allow,
    ))
}

fn ctx() -> RequestContext {
    RequestContext::new(CancellationToken::new())
}

async fn call(server: &McpServer<Fake>, body: Value) -> Value {
    let frame = server.handle(body.to_string().as_bytes(), ctx()).await.expect("a request gets a response");
    serde_json::from_str(&frame).unwrap()
}

async fn raw(server: &McpServer<Fake>, body: &str) -> Option<String> {
    server.handle(body.as_bytes(), ctx()).await
}

fn tool_call(id: Value, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn initialize_reports_protocol_capabilities_and_server_info() {
    let server = server(Fake::with_tools(&[]));
    let response =
        call(&server, json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}))
            .await;
    assert_eq!(
        response["result"],
        json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "test-server", "version": "9.9.9"}
        })
    );
}

#[tokio::test]
async fn ping_answers_an_empty_object() {
    let server = server(Fake::with_tools(&[]));
    assert_eq!(call(&server, json!({"jsonrpc":"2.0","id":"p","method":"ping"})).await["result"], json!({}));
}

#[tokio::test]
async fn tools_list_rereads_the_live_service() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let first = call(&server, json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})).await;
    assert_eq!(names(&first), ["echo"]);
    assert_eq!(first["result"]["tools"][0]["inputSchema"]["type"], "object");
    fake.tools.lock().unwrap().push("fail");
    let second = call(&server, json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    assert_eq!(names(&second), ["echo", "fail"]);
}

#[tokio::test]
async fn tools_call_returns_compact_json_text() {
    let server = server(Fake::with_tools(&["echo"]));
    let response = call(&server, tool_call(json!(1), "echo", json!({"a": [1, 2]}))).await;
    assert_eq!(response["result"]["isError"], false);
    assert_eq!(response["result"]["content"][0]["type"], "text");
    assert_eq!(text_of(&response), r#"{"a":[1,2]}"#);
}

#[tokio::test]
async fn tool_failures_are_results_not_jsonrpc_errors() {
    let server = server(Fake::with_tools(&["fail"]));
    let failed = call(&server, tool_call(json!(1), "fail", json!({}))).await;
    assert_eq!((failed["result"]["isError"].as_bool(), text_of(&failed)), (Some(true), "kaboom"));
    assert!(failed.get("error").is_none());
    let unknown = call(&server, tool_call(json!(2), "nope", json!({}))).await;
    assert_eq!((unknown["result"]["isError"].as_bool(), text_of(&unknown)), (Some(true), "Unknown tool: nope"));
}

#[tokio::test]
async fn malformed_call_params_are_tool_errors() {
    let server = server(Fake::with_tools(&["echo"]));
    let cases = [
        (json!({"jsonrpc":"2.0","id":1,"method":"tools/call"}), "Invalid params: expected object"),
        (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}), "Invalid params: expected object"),
        (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":42}}), "Missing 'name'"),
        (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"  "}}), "Empty tool name"),
        (
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}),
            "'arguments' must be a JSON object if present",
        ),
    ];
    for (body, message) in cases {
        let response = call(&server, body.clone()).await;
        assert_eq!(response["result"]["isError"], true, "{body}");
        assert_eq!(text_of(&response), message, "{body}");
    }
}

#[tokio::test]
async fn null_arguments_are_accepted() {
    let server = server(Fake::with_tools(&["echo"]));
    let response = call(&server, tool_call(json!(1), "echo", Value::Null)).await;
    assert_eq!((response["result"]["isError"].as_bool(), text_of(&response)), (Some(false), "{}"));
}

#[tokio::test]
async fn a_tools_call_notification_still_runs_but_gets_no_answer() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    let body = json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}).to_string();
    assert_eq!(raw(&server, &body).await, None);
    assert_eq!(fake.executed.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn panicking_tool_is_a_generic_internal_error() {
    let server = server(Fake::with_tools(&["panic"]));
    let response = call(&server, tool_call(json!(1), "panic", json!({}))).await;
    assert_eq!(response["error"], json!({"code": -32603, "message": "internal error"}));
    assert!(!response.to_string().contains("secret"));
}

#[tokio::test]
async fn unknown_methods_and_discovery_probes_get_method_not_found() {
    let server = server(Fake::with_tools(&[]));
    for method in ["nonsense", "server/discover", "logging/setLevel", "completion/complete"] {
        let response = call(&server, json!({"jsonrpc":"2.0","id":1,"method":method})).await;
        assert_eq!(response["error"]["code"], -32601, "{method}");
        assert_eq!(response["error"]["message"], format!("Method not found: {method}"));
    }
    // The server keeps working after a probe.
    assert_eq!(call(&server, json!({"jsonrpc":"2.0","id":2,"method":"ping"})).await["result"], json!({}));
}

#[tokio::test]
async fn compatibility_lists_are_empty() {
    let server = server(Fake::with_tools(&[]));
    let resources = call(&server, json!({"jsonrpc":"2.0","id":1,"method":"resources/list"})).await;
    assert_eq!(resources["result"], json!({"resources": []}));
    let prompts = call(&server, json!({"jsonrpc":"2.0","id":2,"method":"prompts/list"})).await;
    assert_eq!(prompts["result"], json!({"prompts": []}));
    let templates = call(&server, json!({"jsonrpc":"2.0","id":3,"method":"resources/templates/list"})).await;
    assert_eq!(templates["result"], json!({"resourceTemplates": []}));
}

#[tokio::test]
async fn notifications_get_no_body_and_with_an_id_get_an_empty_result() {
    let server = server(Fake::with_tools(&[]));
    assert_eq!(raw(&server, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await, None);
    assert_eq!(raw(&server, r#"{"jsonrpc":"2.0","method":"some/unknown"}"#).await, None);
    let with_id = call(&server, json!({"jsonrpc":"2.0","id":5,"method":"notifications/initialized"})).await;
    assert_eq!(with_id["result"], json!({}));
}

#[tokio::test]
async fn parse_errors_and_invalid_roots() {
    let server = server(Fake::with_tools(&[]));
    let garbage: Value = serde_json::from_str(&raw(&server, "}{").await.unwrap()).unwrap();
    assert_eq!((garbage["id"].clone(), garbage["error"]["code"].clone()), (Value::Null, json!(-32700)));
    let array: Value = serde_json::from_str(&raw(&server, "[1,2,3]").await.unwrap()).unwrap();
    assert_eq!((array["id"].clone(), array["error"]["code"].clone()), (Value::Null, json!(-32600)));
}

#[tokio::test]
async fn ids_round_trip_exactly() {
    let server = server(Fake::with_tools(&[]));
    for id in ["1.5", "99999999999999999999", "\"s-1\"", "0"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let frame = raw(&server, &body).await.unwrap();
        assert!(frame.contains(&format!(r#""id":{id}"#)), "{frame}");
    }
}

#[tokio::test]
async fn custom_requests_route_to_the_service() {
    let server = server(Fake::with_tools(&[]));
    let response = call(&server, json!({"jsonrpc":"2.0","id":1,"method":"local/echo","params":{"x":1}})).await;
    assert_eq!(response["result"], json!({"x": 1}));
}

/// Starts `wait` with the given raw id and returns the pending response.
async fn start_wait(server: &Arc<McpServer<Fake>>, fake: &Fake, id: &str) -> tokio::task::JoinHandle<Value> {
    let started = fake.started.notified();
    let server = server.clone();
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"wait"}}}}"#);
    let handle =
        tokio::spawn(
            async move { serde_json::from_str(&server.handle(body.as_bytes(), ctx()).await.unwrap()).unwrap() },
        );
    started.await;
    handle
}

async fn cancel(server: &McpServer<Fake>, request_id: &str) {
    let body =
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{request_id}}}}}"#);
    assert_eq!(raw(server, &body).await, None, "a cancellation notification gets no body");
}

#[tokio::test]
async fn cancellation_stops_the_tool_and_answers_cancelled() {
    let fake = Fake::with_tools(&["wait"]);
    let server = server(fake.clone());
    let pending = start_wait(&server, &fake, "7").await;
    cancel(&server, "7").await;
    let response = pending.await.unwrap();
    assert_eq!((response["result"]["isError"].as_bool(), text_of(&response)), (Some(true), "cancelled"));
    assert_eq!(fake.stopped.load(Ordering::SeqCst), 1, "the tool saw its cancel token before the answer");
}

#[tokio::test]
async fn cancellation_matches_equivalent_ids() {
    for (sent, cancelled) in
        [("100", "1.0e2"), (r#""request""#, r#""\u0072equest""#), ("99999999999999999999", "99999999999999999999")]
    {
        let fake = Fake::with_tools(&["wait"]);
        let server = server(fake.clone());
        let pending = start_wait(&server, &fake, sent).await;
        cancel(&server, cancelled).await;
        assert_eq!(text_of(&pending.await.unwrap()), "cancelled", "{sent} vs {cancelled}");
    }
}

#[tokio::test]
async fn string_and_number_ids_never_cancel_each_other() {
    let fake = Fake::with_tools(&["wait"]);
    let server = server(fake.clone());
    let pending = start_wait(&server, &fake, "42").await;
    cancel(&server, r#""42""#).await;
    tokio::task::yield_now().await;
    assert!(!pending.is_finished());
    cancel(&server, "42").await;
    assert_eq!(text_of(&pending.await.unwrap()), "cancelled");
}

#[tokio::test]
async fn duplicate_active_ids_are_not_cross_cancelled() {
    let fake = Fake::with_tools(&["wait"]);
    let server = server(fake.clone());
    let first = start_wait(&server, &fake, "1").await;
    let second = start_wait(&server, &fake, "1").await;
    cancel(&server, "1").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!first.is_finished() && !second.is_finished(), "an ambiguous cancel cancels nothing");
    assert_eq!(fake.stopped.load(Ordering::SeqCst), 0);
    first.abort();
    second.abort();
}

#[tokio::test]
async fn a_cancel_that_overtakes_its_call_cancels_it_before_it_runs() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    cancel(&server, "3").await;
    let response = call(&server, tool_call(json!(3), "echo", json!({}))).await;
    assert_eq!(text_of(&response), "cancelled");
    assert_eq!(fake.executed.load(Ordering::SeqCst), 0, "the tool never ran");
    // The tombstone was consumed: the same id runs normally next time.
    let again = call(&server, tool_call(json!(3), "echo", json!({}))).await;
    assert_eq!(again["result"]["isError"], false);
}

#[tokio::test]
async fn a_tombstone_wins_over_an_already_cancelled_transport() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    cancel(&server, "4").await;
    let transport = CancellationToken::new();
    transport.cancel();
    let body = tool_call(json!(4), "echo", json!({})).to_string();
    let frame = server.handle(body.as_bytes(), RequestContext::new(transport)).await.unwrap();
    let response: Value = serde_json::from_str(&frame).unwrap();
    assert_eq!(text_of(&response), "cancelled");
}

#[tokio::test]
async fn a_late_cancel_does_not_poison_id_reuse() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    call(&server, tool_call(json!(9), "echo", json!({}))).await;
    cancel(&server, "9").await;
    let reused = call(&server, tool_call(json!(9), "echo", json!({}))).await;
    assert_eq!(reused["result"]["isError"], false);
}

#[tokio::test]
async fn cancelling_an_unknown_request_is_harmless() {
    let server = server(Fake::with_tools(&[]));
    cancel(&server, "12345").await;
    assert_eq!(raw(&server, r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#).await, None);
    assert_eq!(raw(&server, r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#).await, None);
}

#[tokio::test]
async fn transport_deadline_is_reported_as_timed_out() {
    let fake = Fake::with_tools(&["wait", "self_cancelled"]);
    let server = server(fake.clone());
    for tool in ["wait", "self_cancelled"] {
        let transport = CancellationToken::new();
        let started = fake.started.notified();
        let server2 = server.clone();
        let transport2 = transport.clone();
        let body = tool_call(json!(1), tool, json!({})).to_string();
        let pending = tokio::spawn(async move {
            let frame = server2.handle(body.as_bytes(), RequestContext::new(transport2)).await.unwrap();
            serde_json::from_str::<Value>(&frame).unwrap()
        });
        started.await;
        transport.cancel();
        let response = pending.await.unwrap();
        assert_eq!(text_of(&response), "request timed out", "{tool}");
    }
}

struct Collect(Mutex<Vec<String>>);

impl FrameSink for Collect {
    fn try_send(&self, frame: String) -> bool {
        self.0.lock().unwrap().push(frame);
        true
    }
}

#[tokio::test]
async fn progress_is_sent_only_for_requests_with_a_progress_token() {
    let server = server(Fake::with_tools(&["progress"]));
    let sink = Arc::new(Collect(Mutex::new(Vec::new())));
    let mut context = ctx();
    context.sink = Some(sink.clone());

    let without = tool_call(json!(1), "progress", json!({})).to_string();
    server.handle(without.as_bytes(), context.clone()).await.unwrap();
    assert!(sink.0.lock().unwrap().is_empty(), "no token, no progress");

    let with = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"progress","arguments":{},"_meta":{"progressToken":"tok-1"}}})
    .to_string();
    server.handle(with.as_bytes(), context).await.unwrap();
    let frames: Vec<Value> = sink.0.lock().unwrap().iter().map(|f| serde_json::from_str(f).unwrap()).collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0]["method"], "notifications/progress");
    assert_eq!(frames[0]["params"], json!({"progressToken":"tok-1","progress":1.0,"total":2.0,"message":"half"}));
}
