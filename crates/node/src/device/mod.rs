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

use clawmcp_mcp::{CallContext, ToolAnnotations};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::json;

use crate::capability::{Capability, CapabilityError, CommandSpec, InvokeRequest, InvokeResult};

pub use status::Section;

/// Where the kernel exports devices on every Linux system.
const SYSTEM_SYSFS_ROOT: &str = "/sys";

/// `device.info` and `device.status`.
#[derive(Debug, Clone)]
pub struct DeviceCapability {
    sysfs_root: PathBuf,
}

impl Default for DeviceCapability {
    fn default() -> Self {
        DeviceCapability::new()
    }
}

impl DeviceCapability {
    /// Reads the real `/sys`.
    pub fn new() -> Self {
        DeviceCapability { sysfs_root: PathBuf::from(SYSTEM_SYSFS_ROOT) }
    }

    /// Reads batteries, DMI and interface kinds under `root` instead of `/sys` (test fixtures).
    /// Host, CPU, memory, disk and interface counters still come from the running system.
    pub fn with_sysfs_root(root: impl Into<PathBuf>) -> Self {
        DeviceCapability { sysfs_root: root.into() }
    }

    fn info_spec() -> CommandSpec {
        static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
            name: "device.info",
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
    fn category(&self) -> &'static str {
        "device"
    }

    fn commands(&self) -> Vec<CommandSpec> {
        vec![DeviceCapability::info_spec(), DeviceCapability::status_spec()]
    }

    fn invoke<'a>(&'a self, request: InvokeRequest, ctx: CallContext) -> BoxFuture<'a, InvokeResult> {
        async move {
            let work = async {
                match request.command.as_str() {
                    "device.info" => info::collect(self.sysfs_root.clone()).await,
                    "device.status" => {
                        let sections = Section::parse_list(&request.args)?;
                        status::collect(sections, self.sysfs_root.clone()).await
                    }
                    other => Err(CapabilityError::new(format!("Unknown command: {other}"))),
                }
            };
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => Err(CapabilityError::new(format!("{} cancelled", request.command))),
                result = work => result,
            }
        }
        .boxed()
    }
}
