//! The cancellation registry: which requests are in flight, `notifications/cancelled` for them,
//! and the two bounded memories that make cancellation exact over a stateless transport.
//!
//! The rules of `docs/node-http.md` §9, all implemented here and nowhere else:
//!
//! - **Duplicates.** JSON-RPC ids are client-scoped, but loopback HTTP carries no client
//!   identity, so two clients may have the same id in flight. Both register; a cancel that
//!   matches more than one active call is *ambiguous* and cancels nothing, so one client can
//!   never cancel another's call. (Stdio surfaces have one client and may refuse duplicates.)
//! - **Tombstones.** A cancel can overtake the request it names (two POSTs race). A cancel
//!   that matches nothing active and no recent completion leaves a *pending cancellation* for
//!   [`PENDING_TTL`]; the first registration with that id consumes it and starts cancelled, so
//!   correctness never depends on scheduling. Repeating the cancel does not extend the TTL.
//! - **Completion guards.** When the last call with an id ends, the id is remembered for the
//!   same TTL so that a late cancel is recognised as stale instead of tombstoning (and thus
//!   poisoning) the client's next request that reuses the id.
//! - **Bounds.** Tombstones and completion guards are each capped at [`MEMORY_CAP`]; at
//!   capacity expired entries go first, then the oldest. Both use one TTL, so insertion order is
//!   expiry order and eviction is a queue pop.
//! - **Races.** [`Registration::try_complete`] fails once a cancel was requested, and a cancel
//!   after completion finds nothing: exactly one of "completed" and "cancelled" wins.
//!
//! Time comes from `tokio::time::Instant`, so tests drive the TTL with a paused clock.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::IdKey;

/// How long a pending cancellation and a completion guard live (five seconds, `docs/node-http.md`
/// §9.3).
pub const PENDING_TTL: Duration = Duration::from_secs(5);

/// Maximum tombstones and, separately, completion guards kept (1,024 each, `docs/node-http.md`
/// §9.4). A flood of cancels for unknown ids therefore costs bounded memory.
pub const MEMORY_CAP: usize = 1024;

/// What a `notifications/cancelled` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// Exactly one active call matched and was cancelled.
    Cancelled,
    /// More than one active call has this id: nothing was cancelled.
    Ambiguous,
    /// The id finished moments ago: the cancel is stale and ignored.
    RecentlyCompleted,
    /// Nothing matched: a tombstone now waits for the request.
    Pending,
    /// A tombstone for this id already exists; its lifetime is not extended.
    AlreadyPending,
}

/// Whether the registry allows two active calls with one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicatePolicy {
    /// Loopback HTTP: no client identity, so duplicates coexist (cancel becomes ambiguous).
    Allow,
    /// Stdio: one client, so a duplicate active id is the client's bug and is refused.
    Reject,
}

/// Tracks in-flight requests for cancellation. Cheap to clone (shared state).
#[derive(Clone)]
pub struct CancellationRegistry {
    state: Arc<Mutex<State>>,
    policy: DuplicatePolicy,
}

struct ActiveCall {
    generation: u64,
    token: CancellationToken,
}

/// A queue of ids with a shared TTL and a cap. `entries` holds the live generation of each id;
/// the queue may hold stale generations, which are skipped when popped.
struct ExpiringSet {
    entries: HashMap<IdKey, (Instant, u64)>,
    order: VecDeque<(u64, IdKey)>,
}

impl ExpiringSet {
    fn new() -> Self {
        ExpiringSet { entries: HashMap::new(), order: VecDeque::new() }
    }

    fn contains_live(&self, key: &IdKey, now: Instant) -> bool {
        self.entries.get(key).is_some_and(|(expires, _)| *expires > now)
    }

    fn remove(&mut self, key: &IdKey) -> bool {
        self.entries.remove(key).is_some()
    }

    /// Inserts with a fresh expiry, evicting expired entries, then the oldest, at capacity.
    fn insert(&mut self, key: IdKey, now: Instant, seq: u64) {
        self.entries.remove(&key);
        self.prune_expired(now);
        while self.entries.len() >= MEMORY_CAP {
            self.pop_oldest();
        }
        self.entries.insert(key.clone(), (now + PENDING_TTL, seq));
        self.order.push_back((seq, key));
        // Stale queue entries (removed or re-inserted ids) are dropped lazily; keep the queue
        // from growing past a small multiple of the cap when ids are removed out of order.
        if self.order.len() > 4 * MEMORY_CAP {
            let entries = &self.entries;
            self.order.retain(|(seq, key)| entries.get(key).is_some_and(|(_, s)| s == seq));
        }
    }

