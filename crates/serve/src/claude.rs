//! Claude channel mode: the Claude-specific push protocol layered on the standard tools.
//!
//! When the mode is `on` or `auto` (upstream: `auto` behaves exactly like `on`; there is no
//! client detection) the server advertises `experimental: {"claude/channel": {},
//! "claude/channel/permission": {}}` and:
//!
//! - forwards each inbound **user** message that has a route as `notifications/claude/channel`
//!   (`content` = first text block or `"[non-text message]"`, `meta` all strings);
//! - tracks each `notifications/claude/channel/permission_request` the client sends (the
//!   request id stored as sent) and queues a `claude_permission_request` event;
//! - turns an owner's `yes <id>` / `no <id>` reply (five letters a–z without `l`, any case) for
//!   a tracked id into `notifications/claude/channel/permission {request_id, behavior}`; that
//!   message is then neither queued nor forwarded. A non-owner's identical text is an ordinary
//!   message.
//!
//! With the mode `off` nothing is advertised and nothing is sent. Upstream still tracks
//! permission requests in `off` mode (and would answer an owner's `yes <id>` with a permission
//! notification the client never asked for); we ignore them instead, so `off` means off.
//!
//! Tracked permission requests expire after an hour (upstream's TTL) and at most
//! [`PENDING_CLAUDE_PERMISSIONS_LIMIT`] are kept (upstream is unbounded).

use std::sync::Mutex;

use clawmcp_mcp::stdio::Outbound;
use serde_json::{Map, Value, json};

use crate::js::{is_js_whitespace, is_nullish, to_js_string};

/// Lifetime of a tracked Claude permission request (they have no resolution event).
pub const PENDING_CLAUDE_PERMISSION_TTL_MS: u64 = 60 * 60 * 1000;

/// Most Claude permission requests tracked at once.
pub const PENDING_CLAUDE_PERMISSIONS_LIMIT: usize = 1000;

/// `--claude-channel-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClaudeChannelMode {
    /// The default; identical to `On`.
    #[default]
    Auto,
    On,
    Off,
}

impl ClaudeChannelMode {
    pub fn enabled(self) -> bool {
        self != ClaudeChannelMode::Off
    }

    /// The `experimental` capabilities to advertise, if any.
    pub(crate) fn experimental_capabilities(self) -> Option<Value> {
        self.enabled().then(|| json!({"claude/channel": {}, "claude/channel/permission": {}}))
    }
}

/// Whether a notification reached the client's output queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    Delivered,
    /// The session is over (or never had an output); nothing to report.
    Unavailable,
    Failed,
}

/// The session's output for server-initiated notifications. Closed when the session ends so
/// the transport's writer is not kept alive by us.
pub(crate) struct Notifier {
    outbound: Mutex<Option<Outbound>>,
}

impl Notifier {
    pub(crate) fn new(outbound: Option<Outbound>) -> Self {
        Notifier { outbound: Mutex::new(outbound) }
    }

    fn current(&self) -> Option<Outbound> {
        self.outbound.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub(crate) fn close(&self) {
        self.outbound.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    }

    pub(crate) async fn notify(&self, method: &str, params: &Value) -> Delivery {
        let Some(outbound) = self.current() else { return Delivery::Unavailable };
        match outbound.notify(method, params).await {
            Ok(()) => Delivery::Delivered,
            Err(error) => {
                tracing::warn!(%method, %error, "notification {method} failed");
                Delivery::Failed
            }
        }
    }
}

/// `notifications/claude/channel/permission_request` params, all four required strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PermissionRequest {
    pub(crate) request_id: String,
    tool_name: String,
    description: String,
    input_preview: String,
}

impl PermissionRequest {
    pub(crate) fn parse(params: Option<&Value>) -> Option<Self> {
        let params = params?;
        let field = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(PermissionRequest {
            request_id: field("request_id")?,
            tool_name: field("tool_name")?,
            description: field("description")?,
            input_preview: field("input_preview")?,
        })
    }

    /// The queued event's fields (after `cursor`).
    pub(crate) fn event_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("type".into(), "claude_permission_request".into());
        fields.insert("requestId".into(), self.request_id.clone().into());
        fields.insert("toolName".into(), self.tool_name.clone().into());
        fields.insert("description".into(), self.description.clone().into());
        fields.insert("inputPreview".into(), self.input_preview.clone().into());
        fields
    }
}

/// Permission requests the client is waiting on, by request id as the client sent it.
#[derive(Default)]
pub(crate) struct PendingPermissions {
    /// `(request_id, tracked_at_ms)` in tracking order.
    entries: Vec<(String, u64)>,
}

impl PendingPermissions {
    pub(crate) fn track(&mut self, request_id: &str, now_ms: u64) {
        match self.entries.iter_mut().find(|(id, _)| id == request_id) {
            Some(entry) => entry.1 = now_ms,
            None => {
                self.entries.push((request_id.to_owned(), now_ms));
                if self.entries.len() > PENDING_CLAUDE_PERMISSIONS_LIMIT {
                    self.entries.remove(0);
                }
            }
        }
    }

    pub(crate) fn contains(&self, request_id: &str) -> bool {
        self.entries.iter().any(|(id, _)| id == request_id)
    }

