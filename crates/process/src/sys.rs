//! The raw system calls behind the reaper, and the `pre_exec` hook that forks it.
//!
//! This is the crate's only unsafe code, for two reasons. `pre_exec` is unsafe by contract. And
//! the reaper is a fork of a multi-threaded process, so until it exits it may only make
//! async-signal-safe calls: another thread of the owner may have held the allocator's or any
//! other lock at the moment of the fork, and the reaper's copy of that lock stays held forever.
//! That rules out allocation, locks, std's I/O types and nix's wrappers that build `CString`
//! paths or `Dir` streams. So these are thin wrappers over system calls (glibc's wrappers of the
//! calls used here are plain system calls; `fork`, which runs atfork handlers and takes malloc's
//! locks, is replaced by a raw `clone`), each using only buffers its caller owns, on the stack.
//!
//! Every function outside [`spawn_through_reaper`] is safe to call from any process: none has a
//! precondition beyond the types it takes.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::ops::ControlFlow;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;
use std::time::Duration;

use nix::libc::{self, c_int, pid_t};

use crate::containment::ChildPlan;

/// Registers the hook that splits the child std forks in two: the process std goes on to exec
/// as the program, and its parent, which becomes the call's reaper ([`crate::reaper::run`]) and
/// never returns. `report_fd` is the write end of the reaper's report pipe; `owner` is the pid
/// of the process spawning (the reaper's parent).
///
/// `contained`, when given, is what the program applies to itself before it is executed
/// ([`crate::containment`]); its `max_tasks` is also the reaper's to watch.
///
/// `passed` is what the program gets at fixed descriptor numbers ([`crate::PassedFd`]).
pub(crate) fn spawn_through_reaper(
    command: &mut tokio::process::Command,
    report_fd: c_int,
    owner: pid_t,
    contained: Option<ChildPlan>,
    passed: FdMap,
) {
    // SAFETY: `pre_exec` requires the closure to be safe to run between fork and exec in the
    // child of a multi-threaded process. `split_off_program` makes only async-signal-safe system
    // calls on stack data (see the module doc), and so does `ChildPlan::apply` (plain data,
    // copied into the closure before the fork); it returns only in the process that std then
    // execs, and in the reaper it never returns (the reaper ends in `_exit`).
    unsafe {
        command.pre_exec(move || split_off_program(report_fd, owner, contained.as_ref(), &passed));
    }
}

fn split_off_program(report_fd: c_int, owner: pid_t, contained: Option<&ChildPlan>, passed: &FdMap) -> io::Result<()> {
    // First of all: from here on no signal may kill the reaper by its default action, and a stop
    // request from the owner must wait in the queue until the reaper reads it.
    let inherited_mask = block_all_signals()?;
    set_child_subreaper()?;
    // SAFETY: a raw clone with only SIGCHLD as flags is fork(2) without glibc's atfork handlers
    // and malloc locking, which could deadlock here (see the module doc). No pointer is passed.
    // The new process shares nothing with this one and goes on with async-signal-safe calls
    // only until std execs it.
    let forked = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) };
    match forked {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // The program: it must not hold the reaper's report pipe (it would never see EOF
            // while the program ran), and it starts with the signal mask std gave us.
            close(report_fd);
            // Contained before anything of the program runs, and only the program: the reaper
            // must stay free to read /proc and to signal and reap the whole tree.
            if let Some(plan) = contained {
                plan.apply()?;
            }
            // After the containment, whose failure report may sit on one of these numbers.
            passed.install()?;
            set_signal_mask(&inherited_mask)?;
            Ok(())
        }
        // A pid always fits a pid_t; the kernel returns one as a long.
        program => crate::reaper::run(program as pid_t, report_fd, owner, contained.map(ChildPlan::confinement)),
    }
}

/// Descriptors to give the program at fixed numbers: plain integers in a fixed array, so it is
/// copied into the `pre_exec` closure and used after the fork without allocating.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FdMap {
    /// (the caller's descriptor, the number the program gets it as)
    pairs: [(c_int, c_int); crate::MAX_PASSED_FDS],
    len: usize,
}

