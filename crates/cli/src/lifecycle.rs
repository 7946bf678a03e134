//! How a stdio surface (`clawmcp serve`, `clawmcp tools`) lives and dies: it runs until stdin
//! ends, SIGINT/SIGTERM arrive, or the process that started it is gone; then the session's own
//! graceful path runs (calls cancelled, background jobs killed, the gateway connection closed)
//! within [`SHUTDOWN_BOUND`], and the process exits without waiting for the stdin reader.
//!
//! # Why a parent watchdog
//!
//! An MCP client that crashes or is SIGKILLed may leave our stdin open: a grandchild it started,
//! or a wrapper, can hold the write end, so EOF never comes and the bridge (with its `exec`
//! jobs) would live on as an orphan. So the bridge also watches its parent, two ways:
//!
//! - **Linux `PR_SET_PDEATHSIG`** makes the kernel signal us the moment the parent exits. It is
//!   prompt but not enough alone: it is armed only once we call `prctl`, so a parent that dies
//!   during our start-up goes unnoticed; and it fires when the parent *thread* that forked us
//!   exits, even while the parent process lives on (a client spawning from a worker thread).
//!   So it sends [`PARENT_DEATH_SIGNAL`], not SIGTERM, and we act on it only if our parent
//!   process id really changed (the kernel reparents us before it signals).
//! - **A poll of `getppid()`** every [`PARENT_POLL`], everywhere on Unix: the parent id recorded
//!   at start changes when we are reparented (to init or a subreaper). It covers the start-up
//!   race (the id is re-checked right after arming) and systems without `PR_SET_PDEATHSIG`.
//!
//! A parent that died before [`run_stdio_session`] recorded its id cannot be told apart from a
//! parent that started us as an orphan on purpose; EOF on stdin still ends that session.

use std::future::Future;
use std::time::Duration;

use anyhow::anyhow;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::commands::stop_on_signal;

/// How often the parent process id is compared with the one recorded at start. Detection takes
/// at most this long where `PR_SET_PDEATHSIG` does not exist or did not fire.
pub const PARENT_POLL: Duration = Duration::from_millis(500);

/// How long a session may take to wind down once asked to stop. The graceful path is bounded
/// piecewise (the in-flight call grace of 5 s plus 1 s, 2 s to flush stdout, the jobs' kill
/// grace, 1 s to close the gateway socket); this bound is the backstop if something hangs.
pub const SHUTDOWN_BOUND: Duration = Duration::from_secs(15);

/// How long an abandoned session's tasks get to be dropped, so drop guards (a job's SIGKILL of
/// its process group) run before the process exits.
const ABANDON_GRACE: Duration = Duration::from_secs(1);

/// The signal the kernel sends on the parent's death: one nothing else sends us, so that a
/// false alarm (the parent's thread, not process, exited) can be told from a request to stop.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub const PARENT_DEATH_SIGNAL: nix::sys::signal::Signal = nix::sys::signal::Signal::SIGUSR2;

/// Runs one stdio session on `runtime`: `session` gets the token that is cancelled on SIGINT,
/// SIGTERM or the parent's death, and must end soon after it fires. Returns what the session
/// returned, or an error if it was still running [`SHUTDOWN_BOUND`] after the stop request.
pub fn run_stdio_session<T, F>(runtime: Runtime, session: impl FnOnce(CancellationToken) -> F) -> anyhow::Result<T>
where
    F: Future<Output = anyhow::Result<T>>,
{
    let parent = ParentWatch::record();
    let outcome = runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        stop_on_signal(shutdown.clone(), None);
        // On the calling (main) thread: the death signal is armed per thread, and this one
        // lives as long as the process.
        parent.watch(shutdown.clone());
        bounded_after_stop(session(shutdown.clone()), &shutdown, SHUTDOWN_BOUND).await
    });
    match outcome {
        Some(result) => {
            // Tokio reads stdin on a blocking thread that cannot be interrupted; do not wait for it.
            runtime.shutdown_background();
            result
        }
        None => {
            runtime.shutdown_timeout(ABANDON_GRACE);
            Err(anyhow!(
                "the session did not finish within {} s of being asked to stop; exiting anyway",
                SHUTDOWN_BOUND.as_secs()
            ))
        }
    }
}

/// `session`'s output, or `None` if it was still running `bound` after `stop` fired.
async fn bounded_after_stop<T>(
    session: impl Future<Output = T>,
    stop: &CancellationToken,
    bound: Duration,
) -> Option<T> {
    tokio::pin!(session);
    tokio::select! {
        output = &mut session => return Some(output),
        () = stop.cancelled() => {}
    }
    tokio::time::timeout(bound, session).await.ok()
}

/// The parent process id seen at start, and how to notice it change.
#[derive(Debug, Clone, Copy)]
pub struct ParentWatch {
    #[cfg(unix)]
    recorded: u32,
}

impl ParentWatch {
    /// Records the current parent. Call as early as possible: a parent that dies before this
    /// goes unnoticed (see the module docs).
    pub fn record() -> Self {
        ParentWatch {
            #[cfg(unix)]
            recorded: std::os::unix::process::parent_id(),
        }
    }

