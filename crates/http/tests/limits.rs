//! Every bound at its edge: body size (declared, chunked), the ingress, tool and control pools,
//! body timeouts and the request deadline. The connection budget and its deadlines
//! have their own file (`connections.rs`). Time is paused, so
//! timeouts fire as soon as nothing else can run and no test waits for real time.

mod common;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use clawmcp_http::{Limits, MAX_BODY_BYTES};
use common::{Harness, call, cancel, ping, read_to_close};
use http::StatusCode;
use http::header::RETRY_AFTER;
use http_body_util::{Full, StreamBody};
use hyper::body::Frame;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

/// A `ping` whose JSON text is exactly `len` bytes (padded inside `params`).
fn ping_of_len(len: usize) -> Vec<u8> {
    let shell = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": ""}}).to_string();
    let pad = len - shell.len();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": " ".repeat(pad)}}).to_string();
    assert_eq!(body.len(), len);
    body.into_bytes()
}

/// A chunked body (no Content-Length) of the given bytes, in 64 KiB frames.
fn chunked(bytes: Vec<u8>) -> StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>>> {
    let frames: Vec<_> =
        Bytes::from(bytes).chunks(64 * 1024).map(|c| Ok(Frame::data(Bytes::copy_from_slice(c)))).collect();
    StreamBody::new(futures_util::stream::iter(frames))
}

#[tokio::test(start_paused = true)]
async fn declared_body_of_exactly_the_cap_is_accepted() {
    assert_eq!(MAX_BODY_BYTES, 4_194_304);
    let h = Harness::start().await;
    let reply =
        h.client.send(h.client.post_json().body(Full::new(Bytes::from(ping_of_len(MAX_BODY_BYTES)))).unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["result"], json!({}));
}

#[tokio::test(start_paused = true)]
async fn declared_body_one_byte_over_is_refused_before_any_byte_is_sent() {
    let h = Harness::start().await;
    // Only the head goes out: the 413 must not depend on reading the body.
    let head = h.client.raw_post_head(&format!("Content-Length: {}\r\n", MAX_BODY_BYTES + 1));
    let answer = h.client.raw(head.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413 Payload Too Large\r\n"), "{answer}");
    assert!(
        answer.ends_with(
            "\r\n\r\nrequest body too large (over 4 MiB; a file command sent with X-OpenClaw-File-Command: <command> \
             may carry up to 24 MiB)"
        ),
        "{answer}"
    );
}

#[tokio::test(start_paused = true)]
async fn chunked_body_is_capped_while_streaming() {
    let h = Harness::start().await;
    let at_cap = h.client.send(h.client.post_json().body(chunked(ping_of_len(MAX_BODY_BYTES))).unwrap()).await;
    assert_eq!(at_cap.status, StatusCode::OK, "{}", at_cap.text());

    // Raw, so the test sees the 413 even though the server stops reading mid-upload.
    let mut stream = h.client.raw_open(h.client.raw_post_head("Transfer-Encoding: chunked\r\n").as_bytes()).await;
    let body = ping_of_len(MAX_BODY_BYTES + 1);
    let mut upload = Vec::new();
    for chunk in body.chunks(64 * 1024) {
        upload.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        upload.extend_from_slice(chunk);
        upload.extend_from_slice(b"\r\n");
    }
    upload.extend_from_slice(b"0\r\n\r\n");
    let (mut reader, mut writer) = stream.split();
    let write = async {
        // The server may close before taking all of it; that is the point.
        let _ = writer.write_all(&upload).await;
    };
    let read = async {
        let mut received = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut received).await;
        String::from_utf8_lossy(&received).into_owned()
    };
    let ((), answer) = tokio::join!(write, read);
    assert!(answer.starts_with("HTTP/1.1 413 Payload Too Large\r\n"), "{answer}");
}