impl FdMap {
    /// The map of `passed`, or why it cannot be passed: more than [`crate::MAX_PASSED_FDS`], a
    /// number below 3 (stdio is the launch's own) or one asked for twice.
    pub(crate) fn of(passed: &[crate::PassedFd<'_>]) -> io::Result<FdMap> {
        let invalid = |why: String| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        if passed.len() > crate::MAX_PASSED_FDS {
            return invalid(format!("at most {} descriptors can be passed", crate::MAX_PASSED_FDS));
        }
        let mut map = FdMap::default();
        for (at, fd) in passed.iter().enumerate() {
            if fd.number < 3 {
                return invalid(format!("descriptor number {} is stdio's, not one to pass", fd.number));
            }
            if passed[..at].iter().any(|earlier| earlier.number == fd.number) {
                return invalid(format!("descriptor number {} is passed twice", fd.number));
            }
            map.pairs[at] = (fd.fd.as_raw_fd(), fd.number);
        }
        map.len = passed.len();
        Ok(map)
    }

    /// The highest number the program gets (2 when there is none).
    pub(crate) fn highest(&self) -> c_int {
        self.pairs[..self.len].iter().map(|&(_, number)| number).max().unwrap_or(2)
    }

    /// In the program, between fork and exec: each descriptor at its number, inherited across the
    /// exec. Every source is first copied above the highest number, so a source that sits on
    /// another's number is not closed by that one's `dup2` before it is copied itself.
    fn install(&self) -> io::Result<()> {
        let mut moved = [-1 as c_int; crate::MAX_PASSED_FDS];
        for (at, &(source, _)) in self.pairs[..self.len].iter().enumerate() {
            // SAFETY: fcntl on integers; the copy is close-on-exec, so it does not outlive the exec.
            moved[at] = unsafe { libc::fcntl(source, libc::F_DUPFD_CLOEXEC, self.highest() + 1) };
            if moved[at] < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        for (at, &(_, number)) in self.pairs[..self.len].iter().enumerate() {
            // SAFETY: dup2 on integers; it clears close-on-exec on `number`, the one to keep.
            if unsafe { libc::dup2(moved[at], number) } < 0 {
                return Err(io::Error::last_os_error());
            }
            close(moved[at]);
        }
        Ok(())
    }
}

/// Makes sure every descriptor number from 3 to `highest` is open in this process (on
/// /dev/null, close-on-exec, kept for the process's life where one had to be opened), so that
/// the descriptors std's `spawn` opens for itself (the pipe that reports a failed exec, stdio's
/// /dev/null) cannot get a number [`FdMap::install`] overwrites in the program. Never replaces a
/// descriptor that is open: `open` takes the lowest free number, and one above `highest` is closed
/// again at once.
pub(crate) fn occupy_low_numbers(highest: c_int) -> io::Result<()> {
    loop {
        // SAFETY: a static NUL-terminated path.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        if fd > highest {
            close(fd);
            return Ok(());
        }
        // Below or at `highest`: left open on purpose, for the life of the process.
    }
}

/// A set of signals.
pub(crate) struct SignalSet(libc::sigset_t);

impl SignalSet {
    pub(crate) fn of(signals: &[c_int]) -> SignalSet {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initialises the set it is given, here a live local; sigaddset then
        // only writes into it (an invalid signal number is an error return, not UB).
        unsafe {
            libc::sigemptyset(set.as_mut_ptr());
            for &signal in signals {
                libc::sigaddset(set.as_mut_ptr(), signal);
            }
            SignalSet(set.assume_init())
        }
    }
}

/// Blocks every signal that can be blocked; returns the mask that was in force.
fn block_all_signals() -> io::Result<libc::sigset_t> {
    let mut all = MaybeUninit::<libc::sigset_t>::uninit();
    let mut previous = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initialises `all`; sigprocmask reads `all` and, on success, initialises
    // `previous`. Both are live locals.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        if libc::sigprocmask(libc::SIG_BLOCK, all.as_ptr(), previous.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(previous.assume_init())
    }
}

fn set_signal_mask(mask: &libc::sigset_t) -> io::Result<()> {
    // SAFETY: reads the set behind a live reference; no old mask is asked for.
    match unsafe { libc::sigprocmask(libc::SIG_SETMASK, mask, ptr::null_mut()) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Waits up to `timeout` for one of `set` (which must be blocked) and takes it from the queue.
/// `None` on a timeout or an interruption.
pub(crate) fn wait_for_signal(set: &SignalSet, timeout: Duration) -> Option<c_int> {
    let timeout = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    // SAFETY: reads the set and the timespec, both live; a null siginfo pointer is allowed.
    let signal = unsafe { libc::sigtimedwait(&set.0, ptr::null_mut(), &timeout) };
    (signal > 0).then_some(signal)
}

/// Puts `signal` back to its default action (for SIGCHLD: children stay waitable).
pub(crate) fn default_signal_action(signal: c_int) {
    let mut action = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a zeroed sigaction is a valid one (empty mask, no flags) once its handler is set
    // to SIG_DFL; sigaction reads it while it is live and is asked for no old action.
    unsafe {
        (*action.as_mut_ptr()).sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, action.as_ptr(), ptr::null_mut());
    }
}

/// Makes the calling process adopt the orphans among its descendants (instead of init).
pub(crate) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer argument; no memory is involved.
    match unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Asks the kernel to send `signal` when the parent exits (or, on Linux, the parent *thread*).
pub(crate) fn set_parent_death_signal(signal: c_int) {
    // SAFETY: PR_SET_PDEATHSIG takes an integer argument; no memory is involved.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) };
}

pub(crate) fn getpid() -> pid_t {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getpid() }
}

