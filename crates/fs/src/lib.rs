//! Private files for clawmcp's state (tokens, settings, policies, device keys), in one place so
//! every secret is written the same careful way.
//!
//! - [`create_private_dir`]: new directories are 0700; an existing one must be ours and writable
//!   by nobody else (`state`: the trust rules for every state dir and file, [`read_state_file`]).
//! - [`write_private_atomic`] / [`write_atomic`]: temp file in the same directory (0600 or the
//!   mode asked, `O_EXCL`), fsync, rename over the target, fsync the directory. Readers see the old or the new file, never a torn one,
//!   and a crash cannot lose the rename.
//! - [`open_regular`] / [`read_bounded`]: opening without blocking on a FIFO, refusing what is
//!   not a regular file on the opened descriptor, and reads bounded by bytes read (`open`).
//! - [`FileStamp`]: what one `stat` says about a file, so "re-read when it changed" costs a
//!   syscall per use instead of a watcher thread. An atomic rewrite always changes the inode.
//! - [`Writeback`]: a large file written as a stream starts reaching the disk while it is written,
//!   so its closing fsync does not wait for all of it (`writeback`).

mod open;
mod state;
mod writeback;

pub use open::{
    BoundedRead, FileKind, NotRegular, Symlinks, into_text, is_refused_symlink, not_regular_kind, open_regular,
    read_bounded, read_regular_file,
};
pub use state::{
    Exposed, StateRules, Untrusted, check_private_dir, open_private_append, open_state_file, read_state_file, untrusted,
};
pub use writeback::{WRITEBACK_BATCH, Writeback};

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;

/// Creates `dir` and missing parents with mode 0700 (on Unix). An existing directory must pass
/// [`check_private_dir`] (ours, writable by nobody else): it is refused otherwise, with the fix.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    match fs::metadata(dir) {
        Ok(_) => {
            check_private_dir(dir)?;
            sweep_stale_temp_files(dir);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir)
        }
        Err(e) => Err(e),
    }
}

/// Removes the temp files a killed clawmcp left in `dir` (see [`write_private_atomic`]): those
/// whose writer's pid is no longer alive. Best effort; called when a state dir is first used.
pub fn sweep_stale_temp_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_file_writer) else { continue };
        if !pid_is_alive(pid) {
            match fs::remove_file(entry.path()) {
                Ok(()) => {
                    tracing::info!(path = %entry.path().display(), "removed a temp file left by a killed clawmcp")
                }
                Err(e) => tracing::debug!(path = %entry.path().display(), error = %e, "cannot remove stale temp file"),
            }
        }
    }
}

/// The writer's pid in one of our temp names, `.<name>.<pid>-<random>.tmp`.
fn temp_file_writer(name: &str) -> Option<i32> {
    let stem = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, tail) = stem.rsplit_once('.')?;
    let (pid, random) = tail.split_once('-')?;
    (random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit())).then_some(())?;
    pid.parse().ok().filter(|pid| *pid > 0)
}

/// Whether a process with this pid exists (signal 0; EPERM means it exists but is another
/// user's). Used to tell a dead writer's leftover temp file from a live writer's.
pub fn pid_is_alive(pid: i32) -> bool {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(Errno::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Writes `contents` to `path` atomically with mode 0600.
pub fn write_private_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomic(path, contents, 0o600, || Ok(())).map(|_| ())
}

/// Writes `contents` to `path` atomically: a temp file in the same directory (`mode`, `O_EXCL`),
/// fsync, `before_rename` (a last check of what is about to be replaced; its error aborts), rename
/// over the target, fsync the directory. On any failure the temp file is removed and the target is
/// as it was. Returns the new file's `fstat` (its identity: the rename keeps the inode).
pub fn write_atomic(
    path: &Path,
    contents: &[u8],
    mode: u32,
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<fs::Metadata> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // At most 64 characters of the name: a 255-byte name plus the suffix would pass NAME_MAX.
    let name: String = path.file_name().and_then(|n| n.to_str()).unwrap_or("file").chars().take(64).collect();
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
    let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    // The pid lets the next start tell a killed writer's leftover from a live writer's file.
    let tmp = dir.join(format!(".{name}.{}-{suffix}.tmp", std::process::id()));
    let written = (|| {
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        #[cfg(not(unix))]
        let _ = mode;
        let mut file = options.open(&tmp)?;
        #[cfg(unix)]
        {
            // The umask may have narrowed `mode` at creation; an overwritten file keeps its mode.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        file.sync_all()?;
        let meta = file.metadata()?;
        before_rename()?;
        fs::rename(&tmp, path)?;
        Ok(meta)
    })();
    let meta = match written {
        Ok(meta) => meta,
        Err(error) => {
            let _ = fs::remove_file(&tmp);
            return Err(error);
        }
    };
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    Ok(meta)
}

/// Warns (once per call) when `path` grants group or others any access; `fix` is the command to
/// suggest.
pub fn warn_if_exposed(path: &Path, meta: &fs::Metadata, fix: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format_args!("{mode:o}"),
                "accessible to other users; run `{fix}` on it"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta, fix);
}

/// What a `stat` of a file showed. Any difference between two stamps means "read it again".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStamp {
    File { modified: Option<SystemTime>, len: u64, inode: u64 },
    Missing,
    StatFailed(io::ErrorKind),
}

