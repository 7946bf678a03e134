//! The node owner's edits of the policy file, for `clawmcp approvals policy|allow|remove|
//! set-default`: read the file with its hash, change it in memory, write it back with the same
//! compare-and-swap as `system.execApprovals.set` ([`ExecApprovals::compare_and_swap`], the one
//! writer of whole files).
//!
//! The difference from the remote path is who may loosen: a remote caller may only tighten
//! ([`super::remote`]), because an agent must not grant itself execution rights; the owner,
//! at the terminal, may also allow a program or relax a default. The owner is told when a change
//! is one a remote caller could not have made (the tighten-only rule's own message), so loosening
//! is never silent.

use std::path::PathBuf;

use super::ExecApprovals;
use super::commands::SwapRefusal;
use super::model::{AllowlistEntry, ApprovalsFile, PolicyFields, new_entry_id};
use super::remote;
use super::store::{Loaded, missing_hash};

/// The policy file as the owner reads it before an edit.
#[derive(Debug, Clone)]
pub struct OwnerView {
    pub path: PathBuf,
    /// False while no file exists (the built-in defaults apply; a save creates it).
    pub exists: bool,
    /// What the file hashes to now: the base of the next save.
    pub hash: String,
    /// The file as stored (a missing file reads as the default file).
    pub file: ApprovalsFile,
}

/// What a save did.
#[derive(Debug, Clone)]
pub struct OwnerSaved {
    pub hash: String,
    /// The tighten-only rule's refusal of this change, when it loosened the policy (only the owner
    /// can make it); `None` when a remote caller could have made it too.
    pub loosened: Option<String>,
}

/// Why the owner's edit wrote nothing. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    #[error(
        "the exec approvals file `{path}` changed while this edit was being made\nhint: run the command again (it re-reads the file)"
    )]
    Stale { path: PathBuf },
    #[error(
        "the exec approvals file `{path}` is unusable ({reason}), so every command is denied and the file is not overwritten\nhint: fix it, or move it away to start from the defaults: `mv {path} {path}.bak`",
        path = .path.display()
    )]
    Unusable { path: PathBuf, reason: String },
    #[error("{0}")]
    Write(String),
}

impl ExecApprovals {
    /// The file and its hash now.
    pub fn owner_view(&self) -> Result<OwnerView, OwnerError> {
        let path = self.store.path().to_path_buf();
        match self.store.load() {
            Loaded::Missing => {
                Ok(OwnerView { path, exists: false, hash: missing_hash(), file: ApprovalsFile::default_file() })
            }
            Loaded::Present { file, hash } => Ok(OwnerView { path, exists: true, hash, file }),
            Loaded::Invalid { reason } => Err(OwnerError::Unusable { path, reason }),
        }
    }

    /// Writes `desired` if the file still hashes to `base_hash` (the hash of the [`OwnerView`]
    /// the edit started from).
    pub fn owner_save(&self, base_hash: &str, desired: ApprovalsFile) -> Result<OwnerSaved, OwnerError> {
        let mut loosened = None;
        let saved = self
            .compare_and_swap(base_hash, desired, |current, desired| {
                loosened = remote::validate_update(current, desired).err();
                Ok(())
            })
            .map_err(|refusal| match refusal {
                SwapRefusal::Stale => OwnerError::Stale { path: self.store.path().to_path_buf() },
                SwapRefusal::Unusable(reason) => OwnerError::Unusable { path: self.store.path().to_path_buf(), reason },
                SwapRefusal::Refused(message) | SwapRefusal::Write(message) => OwnerError::Write(message),
            })?;
        tracing::info!(loosened = loosened.is_some(), "exec approvals edited by the owner");
        Ok(OwnerSaved { hash: saved.hash, loosened })
    }
}

/// Every allowlist rule of the file with the agent whose bucket holds it, in file order.
pub fn rules(file: &ApprovalsFile) -> Vec<(String, AllowlistEntry)> {
    file.agents
        .iter()
        .flatten()
        .flat_map(|(agent, policy)| policy.allowlist.iter().flatten().map(move |entry| (agent.clone(), entry.clone())))
        .collect()
}

/// What [`add_rule`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// A new rule, with a fresh id.
    New(AllowlistEntry),
    /// The agent already has a rule granting exactly this; nothing changed.
    Existing(AllowlistEntry),
}

/// Adds a hand-written rule to `agent`'s allowlist: `pattern` (a path glob) with any arguments,
/// or with arguments matching `arg_pattern` (a regex searched in the arguments joined by spaces).
/// No `source`: a rule with a source and no argument binding is ignored by the matcher.
pub fn add_rule(file: &mut ApprovalsFile, agent: &str, pattern: &str, arg_pattern: Option<&str>) -> Added {
    let entry = AllowlistEntry {
        id: Some(new_entry_id()),
        pattern: pattern.to_owned(),
        arg_pattern: arg_pattern.map(str::to_owned),
        ..AllowlistEntry::default()
    };
    let list = file.agents.get_or_insert_with(Default::default).entry(agent.to_owned()).or_default();
    let list = list.allowlist.get_or_insert_with(Vec::new);
    if let Some(existing) = list.iter().find(|known| known.grant() == entry.grant()) {
        return Added::Existing(existing.clone());
    }
    list.push(entry.clone());
    Added::New(entry)
}

