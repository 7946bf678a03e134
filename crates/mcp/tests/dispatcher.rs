//! The dispatcher's protocol rules, driven with a fake service and no transport: the
//! conformance checklist of the upstream tray's MCP tests, the cancellation races of
//! `docs/node-http.md` §9 as seen through whole messages, and the progress heartbeat
//! of long calls (issue 5) under a paused clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use clawmcp_mcp::server::PROGRESS_INTERVAL;
use clawmcp_mcp::{
    CallContext, DuplicatePolicy, FrameSink, McpServer, McpService, RequestContext, RpcError, ServerInfo, Tool,
    ToolAnnotations, ToolResult, permissive_schema,
};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;
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
    /// What each `report_steps` report returned (sent or refused), in order.
    step_outcomes: Mutex<Vec<bool>>,
    /// Whether `leak_progress`'s left-behind report was sent, once it has run.
    late_report: Arc<Mutex<Option<bool>>>,
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
                title: None,
                output_schema: None,
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
                "structured" => {
                    ToolResult { structured_content: Some(json!({"a": 1})), ..ToolResult::json(&json!({"a": 1})) }
                }
                "sized" => {
                    // A text of exactly `bytes` characters that JSON does not escape.
                    let bytes = args.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
                    ToolResult::text("x".repeat(bytes))
                }
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
                "sleep" => {
                    // A quiet long call (a wait, a child process): reports nothing itself.
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    ToolResult::text("slept")
                }
                "report_steps" => {
                    // `steps`: [[at_ms, value], ...] reported at those offsets from the start;
                    // then runs until `end_ms`.
                    let start = Instant::now();
                    let steps = args.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
                    for step in steps {
                        let (at, value) = (step[0].as_u64().unwrap(), step[1].as_f64().unwrap());
                        tokio::time::sleep_until(start + Duration::from_millis(at)).await;
                        let sent = ctx.progress.as_ref().is_some_and(|p| p.report(value, None, Some("step")));
                        self.step_outcomes.lock().unwrap().push(sent);
                    }
                    let end = args.get("end_ms").and_then(Value::as_u64).unwrap_or(0);
                    tokio::time::sleep_until(start + Duration::from_millis(end)).await;
                    ToolResult::text("stepped")
                }
                "leak_progress" => {
                    // A tool that leaves a task behind holding its progress handle: whatever
                    // that task reports after the answer must not reach the client.
                    let progress = ctx.progress.clone().expect("called with a progress token");
                    let outcome = self.late_report.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        *outcome.lock().unwrap() = Some(progress.report(100.0, None, Some("late")));
                    });
                    ToolResult::text("returned")
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
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "test-server", "version": "9.9.9"}
        })
    );
}