pub(crate) fn getppid() -> pid_t {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getppid() }
}

/// What one non-blocking `waitpid(-1)` found.
pub(crate) enum Reaped {
    /// This child ended and has been reaped; its raw wait status.
    Child { pid: pid_t, status: c_int },
    /// Children remain, none has ended yet.
    NoneEnded,
    /// No child is left.
    NoChildren,
}

pub(crate) fn reap_any_child() -> Reaped {
    loop {
        let mut status: c_int = 0;
        // SAFETY: writes the status into a live local.
        match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
            0 => return Reaped::NoneEnded,
            -1 if last_errno() == libc::EINTR => {}
            -1 if last_errno() == libc::ECHILD => return Reaped::NoChildren,
            // Any other error would be ours (invalid options): treat it as nothing to reap yet.
            -1 => return Reaped::NoneEnded,
            pid => return Reaped::Child { pid, status },
        }
    }
}

/// Sends `signal` to `pid` (plain kill(2)).
pub(crate) fn kill(pid: pid_t, signal: c_int) -> io::Result<()> {
    // SAFETY: integers only.
    match unsafe { libc::kill(pid, signal) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A process pinned by a pidfd: signals sent through it reach that process or nobody, even if
/// its pid is reused meanwhile.
pub(crate) struct PidFd(c_int);

impl PidFd {
    /// ESRCH if the process is gone; ENOSYS on kernels before 5.3.
    pub(crate) fn open(pid: pid_t) -> io::Result<PidFd> {
        // SAFETY: integers only; the returned descriptor is owned by the PidFd.
        match unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } {
            -1 => Err(io::Error::last_os_error()),
            fd => Ok(PidFd(fd as c_int)),
        }
    }

    pub(crate) fn send(&self, signal: c_int) {
        // SAFETY: a descriptor we own, a null siginfo (the kernel fills it as kill(2) would).
        unsafe { libc::syscall(libc::SYS_pidfd_send_signal, self.0, signal, ptr::null::<libc::siginfo_t>(), 0) };
    }
}

impl Drop for PidFd {
    fn drop(&mut self) {
        close(self.0);
    }
}

/// A close-on-exec copy of `fd` numbered 3 or above, never a stdio number.
pub(crate) fn duplicate_above_stdio(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a live descriptor (the borrow keeps it open) creates a new one
    // that nothing else owns, so the OwnedFd made of it is its only owner.
    match unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) } {
        -1 => Err(io::Error::last_os_error()),
        copy => Ok(unsafe { OwnedFd::from_raw_fd(copy) }),
    }
}

pub(crate) fn last_errno() -> c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub(crate) fn close(fd: c_int) {
    // SAFETY: closing a descriptor number has no memory effects; callers pass ones they own.
    unsafe { libc::close(fd) };
}

/// Closes every descriptor except `keep`.
pub(crate) fn close_all_except(keep: c_int) {
    let last = libc::c_uint::MAX;
    let keep_u = keep as libc::c_uint;
    // SAFETY: close_range takes integers only.
    let ranges_closed = unsafe {
        (keep_u == 0 || libc::syscall(libc::SYS_close_range, 0, keep_u - 1, 0) == 0)
            && libc::syscall(libc::SYS_close_range, keep_u + 1, last, 0) == 0
    };
    if !ranges_closed {
        // Kernels before 5.9: close what /proc/self/fd lists instead.
        if let Some(dir) = Directory::open(c"/proc/self/fd") {
            let mut buffer = [0u8; 2048];
            dir.for_each_name(&mut buffer, |name| {
                if let Some(fd) = parse_decimal(name).and_then(|fd| c_int::try_from(fd).ok())
                    && fd != keep
                    && fd != dir.0
                {
                    close(fd);
                }
            });
        }
    }
}

