//! The connection budget: which connections may stay open, for how long, and which one goes
//! when the budget is full. It is what keeps a local process *without the token* from holding
//! the connections that clients *with* it need.
//!
//! # Why a budget and not just a cap
//!
//! A plain cap on open connections (the accept loop waiting for a free slot) lets anyone who can
//! reach the port fill it: 256 sockets that never send a byte held every slot for the whole
//! header timeout, so real clients queued in the kernel's backlog (ping latency of 8-10 s), and
//! reopening them as they timed out kept it so. The budget instead always accepts and decides
//! who stays:
//!
//! - every connection starts **unauthenticated** and becomes **authenticated** once one of its
//!   requests passed the bearer check ([`ConnectionState::authenticate`]);
//! - unauthenticated connections have a small budget of their own
//!   (`Limits::max_unauthenticated_connections`); when it is full, the one idle the longest is
//!   closed to admit the newcomer, so a flood of them only ever competes with itself;
//! - all connections together are bounded by `Limits::max_connections`; when that is full the
//!   longest-idle connection goes, unauthenticated ones first. Attackers can hold at most the
//!   unauthenticated budget, so authenticated clients always keep the rest;
//! - a connection in the middle of a request is never evicted; a newcomer that finds nothing to
//!   evict is closed at once (the cap holds);
//! - deadlines ([`Timeouts`]): the first byte of a request must come within
//!   `first_byte_timeout` while unauthenticated (an authenticated connection may sit idle for
//!   `idle_timeout`), and a request head must be complete within `header_read_timeout` of its
//!   first byte, so a slowloris sending one byte a second is cut there.
//!
//! # Cost on the hot path
//!
//! Nothing here takes a lock or touches a timer per request: a request costs a few atomic
//! operations on the connection's own state word ([`ConnectionState`]) and two clock reads.
//! The budget's lock is taken on accept and on close only. Each connection has one watchdog
//! timer that is re-armed only when it fires (see `server::serve_connection`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::limits::Limits;

/// The deadlines a connection lives by, from [`Limits`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) first_byte: Duration,
    pub(crate) header_read: Duration,
    pub(crate) idle: Duration,
}

impl Timeouts {
    pub(crate) fn of(limits: &Limits) -> Self {
        Timeouts {
            first_byte: limits.first_byte_timeout,
            header_read: limits.header_read_timeout,
            idle: limits.idle_timeout,
        }
    }

    /// The longest the watchdog may sleep without missing a deadline that starts after it went
    /// to sleep: any phase entered later ends no sooner than this after its start.
    pub(crate) fn shortest(&self) -> Duration {
        self.first_byte.min(self.header_read).min(self.idle)
    }
}

/// What a connection is doing. Packed with the instant it began into one `AtomicU64`, so that
/// the accept loop (choosing whom to evict) always reads a phase with its own start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for the first byte of a request (new, or kept alive after an answer).
    Idle,
    /// Bytes of a request head are arriving.
    Head,
    /// A request is being handled or streamed; never evicted, no connection deadline (the
    /// request has its own).
    Busy,
    /// Chosen for eviction: the connection closes as soon as its task sees it.
    Evicted,
}

const PHASE_SHIFT: u32 = 62;
const AT_MASK: u64 = (1 << PHASE_SHIFT) - 1;

impl Phase {
    fn bits(self) -> u64 {
        (match self {
            Phase::Idle => 0,
            Phase::Head => 1,
            Phase::Busy => 2,
            Phase::Evicted => 3,
        }) << PHASE_SHIFT
    }

    fn of(word: u64) -> Phase {
        match word >> PHASE_SHIFT {
            0 => Phase::Idle,
            1 => Phase::Head,
            2 => Phase::Busy,
            _ => Phase::Evicted,
        }
    }

    fn evictable(self) -> bool {
        matches!(self, Phase::Idle | Phase::Head)
    }
}

/// What the watchdog learns from [`ConnectionState::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The deadline of the current phase has passed: close.
    Expired,
    /// Look again then.
    Until(Instant),
}

/// Why a connection must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The budget needed its place: close now.
    Evicted,
    /// The server is shutting down: finish the request in progress, then close.
    Shutdown,
}

