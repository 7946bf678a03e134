//! Running programs as children that can always be stopped, with bounded output.
//!
//! Every place clawmcp hands an agent-chosen program to the OS goes through this crate: the
//! node's `system.run` ([`run`]: one argv, run to the end, stdout and stderr captured apart) and
//! the `exec`/`process` tools of `clawmcp tools` ([`Job`]: a shell string or an argv that may run
//! in the background, with a stdin pipe, output read incrementally, and a kill). Three things
//! hold whatever the program does:
//!
//! - **Stopping stops everything.** The child leads its own process group (`process_group(0)`),
//!   so a timeout, a cancellation or a kill signals the whole tree it spawned
//!   (`sh -c 'a & b; wait'`), not just the shell. The group gets SIGTERM (and SIGCONT, so
//!   stopped members can act on it), a short grace, then SIGKILL; the caller is answered only
//!   once no member of the group is alive and the direct child is reaped, so "cancelled",
//!   "timed out" or "killed" can be relied on. If the owner vanishes midway instead (a [`run`]
//!   future dropped, a [`Job`] dropped, the runtime shut down), a drop guard sends SIGKILL as a
//!   backstop. A process that deliberately leaves the group (`setsid`, a daemonising double
//!   fork) escapes this, as it escapes any process-group based runner; containing that needs
//!   cgroups.
//! - **Output is bounded.** [`run`] keeps the first [`MAX_CAPTURED_BYTES`] of each stream; a
//!   [`Job`] keeps the last [`JobOptions::output_limit`] bytes of its merged output (a ring, so
//!   a long-running job shows what it is doing now). The rest is read and discarded so the child
//!   never blocks on a full pipe, and the reader learns how much was cut.
//! - **Bytes are not text.** Output is decoded as UTF-8 lossily: a binary or Latin-1 tool still
//!   gives a result, and a character is never split at a cut or between two reads.
//!
//! A normal exit leaves the group alone: a command may start a background service on purpose
//! (`nohup server >log 2>&1 &`), and upstream only kills on timeout.
//!
//! Layout: `group` spawns and stops process groups, `output` is the one bounded buffer, `run`
//! and `job` are the two ways to use them.

mod group;
mod job;
mod output;
mod run;
#[cfg(test)]
mod test_support;

use std::io;
use std::path::Path;

pub use job::{Job, JobEnding, JobExit, JobOptions, StdinError};
pub use output::{CapturedStream, OutputChunk};
pub use run::{MAX_CAPTURED_BYTES, ProcessOutcome, run};

/// What to launch: no shell, `argv[0]` is the program, the rest passed verbatim; the caller's
/// environment plus `env_overrides`. A caller wanting shell syntax passes `["sh", "-c", line]`.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub argv: &'a [String],
    pub cwd: Option<&'a Path>,
    pub env_overrides: &'a [(String, String)],
}

/// Why a process produced no outcome.
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
