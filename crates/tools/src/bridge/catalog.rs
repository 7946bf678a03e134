//! The gateway tools `clawmcp tools` advertises, merged from the live gateway and the snapshots.
//!
//! Each fact has its own best source:
//!
//! | fact | live (first choice) | fallback |
//! | --- | --- | --- |
//! | which tools | `tools.effective` for the requester's session, filtered by the HTTP policy | the loopback list of `attach.grant` filtered, plus owner-only tools from the snapshot (a non-owner grant never lists them); else the snapshot |
//! | argument schema | `attach.grant` → loopback MCP `tools/list` | regen snapshot, then bundled snapshot, then an open object schema |
//! | description | `tools.effective` `rawDescription` | loopback list, regen snapshot, bundled snapshot |
//!
//! "Snapshot" means the regen snapshot when one exists, else the bundled one. Every list is
//! filtered with the user's [`HttpToolPolicy`], so a tool the gateway denies over HTTP is never
//! advertised, and the names this bridge implements itself (the local tools and
//! `sessions_yield`) are left out: ours shadow them. Gateway tools are sorted by name.
//!
//! The gateway publishes no behaviour hints, so [`gateway_annotations`] supplies them by name:
//! the tools OpenClaw documents as reads get read-only hints; every other tool gets the MCP
//! defaults written out (may change and destroy, not idempotent, open world), which is what a
//! client must assume of a tool it knows nothing about.

use std::collections::BTreeMap;

use clawmcp_mcp::{Tool, ToolAnnotations, permissive_schema};
use serde_json::Value;

use super::compat::overlay_schema;
use super::discovery::LiveTools;
use super::policy::{HttpToolPolicy, OWNER_ONLY_TOOLS};
use super::snapshot::{Snapshot, SnapshotTool};

/// The name of our own `sessions_yield` (it shadows the gateway's, which cannot yield over HTTP).
pub const SESSIONS_YIELD: &str = "sessions_yield";

/// Gateway tools that only read the gateway's own state (2026.9.6 descriptions and schemas:
/// listings, history, search, goal, and waiting for runs). `session_status` is not one: its
/// `model` argument switches the session's model.
pub const GATEWAY_READ_TOOLS: [&str; 6] =
    ["agents_list", "agents_wait", "get_goal", "sessions_history", "sessions_list", "sessions_search"];

/// Gateway tools that only read, but read the public web.
pub const GATEWAY_WEB_READ_TOOLS: [&str; 2] = ["web_fetch", "web_search"];

/// The behaviour hints of a gateway tool (see the module docs for the rule).
pub fn gateway_annotations(name: &str) -> ToolAnnotations {
    if GATEWAY_READ_TOOLS.contains(&name) {
        ToolAnnotations::READ_ONLY
    } else if GATEWAY_WEB_READ_TOOLS.contains(&name) {
        ToolAnnotations { open_world_hint: true, ..ToolAnnotations::READ_ONLY }
    } else {
        // The MCP defaults for a tool without hints, spelled out.
        ToolAnnotations::DESTRUCTIVE
    }
}

/// Where the tool list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSource {
    /// `tools.effective` of the requester's session.
    Effective,
    /// The `attach.grant` loopback list (plus the snapshot's owner-only tools).
    Loopback,
    RegenSnapshot,
    BundledSnapshot,
}

/// Where one tool's schema came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SchemaSource {
    Live,
    RegenSnapshot,
    BundledSnapshot,
    /// No source knew the tool: an open object schema.
    Open,
}

/// One advertised gateway tool.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayTool {
    pub name: String,
    pub description: String,
    /// As the gateway gave it (overlays are added in [`GatewayTool::descriptor`]).
    pub input_schema: Value,
    pub schema_source: SchemaSource,
}

impl GatewayTool {
    /// The `tools/list` entry: the gateway's schema plus the compatibility overlays.
    pub fn descriptor(&self) -> Tool {
        Tool {
            title: None,
            output_schema: None,
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: overlay_schema(&self.name, &self.input_schema).into(),
            annotations: Some(gateway_annotations(&self.name)),
        }
    }

    /// The tool as a snapshot entry (no overlays).
    pub fn to_snapshot_tool(&self) -> SnapshotTool {
        SnapshotTool {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
        }
    }
}

/// The advertised gateway tools and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayCatalog {
    pub tools: Vec<GatewayTool>,
    pub list_source: ListSource,
    /// The gateway's version when it was asked.
    pub gateway_version: Option<String>,
}

impl GatewayCatalog {
    /// No gateway tools (the gateway cannot be reached at all: no credentials).
    pub fn none() -> GatewayCatalog {
        GatewayCatalog { tools: Vec::new(), list_source: ListSource::BundledSnapshot, gateway_version: None }
    }

    /// The MCP descriptors of its tools, in catalog order.
    pub fn descriptors(&self) -> Vec<Tool> {
        self.tools.iter().map(GatewayTool::descriptor).collect()
    }

