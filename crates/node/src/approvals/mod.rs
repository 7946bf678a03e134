//! The V2 exec-approval policy that gates `system.run`, its store, and the headless prompt queue.
//!
//! # How a command is authorized ([`ExecApprovals::authorize`])
//! 1. `argv[0]` is resolved to the canonical executable ([`resolve`]); `env NAME=VALUE`
//!    wrappers are unwrapped, shells are not.
//! 2. `<data-dir>/exec-approvals.json` is read ([`store`]) and the agent's effective policy taken
//!    ([`model`]); an untrustworthy file means "deny everything".
//! 3. The allowlist is matched against the resolved path and arguments ([`matcher`]).
//! 4. The pure evaluator decides ([`evaluator`]). If it wants a human, the [`Approver`] says
//!    which: for a local MCP call the request waits in the prompt queue ([`pending`]) until
//!    `clawmcp approvals` answers it, the prompt timeout passes (then `askFallback` decides), or
//!    the caller cancels; for a gateway call it is refused at once (`ApprovalRequired`), and the
//!    gateway's re-invoke brings the operator's decision, judged against the [`snapshot`] of the
//!    policy it was given under.
//! 5. Before allowing, the policy is re-read: if it was tightened while the human decided, the
//!    command is refused (`policy-changed-before-execution`). "Allow always" then records an
//!    argument-bound allowlist entry, and a matched entry gets its usage stamped.
//!
//! The runner calls [`ExecApprovals::revalidate`] right before launching, with the same
//! currency rule: the policy may have grown looser or gained entries, but must not have been
//! tightened, and no allowlist grant present at authorization may have gone.
//!
//! Remote edits (`system.execApprovals.get/set`, see [`remote`]) may only tighten the policy;
//! the owner's edits from the terminal ([`owner`]) may also loosen it, through the same
//! compare-and-swap writer.
//! The terminal answers prompts through two local JSON-RPC methods ([`ApprovalsApi`]) that are
//! deliberately not MCP tools: an agent must not approve its own commands.

mod api;
mod commands;
pub mod evaluator;
pub mod matcher;
pub mod model;
pub mod owner;
pub mod pending;
pub mod remote;
pub mod resolve;
pub mod snapshot;
pub mod store;

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

pub use api::{ApprovalsApi, LIST_METHOD, RESOLVE_METHOD};
pub use pending::{Decision, MAX_PENDING, PendingApproval, ResolveError};
pub use snapshot::PolicySnapshot;

use evaluator::{DenyReason, Evaluation, Verdict, evaluate, fallback_decision};
use model::{
    ALLOW_ALWAYS_SOURCE, AllowlistEntry, Ask, EffectivePolicy, GrantIdentity, Policy, Security, WILDCARD_AGENT,
    new_entry_id, normalize_agent_id,
};
use pending::PendingQueue;
use resolve::ResolvedCommand;
use store::{Loaded, PolicyStore};

/// How often a run waiting for a person says so again (under the MCP heartbeat's interval, so
/// the caller keeps seeing what it waits for rather than "running for N s").
pub const WAIT_NOTE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(4);

/// How long a prompt waits for `clawmcp approvals` before `askFallback` decides.
pub const DEFAULT_PROMPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The reason a revalidation (or the post-prompt check) fails.
pub const POLICY_CHANGED: &str = "policy-changed-before-execution";

/// The reason an operator's approval is refused because the policy moved since prepare.
pub const APPROVAL_STALE: &str = "exec approval policy changed since system.run.prepare; request approval again";

/// Who answers when the policy wants a person to decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approver {
    /// A person at this machine, asked now through `clawmcp approvals` (local MCP calls).
    Terminal,
    /// The gateway's operator. The gateway's exec tool asks before it invokes, so a run that
    /// still needs a person is refused at once (`ApprovalRequired`): the tool then prepares,
    /// asks and re-invokes. Nobody at this machine is asked, and nothing waits.
    GatewayOperator,
    /// The operator's answer, forwarded by the gateway with the re-invoke, given while the
    /// policy was `snapshot` (taken by `system.run.prepare`).
    Granted { decision: Decision, snapshot: PolicySnapshot },
    /// The operator did not answer in time and the gateway asks this node to apply its own
    /// `askFallback` (upstream's `approvalSource: "ask-fallback"`), for the prepared `snapshot`.
    AskFallback { snapshot: PolicySnapshot },
}

