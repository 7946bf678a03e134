//! The `system.run` sandbox: `SystemRunSandbox` in settings.json turned into a
//! [`clawmcp_process::ContainmentPolicy`] for one run, and the summary of what holds on this
//! kernel that `clawmcp doctor` and the node's start-up print.
//!
//! Writable for a contained run: its working directory (the `cwd` argument, else the node's),
//! the temp directory (`$TMPDIR`, else `/tmp`), `/dev/shm` (POSIX shared memory and semaphores
//! live there), and `WritablePaths`. Everything else is read-only. The mechanisms, and what is
//! left when the kernel lacks one, are `clawmcp_process::containment`'s.

use std::path::{Path, PathBuf};

use clawmcp_process::containment;
use clawmcp_process::{ContainmentPolicy, ContainmentReport};

use crate::settings::SandboxSettings;

/// Shared memory: a temp directory by another name.
const SHARED_MEMORY: &str = "/dev/shm";

/// The temp directory a contained run may write: `$TMPDIR`, else `/tmp`.
pub fn temp_dir() -> PathBuf {
    std::env::temp_dir()
}

/// The containment of one run in `cwd`.
pub fn policy_for(settings: &SandboxSettings, cwd: &Path) -> ContainmentPolicy {
    let mut writable = vec![cwd.to_path_buf(), temp_dir(), PathBuf::from(SHARED_MEMORY)];
    writable.extend(settings.writable_paths.iter().cloned());
    ContainmentPolicy {
        writable,
        network: settings.network,
        memory_bytes: settings.memory_mib.map(|mib| mib.saturating_mul(1024 * 1024)),
        max_tasks: settings.max_processes,
        cpu_seconds: settings.cpu_seconds,
    }
}

/// What the sandbox holds on this kernel with these settings, one line each, for people: the
/// switch, the writable paths, then every rule with its state and why.
pub fn summary(settings: &SandboxSettings) -> Vec<String> {
    let mut lines = vec![if settings.enabled {
        "enabled (SystemRunSandbox.Enabled): every system.run is contained".to_string()
    } else {
        "DISABLED: system.run runs commands uncontained, with all of this user's rights \
         (`clawmcp settings set SystemRunSandbox.Enabled true` turns it on); on this kernel it would hold:"
            .to_string()
    }];
    let mut writable = vec!["the run's working directory".to_string(), temp_dir().display().to_string()];
    writable.push(SHARED_MEMORY.into());
    writable.extend(settings.writable_paths.iter().map(|path| path.display().to_string()));
    lines.push(format!("writable: {}; everything else read-only", writable.join(", ")));
    let report = report(settings);
    lines.extend(report.lines());
    if settings.enabled && report.fallbacks().next().is_some() {
        lines.push("warning: the rules marked partly or NOT enforced fall back as said above on this kernel".into());
    }
    lines
}

/// What these settings would hold on this kernel.
pub fn report(settings: &SandboxSettings) -> ContainmentReport {
    let policy = policy_for(settings, Path::new("/nonexistent-cwd"));
    containment::expected_report(&policy)
}
