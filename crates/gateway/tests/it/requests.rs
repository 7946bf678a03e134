//! Requests and events on a healthy link: correlation, ordering, timeouts, errors, expect-final,
//! fan-out to subscribers, graceful close.

use std::time::Duration;

use clawmcp_gateway::{GatewayClient, GatewayError, GatewayEvent, RequestOptions};
use clawmcp_testkit::{FakeConfig, FakeGateway, Reply, gateway_error};
use serde_json::json;

use crate::support::{next, next_event, operator, within};

/// The handle is shared across tasks by `serve` and `tools`; this fails to compile otherwise.
#[test]
fn the_client_handle_is_clone_send_sync() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<GatewayClient>();
}

async fn connected(fake: &FakeGateway) -> GatewayClient {
    within(GatewayClient::connect(operator(fake))).await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn response_payload_comes_back_and_params_are_sent_as_given() {
    let fake = FakeGateway::start().await;
    fake.on("sessions.list", |params| Reply::Ok(json!({"sessions": [], "echo": params})));
    let client = connected(&fake).await;

    let payload = within(client.request("sessions.list", json!({"limit": 5, "search": "x"}))).await.unwrap();
    assert_eq!(payload, json!({"sessions": [], "echo": {"limit": 5, "search": "x"}}));

    within(client.request("health", ())).await.unwrap();
    let health = fake.received().into_iter().find(|r| r.method() == Some("health")).unwrap();
    assert!(health.json.unwrap().get("params").is_none(), "no params key when there are none");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn responses_are_matched_by_id_in_any_order() {
    let fake = FakeGateway::start().await;
    fake.on("slow", |_| Reply::delay(Duration::from_secs(5), Reply::Ok(json!({"n": 1}))));
    fake.on("fast", |_| Reply::Ok(json!({"n": 2})));
    let client = connected(&fake).await;

    let slow = client.request("slow", json!({}));
    let fast = client.request("fast", json!({}));
    tokio::pin!(slow);
    let fast_result = within(async {
        tokio::select! {
            result = fast => result,
            _ = &mut slow => panic!("the slow request finished first"),
        }
    })
    .await;
    assert_eq!(fast_result.unwrap(), json!({"n": 2}));
    assert_eq!(within(slow).await.unwrap(), json!({"n": 1}));
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn gateway_errors_keep_code_message_and_details() {
    let fake = FakeGateway::start().await;
    fake.on("sessions.list", |_| {
        Reply::Error(gateway_error(
            "FORBIDDEN",
            "missing scope: operator.read",
            Some(json!({"code": "MISSING_SCOPE", "missingScope": "operator.read"})),
        ))
    });
    let client = connected(&fake).await;
    let error = within(client.request("sessions.list", json!({}))).await.unwrap_err();
    let GatewayError::Rejected { method, error: shape } = &error else { panic!("{error:?}") };
    assert_eq!(method, "sessions.list");
    assert_eq!(shape.code, "FORBIDDEN");
    assert_eq!(shape.message, "missing scope: operator.read");
    assert_eq!(shape.details.as_ref().unwrap()["missingScope"], "operator.read");
    assert_eq!(error.detail_code(), Some("MISSING_SCOPE"));

    // As on the real gateway, a non-admin learns only that admin would be needed.
    let unknown = within(client.request("no.such.method", ())).await.unwrap_err();
    assert_eq!((unknown.code(), unknown.detail_code()), (Some("FORBIDDEN"), Some("MISSING_SCOPE")));
    assert!(unknown.to_string().contains("missing scope: operator.admin"), "{unknown}");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn stalled_response_times_out_and_the_link_stays_usable() {
    let fake = FakeGateway::start().await;
    fake.on("stall", |_| Reply::Stall);
    let client = connected(&fake).await;

    let error = within(client.request("stall", ())).await.unwrap_err();
    assert!(
        matches!(&error, GatewayError::Timeout { method, after } if method == "stall" && *after == Duration::from_secs(30)),
        "{error:?}"
    );
    let short = RequestOptions { timeout: Some(Duration::from_millis(1500)), ..RequestOptions::default() };
    let error = within(client.request_with("stall", (), short)).await.unwrap_err();
    assert!(matches!(error, GatewayError::Timeout { after, .. } if after == Duration::from_millis(1500)));

    within(client.request("health", ())).await.unwrap();
    assert_eq!(fake.handshakes(), 1, "a timeout does not cost the connection");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn expect_final_skips_the_interim_accepted_response() {
    let fake = FakeGateway::start().await;
    fake.on("agent", |_| Reply::AcceptedThen(Box::new(Reply::Ok(json!({"status": "ok", "runId": "r1"})))));
    let client = connected(&fake).await;

    let final_only = RequestOptions { expect_final: true, ..RequestOptions::default() };
    let payload = within(client.request_with("agent", json!({}), final_only)).await.unwrap();
    assert_eq!(payload, json!({"status": "ok", "runId": "r1"}));

    let first = within(client.request("agent", json!({}))).await.unwrap();
    assert_eq!(first, json!({"status": "accepted"}), "without expect_final the first response wins");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn events_reach_every_subscriber_with_seq_and_ticks_are_consumed() {
    let fake =
        FakeGateway::start_with(FakeConfig { tick_interval: Duration::from_secs(1), ..FakeConfig::default() }).await;
    let client = connected(&fake).await;
    let mut first = client.subscribe();
    let mut second = client.subscribe();

    tokio::time::sleep(Duration::from_millis(3500)).await; // three ticks go by
    assert_eq!(fake.emit("session.message", json!({"sessionKey": "agent:main:main"})), 1);

    for subscription in [&mut first, &mut second] {
        let (event, payload, seq) = next_event(subscription).await;
        assert_eq!(event, "session.message");
        assert_eq!(payload, json!({"sessionKey": "agent:main:main"}));
        assert_eq!(seq, Some(4), "ticks used seq 1-3 but were not delivered");
    }
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_subscriber_is_told_how_many_events_it_lost() {
    let fake = FakeGateway::start().await;
    let mut options = operator(&fake);
    options.event_buffer = 4;
    let client = within(GatewayClient::connect(options)).await.unwrap();
    let mut events = client.subscribe();

    for n in 0..10 {
        fake.emit("session.message", json!({"n": n}));
    }
    // The socket is FIFO: once this answer is in, all ten events were processed.
    within(client.request("health", ())).await.unwrap();

    assert!(matches!(next(&mut events).await, GatewayEvent::Lagged { missed: 6 }));
    for n in 6..10 {
        assert_eq!(next_event(&mut events).await.1, json!({"n": n}));
    }
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn close_is_graceful_idempotent_and_fails_what_is_pending() {
    let fake = FakeGateway::start().await;
    fake.on("stall", |_| Reply::Stall);
    let client = connected(&fake).await;
    let mut events = client.subscribe();

    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.request("stall", ()).await }
    });
    fake.wait_for_request("stall", 1).await;
    within(async { tokio::join!(client.close(), client.close()) }).await;
    client.close().await;

    assert!(matches!(within(pending).await.unwrap(), Err(GatewayError::Closed)));
    assert!(matches!(within(client.request("health", ())).await, Err(GatewayError::Closed)));
    assert!(within(events.recv()).await.is_none());
    assert!(!client.is_connected());
    let closes = within(fake.wait_for_client_closes(1)).await;
    assert_eq!(closes[0].1, 1000);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_last_handle_closes_the_connection() {
    let fake = FakeGateway::start().await;
    let client = connected(&fake).await;
    let clone = client.clone();
    drop(client);
    within(clone.request("health", ())).await.unwrap();
    drop(clone);
    let closes = within(fake.wait_for_client_closes(1)).await;
    assert_eq!(closes[0].1, 1000);
}
