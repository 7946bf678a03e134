//! [`Job`]: a process that runs on its own while its owner does other things: output merged
//! into one ring read incrementally, an optional stdin pipe, an optional time limit, a kill that
//! ends the whole tree, and a drop that does the same.
//!
//! A supervisor task owns the tree. stdout and stderr share one pipe (as with `2>&1`), so the
//! ring holds the bytes in the order the program wrote them, as a terminal would show them. The
//! supervisor drains that pipe into the ring, waits for the tree's end and the pipe's, stops the
//! tree on a time limit or a kill request, and records how the job ended. Readers never touch
//! the tree: they read the ring and wait on a watch channel that announces new bytes and the end.
//!
//! Dropping a [`Job`] that is still running SIGKILLs its whole tree at once (the server owning
//! the jobs is exiting; nothing may outlive it): the supervisor asks the reaper for it, or, if
//! the runtime is gone too and the supervisor with it, the tree's own drop does.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::output::{OutputBuffer, OutputChunk, drain};
use crate::tree::{self, Ending, Spawned, StopMode, Tree};
use crate::{Launch, ProcessError};

/// How to run a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobOptions {
    /// Stop the whole tree once this has passed since the start; `None` runs until the job
    /// ends or is killed.
    pub timeout: Option<Duration>,
    /// The most bytes of merged stdout and stderr kept; older bytes fall out of the ring.
    pub output_limit: usize,
    /// Give the job a stdin pipe for [`Job::write_stdin`]; otherwise stdin is /dev/null, so a
    /// command that reads it sees end of file at once.
    pub pipe_stdin: bool,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnding {
    /// It exited by itself (any exit code, or a signal it did not get from us); whatever it
    /// left running was stopped.
    Exited,
    /// Its time limit ran out and its tree was stopped.
    TimedOut,
    /// [`Job::kill`] (or dropping the job) stopped its tree.
    Killed,
}

/// The end of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobExit {
    /// The exit code, or `128 + signal` for a signal death; -1 if the status could not be read.
    pub exit_code: i32,
    /// The signal that ended the program, if one did.
    pub signal: Option<i32>,
    pub ending: JobEnding,
    /// From spawn to the end.
    pub runtime: Duration,
    /// When the job ended (tokio's clock, so tests can move it).
    pub finished_at: Instant,
}

impl JobExit {
    /// The name of the signal that ended the job (`SIGKILL`), if one did.
    pub fn signal_name(&self) -> Option<&'static str> {
        self.signal.and_then(|signal| Signal::try_from(signal).ok()).map(Signal::as_str)
    }
}

/// Why [`Job::write_stdin`] or [`Job::close_stdin`] failed.
#[derive(Debug, thiserror::Error)]
pub enum StdinError {
    #[error("stdin is closed (it was closed with eof, or the job was started without a stdin pipe)")]
    Closed,
    #[error("cannot write to stdin: {0}")]
    Io(#[from] std::io::Error),
}

/// A running (or finished) background program, with everything it started.
#[derive(Debug)]
pub struct Job {
    pid: u32,
    shared: Arc<Mutex<JobState>>,
    progress: watch::Receiver<Progress>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// [`Job::kill`]: a graceful stop.
    kill: CancellationToken,
    /// Dropping the job: SIGKILL at once.
    abandon: CancellationToken,
    started: Instant,
}

#[derive(Debug)]
struct JobState {
    output: OutputBuffer,
    exit: Option<JobExit>,
}

/// What readers wait on: bytes written so far, and whether the job has ended.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    total_bytes: u64,
    finished: bool,
}

impl Job {
    /// Spawns `launch` as a job supervised by a new tokio task. Must be called inside a tokio
    /// runtime.
    pub fn start(launch: Launch<'_>, options: JobOptions) -> Result<Job, ProcessError> {
        let stdin = if options.pipe_stdin { Stdio::piped() } else { Stdio::null() };
        // The tree's own drop stops it if a runtime shutting down drops the task unpolled.
        let (Spawned { tree, stdin }, output) = tree::spawn_merged(&launch, stdin)?;
        let started = Instant::now();
        let pid = tree.program_pid();
        let shared =
            Arc::new(Mutex::new(JobState { output: OutputBuffer::keeping_tail(options.output_limit), exit: None }));
        let (progress_tx, progress) = watch::channel(Progress::default());
        let (kill, abandon) = (CancellationToken::new(), CancellationToken::new());
        let supervisor = Supervisor {
            tree,
            output,
            shared: shared.clone(),
            progress: progress_tx,
            timeout: options.timeout,
            kill: kill.clone(),
            abandon: abandon.clone(),
            started,
        };
        tokio::spawn(supervisor.run());
        Ok(Job { pid, shared, progress, stdin: tokio::sync::Mutex::new(stdin), kill, abandon, started })
    }