pub(crate) fn chdir_root() {
    // SAFETY: a static NUL-terminated path.
    unsafe { libc::chdir(c"/".as_ptr()) };
}

/// Writes all of `bytes` (a few bytes to a pipe: one write in practice).
pub(crate) fn write_all(fd: c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: reads `bytes.len()` bytes from a live slice.
        match unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) } {
            -1 if last_errno() == libc::EINTR => {}
            written if written > 0 => bytes = &bytes[written as usize..],
            _ => return,
        }
    }
}

/// Reads `path` into `buffer` (one read: enough for the small /proc files read here); the
/// number of bytes read, or `None` if it cannot be opened or read.
pub(crate) fn read_small_file(path: &CStr, buffer: &mut [u8]) -> Option<usize> {
    // SAFETY: a NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: writes at most `buffer.len()` bytes into a live slice.
    let read = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
    close(fd);
    usize::try_from(read).ok()
}

/// A directory read with getdents64 (readdir may allocate).
pub(crate) struct Directory(c_int);

impl Directory {
    pub(crate) fn open(path: &CStr) -> Option<Directory> {
        // SAFETY: a NUL-terminated path that outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        (fd >= 0).then_some(Directory(fd))
    }

    /// Calls `visit` with every entry's name (without its NUL), reading through `buffer`.
    pub(crate) fn for_each_name(&self, buffer: &mut [u8], mut visit: impl FnMut(&[u8])) {
        self.for_each_name_until(buffer, |name| {
            visit(name);
            ControlFlow::Continue(())
        });
    }

    /// [`Directory::for_each_name`] until `visit` breaks.
    pub(crate) fn for_each_name_until(&self, buffer: &mut [u8], mut visit: impl FnMut(&[u8]) -> ControlFlow<()>) {
        loop {
            // SAFETY: the kernel writes at most `buffer.len()` bytes into a live slice.
            let filled = unsafe { libc::syscall(libc::SYS_getdents64, self.0, buffer.as_mut_ptr(), buffer.len()) };
            let Ok(filled @ 1..) = usize::try_from(filled) else { return };
            let mut offset = 0;
            // Each record: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), NUL-terminated name.
            while offset + 19 < filled {
                let record_len = usize::from(u16::from_ne_bytes([buffer[offset + 16], buffer[offset + 17]]));
                if record_len == 0 || offset + record_len > filled {
                    return;
                }
                let name = &buffer[offset + 19..offset + record_len];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                if visit(name).is_break() {
                    return;
                }
                offset += record_len;
            }
        }
    }
}

impl Drop for Directory {
    fn drop(&mut self) {
        close(self.0);
    }
}

/// The monotonic clock (the vDSO: no system call, no lock).
pub(crate) fn monotonic_now() -> Duration {
    let mut now = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: clock_gettime initialises the live local on success, which CLOCK_MONOTONIC always is.
    let now = unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, now.as_mut_ptr());
        now.assume_init()
    };
    Duration::new(now.tv_sec.try_into().unwrap_or(0), now.tv_nsec.try_into().unwrap_or(0))
}

/// Ends the process at once: no atexit handlers, no destructors, no flushing (all of them may
/// take locks that a fork left held).
pub(crate) fn exit(code: c_int) -> ! {
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(code) }
}

/// An unsigned decimal (a pid or a descriptor number) from ASCII digits only.
pub(crate) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &digit| digit.is_ascii_digit().then(|| value * 10 + u64::from(digit - b'0')))
}

/// `value` in decimal ASCII, written at the end of `digits` (no allocation: usable between fork
/// and exec).
pub(crate) fn format_decimal(value: u32, digits: &mut [u8; 10]) -> &[u8] {
    let mut start = digits.len();
    let mut value = value;
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    &digits[start..]
}

