//! Progress on long calls over HTTP (issue 5): a `tools/call` with `_meta.progressToken` from a
//! client that accepts `text/event-stream` is answered as a short SSE stream (progress, then
//! the result); every other request keeps the plain JSON answer. The streamed call keeps the
//! gate, its slot, its deadline and the disconnect cancellation of a plain one. Time is paused:
//! the heartbeat interval passes as soon as nothing else can run.

mod common;

use std::time::Duration;

use bytes::Bytes;
use clawmcp_http::Limits;
use clawmcp_mcp::server::PROGRESS_INTERVAL;
use common::{Harness, call, read_until};
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST, ORIGIN};
use http::{Request, StatusCode};
use http_body_util::Full;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::time::timeout;

const MCP_ACCEPT: &str = "application/json, text/event-stream";

/// A `tools/call` request carrying `_meta.progressToken`.
fn call_with_token(id: Value, tool: &str, arguments: Value, token: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": token}}})
}

/// The JSON of every `message` event of an SSE body; panics on anything else in the body.
fn sse_messages(body: &str) -> Vec<Value> {
    assert!(body.ends_with("\n\n"), "the stream ends after a whole event: {body:?}");
    body.trim_end_matches('\n')
        .split("\n\n")
        .map(|event| {
            let mut lines = event.lines();
            assert_eq!(lines.next(), Some("event: message"), "{event:?}");
            let data: Vec<&str> = lines.map(|line| line.strip_prefix("data: ").expect("only data lines")).collect();
            serde_json::from_str(&data.join("\n")).unwrap()
        })
        .collect()
}

/// Seconds of `slow` that span `n` heartbeat intervals plus a little.
fn beyond_intervals(n: u32) -> u64 {
    (PROGRESS_INTERVAL * n).as_secs() + 2
}

#[tokio::test(start_paused = true)]
async fn a_call_with_a_token_from_an_sse_client_streams_progress_then_its_result() {
    let h = Harness::start().await;
    let c = &h.client;
    let body = call_with_token(json!("job"), "slow", json!({"seconds": beyond_intervals(2)}), json!("tok-9"));
    let request = c.post_json().header(ACCEPT, MCP_ACCEPT).body(Full::new(Bytes::from(body.to_string()))).unwrap();
    let reply = c.send(request).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[CONTENT_TYPE], "text/event-stream");
    assert_eq!(reply.headers[CACHE_CONTROL], "no-cache");

    let messages = sse_messages(reply.text());
    let (result, progress) = messages.split_last().unwrap();
    assert_eq!(progress.len(), 2, "one heartbeat per interval: {messages:?}");
    for (n, event) in progress.iter().enumerate() {
        assert_eq!(event["method"], "notifications/progress");
        assert_eq!(event["params"]["progressToken"], "tok-9");
        assert_eq!(event["params"]["progress"].as_f64(), Some(n as f64 + 1.0));
    }
    assert_eq!(result["id"], "job", "the response is the last event");
    assert_eq!(result["result"]["content"][0]["text"], "done");
}