/// A `system.run` request as the approval layer sees it (already validated by `system`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRequest {
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Display text the caller sent; shown and recorded instead of the quoted argv.
    pub raw_command: Option<String>,
    /// Selects the policy; `None` or blank means `main`.
    pub agent_id: Option<String>,
    /// From a gateway envelope only.
    pub session_key: Option<String>,
}

/// Permission to launch one command, exactly as judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// Canonical path of the executable that was judged. Launch this file, nothing else.
    pub resolved_executable: PathBuf,
    /// The argv to launch: `argv[0]` is `resolved_executable` (so a multi-call binary cannot
    /// take a personality other than the one judged), then the arguments verbatim. For an
    /// unwrapped `env NAME=VALUE prog ...` this is `prog`'s path and arguments.
    pub argv: Vec<String>,
    /// Variables an unwrapped `env` wrapper sets, applied on top of the inherited environment.
    pub env: Vec<(String, String)>,
    /// The agent whose policy allowed it.
    pub agent_id: String,
    currency: Currency,
}

/// Why a command may not run. Displays as upstream's `exec-approvals-v2: <Code> (<reason>)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("exec-approvals-v2: {code} ({reason})")]
pub struct Denial {
    pub code: DenialCode,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenialCode {
    Unavailable,
    SecurityDeny,
    AskDeny,
    AllowlistMiss,
    /// A person must decide and the caller's approver is the gateway's operator.
    ApprovalRequired,
    UserDenied,
    ValidationFailed,
    ResolutionFailed,
    InternalError,
}

impl fmt::Display for DenialCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Denial {
    pub fn new(code: DenialCode, reason: impl Into<String>) -> Self {
        Denial { code, reason: reason.into() }
    }

    /// What a person or a model reads: what happened in plain words and what to do, then
    /// upstream's text in parentheses (what the gateway gets alone, and what logs and scripts
    /// match). Denials whose reason already says that in words are shown as they are.
    pub fn explained(&self) -> String {
        match self.plain_words() {
            Some(words) => format!("{words} ({self})"),
            None => self.to_string(),
        }
    }

    fn plain_words(&self) -> Option<&'static str> {
        use DenialCode::*;
        Some(match (self.code, self.reason.as_str()) {
            (UserDenied, "user-denied") => {
                "The command did not run: it was denied at the approval prompt. To let this program run without \
                 asking, its owner can run `clawmcp approvals allow PROGRAM`"
            }
            (UserDenied, "cancelled") => "The command did not run: the call was cancelled while it waited for approval",
            (ValidationFailed, POLICY_CHANGED) => {
                "The command did not run: the exec policy became stricter between its approval and its launch. Call \
                 again to have it judged under the policy now in effect"
            }
            (ValidationFailed, "command-array-required") => {
                "`command` must be an array of strings (the program, then its arguments), not one string: there is \
                 no shell, e.g. [\"ls\", \"-la\"] or [\"sh\", \"-c\", \"ls | wc -l\"]"
            }
            (ValidationFailed, "malformed-command") => "`command` must be an array of strings, e.g. [\"ls\", \"-la\"]",
            (ValidationFailed, "missing-command") => {
                "`command` is missing or empty: name the program and its arguments, e.g. [\"uname\", \"-a\"]"
            }
            (ValidationFailed, "empty-command") => {
                "`command[0]`, the program to run, is empty: name it, e.g. [\"uname\", \"-a\"]"
            }
            (ValidationFailed, "malformed-cwd") => "`cwd` must be a string: an absolute directory",
            (ValidationFailed, "empty-cwd") => {
                "`cwd` is empty: give a directory, or leave `cwd` out to run in the node's working directory"
            }
            (ValidationFailed, "malformed-env") => "`env` must be an object of strings",
            (ValidationFailed, "custom-env-not-supported") => {
                "`env` with variables is not supported: a command runs with the node's environment, so an approval \
                 approves exactly what runs. Set variables in the command instead, e.g. [\"env\", \"NAME=value\", \
                 \"program\"]"
            }
            (ValidationFailed, "invalid-timeout") => {
                "`timeoutMs` must be a whole number of milliseconds from 1 to 2147483647"
            }
            (ValidationFailed, "raw-command-mismatch") => {
                "`rawCommand` is not the text of `command`: send the same command in both, or leave `rawCommand` out"
            }
            (ValidationFailed, "malformed-raw-command") => "`rawCommand` must be a string",
            (InternalError, _) => {
                "The command did not run: the node's exec approvals hit an internal error. Please report it with \
                 the node's log"
            }
            _ => return None,
        })
    }

