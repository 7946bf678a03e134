//! The file allowance (`docs/node-http.md` §12, `X-OpenClaw-File-Command`) at every edge: a
//! declared file command's body and result get [`FILE_ENVELOPE_BYTES`] instead of 4 MiB and
//! 8 MiB; the header must name, once, a file command of the service, and the body must be that
//! command's `tools/call`; two declared unary envelopes at once, a third `503` (a declared call
//! that streams over a file channel gives its place back once parsed); undeclared requests
//! keep every old bound and are told how to get more. Time is paused: busy slots answer at once.

mod common;

use bytes::Bytes;
use clawmcp_http::{FILE_ENVELOPE_BYTES, Limits, MAX_BODY_BYTES};
use clawmcp_mcp::server::MAX_TOOL_RESULT_BYTES;
use common::{Harness, call, ping};
use http::StatusCode;
use http_body_util::Full;
use serde_json::{Value, json};

const HEADER: &str = "x-openclaw-file-command";

/// A `tools/call` of `tool` whose JSON text is exactly `len` bytes (padded inside `arguments`).
fn call_of_len(tool: &str, len: usize) -> Vec<u8> {
    let with = |pad: &str| call(json!(1), tool, json!({"pad": pad})).to_string();
    let body = with(&" ".repeat(len - with("").len()));
    assert_eq!(body.len(), len);
    body.into_bytes()
}

async fn send_declared(h: &Harness, command: &str, body: Vec<u8>) -> common::Reply {
    h.client.send(h.client.post_json().header(HEADER, command).body(Full::new(Bytes::from(body))).unwrap()).await
}

