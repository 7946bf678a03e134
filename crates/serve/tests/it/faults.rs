//! Faults the fake gateway injects while the bridge is serving: restarts, stalls, malformed and
//! oversize frames, a connection dropped mid-call, a gateway that stops accepting us. The bridge
//! must answer the affected call with a clear error, keep serving, recover, re-subscribe, and
//! tell queue readers about events it may have missed.

use clawmcp_testkit::{FakeConfig, Reply, gateway_error};
use serde_json::json;

use crate::support::{
    SESSION, Session, gateway, gateway_with, is_error, session_message, subscribed, text, wait_event, within,
};

#[tokio::test(start_paused = true)]
async fn a_gateway_restart_mid_wait_reports_the_gap_and_events_flow_again_after_resubscribing() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;
    fake.emit("session.message", session_message("user", "before", None, "m1"));
    assert_eq!(wait_event(&mut session, 0, None).await["cursor"], 1);

    let waiting = session
        .start_call("events_wait", json!({"after_cursor": 1, "session_key": SESSION, "timeout_ms": 300_000}))
        .await;
    session.request("ping", json!({})).await;
    assert_eq!(fake.restart(), 1);
    let released = session.result(waiting).await;
    assert_eq!(text(&released), "event gap before 3", "{released}");
    assert_eq!(
        released["structuredContent"],
        json!({"event": null, "gap": {"requested_after_cursor": 1, "oldest_available_cursor": 3}})
    );
    subscribed(&fake, 2).await;
    assert_eq!(fake.handshakes(), 2);

    let next = session
        .start_call("events_wait", json!({"after_cursor": 2, "session_key": SESSION, "timeout_ms": 300_000}))
        .await;
    session.request("ping", json!({})).await;
    fake.emit("session.message", session_message("user", "after", None, "m2"));
    let delivered = session.result(next).await;
    assert_eq!(text(&delivered), "event 3");
    assert_eq!(delivered["structuredContent"]["event"]["text"], "after");
    // The retained event before the outage is still there for anyone who asks.
    let polled = session.call("events_poll", json!({"after_cursor": 0})).await;
    assert_eq!(polled["structuredContent"]["events"].as_array().unwrap().len(), 2);
    assert_eq!(polled["structuredContent"]["gap"]["oldest_available_cursor"], 3);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_response_times_out_with_a_clear_error_and_the_link_stays() {
    let fake = gateway().await;
    fake.on("sessions.list", |_| Reply::Stall);
    let mut session = Session::start(&fake).await;

    let stalled = session.call("conversations_list", json!({})).await;
    assert!(is_error(&stalled));
    assert_eq!(text(&stalled), "gateway method `sessions.list` got no response within 180s");
    fake.on("sessions.list", |_| Reply::Ok(json!({"sessions": []})));
    assert!(!is_error(&session.call("conversations_list", json!({})).await));
    assert_eq!(fake.handshakes(), 1, "a timeout does not cost the connection");
}

#[tokio::test(start_paused = true)]
async fn malformed_frames_are_skipped() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;
    for garbage in ["not json {", r#"{"type":"res"}"#, r#"{"type":"mystery"}"#, "[]", r#"{"type":"event"}"#] {
        fake.send_raw(garbage);
    }
    fake.send_raw(r#"{"type":"event","event":"session.message","payload":"not an object"}"#);
    fake.emit("session.message", session_message("user", "after garbage", None, "m1"));
    let event = wait_event(&mut session, 0, None).await;
    assert_eq!((event["cursor"].as_u64(), event["text"].as_str()), (Some(1), Some("after garbage")));
    assert_eq!(fake.handshakes(), 1, "no reconnect was needed");
}

/// A raw `session.message` event frame of exactly `len` bytes.
fn message_frame_of_len(len: usize) -> String {
    let frame = |content: &str| {
        format!(
            r#"{{"type":"event","event":"session.message","payload":{{"sessionKey":"{SESSION}","message":{{"role":"user","content":"{content}"}}}}}}"#
        )
    };
    frame(&"x".repeat(len - frame("").len()))
}

