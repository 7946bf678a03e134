//! Opening files that may not be what their name says: a FIFO, a device, a socket or a symlink
//! where a regular file is expected.
//!
//! Every file the product reads, its own state or a path an agent named, is opened through
//! [`open_regular`]: non-blocking (opening a FIFO for reading never waits for a writer), then
//! checked with `fstat` on the opened descriptor, so there is no window between the check and the
//! use in which the name could be swapped. Anything but a regular file is refused with an error
//! that names what it is. Reads are bounded by the bytes actually read ([`read_bounded`]), never
//! by the length the file reports: `/dev/zero` and procfs files report 0.

use std::fmt;
use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// Whether a symlink in the last path component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Follow it (a user's path: `config -> real/config` means `real/config`).
    Follow,
    /// Refuse it (`O_NOFOLLOW`): clawmcp's own state files are never read through a link.
    Refuse,
}

/// What a path turned out to be when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Directory,
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
    Symlink,
    Other,
}

impl FileKind {
    /// The kind of a file that is not regular, `None` for a regular file.
    pub fn of(meta: &Metadata) -> Option<FileKind> {
        let kind = meta.file_type();
        if kind.is_file() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_fifo() {
                return Some(FileKind::Fifo);
            }
            if kind.is_char_device() {
                return Some(FileKind::CharDevice);
            }
            if kind.is_block_device() {
                return Some(FileKind::BlockDevice);
            }
            if kind.is_socket() {
                return Some(FileKind::Socket);
            }
        }
        Some(if kind.is_dir() {
            FileKind::Directory
        } else if kind.is_symlink() {
            FileKind::Symlink
        } else {
            FileKind::Other
        })
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "not a regular file",
        })
    }
}

/// The error inside an [`io::Error`] (kind `InvalidInput`) when a path is not a regular file.
/// `describe` in callers can downcast to it with [`not_regular_kind`].
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("it is {0}, not a regular file")]
pub struct NotRegular(pub FileKind);

/// The [`FileKind`] when `error` came from [`open_regular`] refusing a non-regular file.
pub fn not_regular_kind(error: &io::Error) -> Option<FileKind> {
    error.get_ref().and_then(|inner| inner.downcast_ref::<NotRegular>()).map(|e| e.0)
}

/// True when `error` is the kernel refusing to follow a symlink under [`Symlinks::Refuse`].
pub fn is_refused_symlink(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32)
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// Opens `path` for reading without blocking and returns it with its `fstat`, or an error if it
/// is not a regular file (see [`not_regular_kind`]) or, under [`Symlinks::Refuse`], if it is a
/// symlink (see [`is_refused_symlink`]).
pub fn open_regular(path: &Path, symlinks: Symlinks) -> io::Result<(File, Metadata)> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use nix::fcntl::OFlag;
        use std::os::unix::fs::OpenOptionsExt;
        let mut flags = OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
        if symlinks == Symlinks::Refuse {
            flags |= OFlag::O_NOFOLLOW;
        }
        options.custom_flags(flags.bits());
    }
    let file = options.open(path).map_err(|error| name_what_could_not_be_opened(path, symlinks, error))?;
    let meta = file.metadata()?;
    if let Some(kind) = FileKind::of(&meta) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, NotRegular(kind)));
    }
    Ok((file, meta))
}