/// One open connection as the budget sees it. Shared by the connection's task (its I/O, its
/// requests, its watchdog) and the budget (eviction, shutdown).
pub(crate) struct ConnectionState {
    /// `Phase` in the top two bits, the nanoseconds since `epoch` at which it began below.
    word: AtomicU64,
    authenticated: AtomicBool,
    shutdown: AtomicBool,
    /// Wakes the connection's task for eviction or shutdown.
    waker: AtomicWaker,
    epoch: Instant,
}

impl ConnectionState {
    fn new(epoch: Instant) -> Self {
        let state = ConnectionState {
            word: AtomicU64::new(0),
            authenticated: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            epoch,
        };
        state.word.store(state.word_now(Phase::Idle), Ordering::Relaxed);
        state
    }

    fn word_now(&self, phase: Phase) -> u64 {
        let since = Instant::now().saturating_duration_since(self.epoch).as_nanos() as u64;
        phase.bits() | (since & AT_MASK)
    }

    fn load(&self) -> (Phase, Instant) {
        let word = self.word.load(Ordering::Acquire);
        (Phase::of(word), self.epoch + Duration::from_nanos(word & AT_MASK))
    }

    pub(crate) fn phase(&self) -> Phase {
        self.load().0
    }

    pub(crate) fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Relaxed)
    }

    /// One request on this connection passed the bearer check: from now on it counts against
    /// the whole budget only, and may stay idle for `idle_timeout`.
    pub(crate) fn authenticate(&self) {
        if !self.authenticated.load(Ordering::Relaxed) {
            self.authenticated.store(true, Ordering::Relaxed);
        }
    }

    /// Bytes arrived: an idle connection starts receiving a request head.
    fn bytes_arrived(&self) {
        let word = self.word.load(Ordering::Relaxed);
        if Phase::of(word) == Phase::Idle {
            // Fails only if the budget evicted it just now; then it stays evicted.
            let _ = self.word.compare_exchange(word, self.word_now(Phase::Head), Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// A request head was parsed: the connection is busy until the returned guard is dropped
    /// (at the end of the answer, or of its event stream). `None` if it was evicted meanwhile.
    pub(crate) fn begin_request(self: &Arc<Self>) -> Option<RequestActivity> {
        let busy = Phase::Busy.bits();
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            if Phase::of(word) == Phase::Evicted {
                return None;
            }
            match self.word.compare_exchange_weak(word, busy, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(RequestActivity(self.clone())),
                Err(current) => word = current,
            }
        }
    }

    /// When the connection must close at the latest, given its phase (`None` while busy).
    pub(crate) fn deadline(&self, timeouts: &Timeouts) -> Option<Instant> {
        let (phase, since) = self.load();
        match phase {
            Phase::Idle if self.is_authenticated() => Some(since + timeouts.idle),
            Phase::Idle => Some(since + timeouts.first_byte),
            Phase::Head => Some(since + timeouts.header_read),
            Phase::Busy => None,
            Phase::Evicted => Some(self.epoch),
        }
    }

    /// Whether the connection is past its deadline now, else when to look again: at its
    /// deadline, but no later than `Timeouts::shortest` from now (a phase that begins while
    /// the watchdog sleeps has a deadline at least that far off, so none is missed).
    pub(crate) fn check(&self, timeouts: &Timeouts, now: Instant) -> Check {
        let horizon = now + timeouts.shortest();
        match self.deadline(timeouts) {
            Some(deadline) if deadline <= now => Check::Expired,
            Some(deadline) => Check::Until(deadline.min(horizon)),
            None => Check::Until(horizon),
        }
    }

    /// Ready once the connection must stop. Registers the task's waker otherwise.
    pub(crate) fn poll_stop(&self, cx: &mut Context<'_>) -> Poll<Stop> {
        if let Some(stop) = self.stop() {
            return Poll::Ready(stop);
        }
        self.waker.register(cx.waker());
        self.stop().map_or(Poll::Pending, Poll::Ready)
    }

    fn stop(&self) -> Option<Stop> {
        if self.phase() == Phase::Evicted {
            Some(Stop::Evicted)
        } else if self.shutdown.load(Ordering::Acquire) {
            Some(Stop::Shutdown)
        } else {
            None
        }
    }

    /// Marks an idle or half-received connection evicted; fails if it just became busy.
    fn try_evict(&self) -> bool {
        let word = self.word.load(Ordering::Acquire);
        if !Phase::of(word).evictable() {
            return false;
        }
        let evicted = Phase::Evicted.bits() | (word & AT_MASK);
        if self.word.compare_exchange(word, evicted, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            return false;
        }
        self.waker.wake();
        true
    }
}

/// Held while a request is handled; dropping it makes the connection idle again.
pub(crate) struct RequestActivity(Arc<ConnectionState>);

impl Drop for RequestActivity {
    fn drop(&mut self) {
        // Only this guard moves a connection out of `Busy`, and eviction never touches a busy
        // one, so a plain store cannot overwrite anything.
        let state = &self.0;
        state.word.store(state.word_now(Phase::Idle), Ordering::Release);
    }
}

/// Every open connection, and the rules for admitting one more.
pub(crate) struct Budget {
    open: Mutex<Vec<Arc<ConnectionState>>>,
    max_total: usize,
    max_unauthenticated: usize,
    epoch: Instant,
}

impl Budget {
    pub(crate) fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Budget {
            open: Mutex::new(Vec::with_capacity(limits.max_connections)),
            // A budget of zero would refuse everyone: at least one connection is always allowed.
            max_total: limits.max_connections.max(1),
            max_unauthenticated: limits.max_unauthenticated_connections.clamp(1, limits.max_connections.max(1)),
            epoch: Instant::now(),
        })
    }

    /// Admits a new connection, evicting the longest-idle unauthenticated one if their budget is
    /// full and then, if all connections together are at the cap, the longest-idle one of any
    /// kind. `None` when there was no one to evict (everyone is in a request): the newcomer is
    /// then closed by the caller.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let unauthenticated = open.iter().filter(|c| !c.is_authenticated()).count();
        if unauthenticated >= self.max_unauthenticated && !evict_longest_idle(&mut open, |c| !c.is_authenticated()) {
            return None;
        }
        if open.len() >= self.max_total
            && !evict_longest_idle(&mut open, |c| !c.is_authenticated())
            && !evict_longest_idle(&mut open, |_| true)
        {
            return None;
        }
        let state = Arc::new(ConnectionState::new(self.epoch));
        open.push(state.clone());
        Some(Admitted { budget: self.clone(), state })
    }

    /// Tells every open connection to finish its request in progress and close.
    pub(crate) fn shut_down_all(&self) {
        let open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for connection in open.iter() {
            connection.shutdown.store(true, Ordering::Release);
            connection.waker.wake();
        }
    }

    /// Open connections, and how many of them are not yet authenticated (for tests and logs).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        let open = self.open.lock().unwrap();
        (open.len(), open.iter().filter(|c| !c.is_authenticated()).count())
    }
}

