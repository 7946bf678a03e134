//! Helpers for tests that must prove a process is gone, whatever happens to its zombie, and
//! the shell scripts that try hardest not to be.

use std::path::Path;
use std::time::Duration;

use crate::procfs;

/// True once `pid` is gone or a zombie: a zombie has finished running. Orphaned zombies may
/// linger where PID 1 does not reap, so they count as dead.
pub(crate) fn pid_is_dead(pid: i32) -> bool {
    procfs::stat_of(pid).is_none_or(|stat| stat.has_ended())
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

/// Asserts that every pid is dead now.
pub(crate) fn assert_all_dead(pids: &[i32], when: &str) {
    let alive: Vec<_> = pids.iter().filter(|&&pid| !pid_is_dead(pid)).collect();
    assert!(alive.is_empty(), "pids {alive:?} of {pids:?} are alive {when}");
}

/// How many pids [`escapees_script`] writes.
pub(crate) const ESCAPEES: usize = 5;

/// A shell script that starts one of each kind of process a process-group kill misses or a
/// SIGTERM does not end, appends the pid of each (and its own) to `pid_file`, waits until all
/// [`ESCAPEES`] are written, then runs `then`:
/// - a `setsid` escapee: a session and process group of its own, off the output pipes;
/// - a daemon: double fork (its parent exits at once) plus `setsid`;
/// - a grandchild that ignores SIGTERM, under a child that ignores it too;
/// - a child stopped with SIGSTOP;
/// - the shell itself.
pub(crate) fn escapees_script(pid_file: &Path, then: &str) -> String {
    let file = pid_file.display();
    let quiet = "</dev/null >/dev/null 2>&1";
    format!(
        "F='{file}'
setsid sh -c 'echo $$ >> \"$0\"; exec sleep 1000' \"$F\" {quiet} &
( setsid sh -c 'echo $$ >> \"$0\"; exec sleep 1000' \"$F\" {quiet} & )
sh -c 'trap \"\" TERM; sh -c \"echo \\$\\$ >> \\\"\\$0\\\"; exec sleep 1000\" \"$0\" & wait' \"$F\" {quiet} &
sleep 1000 {quiet} & kill -STOP $!; echo $! >> \"$F\"
echo $$ >> \"$F\"
while [ \"$(wc -l < \"$F\")\" -lt {ESCAPEES} ]; do sleep 0.01; done
{then}"
    )
}

/// The pids in `pid_file` once it lists `count`. The bound only turns a hang into a failure.
pub(crate) async fn wait_for_pids(pid_file: &Path, count: usize) -> Vec<i32> {
    for _ in 0..2_000 {
        if let Ok(text) = std::fs::read_to_string(pid_file)
            && text.lines().count() >= count
        {
            return pids_in(&text);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{} never listed {count} pids", pid_file.display());
}

/// Held by the tests that make this process adopt orphans (by killing a reaper) and by those
/// that start or count children other than reapers: the backstop's sweep takes any child of
/// this process that is not a reaper for an orphan, so the two kinds must not overlap.
pub(crate) static NON_REAPER_CHILDREN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
