//! Mounted storage: the `disk` section (one entry per real file system) and the legacy `storage`
//! summary (the file system holding the user's home directory, as upstream reports the drive of
//! the user profile).
//!
//! Linux has no drive letters, so a "drive" is a mounted file system: `name` is its mount point,
//! `label` the device it comes from, `format` the file-system type. sysinfo already skips the
//! kernel's pseudo file systems (proc, sysfs, cgroup, tmpfs, …); what is left is filtered once more
//! for empty mounts, and bind mounts of one file system (containers mount the same disk at
//! `/etc/hosts`, `/etc/resolv.conf`, …) are reported once, at their shortest mount point.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use sysinfo::Disks;

/// File-system types that hold no user data even when sysinfo lists them.
const PSEUDO_FILE_SYSTEMS: &[&str] = &["ramfs", "efivarfs", "nsfs", "tracefs", "debugfs", "securityfs", "fusectl"];

/// One mounted file system, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    pub mount_point: PathBuf,
    pub device: String,
    pub file_system: String,
    pub total_bytes: u64,
    /// Space an unprivileged user can still write (excludes root-reserved blocks).
    pub free_bytes: u64,
}

/// One `disk.drives[]` entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Drive<'a> {
    name: String,
    label: &'a str,
    total_bytes: u64,
    free_bytes: u64,
    usage_percent: f64,
    format: &'a str,
}

/// The real, distinct file systems of this machine, sorted by mount point.
pub fn read() -> Result<Vec<Volume>, sysinfo::Error> {
    let disks = Disks::new_with_refreshed_list()?;
    let volumes = disks
        .iter()
        .map(|disk| Volume {
            mount_point: disk.mount_point().to_path_buf(),
            device: disk.name().to_string_lossy().into_owned(),
            file_system: disk.file_system().to_string_lossy().into_owned(),
            total_bytes: disk.total_space(),
            free_bytes: disk.available_space(),
        })
        .collect();
    Ok(distinct_real(volumes))
}

/// Drops empty and pseudo mounts and keeps one mount point per file system.
pub fn distinct_real(mut volumes: Vec<Volume>) -> Vec<Volume> {
    volumes.retain(|v| v.total_bytes > 0 && !PSEUDO_FILE_SYSTEMS.contains(&v.file_system.as_str()));
    // Shortest mount point first, so the first of a group of bind mounts is the one kept.
    volumes.sort_by(|a, b| {
        let depth = |v: &Volume| v.mount_point.components().count();
        depth(a).cmp(&depth(b)).then_with(|| a.mount_point.cmp(&b.mount_point))
    });
    let mut kept: Vec<Volume> = Vec::new();
    for volume in volumes {
        let same_file_system = |k: &Volume| {
            k.device == volume.device && k.file_system == volume.file_system && k.total_bytes == volume.total_bytes
        };
        if !kept.iter().any(same_file_system) {
            kept.push(volume);
        }
    }
    kept.sort_by(|a, b| a.mount_point.cmp(&b.mount_point));
    kept
}

/// Percent of the file system in use, one decimal, as upstream rounds it.
fn usage_percent(total: u64, free: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    super::status::round1((1.0 - free as f64 / total as f64) * 100.0)
}

/// The `disk` section: `{drives: [...]}`.
pub fn section(volumes: &[Volume]) -> Value {
    let drives: Vec<Drive> = volumes
        .iter()
        .map(|v| Drive {
            name: v.mount_point.display().to_string(),
            label: &v.device,
            total_bytes: v.total_bytes,
            free_bytes: v.free_bytes,
            usage_percent: usage_percent(v.total_bytes, v.free_bytes),
            format: &v.file_system,
        })
        .collect();
    json!({"drives": drives})
}

/// The legacy `storage` summary for the file system that holds `home` (the deepest mount point
/// containing it); zeros when none does, like upstream when no drive is ready.
pub fn legacy(volumes: &[Volume], home: &Path) -> Value {
    let holding_home =
        volumes.iter().filter(|v| home.starts_with(&v.mount_point)).max_by_key(|v| v.mount_point.components().count());
    let (total, free) = holding_home.map_or((0, 0), |v| (v.total_bytes, v.free_bytes));
    json!({"totalBytes": total, "freeBytes": free, "usedBytes": total.saturating_sub(free)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume(mount_point: &str, device: &str, file_system: &str, total: u64, free: u64) -> Volume {
        Volume {
            mount_point: mount_point.into(),
            device: device.into(),
            file_system: file_system.into(),
            total_bytes: total,
            free_bytes: free,
        }
    }

    #[test]
    fn bind_mounts_of_one_file_system_are_reported_once_at_the_shortest_path() {
        let volumes = distinct_real(vec![
            volume("/etc/hosts", "/dev/vda", "ext4", 1000, 250),
            volume("/", "/dev/vda", "ext4", 1000, 250),
            volume("/etc/resolv.conf", "/dev/vda", "ext4", 1000, 250),
            volume("/home", "/dev/vdb", "xfs", 5000, 4000),
            volume("/boot/efi", "/dev/vda1", "vfat", 0, 0),
            volume("/sys/firmware/efi/efivars", "efivarfs", "efivarfs", 128, 64),
        ]);
        let mounts: Vec<&Path> = volumes.iter().map(|v| v.mount_point.as_path()).collect();
        assert_eq!(mounts, [Path::new("/"), Path::new("/home")]);
    }

    #[test]
    fn drives_report_mount_point_device_and_usage() {
        let shown = section(&[volume("/", "/dev/vda", "ext4", 1000, 250)]);
        assert_eq!(
            shown,
            json!({"drives": [{
                "name": "/", "label": "/dev/vda", "totalBytes": 1000, "freeBytes": 250,
                "usagePercent": 75.0, "format": "ext4"
            }]})
        );
        assert_eq!(usage_percent(3, 1), 66.7);
        assert_eq!(usage_percent(0, 0), 0.0);
    }

    #[test]
    fn legacy_storage_is_the_file_system_holding_home() {
        let volumes = [volume("/", "/dev/vda", "ext4", 1000, 250), volume("/home", "/dev/vdb", "xfs", 5000, 4000)];
        assert_eq!(
            legacy(&volumes, Path::new("/home/ada")),
            json!({"totalBytes": 5000, "freeBytes": 4000, "usedBytes": 1000})
        );
        assert_eq!(
            legacy(&volumes, Path::new("/root")),
            json!({"totalBytes": 1000, "freeBytes": 250, "usedBytes": 750})
        );
        assert_eq!(legacy(&[], Path::new("/root")), json!({"totalBytes": 0, "freeBytes": 0, "usedBytes": 0}));
    }
}
