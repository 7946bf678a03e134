//! The background jobs of one `clawmcp tools` server: what `exec` hands over and `process`
//! manages.
//!
//! The upstream bridge kept jobs in an unbounded map, "killed" them by forgetting them (the
//! child ran on) and stored their whole output twice. Here every limit
//! is explicit ([`JobLimits::DEFAULT`]):
//!
//! - at most 16 jobs are kept, running or finished. Admitting one more first forgets the finished
//!   job that ended longest ago; when all 16 are running the new one is refused (the caller
//!   kills one, or runs in the foreground);
//! - each job keeps the last 256 KiB of its merged output (a ring, see `clawmcp_process::Job`);
//! - a finished job is forgotten 30 minutes after it ended (OpenClaw's `cleanupMs` default), so a
//!   model can still poll or read the log of a job that ended between two turns.
//!
//! Expiry is checked on every registry access, so no timer task is needed. Session ids are
//! `bg-1`, `bg-2`, ... (the bridge's form), never reused within a server.
//!
//! Dropping the registry drops every job, and dropping a running job SIGKILLs it and everything it started:
//! no child outlives the server. [`JobRegistry::shutdown`] does the same gracefully (SIGTERM
//! first) and waits until every group is gone.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use clawmcp_process::{Job, JobEnding, JobExit};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The bounds of one registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JobLimits {
    /// Jobs kept at once, running or finished.
    pub max_jobs: usize,
    /// Bytes of merged stdout and stderr each job keeps (its most recent output).
    pub output_bytes: usize,
    /// How long a finished job stays available to `process` after it ended.
    pub finished_ttl: Duration,
}

impl JobLimits {
    pub(crate) const DEFAULT: JobLimits =
        JobLimits { max_jobs: 16, output_bytes: 256 * 1024, finished_ttl: Duration::from_secs(30 * 60) };
}

/// What a job was started as, for `process list` and messages.
#[derive(Debug, Clone)]
pub(crate) struct JobMeta {
    /// The command as the caller gave it (a shell string, or the argv joined by spaces).
    pub command: String,
    /// The time limit it runs under, if any.
    pub timeout: Option<Duration>,
}

/// One job the registry keeps.
#[derive(Debug)]
pub(crate) struct JobEntry {
    pub id: String,
    pub meta: JobMeta,
    pub job: Job,
    /// The output offset the next `poll` starts from.
    poll_cursor: Mutex<u64>,
}

impl JobEntry {
    pub(crate) fn poll_cursor(&self) -> u64 {
        *lock(&self.poll_cursor)
    }

    /// Records that output up to `end` has been delivered by a poll.
    pub(crate) fn advance_poll_cursor(&self, end: u64) {
        let mut cursor = lock(&self.poll_cursor);
        *cursor = (*cursor).max(end);
    }
}

/// Why a job could not be admitted; the job comes back so the caller decides its fate.
#[derive(Debug)]
pub(crate) struct RegistryFull {
    pub job: Box<Job>,
    pub max_jobs: usize,
}

/// The background jobs of one server. Dropping it kills every running job and everything each started.
#[derive(Debug)]
pub struct JobRegistry {
    limits: JobLimits,
    state: Mutex<RegistryState>,
}

#[derive(Debug, Default)]
struct RegistryState {
    next_id: u64,
    /// In start order.
    entries: Vec<Arc<JobEntry>>,
}

impl Default for JobRegistry {
    fn default() -> Self {
        JobRegistry::new()
    }
}

impl JobRegistry {
    /// An empty registry with the default limits (see the module doc).
    pub fn new() -> Self {
        JobRegistry::with_limits(JobLimits::DEFAULT)
    }

    pub(crate) fn with_limits(limits: JobLimits) -> Self {
        JobRegistry { limits, state: Mutex::new(RegistryState { next_id: 1, entries: Vec::new() }) }
    }

    pub(crate) fn limits(&self) -> JobLimits {
        self.limits
    }

