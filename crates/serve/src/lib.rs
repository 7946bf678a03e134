//! `clawmcp serve` (`docs/serve.md`): a stdio MCP server over the OpenClaw gateway WebSocket, a
//! drop-in for `openclaw mcp serve`. Routed channel conversations become MCP conversations with
//! transcript tools, a live event queue, approval tools and, for Claude Code, channel
//! notifications.
//!
//! # Layout
//!
//! - [`run`] / [`run_with_io`]: one session from start to exit (this file).
//! - `bridge`: the gateway connection (profile, readiness, re-subscribe) and the event pump.
//! - `queue`: the bounded live event queue, cursors, gaps and waits.
//! - `tools`: the nine tools; `args`: their argument validation in upstream's wording.
//! - `conversation`: session rows as conversations; `attachments`: what `attachments_fetch`
//!   extracts; `approvals`: open approval requests.
//! - `claude`: Claude channel mode (capabilities, notifications, permission replies).
//! - `service`: the `McpService` the dispatcher calls; `error`: why a session failed.
//! - `js`: the JavaScript coercions upstream applies; `clock`: wall time that follows tokio's
//!   timer; `input`: stdin that reports its EOF.
//!
//! # Lifecycle
//!
//! The flags (over `OPENCLAW_*` env over `openclaw.json`) name the gateway; a bad combination
//! fails before anything is served. Then the MCP session starts at once on stdin/stdout (clients
//! time out on a slow `initialize`) while the gateway connection comes up in the background;
//! tools that need the gateway wait for it. If the gateway cannot be had, the session stays up:
//! those tools answer with the reason and what to do (and an unreachable gateway is retried until
//! it is up; see `bridge`). EOF on stdin (or the shutdown token, wired to SIGINT/SIGTERM by the CLI) ends the
//! session cleanly: calls are cancelled, waiters released, the gateway connection closed, exit
//! 0. A failure to read stdin or write stdout is an error exit. Stdout carries JSON-RPC only;
//! logs go through `tracing` (the CLI sends them to stderr). No child processes.

mod approvals;
mod args;
mod attachments;
mod bridge;
mod claude;
mod clock;
mod conversation;
mod error;
mod input;
mod js;
mod queue;
mod service;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawmcp_gateway::{BackoffPolicy, DeviceIdentity, GatewayTarget};
use clawmcp_mcp::stdio::{self, SessionEnd};
use clawmcp_mcp::{DuplicatePolicy, McpServer, ServerInfo, WireStyle};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tracing::info;

pub use approvals::{PENDING_APPROVAL_DEFAULT_TTL_MS, PENDING_APPROVALS_LIMIT};
pub use args::MAX_SAFE_INTEGER;
pub use bridge::{CLIENT_DISPLAY_NAME, OPERATOR_SCOPES, PENDING_SWEEP_INTERVAL, REQUEST_TIMEOUT};
pub use claude::{ClaudeChannelMode, PENDING_CLAUDE_PERMISSION_TTL_MS, PENDING_CLAUDE_PERMISSIONS_LIMIT};
pub use clawmcp_gateway::{ConnectOverrides, Env, Secret};
pub use error::ServeError;
pub use queue::{EVENTS_POLL_LIMIT, EVENTS_WAIT_TIMEOUT_LIMIT, QUEUE_BYTE_LIMIT, QUEUE_LIMIT, QueueLimits};
pub use service::PERMISSION_REQUEST_NOTIFICATION;
pub use tools::{CONVERSATIONS_LIST_LIMIT, MESSAGES_READ_LIMIT};

/// `serverInfo.name`: the real bridge's, so client configs and logs keyed on it keep working.
pub const SERVER_NAME: &str = "openclaw";

/// The OpenClaw release whose `mcp serve` surface this reproduces.
pub const OPENCLAW_COMPAT_VERSION: &str = "2026.9.6";

/// `serverInfo.version`: `2026.9.6+clawmcp.<ours>`. Semver build metadata: version comparisons
/// treat it as the OpenClaw release whose surface we reproduce, and a human reading it learns
/// which implementation answered.
pub fn server_version() -> String {
    format!("{OPENCLAW_COMPAT_VERSION}+clawmcp.{}", env!("CARGO_PKG_VERSION"))
}