#[tokio::test(start_paused = true)]
async fn the_33rd_concurrent_body_reader_is_busy_and_stalls_time_out() {
    let limits = Limits::default();
    assert_eq!(limits.ingress_readers, 32);
    let h = Harness::with_limits(limits.clone()).await;
    // 32 uploads that declare 100 bytes and send 1: each holds an ingress slot.
    let stalled_head = h.client.raw_post_head("Content-Length: 100\r\n") + "{";
    let mut stalled = Vec::new();
    for _ in 0..32 {
        stalled.push(h.client.raw_open(stalled_head.as_bytes()).await);
    }
    let started = Instant::now();
    let busy = h.client.rpc(ping(33)).await;
    busy.assert_text(StatusCode::SERVICE_UNAVAILABLE, "server busy");
    assert_eq!(busy.headers[RETRY_AFTER], "1");
    assert_eq!(started.elapsed(), limits.slot_wait, "refused after the short wait, not at once and not later");

    for stream in &mut stalled {
        let answer = read_to_close(stream).await;
        assert!(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{answer}");
        assert!(answer.ends_with("request timed out"), "{answer}");
    }
    assert_eq!(h.client.rpc(ping(34)).await.status, StatusCode::OK, "the slots were freed");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_gets_408_and_frees_its_slot() {
    let limits = Limits { ingress_readers: 1, ..Limits::default() };
    let h = Harness::with_limits(limits.clone()).await;
    let mut stalled =
        h.client.raw_open((h.client.raw_post_head("Content-Length: 20\r\n") + "{\"jsonrpc\"").as_bytes()).await;
    let started = Instant::now();
    h.client.rpc(ping(1)).await.assert_text(StatusCode::SERVICE_UNAVAILABLE, "server busy");

    let answer = read_to_close(&mut stalled).await;
    assert!(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{answer}");
    assert_eq!(started.elapsed(), limits.body_read_timeout, "the body deadline, measured on the paused clock");
    assert_eq!(h.client.rpc(ping(2)).await.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn the_17th_tool_call_is_busy_while_control_traffic_still_flows() {
    let limits = Limits::default();
    assert_eq!((limits.tool_slots, limits.control_slots), (16, 8));
    let h = Harness::with_limits(limits).await;
    let mut calls = Vec::new();
    for id in 1..=16 {
        let client = h.client.clone();
        calls.push(tokio::spawn(async move { client.rpc(call(json!(id), "wait_for_cancel", json!({}))).await }));
    }
    h.service.wait_started(16).await;

    let busy = h.client.rpc(call(json!(17), "count", json!({}))).await;
    busy.assert_text(StatusCode::SERVICE_UNAVAILABLE, "server busy");
    assert_eq!(h.service.counted.load(std::sync::atomic::Ordering::SeqCst), 0, "the refused call never ran");

    // Control slots are separate: ping, listing and cancellation still answer.
    assert_eq!(h.client.rpc(ping(100)).await.json()["result"], json!({}));
    assert_eq!(h.client.rpc(json!({"jsonrpc": "2.0", "id": 101, "method": "tools/list"})).await.status, StatusCode::OK);
    assert_eq!(h.client.rpc(cancel(json!(3))).await.status, StatusCode::ACCEPTED);
    let cancelled = calls.remove(2).await.unwrap();
    assert_eq!(cancelled.tool_outcome(), ("cancelled".to_owned(), true));

    // The cancelled call's slot is free again.
    assert_eq!(h.client.rpc(call(json!(18), "count", json!({}))).await.tool_outcome(), ("1".to_owned(), false));
    h.shutdown.cancel();
    for call in calls {
        assert_eq!(call.await.unwrap().tool_outcome(), (clawmcp_mcp::SHUTTING_DOWN.to_owned(), true));
    }
}

#[tokio::test(start_paused = true)]
async fn full_control_slots_do_not_block_tool_calls_and_a_hung_handler_is_abandoned() {
    let limits = Limits { control_slots: 1, request_timeout: Duration::from_secs(30), ..Limits::default() };
    let h = Harness::with_limits(limits.clone()).await;
    let client = h.client.clone();
    let started = Instant::now();
    // `test/hang` never answers and ignores cancellation: it holds the only control slot.
    let hung = tokio::spawn(async move { client.rpc(json!({"jsonrpc": "2.0", "id": 1, "method": "test/hang"})).await });
    tokio::task::yield_now().await;
    let mut pings = 0;
    while h.client.rpc(ping(2)).await.status != StatusCode::SERVICE_UNAVAILABLE {
        pings += 1;
        assert!(pings < 10, "the hung request never took the control slot");
    }
    assert_eq!(h.client.rpc(call(json!(3), "count", json!({}))).await.tool_outcome(), ("1".to_owned(), false));

    let hung = hung.await.unwrap();
    hung.assert_text(StatusCode::REQUEST_TIMEOUT, "request timed out");
    assert_eq!(started.elapsed(), limits.request_timeout + limits.abandon_after_cancel);
    assert_eq!(h.client.rpc(ping(4)).await.status, StatusCode::OK, "the abandoned handler's slot was freed");
}

#[tokio::test(start_paused = true)]
async fn the_request_deadline_cancels_the_tool_and_answers_timed_out() {
    let limits = Limits { request_timeout: Duration::from_secs(2), ..Limits::default() };
    let h = Harness::with_limits(limits.clone()).await;
    let started = Instant::now();
    let reply = h.client.rpc(call(json!(1), "slow", json!({"seconds": 60}))).await;
    assert_eq!(reply.tool_outcome(), ("request timed out".to_owned(), true));
    assert_eq!(h.service.cancelled_count(), 1, "the tool saw its cancel token");
    assert_eq!(started.elapsed(), limits.request_timeout);

    // Under the deadline, a slow tool simply finishes.
    let finished = h.client.rpc(call(json!(2), "slow", json!({"seconds": 1}))).await;
    assert_eq!(finished.tool_outcome(), ("done".to_owned(), false));
}