    /// The `reason` of the `exec.denied` node event, in upstream's words where it has them: a
    /// stale approval is `approval-required` too, since asking again is the way on.
    pub fn event_reason(&self) -> &'static str {
        match self.code {
            DenialCode::SecurityDeny => "security=deny",
            DenialCode::AllowlistMiss | DenialCode::AskDeny => "allowlist-miss",
            DenialCode::ApprovalRequired => "approval-required",
            DenialCode::ValidationFailed if self.reason == POLICY_CHANGED || self.reason == APPROVAL_STALE => {
                "approval-required"
            }
            DenialCode::UserDenied => "user-denied",
            DenialCode::ValidationFailed => "invalid-request",
            DenialCode::ResolutionFailed => "resolution-failed",
            DenialCode::Unavailable => "unavailable",
            DenialCode::InternalError => "internal-error",
        }
    }
}

/// The policy facts an authorization relied on. Looser policy and new entries keep it
/// current; tighter security/ask/askFallback or a vanished grant do not.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Currency {
    agent_id: String,
    policy: Policy,
    grants: HashSet<GrantIdentity>,
}

impl Currency {
    fn capture(policy: &EffectivePolicy) -> Self {
        Currency { agent_id: policy.agent_id.clone(), policy: policy.policy, grants: policy.grants() }
    }

    fn is_still_current(&self, fresh: &EffectivePolicy) -> bool {
        fresh.policy.security >= self.policy.security
            && self.policy.ask.is_at_least_as_strict_as(fresh.policy.ask)
            && fresh.policy.ask_fallback >= self.policy.ask_fallback
            && self.grants.is_subset(&fresh.grants())
    }
}

/// Why `askFallback` refused, for the denial text.
fn fallback_reason(policy: &EffectivePolicy, allowlist_matched: bool) -> String {
    let fallback = policy.policy.security.min(policy.policy.ask_fallback);
    match (fallback, allowlist_matched) {
        (Security::Allowlist, false) => "askFallback=allowlist and the allowlist does not match".to_string(),
        _ => format!("askFallback={}", fallback.as_str()),
    }
}

/// How a prompt ended with a decision.
enum Answer {
    Human(Decision),
    Fallback(Decision),
}

/// The approval service. Shared as `Arc<ExecApprovals>` by `system.run`, the execApprovals
/// commands and the terminal API.
pub struct ExecApprovals {
    store: PolicyStore,
    pending: PendingQueue,
    prompt_timeout: Duration,
}

impl ExecApprovals {
    /// Serves the policy at `path` (normally `<data-dir>/exec-approvals.json`). Never fails: the
    /// file is read per request, and a bad file is logged and treated as deny-everything.
    pub fn open(path: PathBuf) -> Self {
        let approvals = ExecApprovals {
            store: PolicyStore::new(path),
            pending: PendingQueue::new(),
            prompt_timeout: DEFAULT_PROMPT_TIMEOUT,
        };
        approvals.store.load();
        approvals
    }

    /// How long a prompt waits for a human (default [`DEFAULT_PROMPT_TIMEOUT`]).
    pub fn with_prompt_timeout(mut self, timeout: Duration) -> Self {
        self.prompt_timeout = timeout;
        self
    }

    pub fn path(&self) -> &std::path::Path {
        self.store.path()
    }

    /// The policy `agent_id` is judged by now, and its snapshot for an approval to be given
    /// against (`system.run.prepare`).
    pub fn current_policy(&self, agent_id: Option<&str>) -> (Policy, PolicySnapshot) {
        let policy = self.store.load().effective(&normalize_agent_id(agent_id));
        (policy.policy, PolicySnapshot::of(&policy))
    }

    /// Decides whether `request` may run. When the policy wants a person, `approver` says who:
    /// the terminal is asked and waited for; the gateway's operator is not here, so the run is
    /// refused unless the call carries that operator's answer.
    pub async fn authorize(
        &self,
        request: &RunRequest,
        approver: &Approver,
        cancel: &CancellationToken,
    ) -> Result<Authorization, Denial> {
        self.authorize_with(request, approver, cancel, &|_| {}).await
    }