#[tokio::test]
async fn server_icons_go_only_to_clients_of_2025_11_25_and_later() {
    let icon = clawmcp_mcp::Icon::clawmcp();
    let server = Arc::new(
        McpServer::new(
            ServerInfo { name: "test-server".into(), version: "9.9.9".into() },
            Fake::with_tools(&[]),
            DuplicatePolicy::Allow,
        )
        .with_icons(vec![icon.clone()]),
    );
    let initialize =
        |version: &str| json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion": version}});
    let newest = call(&server, initialize("2025-11-25")).await;
    assert_eq!(
        newest["result"]["serverInfo"],
        json!({"name": "test-server", "version": "9.9.9",
            "icons": [{"src": icon.src, "mimeType": "image/svg+xml", "sizes": ["any"]}]})
    );
    let src = newest["result"]["serverInfo"]["icons"][0]["src"].as_str().unwrap();
    let svg = base64::engine::general_purpose::STANDARD
        .decode(src.strip_prefix("data:image/svg+xml;base64,").expect("an embedded SVG"))
        .unwrap();
    assert!(String::from_utf8(svg).unwrap().starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    for older in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let answer = call(&server, initialize(older)).await;
        assert_eq!(answer["result"]["serverInfo"], json!({"name": "test-server", "version": "9.9.9"}), "{older}");
    }
    let discover = json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta": modern_meta()}});
    let discovered = call(&server, discover).await;
    assert_eq!(discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["icons"][0]["src"], json!(icon.src));
    let listed = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": modern_meta()}});
    let listed = call(&server, listed).await;
    assert_eq!(
        listed["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "test-server", "version": "9.9.9"}),
        "the icon goes once, in discover, not in every stateless result"
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

/// No tool can send more than MAX_TOOL_RESULT_BYTES encoded: the result at the limit goes out
/// whole, one byte more is replaced by an error that says what happened and what to do.
#[tokio::test]
async fn a_result_past_the_encoded_limit_becomes_a_clear_error() {
    use clawmcp_mcp::server::MAX_TOOL_RESULT_BYTES;
    let server = server(Fake::with_tools(&["sized"]));
    let overhead = r#"{"content":[{"type":"text","text":""}],"isError":false}"#.len();
    let at_limit = (MAX_TOOL_RESULT_BYTES - overhead) as u64;
    let response = call(&server, tool_call(json!(1), "sized", json!({"bytes": at_limit}))).await;
    assert_eq!(response["result"]["isError"], false);
    assert_eq!(text_of(&response).len() as u64, at_limit);
    let response = call(&server, tool_call(json!(2), "sized", json!({"bytes": at_limit + 1}))).await;
    assert_eq!(response["result"]["isError"], true);
    let message = text_of(&response);
    assert!(message.contains("The result of sized was") && message.contains("Ask for less"), "{message}");
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

/// A `tools/call` for `echo` whose `arguments.a` holds `arrays` nested arrays: nesting level
/// `arrays + 2` counted from `params`.
fn nested_call(arrays: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(arrays),
        "]".repeat(arrays)
    )
}

#[tokio::test]
async fn arguments_past_the_depth_limit_are_a_precise_tool_error_and_the_tool_never_runs() {
    use clawmcp_mcp::params::MAX_DEPTH;
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    let at_limit: Value = serde_json::from_str(&raw(&server, &nested_call(MAX_DEPTH - 2)).await.unwrap()).unwrap();
    assert_eq!(at_limit["result"]["isError"], false, "{MAX_DEPTH} levels are accepted");
    assert_eq!(fake.executed.load(Ordering::SeqCst), 1);

    let past: Value = serde_json::from_str(&raw(&server, &nested_call(MAX_DEPTH - 1)).await.unwrap()).unwrap();
    assert_eq!(past["result"]["isError"], true);
    assert_eq!(
        text_of(&past),
        "Invalid params: params.arguments.a[0][0][0][0][0][0]… is nested deeper than 127 levels of arrays and \
         objects (the JSON parser's limit); send a flatter structure"
    );
    assert_eq!(fake.executed.load(Ordering::SeqCst), 1, "the refused call never ran");
    // Far past the limit (the envelope itself is read without recursion): the same answer.
    let far: Value = serde_json::from_str(&raw(&server, &nested_call(100_000)).await.unwrap()).unwrap();
    assert_eq!(text_of(&far), text_of(&past));
}

#[tokio::test]
async fn an_out_of_range_number_in_arguments_is_a_precise_tool_error() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":[1,1e400]}}}"#;
    let response: Value = serde_json::from_str(&raw(&server, body).await.unwrap()).unwrap();
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(
        text_of(&response),
        "Invalid params: the number 1e400 at params.arguments.n[1] is out of range: numbers must fit in a 64-bit \
         float (magnitude at most 1.7976931348623157e308); send it as a string instead"
    );
    assert_eq!(fake.executed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn undecodable_params_of_other_methods_are_invalid_params_errors() {
    let server = server(Fake::with_tools(&[]));
    for method in ["initialize", "local/echo"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{{"x":-2e999}}}}"#);
        let response: Value = serde_json::from_str(&raw(&server, &body).await.unwrap()).unwrap();
        assert_eq!(response["id"], 7, "{method}");
        assert_eq!(response["error"]["code"], -32602, "{method}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Invalid params: the number -2e999 at params.x is out of range"), "{message}");
    }
    // A notification is never answered, whatever its params.
    let note =
        format!(r#"{{"jsonrpc":"2.0","method":"some/unknown","params":{}0{}}}"#, "[".repeat(200), "]".repeat(200));
    assert_eq!(raw(&server, &note).await, None);
}

#[tokio::test]
async fn a_request_without_jsonrpc_is_refused_and_a_notification_without_it_is_dropped() {
    let fake = Fake::with_tools(&["echo"]);
    let server = server(fake.clone());
    let response = call(&server, json!({"id": 1, "method": "tools/call", "params": {"name": "echo"}})).await;
    assert_eq!(response["id"], 1);
    assert_eq!(response["error"]["code"], -32600);
    assert_eq!(
        response["error"]["message"],
        r#"Invalid Request: the "jsonrpc" member is missing; every JSON-RPC 2.0 message must carry "jsonrpc": "2.0""#
    );
    assert_eq!(raw(&server, r#"{"method":"tools/call","params":{"name":"echo"}}"#).await, None);
    assert_eq!(fake.executed.load(Ordering::SeqCst), 0, "neither ran the tool");
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
async fn unknown_methods_and_optional_probes_get_method_not_found() {
    let server = server(Fake::with_tools(&[]));
    for method in ["nonsense", "logging/setLevel", "completion/complete"] {
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

/// A sink that records every frame with the (paused) time it was sent.
#[derive(Default)]
struct Collect(Mutex<Vec<(Instant, String)>>);

impl FrameSink for Collect {
    fn try_send(&self, frame: String) -> bool {
        self.0.lock().unwrap().push((Instant::now(), frame));
        true
    }
}

impl Collect {
    fn frames(&self) -> Vec<Value> {
        self.0.lock().unwrap().iter().map(|(_, f)| serde_json::from_str(f).unwrap()).collect()
    }

    /// `(offset from start, progress, message)` of every progress notification.
    fn progress_since(&self, start: Instant) -> Vec<(Duration, f64, String)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(at, frame)| {
                let frame: Value = serde_json::from_str(frame).unwrap();
                assert_eq!(frame["method"], "notifications/progress", "{frame}");
                let params = &frame["params"];
                (*at - start, params["progress"].as_f64().unwrap(), params["message"].as_str().unwrap().to_owned())
            })
            .collect()
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// A context whose transport carries notifications into `sink`.
fn streaming_ctx(sink: &Arc<Collect>) -> RequestContext {
    let mut context = ctx();
    context.sink = Some(sink.clone());
    context
}

/// A `tools/call` request carrying `_meta.progressToken`.
fn call_with_token(id: Value, name: &str, arguments: Value, token: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}})
    .to_string()
}

async fn handle_streaming(server: &McpServer<Fake>, sink: &Arc<Collect>, body: String) -> Value {
    serde_json::from_str(&server.handle(body.as_bytes(), streaming_ctx(sink)).await.unwrap()).unwrap()
}

fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[tokio::test]
async fn progress_is_sent_only_for_requests_with_a_progress_token() {
    let server = server(Fake::with_tools(&["progress"]));
    let sink = Arc::new(Collect::default());

    let without = tool_call(json!(1), "progress", json!({})).to_string();
    server.handle(without.as_bytes(), streaming_ctx(&sink)).await.unwrap();
    assert_eq!(sink.len(), 0, "no token, no progress");

    handle_streaming(&server, &sink, call_with_token(json!(2), "progress", json!({}), json!("tok-1"))).await;
    let frames = sink.frames();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0]["method"], "notifications/progress");
    assert_eq!(frames[0]["params"], json!({"progressToken":"tok-1","progress":1.0,"total":2.0,"message":"half"}));
}

#[tokio::test(start_paused = true)]
async fn a_quiet_long_call_gets_a_heartbeat_every_interval() {
    let server = server(Fake::with_tools(&["sleep"]));
    let sink = Arc::new(Collect::default());
    let interval = PROGRESS_INTERVAL.as_millis() as u64;
    let start = Instant::now();
    let body = call_with_token(json!(1), "sleep", json!({"ms": 3 * interval + 1}), json!(77));
    let response = handle_streaming(&server, &sink, body).await;
    assert_eq!(text_of(&response), "slept");
    let secs = PROGRESS_INTERVAL.as_secs();
    assert_eq!(
        sink.progress_since(start),
        [1, 2, 3].map(|n| (PROGRESS_INTERVAL * n, f64::from(n), format!("running for {} s", secs * u64::from(n)))),
        "one heartbeat per quiet interval, values 1, 2, 3"
    );
    assert!(sink.frames().iter().all(|f| f["params"]["progressToken"] == 77), "the client's own token, as sent");
}

#[tokio::test(start_paused = true)]
async fn a_call_of_exactly_one_interval_gets_no_heartbeat_and_one_ms_longer_gets_one() {
    let server = server(Fake::with_tools(&["sleep"]));
    let interval = PROGRESS_INTERVAL.as_millis() as u64;
    for (ms, expected) in [(interval, 0), (interval + 1, 1)] {
        let sink = Arc::new(Collect::default());
        let body = call_with_token(json!(1), "sleep", json!({"ms": ms}), json!("t"));
        handle_streaming(&server, &sink, body).await;
        assert_eq!(sink.len(), expected, "a call of {ms} ms");
    }
}

#[tokio::test(start_paused = true)]
async fn no_token_means_no_heartbeat_however_long_the_call() {
    let server = server(Fake::with_tools(&["sleep"]));
    let sink = Arc::new(Collect::default());
    let long = json!({"ms": 10 * PROGRESS_INTERVAL.as_millis() as u64});
    let response = handle_streaming(&server, &sink, tool_call(json!(1), "sleep", long.clone()).to_string()).await;
    assert_eq!(text_of(&response), "slept");
    // A token MCP does not allow (an object, null) is no token either.
    for token in [json!({"x": 1}), Value::Null] {
        handle_streaming(&server, &sink, call_with_token(json!(2), "sleep", long.clone(), token)).await;
    }
    // A tools/call notification runs but is never answered: no progress for it either.
    let notification = json!({"jsonrpc": "2.0", "method": "tools/call",
        "params": {"name": "sleep", "arguments": long, "_meta": {"progressToken": "t"}}});
    assert_eq!(server.handle(notification.to_string().as_bytes(), streaming_ctx(&sink)).await, None);
    assert_eq!(sink.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn tool_reports_and_heartbeats_share_one_increasing_sequence() {
    let fake = Fake::with_tools(&["report_steps"]);
    let server = server(fake.clone());
    let sink = Arc::new(Collect::default());
    let interval = PROGRESS_INTERVAL.as_millis() as u64;
    // The tool reports 0.5 at 1 s, stays quiet past one interval (heartbeat: 1), then reports
    // 1.0 (not above 1: refused) and 2.5 (sent), then stays quiet again until the end.
    let steps = json!([[1000, 0.5], [interval + 2000, 1.0], [interval + 3000, 2.5]]);
    let end = 2 * interval + 3001;
    let start = Instant::now();
    let body = call_with_token(json!(1), "report_steps", json!({"steps": steps, "end_ms": end}), json!("t"));
    assert_eq!(text_of(&handle_streaming(&server, &sink, body).await), "stepped");

    let heartbeat = |at: u64, value: f64| (millis(at), value, format!("running for {} s", at / 1000));
    assert_eq!(
        sink.progress_since(start),
        [
            (millis(1000), 0.5, "step".to_owned()),
            // Measured from the tool's last report, not from the start.
            heartbeat(interval + 1000, 1.0),
            (millis(interval + 3000), 2.5, "step".to_owned()),
            heartbeat(2 * interval + 3000, 3.0),
        ]
    );
    assert_eq!(*fake.step_outcomes.lock().unwrap(), [true, false, true], "the report not above 1 was refused");
}

#[tokio::test(start_paused = true)]
async fn nothing_is_sent_after_the_answer() {
    let fake = Fake::with_tools(&["leak_progress", "sleep"]);
    let server = server(fake.clone());
    let sink = Arc::new(Collect::default());
    let response =
        handle_streaming(&server, &sink, call_with_token(json!(1), "leak_progress", json!({}), json!("t"))).await;
    assert_eq!(text_of(&response), "returned");
    tokio::time::sleep(3 * PROGRESS_INTERVAL).await;
    assert_eq!(*fake.late_report.lock().unwrap(), Some(false), "the left-behind report ran and was refused");
    assert_eq!(sink.len(), 0, "neither the tool's late report nor a heartbeat followed the answer");
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_heartbeat() {
    let fake = Fake::with_tools(&["wait"]);
    let server = server(fake.clone());
    let sink = Arc::new(Collect::default());
    let started = fake.started.notified();
    let pending = {
        let (server, sink) = (server.clone(), sink.clone());
        tokio::spawn(async move {
            handle_streaming(&server, &sink, call_with_token(json!(5), "wait", json!({}), json!("t"))).await
        })
    };
    started.await;
    tokio::time::sleep(2 * PROGRESS_INTERVAL + millis(1)).await;
    assert_eq!(sink.len(), 2, "two heartbeats while it ran");
    cancel(&server, "5").await;
    assert_eq!(text_of(&pending.await.unwrap()), "cancelled");
    tokio::time::sleep(3 * PROGRESS_INTERVAL).await;
    assert_eq!(sink.len(), 2, "no heartbeat once the call was cancelled");
}

#[tokio::test(start_paused = true)]
async fn a_transport_without_a_sink_gets_no_progress_and_the_call_still_completes() {
    let server = server(Fake::with_tools(&["sleep"]));
    let body = call_with_token(json!(1), "sleep", json!({"ms": 3 * PROGRESS_INTERVAL.as_millis() as u64}), json!("t"));
    let frame = server.handle(body.as_bytes(), ctx()).await.unwrap();
    assert_eq!(text_of(&serde_json::from_str(&frame).unwrap()), "slept");
}

#[tokio::test]
async fn wants_progress_matches_the_dispatcher_rule() {
    use clawmcp_mcp::jsonrpc;
    let cases = [
        (call_with_token(json!(1), "x", json!({"big": "a"}), json!("tok")), true),
        (call_with_token(json!(1), "x", json!({}), json!(7)), true),
        (call_with_token(json!(1), "x", json!({}), json!(null)), false),
        (call_with_token(json!(1), "x", json!({}), json!([1])), false),
        (tool_call(json!(1), "x", json!({})).to_string(), false),
        // A notification gets no answer, so there is nothing to stream progress in front of.
        (
            json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}})
                .to_string(),
            false,
        ),
        (json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":"t"}}}).to_string(), false),
        (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}).to_string(), false),
    ];
    for (body, expected) in cases {
        let message = jsonrpc::parse(body.as_bytes()).unwrap();
        assert_eq!(McpServer::<Fake>::wants_progress(&message), expected, "{body}");
    }
}

#[tokio::test]
async fn the_typescript_sdk_wire_style_matches_that_sdk() {
    let server = Arc::new(
        McpServer::new(
            ServerInfo { name: "s".into(), version: "1".into() },
            Fake::with_tools(&["echo", "fail"]),
            DuplicatePolicy::Allow,
        )
        .with_wire(clawmcp_mcp::WireStyle::TYPESCRIPT_SDK),
    );
    let init =
        |version: &str| json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":version}});
    assert_eq!(call(&server, init("2025-06-18")).await["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(call(&server, init("2024-11-05")).await["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(call(&server, init("1999-01-01")).await["result"]["protocolVersion"], "2025-11-25");
    let unknown = call(&server, json!({"jsonrpc":"2.0","id":2,"method":"nonsense"})).await;
    assert_eq!(unknown["error"], json!({"code": -32601, "message": "Method not found"}));
    // No stateless era: discover is unknown, so a dual-era client falls back to initialize.
    let discover = call(&server, json!({"jsonrpc":"2.0","id":2,"method":"server/discover","params":{}})).await;
    assert_eq!(discover["error"], json!({"code": -32601, "message": "Method not found"}));
    let listed = call(&server, json!({"jsonrpc":"2.0","id":3,"method":"tools/list"})).await;
    let first = listed["result"]["tools"][0].as_object().unwrap().clone();
    let keys: Vec<&str> = first.keys().map(String::as_str).collect();
    assert_eq!(keys, ["name", "description", "inputSchema", "annotations", "execution"]);
    assert_eq!(first["execution"], json!({"taskSupport": "forbidden"}));
    let ok = call(&server, tool_call(json!(4), "echo", json!({}))).await;
    assert!(ok["result"].get("isError").is_none(), "success leaves isError out: {ok}");
    let failed = call(&server, tool_call(json!(5), "fail", json!({}))).await;
    assert_eq!(failed["result"]["isError"], true);
}

#[tokio::test]
async fn the_default_wire_negotiates_with_the_trays_habits() {
    let server = server(Fake::with_tools(&["echo"]));
    let init =
        |version: &str| json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":version}});
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        assert_eq!(call(&server, init(asked)).await["result"]["protocolVersion"], answered, "{asked}");
    }
    let missing = call(&server, json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})).await;
    assert_eq!(missing["result"]["protocolVersion"], "2025-11-25", "never an error over a version");
    let ok = call(&server, tool_call(json!(2), "echo", json!({}))).await;
    assert_eq!(ok["result"]["isError"], false);
    let listed = call(&server, json!({"jsonrpc":"2.0","id":3,"method":"tools/list"})).await;
    assert!(listed["result"]["tools"][0].get("execution").is_none());
}

