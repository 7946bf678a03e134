//! Running one argv as a child process that can always be stopped, with bounded output.
//!
//! `system.run` hands an agent-chosen program to the OS, so three things must hold whatever the
//! program does:
//!
//! - **Stopping stops everything.** The child leads its own process group (`process_group(0)`),
//!   so a timeout or a cancellation signals the whole tree it spawned (`sh -c 'a & b; wait'`),
//!   not just the shell. The group gets SIGTERM (and SIGCONT, so stopped members can act on it),
//!   a short grace, then SIGKILL; [`run`] returns only once no member of the group is alive and the
//!   direct child is reaped, so a caller told "cancelled" or "timed out" can rely on it. If the
//!   future is dropped midway instead, [`GroupKillGuard`] sends SIGKILL from `Drop` as a backstop.
//!   A process that deliberately leaves the group (`setsid`, a daemonising double fork) escapes
//!   this, as it escapes any process-group based runner; containing that needs cgroups.
//! - **Output is bounded.** Each stream keeps at most [`MAX_CAPTURED_BYTES`]; the rest is read and
//!   discarded so the child never blocks on a full pipe, and the caller learns it was cut.
//! - **Bytes are not text.** Output is decoded as UTF-8 lossily: a binary or Latin-1 tool still
//!   gives a result.
//!
//! A normal exit leaves the group alone: a command may start a background service on purpose
//! (`nohup server >log 2>&1 &`), and upstream only kills on timeout.

use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The most bytes kept from each of stdout and stderr (1 MiB each).
///
/// The result travels back as one MCP text block (and over the gateway as one frame). Two full
/// streams, JSON-escaped, stay well under the 4 MiB bodies both transports accept, and far more
/// than a model can use: a command that prints more should write to a file and read it in parts.
pub const MAX_CAPTURED_BYTES: usize = 1024 * 1024;

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

/// Read buffer per stream.
const READ_CHUNK: usize = 16 * 1024;

/// One output stream as captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedStream {
    /// The kept bytes, decoded as UTF-8 lossily.
    pub text: String,
    /// Every byte the command wrote to the stream, kept or not.
    pub total_bytes: u64,
    /// True when bytes beyond [`MAX_CAPTURED_BYTES`] were discarded.
    pub truncated: bool,
}

/// How a run ended, when it was not cancelled.
#[derive(Debug)]
pub struct ProcessOutcome {
    pub stdout: CapturedStream,
    pub stderr: CapturedStream,
    /// The exit code, or `128 + signal` when a signal ended the process (the shell's `$?`
    /// convention), so the field is always an integer and never looks like success.
    pub exit_code: i32,
    /// True when the time limit ran out and the group was killed.
    pub timed_out: bool,
    /// From spawn to the end of the run.
    pub duration: Duration,
}

/// Why a run produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{program}`: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("cannot wait for `{program}`: {source}")]
    Wait { program: String, source: io::Error },
    /// The cancellation token fired; the process group has been stopped.
    #[error("cancelled")]
    Cancelled,
}

/// What to launch: no shell, `argv[0]` is the program (the approvals layer makes it an absolute
/// path), the rest passed verbatim; the node's environment plus `env_overrides`.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub argv: &'a [String],
    pub cwd: Option<&'a Path>,
    pub env_overrides: &'a [(String, String)],
}

/// Runs `launch` with stdin at /dev/null until it exits, `timeout` passes or `cancel` fires.
/// `launch.argv` must not be empty.
pub async fn run(
    launch: Launch<'_>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ProcessOutcome, ProcessError> {
    let (program, args) = launch.argv.split_first().expect("validation guarantees a non-empty argv");
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(launch.env_overrides.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = launch.cwd {
        command.current_dir(cwd);
    }

    let started = std::time::Instant::now();
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn { program: program.clone(), source })?;
    let Some(pgid) = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw) else {
        // Only a child already reaped has no id, and nothing has waited on it yet.
        return Err(ProcessError::Wait { program: program.clone(), source: io::Error::other("child has no pid") });
    };
    let mut guard = GroupKillGuard::new(pgid);
    let mut stdout_pipe = child.stdout.take().expect("stdout is piped");
    let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
    let mut stdout = CappedBuffer::new(MAX_CAPTURED_BYTES);
    let mut stderr = CappedBuffer::new(MAX_CAPTURED_BYTES);

    let ending = {
        let finished = async {
            // The pipes are drained to EOF, not just until the child exits: a background
            // member still holding them may write more, and must not block on a full pipe.
            let ((), (), status) =
                tokio::join!(stdout.drain(&mut stdout_pipe), stderr.drain(&mut stderr_pipe), child.wait());
            status
        };
        tokio::select! {
            biased;
            status = finished => Ending::Finished(status),
            () = cancel.cancelled() => Ending::Cancelled,
            () = tokio::time::sleep(timeout) => Ending::TimedOut,
        }
    };

    let (status, timed_out) = match ending {
        Ending::Finished(status) => (status, false),
        Ending::TimedOut => (stop_group(pgid, &mut child).await, true),
        Ending::Cancelled => {
            let _ = stop_group(pgid, &mut child).await;
            guard.disarm();
            return Err(ProcessError::Cancelled);
        }
    };
    guard.disarm();
    let status = status.map_err(|source| ProcessError::Wait { program: program.clone(), source })?;
    Ok(ProcessOutcome {
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        exit_code: exit_code(status),
        timed_out,
        duration: started.elapsed(),
    })
}

