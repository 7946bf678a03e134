//! The owner's side of a call's process tree: spawning the program through its reaper
//! (`reaper`), supervising it until it ends, times out or is told to stop, stopping it, and the
//! backstop for a reaper that died before its tree.
//!
//! The owner's `Child` is the reaper, whose pid nothing can reuse while the owner has not reaped
//! it; so the owner signals the reaper only while it is unreaped. The reaper tells the owner two
//! things on a pipe of their own, the report: the program's pid right after the fork, and the
//! program's wait status once nothing of the tree is left. A reaper that exits without the
//! status did not finish its job: something SIGKILLed it (a descendant can, it runs as the same
//! user), or the owner did because it would not finish in time.
//!
//! The backstop: the owner itself is a child subreaper, so what such a reaper leaves behind is
//! handed to the owner, not to init. The owner then kills those adopted children with all their
//! descendants ([`sweep_orphans`]): every child of the owner that is not a live reaper and that
//! started after the dead reaper did (so children the owner started earlier are left alone).

use std::future::Future;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use nix::libc::{self, c_int, pid_t};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use crate::containment::{Containment, SETUP_RECORD, SetupFailure};
use crate::procfs::{self, ProcStat};
use crate::reaper::{ENDED_BY_TASK_LIMIT, STOP_GRACEFULLY, STOP_NOW, TERM_GRACE};
use crate::sys;
use crate::{Launch, PassedFd, ProcessError};

/// How long the owner waits for a reaper told to stop, beyond its [`TERM_GRACE`], before it
/// SIGKILLs the reaper and sweeps up after it. A healthy reaper is done within milliseconds of
/// the grace; one that is not was stopped (SIGSTOP) by a descendant, or waits for a process stuck
/// in uninterruptible I/O. With the sweep's own limit this stays well inside the MCP
/// dispatcher's cancel grace (5 s), so a cancelled call is answered after its tree is gone.
const KILL_SETTLE_LIMIT: Duration = Duration::from_secs(2);

/// How long the backstop keeps killing adopted orphans before it logs and gives up (only a
/// process stuck in the kernel outlives SIGKILL that long).
const SWEEP_LIMIT: Duration = Duration::from_secs(1);

/// Pause between the backstop's rounds (there is no event for "that process is gone").
const SWEEP_POLL: Duration = Duration::from_millis(5);

/// A program just spawned through its reaper. Its output pipes are handed out separately, as
/// the caller asked for them.
pub(crate) struct Spawned {
    pub tree: Tree,
    pub stdin: Option<ChildStdin>,
}

/// Spawns `launch` with stdout and stderr on two pipes, contained if `containment` is given.
pub(crate) fn spawn_separate(
    launch: &Launch<'_>,
    stdin: Stdio,
    containment: Option<&Containment>,
) -> Result<(Spawned, ChildStdout, ChildStderr), ProcessError> {
    let (mut command, program) = command(launch, stdin)?;
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut spawned = start(&mut command, program, containment, launch.passed_fds)?;
    let stdout = spawned.tree.child.stdout.take().expect("stdout is piped");
    let stderr = spawned.tree.child.stderr.take().expect("stderr is piped");
    Ok((spawned, stdout, stderr))
}

/// Spawns `launch` with stdout and stderr on one pipe, as `2>&1` does: the reader sees the
/// bytes in exactly the order the program wrote them, which two pipes cannot promise.
pub(crate) fn spawn_merged(launch: &Launch<'_>, stdin: Stdio) -> Result<(Spawned, pipe::Receiver), ProcessError> {
    let (mut command, program) = command(launch, stdin)?;
    let spawn_error = |source| ProcessError::Spawn { program: program.clone(), source };
    let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
    command.stdout(writer.try_clone().map_err(spawn_error)?).stderr(writer);
    let spawned = start(&mut command, program, None, launch.passed_fds)?;
    // Our copies of the write end must close now, or the reader would never see end of file.
    drop(command);
    let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(spawn_error)?;
    Ok((spawned, reader))
}

