//! What a remote `system.execApprovals.set` may change: it may only tighten.
//!
//! The policy file is the node owner's. A caller reaching the node over MCP or the gateway can
//! make it stricter but never looser, so an agent cannot grant itself execution rights:
//! - for `defaults`, the wildcard agent `*`, and every named agent in either file plus `main`,
//!   the *effective* security may not loosen (deny < allowlist < full), ask may not loosen
//!   (off < on-miss < always and off < on-miss < deny; `always` and `deny` may not replace each
//!   other, see [`Ask`](super::model::Ask)), askFallback may not loosen, and autoAllowSkills may
//!   not turn on;
//! - allowlist entries may be removed, never added or changed: every desired entry must already
//!   exist in the same agent with the same grant identity (pattern trimmed, argPattern and
//!   source exact). Usage metadata (`lastUsedAt`, ...) is not identity and may differ.
//!
//! Messages are upstream's, word for word, so tools written against it keep working.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use super::model::{ApprovalsFile, DEFAULT_AGENT, GrantIdentity, Policy, WILDCARD_AGENT};

/// Shape rules checked on the raw JSON (a typed parse would only say "invalid file").
pub fn check_agent_shapes(file: &Map<String, Value>) -> Result<(), String> {
    let Some(Value::Object(agents)) = file.get("agents") else { return Ok(()) };
    for (id, agent) in agents {
        if id.trim().is_empty() {
            return Err("Exec approval agent ids cannot be empty.".to_string());
        }
        if !agent.is_object() {
            return Err(format!("Exec approval agent '{id}' is invalid."));
        }
    }
    Ok(())
}

/// Whether replacing `current` by `desired` only tightens.
pub fn validate_update(current: &ApprovalsFile, desired: &ApprovalsFile) -> Result<(), String> {
    compare(current.scope_policy(None, false), desired.scope_policy(None, false), "defaults")?;
    compare(current.scope_policy(None, true), desired.scope_policy(None, true), "agent '*'")?;
    let mut named: BTreeSet<&str> = [current, desired]
        .into_iter()
        .filter_map(|file| file.agents.as_ref())
        .flat_map(|agents| agents.keys().map(String::as_str))
        .filter(|id| *id != WILDCARD_AGENT)
        .collect();
    named.insert(DEFAULT_AGENT);
    for id in named {
        compare(current.scope_policy(Some(id), true), desired.scope_policy(Some(id), true), &format!("agent '{id}'"))?;
    }
    check_allowlists(current, desired)
}

fn compare(current: Policy, desired: Policy, scope: &str) -> Result<(), String> {
    if desired.security > current.security {
        return Err(format!("Remote exec approval updates cannot make security less restrictive for {scope}."));
    }
    if !desired.ask.is_at_least_as_strict_as(current.ask) {
        return Err(format!("Remote exec approval updates cannot make ask less restrictive for {scope}."));
    }
    if desired.ask_fallback > current.ask_fallback {
        return Err(format!("Remote exec approval updates cannot make askFallback less restrictive for {scope}."));
    }
    if desired.auto_allow_skills && !current.auto_allow_skills {
        return Err(format!(
            "Remote exec approval updates cannot make policy less restrictive by enabling autoAllowSkills for {scope}."
        ));
    }
    Ok(())
}

