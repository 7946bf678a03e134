//! `clawmcp tools`: the tools bridge (`docs/tools-bridge.md`) on stdin/stdout, and
//! `clawmcp tools regen`.
//!
//! Wiring only; everything lives in `clawmcp_tools::bridge`. Stdout carries JSON-RPC only (logs
//! go to stderr). EOF on stdin, SIGINT, SIGTERM and the death of the parent process end the
//! session (`crate::lifecycle`): calls are cancelled, the local tools' background jobs are
//! stopped, and the process exits 0.

use std::process::ExitCode;

use anyhow::Context;
use clawmcp_tools::bridge::{self, BridgeOptions, Env, SNAPSHOT_FILE, SchemaSource, ToolFilter};

use crate::args::{ToolsAction, ToolsArgs};
use crate::commands::data_dir;
use crate::exit::UsageError;
use crate::lifecycle::run_stdio_session;
use crate::output;

pub fn run(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let tool_filter =
        ToolFilter::parse(args.tools.as_deref().unwrap_or_default()).map_err(|e| UsageError(e.to_string()))?;
    let connect = args.gateway.into_overrides();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut options = BridgeOptions { tool_filter, ..BridgeOptions::new(connect, Env::from_process(), cwd) };
    let default_snapshot = data_dir(&args.data_dir).map(|dir| dir.root().join(SNAPSHOT_FILE));
    match args.action {
        Some(ToolsAction::Regen { output }) => {
            let path = match output {
                Some(path) => path,
                None => default_snapshot.context("no default place for the snapshot; pass --output")?,
            };
            regen(options, path)
        }
        None => {
            // Without a data directory there is no regen snapshot; the bundled one still serves.
            options.snapshot_path = default_snapshot.ok();
            serve(options)
        }
    }
}

fn serve(options: BridgeOptions) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    run_stdio_session(runtime, |shutdown| async move {
        // On a worker thread, so that `tools/list` may wait for discovery with block_in_place.
        let session = tokio::spawn(bridge::run(options, shutdown));
        Ok(session.await.context("the tools bridge panicked")??)
    })?;
    Ok(ExitCode::SUCCESS)
}

fn regen(options: BridgeOptions, path: std::path::PathBuf) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(bridge::regen(&options, path))?;
    for problem in &report.problems {
        output::note(&format!("note: {problem}"));
    }
    let counts = report.catalog.schema_counts();
    let count = |source| counts.get(&source).copied().unwrap_or(0);
    output::note(&format!(
        "clawmcp tools regen: {} gateway tools (list from {:?}; schemas: {} live, {} from the bundled snapshot, {} \
         open){}",
        report.catalog.tools.len(),
        report.catalog.list_source,
        count(SchemaSource::Live),
        count(SchemaSource::BundledSnapshot),
        count(SchemaSource::Open),
        report.catalog.gateway_version.as_deref().map(|v| format!(", openclaw {v}")).unwrap_or_default(),
    ));
    output::data(&report.path.display().to_string());
    Ok(ExitCode::SUCCESS)
}