/// The command for `launch`, with everything but stdout and stderr set.
fn command<'a>(launch: &Launch<'a>, stdin: Stdio) -> Result<(Command, &'a String), ProcessError> {
    let Some((program, args)) = launch.argv.split_first() else {
        let source = io::Error::new(io::ErrorKind::InvalidInput, "the command is empty");
        return Err(ProcessError::Spawn { program: String::new(), source });
    };
    let mut command = Command::new(program);
    // A group of its own keeps the terminal's job-control signals (Ctrl-C to the owner's
    // foreground group) away from the tree: only the reaper decides when it ends.
    command
        .args(args)
        .envs(launch.env_overrides.iter().map(|(name, value)| (name, value)))
        .stdin(stdin)
        .process_group(0);
    // Never SIGKILL the reaper on drop: that would orphan the tree. `Tree`'s drop asks the
    // reaper to kill it instead, and tokio reaps the reaper afterwards.
    command.kill_on_drop(false);
    if let Some(cwd) = launch.cwd {
        command.current_dir(cwd);
    }
    Ok((command, program))
}

fn start(
    command: &mut Command,
    program: &str,
    containment: Option<&Containment>,
    passed: &[PassedFd<'_>],
) -> Result<Spawned, ProcessError> {
    let spawn_error = |source| ProcessError::Spawn { program: program.to_string(), source };
    prepare_owner().map_err(spawn_error)?;
    let passed = sys::FdMap::of(passed).map_err(spawn_error)?;
    if passed.highest() > 2 {
        sys::occupy_low_numbers(passed.highest()).map_err(spawn_error)?;
    }
    let (mut report, report_writer) = std::io::pipe().map_err(spawn_error)?;
    // In an owner started with stdin, stdout or stderr closed, the pipe could get 0, 1 or 2,
    // which std's dup2 of the child's stdio would overwrite in the reaper. (The original is
    // closed at once: the copy is the only write end the reaper may hold.)
    let report_writer = sys::duplicate_above_stdio(OwnedFd::from(report_writer).as_fd()).map_err(spawn_error)?;
    // A contained program reports a containment step that failed on a pipe of its own: std
    // passes only an errno back from a failed pre-exec, which cannot say which step it was.
    let setup = match containment {
        Some(containment) => {
            let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
            let writer = sys::duplicate_above_stdio(OwnedFd::from(writer).as_fd()).map_err(spawn_error)?;
            Some((reader, writer, containment.child_plan()))
        }
        None => None,
    };
    let plan = setup.as_ref().map(|(_, writer, plan)| plan.reporting_to(writer.as_raw_fd()));
    sys::spawn_through_reaper(command, report_writer.as_raw_fd(), sys::getpid(), plan, passed);
    let (mut child, registration) = {
        // A sweep must not take this reaper for an adopted orphan before it is registered.
        let _spawning = SPAWNS.read().unwrap_or_else(PoisonError::into_inner);
        let spawned = command.spawn();
        drop(report_writer);
        let spawned = match (spawned, setup) {
            (Err(error), Some((reader, writer, _))) => {
                // Every other write end is gone: the reaper closed its copy before std's
                // spawn returned, the program exited. What is in the pipe is all there is.
                drop(writer);
                Err(containment_failure(reader).unwrap_or_else(|| spawn_error(error)))
            }
            (spawned, _) => spawned.map_err(spawn_error),
        };
        let child = spawned?;
        let Some(reaper) = child.id().and_then(|id| pid_t::try_from(id).ok()) else {
            // Only a child already reaped has no id, and nothing has waited on it yet.
            return Err(ProcessError::Wait {
                program: program.to_string(),
                source: io::Error::other("child has no pid"),
            });
        };
        (child, Registration::new(reaper))
    };
    let reaper = registration.0;
    // The reaper wrote the program's pid before closing its end of std's exec-error channel,
    // and `spawn` returned only after that: the four bytes are in the pipe.
    let mut pid = [0u8; 4];
    let program_pid = report.read_exact(&mut pid).ok().map(|()| pid_t::from_ne_bytes(pid));
    let report = match pipe::Receiver::from_owned_fd(OwnedFd::from(report)) {
        Ok(report) => report,
        Err(source) => {
            signal_reaper(reaper, STOP_NOW);
            return Err(spawn_error(source));
        }
    };
    // Unreadable only without /proc, which `prepare_owner` refused.
    let reaper_started = procfs::stat_of(reaper).map_or(0, |stat| stat.start_time);
    let stdin = child.stdin.take();
    let tree = Tree {
        child,
        reaper,
        reaper_started,
        program_pid,
        report,
        final_report: [0; 8],
        final_report_len: 0,
        reaper_reaped: false,
        reaper_status: None,
        program_status: None,
        ended_by_task_limit: false,
        _registration: registration,
    };
    Ok(Spawned { tree, stdin })
}

/// The containment step that failed in the program, if it reported one.
fn containment_failure(mut reader: std::io::PipeReader) -> Option<ProcessError> {
    let mut record = [0u8; SETUP_RECORD];
    reader.read_exact(&mut record).ok()?;
    let SetupFailure { step, source } = SetupFailure::parse(&record)?;
    Some(ProcessError::Containment { step, source })
}

/// Runs `probe` (which forks a throwaway child of this process) while no sweep can run: a
/// sweep would take that child for an orphan adopted from a dead reaper and kill it.
pub(crate) fn holding_spawn_lock<T>(probe: impl FnOnce() -> T) -> T {
    let _spawning = SPAWNS.read().unwrap_or_else(PoisonError::into_inner);
    probe()
}

/// Once per process: refuses to run anything without /proc (the reaper could not find the
/// tree), and makes this process a child subreaper for the backstop.
fn prepare_owner() -> io::Result<()> {
    static PREPARED: OnceLock<Result<(), String>> = OnceLock::new();
    let prepared = PREPARED.get_or_init(|| {
        if procfs::stat_of(sys::getpid()).is_none() {
            return Err("/proc is not mounted or not readable, and without it the processes a command starts \
                        cannot all be found and stopped; mount it (mount -t proc proc /proc)"
                .to_string());
        }
        if let Err(error) = sys::set_child_subreaper() {
            tracing::warn!(%error, "cannot become a child subreaper: if a command kills its reaper, what it started outlives the call");
        }
        Ok(())
    });
    prepared.clone().map_err(io::Error::other)
}

/// The reapers this process owns right now (registered from spawn until their `Tree` is gone).
static REAPERS: Mutex<Vec<pid_t>> = Mutex::new(Vec::new());

/// Spawns hold this shared, sweeps exclusively: between its fork and its registration a new
/// reaper looks exactly like an adopted orphan.
static SPAWNS: RwLock<()> = RwLock::new(());

struct Registration(pid_t);

impl Registration {
    fn new(reaper: pid_t) -> Registration {
        REAPERS.lock().unwrap_or_else(PoisonError::into_inner).push(reaper);
        Registration(reaper)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        REAPERS.lock().unwrap_or_else(PoisonError::into_inner).retain(|&pid| pid != self.0);
    }
}

/// How a stop is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopMode {
    /// SIGTERM to the whole tree, a short grace, then SIGKILL.
    Gracefully,
    /// SIGKILL to the whole tree at once (the owner is dropping the call).
    Now,
}

