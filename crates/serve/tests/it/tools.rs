//! Every tool against the fake gateway: the gateway request it makes (params exact, key order
//! included), the text and structured content it answers with (checked against the golden
//! transcripts of the real bridge where they exist), and its errors.

use std::time::{SystemTime, UNIX_EPOCH};

use clawmcp_testkit::{FakeConfig, Reply, gateway_error};
use serde_json::{Value, json};

use crate::support::{SESSION, Session, barrier, gateway, gateway_with, is_error, seeded_row, subscribed, text};

/// The golden `conversations_list` text of the real bridge (`openclaw mcp serve` 2026.9.6 against
/// the seeded gateway of `e2e/gateway/seed.mjs`; `docs/serve.md` §4).
const GOLDEN_CONVERSATIONS_TEXT: &str = "conversations: 1\n\n{\n  \"conversations\": [\n    {\n      \"sessionKey\": \"agent:main:main\",\n      \"channel\": \"imessage\",\n      \"to\": \"+15551234567\",\n      \"accountId\": \"imessage-default\",\n      \"threadId\": \"thread-42\",\n      \"displayName\": \"Harness Seeded Conversation\",\n      \"derivedTitle\": \"Harness Seeded Conversation\",\n      \"lastMessagePreview\": \"seeded image attachment\",\n      \"updatedAt\": 1795991581121\n    }\n  ]\n}";

