//! What `clawmcp tools` reads from its environment and from `openclaw.json`, beyond the gateway
//! URL and secret (those come from [`clawmcp_gateway::GatewayTarget`]): the same variables as
//! the upstream Node bridge (`docs/tools-bridge.md`), parsed once at startup.
//!
//! | variable | meaning |
//! | --- | --- |
//! | `OPENCLAW_WORKSPACE` | root of the pending-yield state; default `<config dir>/workspace` |
//! | `OPENCLAW_REQUESTER_SESSION_KEY` | requester scope of every gateway call; blank or `main` = none |
//! | `OPENCLAW_MCP_ENABLED_TOOLS` | comma-separated allowlist, exact names; empty = all; intersected with `--tools` |
//! | `OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS` | wall-clock deadline per gateway call; default 240000 |
//!
//! `OPENCLAW_HOME` and `OPENCLAW_GATEWAY_TOKEN` act through the gateway crate's config discovery.
//! The requester agent id follows the upstream rule (`docs/tools-bridge.md` §6):
//! `agents.defaults.systemAgent.agentId`, else the sole configured agent (`agents.entries` keys or
//! `agents.list[].id`, both rosters OpenClaw accepts), else `main`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use clawmcp_gateway::{Env, LoadedConfig};
use serde_json::Value;
use tracing::warn;

use clawmcp_mcp::ToolFilter;

/// The upstream default deadline: long tool runs finish, and an MCP client's ~5 minute idle
/// turn limit is not hit first.
pub const DEFAULT_GATEWAY_TIMEOUT: Duration = clawmcp_gateway::http::DEFAULT_DEADLINE;

/// The largest deadline accepted from `OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS`: a day. Anything
/// longer is a typo, and no client keeps a call open that long.
pub const MAX_GATEWAY_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// The agent OpenClaw falls back to when nothing names one.
pub const DEFAULT_AGENT_ID: &str = "main";

/// The server-side tool allowlist (`OPENCLAW_MCP_ENABLED_TOOLS`). A client-side filter is no
/// boundary (another client may ignore it), so both `tools/list` and `tools/call` consult this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    /// `None`: every tool is allowed.
    names: Option<BTreeSet<String>>,
}

impl Allowlist {
    /// Comma-separated names, trimmed, empties dropped, case-sensitive. Nothing left = allow all.
    pub fn parse(raw: Option<&str>) -> Allowlist {
        let names: BTreeSet<String> =
            raw.unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect();
        Allowlist { names: (!names.is_empty()).then_some(names) }
    }

    pub fn allow_all() -> Allowlist {
        Allowlist::default()
    }

    pub fn allows(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|names| names.contains(name))
    }

    pub fn is_restricted(&self) -> bool {
        self.names.is_some()
    }

    /// The names, for messages.
    pub fn describe(&self) -> String {
        match &self.names {
            None => "all tools".to_owned(),
            Some(names) => names.iter().cloned().collect::<Vec<_>>().join(","),
        }
    }
}

/// Everything the bridge needs besides the gateway target.
#[derive(Debug, Clone)]
pub struct BridgeSettings {
    /// `OPENCLAW_REQUESTER_SESSION_KEY`, normalized ([`normalize_session_key`]).
    pub requester_session_key: Option<String>,
    /// The agent named in a top-level `agentId` for unscoped session keys.
    pub requester_agent_id: String,
    pub allowlist: Allowlist,
    /// `--tools` (from the command line, not the environment: every tool until set).
    pub tool_filter: ToolFilter,
    pub gateway_timeout: Duration,
    /// Where the pending-yield store lives (`<workspace>/temp/...`).
    pub workspace: PathBuf,
    /// Why the gateway's tools are not served at all (no gateway credentials were found): the
    /// local tools still are.
    pub gateway_off: Option<String>,
}

impl BridgeSettings {
    /// Reads the variables from `env` and the agent roster from `config`.
    pub fn from_env(env: &Env, config: &LoadedConfig) -> BridgeSettings {
        BridgeSettings {
            requester_session_key: normalize_session_key(env.get("OPENCLAW_REQUESTER_SESSION_KEY")),
            requester_agent_id: requester_agent_id(config),
            allowlist: Allowlist::parse(env.get("OPENCLAW_MCP_ENABLED_TOOLS")),
            tool_filter: ToolFilter::all(),
            gateway_timeout: gateway_timeout(env.get("OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS")),
            workspace: workspace_dir(env, config),
            gateway_off: None,
        }
    }

