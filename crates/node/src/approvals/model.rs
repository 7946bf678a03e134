//! The `exec-approvals.json` file format (version 1) and the effective policy of one agent.
//!
//! The format is the upstream node's, so one file can move between the Windows tray, the macOS
//! node and clawmcp: camelCase keys, kebab-case enum values, absent keys meaning "inherit",
//! nulls omitted on write. A policy value cascades agent entry -> wildcard agent `*` ->
//! `defaults` -> built-in defaults (security=allowlist, ask=on-miss, askFallback=deny,
//! autoAllowSkills=false). `autoAllowSkills` is stored and guarded against remote loosening, but
//! clawmcp has no skill binaries, so it never authorizes anything here.

use std::collections::HashSet;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize};

/// The only file version this code reads or writes.
pub const FILE_VERSION: i64 = 1;

/// The agent a request without `agentId` is evaluated as.
pub const DEFAULT_AGENT: &str = "main";

/// The agent entry whose values and allowlist apply to every agent.
pub const WILDCARD_AGENT: &str = "*";

/// `source` of an entry this node generated from an "allow always" decision.
pub const ALLOW_ALWAYS_SOURCE: &str = "allow-always";

/// How much may run. Declaration order is restrictiveness: `Deny` < `Allowlist` < `Full`, so a
/// *greater* value is *looser*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Security {
    /// Nothing runs, whatever anyone answers.
    Deny,
    /// Only allowlisted commands run without a human decision.
    Allowlist,
    /// Everything runs.
    Full,
}

/// When a human is asked. Restrictiveness is a *partial* order, so `Ask` has no `Ord`: ask
/// [`Ask::is_at_least_as_strict_as`]. `Off` < `OnMiss` < `Always`, and `Off` < `OnMiss` < `Deny`,
/// but `Always` and `Deny` are each looser than the other somewhere: `always` asks a human even
/// for allowlisted commands, which `deny` runs unattended; `deny` never lets an unlisted command
/// run, which `always` puts to a human (and, with a loose `askFallback`, to the timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ask {
    /// Never ask.
    Off,
    /// Ask when security=allowlist and the allowlist does not match.
    OnMiss,
    /// Ask for every command.
    Always,
    /// Never ask, and deny whatever the allowlist does not already cover.
    Deny,
}

impl Security {
    pub fn as_str(self) -> &'static str {
        match self {
            Security::Deny => "deny",
            Security::Allowlist => "allowlist",
            Security::Full => "full",
        }
    }
}

impl Ask {
    /// Whether a policy with `self` lets nothing run without a human that `other` would not
    /// (everything else equal). The one comparison of `Ask` values: remote updates and the
    /// revalidation before launch both judge "tightened" with it.
    pub fn is_at_least_as_strict_as(self, other: Ask) -> bool {
        match (other, self) {
            _ if self == other => true,
            (Ask::Off, _) => true,
            (Ask::OnMiss, Ask::Always | Ask::Deny) => true,
            _ => false,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Ask::Off => "off",
            Ask::OnMiss => "on-miss",
            Ask::Always => "always",
            Ask::Deny => "deny",
        }
    }
}

/// `askFallback` reads the security values plus the legacy ask-style spellings older files
/// carry (`always`->deny, `on-miss`->allowlist, `off`->full); it is always written canonically.
fn ask_fallback<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Security>, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Wire {
        Deny,
        Allowlist,
        Full,
        Always,
        OnMiss,
        Off,
    }
    Ok(Option::<Wire>::deserialize(deserializer)?.map(|wire| match wire {
        Wire::Deny | Wire::Always => Security::Deny,
        Wire::Allowlist | Wire::OnMiss => Security::Allowlist,
        Wire::Full | Wire::Off => Security::Full,
    }))
}

/// The four policy values of one scope; `None` inherits from the next scope out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<Security>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Ask>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "ask_fallback")]
    pub ask_fallback: Option<Security>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_allow_skills: Option<bool>,
}

/// One agent's entry: policy overrides plus its allowlist.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPolicy {
    #[serde(flatten)]
    pub policy: PolicyFields,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowlist: Option<Vec<AllowlistEntry>>,
}

/// One allowlist rule. `pattern` globs the resolved executable path; `argPattern`, when present,
/// binds the arguments (see `matcher`). The `last*` fields are usage metadata, not identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowlistEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub pattern: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resolved_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_command: Option<String>,
}

/// What makes an allowlist entry the grant it is. Changing any part of it changes what the
/// entry authorizes; the usage metadata is not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GrantIdentity {
    /// The pattern, trimmed. Compared case-sensitively: Linux paths are case-sensitive, so
    /// `/usr/bin/Foo` and `/usr/bin/foo` are different grants (upstream compares ignoring case
    /// because Windows paths are case-insensitive).
    pub pattern: String,
    /// Exact; absent and empty are the same ("no argument binding").
    pub arg_pattern: String,
    /// Exact; absent and empty are the same ("hand-written").
    pub source: String,
}

