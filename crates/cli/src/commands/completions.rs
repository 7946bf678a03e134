//! `clawmcp completions <shell>` and `clawmcp man`: generated from the clap definitions in
//! `crate::args`, so they cannot drift from what the binary accepts.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, ManArgs};
use crate::output;

pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "clawmcp", &mut script);
    output::raw(&script);
    Ok(ExitCode::SUCCESS)
}

pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = args.out_dir else {
        let mut page = Vec::new();
        // `help` is clap's, not ours: no page of its own to point at.
        clap_mangen::Man::new(Cli::command().disable_help_subcommand(true)).render(&mut page)?;
        output::raw(&page);
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Built first so that every subcommand has its full name (`clawmcp-node-status`) and the
    // global options it accepts; `help` is clap's, not ours, and gets no page.
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    write_pages(&command, &dir)?;
    Ok(ExitCode::SUCCESS)
}

/// One page for `command` and one for each of its subcommands, depth first; prints each path.
fn write_pages(command: &clap::Command, dir: &Path) -> anyhow::Result<()> {
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let path = clap_mangen::Man::new(command.clone())
        .generate_to(dir)
        .with_context(|| format!("cannot write a man page into {}", dir.display()))?;
    output::data(&path.display().to_string());
    Ok(())
}
