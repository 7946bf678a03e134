//! `clawmcp approvals policy|allow|remove|set-default`: the node owner reads and edits the exec
//! policy file without editing JSON.
//!
//! They work on the data dir's `exec-approvals.json` directly, through the node crate's owner
//! API (`clawmcp_node::approvals::owner`), whose save is the same compare-and-swap writer as
//! `system.execApprovals.set`: nothing here writes the file itself. No running node is needed;
//! a running one reads the file on every command, so an edit applies to its next `system.run`.
//! They are deliberately not node methods: a connected agent must not allow its own programs.

use std::process::ExitCode;

use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::approvals::matcher;
use clawmcp_node::approvals::model::{
    ALLOW_ALWAYS_SOURCE, AllowlistEntry, ApprovalsFile, Ask, DEFAULT_AGENT, PolicyFields, Security, WILDCARD_AGENT,
};
use clawmcp_node::approvals::owner::{self, Added, OwnerError, OwnerSaved, OwnerView};
use clawmcp_node::settings::DataDir;
use serde_json::{Value, json};

use crate::args::{ApprovalAction, AskArg, SecurityArg};
use crate::exit::UsageError;
use crate::output;

/// Runs a policy action; `None` when `action` is not one (it is for the running node).
pub fn run(data: &DataDir, action: &ApprovalAction) -> Option<anyhow::Result<ExitCode>> {
    let approvals = ExecApprovals::open(data.exec_approvals_path());
    Some(match action {
        ApprovalAction::Policy { json } => show(&approvals, *json),
        ApprovalAction::Allow { program, args_pattern, agent } => {
            allow(&approvals, program, args_pattern.as_deref(), agent)
        }
        ApprovalAction::Remove { rule, agent } => remove(&approvals, rule, agent.as_deref()),
        ApprovalAction::SetDefault { security, ask, ask_fallback } => {
            set_default(&approvals, *security, *ask, *ask_fallback)
        }
        _ => return None,
    })
}

/// How often an edit is applied again to a file that changed between its read and its save
/// (a running node stamps `lastUsedAt` on the rule of every run it allows).
const EDIT_ATTEMPTS: usize = 3;

/// What an edit did to the file it was given.
enum Change<T> {
    Save(T),
    Keep(T),
}

struct Edited<T> {
    outcome: T,
    /// The file as saved (or as read, when nothing changed).
    file: ApprovalsFile,
    saved: Option<OwnerSaved>,
}

/// Reads the policy file, applies `apply`, saves through the compare-and-swap when it changed
/// something; a file changed meanwhile is read again and `apply` re-run (up to
/// [`EDIT_ATTEMPTS`] times), so the owner's edit is applied to the current file, never over it.
fn edit<T>(
    approvals: &ExecApprovals,
    apply: impl Fn(&mut ApprovalsFile) -> anyhow::Result<Change<T>>,
) -> anyhow::Result<Edited<T>> {
    let mut attempt = 1;
    loop {
        let view = approvals.owner_view()?;
        let mut file = view.file;
        let outcome = match apply(&mut file)? {
            Change::Keep(outcome) => return Ok(Edited { outcome, file, saved: None }),
            Change::Save(outcome) => outcome,
        };
        match approvals.owner_save(&view.hash, file.clone()) {
            Ok(saved) => return Ok(Edited { outcome, file, saved: Some(saved) }),
            Err(OwnerError::Stale { .. }) if attempt < EDIT_ATTEMPTS => attempt += 1,
            Err(error) => return Err(error.into()),
        }
    }
}

/// The three policy values as `security=allowlist ask=on-miss askFallback=deny`.
pub fn policy_text(security: Security, ask: Ask, ask_fallback: Security) -> String {
    format!("security={} ask={} askFallback={}", security.as_str(), ask.as_str(), ask_fallback.as_str())
}

/// The policy `main` (a request without agentId) is judged by, and how many allow rules apply to
/// it: what `clawmcp doctor` reports.
pub fn effective_summary(file: &ApprovalsFile) -> (String, usize) {
    let effective = file.effective(DEFAULT_AGENT);
    let policy = effective.policy;
    (policy_text(policy.security, policy.ask, policy.ask_fallback), effective.allowlist.len())
}

