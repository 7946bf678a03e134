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
mod operator_approval;
mod prepare;
mod request;
mod run;
pub mod sandbox;
mod which;

use std::sync::Arc;

pub use clawmcp_process::MAX_CAPTURED_BYTES;
/// The session bus address, resolved as libdbus does (shared with the screen portal).
pub(crate) use notify::session_bus_address;
pub use request::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
pub use run::{INVALID_REQUEST, RUN_DISABLED, SYSTEM_RUN_DENIED, UNAVAILABLE};
pub use run::{MAX_RESULT_WIRE_BYTES, MAX_STREAM_WIRE_BYTES};
pub use which::MAX_BINS;

use crate::approvals::ExecApprovals;
use crate::capability::{Capability, Command};
use crate::settings::LiveSettings;

/// The `system` capability.
pub struct SystemCapability {
    /// Built once: a list or call clones reference counts, not closures.
    commands: Vec<Command>,
}

impl SystemCapability {
    pub fn new(settings: Arc<LiveSettings>, approvals: Arc<ExecApprovals>) -> Self {
        let run_switch = {
            let settings = settings.clone();
            move || settings.current().node_system_run_enabled
        };
        let notify =
            notify::command_spec().with_handler(|request, _ctx| async move { notify::notify(&request.args).await });
        let run = {
            let (settings, approvals) = (settings.clone(), approvals.clone());
            run::command_spec().with_output_handler(move |request, ctx| {
                let (settings, approvals) = (settings.clone(), approvals.clone());
                async move {
                    run::ensure_enabled(&settings)?;
                    run::invoke(&settings, &approvals, &request, &ctx.cancel, ctx.progress.as_ref()).await
                }
            })
        };
        let prepare = {
            let (settings, approvals) = (settings.clone(), approvals.clone());
            prepare::command_spec().with_handler(move |request, _ctx| {
                let answer = run::ensure_enabled(&settings).and_then(|()| prepare::invoke(&approvals, &request));
                async move { answer }
            })
        };
        let which =
            which::command_spec().with_handler(|request, _ctx| async move { which::invoke(&request.args).await });
        let mut commands = vec![notify, run.listed_while(run_switch.clone()), prepare.listed_while(run_switch), which];
        commands.extend(ExecApprovals::commands(&approvals));
        SystemCapability { commands }
    }
}

impl Capability for SystemCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}
