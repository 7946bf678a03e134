//! [`run`]: one argv, stdin at /dev/null, run to its end (or its time limit, or a
//! cancellation), stdout and stderr captured apart, each keeping its first
//! [`MAX_CAPTURED_BYTES`]. This is `system.run`'s contract.

use std::process::Stdio;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::containment::Containment;
use crate::output::{CapturedStream, OutputBuffer, drain};
use crate::tree::{self, Ending, Spawned, StopMode};
use crate::{Launch, ProcessError};

/// The most bytes kept from each of stdout and stderr (1 MiB each).
///
/// Far more than a model can use: a command that prints more should write to a file and read it
/// in parts. This bounds bytes read, not bytes sent: output full of characters JSON escapes grows
/// up to seven-fold on the wire, so `system.run` cuts each stream again to its encoded budget
/// (`clawmcp_mcp::wire_size`, `clawmcp_node::system::MAX_STREAM_WIRE_BYTES`).
pub const MAX_CAPTURED_BYTES: usize = 1024 * 1024;

/// How a run ended, when it was not cancelled.
#[derive(Debug)]
pub struct ProcessOutcome {
    pub stdout: CapturedStream,
    pub stderr: CapturedStream,
    /// The exit code, or `128 + signal` when a signal ended the process (the shell's `$?`
    /// convention), so the field is always an integer and never looks like success.
    pub exit_code: i32,
    /// True when the time limit ran out and the program's tree was killed.
    pub timed_out: bool,
    /// From spawn to the end of the run.
    pub duration: Duration,
    /// The tree had more tasks than its containment's process limit and was killed for it.
    pub process_limit_exceeded: bool,
}

/// Runs `launch` with stdin at /dev/null until it exits, `timeout` passes or `cancel` fires.
/// However it ends, nothing the program started is alive when this returns; dropping the
/// future SIGKILLs the whole tree.
pub async fn run(
    launch: Launch<'_>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ProcessOutcome, ProcessError> {
    run_contained(launch, None, timeout, cancel).await
}