impl AllowlistEntry {
    pub fn grant(&self) -> GrantIdentity {
        GrantIdentity {
            pattern: self.pattern.trim().to_string(),
            arg_pattern: self.arg_pattern.clone().unwrap_or_default(),
            source: self.source.clone().unwrap_or_default(),
        }
    }
}

/// Where an approval socket lives (macOS). Kept so a file round-trips; its token is never
/// returned by `system.execApprovals.get`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SocketConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The whole file. `version` is optional only so that a file without it parses far enough to
/// be rejected with "version 1 required" instead of a generic parse error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalsFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<SocketConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<PolicyFields>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<IndexMap<String, AgentPolicy>>,
}

/// The four policy values, fully resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub security: Security,
    pub ask: Ask,
    pub ask_fallback: Security,
    pub auto_allow_skills: bool,
}

impl Policy {
    /// The built-in defaults, used for whatever no scope sets.
    pub const DEFAULT: Policy = Policy {
        security: Security::Allowlist,
        ask: Ask::OnMiss,
        ask_fallback: Security::Deny,
        auto_allow_skills: false,
    };

    /// What applies when the file cannot be trusted: nothing runs.
    pub const FAIL_CLOSED: Policy =
        Policy { security: Security::Deny, ask: Ask::Always, ask_fallback: Security::Deny, auto_allow_skills: false };

    fn with_overrides(self, fields: Option<&PolicyFields>) -> Policy {
        let Some(fields) = fields else { return self };
        Policy {
            security: fields.security.unwrap_or(self.security),
            ask: fields.ask.unwrap_or(self.ask),
            ask_fallback: fields.ask_fallback.unwrap_or(self.ask_fallback),
            auto_allow_skills: fields.auto_allow_skills.unwrap_or(self.auto_allow_skills),
        }
    }

    fn into_fields(self) -> PolicyFields {
        PolicyFields {
            security: Some(self.security),
            ask: Some(self.ask),
            ask_fallback: Some(self.ask_fallback),
            auto_allow_skills: Some(self.auto_allow_skills),
        }
    }
}

/// The policy one request is judged by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectivePolicy {
    pub agent_id: String,
    pub policy: Policy,
    /// Wildcard entries first, then the agent's own.
    pub allowlist: Vec<AllowlistEntry>,
}

impl EffectivePolicy {
    pub fn fail_closed(agent_id: &str) -> Self {
        EffectivePolicy { agent_id: agent_id.to_string(), policy: Policy::FAIL_CLOSED, allowlist: Vec::new() }
    }

    pub fn grants(&self) -> HashSet<GrantIdentity> {
        self.allowlist.iter().filter(|entry| !entry.pattern.trim().is_empty()).map(AllowlistEntry::grant).collect()
    }
}

/// `None` or blank -> `main`, as upstream; other ids are used exactly as given.
pub fn normalize_agent_id(agent_id: Option<&str>) -> String {
    match agent_id {
        Some(id) if !id.trim().is_empty() => id.to_string(),
        _ => DEFAULT_AGENT.to_string(),
    }
}

impl ApprovalsFile {
    /// What a missing file means, written out: version 1, explicit defaults, no agents.
    pub fn default_file() -> Self {
        ApprovalsFile {
            version: Some(FILE_VERSION),
            socket: None,
            defaults: Some(Policy::DEFAULT.into_fields()),
            agents: Some(IndexMap::new()),
        }
    }

    pub fn agent(&self, agent_id: &str) -> Option<&AgentPolicy> {
        self.agents.as_ref()?.get(agent_id)
    }

    /// The resolved policy of one scope: `defaults` alone (`agent = None, wildcard = false`),
    /// the wildcard agent over the defaults, or a named agent over both.
    pub fn scope_policy(&self, agent_id: Option<&str>, include_wildcard: bool) -> Policy {
        let mut policy = Policy::DEFAULT.with_overrides(self.defaults.as_ref());
        if include_wildcard {
            policy = policy.with_overrides(self.agent(WILDCARD_AGENT).map(|a| &a.policy));
        }
        if let Some(id) = agent_id {
            policy = policy.with_overrides(self.agent(id).map(|a| &a.policy));
        }
        policy
    }

    /// The policy and allowlist `agent_id` (already normalized) is judged by.
    pub fn effective(&self, agent_id: &str) -> EffectivePolicy {
        let buckets: &[&str] = if agent_id == WILDCARD_AGENT { &[WILDCARD_AGENT] } else { &[WILDCARD_AGENT, agent_id] };
        let allowlist = buckets
            .iter()
            .filter_map(|id| self.agent(id)?.allowlist.as_ref())
            .flatten()
            .filter(|entry| !entry.pattern.trim().is_empty())
            .cloned()
            .collect();
        EffectivePolicy { agent_id: agent_id.to_string(), policy: self.scope_policy(Some(agent_id), true), allowlist }
    }

