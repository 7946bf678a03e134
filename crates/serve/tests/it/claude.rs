//! Claude channel mode: capabilities, `notifications/claude/channel` for routed user messages,
//! permission request tracking, owner replies turned into permission notifications, and mode
//! `off` doing none of it.

use std::time::Duration;

use clawmcp_serve::{ClaudeChannelMode, PENDING_CLAUDE_PERMISSION_TTL_MS, server_version};
use clawmcp_testkit::FakeConfig;
use serde_json::{Value, json};

use crate::support::{SESSION, Session, barrier, gateway, gateway_with, session_message, subscribed, wait_event};

fn permission_request(id: &str) -> Value {
    json!({"request_id": id, "tool_name": "Bash", "description": "run ls", "input_preview": "ls -la"})
}

const PERMISSION_REQUEST: &str = "notifications/claude/channel/permission_request";

#[tokio::test(start_paused = true)]
async fn initialize_advertises_the_real_bridges_identity_and_claude_capabilities() {
    let fake = gateway().await;
    for (mode, capabilities) in [
        (
            ClaudeChannelMode::Auto,
            r#"{"experimental":{"claude/channel":{},"claude/channel/permission":{}},"tools":{"listChanged":true}}"#,
        ),
        (
            ClaudeChannelMode::On,
            r#"{"experimental":{"claude/channel":{},"claude/channel/permission":{}},"tools":{"listChanged":true}}"#,
        ),
        (ClaudeChannelMode::Off, r#"{"tools":{"listChanged":true}}"#),
    ] {
        let (options, identity) = crate::support::options(&fake, mode);
        let mut session = Session::spawn(options, Some(identity));
        let result = session.initialize().await;
        assert_eq!(result["capabilities"].to_string(), capabilities, "{mode:?}");
        assert_eq!(result["serverInfo"], json!({"name": "openclaw", "version": server_version()}));
        assert!(server_version().starts_with("2026.9.6+clawmcp."));
        session.finish().await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn protocol_version_is_negotiated_like_the_real_bridges_sdk() {
    let fake = gateway().await;
    let (options, identity) = crate::support::options(&fake, ClaudeChannelMode::Off);
    let mut session = Session::spawn(options, Some(identity));
    for (asked, answered) in [("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")]
    {
        let response = session
            .request(
                "initialize",
                json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}),
            )
            .await;
        assert_eq!(response["result"]["protocolVersion"], answered, "asked {asked}");
    }
    session.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn routed_user_messages_are_pushed_as_channel_notifications() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    fake.emit("session.message", session_message("user", "inbound user message via chat.send", Some(true), "fc7738b8"));
    fake.emit("session.message", session_message("assistant", "an answer", None, "a1"));
    fake.emit("session.message", json!({"sessionKey": SESSION, "message": {"role": "user", "content": "no route"}}));
    let mut non_text = session_message("user", "", None, "img");
    non_text["message"]["content"] = json!([{"type": "image", "source": {}}]);
    fake.emit("session.message", non_text);
    barrier(&mut session, &fake).await;

    let notifications = session.pending_notifications().await;
    assert_eq!(
        notifications,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/claude/channel", "params": {
                "content": "inbound user message via chat.send",
                "meta": {"session_key": SESSION, "channel": "imessage", "to": "+15551234567", "account_id": "imessage-default", "thread_id": "thread-42", "message_id": "fc7738b8"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/claude/channel", "params": {
                "content": "[non-text message]",
                "meta": {"session_key": SESSION, "channel": "imessage", "to": "+15551234567", "account_id": "imessage-default", "thread_id": "thread-42", "message_id": "img"}}}),
        ],
        "only routed user messages; assistant and unrouted ones are queued but not pushed"
    );
    let polled = session.call("events_poll", json!({"session_key": SESSION})).await;
    assert_eq!(polled["structuredContent"]["events"].as_array().unwrap().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn an_owner_reply_answers_a_tracked_permission_request() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    session.notify(PERMISSION_REQUEST, permission_request("abcde")).await;
    let request_event = wait_event(&mut session, 0, None).await;
    assert_eq!(
        request_event,
        json!({"cursor": 1, "type": "claude_permission_request", "requestId": "abcde", "toolName": "Bash", "description": "run ls", "inputPreview": "ls -la"})
    );

    // A non-owner's identical text is an ordinary message: queued and pushed; the request stays.
    fake.emit("session.message", session_message("user", "yes abcde", Some(false), "m-guest"));
    barrier(&mut session, &fake).await;
    let notifications = session.pending_notifications().await;
    assert_eq!(notifications.len(), 1);
    assert_eq!(notifications[0]["method"], "notifications/claude/channel");
    assert_eq!(notifications[0]["params"]["content"], "yes abcde");

    // The owner's reply becomes the permission notification, and nothing else.
    fake.emit("session.message", session_message("user", "Yes ABCDE", Some(true), "m-owner"));
    let barrier_cursor = barrier(&mut session, &fake).await;
    assert_eq!(
        session.pending_notifications().await,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/claude/channel/permission", "params": {"request_id": "abcde", "behavior": "allow"}})
        ]
    );
    let polled = session.call("events_poll", json!({"after_cursor": 0, "session_key": SESSION})).await;
    let texts: Vec<&str> =
        polled["structuredContent"]["events"].as_array().unwrap().iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["yes abcde"], "the owner's reply is not queued");
    assert_eq!(barrier_cursor, 4, "guest message 2, barrier 3, owner reply consumed, barrier 4");

    // Answered: the same reply again is an ordinary message.
    fake.emit("session.message", session_message("user", "no abcde", Some(true), "m-again"));
    barrier(&mut session, &fake).await;
    let notifications = session.pending_notifications().await;
    assert_eq!((notifications.len(), notifications[0]["method"].as_str()), (1, Some("notifications/claude/channel")));
}