#[tokio::test(start_paused = true)]
async fn a_declared_body_of_exactly_the_file_allowance_is_taken_and_one_byte_more_is_refused_before_it_is_read() {
    assert_eq!(FILE_ENVELOPE_BYTES, 24 * 1024 * 1024);
    let h = Harness::start().await;
    let reply = send_declared(&h, "file.echo", call_of_len("file.echo", FILE_ENVELOPE_BYTES)).await;
    assert_eq!(reply.tool_outcome(), (String::new(), false));

    let head =
        h.client.raw_post_head(&format!("{HEADER}: file.echo\r\nContent-Length: {}\r\n", FILE_ENVELOPE_BYTES + 1));
    let answer = h.client.raw(head.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413 Payload Too Large\r\n"), "{answer}");
    assert!(answer.ends_with("request body too large for a file command (over its 24 MiB allowance)"), "{answer}");
}

#[tokio::test(start_paused = true)]
async fn an_undeclared_file_body_keeps_the_4_mib_bound_and_is_told_how_to_declare() {
    let h = Harness::start().await;
    let at_cap = h
        .client
        .send(h.client.post_json().body(Full::new(Bytes::from(call_of_len("file.echo", MAX_BODY_BYTES)))).unwrap())
        .await;
    assert_eq!(at_cap.tool_outcome(), (String::new(), false));
    let over = h
        .client
        .send(h.client.post_json().body(Full::new(Bytes::from(call_of_len("file.echo", MAX_BODY_BYTES + 1)))).unwrap())
        .await;
    assert_eq!(over.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(over.text().contains("X-OpenClaw-File-Command"), "{}", over.text());
}

#[tokio::test(start_paused = true)]
async fn the_header_must_name_once_a_file_command_of_the_body() {
    let h = Harness::start().await;
    let unknown = "X-OpenClaw-File-Command must be sent once and name a file command this server serves";
    // Not a file command of this service (a tool, but not a file one), and no tool at all.
    for named in ["count", "file.nope"] {
        let reply = send_declared(&h, named, call(json!(1), named, json!({})).to_string().into_bytes()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{named}");
        assert!(reply.text().starts_with(unknown), "{}", reply.text());
    }
    // Repeated, even with the same value.
    let body = call(json!(1), "file.echo", json!({})).to_string();
    let twice = h
        .client
        .send(
            h.client
                .post_json()
                .header(HEADER, "file.echo")
                .header(HEADER, "file.echo")
                .body(Full::new(Bytes::from(body)))
                .unwrap(),
        )
        .await;
    assert_eq!(twice.status, StatusCode::BAD_REQUEST);
    assert!(twice.text().starts_with(unknown), "{}", twice.text());
    // The body is not that command's tools/call: another tool, another method, a notification.
    let mismatch = "X-OpenClaw-File-Command names another command than the tools/call in the body";
    for body in [
        call(json!(1), "count", json!({})),
        ping(1),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    ] {
        let reply = send_declared(&h, "file.echo", body.to_string().into_bytes()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert!(reply.text().starts_with(mismatch), "{}", reply.text());
    }
    assert_eq!(h.service.counted.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing refused ran");
}

#[tokio::test(start_paused = true)]
async fn a_declared_result_may_use_the_file_allowance_and_an_undeclared_one_is_told_to_declare() {
    // A small allowance keeps the test's memory small; the rule is the same.
    let limits = Limits { file_envelope_bytes: MAX_TOOL_RESULT_BYTES + 1024 * 1024, ..Limits::default() };
    let h = Harness::with_limits(limits).await;
    let over_normal = MAX_TOOL_RESULT_BYTES;
    let arguments = json!({"bytes": over_normal});
    let declared =
        send_declared(&h, "file.echo", call(json!(1), "file.echo", arguments.clone()).to_string().into_bytes()).await;
    let (text, is_error) = declared.tool_outcome();
    assert_eq!((text.len(), is_error), (over_normal, false), "the result over 8 MiB went out whole");

    let undeclared = h.client.rpc(call(json!(2), "file.echo", arguments)).await;
    let (text, is_error) = undeclared.tool_outcome();
    assert!(is_error && text.contains(&format!("over the {MAX_TOOL_RESULT_BYTES}-byte limit")), "{text}");
    assert!(text.contains("X-OpenClaw-File-Command"), "{text}");

    // Past the allowance itself: refused, naming that limit, with nothing more to declare.
    let too_big = json!({"bytes": MAX_TOOL_RESULT_BYTES + 1024 * 1024});
    let reply = send_declared(&h, "file.echo", call(json!(3), "file.echo", too_big).to_string().into_bytes()).await;
    let (text, is_error) = reply.tool_outcome();
    assert!(
        is_error && text.contains(&format!("over the {}-byte limit", MAX_TOOL_RESULT_BYTES + 1024 * 1024)),
        "{text}"
    );
    assert!(!text.contains("X-OpenClaw-File-Command"), "{text}");
}

/// A declared call of `file.echo` that runs `seconds`, streaming over a file channel or not.
fn slow_echo(id: i64, streams: bool) -> Vec<u8> {
    let mut body = call(json!(id), "file.echo", json!({"seconds": 60}));
    if streams {
        body["params"]["_meta"] = json!({"openclaw/file-channel": {"v": 1, "lease": "x"}});
    }
    body.to_string().into_bytes()
}

#[tokio::test(start_paused = true)]
async fn two_declared_unary_envelopes_at_once_and_a_streaming_one_gives_its_place_back() {
    let h = Harness::start().await;
    let spawn = |body: Vec<u8>| {
        let client = h.client.clone();
        tokio::spawn(async move {
            client
                .send(client.post_json().header(HEADER, "file.echo").body(Full::new(Bytes::from(body))).unwrap())
                .await
        })
    };
    // Two streaming calls take no envelope once parsed; two unary ones take both.
    let streaming = [spawn(slow_echo(1, true)), spawn(slow_echo(2, true))];
    h.service.wait_started(2).await;
    let unary = [spawn(slow_echo(3, false)), spawn(slow_echo(4, false))];
    h.service.wait_started(4).await;
    let third = send_declared(&h, "file.echo", slow_echo(5, false)).await;
    assert_eq!(third.status, StatusCode::SERVICE_UNAVAILABLE, "{}", third.text());
    // Undeclared requests do not compete for envelopes.
    assert_eq!(h.client.rpc(call(json!(6), "count", json!({}))).await.tool_outcome(), ("1".into(), false));
    for task in streaming.into_iter().chain(unary) {
        let reply = task.await.unwrap();
        assert_eq!(reply.json()["result"]["isError"], Value::Bool(false), "{}", reply.text());
    }
    // Their places are back.
    let after = send_declared(&h, "file.echo", call(json!(7), "file.echo", json!({})).to_string().into_bytes()).await;
    assert_eq!(after.tool_outcome(), (String::new(), false));
}
