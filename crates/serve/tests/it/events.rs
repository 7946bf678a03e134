//! The live event queue through the tools: event shapes, cursors, the capacity edge and its
//! gap, `events_wait` (immediate, woken, gap, timeout, cancellation) and the session filter.

use std::time::Duration;

use clawmcp_serve::{EVENTS_POLL_LIMIT, QUEUE_LIMIT};
use serde_json::json;
use tokio::time::Instant;

use crate::support::{SESSION, Session, barrier, gateway, is_error, session_message, subscribed, text, wait_event};

#[tokio::test(start_paused = true)]
async fn a_session_message_becomes_a_message_event_with_upstreams_shape() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    let payload = session_message("assistant", "live injected note", None, "3a792dc9");
    fake.emit("session.message", payload.clone());
    fake.emit("session.message", json!({"message": {"role": "user", "content": "no session key"}}));
    fake.emit("sessions.changed", json!({"sessionKey": SESSION, "reason": "activity-summary"}));
    let event = wait_event(&mut session, 0, Some(SESSION)).await;
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        serde_json::to_string(&json!({
            "cursor": 1, "type": "message", "sessionKey": SESSION,
            "conversation": {"sessionKey": SESSION, "channel": "imessage", "to": "+15551234567", "accountId": "imessage-default", "threadId": "thread-42", "updatedAt": null},
            "messageId": "3a792dc9", "messageSeq": 5, "role": "assistant", "text": "live injected note", "raw": payload,
        }))
        .unwrap()
    );
    barrier(&mut session, &fake).await;
    let polled = session.call("events_poll", json!({"session_key": SESSION})).await;
    assert_eq!(text(&polled), "events: 1", "no session key, no event; other gateway events are ignored");
    assert_eq!(polled["structuredContent"], json!({"events": [event], "next_cursor": 1}));

    let empty = session.call("events_poll", json!({"after_cursor": 1, "session_key": SESSION})).await;
    assert_eq!(empty["structuredContent"], json!({"events": [], "next_cursor": 1}));
}

#[tokio::test(start_paused = true)]
async fn the_queue_keeps_the_newest_thousand_and_reports_the_gap() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    for n in 0..QUEUE_LIMIT {
        fake.emit(
            "session.message",
            json!({"sessionKey": SESSION, "messageSeq": n, "message": {"role": "user", "content": "x"}}),
        );
    }
    assert_eq!(wait_event(&mut session, QUEUE_LIMIT as u64 - 1, None).await["cursor"], QUEUE_LIMIT);
    let full = session.call("events_poll", json!({"limit": EVENTS_POLL_LIMIT})).await;
    assert_eq!(text(&full), "events: 200");
    assert_eq!(full["structuredContent"]["events"][0]["cursor"], 1, "exactly QUEUE_LIMIT events fit");
    assert_eq!(full["structuredContent"]["next_cursor"], 200);
    assert!(full["structuredContent"].get("gap").is_none());

    // One more pushes cursor 1 out (the barrier is event 1001).
    let newest = barrier(&mut session, &fake).await;
    assert_eq!(newest, QUEUE_LIMIT as u64 + 1);
    let gapped = session.call("events_poll", json!({"after_cursor": 0, "limit": 1})).await;
    assert_eq!(gapped["structuredContent"]["events"][0]["cursor"], 2);
    assert_eq!(gapped["structuredContent"]["gap"], json!({"requested_after_cursor": 0, "oldest_available_cursor": 2}));
    assert_eq!(gapped["structuredContent"]["next_cursor"], 2);
    let resumed = session.call("events_poll", json!({"after_cursor": 1, "limit": 1})).await;
    assert!(resumed["structuredContent"].get("gap").is_none(), "after_cursor = oldest - 1 resumes cleanly");

    // A known gap makes events_wait return at once, even with nothing matching.
    let started = Instant::now();
    let waited =
        session.call("events_wait", json!({"after_cursor": 0, "session_key": "nobody", "timeout_ms": 300_000})).await;
    assert_eq!(text(&waited), "event gap before 2");
    assert_eq!(
        waited["structuredContent"],
        json!({"event": null, "gap": {"requested_after_cursor": 0, "oldest_available_cursor": 2}})
    );
    assert_eq!(started.elapsed(), Duration::ZERO);

    let over = session.call("events_poll", json!({"limit": EVENTS_POLL_LIMIT + 1})).await;
    assert!(text(&over).ends_with("Too big: expected number to be <=200 at limit"), "{over}");
}

