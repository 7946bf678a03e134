//! Replacing a file's contents atomically: shared by `write` and `edit`.
//!
//! The bytes go to a temporary file in the target's own directory (same file system, so the
//! final rename is atomic), are flushed to disk, then renamed over the target. A reader, or a
//! crash, sees the old file or the new one, never a truncated mix; on any error the temporary
//! file is removed (tempfile's drop) and the target is untouched. An existing target keeps its
//! permission bits and, when the OS allows, its owner: a rename would otherwise silently give
//! it the temp file's mode and our user.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Suffix of our temporary files, so a stray one (power loss mid-write) is recognisable.
pub(crate) const TEMP_SUFFIX: &str = ".clawmcp-tmp";

/// Writes `bytes` to `target` atomically. `target` must not be a symlink (see [`follow_symlink`]).
pub(crate) fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let existing = fs::metadata(target).ok();
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TEMP_SUFFIX);
    #[cfg(unix)]
    if existing.is_none() {
        // A new file gets the usual 0666 minus umask, like any editor's, not tempfile's 0600.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Some(meta) = &existing {
        temp.as_file().set_permissions(meta.permissions())?;
        keep_owner(temp.as_file(), meta);
    }
    temp.as_file().sync_all()?;
    temp.persist(target).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// The file a write should replace: a symlink's target rather than the link itself, so that
/// writing through `config -> real/config` updates `real/config` and keeps the link.
pub(crate) fn follow_symlink(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

#[cfg(unix)]
fn keep_owner(file: &fs::File, meta: &fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    // Only root may give a file away; for anyone else the rename makes it theirs, which is the
    // same as any editor's save. Not being able to chown is therefore not an error.
    let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
}

#[cfg(not(unix))]
fn keep_owner(_file: &fs::File, _meta: &fs::Metadata) {}

/// Makes the rename itself durable. Best effort: the data is already synced, and some file
/// systems refuse fsync on directories.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(handle) = fs::File::open(dir) {
        let _ = handle.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(TEMP_SUFFIX))
            .collect()
    }

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.txt");
        fs::write(&target, "old").unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn keeps_the_existing_files_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic(&script, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o7777, 0o751);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn new_files_get_0666_minus_umask_not_a_private_temp_mode() {
        use std::os::unix::fs::PermissionsExt;
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let umask_field = status.lines().find_map(|l| l.strip_prefix("Umask:")).expect("Umask in /proc/self/status");
        let umask = u32::from_str_radix(umask_field.trim(), 8).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.txt");
        write_atomic(&fresh, b"x").unwrap();
        let mode = fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask, "mode {mode:o} with umask {umask:o}");
    }

    #[test]
    fn a_failed_rename_leaves_target_untouched_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // Renaming a file over a non-empty directory fails after the temp file was written.
        let target = dir.path().join("occupied");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inside.txt"), "keep").unwrap();
        assert!(write_atomic(&target, b"data").is_err());
        assert!(target.is_dir());
        assert_eq!(fs::read_to_string(target.join("inside.txt")).unwrap(), "keep");
        assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    }

    #[cfg(unix)]
    #[test]
    fn follow_symlink_returns_the_link_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        fs::write(&real, "x").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(follow_symlink(&link).unwrap(), fs::canonicalize(&real).unwrap());
        assert_eq!(follow_symlink(&real).unwrap(), real);
    }
}
