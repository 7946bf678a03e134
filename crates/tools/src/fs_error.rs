//! Turning filesystem errors into messages a model can act on.
//!
//! A raw `ENOENT: no such file or directory` (what the upstream bridge passed through) does not
//! say which path was meant after resolution, nor what to try next. Every tool routes its I/O
//! errors through [`describe`] so the same failure reads the same everywhere.

use std::io;

use clawmcp_fs::{FileKind, not_regular_kind};

use crate::atomic::ReplaceError;
use crate::workspace::TargetPath;

/// `action` is a verb phrase: "read", "write", "create the parent directories of".
pub(crate) fn describe(action: &str, target: &TargetPath, err: &io::Error) -> String {
    let path = target.describe();
    if let Some(kind) = not_regular_kind(err) {
        return not_regular(action, target, kind);
    }
    match err.kind() {
        io::ErrorKind::NotFound => format!("File not found: {path}. {}", target.lookup_hint()),
        io::ErrorKind::PermissionDenied => format!(
            "Permission denied: cannot {action} {path}. The tools process runs with its user's OS permissions \
             and the file system refused ({err}). Change the permissions or choose another path."
        ),
        io::ErrorKind::IsADirectory => {
            format!("Cannot {action} {path}: it is a directory. Pass a file path (use glob to list a directory).")
        }
        io::ErrorKind::NotADirectory => {
            format!("Cannot {action} {path}: a component of the path is a file, not a directory. Check the path.")
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            format!("Cannot {action} {path}: it is on a read-only file system. Choose a writable location.")
        }
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            format!("Cannot {action} {path}: no space left (disk full or quota exceeded). Free space and retry.")
        }
        _ => format!("Cannot {action} {path}: {err}"),
    }
}

/// Why a FIFO, device, socket or directory is refused, and what to pass instead. The tools
/// only ever read or replace regular files: anything else could block forever, never end, or
/// be destroyed by a replacement.
pub(crate) fn not_regular(action: &str, target: &TargetPath, kind: FileKind) -> String {
    let path = target.describe();
    let why = match kind {
        FileKind::Directory => {
            return format!(
                "Cannot {action} {path}: it is a directory. Pass a file path (use glob to list a directory)."
            );
        }
        FileKind::Fifo => {
            "reading a FIFO waits for a writer that may never come, and replacing it would cut off the \
                           programs that use it"
        }
        FileKind::CharDevice | FileKind::BlockDevice => {
            "a device can yield data without end (like /dev/zero), and replacing its node would destroy it"
        }
        FileKind::Socket => {
            "a socket has no content to read, and replacing it would cut off the server listening on it"
        }
        FileKind::Symlink | FileKind::Other => "only regular files can be read or replaced safely",
    };
    format!(
        "Cannot {action} {path}: it is {kind}, not a regular file, and was left untouched ({why}). Pass the path of a \
         regular file."
    )
}

/// Why [`crate::atomic::replace`] wrote nothing. `tool` names the call ("edit") and `advice` is
/// what to do about a conflict.
pub(crate) fn replace_failure(tool: &str, target: &TargetPath, error: &ReplaceError, advice: &str) -> String {
    match error {
        ReplaceError::Io(e) => describe("write", target, e),
        ReplaceError::NotRegular(kind) => not_regular(tool, target, *kind),
        ReplaceError::Conflict(change) => format!(
            "Conflict: {} {} by another program while this {tool} was in progress. Nothing was written, so that \
             change is not lost. {advice}",
            target.describe(),
            change.describe()
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::Workspace;

    fn target() -> TargetPath {
        Workspace::new("/ws").with_home(Some(PathBuf::from("/h"))).resolve("a.txt").unwrap()
    }

    // Root bypasses mode bits, so the integration tests cannot always provoke EACCES; the
    // mapping itself is pinned here with synthetic errors of each kind.
    #[test]
    fn each_kind_has_its_own_actionable_message() {
        let cases = [
            (io::ErrorKind::NotFound, "File not found: a.txt (resolved to /ws/a.txt). Relative paths resolve"),
            (io::ErrorKind::PermissionDenied, "Permission denied: cannot read a.txt"),
            (io::ErrorKind::IsADirectory, "it is a directory"),
            (io::ErrorKind::NotADirectory, "a component of the path is a file"),
            (io::ErrorKind::ReadOnlyFilesystem, "read-only file system"),
            (io::ErrorKind::StorageFull, "no space left"),
        ];
        for (kind, expected) in cases {
            let message = describe("read", &target(), &io::Error::from(kind));
            assert!(message.contains(expected), "{kind:?}: {message}");
        }
        let fifo = io::Error::new(io::ErrorKind::InvalidInput, clawmcp_fs::NotRegular(FileKind::Fifo));
        let message = describe("edit", &target(), &fifo);
        assert!(message.starts_with("Cannot edit a.txt (resolved to /ws/a.txt): it is a FIFO (named pipe), not a regular file, and was left untouched (reading a FIFO waits"), "{message}");
        let other = describe("read", &target(), &io::Error::other("boom"));
        assert_eq!(other, "Cannot read a.txt (resolved to /ws/a.txt): boom");
    }
}
