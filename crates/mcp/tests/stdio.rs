//! The newline-delimited transport over in-memory pipes: framing, probes, concurrency,
//! cancellation, oversize lines, EOF, and progress heartbeats on the session's own output.

use std::sync::Arc;

use clawmcp_mcp::server::PROGRESS_INTERVAL;
use clawmcp_mcp::stdio::{self, SessionEnd};
use clawmcp_mcp::{CallContext, DuplicatePolicy, McpServer, McpService, ServerInfo, Tool, ToolResult};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio_util::sync::CancellationToken;

struct Service;

impl McpService for Service {
    fn list_tools(&self) -> Vec<Tool> {
        Vec::new()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Map<String, Value>, ctx: CallContext) -> BoxFuture<'a, ToolResult> {
        async move {
            match name {
                "wait" => {
                    ctx.cancel.cancelled().await;
                    ToolResult::text("stopped")
                }
                "sleep" => {
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    ToolResult::text("slept")
                }
                _ => ToolResult::text("quick"),
            }
        }
        .boxed()
    }
}

struct Session {
    input: Option<DuplexStream>,
    output: tokio::io::Lines<BufReader<DuplexStream>>,
    done: tokio::task::JoinHandle<SessionEnd>,
    shutdown: CancellationToken,
}

fn start() -> Session {
    let server = Arc::new(McpServer::new(
        ServerInfo { name: "s".into(), version: "1".into() },
        Arc::new(Service),
        DuplicatePolicy::Reject,
    ));
    let (client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let (outbound, rx) = stdio::outbound_channel();
    let shutdown = CancellationToken::new();
    let done = tokio::spawn(stdio::serve(server, server_in, server_out, outbound, rx, shutdown.clone()));
    Session { input: Some(client_in), output: BufReader::new(client_out).lines(), done, shutdown }
}

impl Session {
    async fn send(&mut self, line: &str) {
        let input = self.input.as_mut().expect("input is open");
        input.write_all(line.as_bytes()).await.unwrap();
        input.write_all(b"\n").await.unwrap();
    }

    /// Closes the client's end of the server's stdin (EOF).
    fn close_input(&mut self) {
        self.input = None;
    }

    async fn recv(&mut self) -> Value {
        let line = self.output.next_line().await.unwrap().expect("a frame");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"))
    }
}

#[tokio::test]
async fn probe_then_initialize_then_eof_ends_cleanly() {
    let mut s = start();
    // A dual-era client probes first; a legacy-only one gets a result it ignores.
    s.send(r#"{"jsonrpc":"2.0","id":0,"method":"server/discover"}"#).await;
    assert_eq!(s.recv().await["result"]["supportedVersions"], json!(["2026-07-28"]));
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#).await;
    assert_eq!(s.recv().await["result"]["protocolVersion"], "2025-11-25");
    s.send("").await; // blank lines are ignored
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(s.recv().await, json!({"jsonrpc":"2.0","id":2,"result":{}}));
    s.close_input();
    assert!(matches!(s.done.await.unwrap(), SessionEnd::InputClosed));
    assert!(s.output.next_line().await.unwrap().is_none(), "output closes after the session");
}

#[tokio::test]
async fn garbage_gets_a_parse_error_and_the_session_continues() {
    let mut s = start();
    s.send("this is not json").await;
    let error = s.recv().await;
    assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (Value::Null, json!(-32700)));
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], 1);
}

#[tokio::test]
async fn control_messages_are_not_blocked_by_a_running_tool_and_cancel_reaches_it() {
    let mut s = start();
    s.send(r#"{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"wait"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], 2, "ping answers while the tool runs");
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}"#).await;
    let cancelled = s.recv().await;
    assert_eq!(cancelled["id"], "long");
    assert_eq!(cancelled["result"]["content"][0]["text"], "cancelled");
}

#[tokio::test]
async fn a_duplicate_active_id_is_refused_on_stdio() {
    let mut s = start();
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait"}}"#).await;
    // Make sure the first call is registered before the duplicate arrives.
    s.send(r#"{"jsonrpc":"2.0","id":"sync","method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], "sync");
    tokio::task::yield_now().await;
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"quick"}}"#).await;
    let refused = s.recv().await;
    assert_eq!(refused["id"], 5);
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(refused["error"]["message"], "duplicate active request id");
}

#[tokio::test]
async fn eof_cancels_running_tools_and_still_answers_them() {
    let mut s = start();
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":"sync","method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], "sync");
    s.close_input();
    let last = s.recv().await;
    assert_eq!(
        (last["id"].clone(), last["result"]["content"][0]["text"].clone()),
        (json!(1), json!(stdio::INPUT_CLOSED)),
        "the client learns the call was stopped because its input closed, not that a deadline passed"
    );
    assert!(matches!(s.done.await.unwrap(), SessionEnd::InputClosed));
}

#[tokio::test]
async fn a_shutdown_stops_running_tools_and_answers_them_saying_so() {
    let mut s = start();
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":"sync","method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], "sync");
    s.shutdown.cancel();
    let last = s.recv().await;
    assert_eq!(
        (last["id"].clone(), last["result"]["content"][0]["text"].clone()),
        (json!(1), json!(clawmcp_mcp::SHUTTING_DOWN))
    );
    assert_eq!(last["result"]["isError"], true);
    assert!(matches!(s.done.await.unwrap(), SessionEnd::Shutdown));
}

