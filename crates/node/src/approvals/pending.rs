//! The headless prompt queue: commands waiting for a human at the terminal.
//!
//! A node without a desktop cannot show a dialog, so a command that needs a human decision is
//! parked here and `clawmcp approvals` lists and answers it. Several prompts may be pending at
//! once, each under its own id (upstream serialises prompts behind one lock because a desktop
//! shows one dialog at a time; a terminal list has no such limit, and serialising would hide
//! the second request until the first is answered). The queue is bounded ([`MAX_PENDING`]);
//! a request beyond that is refused at once rather than waiting invisibly.
//!
//! An entry lives exactly as long as its waiter: [`PendingTicket`] removes it when dropped, so
//! a timed-out, cancelled or abandoned request never lingers in the list.

use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

/// How many prompts may wait at once.
pub const MAX_PENDING: usize = 64;

/// Characters of a prompt id: lowercase letters and digits without the look-alikes l, 1, 0, o.
const ID_ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";
/// 8 characters of 32 symbols: 40 bits, unambiguous to read out and type.
pub const ID_LEN: usize = 8;

/// A human's answer to a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Run this command this once.
    AllowOnce,
    /// Run it and add an allowlist entry bound to exactly these arguments.
    AllowAlways,
    /// Do not run it.
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow-once",
            Decision::AllowAlways => "allow-always",
            Decision::Deny => "deny",
        }
    }
}

/// One waiting command, as the terminal shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    pub id: String,
    /// The command exactly as requested.
    pub argv: Vec<String>,
    /// The command as a person reads it (the caller's `rawCommand`, else the argv shell-quoted).
    pub command: String,
    pub cwd: Option<String>,
    /// The file that would run.
    pub resolved_executable: String,
    pub agent_id: String,
    pub requested_at_ms: u64,
    /// When the request stops waiting and `askFallback` decides instead.
    pub expires_at_ms: u64,
}

/// `resolve` found nothing to answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "no pending approval has id `{0}`: it was already answered, timed out or was cancelled; \
         run `clawmcp approvals` to list what is pending"
    )]
    UnknownId(String),
}

/// The queue is at [`MAX_PENDING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull;

struct Waiting {
    approval: PendingApproval,
    answer: oneshot::Sender<Decision>,
}

#[derive(Default)]
pub struct PendingQueue {
    entries: Arc<Mutex<IndexMap<String, Waiting>>>,
}

/// A registered prompt. Await [`PendingTicket::answer`]; dropping the ticket withdraws the prompt.
pub struct PendingTicket {
    id: String,
    answer: oneshot::Receiver<Decision>,
    entries: Arc<Mutex<IndexMap<String, Waiting>>>,
}

impl PendingQueue {
    pub fn new() -> Self {
        PendingQueue::default()
    }

    /// Parks a prompt. `approval.id` is replaced by a fresh id.
    pub fn register(&self, mut approval: PendingApproval) -> Result<PendingTicket, QueueFull> {
        let mut entries = self.lock();
        if entries.len() >= MAX_PENDING {
            return Err(QueueFull);
        }
        let id = loop {
            let candidate = new_prompt_id();
            if !entries.contains_key(&candidate) {
                break candidate;
            }
        };
        approval.id = id.clone();
        let (sender, receiver) = oneshot::channel();
        entries.insert(id.clone(), Waiting { approval, answer: sender });
        Ok(PendingTicket { id, answer: receiver, entries: self.entries.clone() })
    }

    /// What is waiting, oldest first.
    pub fn list(&self) -> Vec<PendingApproval> {
        self.lock().values().map(|waiting| waiting.approval.clone()).collect()
    }

    /// Answers prompt `id` (ids are compared ignoring case and surrounding space, as typed).
    pub fn resolve(&self, id: &str, decision: Decision) -> Result<(), ResolveError> {
        let key = id.trim().to_ascii_lowercase();
        let waiting = self.lock().shift_remove(&key).ok_or_else(|| ResolveError::UnknownId(id.to_string()))?;
        // The waiter may have gone between our removal and the send; then nobody needs the answer.
        let _ = waiting.answer.send(decision);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IndexMap<String, Waiting>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl PendingTicket {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits for the answer. `None` only if the queue itself was dropped.
    pub async fn answer(&mut self) -> Option<Decision> {
        (&mut self.answer).await.ok()
    }

    /// Withdraws the prompt; an answer that raced in just before is returned rather than lost.
    pub fn withdraw(mut self) -> Option<Decision> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).shift_remove(&self.id);
        self.answer.try_recv().ok()
    }
}