    /// [`ExecApprovals::authorize`], telling `on_wait` what the run waits for while a prompt is
    /// open (at once, then every [`WAIT_NOTE_INTERVAL`]): the caller's side sees "waiting for
    /// approval <id>: run `clawmcp approvals allow-once <id>`", not a silent call.
    pub async fn authorize_with(
        &self,
        request: &RunRequest,
        approver: &Approver,
        cancel: &CancellationToken,
        on_wait: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Authorization, Denial> {
        if request.argv.is_empty() {
            return Err(Denial::new(DenialCode::ValidationFailed, "missing-command"));
        }
        let agent_id = normalize_agent_id(request.agent_id.as_deref());
        let search_path = std::env::var_os("PATH");
        let command = resolve::resolve(&request.argv, request.cwd.as_deref(), search_path.as_deref())
            .map_err(|reason| Denial::new(DenialCode::ResolutionFailed, reason))?;

        let loaded = self.store.load();
        let policy = loaded.effective(&agent_id);
        let matched = command
            .is_durable()
            .then(|| matcher::find_match(&policy.allowlist, &command.executable_text, &command.args))
            .flatten()
            .cloned();
        let evaluation = Evaluation {
            security: policy.policy.security,
            ask: policy.policy.ask,
            allowlist_matched: matched.is_some(),
        };
        let currency = Currency::capture(&policy);

        // An answer that arrived with the call: judged at once, against the policy it was given for.
        let forwarded = match approver {
            Approver::Terminal | Approver::GatewayOperator => None,
            Approver::Granted { snapshot, .. } | Approver::AskFallback { snapshot } => {
                if !snapshot.is_current(&PolicySnapshot::of(&policy)) {
                    return Err(Denial::new(DenialCode::ValidationFailed, APPROVAL_STALE));
                }
                Some(match approver {
                    Approver::Granted { decision, .. } => (*decision, false),
                    _ => {
                        (fallback_decision(policy.policy.security, policy.policy.ask_fallback, matched.is_some()), true)
                    }
                })
            }
        };

        let mut decision = None;
        match (evaluate(evaluation, None), forwarded) {
            (_, Some((chosen, by_fallback))) => match evaluate(evaluation, Some(chosen)) {
                Verdict::Allow => decision = Some(chosen),
                Verdict::Deny(DenyReason::UserDenied) if by_fallback => {
                    return Err(self.operator_fallback_denial(&policy, matched.is_some()));
                }
                Verdict::Deny(reason) => return Err(self.denial(reason, &policy, &command, &loaded)),
                Verdict::RequiresPrompt => {
                    return Err(Denial::new(DenialCode::InternalError, "second-pass-requires-prompt"));
                }
            },
            (Verdict::Allow, None) => {}
            (Verdict::Deny(reason), None) => return Err(self.denial(reason, &policy, &command, &loaded)),
            (Verdict::RequiresPrompt, None) if *approver == Approver::GatewayOperator => {
                return Err(self.approval_required(&policy, &command, matched.is_some()));
            }
            (Verdict::RequiresPrompt, None) => {
                let answer = self.ask_human(request, &command, &policy, matched.is_some(), cancel, on_wait).await?;
                let (chosen, by_fallback) = match answer {
                    Answer::Human(d) => (d, false),
                    Answer::Fallback(d) => (d, true),
                };
                match evaluate(evaluation, Some(chosen)) {
                    Verdict::Allow => {}
                    Verdict::Deny(DenyReason::UserDenied) if by_fallback => {
                        return Err(self.timeout_denial(&policy, matched.is_some()));
                    }
                    Verdict::Deny(reason) => return Err(self.denial(reason, &policy, &command, &loaded)),
                    Verdict::RequiresPrompt => {
                        return Err(Denial::new(DenialCode::InternalError, "second-pass-requires-prompt"));
                    }
                }
                // The human took time; a policy tightened meanwhile wins over the answer.
                if !currency.is_still_current(&self.store.load().effective(&agent_id)) {
                    return Err(Denial::new(DenialCode::ValidationFailed, POLICY_CHANGED));
                }
                decision = Some(chosen);
            }
        }

        let display = display_text(request);
        if decision == Some(Decision::AllowAlways) {
            self.persist_allow_always(&policy, &command, &display);
        }
        if let Some(entry) = matched.as_ref().filter(|_| policy.policy.security == Security::Allowlist) {
            self.record_use(&agent_id, entry, &command, &display);
        }
        tracing::info!(agent = %agent_id, executable = %command.executable_text, ?decision, "exec approved");
        Ok(Authorization {
            resolved_executable: command.executable.clone(),
            argv: command.launch_argv(),
            env: command.env.clone(),
            agent_id,
            currency,
        })
    }

    /// Re-checks right before launch that the policy has not been tightened (and no grant the
    /// authorization saw has been removed) since [`ExecApprovals::authorize`].
    pub fn revalidate(&self, authorization: &Authorization) -> Result<(), Denial> {
        let fresh = self.store.load().effective(&authorization.currency.agent_id);
        if authorization.currency.is_still_current(&fresh) {
            Ok(())
        } else {
            Err(Denial::new(DenialCode::ValidationFailed, POLICY_CHANGED))
        }
    }

    /// The commands waiting for a human, oldest first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        self.pending.list()
    }