#[tokio::test(start_paused = true)]
async fn without_a_token_or_without_the_accept_the_answer_stays_plain_json() {
    let h = Harness::start().await;
    let c = &h.client;
    let seconds = json!({"seconds": beyond_intervals(1)});
    let cases = [
        ("no token", call(json!(1), "slow", seconds.clone()), Some(MCP_ACCEPT)),
        ("no accept", call_with_token(json!(2), "slow", seconds.clone(), json!("t")), None),
        ("json only", call_with_token(json!(3), "slow", seconds.clone(), json!("t")), Some("application/json")),
        ("wildcard", call_with_token(json!(4), "slow", seconds.clone(), json!("t")), Some("*/*")),
        ("bad token", call_with_token(json!(5), "slow", seconds.clone(), json!({"t": 1})), Some(MCP_ACCEPT)),
        (
            "not a call",
            json!({"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"progressToken":"t"}}}),
            Some(MCP_ACCEPT),
        ),
    ];
    for (case, body, accept) in cases {
        let mut request = c.post_json();
        if let Some(accept) = accept {
            request = request.header(ACCEPT, accept);
        }
        let reply = c.send(request.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await;
        assert_eq!(
            (reply.status, &reply.headers[CONTENT_TYPE]),
            (StatusCode::OK, &"application/json".parse().unwrap()),
            "{case}"
        );
        let json = reply.json();
        assert_eq!(json["id"], body["id"], "{case}: one JSON-RPC response and nothing else");
        assert!(json.get("method").is_none(), "{case}");
    }
    // A tools/call notification with a token still gets 202 and no body: nothing to stream for.
    let notification = json!({"jsonrpc":"2.0","method":"tools/call",
        "params":{"name":"count","_meta":{"progressToken":"t"}}});
    let reply = c
        .send(c.post_json().header(ACCEPT, MCP_ACCEPT).body(Full::new(Bytes::from(notification.to_string()))).unwrap())
        .await;
    assert_eq!((reply.status, reply.body.len()), (StatusCode::ACCEPTED, 0));
}

#[tokio::test(start_paused = true)]
async fn the_gate_and_the_pools_still_come_first() {
    let h = Harness::with_limits(Limits { tool_slots: 1, ..Limits::default() }).await;
    let c = &h.client;
    let body = || Full::new(Bytes::from(call_with_token(json!(1), "count", json!({}), json!("t")).to_string()));
    let no_token = Request::post("/")
        .header(HOST, h.addr().to_string())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, MCP_ACCEPT);
    c.send(no_token.body(body()).unwrap())
        .await
        .assert_text(StatusCode::UNAUTHORIZED, "missing or invalid bearer token");
    let browser = c.post_json().header(ACCEPT, MCP_ACCEPT).header(ORIGIN, "https://evil.example");
    c.send(browser.body(body()).unwrap()).await.assert_text(StatusCode::FORBIDDEN, "origin not allowed");
    assert_eq!(h.service.counted.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing was dispatched");

    // The only tool slot is held by a streamed call: the next streamed call is 503, not a stream.
    let client = c.clone();
    let holder = tokio::spawn(async move {
        let body = call_with_token(json!("hold"), "wait_for_cancel", json!({}), json!("h")).to_string();
        client.send(client.post_json().header(ACCEPT, MCP_ACCEPT).body(Full::new(Bytes::from(body))).unwrap()).await
    });
    h.service.wait_started(1).await;
    c.send(c.post_json().header(ACCEPT, MCP_ACCEPT).body(body()).unwrap())
        .await
        .assert_text(StatusCode::SERVICE_UNAVAILABLE, "server busy");
    h.shutdown.cancel();
    let held = holder.await.unwrap();
    let last = sse_messages(held.text()).pop().unwrap();
    assert_eq!(
        last["result"]["content"][0]["text"],
        clawmcp_mcp::SHUTTING_DOWN,
        "shutdown ends a streamed call with its answer, saying why"
    );
}

#[tokio::test(start_paused = true)]
async fn a_streamed_call_keeps_its_deadline_and_ends_with_a_result() {
    let request_timeout = PROGRESS_INTERVAL * 3 + Duration::from_secs(1);
    let h = Harness::with_limits(Limits { request_timeout, ..Limits::default() }).await;
    let c = &h.client;
    let body = call_with_token(json!(8), "wait_for_cancel", json!({}), json!(8)).to_string();
    let reply = c.send(c.post_json().header(ACCEPT, MCP_ACCEPT).body(Full::new(Bytes::from(body))).unwrap()).await;
    let messages = sse_messages(reply.text());
    let (result, progress) = messages.split_last().unwrap();
    assert_eq!(progress.len(), 3, "heartbeats until the deadline: {messages:?}");
    assert_eq!(result["id"], 8);
    assert_eq!(
        (result["result"]["content"][0]["text"].as_str(), result["result"]["isError"].as_bool()),
        (Some("request timed out"), Some(true)),
        "the deadline is a normal result at the end of the stream, not a broken transport"
    );
    assert_eq!(h.service.cancelled_count(), 1, "the tool was cancelled at the deadline");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_leaves_mid_stream_cancels_the_call_and_frees_the_slot() {
    let h = Harness::with_limits(Limits { tool_slots: 1, ..Limits::default() }).await;
    let body = call_with_token(json!(1), "wait_for_cancel", json!({}), json!("bye")).to_string();
    let head = h.client.raw_post_head(&format!("Accept: {MCP_ACCEPT}\r\nContent-Length: {}\r\n", body.len()));
    let mut stream = h.client.raw_open((head + &body).as_bytes()).await;
    let seen = read_until(&mut stream, "notifications/progress").await;
    assert!(seen.starts_with("HTTP/1.1 200 OK\r\n"), "{seen}");
    assert!(seen.to_ascii_lowercase().contains("content-type: text/event-stream"), "{seen}");
    assert_eq!(h.service.cancelled_count(), 0, "still running while the client reads");
    stream.shutdown().await.unwrap();
    drop(stream);

    // The request deadline is minutes away: only the disconnect can fire the tool's token.
    timeout(Duration::from_secs(1), h.service.wait_cancelled(1)).await.expect("leaving mid-stream cancelled the tool");
    let next = h.client.rpc(call(json!(2), "count", json!({}))).await;
    assert_eq!(next.tool_outcome(), ("1".to_owned(), false), "the only tool slot is free again");
}