/// One call's process tree, as the owner holds it: the reaper child and its report.
///
/// Dropping it while the reaper runs asks the reaper to SIGKILL the whole tree at once (the
/// owner vanished: a future dropped, the runtime shut down); tokio reaps the reaper afterwards.
pub(crate) struct Tree {
    child: Child,
    reaper: pid_t,
    /// The reaper's start time (`procfs`): only processes started since can be its orphans.
    reaper_started: u64,
    program_pid: Option<pid_t>,
    report: pipe::Receiver,
    /// The reaper's last words: the program's status, then flags (`ENDED_BY_TASK_LIMIT`).
    final_report: [u8; 8],
    final_report_len: usize,
    /// Set as soon as waiting for the reaper returned (even with an error): from then on its
    /// pid may belong to anyone, and it is never signalled again.
    reaper_reaped: bool,
    reaper_status: Option<ExitStatus>,
    /// The program's status, once nothing of the tree is left.
    program_status: Option<ExitStatus>,
    ended_by_task_limit: bool,
    _registration: Registration,
}

impl Tree {
    /// The program's pid (the reaper's, if the reaper could not say).
    pub(crate) fn program_pid(&self) -> u32 {
        self.program_pid.unwrap_or(self.reaper).unsigned_abs()
    }

    /// Waits until the program has ended and nothing of its tree is left; its status.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let reaper_status = self.reaper_exit().await?;
        Ok(self.settle(reaper_status, false).await)
    }

    /// Stops the whole tree and waits until nothing of it is left; the program's status.
    pub(crate) async fn stop(&mut self, mode: StopMode) -> io::Result<ExitStatus> {
        let mut reaper_killed = false;
        if !self.reaper_reaped
            && let Ok(Some(status)) = self.child.try_wait()
        {
            (self.reaper_reaped, self.reaper_status) = (true, Some(status));
        }
        let reaper_status = match (self.reaper_status, self.reaper_reaped) {
            (Some(status), _) => status,
            // Waiting failed before: the reaper is gone, but so is its status; say why.
            (None, true) => self.reaper_exit().await?,
            (None, false) => {
                signal_reaper(self.reaper, if mode == StopMode::Now { STOP_NOW } else { STOP_GRACEFULLY });
                // A descendant may have stopped the reaper (SIGSTOP); it must run to do its job.
                signal_reaper(self.reaper, libc::SIGCONT);
                match tokio::time::timeout(TERM_GRACE + KILL_SETTLE_LIMIT, self.reaper_exit()).await {
                    Ok(status) => status?,
                    Err(_) => {
                        tracing::warn!(
                            reaper = self.reaper,
                            "the reaper did not finish in time; killing it and its tree"
                        );
                        signal_reaper(self.reaper, libc::SIGKILL);
                        reaper_killed = true;
                        self.reaper_exit().await?
                    }
                }
            }
        };
        Ok(self.settle(reaper_status, reaper_killed).await)
    }

    /// Waits for the reaper to exit (remembering that it has been reaped).
    async fn reaper_exit(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.reaper_status {
            return Ok(status);
        }
        let status = self.child.wait().await;
        self.reaper_reaped = true;
        let status = status?;
        self.reaper_status = Some(status);
        Ok(status)
    }

    /// After the reaper's exit: the program's status from the report, or, if the reaper did
    /// not finish its job, the backstop's sweep and the reaper's own status.
    async fn settle(&mut self, reaper_status: ExitStatus, reaper_killed: bool) -> ExitStatus {
        if let Some(status) = self.program_status {
            return status;
        }
        let report = self.read_final_report().await;
        let status = match report {
            Some(status) if !reaper_killed => ExitStatus::from_raw(status),
            _ => {
                if !reaper_killed {
                    tracing::warn!(reaper = self.reaper, %reaper_status, "a reaper died before its tree (killed by a descendant?); killing what it left");
                }
                sweep_orphans(self.reaper_started).await;
                reaper_status
            }
        };
        self.program_status = Some(status);
        status
    }

    /// The program's wait status, as the reaper's last words; `None` if it exited without them.
    /// Called after the reaper's exit, so end of file is near: no other process holds the pipe.
    async fn read_final_report(&mut self) -> Option<c_int> {
        while self.final_report_len < self.final_report.len() {
            match self.report.read(&mut self.final_report[self.final_report_len..]).await {
                Ok(0) | Err(_) => return None,
                Ok(read) => self.final_report_len += read,
            }
        }
        let [s0, s1, s2, s3, f0, f1, f2, f3] = self.final_report;
        self.ended_by_task_limit = u32::from_ne_bytes([f0, f1, f2, f3]) & ENDED_BY_TASK_LIMIT != 0;
        Some(c_int::from_ne_bytes([s0, s1, s2, s3]))
    }

    /// The reaper killed the tree because it had more tasks than the call's limit.
    pub(crate) fn ended_by_task_limit(&self) -> bool {
        self.ended_by_task_limit
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // tokio forgets the pid once it has reaped the child: a second guard on the same rule.
        if !self.reaper_reaped && self.child.id().is_some() {
            signal_reaper(self.reaper, STOP_NOW);
            signal_reaper(self.reaper, libc::SIGCONT);
        }
    }
}

