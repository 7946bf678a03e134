//! Turning filesystem errors into messages a model can act on.
//!
//! A raw `ENOENT: no such file or directory` (what the upstream bridge passed through) does not
//! say which path was meant after resolution, nor what to try next. Every tool routes its I/O
//! errors through [`describe`] so the same failure reads the same everywhere.

use std::io;

use crate::workspace::TargetPath;

/// `action` is a verb phrase: "read", "write", "create the parent directories of".
pub(crate) fn describe(action: &str, target: &TargetPath, err: &io::Error) -> String {
    let path = target.describe();
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
        let other = describe("read", &target(), &io::Error::other("boom"));
        assert_eq!(other, "Cannot read a.txt (resolved to /ws/a.txt): boom");
    }
}
