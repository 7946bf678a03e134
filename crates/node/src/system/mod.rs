//! `system.*`: the commands every node serves (category `system`).
//!
//! | command | file | what it does |
//! | --- | --- | --- |
//! | `system.notify` | [`notify`] | desktop notification |
//! | `system.run` | [`run`] (+ `clawmcp_process`), [`sandbox`] | approved argv execution, bounded and killable, optionally contained |
//! | `system.run.prepare` | [`prepare`] | the plan `system.run` would execute, nothing run |
//! | `system.which` | [`which`] | programs on the node's PATH |
//! | `system.execApprovals.get` / `.set` | [`crate::approvals`] | the exec-approval policy file |
//!
//! `system.run` and `system.run.prepare` obey the "Run system tools" switch
//! (`NodeSystemRunEnabled` in settings.json), read live on every listing and call: off, they
//! vanish from `tools/list` and calls that still reach them are refused with [`RUN_DISABLED`].
//! Shared argument validation lives in [`request`], `rawCommand` rendering rules in
//! [`crate::command_text`].

mod notify;
mod prepare;
mod request;
mod run;
pub mod sandbox;
mod which;

use std::sync::Arc;

use clawmcp_mcp::CallContext;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;

pub use clawmcp_process::MAX_CAPTURED_BYTES;
pub use request::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
pub use run::RUN_DISABLED;
pub use run::{MAX_RESULT_WIRE_BYTES, MAX_STREAM_WIRE_BYTES};
pub use which::MAX_BINS;

use crate::approvals::ExecApprovals;
use crate::capability::{Capability, CommandSpec, InvokeRequest, InvokeResult};
use crate::settings::LiveSettings;

/// The `system` capability.
pub struct SystemCapability {
    settings: Arc<LiveSettings>,
    approvals: Arc<ExecApprovals>,
}

impl SystemCapability {
    pub fn new(settings: Arc<LiveSettings>, approvals: Arc<ExecApprovals>) -> Self {
        SystemCapability { settings, approvals }
    }

    fn run_enabled(&self) -> bool {
        self.settings.current().node_system_run_enabled
    }
}

impl Capability for SystemCapability {
    fn category(&self) -> &'static str {
        "system"
    }

    fn commands(&self) -> Vec<CommandSpec> {
        let mut specs = vec![notify::command_spec()];
        if self.run_enabled() {
            specs.push(run::command_spec());
            specs.push(prepare::command_spec());
        }
        specs.push(which::command_spec());
        specs.extend(ExecApprovals::command_specs());
        specs
    }

    /// The run commands stay ours while switched off, so their callers learn why they fail.
    fn handles(&self, command: &str) -> bool {
        matches!(command, "system.run" | "system.run.prepare")
            || self.commands().iter().any(|spec| spec.name == command)
    }

    fn invoke<'a>(&'a self, request: InvokeRequest, ctx: CallContext) -> BoxFuture<'a, InvokeResult> {
        async move {
            let InvokeRequest { command, args, session_key, .. } = request;
            match command.as_str() {
                "system.notify" => notify::notify(&args).await,
                "system.run" => {
                    run::ensure_enabled(&self.settings)?;
                    run::invoke(&self.settings, &self.approvals, &args, session_key, &ctx.cancel).await
                }
                "system.run.prepare" => {
                    run::ensure_enabled(&self.settings)?;
                    prepare::invoke(&args, session_key)
                }
                "system.which" => which::invoke(&args).await,
                "system.execApprovals.get" => self.approvals.get_snapshot(),
                "system.execApprovals.set" => self.approvals.set_from_args(&args),
                other => Err(format!("Unknown command: {other} is not a system command").into()),
            }
        }
        .boxed()
    }
}