/// Everything a session needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `--url`, `--token`/`--token-file`, `--password`/`--password-file`.
    pub connect: ConnectOverrides,
    /// The environment `OPENCLAW_*` variables and the config path are read from.
    pub env: Env,
    pub claude_channel_mode: ClaudeChannelMode,
    /// Where the device key lives (created on first use, 0600 in a 0700 directory). `None`
    /// connects without a device, which only a loopback gateway accepts with full scopes.
    pub identity_dir: Option<PathBuf>,
    /// Per gateway request, and for a tool waiting on readiness.
    pub request_timeout: Duration,
    /// Delays between first-connect attempts the gateway asked us to retry.
    pub connect_retry: BackoffPolicy,
    pub queue_limits: QueueLimits,
    /// Largest gateway frame accepted; a bigger one costs the link (closed 1009, reconnected).
    pub max_inbound_frame_bytes: usize,
}

impl ServeOptions {
    /// The real bridge's defaults for these flags and this environment.
    pub fn new(connect: ConnectOverrides, env: Env) -> Self {
        ServeOptions {
            connect,
            env,
            claude_channel_mode: ClaudeChannelMode::default(),
            identity_dir: None,
            request_timeout: REQUEST_TIMEOUT,
            connect_retry: BackoffPolicy::default(),
            queue_limits: QueueLimits::default(),
            max_inbound_frame_bytes: clawmcp_gateway::client::DEFAULT_MAX_INBOUND_FRAME,
        }
    }
}

/// How a session ended without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeExit {
    /// The client closed stdin.
    InputClosed,
    /// The shutdown token fired (SIGINT/SIGTERM).
    Shutdown,
}

/// Serves on this process's stdin and stdout until EOF, `shutdown`, or a failure.
pub async fn run(options: ServeOptions, shutdown: CancellationToken) -> Result<ServeExit, ServeError> {
    run_with_io(options, tokio::io::stdin(), tokio::io::stdout(), shutdown).await
}

/// [`run`] over any byte streams (tests use in-memory pipes).
pub async fn run_with_io<R, W>(
    options: ServeOptions,
    input: R,
    output: W,
    shutdown: CancellationToken,
) -> Result<ServeExit, ServeError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let target = GatewayTarget::resolve(&options.connect, &options.env)?;
    let device = options.identity_dir.as_deref().map(DeviceIdentity::load_or_create).transpose()?.map(Arc::new);
    info!(
        url = %target.url,
        device = device.as_ref().map_or("none", |d| d.device_id()),
        claude_channel_mode = ?options.claude_channel_mode,
        "clawmcp serve: connecting to the OpenClaw gateway"
    );

    let (outbound, outbound_rx) = stdio::outbound_channel();
    let notifier = claude::Notifier::new(Some(outbound.clone()));
    let bridge =
        bridge::Bridge::new(options.claude_channel_mode, options.queue_limits, notifier, options.request_timeout);
    let mut client_options = bridge::client_options(&target.url, &target.credentials, device, options.request_timeout);
    client_options.max_inbound_frame_bytes = options.max_inbound_frame_bytes;
    bridge.start(client_options, options.connect_retry, target.credentials.clone());
    let service = Arc::new(service::ServeService::new(bridge.clone()));
    let info = ServerInfo { name: SERVER_NAME.to_owned(), version: server_version() };
    // The real bridge runs on the TypeScript MCP SDK: answer with its wire conventions.
    let server = Arc::new(
        McpServer::new(info, service.clone(), DuplicatePolicy::Reject)
            .with_wire(WireStyle::TYPESCRIPT_SDK)
            .for_one_session(),
    );

    let stop = shutdown.child_token();
    let input_ended = CancellationToken::new();
    let input = input::InputEnd::new(input, input_ended.clone());
    // Once the session is ending, our notification handle must not keep its writer alive.
    let release = tokio::spawn({
        let (bridge, stop, input_ended) = (bridge.clone(), stop.clone(), input_ended.clone());
        async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = input_ended.cancelled() => {}
            }
            bridge.notifier().close();
        }
    });

    let end = stdio::serve(server, input, output, outbound, outbound_rx, stop.clone()).await;
    bridge.close().await;
    release.abort();
    match end {
        SessionEnd::InputClosed => Ok(ServeExit::InputClosed),
        SessionEnd::Shutdown => Ok(ServeExit::Shutdown),
        SessionEnd::OutputFailed(error) => Err(ServeError::Transport(format!("writing to stdout: {error}"))),
        SessionEnd::InputFailed(error) => Err(ServeError::Transport(format!("reading stdin: {error}"))),
    }
}
