//! Private files for clawmcp's state (tokens, settings, policies, device keys), in one place so
//! every secret is written the same careful way.
//!
//! - [`create_private_dir`]: new directories are 0700; an existing one is left alone, with a
//!   warning if other users can enter it (it may be shared on purpose).
//! - [`write_private_atomic`]: temp file in the same directory (0600, `O_EXCL`), fsync, rename
//!   over the target, fsync the directory. Readers see the old or the new file, never a torn one,
//!   and a crash cannot lose the rename.
//! - [`open_regular`] / [`read_bounded`]: opening without blocking on a FIFO, refusing what is
//!   not a regular file on the opened descriptor, and reads bounded by bytes read (`open`).
//! - [`FileStamp`]: what one `stat` says about a file, so "re-read when it changed" costs a
//!   syscall per use instead of a watcher thread. An atomic rewrite always changes the inode.

mod open;

pub use open::{
    BoundedRead, FileKind, NotRegular, Symlinks, is_refused_symlink, not_regular_kind, open_regular, read_bounded,
};

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;

/// Creates `dir` and missing parents with mode 0700 (on Unix). An existing directory keeps its
/// mode; a warning names it when group or others have access.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            warn_if_exposed(dir, &meta, "chmod 700");
            Ok(())
        }
        Ok(_) => Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} is not a directory", dir.display()))),
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

/// Writes `contents` to `path` atomically with mode 0600.
pub fn write_private_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
    let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!(".{name}.{suffix}.tmp"));
    let written = (|| {
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
        return written;
    }
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    Ok(())
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
        match fs::metadata(path) {
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
