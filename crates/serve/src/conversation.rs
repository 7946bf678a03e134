//! A gateway session row seen as a conversation: the real bridge's `toConversation`
//! (`src/mcp/channel-shared.ts`, openclaw 2026.9.6).
//!
//! The bridge never invents routing. A row becomes a conversation only when it already carries
//! a channel and a recipient; everything a reply needs (`channel`, `to`, `accountId`,
//! `threadId`) is read from the route the gateway stored, in the same precedence as upstream:
//! the delivery context first, then the `last*` fields, then the origin. The key order of the
//! object is upstream's, so `JSON.stringify` output matches byte for byte.

use serde_json::{Map, Value};

use crate::js::{is_nullish, to_text};

/// The conversation for a session row, or `None` when the row has no channel or no recipient.
pub(crate) fn to_conversation(row: &Value) -> Option<Value> {
    let field = |key: &str| row.get(key);
    let delivery = |key: &str| row.get("deliveryContext").and_then(|context| context.get(key));
    let origin = |key: &str| row.get("origin").and_then(|origin| origin.get(key));

    let channel = to_text(delivery("channel"))
        .or_else(|| to_text(field("lastChannel")))
        .or_else(|| to_text(field("channel")))
        .or_else(|| to_text(origin("provider")))
        .map(|channel| channel.to_lowercase())?;
    let to = to_text(delivery("to")).or_else(|| to_text(field("lastTo")))?;

    let mut conversation = Map::new();
    if let Some(key) = field("key") {
        conversation.insert("sessionKey".into(), key.clone());
    }
    conversation.insert("channel".into(), channel.into());
    conversation.insert("to".into(), to.into());
    let account = to_text(delivery("accountId"))
        .or_else(|| to_text(field("lastAccountId")))
        .or_else(|| to_text(origin("accountId")));
    insert_some(&mut conversation, "accountId", account.map(Value::from));
    // `??` in upstream: only null/absent falls through, so "" or 0 is a thread id.
    let thread = [delivery("threadId"), field("lastThreadId"), origin("threadId")]
        .into_iter()
        .find(|candidate| !is_nullish(*candidate))
        .flatten()
        .cloned();
    insert_some(&mut conversation, "threadId", thread);
    for key in ["label", "displayName", "derivedTitle", "lastMessagePreview"] {
        insert_some(&mut conversation, key, to_text(field(key)).map(Value::from));
    }
    let updated_at = field("updatedAt").filter(|value| value.is_number()).cloned().unwrap_or(Value::Null);
    conversation.insert("updatedAt".into(), updated_at);
    Some(Value::Object(conversation))
}

/// The route of a `session.message` event: upstream builds it from the payload's top-level
/// `last*` fields only (the embedded session row is ignored).
pub(crate) fn event_conversation(session_key: &str, payload: &Value) -> Option<Value> {
    let mut row = Map::new();
    row.insert("key".into(), session_key.into());
    for key in ["lastChannel", "lastTo", "lastAccountId"] {
        insert_some(&mut row, key, to_text(payload.get(key)).map(Value::from));
    }
    if let Some(thread) = payload.get("lastThreadId") {
        row.insert("lastThreadId".into(), thread.clone());
    }
    to_conversation(&Value::Object(row))
}

fn insert_some(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_seeded_row_becomes_the_golden_conversation() {
        let row = json!({
            "key": "agent:main:main", "label": null, "displayName": "Harness Seeded Conversation",
            "derivedTitle": "Harness Seeded Conversation", "lastMessagePreview": "seeded image attachment",
            "channel": "imessage", "origin": {"provider": "imessage", "to": "+15551234567"},
            "updatedAt": 1795991581121u64,
            "deliveryContext": {"channel": "imessage", "to": "+15551234567", "accountId": "imessage-default", "threadId": "thread-42"},
        });
        let conversation = to_conversation(&row).unwrap();
        assert_eq!(
            serde_json::to_string(&conversation).unwrap(),
            r#"{"sessionKey":"agent:main:main","channel":"imessage","to":"+15551234567","accountId":"imessage-default","threadId":"thread-42","displayName":"Harness Seeded Conversation","derivedTitle":"Harness Seeded Conversation","lastMessagePreview":"seeded image attachment","updatedAt":1795991581121}"#
        );
    }

    #[test]
    fn rows_without_channel_or_recipient_are_not_conversations() {
        assert!(to_conversation(&json!({"key": "k", "lastTo": "+1"})).is_none());
        assert!(to_conversation(&json!({"key": "k", "channel": "telegram"})).is_none());
        assert!(to_conversation(&json!({"key": "k", "channel": "  ", "lastTo": "+1"})).is_none());
        // origin.to is not a recipient upstream.
        assert!(to_conversation(&json!({"key": "k", "channel": "x", "origin": {"to": "+1"}})).is_none());
    }

    #[test]
    fn precedence_and_normalisation_follow_upstream() {
        let row = json!({
            "key": "k", "lastChannel": " Telegram ", "channel": "discord", "origin": {"provider": "x", "accountId": "o-acct", "threadId": 7},
            "lastTo": " 123 ", "lastThreadId": null, "updatedAt": "yesterday",
        });
        let conversation = to_conversation(&row).unwrap();
        assert_eq!(
            conversation,
            json!({"sessionKey": "k", "channel": "telegram", "to": "123", "accountId": "o-acct", "threadId": 7, "updatedAt": null})
        );
        let empty_thread =
            to_conversation(&json!({"key": "k", "channel": "c", "lastTo": "t", "lastThreadId": ""})).unwrap();
        assert_eq!(empty_thread["threadId"], "", "only null/absent fall through");
    }

    #[test]
    fn event_routes_come_from_top_level_last_fields_only() {
        let payload = json!({
            "sessionKey": "k", "lastChannel": "imessage", "lastTo": "+1", "lastAccountId": "a", "lastThreadId": "t",
            "session": {"deliveryContext": {"channel": "other", "to": "other"}},
        });
        assert_eq!(
            serde_json::to_string(&event_conversation("k", &payload).unwrap()).unwrap(),
            r#"{"sessionKey":"k","channel":"imessage","to":"+1","accountId":"a","threadId":"t","updatedAt":null}"#
        );
        let only_nested = json!({"sessionKey": "k", "deliveryContext": {"channel": "c", "to": "t"}});
        assert!(event_conversation("k", &only_nested).is_none());
    }
}