fn golden_conversation() -> Value {
    serde_json::from_str(r#"{"sessionKey":"agent:main:main","channel":"imessage","to":"+15551234567","accountId":"imessage-default","threadId":"thread-42","displayName":"Harness Seeded Conversation","derivedTitle":"Harness Seeded Conversation","lastMessagePreview":"seeded image attachment","updatedAt":1795991581121}"#).unwrap()
}

fn attachment_message() -> Value {
    json!({"role": "user", "content": "seeded image attachment", "__openclaw": {
        "media": [{"url": "media://inbound/seeded-image.png", "contentType": "image/png", "kind": "image", "fileName": "seeded-image.png", "sizeBytes": 3}],
        "id": "msg-attachment", "seq": 3}, "timestamp": 1_795_991_581_123u64})
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[tokio::test(start_paused = true)]
async fn conversations_list_matches_the_golden_transcript() {
    let fake = gateway().await;
    fake.on("sessions.list", |_| {
        Reply::Ok(json!({"sessions": [seeded_row(), {"key": "agent:main:noroute", "channel": "telegram"}]}))
    });
    let mut session = Session::start(&fake).await;

    let result = session.call("conversations_list", json!({})).await;
    assert_eq!(text(&result), GOLDEN_CONVERSATIONS_TEXT);
    assert_eq!(result["structuredContent"], json!({"conversations": [golden_conversation()]}));
    assert!(result.get("isError").is_none(), "like the real bridge's SDK, success leaves isError out");
    let sent = fake.requests("sessions.list");
    assert_eq!(sent[0].to_string(), r#"{"limit":50,"includeDerivedTitles":true,"includeLastMessage":true}"#);
}

#[tokio::test(start_paused = true)]
async fn conversations_list_passes_filters_and_filters_channels_after_the_limit() {
    let fake = gateway().await;
    let mut telegram = seeded_row();
    telegram["key"] = "agent:main:tg".into();
    telegram["deliveryContext"]["channel"] = "telegram".into();
    fake.on("sessions.list", move |_| Reply::Ok(json!({"sessions": [seeded_row(), telegram.clone()]})));
    let mut session = Session::start(&fake).await;

    let arguments = json!({"limit": 500, "search": "Harness", "channel": " IMESSAGE ", "includeDerivedTitles": false, "unknown": 1});
    let result = session.call("conversations_list", arguments).await;
    assert_eq!(result["structuredContent"]["conversations"], json!([golden_conversation()]));
    assert_eq!(
        fake.requests("sessions.list")[0].to_string(),
        r#"{"limit":500,"search":"Harness","includeDerivedTitles":false,"includeLastMessage":true}"#
    );
    let all = session.call("conversations_list", json!({"limit": 1, "channel": "  "})).await;
    assert_eq!(
        all["structuredContent"]["conversations"].as_array().unwrap().len(),
        2,
        "a blank channel filters nothing"
    );

    let refused = session.call("conversations_list", json!({"limit": 501})).await;
    assert!(is_error(&refused));
    assert_eq!(
        text(&refused),
        "MCP error -32602: Input validation error: Invalid arguments for tool conversations_list: Too big: expected number to be <=500 at limit"
    );
    assert_eq!(fake.requests("sessions.list").len(), 2, "invalid arguments never reach the gateway");
}

#[tokio::test(start_paused = true)]
async fn conversation_get_trims_the_key_and_reports_missing_routes() {
    let fake = gateway().await;
    fake.on("sessions.describe", |params| match params["key"].as_str() {
        Some(SESSION) => Reply::Ok(json!({"session": seeded_row()})),
        Some("agent:main:noroute") => {
            Reply::Ok(json!({"session": {"key": "agent:main:noroute", "channel": "telegram"}}))
        }
        _ => Reply::Ok(json!({"session": null})),
    });
    let mut session = Session::start(&fake).await;

    let found = session.call("conversation_get", json!({"session_key": " agent:main:main "})).await;
    assert_eq!(text(&found), "conversation agent:main:main");
    assert_eq!(found["structuredContent"], json!({"conversation": golden_conversation()}));
    assert_eq!(
        fake.requests("sessions.describe")[0].to_string(),
        r#"{"key":"agent:main:main","includeDerivedTitles":true,"includeLastMessage":true}"#
    );

    for key in ["agent:main:does-not-exist", "agent:main:noroute"] {
        let missing = session.call("conversation_get", json!({"session_key": key})).await;
        assert_eq!((is_error(&missing), text(&missing)), (true, format!("conversation not found: {key}").as_str()));
        assert!(missing.get("structuredContent").is_none());
    }
    let blank = session.call("conversation_get", json!({"session_key": "   "})).await;
    assert_eq!(text(&blank), "conversation not found:    ");
    assert_eq!(fake.requests("sessions.describe").len(), 3, "a blank key is not looked up");

    let empty = session.call("conversation_get", json!({"session_key": ""})).await;
    assert_eq!(
        text(&empty),
        "MCP error -32602: Input validation error: Invalid arguments for tool conversation_get: Too small: expected string to have >=1 characters at session_key"
    );
}

#[tokio::test(start_paused = true)]
async fn messages_read_prints_the_transcript_and_bounds_the_limit() {
    let fake = gateway().await;
    let messages = json!([
        {"role": "user", "content": "hello from the harness user", "__openclaw": {"id": "msg-1", "seq": 1}},
        attachment_message(),
    ]);
    let reply = messages.clone();
    fake.on("sessions.get", move |_| Reply::Ok(json!({"messages": reply.clone(), "session": {}})));
    let mut session = Session::start(&fake).await;

    let result = session.call("messages_read", json!({"session_key": SESSION})).await;
    let payload = json!({"messages": messages});
    assert_eq!(text(&result), format!("messages: 2\n\n{}", serde_json::to_string_pretty(&payload).unwrap()));
    assert_eq!(result["structuredContent"], payload);
    assert_eq!(fake.requests("sessions.get")[0].to_string(), r#"{"key":"agent:main:main","limit":20}"#);

    assert!(!is_error(&session.call("messages_read", json!({"session_key": SESSION, "limit": 200})).await));
    assert_eq!(fake.requests("sessions.get")[1]["limit"], 200);
    for (limit, message) in [(201, "Too big: expected number to be <=200"), (0, "Too small: expected number to be >=1")]
    {
        let refused = session.call("messages_read", json!({"session_key": SESSION, "limit": limit})).await;
        assert!(text(&refused).ends_with(&format!("{message} at limit")), "{refused}");
    }
    let missing = session.call("messages_read", json!({})).await;
    assert!(text(&missing).ends_with("Invalid input: expected string, received undefined at session_key"));
}

#[tokio::test(start_paused = true)]
async fn attachments_fetch_uses_exact_lookup_when_the_gateway_advertises_it() {
    let fake = gateway().await;
    fake.on("chat.message.get", |params| match params["messageId"].as_str() {
        Some("msg-attachment") => Reply::Ok(json!({"ok": true, "message": attachment_message()})),
        _ => Reply::Ok(json!({"ok": false, "unavailableReason": "not_found"})),
    });
    let mut session = Session::start(&fake).await;

    let result =
        session.call("attachments_fetch", json!({"session_key": SESSION, "message_id": "msg-attachment"})).await;
    assert_eq!(text(&result), "attachments: 1");
    assert_eq!(
        result["structuredContent"],
        json!({"attachments": [{"type": "openclaw_media", "media": {"url": "media://inbound/seeded-image.png", "contentType": "image/png", "kind": "image", "fileName": "seeded-image.png", "sizeBytes": 3, "transcribed": false}}],
               "message": attachment_message()})
    );
    assert_eq!(
        fake.requests("chat.message.get")[0].to_string(),
        r#"{"sessionKey":"agent:main:main","messageId":"msg-attachment"}"#
    );

    let missing = session.call("attachments_fetch", json!({"session_key": SESSION, "message_id": "nope"})).await;
    assert_eq!((is_error(&missing), text(&missing)), (true, "message not found: nope"));
    assert!(fake.requests("sessions.get").is_empty());
}

#[tokio::test(start_paused = true)]
async fn attachments_fetch_scans_recent_messages_on_older_gateways() {
    let mut config = FakeConfig::default();
    config.methods.retain(|method| method != "chat.message.get");
    let fake = gateway_with(config).await;
    fake.on("sessions.get", |_| {
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "abc"}});
        Reply::Ok(json!({"messages": [
            {"id": "msg-legacy", "role": "user", "content": [{"type": "text", "text": "see"}, image]},
            attachment_message(),
        ]}))
    });
    let mut session = Session::start(&fake).await;

    let legacy = session
        .call("attachments_fetch", json!({"session_key": SESSION, "message_id": "msg-legacy", "limit": 7}))
        .await;
    assert_eq!(text(&legacy), "attachments: 1");
    assert_eq!(legacy["structuredContent"]["attachments"][0]["type"], "image");
    assert_eq!(fake.requests("sessions.get")[0].to_string(), r#"{"key":"agent:main:main","limit":7}"#);

    let by_metadata_id =
        session.call("attachments_fetch", json!({"session_key": SESSION, "message_id": "msg-attachment"})).await;
    assert_eq!(by_metadata_id["structuredContent"]["attachments"][0]["type"], "openclaw_media");
    assert_eq!(fake.requests("sessions.get")[1]["limit"], 100, "the legacy scan defaults to 100");
    assert!(fake.requests("chat.message.get").is_empty());
}

#[tokio::test(start_paused = true)]
async fn messages_send_replies_through_the_stored_route_only() {
    let fake = gateway().await;
    fake.on("sessions.describe", |params| {
        let mut row = seeded_row();
        row["key"] = params["key"].clone();
        match params["key"].as_str() {
            Some("agent:main:numeric") => row["deliveryContext"]["threadId"] = json!(42),
            Some("agent:main:noroute") => row = json!({"key": "agent:main:noroute", "channel": "imessage"}),
            _ => {}
        }
        Reply::Ok(json!({"session": row}))
    });
    fake.on("send", |params| match params["message"].as_str() {
        Some("fail") => Reply::Error(gateway_error("INVALID_REQUEST", "unsupported channel: imessage", None)),
        _ => Reply::Ok(json!({"runId": "r-1", "messageId": "m-1", "channel": "imessage"})),
    });
    let mut session = Session::start(&fake).await;

    let sent = session.call("messages_send", json!({"session_key": SESSION, "text": "reply from harness"})).await;
    assert_eq!(text(&sent), "sent");
    assert_eq!(
        sent["structuredContent"],
        json!({"result": {"runId": "r-1", "messageId": "m-1", "channel": "imessage"}})
    );
    let mut params = fake.requests("send").remove(0);
    let key = params.as_object_mut().unwrap().remove("idempotencyKey").unwrap();
    assert_eq!(
        params.to_string(),
        r#"{"to":"+15551234567","channel":"imessage","accountId":"imessage-default","threadId":"thread-42","message":"reply from harness","sessionKey":"agent:main:main"}"#
    );
    let key = key.as_str().unwrap();
    assert_eq!((key.len(), &key[14..15]), (36, "4"), "a random UUID v4: {key}");

    session.call("messages_send", json!({"session_key": "agent:main:numeric", "text": "x"})).await;
    assert_eq!(fake.requests("send")[1]["threadId"], "42", "thread ids are sent as strings");
    assert_ne!(fake.requests("send")[1]["idempotencyKey"], key, "a fresh key per send");

    let refused = session.call("messages_send", json!({"session_key": SESSION, "text": "fail"})).await;
    assert_eq!((is_error(&refused), text(&refused)), (true, "unsupported channel: imessage"));

    let unrouted = session.call("messages_send", json!({"session_key": "agent:main:noroute", "text": "x"})).await;
    assert_eq!(text(&unrouted), "Conversation not found for session agent:main:noroute");
    assert_eq!(fake.requests("send").len(), 3, "no route, no send");

    let empty = session.call("messages_send", json!({"session_key": SESSION, "text": ""})).await;
    assert!(text(&empty).ends_with("Too small: expected string to have >=1 characters at text"));
}

#[tokio::test(start_paused = true)]
async fn approvals_are_tracked_listed_and_resolved_through_the_gateway() {
    let fake = gateway().await;
    fake.on("exec.approval.resolve", |params| match params["id"].as_str() {
        Some("a1") => Reply::Ok(json!({"ok": true})),
        _ => Reply::Error(gateway_error(
            "INVALID_REQUEST",
            "unknown or expired approval id",
            Some(json!({"reason": "APPROVAL_NOT_FOUND"})),
        )),
    });
    fake.on("plugin.approval.resolve", |_| Reply::Ok(json!({"ok": true, "plugin": true})));
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;

    let now = now_ms();
    let exec = json!({"approvalKind": "exec", "id": "a1", "request": {"command": "/usr/bin/echo approved-run", "host": "node"}, "createdAtMs": now + 2, "expiresAtMs": now + 600_000});
    let plugin = json!({"id": " p1 ", "request": {"pluginId": "x"}, "createdAtMs": now + 1});
    fake.emit("exec.approval.requested", exec.clone());
    fake.emit("plugin.approval.requested", plugin.clone());
    barrier(&mut session, &fake).await;

    let open = session.call("permissions_list_open", json!({})).await;
    assert_eq!(text(&open), "approvals: 2");
    assert_eq!(
        open["structuredContent"],
        json!({"approvals": [
            {"kind": "plugin", "id": "p1", "request": {"pluginId": "x"}, "createdAtMs": now + 1},
            {"kind": "exec", "id": "a1", "request": exec["request"], "createdAtMs": now + 2, "expiresAtMs": now + 600_000},
        ]})
    );

    let resolved =
        session.call("permissions_respond", json!({"kind": "exec", "id": "a1", "decision": "allow-once"})).await;
    assert_eq!(text(&resolved), "approval resolved");
    assert_eq!(resolved["structuredContent"], json!({"result": {"ok": true}}));
    assert_eq!(fake.requests("exec.approval.resolve")[0].to_string(), r#"{"id":"a1","decision":"allow-once"}"#);
    let plugin_resolved =
        session.call("permissions_respond", json!({"kind": "plugin", "id": "p1", "decision": "allow-always"})).await;
    assert_eq!(plugin_resolved["structuredContent"]["result"]["plugin"], true);
    assert_eq!(fake.requests("plugin.approval.resolve")[0], json!({"id": "p1", "decision": "allow-always"}));

    // The list follows the gateway's events, not our own answers.
    assert_eq!(
        session.call("permissions_list_open", json!({})).await["structuredContent"]["approvals"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    fake.emit("exec.approval.resolved", json!({"id": "a1", "decision": "allow-once", "resolvedBy": "cli"}));
    barrier(&mut session, &fake).await;
    let open = session.call("permissions_list_open", json!({})).await;
    assert_eq!(
        open["structuredContent"]["approvals"],
        json!([{"kind": "plugin", "id": "p1", "request": {"pluginId": "x"}, "createdAtMs": now + 1}])
    );

    let events = session.call("events_poll", json!({})).await;
    let types: Vec<&str> =
        events["structuredContent"]["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["exec_approval_requested", "plugin_approval_requested", "message", "exec_approval_resolved", "message"]
    );
    assert_eq!(
        events["structuredContent"]["events"][0],
        json!({"cursor": 1, "type": "exec_approval_requested", "raw": exec})
    );

    let unknown = session.call("permissions_respond", json!({"kind": "exec", "id": "zzz", "decision": "deny"})).await;
    assert_eq!((is_error(&unknown), text(&unknown)), (true, "unknown or expired approval id"));
    let invalid = session.call("permissions_respond", json!({"kind": "exec", "id": "a1", "decision": "maybe"})).await;
    assert_eq!(
        text(&invalid),
        "MCP error -32602: Input validation error: Invalid arguments for tool permissions_respond: Invalid option: expected one of \"allow-once\"|\"allow-always\"|\"deny\" at decision"
    );
}

#[tokio::test(start_paused = true)]
async fn open_approvals_expire_at_expires_at_ms_or_after_thirty_minutes() {
    // Ticks far apart, so jumping half an hour of virtual time does not trip the tick watchdog.
    let fake =
        gateway_with(FakeConfig { tick_interval: std::time::Duration::from_secs(10 * 3600), ..FakeConfig::default() })
            .await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;
    fake.emit("exec.approval.requested", json!({"id": "short", "expiresAtMs": now_ms() + 60_000}));
    fake.emit("plugin.approval.requested", json!({"id": "default"}));
    barrier(&mut session, &fake).await;
    let ids = |result: &Value| -> Vec<String> {
        result["structuredContent"]["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&session.call("permissions_list_open", json!({})).await), ["short", "default"]);
    tokio::time::advance(std::time::Duration::from_secs(61)).await;
    assert_eq!(ids(&session.call("permissions_list_open", json!({})).await), ["default"]);
    tokio::time::advance(std::time::Duration::from_secs(30 * 60)).await;
    assert!(ids(&session.call("permissions_list_open", json!({})).await).is_empty());
}

#[tokio::test(start_paused = true)]
async fn unknown_tools_and_malformed_calls_are_tool_errors() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    let unknown = session.call("nope", json!({})).await;
    assert_eq!((is_error(&unknown), text(&unknown)), (true, "MCP error -32602: Tool nope not found"));
    let listed = session.request("tools/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "conversations_list",
            "conversation_get",
            "messages_read",
            "attachments_fetch",
            "events_poll",
            "events_wait",
            "messages_send",
            "permissions_list_open",
            "permissions_respond"
        ]
    );
}