#[tokio::test(start_paused = true)]
async fn an_oversize_inbound_frame_costs_the_link_not_the_bridge() {
    const CAP: usize = 64 * 1024;
    let fake = gateway().await;
    fake.on("sessions.list", |_| Reply::Ok(json!({"sessions": []})));
    let (mut options, identity) = crate::support::options(&fake, clawmcp_serve::ClaudeChannelMode::Auto);
    options.max_inbound_frame_bytes = CAP;
    let mut session = Session::spawn(options, Some(identity));
    session.initialize().await;
    subscribed(&fake, 1).await;

    assert_eq!(message_frame_of_len(CAP).len(), CAP);
    fake.send_raw(&message_frame_of_len(CAP));
    assert_eq!(wait_event(&mut session, 0, None).await["cursor"], 1, "a frame of exactly the cap is accepted");

    let waiting = session.start_call("events_wait", json!({"after_cursor": 1, "timeout_ms": 300_000})).await;
    session.request("ping", json!({})).await;
    fake.send_raw(&message_frame_of_len(CAP + 1));
    let released = session.result(waiting).await;
    assert_eq!(text(&released), "event gap before 3", "{released}");
    assert_eq!(within(fake.wait_for_client_closes(1)).await[0].1, 1009, "the bridge says why it hung up");
    subscribed(&fake, 2).await;
    assert!(!is_error(&session.call("conversations_list", json!({})).await));
}

#[tokio::test(start_paused = true)]
async fn an_oversize_request_is_refused_locally() {
    let fake = gateway_with(FakeConfig { max_payload: 4096, ..FakeConfig::default() }).await;
    fake.on("sessions.describe", |_| Reply::Ok(json!({"session": crate::support::seeded_row()})));
    fake.on("send", |_| Reply::Ok(json!({})));
    let mut session = Session::start(&fake).await;

    let refused = session.call("messages_send", json!({"session_key": SESSION, "text": "x".repeat(5000)})).await;
    assert!(is_error(&refused));
    assert!(text(&refused).contains("over the gateway's maxPayload of 4096 bytes; nothing was sent"), "{refused}");
    assert!(fake.requests("send").is_empty());
    assert!(!is_error(&session.call("messages_send", json!({"session_key": SESSION, "text": "small"})).await));
}

#[tokio::test(start_paused = true)]
async fn a_connection_dropped_mid_call_is_an_error_and_the_bridge_recovers() {
    let fake = gateway().await;
    fake.on("sessions.list", |_| Reply::DropConnection);
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    let dropped = session.call("conversations_list", json!({})).await;
    assert!(is_error(&dropped));
    assert!(
        text(&dropped).starts_with("the gateway connection dropped while `sessions.list` was in flight"),
        "{dropped}"
    );
    fake.on("sessions.list", |_| Reply::Ok(json!({"sessions": [crate::support::seeded_row()]})));
    let listed = session.call("conversations_list", json!({})).await;
    assert_eq!(listed["structuredContent"]["conversations"][0]["sessionKey"], SESSION);
    subscribed(&fake, 2).await;
    fake.emit("session.message", session_message("user", "after the drop", None, "m1"));
    // Cursor 1 is the hole the reconnect left.
    assert_eq!(wait_event(&mut session, 1, Some(SESSION)).await["text"], "after the drop");
}

#[tokio::test(start_paused = true)]
async fn a_gateway_that_stops_accepting_us_is_reported_per_call_and_the_session_stays() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;
    fake.refuse_auth(Some(gateway_error(
        "INVALID_REQUEST",
        "unauthorized: gateway token mismatch",
        Some(json!({"code": "AUTH_TOKEN_MISMATCH"})),
    )));
    fake.restart();
    within(async {
        while fake.connect_attempts() < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;

    let refused = session.call("messages_read", json!({"session_key": SESSION})).await;
    assert!(is_error(&refused));
    assert!(text(&refused).starts_with("the gateway client stopped reconnecting"), "{refused}");
    assert!(text(&refused).contains("gateway token mismatch"), "{refused}");
    assert_eq!(text(&session.call("events_poll", json!({})).await), "events: 0", "local tools keep working");
    assert_eq!(session.finish().await.unwrap(), clawmcp_serve::ServeExit::InputClosed);
}
