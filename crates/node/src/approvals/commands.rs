//! `system.execApprovals.get` and `system.execApprovals.set`: the policy file over MCP (and the
//! gateway), with compare-and-swap on the file hash and the tighten-only rule of [`super::remote`].
//!
//! `get` returns `{path, exists, hash, file}` and never `baseHash` (the gateway's schema forbids
//! it); a missing file reads as `exists: false` with the defaults spelled out and is not created.
//! `set` takes `{baseHash, file}` and answers with the same shape as `get`. Error texts are
//! upstream's.

use clawmcp_mcp::ToolAnnotations;
use serde_json::{Map, Value, json};
use std::sync::{Arc, LazyLock};

use super::ExecApprovals;
use super::model::{ApprovalsFile, FILE_VERSION};
use super::remote;
use super::store::{Loaded, missing_hash};
use crate::capability::{CapabilityError, Command, CommandSpec, InvokeResult};
use clawmcp_mcp::tool::codes::UNAVAILABLE;

pub const GET_COMMAND: &str = "system.execApprovals.get";
pub const SET_COMMAND: &str = "system.execApprovals.set";

const GET_DESCRIPTION: &str = "Read the exec-approval policy that gates system.run. Returns {path, exists, hash, file}: \
file is {version:1, defaults:{security, ask, askFallback, autoAllowSkills}, agents:{<agentId>|\"*\":{...same keys, \
allowlist:[{pattern, argPattern?, source?, ...}]}}}. Pass hash as baseHash to system.execApprovals.set. \
Socket credentials are never returned.";

const SET_DESCRIPTION: &str = "Replace the exec-approval policy, compare-and-swap: {baseHash: the hash from \
system.execApprovals.get, file: the whole new file, version 1}. Remote updates may only tighten: security \
(deny < allowlist < full) and askFallback may not loosen, ask (off < on-miss < always < deny) may not loosen, \
autoAllowSkills may not be enabled, and allowlist entries may be removed but never added or changed. \
A stale baseHash fails with \"exec approvals changed; reload and retry\". New commands are approved by the \
node's owner with `clawmcp approvals`, not through this tool.";

/// Changes policy but only ever toward "less may run".
const SET_ANNOTATIONS: ToolAnnotations =
    ToolAnnotations { read_only_hint: false, destructive_hint: true, idempotent_hint: false, open_world_hint: false };

fn policy_schema(with_allowlist: bool) -> Value {
    let mut properties = json!({
        "security": {"type": "string", "enum": ["deny", "allowlist", "full"]},
        "ask": {"type": "string", "enum": ["off", "on-miss", "always", "deny"]},
        "askFallback": {"type": "string", "enum": ["deny", "allowlist", "full"]},
        "autoAllowSkills": {"type": "boolean"}
    });
    if with_allowlist {
        properties["allowlist"] = json!({
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pattern"],
                "properties": {
                    "id": {"type": "string"},
                    "pattern": {"type": "string", "description": "Glob over the resolved absolute executable path."},
                    "argPattern": {"type": "string"},
                    "source": {"type": "string"},
                    "commandText": {"type": "string"},
                    "lastUsedAt": {"type": "integer"},
                    "lastResolvedPath": {"type": "string"},
                    "lastUsedCommand": {"type": "string"}
                }
            }
        });
    }
    json!({"type": "object", "properties": properties})
}

fn set_schema() -> Value {
    json!({
        "type": "object",
        "required": ["baseHash", "file"],
        "properties": {
            "baseHash": {"type": "string", "description": "The hash returned by system.execApprovals.get."},
            "file": {
                "type": "object",
                "required": ["version"],
                "properties": {
                    "version": {"const": FILE_VERSION},
                    "socket": {"type": "object", "properties": {"path": {"type": "string"}}},
                    "defaults": policy_schema(false),
                    "agents": {"type": "object", "additionalProperties": policy_schema(true)}
                }
            }
        }
    })
}

impl ExecApprovals {
    /// The two policy commands over `approvals`, for the `system` capability to publish.
    pub fn commands(approvals: &Arc<ExecApprovals>) -> Vec<Command> {
        let mut specs = ExecApprovals::command_specs().into_iter();
        let (get, set) = (specs.next().expect("get"), specs.next().expect("set"));
        let reader = approvals.clone();
        let writer = approvals.clone();
        vec![
            get.with_handler(move |_request, _ctx| {
                let answer = reader.get_snapshot();
                async move { answer }
            }),
            set.with_handler(move |request, _ctx| {
                let answer = writer.set_from_args(&request.args);
                async move { answer }
            }),
        ]
    }

    /// The two policy commands' descriptors (`get`, then `set`).
    fn command_specs() -> Vec<CommandSpec> {
        static SPEC: LazyLock<Vec<CommandSpec>> = LazyLock::new(|| {
            vec![
                CommandSpec {
                    name: GET_COMMAND,
                    title: Some("Read the exec-approval policy"),
                    output_schema: None,
                    description: Some(GET_DESCRIPTION),
                    input_schema: Some(json!({"type": "object", "properties": {}}).into()),
                    annotations: ToolAnnotations::READ_ONLY,
                },
                CommandSpec {
                    name: SET_COMMAND,
                    title: Some("Replace the exec-approval policy"),
                    output_schema: None,
                    description: Some(SET_DESCRIPTION),
                    input_schema: Some(set_schema().into()),
                    annotations: SET_ANNOTATIONS,
                },
            ]
        });
        SPEC.clone()
    }

