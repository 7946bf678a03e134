//! The `clawmcp` binary: parse the command line, run the command, map the outcome to an exit
//! status. Everything else lives in the command modules and the library crates.

mod args;
mod client;
mod commands;
mod exit;
mod lifecycle;
mod logging;
mod output;
mod stdio_relay;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    logging::init(cli.verbose);
    exit::report(commands::run(cli.command))
}