    /// Answers a waiting command.
    pub fn resolve(&self, id: &str, decision: Decision) -> Result<(), ResolveError> {
        self.pending.resolve(id, decision)?;
        tracing::info!(id, decision = decision.as_str(), "approval answered from the terminal");
        Ok(())
    }

    async fn ask_human(
        &self,
        request: &RunRequest,
        command: &ResolvedCommand,
        policy: &EffectivePolicy,
        allowlist_matched: bool,
        cancel: &CancellationToken,
        on_wait: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Answer, Denial> {
        let cancelled = || Denial::new(DenialCode::UserDenied, "cancelled");
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let requested_at_ms = now_ms();
        let timeout_ms = u64::try_from(self.prompt_timeout.as_millis()).unwrap_or(u64::MAX);
        let approval = PendingApproval {
            id: String::new(),
            argv: request.argv.clone(),
            command: display_text(request),
            cwd: request.cwd.as_ref().map(|cwd| cwd.display().to_string()),
            resolved_executable: command.executable_text.clone(),
            agent_id: policy.agent_id.clone(),
            requested_at_ms,
            expires_at_ms: requested_at_ms.saturating_add(timeout_ms),
        };
        let mut ticket = self.pending.register(approval).map_err(|_| {
            Denial::new(
                DenialCode::Unavailable,
                format!(
                    "{MAX_PENDING} commands are already waiting for approval; answer them with `clawmcp approvals` and retry"
                ),
            )
        })?;
        tracing::warn!(id = ticket.id(), argv = ?request.argv, "command waiting for approval: run `clawmcp approvals`");

        enum Wake {
            Answered(Option<Decision>),
            Cancelled,
            TimedOut,
        }
        let deadline = tokio::time::Instant::now() + self.prompt_timeout;
        let id = ticket.id().to_owned();
        let wake = loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now()).as_secs();
            on_wait(&format!(
                "waiting for approval {id}: run `clawmcp approvals allow-once {id}` (or `deny {id}`); {left} s \
                 left, then askFallback decides"
            ));
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break Wake::Cancelled,
                answer = ticket.answer() => break Wake::Answered(answer),
                _ = tokio::time::sleep_until(deadline) => break Wake::TimedOut,
                _ = tokio::time::sleep(WAIT_NOTE_INTERVAL) => {}
            }
        };
        match wake {
            Wake::Answered(Some(decision)) => Ok(Answer::Human(decision)),
            Wake::Answered(None) => Err(Denial::new(DenialCode::InternalError, "prompt-queue-closed")),
            Wake::Cancelled => {
                ticket.withdraw();
                Err(cancelled())
            }
            Wake::TimedOut => match ticket.withdraw() {
                Some(decision) => Ok(Answer::Human(decision)),
                None => Ok(Answer::Fallback(fallback_decision(
                    policy.policy.security,
                    policy.policy.ask_fallback,
                    allowlist_matched,
                ))),
            },
        }
    }

    fn denial(
        &self,
        reason: DenyReason,
        policy: &EffectivePolicy,
        command: &ResolvedCommand,
        loaded: &Loaded,
    ) -> Denial {
        let agent = &policy.agent_id;
        let path = &command.executable_text;
        let unmatched = if command.is_durable() {
            format!("`{path}` with these arguments is not allowlisted for agent '{agent}'")
        } else {
            format!("`{path}` runs under `env NAME=VALUE`, which no allowlist entry can vouch for")
        };
        match reason {
            DenyReason::SecurityDeny => match loaded {
                Loaded::Invalid { reason } => Denial::new(
                    DenialCode::SecurityDeny,
                    format!(
                        "security=deny: the approvals file `{}` is unusable ({reason}), so every command is denied; fix or delete it",
                        self.store.path().display()
                    ),
                ),
                _ => Denial::new(DenialCode::SecurityDeny, format!("security=deny for agent '{agent}'")),
            },
            DenyReason::UserDenied => Denial::new(DenialCode::UserDenied, "user-denied"),
            DenyReason::AllowlistMiss => Denial::new(
                DenialCode::AllowlistMiss,
                format!("allowlist-miss: {unmatched} and ask={}", policy.policy.ask.as_str()),
            ),
            DenyReason::AskDeny => Denial::new(DenialCode::AskDeny, format!("ask=deny: {unmatched}")),
        }
    }

    /// The gateway's operator must decide: the text says why, and how the decision gets here.
    fn approval_required(
        &self,
        policy: &EffectivePolicy,
        command: &ResolvedCommand,
        allowlist_matched: bool,
    ) -> Denial {
        let why = match (policy.policy.ask, allowlist_matched) {
            (Ask::Always, _) => format!("ask=always for agent '{}'", policy.agent_id),
            _ => format!(
                "`{}` with these arguments is not allowlisted for agent '{}' and ask={}",
                command.executable_text,
                policy.agent_id,
                policy.policy.ask.as_str()
            ),
        };
        Denial::new(
            DenialCode::ApprovalRequired,
            format!(
                "approval required: {why}; the gateway's exec tool asks an operator and runs it again with the \
                 decision (system.run.prepare, exec.approval.request, exec.approval.resolve)"
            ),
        )
    }

    /// The operator did not answer and this node's `askFallback` refuses.
    fn operator_fallback_denial(&self, policy: &EffectivePolicy, allowlist_matched: bool) -> Denial {
        let why = fallback_reason(policy, allowlist_matched);
        Denial::new(DenialCode::UserDenied, format!("the operator did not decide in time ({why})"))
    }

    fn timeout_denial(&self, policy: &EffectivePolicy, allowlist_matched: bool) -> Denial {
        let why = fallback_reason(policy, allowlist_matched);
        Denial::new(
            DenialCode::UserDenied,
            format!(
                "no decision within {} ({why}); answer prompts with `clawmcp approvals`",
                human_duration(self.prompt_timeout)
            ),
        )
    }

    /// Records an argument-bound entry for exactly this executable and these arguments. Only
    /// under security=allowlist (elsewhere an entry changes nothing) and only for commands the
    /// allowlist can vouch for. A failed write is logged; the approval itself stands.
    fn persist_allow_always(&self, policy: &EffectivePolicy, command: &ResolvedCommand, display: &str) {
        if policy.policy.security != Security::Allowlist || !command.is_durable() {
            tracing::info!(agent = %policy.agent_id, "allow-always treated as allow-once: nothing durable to record");
            return;
        }
        let Some(pattern) = matcher::exact_path_pattern(&command.executable_text) else {
            tracing::info!(
                agent = %policy.agent_id,
                executable = %command.executable_text,
                "allow-always treated as allow-once: no allowlist pattern names exactly this path"
            );
            return;
        };
        let arg_pattern = matcher::build_arg_pattern(&command.args);
        let result = self.store.update(|file| {
            let agent = file.agents.get_or_insert_with(Default::default).entry(policy.agent_id.clone()).or_default();
            let list = agent.allowlist.get_or_insert_with(Vec::new);
            let exists =
                list.iter().any(|e| e.pattern.trim() == pattern && e.arg_pattern.as_deref() == Some(&arg_pattern));
            if !exists {
                list.push(AllowlistEntry {
                    id: Some(new_entry_id()),
                    pattern: pattern.clone(),
                    arg_pattern: Some(arg_pattern.clone()),
                    source: Some(ALLOW_ALWAYS_SOURCE.to_string()),
                    command_text: Some(display.to_string()),
                    ..Default::default()
                });
            }
            !exists
        });
        if let Err(error) = result {
            tracing::warn!(%error, "could not record the allow-always entry; the command is allowed this once");
        }
    }

    /// Stamps `lastUsedAt`/`lastResolvedPath`/`lastUsedCommand` on the entry that authorized
    /// the run, in the agent's bucket or the wildcard's. Best-effort.
    fn record_use(&self, agent_id: &str, used: &AllowlistEntry, command: &ResolvedCommand, display: &str) {
        let used_grant = used.grant();
        let result = self.store.update(|file| {
            let mut changed = false;
            let agents = file.agents.get_or_insert_with(Default::default);
            for bucket in [agent_id, WILDCARD_AGENT] {
                let Some(list) = agents.get_mut(bucket).and_then(|a| a.allowlist.as_mut()) else { continue };
                for entry in list.iter_mut() {
                    let same = match (&entry.id, &used.id) {
                        (Some(a), Some(b)) => a == b,
                        _ => entry.grant() == used_grant,
                    };
                    if same {
                        entry.last_used_at = Some(i64::try_from(now_ms()).unwrap_or(i64::MAX));
                        entry.last_resolved_path = Some(command.executable_text.clone());
                        entry.last_used_command = Some(display.to_string());
                        changed = true;
                    }
                }
                if agent_id == WILDCARD_AGENT {
                    break;
                }
            }
            changed
        });
        if let Err(error) = result {
            tracing::warn!(%error, "could not record allowlist usage");
        }
    }
}

