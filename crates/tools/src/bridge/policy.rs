//! Which gateway tools `POST /tools/invoke` will run, computed the way the gateway computes it
//! (openclaw 2026.9.6 `src/security/dangerous-tools.ts`, `src/agents/tool-resolution.ts`;
//! checked live for every tool against 2026.9.6; `docs/tools-bridge.md` §5):
//!
//! HTTP-callable = the tools of the session − the coding tools (built only for the loopback
//! surface) − `DEFAULT_GATEWAY_HTTP_TOOL_DENY` (minus `gateway.tools.allow`) − `gateway.tools.deny`.
//!
//! Names compare after OpenClaw's normalization (trim, lowercase, `bash`→`exec`,
//! `apply-patch`→`apply_patch`, `cron`→`automations`), so a legacy `cron` in `gateway.tools.allow`
//! lifts `automations`. The owner-only deny does not apply: a caller holding the shared secret is
//! the owner. Group entries (`group:fs`) in the deny list are not expanded.

use std::collections::BTreeSet;

use clawmcp_gateway::LoadedConfig;
use serde_json::Value;

/// The gateway's default HTTP deny list (2026.9.6).
pub const DEFAULT_GATEWAY_HTTP_TOOL_DENY: [&str; 21] = [
    "exec",
    "spawn",
    "shell",
    "fs_write",
    "fs_delete",
    "fs_move",
    "apply_patch",
    "terminal",
    "portal",
    "sessions_spawn",
    "sessions_send",
    "conversations_list",
    "conversations_send",
    "conversations_turn",
    "automations",
    "gateway",
    "plugins",
    "nodes",
    "computer",
    "mobile_ui",
    "openclaw",
];

/// Tools the gateway builds only for its loopback surface, never for `/tools/invoke`
/// (`isCoreCodingSurfaceToolName`: the base-coding and shell families).
pub const CODING_SURFACE_TOOLS: [&str; 7] = ["read", "write", "edit", "ls", "apply_patch", "exec", "process"];

/// Core tools the gateway hides from non-owners (`GATEWAY_OWNER_ONLY_CORE_TOOLS`). The live
/// schema source (`attach.grant`) is a non-owner, so it never lists these.
pub const OWNER_ONLY_TOOLS: [&str; 14] = [
    "automations",
    "gateway",
    "plugins",
    "sessions",
    "screen",
    "terminal",
    "portal",
    "conversations_list",
    "conversations_send",
    "conversations_turn",
    "nodes",
    "computer",
    "mobile_ui",
    "openclaw",
];

/// OpenClaw's tool-name normalization for policy lists.
pub fn normalize_tool_name(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    match lower.as_str() {
        "bash" => "exec".to_owned(),
        "apply-patch" => "apply_patch".to_owned(),
        "cron" => "automations".to_owned(),
        _ => lower,
    }
}

/// The effective HTTP deny policy of one gateway config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpToolPolicy {
    /// Normalized `gateway.tools.allow`.
    allow: BTreeSet<String>,
    /// Normalized `gateway.tools.deny`.
    deny: BTreeSet<String>,
}

impl HttpToolPolicy {
    /// `gateway.tools.allow` / `gateway.tools.deny` from the config (string arrays; other
    /// values are ignored, as the gateway's schema would refuse them).
    pub fn from_config(config: &LoadedConfig) -> HttpToolPolicy {
        let names = |key: &str| -> BTreeSet<String> {
            match config.get(key) {
                Some(Value::Array(items)) => {
                    items.iter().filter_map(Value::as_str).map(normalize_tool_name).filter(|n| !n.is_empty()).collect()
                }
                _ => BTreeSet::new(),
            }
        };
        HttpToolPolicy { allow: names("gateway.tools.allow"), deny: names("gateway.tools.deny") }
    }

    /// Whether the gateway runs `name` over HTTP (given that the session has the tool at all).
    pub fn http_callable(&self, name: &str) -> bool {
        let normalized = normalize_tool_name(name);
        if CODING_SURFACE_TOOLS.contains(&normalized.as_str()) || self.deny.contains(&normalized) {
            return false;
        }
        let default_denied = DEFAULT_GATEWAY_HTTP_TOOL_DENY.contains(&normalized.as_str());
        !default_denied || self.allow.contains(&normalized)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    fn policy(gateway_tools: Value) -> HttpToolPolicy {
        HttpToolPolicy::from_config(&LoadedConfig {
            path: Some(PathBuf::from("/x/openclaw.json")),
            exists: true,
            value: json!({"gateway": {"tools": gateway_tools}}),
        })
    }

    #[test]
    fn default_policy_matches_the_live_probe() {
        let default = HttpToolPolicy::default();
        for served in ["sessions_list", "session_status", "subagents", "sessions", "message", "web_fetch"] {
            assert!(default.http_callable(served), "{served}");
        }
        for denied in ["exec", "sessions_spawn", "sessions_send", "automations", "gateway", "nodes", "openclaw"] {
            assert!(!default.http_callable(denied), "{denied}");
        }
        for coding in ["read", "write", "edit", "ls", "process"] {
            assert!(!default.http_callable(coding), "{coding}");
        }
    }

    #[test]
    fn allow_lifts_the_default_deny_with_normalized_names_but_not_coding_tools() {
        let lifted = policy(json!({"allow": [" Sessions_Spawn ", "cron", "exec", "bash"]}));
        assert!(lifted.http_callable("sessions_spawn"));
        assert!(lifted.http_callable("automations"), "a legacy `cron` entry lifts automations");
        assert!(lifted.http_callable("cron"));
        assert!(!lifted.http_callable("exec"), "exec is a coding tool, never built for HTTP");
        assert!(!lifted.http_callable("sessions_send"));
    }

    #[test]
    fn deny_adds_to_the_default_and_beats_allow() {
        let denied = policy(json!({"allow": ["sessions_spawn"], "deny": ["tts", "sessions_spawn"]}));
        assert!(!denied.http_callable("tts"));
        assert!(!denied.http_callable("TTS"));
        assert!(!denied.http_callable("sessions_spawn"));
        assert!(denied.http_callable("sessions_list"));
        let junk = policy(json!({"allow": "sessions_spawn", "deny": [1, null]}));
        assert_eq!(junk, HttpToolPolicy::default());
    }
}