    fn prune_expired(&mut self, now: Instant) {
        while let Some((seq, key)) = self.order.front() {
            match self.entries.get(key) {
                Some((expires, live_seq)) if live_seq == seq => {
                    if *expires > now {
                        break;
                    }
                    self.entries.remove(key);
                }
                _ => {}
            }
            self.order.pop_front();
        }
    }

    fn pop_oldest(&mut self) {
        while let Some((seq, key)) = self.order.pop_front() {
            if self.entries.get(&key).is_some_and(|(_, live_seq)| *live_seq == seq) {
                self.entries.remove(&key);
                return;
            }
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

struct State {
    active: HashMap<IdKey, Vec<ActiveCall>>,
    pending: ExpiringSet,
    recent: ExpiringSet,
    next_seq: u64,
}

impl State {
    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }
}

/// Refusal to register a duplicate id under [`DuplicatePolicy::Reject`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("duplicate active request id")]
pub struct DuplicateId;

impl CancellationRegistry {
    pub fn new(policy: DuplicatePolicy) -> Self {
        CancellationRegistry {
            state: Arc::new(Mutex::new(State {
                active: HashMap::new(),
                pending: ExpiringSet::new(),
                recent: ExpiringSet::new(),
                next_seq: 0,
            })),
            policy,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the maps half-updated in a way that
        // matters more than refusing all further requests would; keep serving.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers an in-flight call. If a tombstone for the id is pending, this registration
    /// consumes it and starts cancelled ([`Registration::is_cancelled`]).
    pub fn register(&self, key: IdKey) -> Result<Registration, DuplicateId> {
        let now = Instant::now();
        let mut state = self.lock();
        let calls = state.active.get(&key).map_or(0, Vec::len);
        if calls > 0 && self.policy == DuplicatePolicy::Reject {
            return Err(DuplicateId);
        }
        let token = CancellationToken::new();
        let tombstoned = state.pending.contains_live(&key, now);
        if tombstoned {
            state.pending.remove(&key);
            token.cancel();
        }
        let generation = state.seq();
        state.active.entry(key.clone()).or_default().push(ActiveCall { generation, token: token.clone() });
        Ok(Registration { registry: self.clone(), key, generation, token, finished: false })
    }

    /// Applies a `notifications/cancelled` for `key`.
    pub fn cancel(&self, key: &IdKey) -> CancelOutcome {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(calls) = state.active.get(key) {
            match calls.as_slice() {
                [one] => {
                    one.token.cancel();
                    return CancelOutcome::Cancelled;
                }
                [_, _, ..] => return CancelOutcome::Ambiguous,
                [] => {}
            }
        }
        if state.recent.contains_live(key, now) {
            return CancelOutcome::RecentlyCompleted;
        }
        if state.pending.contains_live(key, now) {
            return CancelOutcome::AlreadyPending;
        }
        let seq = state.seq();
        state.pending.insert(key.clone(), now, seq);
        CancelOutcome::Pending
    }

    /// Number of live tombstones and completion guards (for tests and diagnostics).
    pub fn memory_sizes(&self) -> (usize, usize) {
        let now = Instant::now();
        let mut state = self.lock();
        state.pending.prune_expired(now);
        state.recent.prune_expired(now);
        (state.pending.len(), state.recent.len())
    }

    /// Number of calls currently registered.
    pub fn active_count(&self) -> usize {
        self.lock().active.values().map(Vec::len).sum()
    }

    fn finish(&self, key: &IdKey, generation: u64, token: &CancellationToken) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        // Checked under the same lock `cancel` holds, so "cancelled" and "completed" are
        // mutually exclusive outcomes.
        let completed_first = !token.is_cancelled();
        let Some(calls) = state.active.get_mut(key) else { return completed_first };
        calls.retain(|call| call.generation != generation);
        if calls.is_empty() {
            state.active.remove(key);
            let seq = state.seq();
            state.recent.insert(key.clone(), now, seq);
        }
        completed_first
    }
}

/// One registered in-flight call. Dropping it without completing unregisters it (the call was
/// abandoned, e.g. its transport went away).
pub struct Registration {
    registry: CancellationRegistry,
    key: IdKey,
    generation: u64,
    token: CancellationToken,
    finished: bool,
}

impl Registration {
    /// Fires when the client cancels this call (or a tombstone pre-cancelled it).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// True once a cancel for this call has been accepted.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Marks the call complete. Returns false if a cancel won the race: the caller must then
    /// report `cancelled`, not the result.
    pub fn try_complete(mut self) -> bool {
        self.finished = true;
        self.registry.finish(&self.key, self.generation, &self.token)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if !self.finished {
            self.registry.finish(&self.key, self.generation, &self.token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(n: i64) -> IdKey {
        IdKey::Num(crate::jsonrpc::normalize_number(&n.to_string()).unwrap())
    }

    fn registry() -> CancellationRegistry {
        CancellationRegistry::new(DuplicatePolicy::Allow)
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_only_matching_call() {
        let reg = registry();
        let a = reg.register(num(1)).unwrap();
        let b = reg.register(num(2)).unwrap();
        assert_eq!(reg.cancel(&num(1)), CancelOutcome::Cancelled);
        assert!(a.is_cancelled());
        assert!(!b.is_cancelled());
        assert!(!a.try_complete(), "a cancelled call cannot complete");
        assert!(b.try_complete());
    }

    #[tokio::test(start_paused = true)]
    async fn duplicates_coexist_and_cancel_is_ambiguous() {
        let reg = registry();
        let a = reg.register(num(7)).unwrap();
        let b = reg.register(num(7)).unwrap();
        assert_eq!(reg.cancel(&num(7)), CancelOutcome::Ambiguous);
        assert!(!a.is_cancelled() && !b.is_cancelled());
        // Once one completes, the other is unambiguous again.
        assert!(a.try_complete());
        assert_eq!(reg.cancel(&num(7)), CancelOutcome::Cancelled);
        assert!(b.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn reject_policy_refuses_duplicate_active_ids_but_allows_reuse() {
        let reg = CancellationRegistry::new(DuplicatePolicy::Reject);
        let a = reg.register(num(1)).unwrap();
        assert_eq!(reg.register(num(1)).err(), Some(DuplicateId));
        assert!(a.try_complete());
        assert!(reg.register(num(1)).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn string_and_number_ids_are_distinct() {
        let reg = registry();
        let n = reg.register(num(42)).unwrap();
        assert_eq!(reg.cancel(&IdKey::Str("42".into())), CancelOutcome::Pending);
        assert!(!n.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn tombstone_is_consumed_by_first_registration_only() {
        let reg = registry();
        assert_eq!(reg.cancel(&num(5)), CancelOutcome::Pending);
        let first = reg.register(num(5)).unwrap();
        let second = reg.register(num(5)).unwrap();
        assert!(first.is_cancelled());
        assert!(!second.is_cancelled());
        assert_eq!(reg.memory_sizes().0, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn tombstone_expires_at_exactly_the_ttl() {
        let reg = registry();
        reg.cancel(&num(5));
        tokio::time::advance(PENDING_TTL - Duration::from_millis(1)).await;
        assert!(reg.register(num(5)).unwrap().is_cancelled(), "still live 1 ms before the TTL");

        reg.cancel(&num(6));
        tokio::time::advance(PENDING_TTL).await;
        assert!(!reg.register(num(6)).unwrap().is_cancelled(), "gone at exactly the TTL");
    }

    #[tokio::test(start_paused = true)]
    async fn repeating_a_pending_cancel_does_not_extend_it() {
        let reg = registry();
        assert_eq!(reg.cancel(&num(9)), CancelOutcome::Pending);
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(reg.cancel(&num(9)), CancelOutcome::AlreadyPending);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(!reg.register(num(9)).unwrap().is_cancelled(), "original 5 s lifetime was kept");
    }

    #[tokio::test(start_paused = true)]
    async fn late_cancel_after_completion_does_not_poison_reuse() {
        let reg = registry();
        assert!(reg.register(num(3)).unwrap().try_complete());
        assert_eq!(reg.cancel(&num(3)), CancelOutcome::RecentlyCompleted);
        assert!(!reg.register(num(3)).unwrap().is_cancelled());
        // After the guard expires, an unmatched cancel tombstones again.
        tokio::time::advance(PENDING_TTL).await;
        assert_eq!(reg.cancel(&num(3)), CancelOutcome::Pending);
    }

    #[tokio::test(start_paused = true)]
    async fn completion_guard_only_after_last_duplicate_ends() {
        let reg = registry();
        let a = reg.register(num(4)).unwrap();
        let b = reg.register(num(4)).unwrap();
        assert!(a.try_complete());
        assert_eq!(reg.memory_sizes().1, 0, "one call with id 4 is still active");
        drop(b);
        assert_eq!(reg.memory_sizes().1, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn completion_beats_late_cancel_and_cancel_beats_late_completion() {
        let reg = registry();
        let done = reg.register(num(1)).unwrap();
        assert!(done.try_complete());
        assert_eq!(reg.cancel(&num(1)), CancelOutcome::RecentlyCompleted);

        let raced = reg.register(num(2)).unwrap();
        assert_eq!(reg.cancel(&num(2)), CancelOutcome::Cancelled);
        assert!(!raced.try_complete());
    }

    #[tokio::test(start_paused = true)]
    async fn dropped_registration_unregisters() {
        let reg = registry();
        drop(reg.register(num(1)).unwrap());
        assert_eq!(reg.active_count(), 0);
        assert_eq!(reg.cancel(&num(1)), CancelOutcome::RecentlyCompleted);
    }

    #[tokio::test(start_paused = true)]
    async fn tombstone_cap_evicts_oldest_deterministically() {
        let reg = registry();
        for i in 0..MEMORY_CAP as i64 {
            assert_eq!(reg.cancel(&num(i)), CancelOutcome::Pending);
        }
        assert_eq!(reg.memory_sizes().0, MEMORY_CAP);
        assert_eq!(reg.cancel(&num(10_000)), CancelOutcome::Pending);
        assert_eq!(reg.memory_sizes().0, MEMORY_CAP, "cap holds");
        assert!(!reg.register(num(0)).unwrap().is_cancelled(), "the oldest tombstone was evicted");
        assert!(reg.register(num(1)).unwrap().is_cancelled(), "the next oldest survived");
        assert!(reg.register(num(10_000)).unwrap().is_cancelled(), "the newest is kept");
    }

    #[tokio::test(start_paused = true)]
    async fn tombstone_cap_prunes_expired_before_evicting_live() {
        let reg = registry();
        for i in 0..(MEMORY_CAP as i64 - 1) {
            reg.cancel(&num(i));
        }
        tokio::time::advance(PENDING_TTL).await;
        reg.cancel(&num(-1));
        reg.cancel(&num(-2));
        assert_eq!(reg.memory_sizes().0, 2, "expired entries were pruned, not counted");
        assert!(reg.register(num(-1)).unwrap().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn completion_guard_cap_evicts_oldest_deterministically() {
        let reg = registry();
        for i in 0..=MEMORY_CAP as i64 {
            assert!(reg.register(num(i)).unwrap().try_complete());
        }
        assert_eq!(reg.memory_sizes().1, MEMORY_CAP);
        assert_eq!(reg.cancel(&num(0)), CancelOutcome::Pending, "oldest guard was evicted");
        assert_eq!(reg.cancel(&num(1)), CancelOutcome::RecentlyCompleted);
        assert_eq!(reg.cancel(&num(MEMORY_CAP as i64)), CancelOutcome::RecentlyCompleted);
    }

    #[tokio::test(start_paused = true)]
    async fn reinserting_a_guard_refreshes_its_position() {
        let reg = registry();
        assert!(reg.register(num(0)).unwrap().try_complete());
        for i in 1..MEMORY_CAP as i64 {
            assert!(reg.register(num(i)).unwrap().try_complete());
        }
        // Id 0 completes again: it is now the newest guard, so id 1 is the one evicted next.
        assert!(reg.register(num(0)).unwrap().try_complete());
        assert!(reg.register(num(MEMORY_CAP as i64)).unwrap().try_complete());
        assert_eq!(reg.cancel(&num(0)), CancelOutcome::RecentlyCompleted);
        assert_eq!(reg.cancel(&num(1)), CancelOutcome::Pending);
    }
}