    /// The session key a gateway call is made under when the arguments name none.
    pub fn default_session_key(&self) -> Option<&str> {
        self.requester_session_key.as_deref()
    }

    /// The session key discovery asks about: the requester's, else the agent's main session.
    pub fn discovery_session_key(&self) -> String {
        self.requester_session_key.clone().unwrap_or_else(|| format!("agent:{}:main", self.requester_agent_id))
    }

    /// The top-level `agentId` to send with `session_key`: only for keys that do not name their
    /// agent (an `agent:<id>:...` key already does, and a disagreeing `agentId` is refused).
    pub fn agent_id_for(&self, session_key: Option<&str>) -> Option<&str> {
        (!session_key.is_some_and(is_agent_scoped)).then_some(self.requester_agent_id.as_str())
    }
}

/// A session key as the gateway treats it: trimmed; blank and the bare alias `main` mean "none"
/// (the gateway would resolve them to a main session that may have no explicit owner).
pub fn normalize_session_key(raw: Option<&str>) -> Option<String> {
    raw.map(str::trim).filter(|key| !key.is_empty() && *key != "main").map(str::to_owned)
}

/// `agent:<id>:<rest>`, the form that names its owning agent.
pub fn is_agent_scoped(key: &str) -> bool {
    let Some(rest) = key.strip_prefix("agent:") else { return false };
    match rest.split_once(':') {
        Some((agent, tail)) => !agent.is_empty() && !tail.is_empty(),
        None => false,
    }
}

