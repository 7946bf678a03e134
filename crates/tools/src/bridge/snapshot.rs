//! Gateway tool snapshots: the tool list with argument schemas, saved for when the gateway
//! cannot be asked.
//!
//! Two exist, in one format:
//! - the **regen snapshot** that `clawmcp tools regen` writes from a live gateway (default
//!   `<clawmcp data dir>/tools-snapshot.json`);
//! - the **bundled snapshot** compiled into the binary, `data/gateway-tools-2026.9.6.json`,
//!   produced by `data/gen-gateway-tools.mjs` from the real `openclaw@2026.9.6` package: the
//!   gateway's own HTTP-surface tool resolution and MCP schema builder, including the tools an
//!   operator can allow (`gateway.tools.allow`), which is why it is filtered with the user's
//!   policy before use.
//!
//! Schemas are stored as the gateway gives them, before our compatibility overlays (those are
//! applied when the list is served, so a fixed overlay never needs a regen).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The snapshot format this build reads and writes.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// Snapshots larger than this are refused: the real one is ~130 KB.
pub const MAX_SNAPSHOT_BYTES: u64 = 16 * 1024 * 1024;

/// The OpenClaw release the bundled snapshot was generated from.
pub const BUNDLED_OPENCLAW_VERSION: &str = "2026.9.6";

const BUNDLED: &str = include_str!("../../data/gateway-tools-2026.9.6.json");

/// One gateway tool as the gateway describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub format: u32,
    /// The gateway's version (`hello-ok.server.version`, or the package version).
    #[serde(default)]
    pub openclaw_version: String,
    /// RFC 3339 time of a regen; absent in the bundled snapshot (its version pins it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_at: Option<String>,
    /// How the snapshot was made, for a human reading it.
    #[serde(default)]
    pub source: String,
    pub tools: Vec<SnapshotTool>,
}

/// Why a snapshot could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read the tools snapshot `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the tools snapshot `{path}` is larger than {MAX_SNAPSHOT_BYTES} bytes; run `clawmcp tools regen` again")]
    TooLarge { path: PathBuf },
    #[error("the tools snapshot `{path}` is not valid ({reason}); run `clawmcp tools regen` again")]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot write the tools snapshot `{path}`: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

impl Snapshot {
    /// The snapshot compiled into this binary, parsed on first use.
    pub fn bundled() -> &'static Snapshot {
        static PARSED: OnceLock<Snapshot> = OnceLock::new();
        PARSED.get_or_init(|| {
            Snapshot::parse(BUNDLED).expect("the bundled gateway tools snapshot is valid (checked by a unit test)")
        })
    }

    /// Reads a regen snapshot under the state trust rules (`clawmcp_fs::read_state_file`: it
    /// becomes tool descriptions a model reads, so a symlink, a FIFO, another user's file or a
    /// file others can write is refused). `Ok(None)` when the file does not exist.
    pub fn load(path: &Path) -> Result<Option<Snapshot>, SnapshotError> {
        let read_error = |source| SnapshotError::Read { path: path.to_owned(), source };
        let text = match clawmcp_fs::read_state_file(path, clawmcp_fs::StateRules::private(MAX_SNAPSHOT_BYTES)) {
            Ok(Some(bytes)) => clawmcp_fs::into_text(bytes).map_err(read_error)?,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData && clawmcp_fs::untrusted(&e).is_some() => {
                return Err(SnapshotError::TooLarge { path: path.to_owned() });
            }
            Err(source) => return Err(read_error(source)),
        };
        Snapshot::parse(&text).map(Some).map_err(|reason| SnapshotError::Invalid { path: path.to_owned(), reason })
    }

    /// Parses and checks a snapshot: known format, unique names, object schemas.
    pub fn parse(text: &str) -> Result<Snapshot, String> {
        let snapshot: Snapshot = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if snapshot.format != SNAPSHOT_FORMAT {
            return Err(format!("format {} (this clawmcp reads format {SNAPSHOT_FORMAT})", snapshot.format));
        }
        let mut seen = std::collections::BTreeSet::new();
        for tool in &snapshot.tools {
            if tool.name.trim().is_empty() || !seen.insert(tool.name.as_str()) {
                return Err(format!("tool name {:?} is empty or repeated", tool.name));
            }
            if !tool.input_schema.is_object() {
                return Err(format!("tool {} has no object inputSchema", tool.name));
            }
        }
        Ok(snapshot)
    }

    /// Writes the snapshot atomically (a reader sees the old file or the new one).
    pub fn save(&self, path: &Path) -> Result<(), SnapshotError> {
        let write = |source| SnapshotError::Write { path: path.to_owned(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            clawmcp_fs::create_private_dir(dir).map_err(write)?;
        }
        let mut text = serde_json::to_string_pretty(self).expect("a snapshot serializes");
        text.push('\n');
        crate::atomic::write_atomic(path, text.as_bytes()).map_err(write)
    }

    pub fn get(&self, name: &str) -> Option<&SnapshotTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bundled_snapshot_is_valid_and_holds_the_default_http_set() {
        let bundled = Snapshot::bundled();
        assert_eq!(bundled.openclaw_version, BUNDLED_OPENCLAW_VERSION);
        for name in ["sessions_list", "session_status", "sessions", "subagents", "message", "sessions_spawn"] {
            let tool = bundled.get(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(tool.input_schema["type"], "object", "{name}");
            assert!(!tool.description.is_empty(), "{name}");
        }
        assert!(bundled.get("read").is_none() && bundled.get("exec").is_none(), "coding tools are never on HTTP");
    }

    #[test]
    fn save_then_load_round_trips_and_missing_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/tools-snapshot.json");
        assert!(Snapshot::load(&path).unwrap().is_none());
        let snapshot = Snapshot {
            format: SNAPSHOT_FORMAT,
            openclaw_version: "2026.9.6".into(),
            generated_at: Some("2026-11-30T00:00:00Z".into()),
            source: "test".into(),
            tools: vec![SnapshotTool {
                name: "x".into(),
                description: "d".into(),
                input_schema: json!({"type": "object", "properties": {}}),
            }],
        };
        snapshot.save(&path).unwrap();
        assert_eq!(Snapshot::load(&path).unwrap(), Some(snapshot));
    }

    #[test]
    fn invalid_snapshots_are_refused_with_the_reason() {
        let bad = [
            (r#"{"format":2,"tools":[]}"#, "format 2"),
            (r#"{"format":1,"tools":[{"name":"a","inputSchema":{}},{"name":"a","inputSchema":{}}]}"#, "repeated"),
            (r#"{"format":1,"tools":[{"name":"a","inputSchema":[]}]}"#, "no object inputSchema"),
            ("not json", "expected"),
        ];
        for (text, reason) in bad {
            let error = Snapshot::parse(text).unwrap_err();
            assert!(error.contains(reason), "{text}: {error}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "{}").unwrap();
        assert!(matches!(Snapshot::load(&path), Err(SnapshotError::Invalid { .. })));
    }
}