/// The command as a human reads it: the caller's display text (validated against the argv by
/// `system.run`), else the argv shell-quoted.
fn display_text(request: &RunRequest) -> String {
    match request.raw_command.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(raw) => raw.to_string(),
        None => crate::command_text::display_command(&request.argv),
    }
}

/// `120s`, or `300ms` when the duration is not a whole number of seconds.
fn human_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_display_like_upstream() {
        let denial = Denial::new(DenialCode::AllowlistMiss, "allowlist-miss");
        assert_eq!(denial.to_string(), "exec-approvals-v2: AllowlistMiss (allowlist-miss)");
        assert_eq!(
            Denial::new(DenialCode::ValidationFailed, POLICY_CHANGED).to_string(),
            "exec-approvals-v2: ValidationFailed (policy-changed-before-execution)"
        );
    }

    #[test]
    fn timeouts_are_stated_truthfully() {
        assert_eq!(human_duration(Duration::from_secs(120)), "120s");
        assert_eq!(human_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn display_text_prefers_the_raw_command_and_quotes_otherwise() {
        let mut request =
            RunRequest { argv: vec!["echo".into(), "a b".into(), "it's".into(), "".into()], ..Default::default() };
        assert_eq!(display_text(&request), crate::command_text::display_command(&request.argv));
        request.raw_command = Some("echo hi".into());
        assert_eq!(display_text(&request), "echo hi");
    }

    #[test]
    fn currency_tolerates_loosening_and_additions_but_not_tightening_or_removal() {
        let entry = AllowlistEntry { pattern: "/usr/bin/ls".into(), ..Default::default() };
        let base = EffectivePolicy { agent_id: "main".into(), policy: Policy::DEFAULT, allowlist: vec![entry.clone()] };
        let currency = Currency::capture(&base);
        assert!(currency.is_still_current(&base));
        let mut looser = base.clone();
        looser.policy.security = Security::Full;
        looser.allowlist.push(AllowlistEntry { pattern: "/usr/bin/rm".into(), ..Default::default() });
        assert!(currency.is_still_current(&looser));
        let mut stamped = base.clone();
        stamped.allowlist[0].last_used_at = Some(1);
        assert!(currency.is_still_current(&stamped), "usage metadata is not policy");
        let mut tighter = base.clone();
        tighter.policy.ask = model::Ask::Always;
        assert!(!currency.is_still_current(&tighter));
        // `deny` runs allowlisted commands unattended, `always` asks first: either way is a change
        // an authorization made under the other must not survive.
        let mut denying = base.clone();
        denying.policy.ask = model::Ask::Deny;
        assert!(!Currency::capture(&tighter).is_still_current(&denying));
        assert!(!Currency::capture(&denying).is_still_current(&tighter));
        let mut fallback = base.clone();
        fallback.policy.ask_fallback = Security::Deny;
        assert!(currency.is_still_current(&fallback), "already deny");
        let mut removed = base.clone();
        removed.allowlist.clear();
        assert!(!currency.is_still_current(&removed));
        assert!(!currency.is_still_current(&EffectivePolicy::fail_closed("main")));
    }
}