#[tokio::test]
async fn the_tray_style_stays_pinned_to_2024_11_05() {
    let server = Arc::new(
        McpServer::new(
            ServerInfo { name: "s".into(), version: "1".into() },
            Fake::with_tools(&["echo"]),
            DuplicatePolicy::Allow,
        )
        .with_wire(clawmcp_mcp::WireStyle::TRAY),
    );
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}});
    assert_eq!(call(&server, init).await["result"]["protocolVersion"], "2024-11-05");
    let discover = call(&server, json!({"jsonrpc":"2.0","id":2,"method":"server/discover"})).await;
    assert_eq!(discover["error"]["code"], -32601, "the tray has no stateless era: {discover}");
}

/// A stateless server (HTTP) renders each request for the revision the request names (its
/// header), a one-session server (stdio) for the revision `initialize` negotiated.
#[tokio::test]
async fn fields_follow_the_requests_header_or_the_sessions_revision() {
    use clawmcp_mcp::ProtocolVersion;
    let structured = |server: Arc<McpServer<Fake>>, version: Option<ProtocolVersion>| async move {
        let body = tool_call(json!(9), "structured", json!({})).to_string();
        let ctx = RequestContext { protocol_version: version, ..RequestContext::new(CancellationToken::new()) };
        let frame: Value = serde_json::from_str(&server.handle(body.as_bytes(), ctx).await.unwrap()).unwrap();
        frame["result"].get("structuredContent").is_some()
    };
    let stateless = server(Fake::with_tools(&["structured"]));
    assert!(!structured(stateless.clone(), None).await, "no header: 2025-03-26, no structuredContent");
    assert!(!structured(stateless.clone(), Some(ProtocolVersion::V2024_11_05)).await);
    assert!(structured(stateless.clone(), Some(ProtocolVersion::V2025_06_18)).await);

    let session = Arc::new(
        McpServer::new(
            ServerInfo { name: "s".into(), version: "1".into() },
            Fake::with_tools(&["structured"]),
            DuplicatePolicy::Allow,
        )
        .for_one_session(),
    );
    assert!(!structured(session.clone(), None).await, "before initialize");
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}});
    call(&session, init).await;
    assert!(structured(session.clone(), None).await, "after negotiating 2025-06-18");
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}});
    call(&session, init).await;
    assert!(!structured(session, None).await);
}