    /// The program's pid (the command's own process; its reaper is its parent).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How the job ended, or `None` while it runs.
    pub fn exit(&self) -> Option<JobExit> {
        lock(&self.shared).exit
    }

    /// How long the job has run (until its end, once it ended).
    pub fn runtime(&self) -> Duration {
        self.exit().map_or_else(|| self.started.elapsed(), |exit| exit.runtime)
    }

    /// Output from stream offset `from` on (0 for everything kept). While the job runs, a
    /// character whose last bytes have not arrived yet is left for the next read.
    pub fn output_since(&self, from: u64) -> OutputChunk {
        let state = lock(&self.shared);
        state.output.read_from(from, state.exit.is_some())
    }

    /// Waits until the job has written more than `offset` bytes in total, or has ended.
    pub async fn wait_for_output(&self, offset: u64) {
        let mut progress = self.progress.clone();
        // An error means the supervisor is gone, which only happens once it recorded the end.
        let _ = progress.wait_for(|p| p.finished || p.total_bytes > offset).await;
    }

    /// Waits until the job has ended and nothing it started is alive.
    pub async fn finished(&self) {
        let mut progress = self.progress.clone();
        let _ = progress.wait_for(|p| p.finished).await;
    }

    /// Stops the whole tree (SIGTERM, a short grace, SIGKILL) and waits until it is gone. A
    /// job that already ended is left as it is.
    pub async fn kill(&self) {
        self.kill.cancel();
        self.finished().await;
    }

    /// Writes all of `data` to the job's stdin. Waits while the pipe is full, that is, until the
    /// job reads; callers bound that wait.
    pub async fn write_stdin(&self, data: &[u8]) -> Result<(), StdinError> {
        let mut stdin = self.stdin.lock().await;
        let pipe = stdin.as_mut().ok_or(StdinError::Closed)?;
        pipe.write_all(data).await?;
        pipe.flush().await?;
        Ok(())
    }

    /// Closes the job's stdin, so a program reading it sees end of file.
    pub async fn close_stdin(&self) -> Result<(), StdinError> {
        let mut pipe = self.stdin.lock().await.take().ok_or(StdinError::Closed)?;
        pipe.shutdown().await?;
        Ok(())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // Only the supervisor (or, without it, the tree's drop) signals the reaper: it alone
        // knows whether the reaper is still unreaped, that is whether its pid is still its own.
        self.abandon.cancel();
    }
}

/// The task that owns a job's tree.
struct Supervisor {
    tree: Tree,
    /// stdout and stderr, on one pipe.
    output: pipe::Receiver,
    shared: Arc<Mutex<JobState>>,
    progress: watch::Sender<Progress>,
    timeout: Option<Duration>,
    kill: CancellationToken,
    abandon: CancellationToken,
    started: Instant,
}

impl Supervisor {
    async fn run(self) {
        let Supervisor { mut tree, mut output, shared, progress, timeout, kill, abandon, started } = self;
        let record = |chunk: &[u8]| {
            let total_bytes = {
                let mut state = lock(&shared);
                state.output.push(chunk);
                state.output.total()
            };
            progress.send_modify(|p| p.total_bytes = p.total_bytes.max(total_bytes));
        };
        let stop = async {
            tokio::select! {
                biased;
                () = abandon.cancelled() => StopMode::Now,
                () = kill.cancelled() => StopMode::Gracefully,
            }
        };
        let (status, ending) = tree::supervise(&mut tree, drain(&mut output, record), timeout, stop).await;
        let exit = job_exit(status, ending, started);
        lock(&shared).exit = Some(exit);
        progress.send_modify(|p| p.finished = true);
    }
}

fn job_exit(status: std::io::Result<ExitStatus>, ending: Ending, started: Instant) -> JobExit {
    let (exit_code, signal) = match status {
        Ok(status) => (tree::exit_code(status), status.signal()),
        Err(error) => {
            tracing::warn!(%error, "cannot read a job's exit status");
            (-1, None)
        }
    };
    let ending = match ending {
        Ending::Finished => JobEnding::Exited,
        Ending::TimedOut => JobEnding::TimedOut,
        Ending::Stopped => JobEnding::Killed,
    };
    let finished_at = Instant::now();
    JobExit { exit_code, signal, ending, runtime: finished_at - started, finished_at }
}