/// `parts` one after another at the start of `buffer`, which the caller sizes for them (no
/// allocation: usable between fork and exec).
pub(crate) fn concat_into<'b>(parts: &[&[u8]], buffer: &'b mut [u8]) -> &'b [u8] {
    let mut len = 0;
    for part in parts {
        buffer[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    &buffer[..len]
}

// ---- Containment (`crate::containment`): the calls the program makes on itself before exec,
// and the probes that find out which of them this kernel allows. All of them are plain system
// calls on integers or caller-owned buffers, so they are async-signal-safe.

/// Makes the caller the leader of a process group of its own.
pub(crate) fn set_own_process_group() -> io::Result<()> {
    // SAFETY: integers only.
    match unsafe { libc::setpgid(0, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// `unshare(2)` with `flags` (`CLONE_NEWUSER`, `CLONE_NEWNET`); the caller is single-threaded.
pub(crate) fn unshare(flags: c_int) -> io::Result<()> {
    // SAFETY: integers only.
    match unsafe { libc::unshare(flags) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Writes `bytes` to the file at `path` in one write (a `/proc/self/*_map` file must be
/// written in one go).
pub(crate) fn write_small_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: reads `bytes.len()` bytes from a live slice.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let error = io::Error::last_os_error();
    close(fd);
    match usize::try_from(written) {
        Ok(written) if written == bytes.len() => Ok(()),
        Ok(_) => Err(io::Error::from_raw_os_error(libc::EIO)),
        Err(_) => Err(error),
    }
}

/// A resource limit: `(soft, hard)`, `RLIM_INFINITY` for none.
pub(crate) fn resource_limit(resource: c_int) -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: writes into a live local. The resource number's type differs between libcs.
    match unsafe { libc::getrlimit(resource as _, &mut limit) } {
        0 => Ok((limit.rlim_cur, limit.rlim_max)),
        _ => Err(io::Error::last_os_error()),
    }
}

pub(crate) fn set_resource_limit(resource: c_int, soft: u64, hard: u64) -> io::Result<()> {
    let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
    // SAFETY: reads a live local.
    match unsafe { libc::setrlimit(resource as _, &limit) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Gives the calling thread (the program, single-threaded between fork and exec) the lowest
/// CPU priority, nice 19, inherited by everything it starts. Lowering one's own priority is
/// always allowed.
pub(crate) fn set_lowest_priority() -> io::Result<()> {
    // SAFETY: integer arguments only.
    match unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, LOWEST_PRIORITY) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The nice value of [`set_lowest_priority`].
pub(crate) const LOWEST_PRIORITY: c_int = 19;

/// `PR_SET_NO_NEW_PRIVS`: from here on, exec never grants privileges (setuid bits, file
/// capabilities); inherited by every descendant, and Landlock needs it.
pub(crate) fn set_no_new_privileges() -> io::Result<()> {
    // SAFETY: integer arguments only.
    match unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// `landlock_restrict_self(2)` with a ruleset the owner built (see `containment`).
pub(crate) fn landlock_restrict_self(ruleset: c_int) -> io::Result<()> {
    // SAFETY: integers only; a bad descriptor is an error return.
    match unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The Landlock ABI version the kernel offers, or the errno that says why there is none
/// (ENOSYS: not built in; EOPNOTSUPP: built in but not enabled at boot).
pub(crate) fn landlock_abi_version() -> Result<i32, c_int> {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with the VERSION flag the kernel reads no attribute (null, size 0).
    let version = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, ptr::null::<u8>(), 0usize, LANDLOCK_CREATE_RULESET_VERSION)
    };
    match i32::try_from(version) {
        Ok(version) if version > 0 => Ok(version),
        _ => Err(last_errno()),
    }
}

pub(crate) fn geteuid() -> libc::uid_t {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() }
}

pub(crate) fn getegid() -> libc::gid_t {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getegid() }
}

/// Runs `trial` in a throwaway child (a raw clone, as for the reaper) and reports how it went:
/// the kernel's answer to "may a process of ours do this?" without doing it to ourselves
/// (`unshare` of a user namespace needs a single-threaded caller, which the owner is not).
/// `trial` must be async-signal-safe; its error's errno becomes the child's exit code.
pub(crate) fn try_in_child(trial: &dyn Fn() -> io::Result<()>) -> io::Result<()> {
    // SAFETY: as in `split_off_program`: fork(2) without atfork handlers; the child only runs
    // `trial` (async-signal-safe by contract) and `_exit`s.
    let forked = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) };
    let child = match forked {
        -1 => return Err(io::Error::last_os_error()),
        0 => exit(match trial() {
            Ok(()) => 0,
            Err(error) => error.raw_os_error().filter(|&errno| (1..=255).contains(&errno)).unwrap_or(libc::EINVAL),
        }),
        child => child as pid_t,
    };
    let mut status: c_int = 0;
    loop {
        // SAFETY: writes the status into a live local; `child` is ours and not yet reaped.
        match unsafe { libc::waitpid(child, &mut status, 0) } {
            -1 if last_errno() == libc::EINTR => {}
            -1 => return Err(io::Error::last_os_error()),
            _ => break,
        }
    }
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    } else {
        Err(io::Error::other("the probe process was killed"))
    }
}