    /// Takes `job` into the registry under a new session id. When the registry is full, the
    /// finished job that ended longest ago is forgotten to make room; if none has finished,
    /// `job` is handed back.
    pub(crate) fn admit(&self, job: Job, meta: JobMeta) -> Result<Arc<JobEntry>, RegistryFull> {
        let mut forgotten = Vec::new();
        let mut state = self.lock_pruned(&mut forgotten);
        if state.entries.len() >= self.limits.max_jobs {
            let oldest_finished = state
                .entries
                .iter()
                .enumerate()
                .filter_map(|(index, entry)| entry.job.exit().map(|exit| (index, exit.finished_at)))
                .min_by_key(|&(_, finished_at)| finished_at)
                .map(|(index, _)| index);
            match oldest_finished {
                Some(index) => forgotten.push(state.entries.remove(index)),
                None => return Err(RegistryFull { job: Box::new(job), max_jobs: self.limits.max_jobs }),
            }
        }
        let id = format!("bg-{}", state.next_id);
        state.next_id += 1;
        let entry = Arc::new(JobEntry { id, meta, job, poll_cursor: Mutex::new(0) });
        state.entries.push(entry.clone());
        Ok(entry)
    }

    /// Whether [`JobRegistry::admit`] would take a job now.
    pub(crate) fn has_room(&self) -> bool {
        let mut forgotten = Vec::new();
        let state = self.lock_pruned(&mut forgotten);
        state.entries.len() < self.limits.max_jobs || state.entries.iter().any(|entry| entry.job.exit().is_some())
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<JobEntry>> {
        let mut forgotten = Vec::new();
        let state = self.lock_pruned(&mut forgotten);
        state.entries.iter().find(|entry| entry.id == id).cloned()
    }

    /// Forgets a job. A job still running is killed when the last reference to it goes.
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<JobEntry>> {
        let mut forgotten = Vec::new();
        let mut state = self.lock_pruned(&mut forgotten);
        let index = state.entries.iter().position(|entry| entry.id == id)?;
        Some(state.entries.remove(index))
    }

    /// Every kept job, in start order.
    pub(crate) fn list(&self) -> Vec<Arc<JobEntry>> {
        let mut forgotten = Vec::new();
        self.lock_pruned(&mut forgotten).entries.clone()
    }

    /// Stops every running job (SIGTERM, a short grace, SIGKILL, whole process trees) and
    /// waits until all are gone. For a server that is about to exit; dropping the registry
    /// afterwards (or instead) is what guarantees nothing survives.
    pub async fn shutdown(&self) {
        let mut kills = JoinSet::new();
        for entry in self.list().into_iter().filter(|entry| entry.job.exit().is_none()) {
            kills.spawn(async move { entry.job.kill().await });
        }
        while kills.join_next().await.is_some() {}
    }

    /// Locks the state after moving expired finished jobs into `forgotten`, which the caller
    /// drops after unlocking (dropping a job may signal its group).
    fn lock_pruned(&self, forgotten: &mut Vec<Arc<JobEntry>>) -> MutexGuard<'_, RegistryState> {
        let mut state = lock(&self.state);
        let now = Instant::now();
        let ttl = self.limits.finished_ttl;
        let (expired, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut state.entries)
            .into_iter()
            .partition(|entry| entry.job.exit().is_some_and(|exit| exit.finished_at + ttl <= now));
        state.entries = kept;
        forgotten.extend(expired);
        state
    }
}

/// How a job ended, as a phrase after "Process" or "Command": `exited with code 2`.
pub(crate) fn describe_exit(exit: &JobExit, timeout: Option<Duration>) -> String {
    match exit.ending {
        JobEnding::Exited => match exit.signal_name() {
            Some(signal) => format!("was killed by {signal} (exit code {})", exit.exit_code),
            None => format!("exited with code {}", exit.exit_code),
        },
        JobEnding::TimedOut => {
            let limit = timeout.map(|limit| format!(" after {}", seconds(limit))).unwrap_or_default();
            format!("timed out{limit} and was killed with everything it started")
        }
        JobEnding::Killed => "was killed with everything it started".to_string(),
    }
}

