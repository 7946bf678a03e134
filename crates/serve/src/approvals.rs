//! Exec and plugin approval requests seen since the bridge connected: what
//! `permissions_list_open` shows.
//!
//! Live and in-memory only, like upstream: a `*.approval.requested` event adds an entry, a
//! `*.approval.resolved` event removes it (by trimmed id), and an entry expires at the
//! gateway's `expiresAtMs` or, without one, 30 minutes after we saw it. `permissions_respond`
//! does not consult this list; it forwards to the gateway, which is the authority.
//!
//! Bounded at [`PENDING_APPROVALS_LIMIT`] entries (upstream is unbounded): past it, the entry we
//! have tracked longest is forgotten.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::js::to_text;

/// Lifetime of a tracked approval whose request carries no `expiresAtMs`.
pub const PENDING_APPROVAL_DEFAULT_TTL_MS: u64 = 30 * 60 * 1000;

/// Most approvals tracked at once.
pub const PENDING_APPROVALS_LIMIT: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApprovalKind {
    Exec,
    Plugin,
}

impl ApprovalKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ApprovalKind::Exec => "exec",
            ApprovalKind::Plugin => "plugin",
        }
    }
}

#[derive(Default)]
pub(crate) struct PendingApprovals {
    /// In tracking order (a re-tracked id keeps its place, like a JavaScript `Map.set`).
    entries: Vec<Entry>,
}

struct Entry {
    id: String,
    /// `{kind, id, request?, createdAtMs?, expiresAtMs?}` as listed.
    approval: Value,
    expires_at_ms: f64,
}

impl PendingApprovals {
    /// Tracks the request in a `*.approval.requested` payload; payloads without an id are ignored.
    pub(crate) fn track(&mut self, kind: ApprovalKind, payload: &Value, now_ms: u64) {
        let Some(id) = to_text(payload.get("id")) else { return };
        let number = |key: &str| payload.get(key).filter(|value| value.is_number()).cloned();
        let mut approval = Map::new();
        approval.insert("kind".into(), kind.as_str().into());
        approval.insert("id".into(), id.clone().into());
        if let Some(request) = payload.get("request").filter(|request| request.is_object() || request.is_array()) {
            approval.insert("request".into(), request.clone());
        }
        let created_at = number("createdAtMs");
        let expires_at = number("expiresAtMs");
        if let Some(created_at) = created_at {
            approval.insert("createdAtMs".into(), created_at);
        }
        let expires_at_ms = match &expires_at {
            Some(expires_at) => expires_at.as_f64().unwrap_or(f64::MAX),
            None => (now_ms + PENDING_APPROVAL_DEFAULT_TTL_MS) as f64,
        };
        if let Some(expires_at) = expires_at {
            approval.insert("expiresAtMs".into(), expires_at);
        }
        let entry = Entry { id, approval: Value::Object(approval), expires_at_ms };
        match self.entries.iter_mut().find(|existing| existing.id == entry.id) {
            Some(existing) => *existing = entry,
            None => {
                self.entries.push(entry);
                if self.entries.len() > PENDING_APPROVALS_LIMIT {
                    self.entries.remove(0);
                }
            }
        }
    }

    /// Forgets the request a `*.approval.resolved` payload names.
    pub(crate) fn resolve(&mut self, payload: &Value) {
        if let Some(id) = to_text(payload.get("id")) {
            self.entries.retain(|entry| entry.id != id);
        }
    }

    /// Drops expired entries.
    pub(crate) fn sweep(&mut self, now_ms: u64) {
        self.entries.retain(|entry| (now_ms as f64) < entry.expires_at_ms);
    }

    /// The open approvals, oldest `createdAtMs` first (missing counts as 0; ties keep tracking
    /// order).
    pub(crate) fn list(&mut self, now_ms: u64) -> Vec<Value> {
        self.sweep(now_ms);
        let created = |approval: &Value| approval.get("createdAtMs").and_then(Value::as_f64).unwrap_or(0.0);
        let mut approvals: Vec<Value> = self.entries.iter().map(|entry| entry.approval.clone()).collect();
        approvals.sort_by(|a, b| created(a).partial_cmp(&created(b)).unwrap_or(Ordering::Equal));
        approvals
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_795_992_839_082;

    #[test]
    fn tracks_resolves_and_lists_in_upstream_shape_and_order() {
        let mut pending = PendingApprovals::default();
        pending.track(
            ApprovalKind::Exec,
            &json!({"approvalKind": "exec", "id": " a1 ", "request": {"command": "echo"}, "createdAtMs": NOW + 5, "expiresAtMs": NOW + 60_000}),
            NOW,
        );
        pending.track(ApprovalKind::Plugin, &json!({"id": "p1", "request": "not an object"}), NOW);
        pending.track(ApprovalKind::Exec, &json!({"request": {}}), NOW);
        pending.track(ApprovalKind::Exec, &json!({"id": "   "}), NOW);
        let listed = pending.list(NOW);
        assert_eq!(
            serde_json::to_string(&listed).unwrap(),
            format!(
                r#"[{{"kind":"plugin","id":"p1"}},{{"kind":"exec","id":"a1","request":{{"command":"echo"}},"createdAtMs":{},"expiresAtMs":{}}}]"#,
                NOW + 5,
                NOW + 60_000
            )
        );
        pending.resolve(&json!({"id": "a1 ", "decision": "allow-once"}));
        pending.resolve(&json!({"decision": "deny"}));
        assert_eq!(pending.list(NOW), [json!({"kind": "plugin", "id": "p1"})]);
    }

    #[test]
    fn expiry_edges() {
        let mut pending = PendingApprovals::default();
        pending.track(ApprovalKind::Exec, &json!({"id": "explicit", "expiresAtMs": NOW + 10}), NOW);
        pending.track(ApprovalKind::Exec, &json!({"id": "default"}), NOW);
        assert_eq!(pending.list(NOW + 9).len(), 2);
        assert_eq!(pending.list(NOW + 10), [json!({"kind": "exec", "id": "default"})], "expired at expiresAtMs");
        assert_eq!(pending.list(NOW + PENDING_APPROVAL_DEFAULT_TTL_MS - 1).len(), 1);
        assert!(pending.list(NOW + PENDING_APPROVAL_DEFAULT_TTL_MS).is_empty(), "30 minutes after tracking");
    }

    #[test]
    fn retracking_keeps_the_place_and_the_limit_forgets_the_oldest() {
        let mut pending = PendingApprovals::default();
        for n in 0..PENDING_APPROVALS_LIMIT {
            pending.track(ApprovalKind::Exec, &json!({"id": format!("a{n}")}), NOW);
        }
        pending.track(ApprovalKind::Plugin, &json!({"id": "a0"}), NOW);
        assert_eq!(pending.len(), PENDING_APPROVALS_LIMIT, "exactly the limit fits");
        assert_eq!(pending.list(NOW)[0], json!({"kind": "plugin", "id": "a0"}), "re-tracked in place");
        pending.track(ApprovalKind::Exec, &json!({"id": "new"}), NOW);
        let listed = pending.list(NOW);
        assert_eq!(listed.len(), PENDING_APPROVALS_LIMIT);
        assert_eq!(listed[0]["id"], "a1", "the longest-tracked entry was forgotten");
        assert_eq!(listed.last().unwrap()["id"], "new");
    }
}