    /// Cancels `shutdown` once the parent is gone. Must be called inside a Tokio runtime, on a
    /// thread that lives as long as the process (the death signal is armed for this thread).
    pub fn watch(self, shutdown: CancellationToken) {
        #[cfg(unix)]
        {
            let recorded = self.recorded;
            let current = std::os::unix::process::parent_id;
            #[cfg(any(target_os = "linux", target_os = "android"))]
            arm_death_signal(recorded, current, shutdown.clone());
            tokio::spawn(poll_parent(recorded, current, PARENT_POLL, shutdown));
        }
        #[cfg(not(unix))]
        let _ = shutdown;
    }
}

/// Polls `current` every `interval` and cancels `shutdown` when it differs from `recorded`.
/// The first check is immediate, which closes the gap between recording and arming.
async fn poll_parent(recorded: u32, current: impl Fn() -> u32, interval: Duration, shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        if parent_gone(recorded, &current) {
            shutdown.cancel();
            return;
        }
    }
}

/// Whether we have been reparented, logging it once found.
fn parent_gone(recorded: u32, current: &impl Fn() -> u32) -> bool {
    let now = current();
    if now == recorded {
        return false;
    }
    tracing::info!(parent = recorded, now, "the process that started clawmcp exited; shutting down");
    true
}

/// Asks the kernel for [`PARENT_DEATH_SIGNAL`] when the parent exits, and cancels `shutdown`
/// when it comes and the parent really changed. Without a handler the signal would kill us
/// outright, so the handler is installed first; if either step fails the poll still works.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn arm_death_signal(recorded: u32, current: fn() -> u32, shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut deaths = match signal(SignalKind::from_raw(PARENT_DEATH_SIGNAL as i32)) {
        Ok(stream) => stream,
        Err(error) => {
            tracing::debug!(%error, "no parent-death signal handler; relying on the parent poll");
            return;
        }
    };
    if let Err(error) = nix::sys::prctl::set_pdeathsig(PARENT_DEATH_SIGNAL) {
        tracing::debug!(%error, "PR_SET_PDEATHSIG failed; relying on the parent poll");
        return;
    }
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                received = deaths.recv() => if received.is_none() { return },
            }
            if parent_gone(recorded, &current) {
                shutdown.cancel();
                return;
            }
            tracing::debug!(
                parent = recorded,
                "parent-death signal while the parent process lives (the thread that started clawmcp exited); \
                 carrying on"
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A parent id that a test changes, read as the watchdog reads `getppid()`.
    fn fake_parent(initial: u32) -> (Arc<AtomicU32>, impl Fn() -> u32 + Send + 'static) {
        let id = Arc::new(AtomicU32::new(initial));
        let reader = id.clone();
        (id, move || reader.load(Ordering::SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn the_poll_notices_a_reparenting_at_its_next_tick_and_not_before() {
        let (parent, current) = fake_parent(42);
        let shutdown = CancellationToken::new();
        let watcher = tokio::spawn(poll_parent(42, current, PARENT_POLL, shutdown.clone()));
        // Half-way between two ticks, so no timer races the test's own steps.
        tokio::time::sleep(PARENT_POLL * 3 + PARENT_POLL / 2).await;
        assert!(!shutdown.is_cancelled(), "an unchanged parent is left alone");

        parent.store(1, Ordering::SeqCst);
        tokio::time::sleep(PARENT_POLL / 2 - Duration::from_millis(1)).await;
        assert!(!shutdown.is_cancelled(), "checked only on the tick");
        tokio::time::sleep(Duration::from_millis(1)).await;
        watcher.await.unwrap();
        assert!(shutdown.is_cancelled(), "a new parent id means the old parent is gone");
    }

    #[tokio::test(start_paused = true)]
    async fn a_parent_gone_before_the_watch_started_is_noticed_at_once() {
        let (_parent, current) = fake_parent(1);
        let shutdown = CancellationToken::new();
        poll_parent(42, current, PARENT_POLL, shutdown.clone()).await;
        assert!(shutdown.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn the_poll_ends_with_the_session() {
        let (_parent, current) = fake_parent(42);
        let shutdown = CancellationToken::new();
        let watcher = tokio::spawn(poll_parent(42, current, PARENT_POLL, shutdown.clone()));
        shutdown.cancel();
        watcher.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_that_ends_is_awaited_without_a_bound_before_the_stop() {
        let stop = CancellationToken::new();
        let long = async {
            tokio::time::sleep(SHUTDOWN_BOUND * 10).await;
            7
        };
        assert_eq!(bounded_after_stop(long, &stop, SHUTDOWN_BOUND).await, Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_session_gets_exactly_the_bound() {
        let stop = CancellationToken::new();
        stop.cancel();
        let just_in_time = async {
            tokio::time::sleep(SHUTDOWN_BOUND - Duration::from_millis(1)).await;
            1
        };
        assert_eq!(bounded_after_stop(just_in_time, &stop, SHUTDOWN_BOUND).await, Some(1));

        let hung = std::future::pending::<u8>();
        let started = tokio::time::Instant::now();
        assert_eq!(bounded_after_stop(hung, &stop, SHUTDOWN_BOUND).await, None);
        assert_eq!(started.elapsed(), SHUTDOWN_BOUND);
    }
}