    /// The file as it is written after a remote replacement: version 1, defaults spelled out,
    /// patterns trimmed, empty patterns dropped, and the socket token kept from `current` when
    /// the replacement omits it (a remote never sees the token, so it cannot send it back).
    pub fn normalized_for_save(mut self, current_socket: Option<&SocketConfig>) -> Self {
        self.version = Some(FILE_VERSION);
        self.defaults = Some(Policy::DEFAULT.with_overrides(self.defaults.as_ref()).into_fields());
        tidy_agents(self.agents.get_or_insert_with(IndexMap::new));
        let path = self.socket.as_ref().and_then(|s| s.path.clone()).or_else(|| current_socket?.path.clone());
        let token = self.socket.as_ref().and_then(|s| s.token.clone()).or_else(|| current_socket?.token.clone());
        self.socket = (path.is_some() || token.is_some()).then_some(SocketConfig { path, token });
        self
    }

    /// The file as `system.execApprovals.get` shows it: defaults spelled out, `agents` always
    /// present, allowlists as a save writes them, the socket reduced to its path (the token is a
    /// credential). Sending it back unchanged is always accepted: it holds no blank pattern and no
    /// agent with a blank id, which `set` refuses and which the file itself may hold (written by
    /// hand).
    pub fn redacted_for_snapshot(&self) -> Self {
        let socket_path = self.socket.as_ref().and_then(|s| s.path.as_deref()).map(str::trim).filter(|p| !p.is_empty());
        let mut agents = self.agents.clone().unwrap_or_default();
        tidy_agents(&mut agents);
        ApprovalsFile {
            version: Some(FILE_VERSION),
            socket: socket_path.map(|path| SocketConfig { path: Some(path.to_string()), token: None }),
            defaults: Some(Policy::DEFAULT.with_overrides(self.defaults.as_ref()).into_fields()),
            agents: Some(agents),
        }
    }
}

/// Agents in the form saves write and snapshots show: an agent with a blank id (no caller ever
/// has one: [`normalize_agent_id`] makes a blank id `main`, so its policy never applies, and
/// `set` refuses it) dropped; entries with a blank pattern (which never match, see
/// [`ApprovalsFile::effective`]) dropped, the other patterns trimmed.
fn tidy_agents(agents: &mut IndexMap<String, AgentPolicy>) {
    agents.retain(|id, _| !id.trim().is_empty());
    for list in agents.values_mut().filter_map(|agent| agent.allowlist.as_mut()) {
        list.retain(|entry| !entry.pattern.trim().is_empty());
        for entry in list.iter_mut() {
            entry.pattern = entry.pattern.trim().to_string();
        }
    }
}