fn show(approvals: &ExecApprovals, json: bool) -> anyhow::Result<ExitCode> {
    let view = approvals.owner_view()?;
    let rules = owner::rules(&view.file);
    if json {
        let effective = |agent: &str| {
            let policy = view.file.effective(agent).policy;
            json!({"security": policy.security, "ask": policy.ask, "askFallback": policy.ask_fallback})
        };
        let mut agents: Vec<String> = view.file.agents.iter().flatten().map(|(id, _)| id.clone()).collect();
        if !agents.iter().any(|id| id == DEFAULT_AGENT) {
            agents.insert(0, DEFAULT_AGENT.to_owned());
        }
        let document = json!({
            "path": view.path.display().to_string(),
            "exists": view.exists,
            "hash": view.hash,
            "file": view.file.redacted_for_snapshot(),
            "effective": agents.iter().map(|id| (id.clone(), effective(id))).collect::<serde_json::Map<String, Value>>(),
            "rules": rules.iter().map(|(agent, entry)| rule_json(agent, entry)).collect::<Vec<_>>(),
        });
        output::data(&document.to_string());
        return Ok(ExitCode::SUCCESS);
    }
    output::data(&describe(&view, &rules));
    Ok(ExitCode::SUCCESS)
}

fn rule_json(agent: &str, entry: &AllowlistEntry) -> Value {
    let mut value = serde_json::to_value(entry).unwrap_or_default();
    value["agent"] = agent.into();
    value["allows"] = describe_arguments(entry).into();
    value
}

fn describe(view: &OwnerView, rules: &[(String, AllowlistEntry)]) -> String {
    let file = &view.file;
    let defaults = file.scope_policy(None, false);
    let mut lines = vec![match view.exists {
        true => format!("exec policy: {}", view.path.display()),
        false => format!("exec policy: {} (no file yet: the built-in defaults)", view.path.display()),
    }];
    lines.push(format!("  defaults: {}", policy_text(defaults.security, defaults.ask, defaults.ask_fallback)));
    for (id, agent) in file.agents.iter().flatten() {
        let own = fields_text(&agent.policy);
        if !own.is_empty() {
            lines.push(format!("  agent {id} sets: {own}"));
        }
    }
    let main = file.effective(DEFAULT_AGENT).policy;
    lines.push(format!(
        "  in effect for {DEFAULT_AGENT} (calls without agentId): {}",
        policy_text(main.security, main.ask, main.ask_fallback)
    ));
    if rules.is_empty() {
        lines.push("allow rules: none (`clawmcp approvals allow PROGRAM` adds one)".to_owned());
    } else {
        lines.push(format!("allow rules ({}):", rules.len()));
        for (agent, entry) in rules {
            let agent = if agent == WILDCARD_AGENT { "* (every agent)" } else { agent };
            lines.push(format!(
                "  {}  agent={agent}  {}  {}",
                entry.id.as_deref().unwrap_or("(no id)"),
                entry.pattern,
                describe_arguments(entry)
            ));
        }
    }
    lines.join("\n")
}

/// What arguments a rule lets through, in words.
fn describe_arguments(entry: &AllowlistEntry) -> String {
    let source = entry.source.as_deref().map(str::trim).filter(|s| !s.is_empty());
    match (entry.arg_pattern.as_deref().filter(|p| !p.is_empty()), source) {
        (None, None) => "any arguments".to_owned(),
        (None, Some(_)) => "nothing (a generated rule without its argument binding is ignored)".to_owned(),
        (Some(pattern), _) if pattern.contains('\0') || pattern.starts_with("sha256:") => match &entry.command_text {
            Some(text) if source == Some(ALLOW_ALWAYS_SOURCE) => format!("exactly: {text}"),
            _ => "one exact argument list".to_owned(),
        },
        (Some(pattern), _) => format!("arguments matching /{pattern}/"),
    }
}

/// The values one scope sets itself, e.g. `ask=always`; empty when it inherits everything.
fn fields_text(fields: &PolicyFields) -> String {
    let mut parts = Vec::new();
    if let Some(security) = fields.security {
        parts.push(format!("security={}", security.as_str()));
    }
    if let Some(ask) = fields.ask {
        parts.push(format!("ask={}", ask.as_str()));
    }
    if let Some(fallback) = fields.ask_fallback {
        parts.push(format!("askFallback={}", fallback.as_str()));
    }
    parts.join(" ")
}