enum Ending {
    Finished(io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

/// The exit code, or `128 + signal` for a signal death.
fn exit_code(status: ExitStatus) -> i32 {
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
/// The child stays unreaped until the group has been signalled: while it exists (even as a
/// zombie) its pid, which is the group id, cannot be handed to another process group, so the
/// signals cannot hit an unrelated group.
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

fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => tracing::warn!(pgid = pgid.as_raw(), ?signal, %error, "cannot signal process group"),
    }
}

/// True while a member of the group is running. Zombies do not count: a member that died is
/// dead even if its new parent never reaps it (orphans go to init, and a container's init may
/// not reap at all).
pub(crate) fn group_has_live_members(pgid: Pid) -> bool {
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
fn parse_proc_stat(stat: &str) -> Option<(char, i32)> {
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// SIGKILLs the group when dropped while armed: the backstop for a run future dropped before
/// it could stop the group itself (the caller gave up waiting, the runtime shut down).
struct GroupKillGuard {
    pgid: Option<Pid>,
}

impl GroupKillGuard {
    fn new(pgid: Pid) -> Self {
        GroupKillGuard { pgid: Some(pgid) }
    }

    fn disarm(&mut self) {
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

/// Keeps the first `limit` bytes of a stream and counts the rest.
struct CappedBuffer {
    kept: Vec<u8>,
    limit: usize,
    total: u64,
}

impl CappedBuffer {
    fn new(limit: usize) -> Self {
        CappedBuffer { kept: Vec::new(), limit, total: 0 }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = self.limit.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
        self.total += chunk.len() as u64;
    }

    /// Reads to EOF. A read error ends the stream like EOF: what was read is still reported.
    async fn drain(&mut self, reader: &mut (impl AsyncRead + Unpin)) {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) => return,
                Ok(n) => self.push(&buf[..n]),
                Err(error) => {
                    tracing::debug!(%error, "output pipe read failed; treating as end of stream");
                    return;
                }
            }
        }
    }

    fn finish(mut self) -> CapturedStream {
        let truncated = self.total > self.kept.len() as u64;
        if truncated {
            // The cut may split a character; drop the partial one rather than show U+FFFD.
            let complete = complete_utf8_prefix_len(&self.kept);
            self.kept.truncate(complete);
        }
        CapturedStream { text: String::from_utf8_lossy(&self.kept).into_owned(), total_bytes: self.total, truncated }
    }
}

/// Length of `bytes` without a trailing incomplete UTF-8 sequence.
fn complete_utf8_prefix_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: keep looking for the lead byte
        }
        let needed = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    fn launch(argv: &[String]) -> Launch<'_> {
        Launch { argv, cwd: None, env_overrides: &[] }
    }

    async fn run_for(parts: &[&str], timeout: Duration) -> ProcessOutcome {
        run(launch(&argv(parts)), timeout, &CancellationToken::new()).await.expect("runs")
    }

    /// True once `pid` is gone or a zombie: a zombie has finished running.
    fn pid_is_dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => parse_proc_stat(&stat).is_some_and(|(state, _)| state == 'Z' || state == 'X'),
            Err(_) => true,
        }
    }

    fn pids_in(text: &str) -> Vec<i32> {
        text.split_whitespace().map(|p| p.parse().expect("a pid")).collect()
    }

    #[tokio::test]
    async fn captures_stdout_stderr_and_exit_code_separately() {
        let outcome = run_for(&["sh", "-c", "printf out; printf err >&2; exit 42"], Duration::from_secs(30)).await;
        assert_eq!(outcome.stdout.text, "out");
        assert_eq!(outcome.stderr.text, "err");
        assert_eq!(outcome.exit_code, 42);
        assert!(!outcome.timed_out);
        assert!(!outcome.stdout.truncated && !outcome.stderr.truncated);
    }

    #[tokio::test]
    async fn a_signal_death_reports_128_plus_the_signal() {
        let outcome = run_for(&["sh", "-c", "kill -9 $$"], Duration::from_secs(30)).await;
        assert_eq!(outcome.exit_code, 128 + 9);
    }

    #[tokio::test]
    async fn output_past_the_cap_is_counted_discarded_and_never_blocks_the_child() {
        let total = MAX_CAPTURED_BYTES + 1_000_000;
        let script = format!("head -c {total} /dev/zero | tr '\\0' a; echo finished >&2");
        let outcome = run_for(&["sh", "-c", &script], Duration::from_secs(60)).await;
        assert!(!outcome.timed_out, "the child must finish, not block on a full pipe");
        assert_eq!(outcome.stderr.text, "finished\n");
        assert!(outcome.stdout.truncated);
        assert_eq!(outcome.stdout.text.len(), MAX_CAPTURED_BYTES);
        assert_eq!(outcome.stdout.total_bytes, total as u64);
    }

    #[tokio::test]
    async fn output_exactly_at_the_cap_is_not_truncated() {
        let script = format!("head -c {MAX_CAPTURED_BYTES} /dev/zero | tr '\\0' a");
        let outcome = run_for(&["sh", "-c", &script], Duration::from_secs(60)).await;
        assert!(!outcome.stdout.truncated);
        assert_eq!(outcome.stdout.text.len(), MAX_CAPTURED_BYTES);
    }

    #[tokio::test]
    async fn timeout_kills_every_member_of_the_group() {
        let script = "sleep 1000 & echo $!; sleep 1000 & echo $!; echo $$; wait";
        let outcome = run_for(&["sh", "-c", script], Duration::from_millis(300)).await;
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, 128 + 15, "sh dies of the SIGTERM");
        let pids = pids_in(&outcome.stdout.text);
        assert_eq!(pids.len(), 3, "{:?}", outcome.stdout.text);
        for pid in pids {
            assert!(pid_is_dead(pid), "pid {pid} survived the timeout");
        }
    }

    #[tokio::test]
    async fn members_ignoring_sigterm_are_killed() {
        let script = "trap '' TERM; sleep 1000 & echo $!; echo $$; wait";
        let outcome = run_for(&["sh", "-c", script], Duration::from_millis(300)).await;
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, 128 + 9, "sh ignored SIGTERM, so SIGKILL ended it");
        for pid in pids_in(&outcome.stdout.text) {
            assert!(pid_is_dead(pid), "pid {pid} survived");
        }
    }

    #[tokio::test]
    async fn cancellation_stops_the_group_before_returning() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let script = format!("sleep 1000 & echo $! >> {0}; echo $$ >> {0}; wait", pid_file.display());
        let cancel = CancellationToken::new();
        let trigger = {
            let cancel = cancel.clone();
            let pid_file = pid_file.clone();
            async move {
                while std::fs::read_to_string(&pid_file).map(|t| t.lines().count()).unwrap_or(0) < 2 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                cancel.cancel();
            }
        };
        let argv = argv(&["sh", "-c", &script]);
        let (result, ()) = tokio::join!(run(launch(&argv), Duration::from_secs(600), &cancel), trigger);
        assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
        for pid in pids_in(&std::fs::read_to_string(&pid_file).unwrap()) {
            assert!(pid_is_dead(pid), "pid {pid} survived cancellation");
        }
    }

    #[tokio::test]
    async fn a_normal_exit_leaves_background_members_alone() {
        let script = "sleep 1000 >/dev/null 2>&1 & echo $!";
        let outcome = run_for(&["sh", "-c", script], Duration::from_secs(30)).await;
        let pid: i32 = outcome.stdout.text.trim().parse().unwrap();
        assert!(!pid_is_dead(pid), "a finished run must not kill what it started on purpose");
        nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    }

    #[tokio::test]
    async fn spawn_failure_names_the_program() {
        let argv = argv(&["/nonexistent/program"]);
        let error = run(launch(&argv), Duration::from_secs(1), &CancellationToken::new()).await.unwrap_err();
        assert!(error.to_string().contains("/nonexistent/program"), "{error}");
    }

    #[tokio::test]
    async fn env_overrides_are_added_to_the_inherited_environment() {
        let argv = argv(&["sh", "-c", "printf '%s|%s' \"$CLAWMCP_TEST_VAR\" \"${PATH:+inherited}\""]);
        let env = [("CLAWMCP_TEST_VAR".to_string(), "set by wrapper".to_string())];
        let launch = Launch { argv: &argv, cwd: None, env_overrides: &env };
        let outcome = run(launch, Duration::from_secs(30), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.stdout.text, "set by wrapper|inherited");
    }

    #[test]
    fn capped_buffer_keeps_the_head_and_counts_everything() {
        let mut buffer = CappedBuffer::new(4);
        buffer.push(b"abc");
        buffer.push(b"def");
        let captured = buffer.finish();
        assert_eq!(captured, CapturedStream { text: "abcd".into(), total_bytes: 6, truncated: true });
    }

    #[test]
    fn a_character_split_by_the_cap_is_dropped_whole() {
        let mut buffer = CappedBuffer::new(4);
        buffer.push("ab€".as_bytes()); // € is three bytes: only one fits
        assert_eq!(buffer.finish().text, "ab");
        let mut buffer = CappedBuffer::new(5);
        buffer.push("ab€x".as_bytes()); // exactly fits
        assert_eq!(buffer.finish().text, "ab€");
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily() {
        let mut buffer = CappedBuffer::new(16);
        buffer.push(b"\xff\xfeok");
        assert_eq!(buffer.finish().text, "\u{fffd}\u{fffd}ok");
    }

    #[test]
    fn proc_stat_parsing_survives_odd_command_names() {
        assert_eq!(parse_proc_stat("42 (a) b (c)) S 1 77 77 0"), Some(('S', 77)));
        assert_eq!(parse_proc_stat("garbage"), None);
    }
}
