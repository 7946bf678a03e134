//! Replacing a file's contents atomically and without lost updates: shared by `write` and `edit`.
//!
//! The bytes go to a temporary file in the target's own directory (same file system, so the
//! final rename is atomic), are flushed to disk, then renamed over the target. A reader, or a
//! crash, sees the old file or the new one, never a truncated mix; on any error the temporary
//! file is removed (tempfile's drop) and the target is untouched. An existing target keeps its
//! permission bits and, when the OS allows, its owner: a rename would otherwise silently give
//! it the temp file's mode and our user.
//!
//! No lost updates: inside this process `write` and `edit` of one file are serialised by
//! [`crate::path_lock`]; against other processes, [`replace`] checks just before the rename that
//! the target is still what the caller based its bytes on (the [`Basis`]), and fails with
//! [`ReplaceError::Conflict`] instead of overwriting a change it never saw. A new file is
//! created with a no-clobber rename, so a file (or FIFO) that appeared meanwhile is never
//! replaced. What remains is the instant between the last check and the rename, which no
//! rename-based write can close without the other writer's cooperation (a lock it would honour).
//!
//! Temporary files are named `.<name>.<pid>.<random>.clawmcp-tmp`. A process killed mid-write
//! cannot remove its own, so the first write into a directory after a start removes the ones
//! there whose creating process is gone ([`sweep_stale_temps`]).

use std::collections::HashSet;
use std::fs::{self, Metadata};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use clawmcp_fs::{FileKind, Symlinks, is_refused_symlink, not_regular_kind, open_regular, read_bounded};

/// Suffix of our temporary files, so a stray one (power loss, kill -9) is recognisable.
pub(crate) const TEMP_SUFFIX: &str = ".clawmcp-tmp";

/// Bytes of the target's file name kept in its temp file's name: a name near the file system's
/// 255-byte limit must still leave room for the pid, the random part and the suffix.
const TEMP_NAME_BYTES: usize = 100;

/// Directories swept per process before the record is reset (it only saves repeated scans).
const SWEPT_DIRS_REMEMBERED: usize = 4096;

/// What the caller's new bytes are based on; checked again just before the rename.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Basis<'a> {
    /// There was no file (`write` creating one): the rename must not replace anything.
    Missing,
    /// A regular file that was not read (`write` replacing it): it must still be that same
    /// file, unmodified (same device, inode, size and modification time).
    Unread(&'a Metadata),
    /// A regular file whose content was read (`edit`): it must still hold exactly these bytes.
    Read(&'a Metadata, &'a [u8]),
}

impl Basis<'_> {
    fn existing(&self) -> Option<&Metadata> {
        match self {
            Basis::Missing => None,
            Basis::Unread(meta) | Basis::Read(meta, _) => Some(meta),
        }
    }
}

/// What happened to the target between the caller's look at it and the rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Created,
    Removed,
    Modified,
}