/// The state stays consistent under every lock holder (no code panics midway), so a poisoned
/// lock is still usable.
fn lock(shared: &Mutex<JobState>) -> MutexGuard<'_, JobState> {
    shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::test_support::{
        ESCAPEES, NON_REAPER_CHILDREN, assert_all_dead, escapees_script, pid_is_dead, pids_in, wait_for_pids,
        wait_until_dead,
    };

    const OPTIONS: JobOptions = JobOptions { timeout: None, output_limit: 64 * 1024, pipe_stdin: true };

    fn start(script: &str, options: JobOptions) -> Job {
        let argv = ["sh".to_string(), "-c".to_string(), script.to_string()];
        Job::start(Launch { argv: &argv, cwd: None, env_overrides: &[], passed_fds: &[] }, options).expect("starts")
    }

    /// Reads until the output contains `count` whitespace-separated words.
    async fn read_words(job: &Job, count: usize) -> String {
        loop {
            let text = job.output_since(0).text;
            if text.split_whitespace().count() >= count || job.exit().is_some() {
                return text;
            }
            job.wait_for_output(job.output_since(0).total_bytes).await;
        }
    }

    #[tokio::test]
    async fn output_is_read_incrementally_while_the_job_runs() {
        let job = start("echo first; read go; echo second", OPTIONS);
        job.wait_for_output(0).await;
        let first = job.output_since(0);
        assert_eq!(first.text, "first\n");
        assert!(job.exit().is_none(), "the job waits for its stdin");
        job.write_stdin(b"go\n").await.unwrap();
        job.finished().await;
        let second = job.output_since(first.end);
        assert_eq!(second.text, "second\n");
        let exit = job.exit().unwrap();
        assert_eq!((exit.exit_code, exit.ending, exit.signal), (0, JobEnding::Exited, None));
    }

    #[tokio::test]
    async fn stdout_and_stderr_are_merged_in_write_order() {
        let job = start("echo out; echo err >&2; echo out2; echo err2 >&2", OPTIONS);
        job.finished().await;
        assert_eq!(job.output_since(0).text, "out\nerr\nout2\nerr2\n");
    }

    #[tokio::test]
    async fn closing_stdin_delivers_end_of_file() {
        let job = start("cat; echo done", OPTIONS);
        job.write_stdin(b"abc").await.unwrap();
        job.close_stdin().await.unwrap();
        job.finished().await;
        assert_eq!(job.output_since(0).text, "abcdone\n");
        assert!(matches!(job.write_stdin(b"x").await, Err(StdinError::Closed)));
        assert!(matches!(job.close_stdin().await, Err(StdinError::Closed)));
    }

    #[tokio::test]
    async fn without_a_stdin_pipe_reads_see_end_of_file() {
        let job = start("cat; echo done", JobOptions { pipe_stdin: false, ..OPTIONS });
        job.finished().await;
        assert_eq!(job.output_since(0).text, "done\n");
        assert!(matches!(job.write_stdin(b"x").await, Err(StdinError::Closed)));
    }

    #[tokio::test]
    async fn kill_ends_every_process_of_the_tree() {
        let job = start("sleep 1000 & echo $!; sleep 1000 & echo $!; echo $$; wait", OPTIONS);
        let pids = pids_in(&read_words(&job, 3).await);
        assert_eq!(pids.len(), 3);
        assert!(pids.iter().all(|&pid| !pid_is_dead(pid)), "all running before the kill");
        job.kill().await;
        let exit = job.exit().unwrap();
        assert_eq!((exit.ending, exit.exit_code, exit.signal), (JobEnding::Killed, 128 + 15, Some(15)));
        assert_eq!(exit.signal_name(), Some("SIGTERM"));
        for pid in pids {
            assert!(pid_is_dead(pid), "pid {pid} survived the kill");
        }
    }

    #[tokio::test]
    async fn a_time_limit_ends_the_tree_and_says_so() {
        let job = start(
            "trap '' TERM; sleep 1000 & echo $!; echo $$; wait",
            JobOptions { timeout: Some(Duration::from_millis(300)), ..OPTIONS },
        );
        job.finished().await;
        let exit = job.exit().unwrap();
        assert_eq!((exit.ending, exit.exit_code), (JobEnding::TimedOut, 128 + 9), "TERM ignored, so KILL");
        for pid in pids_in(&job.output_since(0).text) {
            assert!(pid_is_dead(pid), "pid {pid} survived the time limit");
        }
    }

    #[tokio::test]
    async fn dropping_a_running_job_kills_its_tree() {
        let job = start("sleep 1000 & echo $!; echo $$; wait", OPTIONS);
        let pids = pids_in(&read_words(&job, 2).await);
        drop(job);
        // The stop was asked for during drop; death itself is the reaper's and the kernel's.
        for pid in pids {
            wait_until_dead(pid).await;
        }
    }

    #[tokio::test]
    async fn the_pid_is_the_programs() {
        let job = start("echo $$", OPTIONS);
        job.finished().await;
        assert_eq!(job.output_since(0).text.trim(), job.pid().to_string());
    }

    #[tokio::test]
    async fn escapees_die_when_the_job_exits() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let job = start(&escapees_script(&pid_file, "exit 3"), OPTIONS);
        job.finished().await;
        let exit = job.exit().unwrap();
        assert_eq!((exit.ending, exit.exit_code), (JobEnding::Exited, 3), "the program's own exit code");
        let pids = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
        assert_eq!(pids.len(), ESCAPEES);
        assert_all_dead(&pids, "once the job had finished");
    }

    #[tokio::test]
    async fn escapees_die_when_the_job_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let job = start(&escapees_script(&pid_file, "sleep 1000"), OPTIONS);
        let pids = wait_for_pids(&pid_file, ESCAPEES).await;
        job.kill().await;
        assert_eq!(job.exit().unwrap().ending, JobEnding::Killed);
        assert_all_dead(&pids, "once the kill returned");
    }

    #[tokio::test]
    async fn escapees_die_when_the_job_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let job = start(&escapees_script(&pid_file, "sleep 1000"), OPTIONS);
        let pids = wait_for_pids(&pid_file, ESCAPEES).await;
        drop(job);
        for pid in pids {
            wait_until_dead(pid).await;
        }
    }

    #[tokio::test]
    async fn a_descendant_that_kills_the_reaper_ends_the_job_and_its_tree() {
        let _only_orphans = NON_REAPER_CHILDREN.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        // A time limit only so that a broken backstop fails the test instead of hanging it.
        let options = JobOptions { timeout: Some(Duration::from_secs(20)), ..OPTIONS };
        let job = start(&escapees_script(&pid_file, "kill -9 $PPID; sleep 1000"), options);
        job.finished().await;
        let exit = job.exit().unwrap();
        assert_eq!((exit.ending, exit.exit_code), (JobEnding::Exited, 128 + 9), "the reaper's death ended the job");
        let pids = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
        assert_eq!(pids.len(), ESCAPEES);
        assert_all_dead(&pids, "once the job whose reaper was killed had finished");
    }

    /// Set in the process that [`the_tree_dies_with_its_owner`] starts as the owner: the file to
    /// write the tree's pids to.
    const OWNER_ROLE: &str = "CLAWMCP_PROCESS_TEST_OWNER_PID_FILE";

    /// The tree the owner starts: a `setsid` escapee, a plain background child and the shell.
    /// No stopped process: the owner's death would orphan the tree's process group, and the
    /// kernel SIGHUPs an orphaned group that has stopped members, which would end the shell and
    /// so the tree without the reaper noticing anything.
    fn owned_tree(pid_file: &Path) -> String {
        let file = pid_file.display();
        format!(
            "F='{file}'
setsid sh -c 'echo $$ >> \"$0\"; exec sleep 1000' \"$F\" </dev/null >/dev/null 2>&1 &
sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> \"$F\"
echo $$ >> \"$F\"
wait"
        )
    }

    #[tokio::test]
    async fn the_tree_dies_with_its_owner() {
        if let Some(pid_file) = std::env::var_os(OWNER_ROLE) {
            // The owner's role, in the process this test starts: start the tree, then wait to be
            // SIGKILLed with no chance to clean up.
            let _job = start(&owned_tree(Path::new(&pid_file)), OPTIONS);
            std::future::pending::<()>().await;
        }
        let _not_an_orphan = NON_REAPER_CHILDREN.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let this_test =
            format!("{}::the_tree_dies_with_its_owner", module_path!().trim_start_matches("clawmcp_process::"));
        let mut owner = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &this_test, "--test-threads=1"])
            .env(OWNER_ROLE, &pid_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pids = wait_for_pids(&pid_file, 3).await;
        assert!(pids.iter().all(|&pid| !pid_is_dead(pid)), "the tree runs before its owner dies");
        owner.kill().unwrap();
        owner.wait().unwrap();
        // The reaper notices (a parent-death signal) and stops the tree on its own.
        for pid in pids {
            wait_until_dead(pid).await;
        }
    }

    #[tokio::test]
    async fn a_kill_after_the_end_changes_nothing() {
        let job = start("exit 3", OPTIONS);
        job.finished().await;
        job.kill().await;
        let exit = job.exit().unwrap();
        assert_eq!((exit.ending, exit.exit_code), (JobEnding::Exited, 3));
    }

    #[tokio::test]
    async fn the_ring_keeps_the_latest_output_at_its_limit() {
        let job = start("printf 0123456789", JobOptions { output_limit: 4, ..OPTIONS });
        job.finished().await;
        let chunk = job.output_since(0);
        assert_eq!((chunk.text.as_str(), chunk.discarded, chunk.total_bytes), ("6789", 6, 10));
    }

    /// Runs `script` with `passed`, and returns its exit.
    async fn run_passing(script: &str, passed: &[crate::PassedFd<'_>]) -> Result<JobExit, ProcessError> {
        let argv = ["sh".to_string(), "-c".to_string(), script.to_string()];
        let job = Job::start(Launch { argv: &argv, cwd: None, env_overrides: &[], passed_fds: passed }, OPTIONS)?;
        job.finished().await;
        Ok(job.exit().expect("ended"))
    }

    #[tokio::test]
    async fn passed_descriptors_reach_the_program_at_their_numbers_and_only_the_program() {
        use std::io::Read;
        use std::os::fd::AsFd;
        let (mut three_out, three_in) = std::io::pipe().unwrap();
        let (mut four_out, four_in) = std::io::pipe().unwrap();
        let passed =
            [crate::PassedFd { fd: three_in.as_fd(), number: 3 }, crate::PassedFd { fd: four_in.as_fd(), number: 4 }];
        let exit = run_passing("echo three >&3 && echo four >&4", &passed).await.unwrap();
        assert_eq!(exit.exit_code, 0);
        drop((three_in, four_in));
        // End of file once our copies are gone: neither the reaper nor anything left holds one.
        let (mut three, mut four) = (String::new(), String::new());
        three_out.read_to_string(&mut three).unwrap();
        four_out.read_to_string(&mut four).unwrap();
        assert_eq!((three.as_str(), four.as_str()), ("three\n", "four\n"));

        // Without passing, the program has no fd 3 or 4 of ours (the caller's are close-on-exec).
        let exit = run_passing("echo leaked >&3 || echo leaked >&4 || exit 7", &[]).await.unwrap();
        assert_eq!(exit.exit_code, 7, "the program holds no descriptor 3 or 4 it was not given");
    }

    #[tokio::test]
    async fn two_descriptors_that_sit_on_each_others_numbers_are_swapped_intact() {
        use std::io::Read;
        use std::os::fd::{AsFd, AsRawFd};
        let (mut a_out, a_in) = std::io::pipe().unwrap();
        let (mut b_out, b_in) = std::io::pipe().unwrap();
        let (a_number, b_number) = (a_in.as_raw_fd(), b_in.as_raw_fd());
        // a goes to b's number and b to a's: a plain dup2 of a would close b before it is copied.
        let passed = [
            crate::PassedFd { fd: a_in.as_fd(), number: b_number },
            crate::PassedFd { fd: b_in.as_fd(), number: a_number },
        ];
        // (dash redirects single-digit numbers only; the proc link reaches any.)
        let script = format!("echo a > /proc/self/fd/{b_number} && echo b > /proc/self/fd/{a_number}");
        assert_eq!(run_passing(&script, &passed).await.unwrap().exit_code, 0);
        drop((a_in, b_in));
        let (mut a, mut b) = (String::new(), String::new());
        a_out.read_to_string(&mut a).unwrap();
        b_out.read_to_string(&mut b).unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("a\n", "b\n"));
    }

    #[tokio::test]
    async fn descriptors_that_cannot_be_passed_are_refused_before_anything_runs() {
        use std::os::fd::AsFd;
        let (_out, input) = std::io::pipe().unwrap();
        let fd = input.as_fd();
        let at = |number| crate::PassedFd { fd, number };
        for (passed, why) in [
            (vec![at(2)], "stdio's"),
            (vec![at(3), at(3)], "passed twice"),
            (vec![at(3), at(4), at(5), at(6), at(7)], "at most 4"),
        ] {
            let error = run_passing("true", &passed).await.unwrap_err();
            assert!(error.to_string().contains(why), "{error}");
        }
    }

    #[tokio::test]
    async fn spawn_failure_is_reported_at_start() {
        let argv = ["/nonexistent/program".to_string()];
        let error =
            Job::start(Launch { argv: &argv, cwd: None, env_overrides: &[], passed_fds: &[] }, OPTIONS).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/program"), "{error}");
    }
}