/// Signals the reaper; the caller knows it is unreaped, so its pid is still its own.
fn signal_reaper(reaper: pid_t, signal: c_int) {
    match sys::kill(reaper, signal) {
        Ok(()) => {}
        Err(error) if error.raw_os_error() == Some(libc::ESRCH) => {}
        Err(error) => tracing::warn!(reaper, signal, %error, "cannot signal a reaper"),
    }
}

/// The backstop: SIGKILLs every child this process adopted from a reaper that started at
/// `reaper_started` and died before its tree, with all their descendants, and reaps them.
/// Bounded by [`SWEEP_LIMIT`].
async fn sweep_orphans(reaper_started: u64) {
    let owner = sys::getpid();
    let deadline = Instant::now() + SWEEP_LIMIT;
    loop {
        let orphans_left = {
            let _no_spawns = SPAWNS.write().unwrap_or_else(PoisonError::into_inner);
            let reapers = REAPERS.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let adopted = |stat: &ProcStat| {
                stat.ppid == owner && stat.start_time >= reaper_started && !reapers.contains(&stat.pid)
            };
            procfs::signal_subtrees(adopted, &[libc::SIGKILL]);
            let mut left = 0;
            procfs::for_each_process(|stat| match (adopted(stat), stat.has_ended()) {
                // Our child (its ppid says so) and a zombie: reaping it frees its pid.
                (true, true) => drop(waitpid(Pid::from_raw(stat.pid), Some(WaitPidFlag::WNOHANG))),
                (true, false) => left += 1,
                (false, _) => {}
            });
            left
        };
        if orphans_left == 0 {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(orphans_left, "processes adopted from a dead reaper are still alive after SIGKILL");
            return;
        }
        tokio::time::sleep(SWEEP_POLL).await;
    }
}

