//! `clawmcp serve`: the channel bridge (spec 003). Being built; see the `clawmcp-serve` crate.

use std::process::ExitCode;

use crate::args::ServeArgs;

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`clawmcp serve` is not built yet")
}
