//! Running programs as children that can always be stopped, with bounded output.
//!
//! Every place clawmcp hands an agent-chosen program to the OS goes through this crate: the
//! node's `system.run` ([`run`]: one argv, run to the end, stdout and stderr captured apart) and
//! the `exec`/`process` tools of `clawmcp tools` ([`Job`]: a shell string or an argv that may run
//! in the background, with a stdin pipe, output read incrementally, and a kill). Three things
//! hold whatever the program does:
//!
//! - **Nothing outlives its call.** Each program runs under a reaper of its own: a process
//!   between the caller and the program that is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
//!   every process the program starts stays its descendant whatever it does (`setsid`, a
//!   daemonising double fork, a parent that exits). When the call ends, however it ends (the
//!   program exits, the time limit runs out, a cancellation, [`Job::kill`], a drop, the owner's
//!   death), the reaper sends SIGTERM (and SIGCONT, so stopped ones can act on it) to every
//!   descendant, waits a short grace, SIGKILLs whatever is left, and exits once it has no child
//!   left. The caller is answered only then, so "exited", "cancelled", "timed out" or "killed"
//!   all mean nothing of the tree is running. A command that starts a background service on
//!   purpose (`nohup server &`) sees it stopped when the command ends: the service must be
//!   started outside the call (a systemd unit, say). If a descendant SIGKILLs the reaper itself,
//!   the owner, which is a subreaper too, adopts what is left and kills it (`tree`).
//! - **Output is bounded.** [`run`] keeps the first [`MAX_CAPTURED_BYTES`] of each stream; a
//!   [`Job`] keeps the last [`JobOptions::output_limit`] bytes of its merged output (a ring, so
//!   a long-running job shows what it is doing now). The rest is read and discarded so the child
//!   never blocks on a full pipe, and the reader learns how much was cut.
//! - **Bytes are not text.** Output is decoded as UTF-8 lossily: a binary or Latin-1 tool still
//!   gives a result, and a character is never split at a cut or between two reads.
//!
//! - **Optionally, contained** ([`containment`], [`run_contained`]): Landlock filesystem rules,
//!   no new privileges, no network, per-process memory and CPU limits, and a limit on the
//!   tree's processes, applied to the program (never to its reaper) before it runs.
//!
//! What is not contained: a process that asks a service outside the tree to start something
//! for it (`systemd-run --user`, `at`, a D-Bus activated service) has not started a descendant;
//! and one that SIGKILLs both its reaper and the owner (it runs as the same user, so it can)
//! leaves the rest to init. Containing those takes a cgroup or a PID namespace.
//!
//! Layout: `containment` prepares and applies the optional sandbox, `tree` is the owner's side of a call's tree (spawn, supervise, stop, backstop),
//! `reaper` the reaper's side, `procfs` finds and signals subtrees through `/proc`, `sys` holds
//! the raw system calls (the crate's only unsafe code), `output` is the one bounded buffer, and
//! `run` and `job` are the two ways to use them.

#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!("clawmcp-process needs Linux: it contains each call with PR_SET_CHILD_SUBREAPER, pidfds and /proc");

pub mod containment;
mod job;
mod output;
mod procfs;
mod reaper;
mod run;
mod sys;
#[cfg(test)]
mod test_support;
mod tree;

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::path::Path;

pub use containment::{Containment, ContainmentError, ContainmentPolicy, ContainmentReport};
pub use job::{Job, JobEnding, JobExit, JobOptions, StdinError};
pub use output::{CapturedStream, OutputChunk};
pub use run::{MAX_CAPTURED_BYTES, ProcessOutcome, run, run_contained};

/// What to launch: no shell, `argv[0]` is the program, the rest passed verbatim; the caller's
/// environment plus `env_overrides`. A caller wanting shell syntax passes `["sh", "-c", line]`.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub argv: &'a [String],
    pub cwd: Option<&'a Path>,
    pub env_overrides: &'a [(String, String)],
    /// Descriptors of the caller's the program gets at fixed numbers (Chromium's DevTools pipe:
    /// it reads fd 3 and writes fd 4); at most [`MAX_PASSED_FDS`], each number 3 or above.
    pub passed_fds: &'a [PassedFd<'a>],
}

/// The most descriptors one [`Launch`] can pass.
pub const MAX_PASSED_FDS: usize = 4;

/// A descriptor handed to the program as number `number`. Only the program gets it: the
/// caller's copy should be close-on-exec (so no other child inherits it), the reaper closes its
/// copy, and the caller closes its own once the launch returns.
#[derive(Debug, Clone, Copy)]
pub struct PassedFd<'a> {
    pub fd: BorrowedFd<'a>,
    pub number: RawFd,
}

/// Why a process produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{program}`: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("cannot wait for `{program}`: {source}")]
    Wait { program: String, source: io::Error },
    /// The cancellation token fired; the program's whole tree has been stopped.
    #[error("cancelled")]
    Cancelled,
    /// A step of the requested containment failed in the program, which therefore never ran.
    #[error("cannot contain the program: {step} failed: {source}")]
    Containment { step: &'static str, source: io::Error },
}