    pub(crate) fn remove(&mut self, request_id: &str) {
        self.entries.retain(|(id, _)| id != request_id);
    }

    pub(crate) fn sweep(&mut self, now_ms: u64) {
        self.entries.retain(|(_, tracked)| now_ms.saturating_sub(*tracked) < PENDING_CLAUDE_PERMISSION_TTL_MS);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behavior {
    Allow,
    Deny,
}

impl Behavior {
    fn as_str(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Deny => "deny",
        }
    }
}

/// Upstream's `/^(yes|no)\s+([a-km-z]{5})$/i`: the decision and the lowercased request id.
pub(crate) fn parse_permission_reply(text: &str) -> Option<(Behavior, String)> {
    let (word, rest) = text.split_at(text.find(is_js_whitespace)?);
    let behavior = if word.eq_ignore_ascii_case("yes") {
        Behavior::Allow
    } else if word.eq_ignore_ascii_case("no") {
        Behavior::Deny
    } else {
        return None;
    };
    let id = rest.trim_start_matches(is_js_whitespace);
    let valid = id.len() == 5 && id.chars().all(|c| c.is_ascii_alphabetic() && !c.eq_ignore_ascii_case(&'l'));
    valid.then(|| (behavior, id.to_ascii_lowercase()))
}

/// `notifications/claude/channel/permission` params.
pub(crate) fn permission_params(request_id: &str, behavior: Behavior) -> Value {
    json!({"request_id": request_id, "behavior": behavior.as_str()})
}

/// `notifications/claude/channel` params for a routed inbound message.
pub(crate) fn channel_params(
    session_key: &str,
    conversation: &Value,
    text: Option<&str>,
    message_id: Option<&str>,
) -> Value {
    let meta_string = |key: &str| conversation.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let thread = conversation.get("threadId");
    json!({
        "content": text.unwrap_or("[non-text message]"),
        "meta": {
            "session_key": session_key,
            "channel": meta_string("channel"),
            "to": meta_string("to"),
            "account_id": meta_string("accountId"),
            "thread_id": if is_nullish(thread) { String::new() } else { thread.map(to_js_string).unwrap_or_default() },
            "message_id": message_id.unwrap_or_default(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_grammar_matches_upstream_regex() {
        assert_eq!(parse_permission_reply("yes abcde"), Some((Behavior::Allow, "abcde".into())));
        assert_eq!(parse_permission_reply("NO  ABCDE"), Some((Behavior::Deny, "abcde".into())));
        assert_eq!(parse_permission_reply("Yes\tkmnop"), Some((Behavior::Allow, "kmnop".into())));
        assert_eq!(parse_permission_reply("yes\u{a0}zzzzz"), Some((Behavior::Allow, "zzzzz".into())));
        for text in [
            "yes abcdl", // `l` is excluded (it looks like 1 and I)
            "yes abcdL",
            "yes abcd",   // four letters
            "yes abcdef", // six
            "yes abcd1",
            "yesabcde",
            " yes abcde", // anchored
            "yes abcde ", // `$` without the m flag: nothing may follow
            "yes abcde\n",
            "yeah abcde",
            "yes ábcde",
            "",
        ] {
            assert_eq!(parse_permission_reply(text), None, "{text:?}");
        }
    }

    #[test]
    fn pending_permissions_expire_after_an_hour_and_are_bounded() {
        let mut pending = PendingPermissions::default();
        pending.track("abcde", 1_000);
        pending.sweep(1_000 + PENDING_CLAUDE_PERMISSION_TTL_MS - 1);
        assert!(pending.contains("abcde"));
        pending.sweep(1_000 + PENDING_CLAUDE_PERMISSION_TTL_MS);
        assert!(!pending.contains("abcde"));

        for n in 0..=PENDING_CLAUDE_PERMISSIONS_LIMIT {
            pending.track(&format!("id{n}"), 1);
        }
        assert_eq!(pending.len(), PENDING_CLAUDE_PERMISSIONS_LIMIT);
        assert!(!pending.contains("id0") && pending.contains("id1"), "the oldest is forgotten first");
    }

    #[test]
    fn channel_params_use_strings_everywhere() {
        let conversation =
            json!({"sessionKey": "k", "channel": "imessage", "to": "+1", "threadId": 42, "updatedAt": null});
        assert_eq!(
            channel_params("k", &conversation, None, Some("m1")),
            json!({"content": "[non-text message]", "meta": {"session_key": "k", "channel": "imessage", "to": "+1", "account_id": "", "thread_id": "42", "message_id": "m1"}})
        );
    }

    #[test]
    fn permission_request_needs_all_four_strings() {
        let full = json!({"request_id": "abcde", "tool_name": "Bash", "description": "d", "input_preview": "ls"});
        assert_eq!(PermissionRequest::parse(Some(&full)).unwrap().request_id, "abcde");
        let missing = json!({"request_id": "abcde", "tool_name": "Bash", "description": "d"});
        assert!(PermissionRequest::parse(Some(&missing)).is_none());
        let wrong = json!({"request_id": 5, "tool_name": "Bash", "description": "d", "input_preview": "ls"});
        assert!(PermissionRequest::parse(Some(&wrong)).is_none());
        assert!(PermissionRequest::parse(None).is_none());
    }
}