/// Some special files cannot even be opened: a socket (`ENXIO`), a device without a driver
/// (`ENXIO`, `ENODEV`). The open failed, so nothing was read; a `stat` of the name then says
/// what it is, for an error that names it like any other refusal.
fn name_what_could_not_be_opened(path: &Path, symlinks: Symlinks, error: io::Error) -> io::Error {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        if matches!(error.raw_os_error().map(Errno::from_raw), Some(Errno::ENXIO | Errno::ENODEV)) {
            let meta = match symlinks {
                Symlinks::Follow => fs::metadata(path),
                Symlinks::Refuse => fs::symlink_metadata(path),
            };
            if let Some(kind) = meta.ok().as_ref().and_then(FileKind::of) {
                return io::Error::new(io::ErrorKind::InvalidInput, NotRegular(kind));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (path, symlinks);
    error
}

/// What [`read_bounded`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundedRead {
    /// At most `limit` bytes.
    pub bytes: Vec<u8>,
    /// True when the source had more than `limit` bytes (the rest was not read).
    pub truncated: bool,
}

/// Reads at most `limit` bytes from `source`, counting what is actually read (a device or a
/// growing file can yield more than its reported length). Reads one byte past the limit to tell
/// "exactly `limit`" from "more".
pub fn read_bounded(source: &mut impl Read, limit: u64) -> io::Result<BoundedRead> {
    let mut bytes = Vec::new();
    source.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    let truncated = bytes.len() as u64 > limit;
    if truncated {
        bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    Ok(BoundedRead { bytes, truncated })
}

/// Reads a whole regular file that a user named (a config file, a `--token-file`): symlinks
/// followed, never blocking on a FIFO or reading a device, at most `limit` bytes (a larger file is
/// an `InvalidData` error naming the limit, not a silent cut).
pub fn read_regular_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (mut file, _) = open_regular(path, Symlinks::Follow)?;
    let read = read_bounded(&mut file, limit)?;
    if read.truncated {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("it is larger than {limit} bytes")));
    }
    Ok(read.bytes)
}

/// `bytes` as text, or an `InvalidData` error saying it is not UTF-8 (for callers that pass the
/// error on as "cannot read `path`: it is not UTF-8 text").
pub fn into_text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        path
    }

    #[test]
    fn a_fifo_is_refused_at_once_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        // No writer exists: a blocking open would hang this test forever.
        let error = open_regular(&path, Symlinks::Follow).unwrap_err();
        assert_eq!(not_regular_kind(&error), Some(FileKind::Fifo));
        assert!(error.to_string().contains("FIFO"), "{error}");
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let error = open_regular(Path::new("/dev/zero"), Symlinks::Follow).unwrap_err();
        assert_eq!(not_regular_kind(&error), Some(FileKind::CharDevice));
        let dir = tempfile::tempdir().unwrap();
        let error = open_regular(dir.path(), Symlinks::Follow).unwrap_err();
        assert_eq!(not_regular_kind(&error), Some(FileKind::Directory));
    }

    #[test]
    fn a_socket_which_cannot_be_opened_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        for symlinks in [Symlinks::Follow, Symlinks::Refuse] {
            let error = open_regular(&path, symlinks).unwrap_err();
            assert_eq!(not_regular_kind(&error), Some(FileKind::Socket), "{error}");
        }
    }

    #[test]
    fn a_symlink_is_followed_or_refused_as_asked() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::write(&real, b"data").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let (mut file, meta) = open_regular(&link, Symlinks::Follow).unwrap();
        assert_eq!(meta.len(), 4);
        assert_eq!(read_bounded(&mut file, 10).unwrap().bytes, b"data");
        let error = open_regular(&link, Symlinks::Refuse).unwrap_err();
        assert!(is_refused_symlink(&error), "{error}");
        assert!(open_regular(&real, Symlinks::Refuse).is_ok());
    }

    #[test]
    fn whole_user_files_are_read_up_to_their_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, [1u8; 8]).unwrap();
        assert_eq!(read_regular_file(&path, 8).unwrap().len(), 8);
        let error = read_regular_file(&path, 7).unwrap_err();
        assert!(error.to_string().contains("larger than 7 bytes"), "{error}");
        assert_eq!(not_regular_kind(&read_regular_file(&fifo(dir.path()), 8).unwrap_err()), Some(FileKind::Fifo));
    }

    #[test]
    fn reads_are_bounded_by_bytes_read_at_the_exact_edge() {
        let mut zero = File::open("/dev/zero").unwrap();
        let read = read_bounded(&mut zero, 4096).unwrap();
        assert_eq!((read.bytes.len(), read.truncated), (4096, true));
        let exact = read_bounded(&mut &[7u8; 16][..], 16).unwrap();
        assert_eq!((exact.bytes.len(), exact.truncated), (16, false));
        let over = read_bounded(&mut &[7u8; 17][..], 16).unwrap();
        assert_eq!((over.bytes.len(), over.truncated), (16, true));
        assert_eq!(read_bounded(&mut &[][..], 0).unwrap(), BoundedRead { bytes: vec![], truncated: false });
    }
}