/// Removes the rules `select` picks, from `agent`'s bucket only or (`None`) from every agent's;
/// returns them with their agents.
pub fn remove_rules(
    file: &mut ApprovalsFile,
    agent: Option<&str>,
    select: impl Fn(&AllowlistEntry) -> bool,
) -> Vec<(String, AllowlistEntry)> {
    let mut removed = Vec::new();
    for (id, policy) in file.agents.iter_mut().flatten() {
        if agent.is_some_and(|wanted| wanted != id) {
            continue;
        }
        let Some(list) = policy.allowlist.as_mut() else { continue };
        list.retain(|entry| {
            let picked = select(entry);
            if picked {
                removed.push((id.clone(), entry.clone()));
            }
            !picked
        });
    }
    removed
}

/// Sets the given default values (`None` keeps a value); returns whether anything changed.
pub fn set_defaults(file: &mut ApprovalsFile, values: &PolicyFields) -> bool {
    let defaults = file.defaults.get_or_insert_with(PolicyFields::default);
    let before = defaults.clone();
    defaults.security = values.security.or(defaults.security);
    defaults.ask = values.ask.or(defaults.ask);
    defaults.ask_fallback = values.ask_fallback.or(defaults.ask_fallback);
    *defaults != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::model::{Ask, Security};

    fn approvals() -> (tempfile::TempDir, ExecApprovals) {
        let dir = tempfile::tempdir().unwrap();
        let approvals = ExecApprovals::open(dir.path().join("exec-approvals.json"));
        (dir, approvals)
    }

    #[test]
    fn an_added_rule_is_saved_once_and_reported_as_loosening() {
        let (_dir, approvals) = approvals();
        let view = approvals.owner_view().unwrap();
        assert!(!view.exists);
        let mut file = view.file;
        let Added::New(entry) = add_rule(&mut file, "*", "/usr/bin/id", None) else { panic!("new") };
        assert_eq!(add_rule(&mut file, "*", "/usr/bin/id", None), Added::Existing(entry.clone()));
        assert!(matches!(add_rule(&mut file, "*", "/usr/bin/id", Some("^-u$")), Added::New(_)), "another grant");
        let saved = approvals.owner_save(&view.hash, file).unwrap();
        assert!(saved.loosened.unwrap().contains("cannot add or change allowlist entries"));
        let now = approvals.owner_view().unwrap();
        assert_eq!(now.hash, saved.hash);
        let listed = rules(&now.file);
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0], ("*".to_owned(), entry));
    }

    #[test]
    fn a_stale_base_is_refused_and_nothing_is_written() {
        let (_dir, approvals) = approvals();
        let view = approvals.owner_view().unwrap();
        let mut first = view.file.clone();
        add_rule(&mut first, "main", "/usr/bin/id", None);
        approvals.owner_save(&view.hash, first).unwrap();
        let written = std::fs::read_to_string(approvals.path()).unwrap();
        let mut second = view.file;
        add_rule(&mut second, "main", "/usr/bin/env", None);
        assert!(matches!(approvals.owner_save(&view.hash, second), Err(OwnerError::Stale { .. })));
        assert_eq!(std::fs::read_to_string(approvals.path()).unwrap(), written);
    }

    #[test]
    fn removing_and_tightening_are_changes_a_remote_caller_could_make() {
        let (_dir, approvals) = approvals();
        let view = approvals.owner_view().unwrap();
        let mut file = view.file;
        add_rule(&mut file, "main", "/usr/bin/id", None);
        add_rule(&mut file, "ops", "/usr/bin/id", None);
        let base = approvals.owner_save(&view.hash, file.clone()).unwrap().hash;
        let removed = remove_rules(&mut file, Some("ops"), |entry| entry.pattern == "/usr/bin/id");
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].0, "ops");
        assert!(set_defaults(&mut file, &PolicyFields { ask: Some(Ask::Always), ..PolicyFields::default() }));
        let saved = approvals.owner_save(&base, file.clone()).unwrap();
        assert_eq!(saved.loosened, None);
        assert!(!set_defaults(&mut file, &PolicyFields { ask: Some(Ask::Always), ..PolicyFields::default() }));
        assert!(set_defaults(&mut file, &PolicyFields { security: Some(Security::Full), ..PolicyFields::default() }));
        let loosened = approvals.owner_save(&saved.hash, file).unwrap().loosened.unwrap();
        assert!(loosened.contains("security less restrictive"), "{loosened}");
        let (policy, _) = approvals.current_policy(None);
        assert_eq!((policy.security, policy.ask), (Security::Full, Ask::Always));
    }

    #[test]
    fn an_unusable_file_is_reported_and_never_overwritten() {
        let (_dir, approvals) = approvals();
        std::fs::write(approvals.path(), "{ not json").unwrap();
        let error = approvals.owner_view().unwrap_err();
        assert!(error.to_string().contains("mv "), "{error}");
        let saved = approvals.owner_save(&missing_hash(), ApprovalsFile::default_file());
        assert!(matches!(saved, Err(OwnerError::Unusable { .. })));
        assert_eq!(std::fs::read_to_string(approvals.path()).unwrap(), "{ not json");
    }
}
