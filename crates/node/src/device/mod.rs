//! `device.*`: what this machine is (`device.info`) and how it is doing (`device.status`).
//!
//! Both commands only read local state. Host, OS, CPU, memory, disks and network interfaces come
//! from `sysinfo`; batteries, DMI model names and interface kinds are read from sysfs under a
//! configurable root ([`DeviceCapability::with_sysfs_root`]) so tests can point them at a fixture
//! tree in kernel format. All of that is blocking file I/O, so it runs on the blocking pool.
//!
//! Result shapes follow the upstream Windows node (`collectedAt`, per-section objects, the legacy
//! `battery`/`thermal`/`storage`/`network`/`uptimeSeconds` keys), with the Linux additions
//! (`kernelVersion`, `architecture`, the `network` section published as `networkInterfaces`)
//! explained in `status.rs` and `info.rs`.

mod battery;
mod info;
mod network;
mod status;
mod storage;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::LazyLock;

use std::future::Future;

use clawmcp_mcp::{CallContext, ToolAnnotations};
use serde_json::json;

use crate::capability::{Capability, CapabilityError, Command, CommandSpec, InvokeResult};

pub use status::Section;

/// Where the kernel exports devices on every Linux system.
const SYSTEM_SYSFS_ROOT: &str = "/sys";

/// `device.info` and `device.status`.
#[derive(Debug, Clone)]
pub struct DeviceCapability {
    /// Built once: a list or call clones reference counts, not closures.
    commands: Vec<Command>,
}

impl Default for DeviceCapability {
    fn default() -> Self {
        DeviceCapability::new()
    }
}

impl DeviceCapability {
    /// Reads the real `/sys`.
    pub fn new() -> Self {
        DeviceCapability::with_sysfs_root(SYSTEM_SYSFS_ROOT)
    }

    /// Reads batteries, DMI and interface kinds under `root` instead of `/sys` (test fixtures).
    /// Host, CPU, memory, disk and interface counters still come from the running system.
    pub fn with_sysfs_root(root: impl Into<PathBuf>) -> Self {
        let root: PathBuf = root.into();
        let info_root = root.clone();
        let info = DeviceCapability::info_spec()
            .with_handler(move |request, ctx| cancellable(request.command, ctx, info::collect(info_root.clone())));
        let status = DeviceCapability::status_spec().with_handler(move |request, ctx| {
            let root = root.clone();
            async move {
                let sections = Section::parse_list(&request.args)?;
                cancellable(request.command, ctx, status::collect(sections, root)).await
            }
        });
        DeviceCapability { commands: vec![info, status] }
    }

    fn info_spec() -> CommandSpec {
        static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
            name: "device.info",
            title: Some("Device info"),
            output_schema: Some(info::output_schema()),
            description: Some(
                "Describe this machine: {deviceName (host name), modelIdentifier (DMI product name, \
                 else the CPU architecture), systemName (\"Linux\"), systemVersion (distribution and \
                 version), kernelVersion, appVersion, appBuild, locale (BCP 47, e.g. en-US), \
                 architecture}. Static metadata; takes no arguments.",
            ),
            input_schema: Some(json!({"type": "object", "properties": {}, "additionalProperties": false}).into()),
            annotations: ToolAnnotations::READ_ONLY,
        });
        SPEC.clone()
    }

    fn status_spec() -> CommandSpec {
        static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
            name: "device.status",
            title: Some("Device status"),
            output_schema: Some(status::output_schema()),
            description: Some(
                "Current health of this machine. Returns collectedAt (ISO-8601 UTC) and the requested \
                 sections: os {version, architecture, machineName, uptimeSeconds, kernelVersion}, cpu \
                 {name, logicalProcessors, usagePercent}, memory {totalBytes, availableBytes, \
                 usagePercent}, disk {drives:[{name, label, totalBytes, freeBytes, usagePercent, format}]}, \
                 battery {present, chargePercent, isCharging, estimatedMinutesRemaining} (merged into the \
                 battery key), network as networkInterfaces {interfaces:[{name, mac, addresses, up, \
                 rxBytes, txBytes}]}. Always present: battery {level, state, lowPowerModeEnabled}, \
                 thermal, storage {totalBytes, freeBytes, usedBytes}, network {status, isExpensive, \
                 isConstrained, interfaces}, uptimeSeconds. A section that cannot be read is \
                 {error: \"collection failed\"}. Sampling CPU usage adds about 0.2 s.",
            ),
            input_schema: Some(
                json!({
                    "type": "object",
                    "properties": {
                        "sections": {
                            "type": "array",
                            "items": {"type": "string", "enum": Section::NAMES},
                            "uniqueItems": true,
                            "description": "Sections to collect (case-insensitive). Omitted or empty: all of them."
                        }
                    },
                    "additionalProperties": false
                })
                .into(),
            ),
            annotations: ToolAnnotations::READ_ONLY,
        });
        SPEC.clone()
    }
}

impl Capability for DeviceCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

/// `work`, or a cancellation error as soon as the call is cancelled (the blocking reads it
/// waits for finish on their own and are dropped).
async fn cancellable(command: String, ctx: CallContext, work: impl Future<Output = InvokeResult>) -> InvokeResult {
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Err(CapabilityError::new(format!("{command} cancelled"))),
        result = work => result,
    }
}
