//! `clawmcp serve`: the channel bridge (`docs/serve.md`), a drop-in for `openclaw mcp serve`.
//!
//! Wiring only: the bridge lives in `clawmcp-serve`. Flags map one to one onto upstream's; the
//! gateway is resolved from them, `OPENCLAW_*` and `openclaw.json` inside the crate. The device
//! key is kept in `<data dir>/serve/` (the clawmcp data dir, `CLAWMCP_DATA_DIR` or
//! `~/.config/clawmcp`), apart from any node key, because a key paired as an operator would need
//! manual approval to become a node. EOF on stdin, SIGINT/SIGTERM and the death of the parent
//! process end the session cleanly (`crate::lifecycle`).

use std::process::ExitCode;

use clawmcp_serve::{ClaudeChannelMode, Env, ServeOptions};

use crate::args::{self, ServeArgs};
use crate::commands::data_dir;
use crate::lifecycle::run_stdio_session;

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let identity_dir = data_dir(&args.data_dir)?.root().join("serve");
    let mut options = ServeOptions::new(args.gateway.into_overrides(), Env::from_process());
    options.claude_channel_mode = match args.claude_channel_mode {
        args::ClaudeChannelMode::Auto => ClaudeChannelMode::Auto,
        args::ClaudeChannelMode::On => ClaudeChannelMode::On,
        args::ClaudeChannelMode::Off => ClaudeChannelMode::Off,
    };
    options.identity_dir = Some(identity_dir);

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    run_stdio_session(runtime, |shutdown| async move { Ok(clawmcp_serve::run(options, shutdown).await?) })?;
    Ok(ExitCode::SUCCESS)
}