/// The program as system.run would resolve it: its canonical path.
fn resolve_program(program: &str) -> Result<String, String> {
    let cwd = std::env::current_dir().ok();
    let search_path = std::env::var_os("PATH");
    let resolved =
        clawmcp_node::approvals::resolve::resolve(&[program.to_owned()], cwd.as_deref(), search_path.as_deref())?;
    if !resolved.is_durable() || !resolved.args.is_empty() {
        return Err(format!("`{program}` is not one program"));
    }
    Ok(resolved.executable_text)
}

fn allow(
    approvals: &ExecApprovals,
    program: &str,
    args_pattern: Option<&str>,
    agent: &str,
) -> anyhow::Result<ExitCode> {
    if let Some(pattern) = args_pattern {
        matcher::check_hand_written_arg_pattern(pattern).map_err(|reason| {
            UsageError(format!(
                "--args-pattern `{pattern}` is not a usable regex: {reason}\nhint: a regex over the arguments joined by \
                 single spaces, e.g. --args-pattern '^-[gu]$'; leave it out to allow any arguments"
            ))
        })?;
    }
    let agent = agent.trim();
    if agent.is_empty() {
        return Err(UsageError("--agent is empty\nhint: `--agent main`, or leave it out for every agent".into()).into());
    }
    let path = resolve_program(program).map_err(|reason| {
        UsageError(format!(
            "cannot allow `{program}`: {reason}\nhint: give the program's absolute path (e.g. /usr/bin/id) or a name on PATH"
        ))
    })?;
    let pattern = matcher::exact_path_pattern(&path)
        .ok_or_else(|| anyhow::anyhow!("no allow rule can name `{path}` exactly (it ends in non-ASCII whitespace)"))?;
    if path != program {
        output::note(&format!(
            "note: `{program}` resolves to `{path}`; the rule names that path, as system.run matches it"
        ));
    }
    let edited = edit(approvals, |file| {
        Ok(match owner::add_rule(file, agent, &pattern, args_pattern) {
            Added::Existing(entry) => Change::Keep(Err(entry)),
            Added::New(entry) => Change::Save(Ok(entry)),
        })
    })?;
    let file = edited.file;
    let entry = match edited.outcome {
        Err(existing) => {
            output::note(&format!(
                "already allowed: rule {} (agent {agent}) grants {path} {}",
                existing.id.as_deref().unwrap_or("(no id)"),
                describe_arguments(&existing)
            ));
            return Ok(ExitCode::SUCCESS);
        }
        Ok(entry) => entry,
    };
    let scope = if agent == WILDCARD_AGENT { "every agent".to_owned() } else { format!("agent {agent}") };
    output::note(&format!("allowed {path} ({}) for {scope}", describe_arguments(&entry)));
    warn_if_rules_do_not_decide(&file, agent);
    output::data(entry.id.as_deref().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// A rule only lets a command run without a person under security=allowlist and ask other than
/// always; say so when the agent's policy makes the new rule moot.
fn warn_if_rules_do_not_decide(file: &ApprovalsFile, agent: &str) {
    let judged = if agent == WILDCARD_AGENT { DEFAULT_AGENT } else { agent };
    let policy = file.effective(judged).policy;
    let why = match (policy.security, policy.ask) {
        (Security::Deny, _) => Some("security=deny: nothing runs, rules or not"),
        (Security::Full, _) => Some("security=full: everything runs already, rules or not"),
        (_, Ask::Always) => Some("ask=always: a person is asked even for allowed programs"),
        _ => None,
    };
    if let Some(why) = why {
        output::note(&format!(
            "note: for agent {judged} the rule changes nothing yet ({why})\nhint: clawmcp approvals set-default --security allowlist --ask on-miss"
        ));
    }
}

fn remove(approvals: &ExecApprovals, rule: &str, agent: Option<&str>) -> anyhow::Result<ExitCode> {
    let resolved = resolve_program(rule).ok().and_then(|path| matcher::exact_path_pattern(&path));
    let edited = edit(approvals, |file| {
        let by_id = owner::rules(file).iter().any(|(_, entry)| entry.id.as_deref() == Some(rule));
        let removed = if by_id {
            owner::remove_rules(file, agent, |entry| entry.id.as_deref() == Some(rule))
        } else {
            let given = rule.trim();
            owner::remove_rules(file, agent, |entry| {
                let pattern = entry.pattern.trim();
                pattern == given || resolved.as_deref() == Some(pattern)
            })
        };
        if removed.is_empty() {
            let within = agent.map(|agent| format!(" for agent {agent}")).unwrap_or_default();
            anyhow::bail!(
                "no allow rule{within} has the id or names the program `{rule}`\nhint: `clawmcp approvals policy` lists the rules with their ids"
            );
        }
        Ok(Change::Save(removed))
    })?;
    let removed = edited.outcome;
    for (agent, entry) in &removed {
        output::note(&format!(
            "removed rule {} (agent {agent}): {} {}",
            entry.id.as_deref().unwrap_or("(no id)"),
            entry.pattern,
            describe_arguments(entry)
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn security(arg: SecurityArg) -> Security {
    match arg {
        SecurityArg::Deny => Security::Deny,
        SecurityArg::Allowlist => Security::Allowlist,
        SecurityArg::Full => Security::Full,
    }
}

fn set_default(
    approvals: &ExecApprovals,
    security_arg: Option<SecurityArg>,
    ask_arg: Option<AskArg>,
    fallback_arg: Option<SecurityArg>,
) -> anyhow::Result<ExitCode> {
    let values = PolicyFields {
        security: security_arg.map(security),
        ask: ask_arg.map(|ask| match ask {
            AskArg::Off => Ask::Off,
            AskArg::OnMiss => Ask::OnMiss,
            AskArg::Always => Ask::Always,
            AskArg::Deny => Ask::Deny,
        }),
        ask_fallback: fallback_arg.map(security),
        auto_allow_skills: None,
    };
    if values == PolicyFields::default() {
        return Err(UsageError(
            "set-default changes nothing without a value\nhint: pass --security, --ask or --ask-fallback, e.g. \
             `clawmcp approvals set-default --ask always`"
                .into(),
        )
        .into());
    }
    let edited = edit(approvals, |file| {
        Ok(if owner::set_defaults(file, &values) { Change::Save(()) } else { Change::Keep(()) })
    })?;
    let file = edited.file;
    let defaults = file.scope_policy(None, false);
    let text = policy_text(defaults.security, defaults.ask, defaults.ask_fallback);
    let Some(saved) = edited.saved else {
        output::note(&format!("defaults unchanged: {text}"));
        return Ok(ExitCode::SUCCESS);
    };
    output::note(&format!("defaults: {text}"));
    if saved.loosened.is_some() {
        output::note(
            "note: this loosens the policy (a remote system.execApprovals.set could not have made this change)",
        );
    }
    for (id, agent) in file.agents.iter().flatten() {
        let own = fields_text(&agent.policy);
        if !own.is_empty() {
            output::note(&format!("note: agent {id} sets its own {own}, which stays in effect for it"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_applied_again_to_a_file_changed_under_it_and_gives_up_after_the_attempts() {
        let dir = tempfile::tempdir().unwrap();
        let approvals = ExecApprovals::open(dir.path().join("exec-approvals.json"));
        // Another writer (the node stamping a rule, say), between this edit's read and its save.
        let other = ExecApprovals::open(dir.path().join("exec-approvals.json"));
        let meddle = |n: usize| {
            let view = other.owner_view().unwrap();
            let mut file = view.file;
            owner::add_rule(&mut file, "other", &format!("/usr/bin/meddle{n}"), None);
            other.owner_save(&view.hash, file).unwrap();
        };
        let calls = std::cell::Cell::new(0);
        let edited = edit(&approvals, |file| {
            calls.set(calls.get() + 1);
            if calls.get() < EDIT_ATTEMPTS {
                meddle(calls.get());
            }
            owner::add_rule(file, "*", "/usr/bin/id", None);
            Ok(Change::Save(()))
        })
        .unwrap();
        assert_eq!(calls.get(), EDIT_ATTEMPTS, "applied again after each change under it");
        assert!(edited.saved.is_some());
        let patterns: Vec<String> =
            owner::rules(&approvals.owner_view().unwrap().file).into_iter().map(|(_, e)| e.pattern).collect();
        assert_eq!(patterns.len(), EDIT_ATTEMPTS, "nothing the other writer saved was lost: {patterns:?}");
        assert!(patterns.contains(&"/usr/bin/id".to_owned()));

        let calls = std::cell::Cell::new(0);
        let stale = edit(&approvals, |file| {
            calls.set(calls.get() + 1);
            meddle(10 + calls.get());
            owner::add_rule(file, "*", "/usr/bin/env", None);
            Ok(Change::Save(()))
        });
        assert_eq!(calls.get(), EDIT_ATTEMPTS);
        let error = stale.err().expect("a file that keeps changing is an error");
        assert!(error.to_string().contains("hint: run the command again"), "{error}");
    }
}