/// Starts `MAX_IN_FLIGHT` calls of `wait` (ids 0..) and returns once every one holds its slot:
/// the reader takes a call's slot before it reads the next line, so the answer to a ping sent
/// after them proves it.
async fn fill_every_slot(s: &mut Session) {
    for id in 0..stdio::MAX_IN_FLIGHT {
        s.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"wait"}}).to_string()).await;
    }
    s.send(r#"{"jsonrpc":"2.0","id":"filled","method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], "filled");
}

#[tokio::test]
async fn with_every_slot_busy_the_reader_still_answers_control_refuses_calls_at_once_and_sees_eof() {
    let mut s = start();
    fill_every_slot(&mut s).await;

    // One call past the limit: an immediate tool error that names the limit, not a wait.
    s.send(r#"{"jsonrpc":"2.0","id":"extra","method":"tools/call","params":{"name":"quick"}}"#).await;
    let busy = s.recv().await;
    assert_eq!(busy["id"], "extra");
    assert_eq!(busy["result"]["isError"], true);
    assert_eq!(busy["result"]["content"][0]["text"], stdio::busy_text());
    assert!(stdio::busy_text().contains("32 tool calls are already running"), "{}", stdio::busy_text());
    // A tools/call notification past the limit has no one to answer: nothing is sent for it.
    s.send(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"quick"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#).await;
    assert_eq!(s.recv().await, json!({"jsonrpc":"2.0","id":"p","result":{}}), "ping still answers, and next");

    // A cancel reaches a blocked call; its slot is free as soon as its answer is out.
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#).await;
    let cancelled = s.recv().await;
    assert_eq!(
        (cancelled["id"].clone(), cancelled["result"]["content"][0]["text"].clone()),
        (json!(5), json!("cancelled"))
    );
    s.send(r#"{"jsonrpc":"2.0","id":"again","method":"tools/call","params":{"name":"quick"}}"#).await;
    let again = s.recv().await;
    assert_eq!((again["id"].clone(), again["result"]["content"][0]["text"].clone()), (json!("again"), json!("quick")));

    // EOF ends the session with every slot still taken: each blocked call is stopped and answered.
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait"}}"#).await;
    s.send(r#"{"jsonrpc":"2.0","id":"full-again","method":"ping"}"#).await;
    assert_eq!(s.recv().await["id"], "full-again");
    s.close_input();
    let mut answered = std::collections::BTreeSet::new();
    for _ in 0..stdio::MAX_IN_FLIGHT {
        let last = s.recv().await;
        assert_eq!(last["result"]["content"][0]["text"], stdio::INPUT_CLOSED, "{last}");
        answered.insert(last["id"].as_u64().unwrap());
    }
    assert_eq!(answered, (0..stdio::MAX_IN_FLIGHT as u64).collect(), "every blocked call was answered");
    assert!(matches!(s.done.await.unwrap(), SessionEnd::InputClosed));
}

#[tokio::test]
async fn an_overlong_line_is_refused_without_ending_the_session() {
    let Session { input, mut output, .. } = start();
    let mut input = input.unwrap();
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(stdio::MAX_LINE_BYTES)
    );
    // Write concurrently: the server discards the line as it streams in.
    let writer = tokio::spawn(async move {
        input.write_all(huge.as_bytes()).await.unwrap();
        input.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n").await.unwrap();
        input
    });
    let mut next = async || -> Value { serde_json::from_str(&output.next_line().await.unwrap().unwrap()).unwrap() };
    let error = next().await;
    assert_eq!(error["error"]["code"], -32700);
    assert!(error["error"]["message"].as_str().unwrap().contains("longer than"));
    assert_eq!(next().await["id"], 2);
    drop(writer.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_long_call_with_a_progress_token_gets_heartbeats_before_its_answer() {
    let mut s = start();
    let ms = 2 * PROGRESS_INTERVAL.as_millis() as u64 + 1;
    s.send(
        &json!({"jsonrpc":"2.0","id":"long","method":"tools/call",
        "params":{"name":"sleep","arguments":{"ms": ms},"_meta":{"progressToken":"p-1"}}})
        .to_string(),
    )
    .await;
    for expected in [1.0, 2.0] {
        let frame = s.recv().await;
        assert_eq!(frame["method"], "notifications/progress", "{frame}");
        assert_eq!(
            (frame["params"]["progressToken"].clone(), frame["params"]["progress"].as_f64()),
            (json!("p-1"), Some(expected))
        );
    }
    let answer = s.recv().await;
    assert_eq!((answer["id"].clone(), answer["result"]["content"][0]["text"].clone()), (json!("long"), json!("slept")));

    // The same call without a token: the answer is the only frame.
    s.send(
        &json!({"jsonrpc":"2.0","id":"plain","method":"tools/call",
        "params":{"name":"sleep","arguments":{"ms": ms}}})
        .to_string(),
    )
    .await;
    assert_eq!(s.recv().await["id"], "plain", "no progress frame came before the answer");
    s.close_input();
    assert!(matches!(s.done.await.unwrap(), SessionEnd::InputClosed));
    assert!(s.output.next_line().await.unwrap().is_none(), "and none after it");
}
