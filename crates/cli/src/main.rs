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

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    // The matches are kept beside the parsed values: `clawmcp node service install` writes the
    // node flags that were given (not their defaults) into the unit, which only they record.
    let matches = args::Cli::command().get_matches();
    let cli = args::Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    if let Err(error) = logging::init(&cli.log) {
        return exit::report(Err(error));
    }
    exit::report(commands::run(cli.command, &matches))
}