/// [`run`], with the program contained by `containment` when one is given (see
/// [`crate::containment`]). A containment step that fails in the program is
/// [`ProcessError::Containment`]: the program never runs uncontained.
pub async fn run_contained(
    launch: Launch<'_>,
    containment: Option<&Containment>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<ProcessOutcome, ProcessError> {
    let started = std::time::Instant::now();
    let (Spawned { mut tree, .. }, mut stdout_pipe, mut stderr_pipe) =
        tree::spawn_separate(&launch, Stdio::null(), containment)?;
    let mut stdout = OutputBuffer::keeping_head(MAX_CAPTURED_BYTES);
    let mut stderr = OutputBuffer::keeping_head(MAX_CAPTURED_BYTES);
    let output = async {
        tokio::join!(
            drain(&mut stdout_pipe, |chunk| stdout.push(chunk)),
            drain(&mut stderr_pipe, |chunk| stderr.push(chunk))
        );
    };
    let stop = async {
        cancel.cancelled().await;
        StopMode::Gracefully
    };
    let (status, ending) = tree::supervise(&mut tree, output, Some(timeout), stop).await;
    if ending == Ending::Stopped {
        return Err(ProcessError::Cancelled);
    }
    let program = &launch.argv[0];
    let status = status.map_err(|source| ProcessError::Wait { program: program.clone(), source })?;
    Ok(ProcessOutcome {
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        exit_code: tree::exit_code(status),
        timed_out: ending == Ending::TimedOut,
        duration: started.elapsed(),
        process_limit_exceeded: tree.ended_by_task_limit(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{
        ESCAPEES, NON_REAPER_CHILDREN, assert_all_dead, escapees_script, pid_is_dead, pids_in, wait_for_pids,
    };

    fn argv(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    fn launch(argv: &[String]) -> Launch<'_> {
        Launch { argv, cwd: None, env_overrides: &[], passed_fds: &[] }
    }

    async fn run_for(parts: &[&str], timeout: Duration) -> ProcessOutcome {
        run(launch(&argv(parts)), timeout, &CancellationToken::new()).await.expect("runs")
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
    async fn timeout_kills_every_process_of_the_tree() {
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
    async fn cancellation_stops_the_tree_before_returning() {
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
    async fn a_normal_exit_stops_everything_it_left_running() {
        let script = "sleep 1000 >/dev/null 2>&1 & echo $!";
        let outcome = run_for(&["sh", "-c", script], Duration::from_secs(30)).await;
        assert_eq!((outcome.exit_code, outcome.timed_out), (0, false));
        let pid: i32 = outcome.stdout.text.trim().parse().unwrap();
        assert!(pid_is_dead(pid), "a finished run left pid {pid} running");
    }

    #[tokio::test]
    async fn escapees_die_when_the_program_exits() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let outcome = run_for(&["sh", "-c", &escapees_script(&pid_file, "exit 3")], Duration::from_secs(30)).await;
        assert_eq!((outcome.exit_code, outcome.timed_out), (3, false), "the program's own exit code");
        let pids = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
        assert_eq!(pids.len(), ESCAPEES);
        assert_all_dead(&pids, "after the run returned");
    }

    #[tokio::test]
    async fn escapees_die_on_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        // Long enough for every escapee to start (the script then sleeps), short enough to wait.
        let outcome = run_for(&["sh", "-c", &escapees_script(&pid_file, "sleep 1000")], Duration::from_secs(3)).await;
        assert!(outcome.timed_out);
        let pids = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
        assert_eq!(pids.len(), ESCAPEES, "every escapee started before the time limit");
        assert_all_dead(&pids, "after the timed-out run returned");
    }

    #[tokio::test]
    async fn escapees_die_on_cancellation() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        let argv = argv(&["sh", "-c", &escapees_script(&pid_file, "sleep 1000")]);
        let cancel = CancellationToken::new();
        let (result, pids) = tokio::join!(run(launch(&argv), Duration::from_secs(600), &cancel), async {
            let pids = wait_for_pids(&pid_file, ESCAPEES).await;
            cancel.cancel();
            pids
        });
        assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
        assert_all_dead(&pids, "after the cancelled run returned");
    }

    #[tokio::test]
    async fn a_descendant_that_kills_the_reaper_takes_nothing_out_of_the_call() {
        let _only_orphans = NON_REAPER_CHILDREN.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pids");
        // The shell's parent is its reaper.
        let script = escapees_script(&pid_file, "kill -9 $PPID; sleep 1000");
        let outcome = run_for(&["sh", "-c", &script], Duration::from_secs(20)).await;
        assert!(!outcome.timed_out, "the call ends when the reaper dies, not at its time limit");
        assert_eq!(outcome.exit_code, 128 + 9, "the reaper's death is all there is to report");
        let pids = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
        assert_eq!(pids.len(), ESCAPEES);
        assert_all_dead(&pids, "after the run whose reaper was killed returned");
    }

    #[tokio::test]
    async fn a_descendant_that_stops_the_reaper_does_not_keep_the_call_alive() {
        let script = "sleep 1000 >/dev/null 2>&1 & echo $!; echo $$; kill -STOP $PPID; sleep 1000";
        let outcome = run_for(&["sh", "-c", script], Duration::from_millis(300)).await;
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, 128 + 15, "the owner woke the reaper, which stopped the shell with SIGTERM");
        assert_all_dead(&pids_in(&outcome.stdout.text), "after the run returned");
    }

    #[tokio::test]
    async fn a_reaper_kept_stopped_is_killed_by_the_owner_and_its_tree_swept() {
        let _only_orphans = NON_REAPER_CHILDREN.lock().await;
        // The shell ignores SIGTERM and stops its reaper again the moment anything wakes it, so
        // the reaper never finishes its stop: the owner must give up on it.
        let script = "trap '' TERM; sleep 1000 >/dev/null 2>&1 & echo $!; echo $$; while :; do kill -STOP $PPID; done";
        let outcome = run_for(&["sh", "-c", script], Duration::from_millis(300)).await;
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, 128 + 9, "the owner SIGKILLed the reaper");
        assert_all_dead(&pids_in(&outcome.stdout.text), "after the run returned");
    }

    #[tokio::test]
    async fn stray_signals_do_not_end_the_reaper() {
        let script =
            "for signal in HUP INT QUIT USR2 PIPE ALRM TSTP TTIN TTOU; do kill -$signal $PPID; done; echo done";
        let outcome = run_for(&["sh", "-c", script], Duration::from_secs(30)).await;
        assert_eq!(
            (outcome.stdout.text.as_str(), outcome.exit_code),
            ("done\n", 0),
            "the program's own end is reported"
        );
    }

    #[tokio::test]
    async fn spawn_failure_names_the_program_and_leaves_no_process() {
        let _no_orphans = NON_REAPER_CHILDREN.lock().await;
        let before = crate::tree::live_children_other_than_reapers();
        let argv = argv(&["/nonexistent/program"]);
        let error = run(launch(&argv), Duration::from_secs(1), &CancellationToken::new()).await.unwrap_err();
        assert!(error.to_string().contains("/nonexistent/program"), "{error}");
        assert!(error.to_string().contains("No such file or directory"), "{error}");
        let left: Vec<_> =
            crate::tree::live_children_other_than_reapers().into_iter().filter(|pid| !before.contains(pid)).collect();
        assert!(left.is_empty(), "the failed spawn left {left:?}");
    }

    #[tokio::test]
    async fn env_overrides_are_added_to_the_inherited_environment() {
        let argv = argv(&["sh", "-c", "printf '%s|%s' \"$CLAWMCP_TEST_VAR\" \"${PATH:+inherited}\""]);
        let env = [("CLAWMCP_TEST_VAR".to_string(), "set by wrapper".to_string())];
        let launch = Launch { argv: &argv, cwd: None, env_overrides: &env, passed_fds: &[] };
        let outcome = run(launch, Duration::from_secs(30), &CancellationToken::new()).await.unwrap();
        assert_eq!(outcome.stdout.text, "set by wrapper|inherited");
    }
}