impl Change {
    /// "was created", for "{path} {what} by another program".
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Change::Created => "was created",
            Change::Removed => "was deleted or renamed",
            Change::Modified => "was modified or replaced",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplaceError {
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The target changed under us; nothing was written.
    #[error("the file {} meanwhile", .0.describe())]
    Conflict(Change),
    /// The target is now a FIFO, device, directory…: never replaced.
    #[error("it is now {0}")]
    NotRegular(FileKind),
}

/// The path a write should replace and the key its lock is taken under: the canonical real
/// path, so `a.txt`, `./a.txt`, `dir/../a.txt` and a symlink to it all name one file. A path
/// that does not exist yet is its nearest existing ancestor, canonicalised, plus the rest. A
/// symlink whose target does not exist is an error (`NotFound`): writing would replace the link.
pub(crate) fn real_path(path: &Path) -> io::Result<PathBuf> {
    if fs::symlink_metadata(path).is_ok() {
        return fs::canonicalize(path);
    }
    let mut missing = Vec::new();
    let mut existing = path;
    while let Some(parent) = existing.parent() {
        missing.push(existing.file_name().unwrap_or_default());
        existing = parent;
        if fs::symlink_metadata(existing).is_ok() {
            let mut real = fs::canonicalize(existing)?;
            real.extend(missing.iter().rev());
            return Ok(real);
        }
    }
    Ok(path.to_path_buf())
}

/// Writes `bytes` to `target` atomically if `target` is still as `basis` says. `target` must be
/// a [`real_path`]. Holding the target's [`crate::path_lock`] is the caller's job.
pub(crate) fn replace(target: &Path, basis: Basis<'_>, bytes: &[u8]) -> Result<(), ReplaceError> {
    let rename = match basis {
        Basis::Missing => Rename::NoClobber,
        Basis::Unread(_) | Basis::Read(..) => Rename::IfUnchanged(basis),
    };
    commit(target, basis.existing(), bytes, rename)
}

/// Writes `bytes` to `target` atomically, replacing whatever regular file is there without
/// comparing: for clawmcp's own files (snapshots), which only this process writes.
pub(crate) fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let existing = fs::metadata(target).ok();
    commit(target, existing.as_ref(), bytes, Rename::Overwrite).map_err(|e| match e {
        ReplaceError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })
}

/// How the temp file takes the target's place.
enum Rename<'a> {
    /// Only if nothing is at the target (an atomic no-replace rename).
    NoClobber,
    /// Only if the target is still what the basis describes.
    IfUnchanged(Basis<'a>),
    Overwrite,
}

fn commit(target: &Path, existing: Option<&Metadata>, bytes: &[u8], rename: Rename<'_>) -> Result<(), ReplaceError> {
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    sweep_stale_temps(dir);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut builder = tempfile::Builder::new();
    let prefix = format!(".{}.{}.", truncate_on_char_boundary(&name, TEMP_NAME_BYTES), std::process::id());
    builder.prefix(&prefix).suffix(TEMP_SUFFIX);
    #[cfg(unix)]
    if existing.is_none() {
        // A new file gets the usual 0666 minus umask, like any editor's, not tempfile's 0600.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Some(meta) = existing {
        temp.as_file().set_permissions(meta.permissions())?;
        keep_owner(temp.as_file(), meta);
    }
    temp.as_file().sync_all()?;
    match rename {
        Rename::NoClobber => temp.persist_noclobber(target).map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => ReplaceError::Conflict(Change::Created),
            _ => ReplaceError::Io(e.error),
        })?,
        Rename::IfUnchanged(basis) => {
            unchanged_since(target, basis)?;
            temp.persist(target).map_err(|e| e.error)?
        }
        Rename::Overwrite => temp.persist(target).map_err(|e| e.error)?,
    };
    sync_dir(dir);
    Ok(())
}

/// Ok when `target` is still the file `basis` describes.
fn unchanged_since(target: &Path, basis: Basis<'_>) -> Result<(), ReplaceError> {
    let classify = |error: io::Error| match error.kind() {
        io::ErrorKind::NotFound => ReplaceError::Conflict(Change::Removed),
        _ if is_refused_symlink(&error) => ReplaceError::Conflict(Change::Modified),
        _ => match not_regular_kind(&error) {
            Some(kind) => ReplaceError::NotRegular(kind),
            None => ReplaceError::Io(error),
        },
    };
    match basis {
        Basis::Missing => unreachable!("a new file is created with a no-clobber rename"),
        Basis::Unread(then) => {
            let now = fs::symlink_metadata(target).map_err(classify)?;
            if let Some(kind) = FileKind::of(&now) {
                return Err(ReplaceError::NotRegular(kind));
            }
            if Stamp::of(&now) != Stamp::of(then) {
                return Err(ReplaceError::Conflict(Change::Modified));
            }
        }
        Basis::Read(_, read) => {
            // The bytes, not the stamp: a same-size rewrite within one timestamp tick keeps the
            // stamp, and a rewrite with identical bytes is no conflict at all.
            let (mut file, now) = open_regular(target, Symlinks::Refuse).map_err(classify)?;
            if now.len() != read.len() as u64 {
                return Err(ReplaceError::Conflict(Change::Modified));
            }
            let current = read_bounded(&mut file, read.len() as u64)?;
            if current.truncated || current.bytes != read {
                return Err(ReplaceError::Conflict(Change::Modified));
            }
        }
    }
    Ok(())
}