/// `_meta` of a stateless (2026-07-28) request.
fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}

#[tokio::test]
async fn server_discover_round_trip() {
    let server = server(Fake::with_tools(&["echo"]));
    let discover = json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta": modern_meta()}});
    let response = call(&server, discover).await;
    assert_eq!(
        response["result"],
        json!({
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "test-server", "version": "9.9.9"}},
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
        })
    );
    // A probe without _meta (a client unsure of the era) gets the same answer, never an error.
    let bare = call(&server, json!({"jsonrpc":"2.0","id":1,"method":"server/discover"})).await;
    assert_eq!(bare["result"]["supportedVersions"], json!(["2026-07-28"]));
}

#[tokio::test]
async fn stateless_requests_are_served_without_initialize_and_decorated() {
    let server = server(Fake::with_tools(&["echo", "structured"]));
    let listed =
        call(&server, json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": modern_meta()}})).await;
    let result = &listed["result"];
    assert_eq!(
        (result["resultType"].clone(), result["ttlMs"].clone(), result["cacheScope"].clone()),
        (json!("complete"), json!(0), json!("private"))
    );
    assert_eq!(result["tools"].as_array().unwrap().len(), 2);
    let called = call(
        &server,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"structured","arguments":{},"_meta": modern_meta()}}),
    )
    .await;
    assert_eq!(called["result"]["resultType"], "complete");
    assert_eq!(called["result"]["structuredContent"], json!({"a": 1}), "the newest fields in this revision");
    assert!(called["result"].get("ttlMs").is_none(), "a call result is not a cacheable list");
    // Removed methods are unknown here; a legacy ping is still a ping.
    let ping = call(&server, json!({"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta": modern_meta()}})).await;
    assert_eq!(ping["error"]["code"], -32601);
    let legacy = call(&server, json!({"jsonrpc":"2.0","id":4,"method":"ping"})).await;
    assert_eq!(legacy["result"], json!({}));
    let legacy_list = call(&server, json!({"jsonrpc":"2.0","id":5,"method":"tools/list"})).await;
    assert!(legacy_list["result"].get("resultType").is_none(), "legacy answers are unchanged");
}

#[tokio::test]
async fn stateless_requests_with_a_bad_meta_get_the_revisions_errors() {
    let server = server(Fake::with_tools(&["echo"]));
    let unsupported = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
    let response =
        call(&server, json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta": unsupported}})).await;
    assert_eq!(response["error"]["code"], -32022);
    assert_eq!(response["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(response["error"]["data"]["supported"][0], "2026-07-28");
    let no_caps = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let response =
        call(&server, json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": no_caps}})).await;
    assert_eq!(response["error"]["code"], -32602);
    // `initialize` always takes the legacy path, whatever its _meta says.
    let init = json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","_meta": modern_meta()}});
    assert_eq!(call(&server, init).await["result"]["protocolVersion"], "2025-06-18");
}
