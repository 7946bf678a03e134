//! `clawmcp tools`: the tools bridge (spec 002). Being built; see the `clawmcp-tools` crate.

use std::process::ExitCode;

use crate::args::ToolsArgs;

pub fn run(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("`clawmcp tools` is not built yet")
}
