//! The reaper: one per call, the parent of the call's program, and the process the owner's
//! `Child` really is. It is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process of the
//! call whose parent dies is handed to it rather than to init: one that called `setsid`, one
//! that double-forked to daemonise, one whose parent was killed. However the tree rearranges
//! itself, each of its processes is a descendant of the reaper, so the reaper can always find
//! all of them (see `procfs`), and "no child left" (ECHILD) means "no descendant left".
//!
//! Its life, after the fork in `sys`:
//! 1. It reports the program's pid on the report pipe, closes every other descriptor (std's
//!    exec-error channel, so `spawn` returns, and the output pipes, so they reach end of file
//!    when the tree is gone), and leaves the working directory.
//! 2. It reaps whatever ends, until the program ends or a stop is requested: SIGTERM from the
//!    owner ([`STOP_GRACEFULLY`]), SIGUSR1 ([`STOP_NOW`]), or the owner's death (a parent-death
//!    signal, and `getppid` checked every [`OWNER_POLL`]: the signal fires when the parent
//!    *thread* exits, so it only prompts the check).
//! 3. Then it stops everything left: SIGTERM and SIGCONT to every descendant (SIGCONT so a
//!    stopped one acts on the SIGTERM), [`TERM_GRACE`] to exit, then SIGKILL to every
//!    descendant, repeated until none is left (a process forked meanwhile is found next time).
//!    With a process limit (a contained call, `containment`), it also counts the tree's tasks
//!    every [`TASK_COUNT_POLL`], and past the limit stops everything at once.
//! 4. It reports the program's wait status (and whether the process limit ended it) and exits.
//!
//! All signals are blocked and taken with `sigtimedwait`, so nothing but SIGKILL or SIGSTOP can
//! end or pause it; both of those are the owner's business (`tree`). Everything here runs in a
//! fork of a multi-threaded process: it must stay async-signal-safe (no allocation, no locks, no
//! std I/O, no panics), which is why it only calls `sys` and `procfs`.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::libc::{self, c_int, pid_t};

use crate::containment::Confinement;
use crate::procfs;
use crate::sys::{self, Reaped, SignalSet};

/// The owner asks for a stop with a grace: SIGTERM to everything, then SIGKILL.
pub(crate) const STOP_GRACEFULLY: c_int = libc::SIGTERM;
/// The owner asks for everything to be SIGKILLed at once (it is dropping the call).
pub(crate) const STOP_NOW: c_int = libc::SIGUSR1;
/// The parent-death signal: "check whether the owner is still there".
const OWNER_CHECK: c_int = libc::SIGUSR2;

/// How long the tree gets to exit after SIGTERM before SIGKILL. Short: the command has overrun
/// its time, been cancelled, or ended and left these behind, and the caller is waiting.
pub(crate) const TERM_GRACE: Duration = Duration::from_millis(200);

/// How often the reaper checks that its owner is alive when nothing else wakes it.
const OWNER_POLL: Duration = Duration::from_secs(1);

/// The first pause between SIGKILL rounds, doubled up to [`KILL_RETRY_MAX`]. A SIGKILLed
/// process is gone within microseconds unless it is stuck in the kernel (uninterruptible I/O);
/// for those the reaper keeps trying, ever more rarely.
const KILL_RETRY_MIN: Duration = Duration::from_millis(1);
const KILL_RETRY_MAX: Duration = Duration::from_millis(500);

/// How often the reaper counts the tree's tasks when the call has a process limit. Each count
/// reads `/proc` (about a millisecond on a desktop's few hundred processes); between two, a
/// fork bomb gets this long to grow before all of it is killed. (The program runs at a lower
/// CPU priority than the reaper, see `containment`, so that a bomb's runnable processes do not
/// make this far longer.)
pub(crate) const TASK_COUNT_POLL: Duration = Duration::from_millis(20);

/// Bits of the report's last word, after the program's status.
pub(crate) const ENDED_BY_TASK_LIMIT: u32 = 1;

/// The status reported if the program was somehow never reaped (it cannot happen: the program
/// is the reaper's child, so no ECHILD comes before it): "killed by SIGKILL".
const UNKNOWN_STATUS: c_int = libc::SIGKILL;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Gracefully,
    Now,
}

/// The reaper's whole life after the fork; `program` is its one child so far. With
/// `confinement` (a contained program), the program's process group is signalled first when the
/// tree is stopped, and with its `max_tasks` the tree is killed at once when it has more tasks.
pub(crate) fn run(program: pid_t, report_fd: c_int, owner: pid_t, confinement: Option<Confinement>) -> ! {
    sys::write_all(report_fd, &program.to_ne_bytes());
    sys::close_all_except(report_fd);
    sys::chdir_root();
    // If the owner ignored SIGCHLD, ended children would be reaped by the kernel and their
    // status lost; the default keeps them waitable (the signal itself stays blocked).
    sys::default_signal_action(libc::SIGCHLD);
    sys::set_parent_death_signal(OWNER_CHECK);
    let mut reaper = Reaper {
        me: sys::getpid(),
        owner,
        program,
        program_status: None,
        program_has_own_group: confinement.is_some(),
        max_tasks: confinement.and_then(|confinement| confinement.max_tasks),
        task_limit_hit: false,
    };
    let status = reaper.supervise();
    let flags = if reaper.task_limit_hit { ENDED_BY_TASK_LIMIT } else { 0 };
    let mut last_words = [0u8; 8];
    last_words[..4].copy_from_slice(&status.to_ne_bytes());
    last_words[4..].copy_from_slice(&flags.to_ne_bytes());
    sys::write_all(report_fd, &last_words);
    sys::exit(exit_code(status))
}