impl FileStamp {
    pub fn of(path: &Path) -> Self {
        // lstat: a symlink planted in place of the file is a change, and is then refused on read.
        match fs::symlink_metadata(path) {
            Ok(meta) => FileStamp::File { modified: meta.modified().ok(), len: meta.len(), inode: inode(&meta) },
            Err(e) if e.kind() == io::ErrorKind::NotFound => FileStamp::Missing,
            Err(e) => FileStamp::StatFailed(e.kind()),
        }
    }
}

#[cfg(unix)]
fn inode(meta: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn new_dirs_are_0700_and_files_0600() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("secret");
        write_private_atomic(&file, b"x").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(fs::read(&file).unwrap(), b"x");
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        write_private_atomic(&file, b"one").unwrap();
        write_private_atomic(&file, b"two").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from("f")]);
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temp_file() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("dir");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inside"), b"keep").unwrap();
        assert!(write_private_atomic(&target, b"x").is_err(), "cannot rename a file over a non-empty directory");
        assert_eq!(fs::read(target.join("inside")).unwrap(), b"keep");
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn temp_files_of_dead_writers_are_swept_live_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("d");
        create_private_dir(&dir).unwrap();
        let dead = ".settings.json.999999999-0123456789abcdef.tmp";
        let live = format!(".settings.json.{}-0123456789abcdef.tmp", std::process::id());
        let unrelated = ".settings.json.1-0123.tmp";
        for name in [dead, &live, unrelated] {
            fs::write(dir.join(name), b"x").unwrap();
        }
        sweep_stale_temp_files(&dir);
        assert!(!dir.join(dead).exists(), "a dead writer's temp file is removed");
        assert!(dir.join(&live).exists() && dir.join(unrelated).exists());
        assert_eq!(temp_file_writer(".a.b.42-0123456789abcdef.tmp"), Some(42));
    }

    #[cfg(unix)]
    #[test]
    fn an_atomic_write_takes_the_mode_asked_and_a_failed_last_check_changes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        let meta = write_atomic(&file, b"one", 0o644, || Ok(())).unwrap();
        assert_eq!((mode(&file), meta.ino()), (0o644, fs::metadata(&file).unwrap().ino()));
        let refused = write_atomic(&file, b"two", 0o600, || Err(io::Error::other("target changed")));
        assert_eq!(refused.unwrap_err().to_string(), "target changed");
        assert_eq!(fs::read(&file).unwrap(), b"one");
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 1, "no temp file is left");
    }

    #[test]
    fn a_file_path_is_not_a_directory() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        fs::write(&file, b"").unwrap();
        assert!(create_private_dir(&file).is_err());
    }

    #[test]
    fn stamps_change_on_atomic_rewrite_even_with_same_size() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        assert_eq!(FileStamp::of(&file), FileStamp::Missing);
        write_private_atomic(&file, b"aaaa").unwrap();
        let first = FileStamp::of(&file);
        write_private_atomic(&file, b"bbbb").unwrap();
        assert_ne!(FileStamp::of(&file), first);
    }
}
