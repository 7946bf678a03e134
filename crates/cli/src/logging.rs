//! Logging to stderr only: stdout carries data (and, on the stdio surfaces, only JSON-RPC).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// `-v` raises the level; `RUST_LOG` wins when set.
pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 => "warn,clawmcp=info,clawmcp_node_gateway=info",
        1 => "info,clawmcp=debug,clawmcp_http=debug,clawmcp_node=debug,clawmcp_mcp=debug",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}