#[tokio::test(start_paused = true)]
async fn events_wait_returns_existing_events_at_once_and_wakes_for_new_ones() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    let pending = session.start_call("events_wait", json!({"session_key": SESSION, "timeout_ms": 300_000})).await;
    // Approvals have no session: a session filter never matches them.
    fake.emit("exec.approval.requested", json!({"id": "a1", "request": {}}));
    fake.emit("session.message", session_message("user", "hello", Some(true), "m1"));
    let woken = session.result(pending).await;
    assert_eq!(text(&woken), "event 2");
    assert_eq!(woken["structuredContent"]["event"]["messageId"], "m1");

    let started = Instant::now();
    let existing = session.call("events_wait", json!({"after_cursor": 0})).await;
    assert_eq!((text(&existing), started.elapsed()), ("event 1", Duration::ZERO), "the first retained match, at once");
    assert_eq!(existing["structuredContent"]["event"]["type"], "exec_approval_requested");
    let blank_filter = session.call("events_wait", json!({"after_cursor": 0, "session_key": "  "})).await;
    assert_eq!(text(&blank_filter), "event 1", "a blank session key filters nothing");
}

#[tokio::test(start_paused = true)]
async fn events_wait_times_out_on_the_paused_clock() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;

    let started = Instant::now();
    let timed_out = session.call("events_wait", json!({"timeout_ms": 1500})).await;
    assert_eq!(text(&timed_out), "timeout");
    assert_eq!(timed_out["structuredContent"], json!({"event": null}));
    assert!(started.elapsed() >= Duration::from_millis(1500));

    let started = Instant::now();
    session.call("events_wait", json!({})).await;
    assert!(started.elapsed() >= Duration::from_secs(30), "the default timeout is 30 s");

    let longest = session.start_call("events_wait", json!({"timeout_ms": 300_000})).await;
    let started = Instant::now();
    assert_eq!(text(&session.result(longest).await), "timeout");
    assert!(started.elapsed() >= Duration::from_secs(300));
    let over = session.call("events_wait", json!({"timeout_ms": 300_001})).await;
    assert!(
        is_error(&over) && text(&over).ends_with("Too big: expected number to be <=300000 at timeout_ms"),
        "{over}"
    );
    let zero = session.call("events_wait", json!({"timeout_ms": 0})).await;
    assert!(text(&zero).ends_with("Too small: expected number to be >=1 at timeout_ms"), "{zero}");
}

#[tokio::test(start_paused = true)]
async fn cancelling_events_wait_releases_it_at_once() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;

    let started = Instant::now();
    let pending = session.start_call("events_wait", json!({"timeout_ms": 300_000})).await;
    session.request("ping", json!({})).await;
    session.notify("notifications/cancelled", json!({"requestId": pending, "reason": "user"})).await;
    let cancelled = session.result(pending).await;
    assert_eq!((is_error(&cancelled), text(&cancelled)), (true, "cancelled"));
    assert!(started.elapsed() < Duration::from_secs(300), "released before its timeout");

    // The queue is untouched: later waits and events work.
    subscribed(&fake, 1).await;
    fake.emit("session.message", session_message("user", "after", None, "m2"));
    assert_eq!(crate::support::wait_event(&mut session, 0, None).await["text"], "after");
}