/// Evicts the connection matching `which` that has been idle (or receiving a head) the longest;
/// of two idle since the same instant, the one admitted first (`open` is in admission order).
/// It leaves the budget at once, so its place is free before its task has even woken.
fn evict_longest_idle(open: &mut Vec<Arc<ConnectionState>>, which: impl Fn(&ConnectionState) -> bool) -> bool {
    loop {
        let candidate = open
            .iter()
            .enumerate()
            .filter(|(_, c)| which(c))
            .filter_map(|(at, c)| {
                let (phase, since) = c.load();
                phase.evictable().then_some((since, at))
            })
            .min();
        let Some((_, at)) = candidate else { return false };
        // A candidate that became busy between the scan and here is skipped on the next scan.
        if open[at].try_evict() {
            open.remove(at);
            return true;
        }
    }
}

/// A connection's place in the budget; dropping it (the connection ended) gives the place back.
pub(crate) struct Admitted {
    budget: Arc<Budget>,
    state: Arc<ConnectionState>,
}

impl Admitted {
    pub(crate) fn state(&self) -> &Arc<ConnectionState> {
        &self.state
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.budget.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Absent if it was evicted: eviction already gave its place back.
        if let Some(at) = open.iter().position(|c| Arc::ptr_eq(c, &self.state)) {
            open.remove(at);
        }
    }
}