impl Drop for PendingTicket {
    fn drop(&mut self) {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).shift_remove(&self.id);
    }
}

fn new_prompt_id() -> String {
    let mut bytes = [0u8; ID_LEN];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    // 256 is a multiple of 32, so the modulo is unbiased.
    bytes.iter().map(|b| ID_ALPHABET[usize::from(*b) % ID_ALPHABET.len()] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval() -> PendingApproval {
        PendingApproval {
            id: String::new(),
            argv: vec!["ls".into()],
            command: "ls".into(),
            cwd: None,
            resolved_executable: "/usr/bin/ls".into(),
            agent_id: "main".into(),
            requested_at_ms: 1,
            expires_at_ms: 2,
        }
    }

    #[test]
    fn ids_are_short_and_unambiguous() {
        for _ in 0..200 {
            let id = new_prompt_id();
            assert_eq!(id.len(), ID_LEN);
            assert!(id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{id}");
            assert!(!id.contains(['l', '1', '0', 'o']), "{id}");
        }
    }

    #[tokio::test]
    async fn an_answer_reaches_the_waiter_and_clears_the_entry() {
        let queue = PendingQueue::new();
        let mut ticket = queue.register(approval()).unwrap();
        let listed = queue.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, ticket.id());
        queue.resolve(&format!(" {} ", ticket.id().to_uppercase()), Decision::AllowOnce).unwrap();
        assert_eq!(ticket.answer().await, Some(Decision::AllowOnce));
        assert!(queue.list().is_empty());
    }

    #[test]
    fn unknown_ids_are_reported() {
        let queue = PendingQueue::new();
        let err = queue.resolve("abcdefgh", Decision::Deny).unwrap_err();
        assert_eq!(err, ResolveError::UnknownId("abcdefgh".into()));
        assert!(err.to_string().contains("clawmcp approvals"));
    }

    #[test]
    fn dropping_or_withdrawing_a_ticket_removes_the_prompt() {
        let queue = PendingQueue::new();
        let ticket = queue.register(approval()).unwrap();
        let id = ticket.id().to_string();
        drop(ticket);
        assert!(queue.list().is_empty());
        assert!(queue.resolve(&id, Decision::AllowOnce).is_err());
        let ticket = queue.register(approval()).unwrap();
        assert_eq!(ticket.withdraw(), None);
        assert!(queue.list().is_empty());
    }

    #[test]
    fn a_withdrawal_keeps_an_answer_that_raced_in() {
        let queue = PendingQueue::new();
        let ticket = queue.register(approval()).unwrap();
        queue.resolve(ticket.id(), Decision::Deny).unwrap();
        assert_eq!(ticket.withdraw(), Some(Decision::Deny));
    }

    #[test]
    fn the_queue_holds_max_pending_and_refuses_one_more() {
        let queue = PendingQueue::new();
        let tickets: Vec<_> = (0..MAX_PENDING).map(|_| queue.register(approval()).unwrap()).collect();
        assert_eq!(queue.list().len(), MAX_PENDING);
        assert!(queue.register(approval()).is_err());
        drop(tickets);
        assert!(queue.register(approval()).is_ok(), "space frees when prompts go");
    }

    #[test]
    fn decisions_use_kebab_case() {
        assert_eq!(serde_json::to_value(Decision::AllowAlways).unwrap(), "allow-always");
        assert_eq!(serde_json::from_value::<Decision>("allow-once".into()).unwrap(), Decision::AllowOnce);
        let json = serde_json::to_value(approval()).unwrap();
        assert!(json.get("resolvedExecutable").is_some() && json.get("expiresAtMs").is_some(), "{json}");
    }
}