struct Reaper {
    me: pid_t,
    owner: pid_t,
    program: pid_t,
    /// The program's raw wait status, once it has been reaped.
    program_status: Option<c_int>,
    /// The program leads a process group of its own (a contained program).
    program_has_own_group: bool,
    /// The most tasks the tree may have at once.
    max_tasks: Option<u32>,
    /// The tree had more than `max_tasks` and was killed for it.
    task_limit_hit: bool,
}

impl Reaper {
    /// Waits for the end or a stop request, then makes sure nothing is left; returns the
    /// program's wait status.
    fn supervise(&mut self) -> c_int {
        // The owner may have died before the parent-death signal was armed.
        let mut stop = self.owner_is_gone().then_some(Stop::Gracefully);
        while self.reap_ended() {
            if stop.is_none() && self.program_status.is_some() {
                // The program ended; whatever it left behind ends with it.
                stop = Some(Stop::Gracefully);
            }
            if stop.is_none() && self.over_task_limit() {
                // A fork bomb gets no grace: SIGKILL before it grows further.
                self.task_limit_hit = true;
                stop = Some(Stop::Now);
            }
            if let Some(stop) = stop {
                self.stop_everything(stop);
                break;
            }
            let poll = if self.max_tasks.is_some() { TASK_COUNT_POLL } else { OWNER_POLL };
            stop = match sys::wait_for_signal(&requests(), poll) {
                Some(STOP_GRACEFULLY) => Some(Stop::Gracefully),
                Some(STOP_NOW) => Some(Stop::Now),
                // SIGCHLD, OWNER_CHECK or the poll interval.
                _ => self.owner_is_gone().then_some(Stop::Gracefully),
            };
        }
        self.program_status.unwrap_or(UNKNOWN_STATUS)
    }

    /// SIGTERM and a grace (unless `stop` is [`Stop::Now`]), then SIGKILL until no descendant
    /// is left.
    fn stop_everything(&mut self, stop: Stop) {
        if stop == Stop::Gracefully {
            self.signal_descendants(&[libc::SIGTERM, libc::SIGCONT]);
            let deadline = sys::monotonic_now() + TERM_GRACE;
            loop {
                if !self.reap_ended() {
                    return;
                }
                let left = deadline.saturating_sub(sys::monotonic_now());
                if left.is_zero() || sys::wait_for_signal(&requests(), left) == Some(STOP_NOW) {
                    break;
                }
            }
        }
        let mut pause = KILL_RETRY_MIN;
        loop {
            self.signal_descendants(&[libc::SIGKILL]);
            if !self.reap_ended() {
                return;
            }
            // A child's end (SIGCHLD) wakes this early.
            sys::wait_for_signal(&requests(), pause);
            pause = (pause * 2).min(KILL_RETRY_MAX);
        }
    }

    fn over_task_limit(&self) -> bool {
        let Some(limit) = self.max_tasks else { return false };
        let me = self.me;
        let over = || procfs::count_subtree_tasks(|stat| stat.ppid == me, limit) > limit;
        // /proc is not read atomically: a tree churning at its limit (one process ends, another
        // starts, during the walk) can be counted past it. A second count at once confirms a
        // real excess; a churn overcount would have to happen twice in a row.
        over() && over()
    }

    fn signal_descendants(&self, signals: &[c_int]) {
        if self.program_has_own_group {
            // All of the group at once, before the walk below can be outrun by forks. The
            // group's id is the program's pid, which stays reserved while any member lives.
            for &signal in signals {
                let _ = sys::kill(-self.program, signal);
            }
        }
        let me = self.me;
        procfs::signal_subtrees(|stat| stat.ppid == me, signals);
    }

    /// Reaps every child that has ended, noting the program's status; false once no child (and
    /// so no descendant) is left.
    fn reap_ended(&mut self) -> bool {
        loop {
            match sys::reap_any_child() {
                Reaped::Child { pid, status } if pid == self.program => self.program_status = Some(status),
                Reaped::Child { .. } => {}
                Reaped::NoneEnded => return true,
                Reaped::NoChildren => return false,
            }
        }
    }

    /// The owner's death hands the reaper to another parent.
    fn owner_is_gone(&self) -> bool {
        sys::getppid() != self.owner
    }
}

/// What the reaper waits for. Built on each wait: a `sigset_t` is plain data on the stack.
fn requests() -> SignalSet {
    SignalSet::of(&[libc::SIGCHLD, STOP_GRACEFULLY, STOP_NOW, OWNER_CHECK])
}

/// The reaper's own exit code, for anyone who looks at it instead of the report (the report is
/// exact): the program's code, or 128 + the signal that ended it.
fn exit_code(status: c_int) -> c_int {
    let status = ExitStatus::from_raw(status);
    status.code().or(status.signal().map(|signal| 128 + signal)).unwrap_or(1)
}