    /// Merges what is known. `regen` is the regen snapshot, if one could be read.
    pub fn build(
        live: Option<&LiveTools>,
        regen: Option<&Snapshot>,
        bundled: &Snapshot,
        policy: &HttpToolPolicy,
    ) -> GatewayCatalog {
        let fallback = regen.unwrap_or(bundled);
        let fallback_source = if regen.is_some() { ListSource::RegenSnapshot } else { ListSource::BundledSnapshot };
        let live = live.filter(|live| !live.is_empty());
        let effective = live.and_then(|l| l.effective.as_ref());
        let loopback = live.and_then(|l| l.loopback.as_ref());

        let (names, list_source): (Vec<String>, ListSource) = match (effective, loopback) {
            (Some(effective), _) => (effective.iter().map(|t| t.id.clone()).collect(), ListSource::Effective),
            (None, Some(loopback)) => {
                let owner_only = fallback.tools.iter().filter(|t| OWNER_ONLY_TOOLS.contains(&t.name.as_str()));
                (loopback.iter().chain(owner_only).map(|t| t.name.clone()).collect(), ListSource::Loopback)
            }
            (None, None) => (fallback.tools.iter().map(|t| t.name.clone()).collect(), fallback_source),
        };

        let mut tools: BTreeMap<String, GatewayTool> = BTreeMap::new();
        for name in names {
            if tools.contains_key(&name) || is_proxy_owned(&name) || !policy.http_callable(&name) {
                continue;
            }
            let live_schema = loopback.and_then(|list| list.iter().find(|t| t.name == name));
            let (schema, schema_source) = match (live_schema, regen.and_then(|s| s.get(&name)), bundled.get(&name)) {
                (Some(tool), _, _) => (tool.input_schema.clone(), SchemaSource::Live),
                (None, Some(tool), _) => (tool.input_schema.clone(), SchemaSource::RegenSnapshot),
                (None, None, Some(tool)) => (tool.input_schema.clone(), SchemaSource::BundledSnapshot),
                (None, None, None) => (permissive_schema().to_value(), SchemaSource::Open),
            };
            let description = [
                effective.and_then(|list| list.iter().find(|t| t.id == name)).map(|t| t.description.as_str()),
                live_schema.map(|t| t.description.as_str()),
                regen.and_then(|s| s.get(&name)).map(|t| t.description.as_str()),
                bundled.get(&name).map(|t| t.description.as_str()),
            ]
            .into_iter()
            .flatten()
            .find(|d| !d.trim().is_empty())
            .map_or_else(|| format!("OpenClaw gateway tool `{name}`."), str::to_owned);
            tools.insert(name.clone(), GatewayTool { name, description, input_schema: schema, schema_source });
        }
        GatewayCatalog {
            tools: tools.into_values().collect(),
            list_source,
            gateway_version: live.and_then(|l| l.gateway_version.clone()),
        }
    }

    pub fn get(&self, name: &str) -> Option<&GatewayTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// How many tools got their schema from each source, for logs and `regen`.
    pub fn schema_counts(&self) -> BTreeMap<SchemaSource, usize> {
        let mut counts = BTreeMap::new();
        for tool in &self.tools {
            *counts.entry(tool.schema_source).or_insert(0) += 1;
        }
        counts
    }

    /// A one-line account of the sources, for stderr.
    pub fn describe(&self) -> String {
        let counts = self.schema_counts();
        let count = |source| counts.get(&source).copied().unwrap_or(0);
        format!(
            "{} gateway tools, list from {:?}{}; schemas: {} live, {} regen snapshot, {} bundled snapshot, {} open",
            self.tools.len(),
            self.list_source,
            self.gateway_version.as_deref().map(|v| format!(" (openclaw {v})")).unwrap_or_default(),
            count(SchemaSource::Live),
            count(SchemaSource::RegenSnapshot),
            count(SchemaSource::BundledSnapshot),
            count(SchemaSource::Open),
        )
    }
}

