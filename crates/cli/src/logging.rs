//! Logging to stderr (or `--log-file`) only: stdout carries data (and, on the stdio surfaces,
//! only JSON-RPC). Under systemd, stderr is the journal.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::Context;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;

use crate::args::{LogArgs, LogFormat};

/// `-v` raises the level, `-q` lowers it to warnings and errors; `RUST_LOG` wins when set. The
/// log file is opened here, before the command runs, so a file that cannot be used is a startup
/// error rather than a silent loss of every log line.
pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    let default = match (args.quiet, args.verbose) {
        (true, _) => "warn",
        (false, 0) => "warn,clawmcp=info,clawmcp_node_gateway=info",
        (false, 1) => "info,clawmcp=debug,clawmcp_http=debug,clawmcp_node=debug,clawmcp_mcp=debug",
        (false, _) => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let (writer, ansi) = match &args.log_file {
        Some(path) => {
            let file = clawmcp_fs::open_private_append(path)
                .with_context(|| format!("cannot log to {} (--log-file)", path.display()))?;
            // Each event is formatted whole and written with one write(2) on an O_APPEND
            // descriptor, so lines from concurrent threads never interleave.
            (BoxMakeWriter::new(Arc::new(file)), false)
        }
        None => (BoxMakeWriter::new(std::io::stderr), std::io::stderr().is_terminal()),
    };
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi).with_target(false);
    // A subscriber already set (only in tests that call this twice) keeps the first.
    let _ = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    Ok(())
}