fn requester_agent_id(config: &LoadedConfig) -> String {
    if let Some(id) = config.get_str("agents.defaults.systemAgent.agentId") {
        return id.to_owned();
    }
    let roster: Vec<String> = match (config.get("agents.entries"), config.get("agents.list")) {
        (Some(Value::Object(entries)), _) => entries.keys().cloned().collect(),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(|agent| agent.get("id").and_then(Value::as_str))
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    match roster.as_slice() {
        [only] => only.clone(),
        _ => DEFAULT_AGENT_ID.to_owned(),
    }
}

/// Base-10 milliseconds; anything else (or 0) falls back to the default, as upstream does.
fn gateway_timeout(raw: Option<&str>) -> Duration {
    let Some(raw) = raw else { return DEFAULT_GATEWAY_TIMEOUT };
    match raw.parse::<u64>() {
        Ok(0) | Err(_) => {
            warn!(
                value = raw,
                "OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS is not a positive number of milliseconds; using {} ms",
                DEFAULT_GATEWAY_TIMEOUT.as_millis()
            );
            DEFAULT_GATEWAY_TIMEOUT
        }
        Ok(ms) if Duration::from_millis(ms) > MAX_GATEWAY_TIMEOUT => {
            warn!(value = raw, "OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS is over a day; using a day");
            MAX_GATEWAY_TIMEOUT
        }
        Ok(ms) => Duration::from_millis(ms),
    }
}

/// `OPENCLAW_WORKSPACE`; else `workspace` beside the config file in effect (the upstream
/// `$OPENCLAW_HOME/workspace`, and OpenClaw's `~/.openclaw/workspace`); with no config file,
/// `$OPENCLAW_HOME/workspace`, else `$HOME/.openclaw/workspace`.
fn workspace_dir(env: &Env, config: &LoadedConfig) -> PathBuf {
    if let Some(dir) = env.get("OPENCLAW_WORKSPACE") {
        return PathBuf::from(dir);
    }
    let config_dir = config.path.as_deref().and_then(|p| p.parent()).filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = config_dir.filter(|_| config.exists) {
        return dir.join("workspace");
    }
    if let Some(home) = env.get("OPENCLAW_HOME") {
        return PathBuf::from(home).join("workspace");
    }
    let home = env.get("HOME").map(PathBuf::from).or_else(dirs::home_dir).unwrap_or_else(|| PathBuf::from("."));
    home.join(".openclaw").join("workspace")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(value: Value) -> LoadedConfig {
        LoadedConfig { path: Some(PathBuf::from("/oc/openclaw.json")), exists: true, value }
    }

    #[test]
    fn allowlist_parsing_trims_drops_empties_and_is_exact() {
        let list = Allowlist::parse(Some(" subagents , ,read,"));
        assert!(list.allows("subagents") && list.allows("read"));
        assert!(!list.allows("Read") && !list.allows("write"));
        assert!(list.is_restricted());
        for empty in [None, Some(""), Some(" , ,")] {
            let list = Allowlist::parse(empty);
            assert!(!list.is_restricted() && list.allows("anything"), "{empty:?}");
        }
    }

    #[test]
    fn session_keys_normalize_and_scope() {
        assert_eq!(normalize_session_key(Some("  agent:main:x ")).as_deref(), Some("agent:main:x"));
        assert_eq!(normalize_session_key(Some("main")), None);
        assert_eq!(normalize_session_key(Some("   ")), None);
        assert_eq!(normalize_session_key(None), None);
        assert!(is_agent_scoped("agent:main:discord:direct:1"));
        assert!(is_agent_scoped("agent:a:b"));
        for unscoped in ["agent:main", "agent::x", "agent:main:", "discord:direct:1", "main", "Agent:a:b"] {
            assert!(!is_agent_scoped(unscoped), "{unscoped}");
        }
    }

    #[test]
    fn agent_id_goes_only_with_unscoped_keys() {
        let settings = BridgeSettings::from_env(&Env::default(), &config(json!({})));
        assert_eq!(settings.agent_id_for(None), Some("main"));
        assert_eq!(settings.agent_id_for(Some("discord:direct:1")), Some("main"));
        assert_eq!(settings.agent_id_for(Some("agent:ops:main")), None);
    }

    #[test]
    fn requester_agent_id_rule() {
        let explicit =
            json!({"agents": {"defaults": {"systemAgent": {"agentId": " ops "}}, "entries": {"a": {}, "b": {}}}});
        assert_eq!(requester_agent_id(&config(explicit)), "ops");
        assert_eq!(requester_agent_id(&config(json!({"agents": {"entries": {"dad": {}}}}))), "dad");
        assert_eq!(requester_agent_id(&config(json!({"agents": {"list": [{"id": "solo"}]}}))), "solo");
        assert_eq!(requester_agent_id(&config(json!({"agents": {"entries": {"a": {}, "b": {}}}}))), "main");
        assert_eq!(requester_agent_id(&config(json!({"agents": {"list": []}}))), "main");
        assert_eq!(requester_agent_id(&config(Value::Null)), "main");
    }

    #[test]
    fn timeout_default_invalid_and_edges() {
        assert_eq!(gateway_timeout(None), DEFAULT_GATEWAY_TIMEOUT);
        assert_eq!(gateway_timeout(Some("100")), Duration::from_millis(100));
        assert_eq!(gateway_timeout(Some("1")), Duration::from_millis(1));
        for bad in ["0", "-5", "abc", "1.5", "1e3"] {
            assert_eq!(gateway_timeout(Some(bad)), DEFAULT_GATEWAY_TIMEOUT, "{bad}");
        }
        let day = MAX_GATEWAY_TIMEOUT.as_millis().to_string();
        assert_eq!(gateway_timeout(Some(&day)), MAX_GATEWAY_TIMEOUT);
        let over = (MAX_GATEWAY_TIMEOUT.as_millis() + 1).to_string();
        assert_eq!(gateway_timeout(Some(&over)), MAX_GATEWAY_TIMEOUT);
    }

    #[test]
    fn workspace_precedence() {
        let env = Env::from_pairs([("OPENCLAW_WORKSPACE", "/ws"), ("HOME", "/home/u")]);
        assert_eq!(workspace_dir(&env, &config(json!({}))), PathBuf::from("/ws"));
        let env = Env::from_pairs([("HOME", "/home/u")]);
        assert_eq!(workspace_dir(&env, &config(json!({}))), PathBuf::from("/oc/workspace"));
        let none = LoadedConfig { path: None, exists: false, value: Value::Null };
        assert_eq!(workspace_dir(&env, &none), PathBuf::from("/home/u/.openclaw/workspace"));
        let missing = LoadedConfig {
            path: Some(PathBuf::from("/oc/.openclaw/openclaw.json")),
            exists: false,
            value: Value::Null,
        };
        let bridge_home = Env::from_pairs([("HOME", "/home/u"), ("OPENCLAW_HOME", "/oc")]);
        assert_eq!(workspace_dir(&bridge_home, &missing), PathBuf::from("/oc/workspace"));
    }
}