/// A fresh entry id in the UUID v4 text form upstream writes.
pub fn new_entry_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ApprovalsFile {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn missing_values_take_the_built_in_defaults() {
        let file = parse(r#"{"version":1}"#);
        assert_eq!(file.effective("main").policy, Policy::DEFAULT);
        assert_eq!(
            Policy::DEFAULT,
            Policy {
                security: Security::Allowlist,
                ask: Ask::OnMiss,
                ask_fallback: Security::Deny,
                auto_allow_skills: false
            }
        );
    }

    #[test]
    fn values_cascade_agent_then_wildcard_then_defaults() {
        let file = parse(
            r#"{"version":1,"defaults":{"security":"full","ask":"off","askFallback":"full","autoAllowSkills":true},
                "agents":{"*":{"ask":"always"},"ops":{"security":"deny"}}}"#,
        );
        let ops = file.effective("ops").policy;
        assert_eq!(ops.security, Security::Deny);
        assert_eq!(ops.ask, Ask::Always);
        assert_eq!(ops.ask_fallback, Security::Full);
        assert!(ops.auto_allow_skills);
        assert_eq!(file.effective("main").policy.security, Security::Full);
        assert_eq!(file.scope_policy(None, false).ask, Ask::Off, "defaults scope ignores the wildcard");
    }

    #[test]
    fn enums_are_kebab_case_and_ask_fallback_accepts_legacy_values() {
        for (legacy, expected) in [
            ("always", Security::Deny),
            ("on-miss", Security::Allowlist),
            ("off", Security::Full),
            ("full", Security::Full),
        ] {
            let file = parse(&format!(r#"{{"version":1,"defaults":{{"askFallback":"{legacy}"}}}}"#));
            assert_eq!(file.effective("main").policy.ask_fallback, expected, "{legacy}");
        }
        let file = parse(r#"{"version":1,"defaults":{"ask":"on-miss","askFallback":"on-miss"}}"#);
        let written = serde_json::to_string(&file).unwrap();
        assert_eq!(written, r#"{"version":1,"defaults":{"ask":"on-miss","askFallback":"allowlist"}}"#);
    }

    #[test]
    fn ask_strictness_is_a_partial_order() {
        use Ask::*;
        let all = [Off, OnMiss, Always, Deny];
        let stricter: [(Ask, Ask); 5] = [(OnMiss, Off), (Always, Off), (Deny, Off), (Always, OnMiss), (Deny, OnMiss)];
        for a in all {
            for b in all {
                let expected = a == b || stricter.contains(&(a, b));
                assert_eq!(a.is_at_least_as_strict_as(b), expected, "{a:?} at least as strict as {b:?}");
            }
        }
    }

    #[test]
    fn legacy_spellings_are_not_accepted_for_security_or_ask() {
        assert!(serde_json::from_str::<ApprovalsFile>(r#"{"version":1,"defaults":{"security":"off"}}"#).is_err());
        assert!(serde_json::from_str::<ApprovalsFile>(r#"{"version":1,"defaults":{"ask":"full"}}"#).is_err());
        assert!(serde_json::from_str::<ApprovalsFile>(r#"{"version":1,"defaults":{"ask":"onMiss"}}"#).is_err());
    }

    #[test]
    fn wildcard_entries_come_first_and_empty_patterns_are_skipped() {
        let file = parse(
            r#"{"version":1,"agents":{
                "main":{"allowlist":[{"pattern":"/usr/bin/a"},{"pattern":"  "}]},
                "*":{"allowlist":[{"pattern":"/usr/bin/w"}]}}}"#,
        );
        let patterns: Vec<_> = file.effective("main").allowlist.into_iter().map(|e| e.pattern).collect();
        assert_eq!(patterns, ["/usr/bin/w", "/usr/bin/a"]);
        let star: Vec<_> = file.effective("*").allowlist.into_iter().map(|e| e.pattern).collect();
        assert_eq!(star, ["/usr/bin/w"]);
    }

    #[test]
    fn entries_round_trip_camel_case_and_omit_nulls() {
        let text = r#"{"id":"x","pattern":"/a/b","argPattern":"^\u0000\u0000$","source":"allow-always","commandText":"b","lastUsedAt":5,"lastResolvedPath":"/a/b","lastUsedCommand":"b"}"#;
        let entry: AllowlistEntry = serde_json::from_str(text).unwrap();
        assert_eq!(entry.arg_pattern.as_deref(), Some("^\0\0$"));
        assert_eq!(serde_json::to_string(&entry).unwrap(), text);
        let bare: AllowlistEntry = serde_json::from_str(r#"{"pattern":"/a/b","source":null}"#).unwrap();
        assert_eq!(serde_json::to_string(&bare).unwrap(), r#"{"pattern":"/a/b"}"#);
    }

    #[test]
    fn grant_identity_trims_the_pattern_and_treats_absent_as_empty() {
        let a = AllowlistEntry { pattern: " /a/b ".into(), ..Default::default() };
        let b = AllowlistEntry {
            pattern: "/a/b".into(),
            arg_pattern: Some(String::new()),
            last_used_at: Some(9),
            ..Default::default()
        };
        assert_eq!(a.grant(), b.grant());
        let c = AllowlistEntry { pattern: "/a/B".into(), ..Default::default() };
        assert_ne!(a.grant(), c.grant(), "case matters on Linux");
    }

    #[test]
    fn agent_ids_default_to_main() {
        assert_eq!(normalize_agent_id(None), "main");
        assert_eq!(normalize_agent_id(Some("  ")), "main");
        assert_eq!(normalize_agent_id(Some("ops")), "ops");
    }

    #[test]
    fn snapshot_redaction_drops_the_socket_token_and_spells_out_defaults() {
        let file = parse(r#"{"version":1,"socket":{"path":" /run/x ","token":"secret"}}"#);
        let redacted = serde_json::to_value(file.redacted_for_snapshot()).unwrap();
        assert_eq!(redacted["socket"], serde_json::json!({"path": "/run/x"}));
        assert_eq!(
            redacted["defaults"],
            serde_json::json!({"security":"allowlist","ask":"on-miss","askFallback":"deny","autoAllowSkills":false})
        );
        assert_eq!(redacted["agents"], serde_json::json!({}));
    }

    #[test]
    fn a_save_keeps_the_current_socket_token() {
        let current = SocketConfig { path: Some("/run/x".into()), token: Some("secret".into()) };
        let desired = parse(r#"{"version":1,"socket":{"path":"/run/x"}}"#).normalized_for_save(Some(&current));
        assert_eq!(desired.socket, Some(current));
    }

    #[test]
    fn entry_ids_look_like_uuid_v4() {
        let id = new_entry_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_ne!(id, new_entry_id());
    }
}
