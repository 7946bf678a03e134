//! Faults: payload limits at their edges, malformed frames, restarts, outages, the tick
//! watchdog. The fake injects each fault; the client must fail exactly the affected requests,
//! reconnect, and tell subscribers about the gap.

use std::time::Duration;

use clawmcp_gateway::{GatewayClient, GatewayError, GatewayEvent, RequestOptions};
use clawmcp_testkit::{FakeConfig, FakeGateway, Reply};
use serde_json::json;

use crate::support::{next, next_event, operator, within};

#[tokio::test(start_paused = true)]
async fn outbound_frames_over_max_payload_are_refused_locally_at_the_exact_edge() {
    let fake = FakeGateway::start_with(FakeConfig { max_payload: 4096, ..FakeConfig::default() }).await;
    fake.on("big", |_| Reply::Ok(json!({"stored": true})));
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let send = |len: usize| client.request("big", json!({"s": "x".repeat(len)}));

    let probe = within(send(5000)).await.unwrap_err();
    let GatewayError::PayloadTooLarge { size, limit, .. } = probe else { panic!("{probe:?}") };
    assert_eq!(limit, 4096);
    let overhead = size - 5000; // the frame around the string; ids are fixed-width

    within(send(4096 - overhead)).await.expect("a frame of exactly maxPayload is sent");
    let over = within(send(4097 - overhead)).await.unwrap_err();
    assert!(matches!(over, GatewayError::PayloadTooLarge { size: 4097, limit: 4096, .. }), "{over:?}");
    assert!(over.to_string().contains("nothing was sent"));
    assert_eq!(fake.requests("big").len(), 1, "refused frames never reach the gateway");
    assert_eq!(fake.handshakes(), 1);
    client.close().await;
}

/// An event frame with an empty payload string; padding the string sizes the frame exactly.
const EMPTY_EVENT: &str = r#"{"type":"event","event":"big","payload":""}"#;