/// How a supervised program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The program exited, nothing of its tree is left, and `output` finished (end of file).
    Finished,
    /// The time limit ran out; the tree has been stopped.
    TimedOut,
    /// `stop` asked for it; the tree has been stopped.
    Stopped,
}

/// Runs `output` (draining the pipes) alongside the tree until both are done, `timeout` passes
/// or `stop` resolves; in the last two cases stops the whole tree before returning. Either way
/// nothing of the tree is alive when this returns (short of a process stuck in the kernel).
pub(crate) async fn supervise(
    tree: &mut Tree,
    output: impl Future<Output = ()>,
    timeout: Option<Duration>,
    stop: impl Future<Output = StopMode>,
) -> (io::Result<ExitStatus>, Ending) {
    let (mode, ending) = {
        let finished = async {
            let ((), status) = tokio::join!(output, tree.wait());
            status
        };
        tokio::select! {
            biased;
            status = finished => return (status, Ending::Finished),
            mode = stop => (mode, Ending::Stopped),
            () = sleep_for(timeout) => (StopMode::Gracefully, Ending::TimedOut),
        }
    };
    (tree.stop(mode).await, ending)
}

async fn sleep_for(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

/// The exit code, or `128 + signal` for a signal death (the shell's `$?` convention), so the
/// value is always an integer and never looks like success.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        // wait() never reports a stopped or continued child; keep it non-zero regardless.
        (None, None) => -1,
    }
}

/// Live children of this process that are not reapers (for tests that must find none).
#[cfg(test)]
pub(crate) fn live_children_other_than_reapers() -> Vec<pid_t> {
    let _no_spawns = SPAWNS.write().unwrap_or_else(PoisonError::into_inner);
    let reapers = REAPERS.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let me = sys::getpid();
    let mut found = Vec::new();
    procfs::for_each_process(|stat| {
        if stat.ppid == me && !stat.has_ended() && !reapers.contains(&stat.pid) {
            found.push(stat.pid);
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_empty_argv_is_a_spawn_error_not_a_panic() {
        let launch = Launch { argv: &[], cwd: None, env_overrides: &[], passed_fds: &[] };
        let error = spawn_separate(&launch, Stdio::null(), None).err().unwrap();
        assert!(error.to_string().contains("the command is empty"), "{error}");
        let error = spawn_merged(&launch, Stdio::null()).err().unwrap();
        assert!(error.to_string().contains("the command is empty"), "{error}");
    }
}