fn check_allowlists(current: &ApprovalsFile, desired: &ApprovalsFile) -> Result<(), String> {
    for (id, agent) in desired.agents.iter().flatten() {
        let existing: HashSet<GrantIdentity> = current
            .agent(id)
            .and_then(|a| a.allowlist.as_ref())
            .into_iter()
            .flatten()
            .map(|entry| entry.grant())
            .collect();
        for entry in agent.allowlist.iter().flatten() {
            if entry.pattern.trim().is_empty() {
                return Err("Empty allowlist patterns are not permitted.".to_string());
            }
            if !existing.contains(&entry.grant()) {
                return Err(format!(
                    "Remote exec approval updates cannot add or change allowlist entries for agent '{id}'."
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ApprovalsFile {
        serde_json::from_str(text).unwrap()
    }

    fn check(current: &str, desired: &str) -> Result<(), String> {
        validate_update(&file(current), &file(desired))
    }

    const BASE: &str = r#"{"version":1}"#;

    #[test]
    fn identical_files_pass() {
        assert_eq!(check(BASE, BASE), Ok(()));
    }

    #[test]
    fn loosening_the_defaults_is_rejected() {
        assert_eq!(
            check(BASE, r#"{"version":1,"defaults":{"security":"full"}}"#),
            Err("Remote exec approval updates cannot make security less restrictive for defaults.".into())
        );
        assert_eq!(
            check(BASE, r#"{"version":1,"defaults":{"ask":"off"}}"#),
            Err("Remote exec approval updates cannot make ask less restrictive for defaults.".into())
        );
        assert_eq!(
            check(BASE, r#"{"version":1,"defaults":{"askFallback":"allowlist"}}"#),
            Err("Remote exec approval updates cannot make askFallback less restrictive for defaults.".into())
        );
        assert_eq!(
            check(BASE, r#"{"version":1,"defaults":{"autoAllowSkills":true}}"#),
            Err(
                "Remote exec approval updates cannot make policy less restrictive by enabling autoAllowSkills for defaults."
                    .into()
            )
        );
    }

    #[test]
    fn legacy_ask_fallback_spelling_counts_as_its_security_value() {
        assert!(check(BASE, r#"{"version":1,"defaults":{"askFallback":"off"}}"#).unwrap_err().contains("askFallback"));
        assert_eq!(check(BASE, r#"{"version":1,"defaults":{"askFallback":"always"}}"#), Ok(()));
    }

    #[test]
    fn loosening_the_wildcard_is_rejected_for_the_wildcard_scope() {
        assert_eq!(
            check(BASE, r#"{"version":1,"agents":{"*":{"security":"full"}}}"#),
            Err("Remote exec approval updates cannot make security less restrictive for agent '*'.".into())
        );
        assert_eq!(
            check(BASE, r#"{"version":1,"agents":{"*":{"ask":"off"}}}"#),
            Err("Remote exec approval updates cannot make ask less restrictive for agent '*'.".into())
        );
    }

    #[test]
    fn loosening_main_is_rejected() {
        let current = r#"{"version":1,"defaults":{"security":"full"},"agents":{"*":{"security":"deny"}}}"#;
        // Dropping the wildcard loosens every agent, main included; the wildcard scope reports first.
        assert!(check(current, r#"{"version":1,"defaults":{"security":"full"}}"#).unwrap_err().contains("agent '*'"));
        assert_eq!(
            check(BASE, r#"{"version":1,"agents":{"main":{"askFallback":"full"}}}"#),
            Err("Remote exec approval updates cannot make askFallback less restrictive for agent 'main'.".into())
        );
    }

    #[test]
    fn loosening_a_named_agent_is_rejected_including_by_deleting_it() {
        let current = r#"{"version":1,"defaults":{"security":"full","ask":"off"},"agents":{"ops":{"security":"allowlist","ask":"always"}}}"#;
        assert_eq!(
            check(
                current,
                r#"{"version":1,"defaults":{"security":"full","ask":"off"},"agents":{"ops":{"ask":"always"}}}"#
            ),
            Err("Remote exec approval updates cannot make security less restrictive for agent 'ops'.".into())
        );
        assert_eq!(
            check(current, r#"{"version":1,"defaults":{"security":"full","ask":"off"}}"#),
            Err("Remote exec approval updates cannot make security less restrictive for agent 'ops'.".into()),
            "removing the agent entry falls back to looser defaults"
        );
        assert_eq!(
            check(BASE, r#"{"version":1,"agents":{"ops":{"autoAllowSkills":true}}}"#),
            Err("Remote exec approval updates cannot make policy less restrictive by enabling autoAllowSkills for agent 'ops'.".into())
        );
    }

    #[test]
    fn tightening_is_accepted_everywhere() {
        let desired = r#"{"version":1,"defaults":{"security":"deny","ask":"deny","askFallback":"deny"},
            "agents":{"*":{"security":"deny","ask":"always"},"main":{"ask":"deny"},"ops":{"security":"deny"}}}"#;
        assert_eq!(check(BASE, desired), Ok(()));
        let loose =
            r#"{"version":1,"defaults":{"security":"full","ask":"off","askFallback":"full","autoAllowSkills":true}}"#;
        assert_eq!(
            check(
                loose,
                r#"{"version":1,"defaults":{"security":"allowlist","ask":"on-miss","autoAllowSkills":false}}"#
            ),
            Ok(())
        );
    }

    /// Found with the fuzz target `exec_approvals` (its "an accepted update loosens nothing"
    /// check): `always` -> `deny` passed as tightening, yet under `deny` allowlisted commands run
    /// without the prompt `always` put before them.
    #[test]
    fn always_and_deny_may_not_replace_each_other() {
        let with = |ask: &str| format!(r#"{{"version":1,"defaults":{{"ask":"{ask}"}}}}"#);
        let refused = Err("Remote exec approval updates cannot make ask less restrictive for defaults.".to_string());
        assert_eq!(check(&with("always"), &with("deny")), refused);
        assert_eq!(check(&with("deny"), &with("always")), refused);
        for (from, to) in
            [("off", "on-miss"), ("off", "always"), ("off", "deny"), ("on-miss", "always"), ("on-miss", "deny")]
        {
            assert_eq!(check(&with(from), &with(to)), Ok(()), "{from} -> {to}");
            assert!(check(&with(to), &with(from)).is_err(), "{to} -> {from}");
        }
    }

    const WITH_ENTRIES: &str = r#"{"version":1,"agents":{"main":{"allowlist":[
        {"pattern":"/usr/bin/ls"},
        {"id":"1","pattern":"/usr/bin/git","argPattern":"^status\u0000$","source":"allow-always"}]}}}"#;

    #[test]
    fn removing_entries_is_accepted() {
        assert_eq!(
            check(WITH_ENTRIES, r#"{"version":1,"agents":{"main":{"allowlist":[{"pattern":"/usr/bin/ls"}]}}}"#),
            Ok(())
        );
        assert_eq!(check(WITH_ENTRIES, r#"{"version":1,"agents":{"main":{}}}"#), Ok(()));
        assert_eq!(check(WITH_ENTRIES, BASE), Ok(()));
    }

    #[test]
    fn keeping_entries_with_different_metadata_is_accepted() {
        let desired = r#"{"version":1,"agents":{"main":{"allowlist":[
            {"pattern":" /usr/bin/ls ","lastUsedAt":99},
            {"pattern":"/usr/bin/git","argPattern":"^status\u0000$","source":"allow-always","commandText":"git status"}]}}}"#;
        assert_eq!(check(WITH_ENTRIES, desired), Ok(()));
    }

    #[test]
    fn adding_or_changing_entries_is_rejected() {
        let err =
            Err("Remote exec approval updates cannot add or change allowlist entries for agent 'main'.".to_string());
        let added =
            r#"{"version":1,"agents":{"main":{"allowlist":[{"pattern":"/usr/bin/ls"},{"pattern":"/usr/bin/rm"}]}}}"#;
        assert_eq!(check(WITH_ENTRIES, added), err);
        let stripped =
            r#"{"version":1,"agents":{"main":{"allowlist":[{"pattern":"/usr/bin/git","source":"allow-always"}]}}}"#;
        assert_eq!(check(WITH_ENTRIES, stripped), err, "stripping argPattern widens the grant");
        let redistributed = r#"{"version":1,"agents":{"main":{"allowlist":[
            {"pattern":"/usr/bin/git","argPattern":"^sta\u0000tus\u0000$","source":"allow-always"}]}}}"#;
        assert_eq!(check(WITH_ENTRIES, redistributed), err, "moving NUL delimiters changes the binding");
        let unsourced = r#"{"version":1,"agents":{"main":{"allowlist":[{"pattern":"/usr/bin/git","argPattern":"^status\u0000$"}]}}}"#;
        assert_eq!(check(WITH_ENTRIES, unsourced), err, "source is identity");
        let recased = r#"{"version":1,"agents":{"main":{"allowlist":[{"pattern":"/usr/bin/LS"}]}}}"#;
        assert_eq!(check(WITH_ENTRIES, recased), err);
    }

    #[test]
    fn moving_an_entry_to_another_agent_is_adding_it() {
        let moved = r#"{"version":1,"agents":{"*":{"allowlist":[{"pattern":"/usr/bin/ls"}]}}}"#;
        assert_eq!(
            check(WITH_ENTRIES, moved),
            Err("Remote exec approval updates cannot add or change allowlist entries for agent '*'.".into())
        );
    }

    #[test]
    fn empty_patterns_are_rejected() {
        assert_eq!(
            check(WITH_ENTRIES, r#"{"version":1,"agents":{"main":{"allowlist":[{"pattern":"  "}]}}}"#),
            Err("Empty allowlist patterns are not permitted.".into())
        );
    }

    #[test]
    fn agent_shapes() {
        let raw = |text: &str| serde_json::from_str::<Map<String, Value>>(text).unwrap();
        assert_eq!(
            check_agent_shapes(&raw(r#"{"agents":{" ":{}}}"#)),
            Err("Exec approval agent ids cannot be empty.".into())
        );
        assert_eq!(
            check_agent_shapes(&raw(r#"{"agents":{"x":null}}"#)),
            Err("Exec approval agent 'x' is invalid.".into())
        );
        assert_eq!(check_agent_shapes(&raw(r#"{"agents":{"x":{}}}"#)), Ok(()));
    }
}