    /// `system.execApprovals.get`.
    pub fn get_snapshot(&self) -> InvokeResult {
        match self.store.load() {
            Loaded::Missing => Ok(self.snapshot(false, &missing_hash(), &ApprovalsFile::default_file())),
            Loaded::Present { file, hash } => Ok(self.snapshot(true, &hash, &file.redacted_for_snapshot())),
            Loaded::Invalid { reason } => Err(self.unusable(&reason)),
        }
    }

    /// `system.execApprovals.set`. A request the node refuses (stale hash, a malformed file, an
    /// update that would loosen the policy) is `INVALID_REQUEST`, as upstream answers; a node
    /// that cannot read or write its own file is `UNAVAILABLE`.
    pub fn set_from_args(&self, args: &Map<String, Value>) -> InvokeResult {
        let base_hash = args
            .get("baseHash")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|hash| !hash.is_empty())
            .ok_or_else(|| {
                CapabilityError::invalid_request("baseHash is required for exec approvals updates; reload and retry")
            })?;
        let Some(Value::Object(raw)) = args.get("file") else {
            return Err(CapabilityError::invalid_request("exec approvals file required"));
        };
        if raw.get("version").and_then(Value::as_i64) != Some(FILE_VERSION) {
            return Err(CapabilityError::invalid_request("exec approvals file version 1 required"));
        }
        remote::check_agent_shapes(raw).map_err(CapabilityError::invalid_request)?;
        let desired: ApprovalsFile = serde_json::from_value(Value::Object(raw.clone()))
            .map_err(|e| CapabilityError::invalid_request(format!("Invalid exec approvals file: {e}")))?;

        let saved =
            self.compare_and_swap(base_hash, desired, remote::validate_update).map_err(|refusal| match refusal {
                SwapRefusal::Stale => {
                    tracing::warn!("execApprovals.set refused: stale baseHash");
                    CapabilityError::invalid_request(STALE)
                }
                SwapRefusal::Refused(message) => {
                    tracing::warn!(%message, "execApprovals.set refused");
                    CapabilityError::invalid_request(message)
                }
                SwapRefusal::Unusable(reason) => self.unusable(&reason),
                SwapRefusal::Write(error) => CapabilityError::new(error).with_code(UNAVAILABLE),
            })?;
        tracing::info!(agents = saved.file.agents.as_ref().map_or(0, |a| a.len()), "exec approvals updated remotely");
        Ok(self.snapshot(true, &saved.hash, &saved.file.redacted_for_snapshot()))
    }

    /// The one writer of a whole new policy file, for `system.execApprovals.set` and the owner's
    /// `clawmcp approvals allow|remove|set-default`: under the store lock, the file must still
    /// hash to `base_hash` (compare-and-swap: an edit made meanwhile is never overwritten), then
    /// `rule` judges the change (the tighten-only rule for a remote caller; the owner's rule
    /// only describes what loosened), then the file is normalized and saved atomically.
    pub(super) fn compare_and_swap(
        &self,
        base_hash: &str,
        desired: ApprovalsFile,
        rule: impl FnOnce(&ApprovalsFile, &ApprovalsFile) -> Result<(), String>,
    ) -> Result<Swapped, SwapRefusal> {
        let _guard = self.store.lock();
        let (current, current_hash) = match self.store.load() {
            Loaded::Missing => (ApprovalsFile::default_file(), missing_hash()),
            Loaded::Present { file, hash } => (file, hash),
            Loaded::Invalid { reason } => return Err(SwapRefusal::Unusable(reason)),
        };
        if base_hash != current_hash {
            return Err(SwapRefusal::Stale);
        }
        rule(&current, &desired).map_err(SwapRefusal::Refused)?;
        let file = desired.normalized_for_save(current.socket.as_ref());
        let hash = self.store.save(&file).map_err(|e| SwapRefusal::Write(e.to_string()))?;
        Ok(Swapped { hash, file })
    }

    fn snapshot(&self, exists: bool, hash: &str, file: &ApprovalsFile) -> Value {
        json!({
            "path": self.store.path().display().to_string(),
            "exists": exists,
            "hash": hash,
            "file": file,
        })
    }

    fn unusable(&self, reason: &str) -> CapabilityError {
        CapabilityError::new(format!(
            "Exec approvals file `{}` is malformed, unsupported or untrusted ({reason}); every command is denied \
             until the node's owner fixes or deletes it",
            self.store.path().display()
        ))
        .with_code(UNAVAILABLE)
    }
}

/// What a compare-and-swap wrote.
pub(super) struct Swapped {
    pub hash: String,
    pub file: ApprovalsFile,
}

/// Why a compare-and-swap wrote nothing.
#[derive(Debug)]
pub(super) enum SwapRefusal {
    /// The file changed since its hash was read.
    Stale,
    /// The rule refused the change; its message.
    Refused(String),
    /// The current file is untrustworthy (never overwritten); the reason.
    Unusable(String),
    Write(String),
}

/// The refusal of a stale `baseHash`, in upstream's words.
pub(super) const STALE: &str = "exec approvals changed; reload and retry";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_both_commands_with_schemas() {
        let specs = ExecApprovals::command_specs();
        let names: Vec<_> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, [GET_COMMAND, SET_COMMAND]);
        assert!(specs[0].annotations.read_only_hint);
        assert!(!specs[1].annotations.read_only_hint);
        let set = specs[1].input_schema.as_ref().unwrap().to_value();
        assert_eq!(set["required"], json!(["baseHash", "file"]));
        assert!(specs.iter().all(|s| s.description.is_some_and(|d| d.len() > 40)));
    }
}