/// What identifies one version of a file without reading it.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(meta: &Metadata) -> Stamp {
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Stamp { device, inode, len: meta.len(), modified: meta.modified().ok() }
    }
}

fn truncate_on_char_boundary(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Removes the temp files in `dir` left by clawmcp processes that no longer exist (killed
/// mid-write), once per directory per process. Only files of ours are touched: our name
/// pattern, a regular file, owned by our user, and a creator pid that is not alive (a live or
/// unknown pid keeps its file: it may be mid-write). Best effort: a failure only leaves a file.
pub(crate) fn sweep_stale_temps(dir: &Path) {
    static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    {
        let mut swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
        let swept = swept.get_or_insert_with(HashSet::new);
        if swept.len() >= SWEPT_DIRS_REMEMBERED {
            swept.clear();
        }
        if !swept.insert(dir.to_path_buf()) {
            return;
        }
    }
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_creator_pid) else { continue };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        let path = entry.path();
        let ours = fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_file() && owned_by_us(&meta));
        if ours && fs::remove_file(&path).is_ok() {
            tracing::info!(path = %path.display(), pid, "removed a temp file left by a killed clawmcp process");
        }
    }
}

/// The creator pid in a temp file name of ours: `.<name>.<pid>.<random>.clawmcp-tmp`.
fn temp_creator_pid(file_name: &str) -> Option<u32> {
    let stem = file_name.strip_suffix(TEMP_SUFFIX)?;
    let mut parts = stem.rsplitn(3, '.');
    let random = parts.next()?;
    let pid = parts.next()?;
    let head = parts.next()?;
    let well_formed = head.starts_with('.')
        && !random.is_empty()
        && random.bytes().all(|b| b.is_ascii_alphanumeric())
        && !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit());
    well_formed.then(|| pid.parse().ok()).flatten()
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(clawmcp_fs::pid_is_alive)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

#[cfg(unix)]
fn owned_by_us(meta: &Metadata) -> bool {
    std::os::unix::fs::MetadataExt::uid(meta) == nix::unistd::geteuid().as_raw()
}

