//! Helpers for tests that must prove a process is gone, whatever happens to its zombie.

use std::time::Duration;

use crate::group::parse_proc_stat;

/// True once `pid` is gone or a zombie: a zombie has finished running. Orphaned zombies may
/// linger where PID 1 does not reap, so they count as dead.
pub(crate) fn pid_is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => parse_proc_stat(&stat).is_some_and(|(state, _)| state == 'Z' || state == 'X'),
        Err(_) => true,
    }
}

pub(crate) fn pids_in(text: &str) -> Vec<i32> {
    text.split_whitespace().map(|p| p.parse().expect("a pid")).collect()
}

/// Waits for a process already sent SIGKILL to die. The bound only turns a hang into a failure.
pub(crate) async fn wait_until_dead(pid: i32) {
    for _ in 0..2_000 {
        if pid_is_dead(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("pid {pid} is still alive 10 s after SIGKILL");
}