/// `0.25 s`, `1800 s`: a time limit as the caller gave it, in seconds.
pub(crate) fn seconds(duration: Duration) -> String {
    let text = format!("{:.3}", duration.as_secs_f64());
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `850ms`, `12s`, `3m04s`, `2h05m`: a runtime at a glance.
pub(crate) fn compact_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0 => format!("{}ms", duration.as_millis()),
        1..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// No lock holder panics midway, so a poisoned lock still guards consistent data.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use clawmcp_process::{JobOptions, Launch};

    use super::*;

    const OPTIONS: JobOptions = JobOptions { timeout: None, output_limit: 1024, pipe_stdin: false };

    fn start(script: &str) -> Job {
        let argv = ["sh".to_string(), "-c".to_string(), script.to_string()];
        Job::start(Launch { argv: &argv, cwd: None, env_overrides: &[], passed_fds: &[] }, OPTIONS).unwrap()
    }

    fn meta(command: &str) -> JobMeta {
        JobMeta { command: command.into(), timeout: None }
    }

    fn ids(registry: &JobRegistry) -> Vec<String> {
        registry.list().iter().map(|entry| entry.id.clone()).collect()
    }

    fn small(max_jobs: usize) -> JobRegistry {
        JobRegistry::with_limits(JobLimits { max_jobs, ..JobLimits::DEFAULT })
    }

    #[tokio::test]
    async fn ids_count_up_and_are_never_reused() {
        let registry = small(4);
        let first = registry.admit(start("true"), meta("true")).unwrap();
        assert_eq!(first.id, "bg-1");
        first.job.finished().await;
        registry.remove("bg-1").unwrap();
        assert_eq!(registry.admit(start("true"), meta("true")).unwrap().id, "bg-2");
        assert!(registry.get("bg-1").is_none());
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_finished_job_makes_room() {
        let registry = small(3);
        let early = registry.admit(start("true"), meta("early")).unwrap();
        early.job.finished().await;
        let late = registry.admit(start("true"), meta("late")).unwrap();
        late.job.finished().await;
        registry.admit(start("sleep 1000"), meta("running")).unwrap();
        assert_eq!(ids(&registry), ["bg-1", "bg-2", "bg-3"]);
        assert!(registry.has_room(), "a finished job can be forgotten");

        registry.admit(start("sleep 1000"), meta("fourth")).unwrap();
        assert_eq!(ids(&registry), ["bg-2", "bg-3", "bg-4"], "bg-1 ended first, so it went first");
        registry.admit(start("sleep 1000"), meta("fifth")).unwrap();
        assert_eq!(ids(&registry), ["bg-3", "bg-4", "bg-5"]);
    }

    #[tokio::test]
    async fn when_every_kept_job_runs_a_new_one_is_refused_and_handed_back() {
        let registry = small(2);
        registry.admit(start("sleep 1000"), meta("a")).unwrap();
        registry.admit(start("sleep 1000"), meta("b")).unwrap();
        assert!(!registry.has_room());
        let refused = registry.admit(start("sleep 1000"), meta("c")).unwrap_err();
        assert_eq!(refused.max_jobs, 2);
        assert!(refused.job.exit().is_none(), "the refused job is returned untouched");
        refused.job.kill().await;
        assert_eq!(ids(&registry), ["bg-1", "bg-2"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_finished_job_is_forgotten_exactly_when_its_time_is_up() {
        let registry = small(4);
        let entry = registry.admit(start("true"), meta("true")).unwrap();
        entry.job.finished().await;
        let ended = entry.job.exit().unwrap().finished_at;
        drop(entry);
        let ttl = JobLimits::DEFAULT.finished_ttl;
        tokio::time::advance((ended + ttl - Duration::from_millis(1)) - Instant::now()).await;
        assert_eq!(ids(&registry), ["bg-1"], "one millisecond before the end of its time");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(ids(&registry).is_empty());
    }

    #[tokio::test]
    async fn a_running_job_never_expires() {
        let registry = JobRegistry::with_limits(JobLimits { finished_ttl: Duration::ZERO, ..JobLimits::DEFAULT });
        registry.admit(start("sleep 1000"), meta("sleep")).unwrap();
        let done = registry.admit(start("true"), meta("true")).unwrap();
        done.job.finished().await;
        assert_eq!(ids(&registry), ["bg-1"]);
    }

    #[tokio::test]
    async fn shutdown_stops_every_running_job() {
        let registry = small(4);
        let a = registry.admit(start("sleep 1000"), meta("a")).unwrap();
        let b = registry.admit(start("trap '' TERM; sleep 1000"), meta("b")).unwrap();
        registry.shutdown().await;
        assert_eq!(a.job.exit().unwrap().ending, JobEnding::Killed);
        assert_eq!(b.job.exit().unwrap().ending, JobEnding::Killed);
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        assert_eq!(seconds(Duration::from_secs(1800)), "1800 s");
        assert_eq!(compact_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(compact_duration(Duration::from_secs(59)), "59s");
        assert_eq!(compact_duration(Duration::from_secs(184)), "3m04s");
        assert_eq!(compact_duration(Duration::from_secs(7500)), "2h05m");
    }
}
