//! Cancellation across HTTP requests: `notifications/cancelled` POSTs reach calls in flight on
//! other connections (one shared registry), tombstones, duplicate ids, client disconnects, and
//! graceful shutdown.

mod common;

use std::time::Duration;

use clawmcp_http::Limits;
use common::{Harness, call, cancel};
use http::StatusCode;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::time::timeout;

#[tokio::test(start_paused = true)]
async fn a_cancel_post_stops_a_call_in_flight_on_another_connection() {
    let h = Harness::start().await;
    let client = h.client.clone();
    let in_flight = tokio::spawn(async move { client.rpc(call(json!("job-1"), "wait_for_cancel", json!({}))).await });
    h.service.wait_started(1).await;

    let ack = h.client.rpc(cancel(json!("job-1"))).await;
    assert_eq!((ack.status, ack.body.len()), (StatusCode::ACCEPTED, 0));
    let reply = in_flight.await.unwrap();
    assert_eq!(reply.tool_outcome(), ("cancelled".to_owned(), true));
    assert_eq!(h.service.cancelled_count(), 1, "the tool's own cancel token fired");
}

#[tokio::test(start_paused = true)]
async fn a_cancel_that_overtakes_its_call_stops_it_before_the_tool_runs() {
    let h = Harness::start().await;
    assert_eq!(h.client.rpc(cancel(json!(42))).await.status, StatusCode::ACCEPTED);
    let reply = h.client.rpc(call(json!(42), "count", json!({}))).await;
    assert_eq!(reply.tool_outcome(), ("cancelled".to_owned(), true));
    assert_eq!(h.service.counted.load(std::sync::atomic::Ordering::SeqCst), 0, "the tool never ran");
    // The tombstone was consumed: the id works again.
    assert_eq!(h.client.rpc(call(json!(42), "count", json!({}))).await.tool_outcome(), ("1".to_owned(), false));
}

#[tokio::test(start_paused = true)]
async fn duplicate_ids_from_two_connections_are_not_cross_cancelled() {
    let h = Harness::start().await;
    let mut calls = Vec::new();
    for _ in 0..2 {
        let client = h.client.clone();
        calls.push(tokio::spawn(async move { client.rpc(call(json!(7), "wait_for_cancel", json!({}))).await }));
    }
    h.service.wait_started(2).await;
    assert_eq!(h.client.rpc(cancel(json!(7))).await.status, StatusCode::ACCEPTED);
    // Give any (wrong) cancellation every chance to land: the paused clock only moves once
    // every task is idle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(h.service.cancelled_count(), 0, "an ambiguous cancel cancels nothing");
    assert!(calls.iter().all(|call| !call.is_finished()));

    h.shutdown.cancel();
    for call in calls {
        assert_eq!(call.await.unwrap().tool_outcome(), (clawmcp_mcp::SHUTTING_DOWN.to_owned(), true));
    }
}

#[tokio::test(start_paused = true)]
async fn a_client_disconnect_cancels_its_tool_and_frees_the_slot() {
    let h = Harness::with_limits(Limits { tool_slots: 1, ..Limits::default() }).await;
    let body = call(json!(1), "wait_for_cancel", json!({})).to_string();
    let request = h.client.raw_post_head(&format!("Content-Length: {}\r\n", body.len())) + &body;
    let mut stream = h.client.raw_open(request.as_bytes()).await;
    h.service.wait_started(1).await;
    stream.shutdown().await.unwrap();
    drop(stream);

    // The request deadline is minutes away: only the disconnect can fire the tool's token.
    timeout(Duration::from_secs(1), h.service.wait_cancelled(1)).await.expect("the disconnect cancelled the tool");
    let next = h.client.rpc(call(json!(2), "count", json!({}))).await;
    assert_eq!(next.tool_outcome(), ("1".to_owned(), false), "the only tool slot is free again");
}

#[tokio::test(start_paused = true)]
async fn graceful_shutdown_ends_calls_in_flight_and_returns() {
    let h = Harness::start().await;
    let mut calls = Vec::new();
    for id in 0..3 {
        let client = h.client.clone();
        calls.push(tokio::spawn(async move { client.rpc(call(json!(id), "wait_for_cancel", json!({}))).await }));
    }
    h.service.wait_started(3).await;
    // A kept-alive connection that has been served once and now sits idle.
    let probe = format!("GET / HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n", h.addr(), h.client.token);
    let mut idle = h.client.raw_open(probe.as_bytes()).await;
    common::read_until(&mut idle, "POST JSON-RPC to").await;

    h.shutdown.cancel();
    for call in calls {
        assert_eq!(call.await.unwrap().tool_outcome(), (clawmcp_mcp::SHUTTING_DOWN.to_owned(), true));
    }
    assert_eq!(h.service.cancelled_count(), 3);
    let served = timeout(h.limits.shutdown_grace, h.served).await.expect("serve returned within the grace");
    served.unwrap().unwrap();
    // Well before the idle timeout: shutdown closed it.
    let closed = timeout(Duration::from_secs(1), common::read_to_close(&mut idle)).await;
    assert_eq!(closed.as_deref(), Ok(""), "the idle connection was closed without an answer");
    assert!(tokio::net::TcpStream::connect(h.client.addr).await.is_err(), "no longer listening");
}
