//! `clawmcp node`: the node host in MCP-only mode — this machine's capabilities as MCP tools on
//! `http://127.0.0.1:<port>/`, no gateway, no account, no pairing.
//!
//! Wiring only: the capabilities live in `clawmcp-node`, the transport in `clawmcp-http`.
//! SIGINT/SIGTERM shut down gracefully (in-flight calls are cancelled within a bound).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clawmcp_http::{HttpConfig, Limits};
use clawmcp_mcp::{DuplicatePolicy, McpServer, ServerInfo, VersionRule, WireStyle};
use clawmcp_node::approvals::{ApprovalsApi, ExecApprovals};
use clawmcp_node::registry::ToolFilter;
use clawmcp_node::settings::LiveSettings;
use clawmcp_node::system::sandbox;
use clawmcp_node::{NodeMcpService, Registry};
use tokio_util::sync::CancellationToken;

use crate::args::NodeArgs;
use crate::commands::{data_dir, stop_on_signal};
use crate::exit::UsageError;
use crate::output;

/// `serverInfo.name` in `initialize`.
pub const SERVER_NAME: &str = "clawmcp-node";

pub fn run(args: NodeArgs) -> anyhow::Result<ExitCode> {
    let filter = ToolFilter::parse(args.tools.as_deref().unwrap_or_default()).map_err(|e| UsageError(e.to_string()))?;
    let data = data_dir(&args.data_dir)?;
    data.ensure()?;
    let settings = Arc::new(LiveSettings::open(data.settings_path())?);
    let mode = settings.current();
    if !mode.enable_mcp_server {
        anyhow::bail!(
            "the local MCP server is disabled in {} (EnableMcpServer is false)\nhint: `clawmcp settings set EnableMcpServer true`",
            settings.path().display()
        );
    }
    if mode.enable_node_mode {
        output::note(
            "note: gateway node mode (EnableNodeMode) is not available in this version yet; serving local MCP only",
        );
    }

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let approvals = Arc::new(
            ExecApprovals::open(data.exec_approvals_path())
                .with_prompt_timeout(Duration::from_millis(args.approval_timeout_ms)),
        );
        let registry = Arc::new(Registry::builtin(settings.clone(), approvals.clone()));
        check_filter(&registry, &filter)?;
        let service =
            NodeMcpService::new(registry).with_filter(filter).with_local_methods(Arc::new(ApprovalsApi(approvals)));
        let info = ServerInfo { name: SERVER_NAME.into(), version: env!("CARGO_PKG_VERSION").into() };
        let mut wire = WireStyle::NEGOTIATING;
        if let Some(version) = args.pin_protocol_version {
            wire.versions = VersionRule::Pinned(version);
        }
        let mcp = Arc::new(McpServer::new(info, Arc::new(service), DuplicatePolicy::Allow).with_wire(wire));

        let config = HttpConfig { port: args.port, token_path: data.token_path(), limits: Limits::default() };
        let server = clawmcp_http::bind(config).await.context("cannot start the MCP server")?;
        output::note(&format!(
            "clawmcp node: MCP-only mode (no gateway); serving MCP on {}\n  token file: {}\n  data dir: {}",
            server.endpoint(),
            data.token_path().display(),
            data.root().display()
        ));

        // What the sandbox holds on this kernel, once at start (upstream warns the same way when
        // it runs commands uncontained). The settings are read live: this is the start's view.
        let sandbox = settings.current().system_run_sandbox;
        if sandbox.enabled {
            output::note(&format!("system.run sandbox:\n  {}", sandbox::summary(&sandbox).join("\n  ")));
        } else {
            output::note(
                "warning: system.run runs commands uncontained (SystemRunSandbox is off): \
                 `clawmcp doctor` shows what the sandbox would hold here, \
                 `clawmcp settings set SystemRunSandbox.Enabled true` turns it on",
            );
        }

        let shutdown = CancellationToken::new();
        stop_on_signal(shutdown.clone(), Some("clawmcp node: shutting down"));
        server.serve(mcp, shutdown).await.context("the MCP server failed")?;
        output::note("clawmcp node: stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// A `--tools` pattern that selects nothing is a typo or a stale list: refuse to start rather
/// than serve less than the user meant.
fn check_filter(registry: &Registry, filter: &ToolFilter) -> Result<(), UsageError> {
    let unmatched = registry.unmatched_patterns(filter);
    if unmatched.is_empty() {
        return Ok(());
    }
    let listed = registry.listed();
    let available: Vec<&str> = listed.iter().map(|command| command.name()).collect();
    Err(UsageError(format!(
        "--tools pattern{} {} match{} no tool this node serves\nhint: available tools: {}",
        if unmatched.len() == 1 { "" } else { "s" },
        unmatched.iter().map(|pattern| format!("`{pattern}`")).collect::<Vec<_>>().join(", "),
        if unmatched.len() == 1 { "es" } else { "" },
        available.join(", ")
    )))
}