/// Names this bridge implements itself.
pub fn is_proxy_owned(name: &str) -> bool {
    name == SESSIONS_YIELD || crate::local_tool_names().iter().any(|local| local == name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::discovery::EffectiveTool;
    use super::super::snapshot::SNAPSHOT_FORMAT;
    use super::*;

    fn tool(name: &str, description: &str, marker: &str) -> SnapshotTool {
        SnapshotTool {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {}, "x-from": marker}),
        }
    }

    fn snapshot(tools: Vec<SnapshotTool>) -> Snapshot {
        Snapshot {
            format: SNAPSHOT_FORMAT,
            openclaw_version: "t".into(),
            generated_at: None,
            source: "t".into(),
            tools,
        }
    }

    fn names(catalog: &GatewayCatalog) -> Vec<&str> {
        catalog.tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn bundled() -> Snapshot {
        snapshot(vec![
            tool("sessions", "bundled sessions", "bundled"),
            tool("sessions_list", "bundled list", "bundled"),
            tool("sessions_spawn", "bundled spawn", "bundled"),
            tool("tts", "bundled tts", "bundled"),
        ])
    }

    #[test]
    fn without_the_gateway_the_snapshot_is_filtered_by_policy() {
        let catalog = GatewayCatalog::build(None, None, &bundled(), &HttpToolPolicy::default());
        assert_eq!(names(&catalog), ["sessions", "sessions_list", "tts"], "sessions_spawn is HTTP-denied by default");
        assert_eq!(catalog.list_source, ListSource::BundledSnapshot);
        let regen = snapshot(vec![tool("tts", "regen tts", "regen"), tool("sessions_yield", "native", "regen")]);
        let catalog = GatewayCatalog::build(None, Some(&regen), &bundled(), &HttpToolPolicy::default());
        assert_eq!(names(&catalog), ["tts"], "the gateway's sessions_yield is shadowed by ours");
        assert_eq!(catalog.list_source, ListSource::RegenSnapshot);
        assert_eq!(catalog.tools[0].schema_source, SchemaSource::RegenSnapshot);
        assert_eq!(catalog.tools[0].description, "regen tts");
    }

    #[test]
    fn effective_names_with_loopback_schemas_and_snapshot_schemas_for_the_rest() {
        let live = LiveTools {
            gateway_version: Some("2026.9.6".into()),
            effective: Some(vec![
                EffectiveTool { id: "tts".into(), description: "live tts".into() },
                EffectiveTool { id: "sessions".into(), description: "".into() },
                EffectiveTool { id: "new_tool".into(), description: "brand new".into() },
                EffectiveTool { id: "exec".into(), description: "coding".into() },
                EffectiveTool { id: "read".into(), description: "coding".into() },
            ]),
            loopback: Some(vec![tool("tts", "loopback tts", "live"), tool("sessions_spawn", "x", "live")]),
            problems: vec![],
        };
        let catalog = GatewayCatalog::build(Some(&live), None, &bundled(), &HttpToolPolicy::default());
        assert_eq!(names(&catalog), ["new_tool", "sessions", "tts"]);
        assert_eq!(catalog.list_source, ListSource::Effective);
        let by_name = |n| catalog.get(n).unwrap();
        assert_eq!(
            (by_name("tts").schema_source, by_name("tts").description.as_str()),
            (SchemaSource::Live, "live tts")
        );
        assert_eq!(by_name("tts").input_schema["x-from"], "live");
        assert_eq!(
            (by_name("sessions").schema_source, by_name("sessions").description.as_str()),
            (SchemaSource::BundledSnapshot, "bundled sessions")
        );
        assert_eq!(by_name("new_tool").schema_source, SchemaSource::Open);
        assert_eq!(by_name("new_tool").input_schema, permissive_schema().to_value());
        assert_eq!(catalog.gateway_version.as_deref(), Some("2026.9.6"));
    }

    #[test]
    fn loopback_only_adds_owner_only_tools_from_the_snapshot() {
        let live = LiveTools {
            loopback: Some(vec![tool("tts", "t", "live"), tool("sessions_spawn", "s", "live")]),
            ..LiveTools::default()
        };
        let catalog = GatewayCatalog::build(Some(&live), None, &bundled(), &HttpToolPolicy::default());
        assert_eq!(names(&catalog), ["sessions", "tts"], "sessions_list is not owner-only, so not guessed");
        assert_eq!(catalog.list_source, ListSource::Loopback);
    }

    #[test]
    fn gateway_tools_are_read_only_only_when_known_to_read() {
        for read in GATEWAY_READ_TOOLS {
            assert_eq!(gateway_annotations(read), ToolAnnotations::READ_ONLY, "{read}");
        }
        for web in GATEWAY_WEB_READ_TOOLS {
            let hints = gateway_annotations(web);
            assert!(hints.read_only_hint && hints.open_world_hint && !hints.destructive_hint, "{web}");
        }
        for other in ["session_status", "message", "tts", "sessions", "a_plugin_tool"] {
            assert_eq!(gateway_annotations(other), ToolAnnotations::DESTRUCTIVE, "{other}");
        }
        let bundled = Snapshot::bundled();
        for name in GATEWAY_READ_TOOLS.iter().chain(&GATEWAY_WEB_READ_TOOLS) {
            assert!(bundled.get(name).is_some(), "{name} is a real gateway tool");
        }
    }

    #[test]
    fn descriptors_carry_overlays_but_the_catalog_keeps_the_raw_schema() {
        let live = LiveTools {
            effective: Some(vec![EffectiveTool { id: "subagents".into(), description: "d".into() }]),
            ..LiveTools::default()
        };
        let catalog = GatewayCatalog::build(Some(&live), None, &bundled(), &HttpToolPolicy::default());
        let subagents = catalog.get("subagents").unwrap();
        assert!(subagents.input_schema["properties"].get("sessionKey").is_none());
        assert_eq!(subagents.descriptor().input_schema.to_value()["properties"]["sessionKey"]["type"], "string");
        assert_eq!(subagents.descriptor().annotations, Some(ToolAnnotations::DESTRUCTIVE));
        assert!(catalog.describe().starts_with("1 gateway tools, list from Effective; schemas: 0 live"));
    }
}