#[tokio::test(start_paused = true)]
async fn replies_deny_and_ids_follow_the_five_letter_rule() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    for id in ["kmnop", "abcdl", "ABCDE"] {
        session.notify(PERMISSION_REQUEST, permission_request(id)).await;
    }
    session.notify(PERMISSION_REQUEST, json!({"request_id": "zzzzz", "tool_name": "Bash"})).await;
    assert_eq!(wait_event(&mut session, 2, None).await["requestId"], "ABCDE");
    for (text, owner) in [("no KMNOP", true), ("yes abcdl", true), ("yes abcde", true), ("yes kmnop", false)] {
        fake.emit("session.message", session_message("user", text, Some(owner), text));
    }
    barrier(&mut session, &fake).await;

    let notifications = session.pending_notifications().await;
    let permission: Vec<&Value> =
        notifications.iter().filter(|n| n["method"] == "notifications/claude/channel/permission").collect();
    assert_eq!(
        permission,
        [
            &json!({"jsonrpc": "2.0", "method": "notifications/claude/channel/permission", "params": {"request_id": "kmnop", "behavior": "deny"}})
        ]
    );
    let forwarded: Vec<&str> = notifications
        .iter()
        .filter(|n| n["method"] == "notifications/claude/channel")
        .map(|n| n["params"]["content"].as_str().unwrap())
        .collect();
    // `l` is never an id letter; an id tracked in upper case can never match; the malformed
    // request was not tracked; a non-owner never answers.
    assert_eq!(forwarded, ["yes abcdl", "yes abcde", "yes kmnop"]);
    let polled = session.call("events_poll", json!({})).await;
    let requests = polled["structuredContent"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "claude_permission_request")
        .count();
    assert_eq!(requests, 3, "the malformed request is not queued");
}

#[tokio::test(start_paused = true)]
async fn tracked_permissions_expire_after_an_hour() {
    // Ticks far apart, so jumping an hour of virtual time does not trip the tick watchdog.
    let fake =
        gateway_with(FakeConfig { tick_interval: Duration::from_secs(10 * 3600), ..FakeConfig::default() }).await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    session.notify(PERMISSION_REQUEST, permission_request("abcde")).await;
    session.notify(PERMISSION_REQUEST, permission_request("fghij")).await;
    wait_event(&mut session, 1, None).await;
    tokio::time::advance(Duration::from_millis(PENDING_CLAUDE_PERMISSION_TTL_MS - 1)).await;
    fake.emit("session.message", session_message("user", "yes abcde", Some(true), "in-time"));
    barrier(&mut session, &fake).await;
    assert_eq!(session.pending_notifications().await[0]["method"], "notifications/claude/channel/permission");

    tokio::time::advance(Duration::from_millis(1)).await;
    fake.emit("session.message", session_message("user", "yes fghij", Some(true), "too-late"));
    barrier(&mut session, &fake).await;
    let late = session.pending_notifications().await;
    assert_eq!(
        (late.len(), late[0]["method"].as_str()),
        (1, Some("notifications/claude/channel")),
        "expired: an ordinary message"
    );
}

#[tokio::test(start_paused = true)]
async fn mode_off_advertises_nothing_and_sends_nothing() {
    let fake = gateway().await;
    let mut session = Session::start_mode(&fake, ClaudeChannelMode::Off).await;
    subscribed(&fake, 1).await;

    session.notify(PERMISSION_REQUEST, permission_request("abcde")).await;
    fake.emit("session.message", session_message("user", "hello", Some(true), "m1"));
    fake.emit("session.message", session_message("user", "yes abcde", Some(true), "m2"));
    barrier(&mut session, &fake).await;

    assert!(session.pending_notifications().await.is_empty());
    let polled = session.call("events_poll", json!({})).await;
    let types: Vec<&str> =
        polled["structuredContent"]["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "message", "message"], "no permission request tracked; the reply is a message");
}
