//! One module per subcommand, each exposing `run`. Command modules get resolved values, never
//! raw clap types beyond their own `*Args`.

pub mod approvals;
pub mod approvals_policy;
pub mod call;
pub mod call_files;
pub mod completions;
pub mod doctor;
pub mod models;
pub mod node;
pub mod node_app;
pub mod node_service;
pub mod node_status;
pub mod serve;
pub mod settings;
pub mod token;
pub mod tools;

use std::process::ExitCode;
use std::time::Duration;

use clawmcp_node::settings::DataDir;

use crate::args::{Command, DataDirArg, EndpointArgs};
use crate::client::{NodeClient, TokenSource};
use crate::exit::UsageError;

/// Runs the chosen subcommand. `matches` are the parsed command line, for the commands that
/// need to know which flags were given rather than their values.
pub fn run(command: Command, matches: &clap::ArgMatches) -> anyhow::Result<ExitCode> {
    match command {
        Command::Node(args) => node::run(args, matches.subcommand_matches("node").expect("the node subcommand")),
        Command::Call(args) => call::run(args),
        Command::Token(args) => token::run(args),
        Command::Approvals(args) => approvals::run(args),
        Command::Settings(args) => settings::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Models(args) => models::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Tools(args) => tools::run(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}

/// The data directory from `--data-dir`, `$CLAWMCP_DATA_DIR` or the platform default.
pub fn data_dir(arg: &DataDirArg) -> anyhow::Result<DataDir> {
    Ok(DataDir::resolve(arg.data_dir.clone())?)
}

/// A client for the running node, with its token resolved.
pub fn node_client(args: &EndpointArgs) -> anyhow::Result<(NodeClient, TokenSource)> {
    let client = NodeClient::new(args.url.as_deref(), args.port, Duration::from_millis(args.timeout_ms))
        .map_err(|e| UsageError(e.to_string()))?;
    let token_file = data_dir(&args.data_dir)?.token_path();
    Ok(client.with_token(args.token.clone(), &token_file))
}

/// A single-threaded runtime for the one-shot client commands.
pub fn client_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// Cancels `shutdown` when the process is asked to stop, first printing `announce` if given.
/// Must be called inside a Tokio runtime.
pub fn stop_on_signal(shutdown: tokio_util::sync::CancellationToken, announce: Option<&'static str>) {
    tokio::spawn(async move {
        termination_signal().await;
        if let Some(text) = announce {
            crate::output::note(text);
        }
        shutdown.cancel();
    });
}

/// Resolves when the process is asked to stop (SIGINT or SIGTERM; Ctrl-C elsewhere).
async fn termination_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