#[cfg(not(unix))]
fn owned_by_us(_meta: &Metadata) -> bool {
    false
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
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_DIRECTORY: whatever `dir` has become, opening it cannot block (a FIFO is refused).
        let flags = nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC;
        if let Ok(handle) = fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(dir) {
            let _ = handle.sync_all();
        }
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

    /// A file with `content`, and what `edit` would have read of it.
    fn read_basis(path: &Path, content: &str) -> (Metadata, Vec<u8>) {
        fs::write(path, content).unwrap();
        (fs::metadata(path).unwrap(), content.as_bytes().to_vec())
    }

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.txt");
        let (meta, bytes) = read_basis(&target, "old");
        replace(&target, Basis::Read(&meta, &bytes), b"new").unwrap();
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
        let meta = fs::metadata(&script).unwrap();
        replace(&script, Basis::Unread(&meta), b"#!/bin/sh\necho hi\n").unwrap();
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
        replace(&fresh, Basis::Missing, b"x").unwrap();
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

    #[test]
    fn a_name_at_the_file_system_limit_still_gets_a_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("é".repeat(127) + "x");
        assert_eq!(target.file_name().unwrap().len(), 255);
        replace(&target, Basis::Missing, b"long").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"long");
    }

    #[cfg(unix)]
    #[test]
    fn real_path_is_one_key_for_every_spelling_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("a.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("sub/up")).unwrap();
        let key = root.join("a.txt");
        for spelling in ["a.txt", "./a.txt", "sub/../a.txt", "link.txt", "sub/up/a.txt", "sub/up/link.txt"] {
            assert_eq!(real_path(&root.join(spelling)).unwrap(), key, "{spelling}");
        }
        // Not there yet: the nearest existing ancestor, canonicalised, and the rest.
        assert_eq!(real_path(&root.join("sub/up/new/deeper.txt")).unwrap(), root.join("new/deeper.txt"));
        std::os::unix::fs::symlink(root.join("missing"), root.join("dangling")).unwrap();
        assert_eq!(real_path(&root.join("dangling")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn an_edit_basis_changed_by_another_writer_is_a_conflict_and_keeps_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.txt");
        let (meta, bytes) = read_basis(&target, "one two\n");
        // Same size, in place: the stamp may not change within one timestamp tick; the bytes do.
        fs::OpenOptions::new().write(true).open(&target).unwrap().write_all(b"ONE").unwrap();
        let error = replace(&target, Basis::Read(&meta, &bytes), b"1 two\n").unwrap_err();
        assert!(matches!(error, ReplaceError::Conflict(Change::Modified)), "{error:?}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "ONE two\n");
        assert!(leftovers(dir.path()).is_empty());

        // Rewritten with the very bytes we read (another inode): nothing to lose, so no conflict.
        let (meta, bytes) = read_basis(&target, "same\n");
        fs::remove_file(&target).unwrap();
        fs::write(&target, "same\n").unwrap();
        replace(&target, Basis::Read(&meta, &bytes), b"changed\n").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "changed\n");

        let (meta, bytes) = read_basis(&target, "gone\n");
        fs::remove_file(&target).unwrap();
        let error = replace(&target, Basis::Read(&meta, &bytes), b"x").unwrap_err();
        assert!(matches!(error, ReplaceError::Conflict(Change::Removed)), "{error:?}");
        assert!(!target.exists());
    }

    #[test]
    fn a_write_basis_is_the_files_identity_and_a_new_file_never_clobbers() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.txt");
        fs::write(&target, "theirs").unwrap();
        let meta = fs::metadata(&target).unwrap();
        fs::remove_file(&target).unwrap();
        fs::write(&target, "theirs, again").unwrap();
        let error = replace(&target, Basis::Unread(&meta), b"ours").unwrap_err();
        assert!(matches!(error, ReplaceError::Conflict(Change::Modified)), "{error:?}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "theirs, again");

        // We saw no file, so whatever appeared since (a file or a FIFO) is never replaced.
        let fresh = dir.path().join("fresh.txt");
        fs::write(&fresh, "created meanwhile").unwrap();
        let error = replace(&fresh, Basis::Missing, b"ours").unwrap_err();
        assert!(matches!(error, ReplaceError::Conflict(Change::Created)), "{error:?}");
        assert_eq!(fs::read_to_string(&fresh).unwrap(), "created meanwhile");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_target_swapped_for_a_fifo_is_refused_and_stays_a_fifo() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.txt");
        let (meta, bytes) = read_basis(&target, "text");
        fs::remove_file(&target).unwrap();
        nix::unistd::mkfifo(&target, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for basis in [Basis::Read(&meta, &bytes), Basis::Unread(&meta)] {
            let error = replace(&target, basis, b"x").unwrap_err();
            assert!(matches!(error, ReplaceError::NotRegular(FileKind::Fifo)), "{error:?}");
            assert!(fs::symlink_metadata(&target).unwrap().file_type().is_fifo());
        }
    }

    #[test]
    fn temp_names_carry_the_creator_pid() {
        assert_eq!(temp_creator_pid(".a.txt.4242.Ab3xY9.clawmcp-tmp"), Some(4242));
        assert_eq!(temp_creator_pid("..hidden.7.r.clawmcp-tmp"), Some(7));
        for foreign in [".a.txt.Ab3xY9.clawmcp-tmp", "a.txt.42.x.clawmcp-tmp", ".a.42.x.tmp", ".a.4x2.y.clawmcp-tmp"] {
            assert_eq!(temp_creator_pid(foreign), None, "{foreign}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_sweep_removes_only_temp_files_of_dead_creators() {
        let dir = tempfile::tempdir().unwrap();
        let mut exited = std::process::Command::new("true").spawn().unwrap();
        let dead = exited.id();
        exited.wait().unwrap();
        let names = [
            format!(".a.txt.{dead}.Dead01{TEMP_SUFFIX}"),
            format!(".a.txt.{}.Mine01{TEMP_SUFFIX}", std::process::id()),
            format!(".a.txt.1.Init01{TEMP_SUFFIX}"),
            format!(".a.txt.Nopid1{TEMP_SUFFIX}"),
            "a.txt".to_string(),
        ];
        for name in &names {
            fs::write(dir.path().join(name), "x").unwrap();
        }
        sweep_stale_temps(dir.path());
        let mut left: Vec<String> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        let mut expected = names[1..].to_vec();
        expected.sort();
        assert_eq!(left, expected, "only the dead creator's temp file goes");
    }

    /// Set in the child process of the kill test: the directory it writes in.
    const KILLED_WRITER_DIR: &str = "CLAWMCP_TEST_KILLED_WRITER_DIR";
    const KILLED_WRITER_BYTES: usize = 8 * 1024 * 1024;

    /// Kills the child when the test ends, however it ends.
    struct KillOnDrop(std::process::Child);

    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A process killed with SIGKILL in the middle of a write leaves its temp file (nothing
    /// can remove it) and the target whole; the next write into that directory removes it.
    /// The writer is this test binary run again as a child that rewrites one file forever.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_writer_killed_mid_write_leaves_the_target_whole_and_its_temp_file_is_swept() {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;

        if let Some(dir) = std::env::var_os(KILLED_WRITER_DIR) {
            let target = Path::new(&dir).join("data.bin");
            for round in 0u64.. {
                let fill = if round % 2 == 0 { b'a' } else { b'b' };
                let meta = fs::metadata(&target).unwrap();
                replace(&target, Basis::Unread(&meta), &vec![fill; KILLED_WRITER_BYTES]).unwrap();
            }
            unreachable!();
        }

        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("data.bin");
        fs::write(&target, vec![b'a'; KILLED_WRITER_BYTES]).unwrap();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "atomic::tests::a_writer_killed_mid_write_leaves_the_target_whole_and_its_temp_file_is_swept",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(KILLED_WRITER_DIR, dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut child = KillOnDrop(child);
        let pid = Pid::from_raw(child.0.id() as i32);
        let marker = format!(".{}.", child.0.id());
        let temp_of_child = || leftovers(dir.path()).into_iter().find(|name| name.contains(&marker));
        // Stop the child while its temp file exists, confirm it still does (a stopped process
        // changes nothing), then kill it: it died mid-write. Bounded by attempts, not time.
        let mut killed_mid_write = None;
        for _ in 0..1_000_000 {
            if temp_of_child().is_none() {
                std::thread::yield_now();
                continue;
            }
            kill(pid, Signal::SIGSTOP).unwrap();
            if let Some(name) = temp_of_child() {
                kill(pid, Signal::SIGKILL).unwrap();
                killed_mid_write = Some(name);
                break;
            }
            kill(pid, Signal::SIGCONT).unwrap();
        }
        let status = child.0.wait().unwrap();
        assert!(!status.success(), "the writer ended by itself: {status:?}");
        let stale = killed_mid_write.expect("the writer was never caught with its temp file");

        let content = fs::read(&target).unwrap();
        assert_eq!(content.len(), KILLED_WRITER_BYTES, "the target is never partial");
        assert!(content.iter().all(|&b| b == content[0]), "the target is one complete version");
        assert!(leftovers(dir.path()).contains(&stale), "SIGKILL left the temp file behind");

        let meta = fs::metadata(&target).unwrap();
        replace(&target, Basis::Unread(&meta), b"after").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"after");
        assert!(leftovers(dir.path()).is_empty(), "the next write swept {:?}", leftovers(dir.path()));
    }
}
