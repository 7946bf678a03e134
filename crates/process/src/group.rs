//! Process groups: spawning a child as the leader of a new group, supervising it until it ends,
//! times out or is told to stop, and stopping the whole group (SIGTERM, grace, SIGKILL, then
//! waiting until no member is alive).
//!
//! The group id is the leader's pid, and a pid cannot be handed out again while an unreaped
//! process (even a zombie) or a live group uses it. So the leader is reaped only after the group
//! has been signalled, and the drop guards signal only while the leader is unreaped: a signal
//! never reaches an unrelated group that inherited a recycled id.

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{Launch, ProcessError};

/// How long the group gets to exit after SIGTERM before SIGKILL. Short: the command has already
/// overrun its time or been cancelled, and the caller is waiting.
const TERM_GRACE: Duration = Duration::from_millis(200);

/// How long to wait for SIGKILLed members to disappear. SIGKILL cannot be caught, so only a
/// process stuck in uninterruptible I/O takes longer; we then log and return rather than hang.
/// With [`TERM_GRACE`] this stays well inside the MCP dispatcher's cancel grace (5 s), so a
/// cancelled call is answered after the tree is gone, not after the dispatcher gave up waiting.
const KILL_SETTLE_LIMIT: Duration = Duration::from_secs(2);

/// Poll interval while waiting for the group to empty (there is no event for "group is empty").
const GROUP_POLL: Duration = Duration::from_millis(5);

/// A child just spawned as the leader of its own process group. Its output pipes are handed
/// out separately, as the caller asked for them.
pub(crate) struct Spawned {
    pub child: Child,
    pub pgid: Pid,
    pub stdin: Option<ChildStdin>,
}

/// Spawns `launch` in a new process group with stdout and stderr on two pipes.
pub(crate) fn spawn_separate(
    launch: &Launch<'_>,
    stdin: Stdio,
) -> Result<(Spawned, ChildStdout, ChildStderr), ProcessError> {
    let (mut command, program) = command(launch, stdin)?;
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut spawned = start(&mut command, program)?;
    let stdout = spawned.child.stdout.take().expect("stdout is piped");
    let stderr = spawned.child.stderr.take().expect("stderr is piped");
    Ok((spawned, stdout, stderr))
}

/// Spawns `launch` in a new process group with stdout and stderr on one pipe, as `2>&1` does:
/// the reader sees the bytes in exactly the order the program wrote them, which two pipes
/// cannot promise.
pub(crate) fn spawn_merged(launch: &Launch<'_>, stdin: Stdio) -> Result<(Spawned, pipe::Receiver), ProcessError> {
    let (mut command, program) = command(launch, stdin)?;
    let spawn_error = |source| ProcessError::Spawn { program: program.clone(), source };
    let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
    command.stdout(writer.try_clone().map_err(spawn_error)?).stderr(writer);
    let spawned = start(&mut command, program)?;
    // Our copies of the write end must close now, or the reader would never see end of file.
    drop(command);
    let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(spawn_error)?;
    Ok((spawned, reader))
}

/// The command for `launch`, in a group of its own, with everything but stdout and stderr set.
fn command<'a>(launch: &Launch<'a>, stdin: Stdio) -> Result<(Command, &'a String), ProcessError> {
    let Some((program, args)) = launch.argv.split_first() else {
        let source = io::Error::new(io::ErrorKind::InvalidInput, "the command is empty");
        return Err(ProcessError::Spawn { program: String::new(), source });
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(launch.env_overrides.iter().map(|(name, value)| (name, value)))
        .stdin(stdin)
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = launch.cwd {
        command.current_dir(cwd);
    }
    Ok((command, program))
}

fn start(command: &mut Command, program: &str) -> Result<Spawned, ProcessError> {
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn { program: program.to_string(), source })?;
    let Some(pgid) = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw) else {
        // Only a child already reaped has no id, and nothing has waited on it yet.
        let source = io::Error::other("child has no pid");
        return Err(ProcessError::Wait { program: program.to_string(), source });
    };
    let stdin = child.stdin.take();
    Ok(Spawned { child, pgid, stdin })
}

/// How a supervised child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The leader exited and `output` finished (its pipes reached EOF).
    Finished,
    /// The time limit ran out; the group has been stopped.
    TimedOut,
    /// `stop` fired; the group has been stopped.
    Stopped,
}