/// The connection's socket, telling its state when request bytes arrive (the start of a head).
pub(crate) struct ObservedIo {
    stream: TcpStream,
    state: Arc<ConnectionState>,
}

impl ObservedIo {
    pub(crate) fn new(stream: TcpStream, state: Arc<ConnectionState>) -> Self {
        ObservedIo { stream, state }
    }
}

impl AsyncRead for ObservedIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.bytes_arrived();
        }
        polled
    }
}

impl AsyncWrite for ObservedIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, unauthenticated: usize) -> Limits {
        Limits { max_connections: total, max_unauthenticated_connections: unauthenticated, ..Limits::default() }
    }

    #[tokio::test(start_paused = true)]
    async fn the_unauthenticated_budget_evicts_the_longest_idle_at_its_edge() {
        let budget = Budget::new(&limits(10, 3));
        let mut kept = Vec::new();
        for _ in 0..3 {
            kept.push(budget.admit().unwrap());
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        assert_eq!(budget.counts(), (3, 3), "exactly the budget: nobody evicted");
        assert!(kept.iter().all(|c| c.state().phase() == Phase::Idle));
        let fourth = budget.admit().unwrap();
        assert_eq!(kept[0].state().phase(), Phase::Evicted, "the oldest idle one went");
        assert!(kept[1..].iter().all(|c| c.state().phase() == Phase::Idle));
        assert_eq!(budget.counts(), (3, 3));
        drop(kept.remove(0));
        assert_eq!(budget.counts(), (3, 3), "an evicted connection's end frees nothing twice");
        drop(fourth);
        assert_eq!(budget.counts(), (2, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn busy_connections_are_never_evicted_and_authenticated_ones_leave_the_small_budget() {
        let budget = Budget::new(&limits(3, 2));
        let busy = budget.admit().unwrap();
        let request = busy.state().begin_request().unwrap();
        let authenticated = budget.admit().unwrap();
        authenticated.state().authenticate();
        assert_eq!(budget.counts(), (2, 1));
        // Total at 2 of 3, unauthenticated 1 of 2: admitted without eviction.
        let idle = budget.admit().unwrap();
        assert_eq!(budget.counts(), (3, 2));
        // The unauthenticated budget is full (the busy one and the idle one): the idle one goes.
        let newcomer = budget.admit().unwrap();
        assert_eq!(idle.state().phase(), Phase::Evicted);
        assert_eq!(authenticated.state().phase(), Phase::Idle);
        assert_eq!(busy.state().phase(), Phase::Busy);
        // Total full, and the only unauthenticated one is busy: the longest-idle authenticated one.
        newcomer.state().authenticate();
        let _next = budget.admit().unwrap();
        assert_eq!(authenticated.state().phase(), Phase::Evicted);
        assert_eq!(newcomer.state().phase(), Phase::Idle, "younger: kept");
        // Everyone busy: the newcomer is refused, the cap holds.
        let _n = newcomer.state().begin_request().unwrap();
        let _m = _next.state().begin_request().unwrap();
        assert!(budget.admit().is_none());
        drop(request);
        assert_eq!(busy.state().phase(), Phase::Idle, "the end of a request makes it idle again");
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_phase() {
        let limits = Limits::default();
        let timeouts = Timeouts::of(&limits);
        let budget = Budget::new(&limits);
        let admitted = budget.admit().unwrap();
        let state = admitted.state();
        let start = Instant::now();
        assert_eq!(state.deadline(&timeouts), Some(start + limits.first_byte_timeout));
        tokio::time::advance(Duration::from_millis(300)).await;
        state.bytes_arrived();
        assert_eq!(state.deadline(&timeouts), Some(start + Duration::from_millis(300) + limits.header_read_timeout));
        let request = state.begin_request().unwrap();
        assert_eq!(state.deadline(&timeouts), None, "a request in progress has its own deadline");
        state.authenticate();
        tokio::time::advance(Duration::from_secs(1)).await;
        drop(request);
        let idle_since = Instant::now();
        assert_eq!(state.deadline(&timeouts), Some(idle_since + limits.idle_timeout), "authenticated keep-alive");
        assert!(budget.admit().is_some());
    }
}