/// A raw event frame of exactly `len` bytes.
fn event_frame_of_len(len: usize) -> String {
    format!(r#"{{"type":"event","event":"big","payload":"{}"}}"#, "x".repeat(len - EMPTY_EVENT.len()))
}

#[tokio::test(start_paused = true)]
async fn inbound_frames_over_the_cap_close_the_link_at_the_exact_edge() {
    let fake = FakeGateway::start().await;
    let mut options = operator(&fake);
    options.max_inbound_frame_bytes = 2048;
    let client = within(GatewayClient::connect(options)).await.unwrap();
    let mut events = client.subscribe();

    fake.send_raw(&event_frame_of_len(2048));
    let (event, payload, _) = next_event(&mut events).await;
    assert_eq!((event.as_str(), payload.as_str().unwrap().len()), ("big", 2048 - EMPTY_EVENT.len()));

    fake.send_raw(&event_frame_of_len(2049));
    let GatewayEvent::Disconnected { reason } = next(&mut events).await else { panic!("expected a disconnect") };
    assert!(reason.contains("2049-byte frame") && reason.contains("2048-byte inbound limit"), "{reason}");
    assert!(matches!(next(&mut events).await, GatewayEvent::Reconnected { .. }));
    let closes = within(fake.wait_for_client_closes(1)).await;
    assert_eq!(closes[0].1, 1009, "the client says why it hung up");
    within(client.request("health", ())).await.unwrap();
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn malformed_frames_are_skipped_without_losing_the_link() {
    let fake = FakeGateway::start().await;
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();

    for garbage in ["not json {", r#"{"type":"res"}"#, r#"{"type":"mystery","id":"1"}"#, "[]", r#"{"type":"event"}"#] {
        fake.send_raw(garbage);
    }
    fake.emit("session.message", json!({"after": "garbage"}));
    assert_eq!(next_event(&mut events).await.1, json!({"after": "garbage"}));
    within(client.request("health", ())).await.unwrap();
    assert_eq!(fake.handshakes(), 1, "no reconnect was needed");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn restart_mid_request_fails_it_reconnects_and_resumes_events() {
    let fake = FakeGateway::start().await;
    fake.on("stall", |_| Reply::Stall);
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();

    let in_flight = tokio::spawn({
        let client = client.clone();
        async move { client.request("stall", ()).await }
    });
    within(fake.wait_for_request("stall", 1)).await;
    fake.restart();

    let error = within(in_flight).await.unwrap().unwrap_err();
    let GatewayError::Disconnected { method, reason } = &error else { panic!("{error:?}") };
    assert_eq!(method, "stall");
    assert!(reason.contains("1012") && reason.contains("service restart"), "{reason}");
    assert!(error.to_string().contains("may or may not have run"));

    assert!(matches!(next(&mut events).await, GatewayEvent::Disconnected { .. }));
    let GatewayEvent::Reconnected { hello } = next(&mut events).await else { panic!("expected the reconnect marker") };
    assert_eq!(hello.server.version, "2026.9.6-fake");
    assert_eq!(fake.handshakes(), 2);

    within(client.request("health", ())).await.unwrap();
    fake.emit("session.message", json!({"n": 1}));
    let (event, _, seq) = next_event(&mut events).await;
    assert_eq!((event.as_str(), seq), ("session.message", Some(1)), "seq restarts per connection");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn requests_issued_during_an_outage_wait_for_the_reconnect() {
    let fake = FakeGateway::start().await;
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();
    fake.set_accepting(false);
    fake.drop_connections();
    assert!(matches!(next(&mut events).await, GatewayEvent::Disconnected { .. }));
    assert!(!client.is_connected());

    let waiting = tokio::spawn({
        let client = client.clone();
        let patient = RequestOptions { timeout: Some(Duration::from_secs(120)), ..RequestOptions::default() };
        async move { client.request_with("health", (), patient).await }
    });
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(!waiting.is_finished(), "the request waits while the gateway is down");
    assert_eq!(fake.requests("health").len(), 0);

    fake.set_accepting(true);
    assert_eq!(within(waiting).await.unwrap().unwrap(), json!({"ok": true}));
    assert_eq!(fake.handshakes(), 2);
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn requests_fail_clearly_when_no_reconnect_comes_in_time() {
    let fake = FakeGateway::start().await;
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();
    fake.set_accepting(false);
    fake.drop_connections();
    let GatewayEvent::Disconnected { reason } = next(&mut events).await else { panic!("expected a disconnect") };
    assert!(reason.contains("without a close frame") || reason.contains("reset"), "{reason}");

    let short = RequestOptions { timeout: Some(Duration::from_secs(5)), ..RequestOptions::default() };
    let error = within(client.request_with("health", (), short)).await.unwrap_err();
    let GatewayError::NotConnected { method, waited, last_error } = &error else { panic!("{error:?}") };
    assert_eq!(method, "health");
    assert_eq!(*waited, Duration::from_secs(5));
    assert!(last_error.contains("503"), "the last connection error is named: {last_error}");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn silence_for_two_tick_intervals_triggers_a_reconnect() {
    let fake =
        FakeGateway::start_with(FakeConfig { tick_interval: Duration::from_secs(1), ..FakeConfig::default() }).await;
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();

    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(fake.handshakes(), 1, "regular ticks keep the link alive");

    fake.set_ticks(false);
    let GatewayEvent::Disconnected { reason } = next(&mut events).await else { panic!("expected a disconnect") };
    assert!(reason.contains("twice its tick interval"), "{reason}");
    let closes = within(fake.wait_for_client_closes(1)).await;
    assert_eq!((closes[0].1, closes[0].2.as_str()), (4000, "tick timeout"));

    fake.set_ticks(true);
    // The watchdog may fire again before ticks resume; skip to the first reconnect that holds.
    loop {
        if let GatewayEvent::Reconnected { .. } = next(&mut events).await {
            break;
        }
    }
    within(client.request("health", ())).await.unwrap();
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_connection_dropped_mid_call_fails_only_that_call() {
    let fake = FakeGateway::start().await;
    fake.on("crash", |_| Reply::DropConnection);
    fake.on("slow", |_| Reply::delay(Duration::from_secs(5), Reply::Ok(json!({"late": true}))));
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();

    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.request("slow", ()).await }
    });
    within(fake.wait_for_request("slow", 1)).await;
    let crash = within(client.request("crash", ())).await.unwrap_err();
    assert!(matches!(&crash, GatewayError::Disconnected { method, .. } if method == "crash"), "{crash:?}");
    let slow = within(slow).await.unwrap().unwrap_err();
    assert!(matches!(&slow, GatewayError::Disconnected { method, .. } if method == "slow"), "{slow:?}");

    assert!(matches!(next(&mut events).await, GatewayEvent::Disconnected { .. }));
    assert!(matches!(next(&mut events).await, GatewayEvent::Reconnected { .. }));
    assert_eq!(within(client.request("health", ())).await.unwrap(), json!({"ok": true}));
    client.close().await;
}