/// Runs `output` (draining the pipes) alongside the leader until both are done, `timeout`
/// passes or `stop` fires; in the last two cases stops the whole group before returning.
///
/// The pipes are drained to EOF, not just until the leader exits: a background member still
/// holding them may write more, and must not block on a full pipe.
pub(crate) async fn supervise(
    child: &mut Child,
    pgid: Pid,
    output: impl Future<Output = ()>,
    timeout: Option<Duration>,
    stop: &CancellationToken,
) -> (io::Result<ExitStatus>, Ending) {
    let ending = {
        let finished = async {
            let ((), status) = tokio::join!(output, child.wait());
            status
        };
        tokio::select! {
            biased;
            status = finished => return (status, Ending::Finished),
            () = stop.cancelled() => Ending::Stopped,
            () = sleep_for(timeout) => Ending::TimedOut,
        }
    };
    (stop_group(pgid, child).await, ending)
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
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        // wait() never reports a stopped or continued child; keep it non-zero regardless.
        (None, None) => -1,
    }
}

/// Stops every member of the group, reaps the direct child and returns its status.
///
/// The child stays unreaped until the group has been signalled (see the module doc).
async fn stop_group(pgid: Pid, child: &mut Child) -> io::Result<ExitStatus> {
    signal_group(pgid, Signal::SIGTERM);
    // A stopped member would hold SIGTERM pending until the grace is over.
    signal_group(pgid, Signal::SIGCONT);
    if !wait_for_group_exit(pgid, TERM_GRACE).await {
        signal_group(pgid, Signal::SIGKILL);
    }
    let status = child.wait().await;
    if !wait_for_group_exit(pgid, KILL_SETTLE_LIMIT).await {
        tracing::warn!(pgid = pgid.as_raw(), "process group still has live members after SIGKILL");
    }
    status
}

/// Waits until the group has no live member; false if `limit` passed first.
async fn wait_for_group_exit(pgid: Pid, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !group_has_live_members(pgid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(GROUP_POLL).await;
    }
}

pub(crate) fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => tracing::warn!(pgid = pgid.as_raw(), ?signal, %error, "cannot signal process group"),
    }
}

/// True while a member of the group is running. Zombies do not count: a member that died is
/// dead even if its new parent never reaps it (orphans go to init, and a container's init may
/// not reap at all).
fn group_has_live_members(pgid: Pid) -> bool {
    if killpg(pgid, None) == Err(Errno::ESRCH) {
        return false;
    }
    #[cfg(target_os = "linux")]
    if let Some(live) = linux_group_has_running_member(pgid) {
        return live;
    }
    // Without /proc the group "exists" until its zombies are reaped, which is the best we know.
    true
}

/// Scans `/proc` for a member of the group that is not a zombie. `None` if `/proc` is unreadable.
#[cfg(target_os = "linux")]
fn linux_group_has_running_member(pgid: Pid) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let running = entries.filter_map(Result::ok).any(|entry| {
        let is_pid = entry.file_name().to_str().is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| parse_proc_stat(&stat))
                .is_some_and(|(state, group)| group == pgid.as_raw() && !matches!(state, 'Z' | 'X' | 'x'))
    });
    Some(running)
}

/// `(state, pgrp)` from a `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp ...`. The command
/// name may contain spaces and parentheses, so fields are counted from the last `)`.
#[cfg(target_os = "linux")]
pub(crate) fn parse_proc_stat(stat: &str) -> Option<(char, i32)> {
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// SIGKILLs the group when dropped while armed: the backstop for an owner that vanished before
/// it could stop the group itself (a future dropped, the runtime shut down).
pub(crate) struct GroupKillGuard {
    pgid: Option<Pid>,
}

impl GroupKillGuard {
    pub(crate) fn new(pgid: Pid) -> Self {
        GroupKillGuard { pgid: Some(pgid) }
    }

    /// Called once the group has been dealt with and the leader reaped.
    pub(crate) fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupKillGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            signal_group(pgid, Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_parsing_survives_odd_command_names() {
        assert_eq!(parse_proc_stat("42 (a) b (c)) S 1 77 77 0"), Some(('S', 77)));
        assert_eq!(parse_proc_stat("garbage"), None);
    }

    #[tokio::test]
    async fn an_empty_argv_is_a_spawn_error_not_a_panic() {
        let launch = Launch { argv: &[], cwd: None, env_overrides: &[] };
        let error = spawn_separate(&launch, Stdio::null()).err().unwrap();
        assert!(error.to_string().contains("the command is empty"), "{error}");
        let error = spawn_merged(&launch, Stdio::null()).err().unwrap();
        assert!(error.to_string().contains("the command is empty"), "{error}");
    }
}
