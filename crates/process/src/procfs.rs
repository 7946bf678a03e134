//! The process table as `/proc` shows it, read without allocating (the reaper uses it after a
//! fork; see `sys`), and the one way a subtree of it is signalled.
//!
//! A subtree is found from its top down: every process whose parent is a top process or already
//! found belongs to it. `/proc` lists processes in pid order, and a child may have a lower pid
//! than its parent (pids wrap), so the table is read again until a pass finds nothing new.

use std::ffi::CStr;
use std::ops::ControlFlow;

use nix::libc::{c_int, pid_t};

use crate::sys::{self, Directory, PidFd};

/// The fields of `/proc/<pid>/stat` this crate uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub pid: pid_t,
    /// `R`, `S`, `D`, `T` (stopped), `Z` (zombie), ...
    pub state: u8,
    pub ppid: pid_t,
    /// Its threads (1 for a single-threaded process).
    pub threads: u32,
    /// Clock ticks after boot. With the pid it names one process: a pid is never reused within
    /// a tick, so a process seen twice with the same start time is the same process.
    pub start_time: u64,
}

impl ProcStat {
    /// A zombie (or a process being torn down) has finished running: it cannot act or fork.
    pub(crate) fn has_ended(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Bytes enough for any `/proc/<pid>/stat` line (they are a few hundred).
const STAT_BUFFER: usize = 1024;

/// The stat of `pid`, or `None` if there is no such process.
pub(crate) fn stat_of(pid: pid_t) -> Option<ProcStat> {
    let mut path = [0u8; 32];
    let path = stat_path(pid, &mut path)?;
    let mut buffer = [0u8; STAT_BUFFER];
    let read = sys::read_small_file(path, &mut buffer)?;
    parse_stat(&buffer[..read])
}

/// `/proc/<pid>/stat` as a C string in `buffer`.
fn stat_path(pid: pid_t, buffer: &mut [u8; 32]) -> Option<&CStr> {
    let mut digits = [0u8; 10];
    let pid = sys::format_decimal(u32::try_from(pid).ok()?, &mut digits);
    CStr::from_bytes_with_nul(sys::concat_into(&[b"/proc/", pid, b"/stat\0"], buffer)).ok()
}

/// Parses `pid (comm) state ppid pgrp ... starttime ...`. The command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
pub(crate) fn parse_stat(line: &[u8]) -> Option<ProcStat> {
    let name_start = line.iter().position(|&b| b == b'(')?;
    let name_end = line.iter().rposition(|&b| b == b')')?;
    let pid = sys::parse_decimal(line.get(..name_start)?.trim_ascii()).and_then(|pid| pid_t::try_from(pid).ok())?;
    let mut fields = line.get(name_end + 1..)?.split(|&b| b == b' ').filter(|field| !field.is_empty());
    let state = *fields.next()?.first()?;
    let ppid = pid_t::try_from(sys::parse_decimal(fields.next()?)?).ok()?;
    // num_threads is field 20 of the line, the 18th after the name; ppid was the 2nd.
    let threads = u32::try_from(sys::parse_decimal(fields.nth(15)?)?).ok()?;
    // starttime is field 22, the 20th after the name.
    let start_time = sys::parse_decimal(fields.nth(1)?.trim_ascii())?;
    Some(ProcStat { pid, state, ppid, threads, start_time })
}

/// Calls `visit` with the stat of every process in `/proc`; false if `/proc` cannot be read.
pub(crate) fn for_each_process(mut visit: impl FnMut(&ProcStat)) -> bool {
    for_each_process_until(|stat| {
        visit(stat);
        ControlFlow::Continue(())
    })
}

/// [`for_each_process`] until `visit` breaks (the rest of `/proc` is not even read).
pub(crate) fn for_each_process_until(mut visit: impl FnMut(&ProcStat) -> ControlFlow<()>) -> bool {
    let Some(proc) = Directory::open(c"/proc") else { return false };
    let mut entries = [0u8; 4096];
    proc.for_each_name_until(&mut entries, |name| {
        match sys::parse_decimal(name).and_then(|pid| pid_t::try_from(pid).ok()).and_then(stat_of) {
            Some(stat) => visit(&stat),
            None => ControlFlow::Continue(()),
        }
    });
    true
}

/// How many processes one search remembers. A bigger subtree is signalled in waves: what is
/// found is signalled at once, and the rest is found in the next search, once what it hung
/// from has died.
const MAX_FOUND: usize = 2048;

/// Sends `signals` (in order) to every live process that `is_top` accepts and to every
/// descendant of those; returns how many processes were signalled.
///
/// Each process is signalled through a pidfd opened after it was found and checked to be the
/// same process (same pid, same start time) before the signal, so a pid reused meanwhile by an
/// unrelated process is never hit.
pub(crate) fn signal_subtrees(mut is_top: impl FnMut(&ProcStat) -> bool, signals: &[c_int]) -> usize {
    let mut found = PidSet::default();
    let mut signalled = 0;
    loop {
        let mut grew = false;
        for_each_process(|stat| {
            if stat.has_ended() || found.contains(stat.pid) || !(is_top(stat) || found.contains(stat.ppid)) {
                return;
            }
            signal_exactly(stat, signals);
            signalled += 1;
            grew |= found.insert(stat.pid);
        });
        if !grew {
            return signalled;
        }
    }
}

/// Counts the tasks (threads) of every live process that `is_top` accepts and of their
/// descendants, stopping the moment the count passes `limit`: a tree that grows fast (a fork
/// bomb) is caught after reading a bounded part of `/proc`, however big it has become, and the
/// fixed-size table of found processes ([`MAX_FOUND`]) is never the bound while `limit` stays
/// under it.
pub(crate) fn count_subtree_tasks(mut is_top: impl FnMut(&ProcStat) -> bool, limit: u32) -> u32 {
    let mut found = PidSet::default();
    let mut tasks: u32 = 0;
    loop {
        let mut grew = false;
        for_each_process_until(|stat| {
            if stat.has_ended() || found.contains(stat.pid) || !(is_top(stat) || found.contains(stat.ppid)) {
                return ControlFlow::Continue(());
            }
            tasks = tasks.saturating_add(stat.threads.max(1));
            grew |= found.insert(stat.pid);
            if tasks > limit { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        if !grew || tasks > limit {
            return tasks;
        }
    }
}

/// Signals the process `stat` describes, and no other that took its pid since.
fn signal_exactly(stat: &ProcStat, signals: &[c_int]) {
    match PidFd::open(stat.pid) {
        Ok(pinned) => {
            if stat_of(stat.pid).is_some_and(|now| now.start_time == stat.start_time) {
                for &signal in signals {
                    pinned.send(signal);
                }
            }
        }
        // Kernels before 5.3 have no pidfd: kill(2) by pid, right after reading the stat.
        Err(error) if error.raw_os_error() == Some(nix::libc::ENOSYS) => {
            for &signal in signals {
                let _ = sys::kill(stat.pid, signal);
            }
        }
        // Gone already.
        Err(_) => {}
    }
}

/// A fixed-capacity set of pids (no allocation).
struct PidSet {
    pids: [pid_t; MAX_FOUND],
    len: usize,
}

impl Default for PidSet {
    fn default() -> Self {
        PidSet { pids: [0; MAX_FOUND], len: 0 }
    }
}

impl PidSet {
    fn contains(&self, pid: pid_t) -> bool {
        self.pids[..self.len].contains(&pid)
    }

    /// False when full.
    fn insert(&mut self, pid: pid_t) -> bool {
        if self.len == MAX_FOUND {
            return false;
        }
        self.pids[self.len] = pid;
        self.len += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_paths_at_the_edges_of_a_pid() {
        let mut buffer = [0u8; 32];
        assert_eq!(stat_path(0, &mut buffer).unwrap().to_bytes(), b"/proc/0/stat");
        assert_eq!(stat_path(i32::MAX, &mut buffer).unwrap().to_bytes(), b"/proc/2147483647/stat");
        assert_eq!(stat_path(-1, &mut buffer), None);
        let mut digits = [0u8; 10];
        assert_eq!(sys::format_decimal(u32::MAX, &mut digits), b"4294967295");
    }

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        let line = b"42 (a) b (c)) S 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 12345 1000 200\n";
        assert_eq!(parse_stat(line), Some(ProcStat { pid: 42, state: b'S', ppid: 1, threads: 1, start_time: 12345 }));
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_stat(b"42 (short) S 1 77"), None, "a cut line has no start time");
    }

    #[test]
    fn the_own_stat_is_read() {
        let me = stat_of(sys::getpid()).expect("/proc/self is readable");
        assert_eq!((me.pid, me.ppid), (sys::getpid(), sys::getppid()));
        assert!(!me.has_ended());
        assert_eq!(stat_of(-1), None);
    }

    #[test]
    fn a_full_pid_set_refuses_more() {
        let mut set = PidSet::default();
        assert!((1..=MAX_FOUND as pid_t).all(|pid| set.insert(pid)));
        assert!(!set.insert(0));
        assert!(set.contains(MAX_FOUND as pid_t) && !set.contains(0));
    }
}
