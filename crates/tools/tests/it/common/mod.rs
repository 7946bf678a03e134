//! Shared fixtures for the local tools' integration tests: a temp-dir workspace, a caller that
//! goes through the public `call_local` entry point, and ways to make the file system refuse.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use clawmcp_mcp::{CallContext, ToolResult};
use clawmcp_tools::{Workspace, call_local};
use serde_json::Value;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub workspace: Workspace,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).with_home(Some(dir.path().join("home")));
        Fixture { dir, workspace }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a file (creating parents) and returns its path.
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolResult {
        let args = args.as_object().cloned().expect("arguments must be an object");
        call_local(tool, &args, &CallContext::detached(), &self.workspace).await.expect("a local tool")
    }

    /// Names of our temp files anywhere under the root (there must never be any left).
    pub fn temp_leftovers(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
            for entry in fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if entry.file_type().unwrap().is_dir() {
                    walk(&path, found);
                } else if path.to_string_lossy().ends_with(".clawmcp-tmp") {
                    found.push(path);
                }
            }
        }
        let mut found = Vec::new();
        walk(self.root(), &mut found);
        found
    }
}

pub fn text(result: &ToolResult) -> &str {
    result.first_text().expect("a text block")
}

/// The text of a successful result; fails the test with the error text otherwise.
pub fn ok_text(result: &ToolResult) -> &str {
    assert!(!result.is_error, "expected success, got error: {}", text(result));
    text(result)
}

/// The text of an error result; fails the test if the call succeeded.
pub fn err_text(result: &ToolResult) -> &str {
    assert!(result.is_error, "expected an error, got: {}", text(result));
    text(result)
}

pub fn set_mtime(path: &Path, secs_since_epoch: u64) {
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(secs_since_epoch);
    fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

/// Whether this process creates files as root (uid 0), judged by the owner of a new file.
/// Root bypasses permission bits, so tests that need a refusal must pick another mechanism.
#[cfg(unix)]
pub fn running_as_root(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join(".uid-probe");
    fs::write(&probe, "").unwrap();
    let uid = fs::metadata(&probe).unwrap().uid();
    fs::remove_file(&probe).unwrap();
    uid == 0
}

/// Makes a directory refuse new entries for as long as the guard lives. As an ordinary user
/// that is mode 0555. As root mode bits are ignored, so the immutable attribute is used
/// (`chattr +i`, which even root cannot write through); if it cannot be set the test fails
/// and says why rather than passing vacuously.
#[cfg(unix)]
pub struct Unwritable {
    dir: PathBuf,
    immutable: bool,
}

#[cfg(unix)]
impl Unwritable {
    pub fn dir(dir: &Path) -> Self {
        use std::os::unix::fs::PermissionsExt;
        if running_as_root(dir) {
            let status = Command::new("chattr").arg("+i").arg(dir).status();
            assert!(
                status.as_ref().is_ok_and(|s| s.success()),
                "as root, making {} unwritable needs `chattr +i` (e2fsprogs) on a file system with the immutable \
                 flag: {status:?}",
                dir.display()
            );
            Unwritable { dir: dir.to_path_buf(), immutable: true }
        } else {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).unwrap();
            Unwritable { dir: dir.to_path_buf(), immutable: false }
        }
    }
}

#[cfg(unix)]
impl Drop for Unwritable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        if self.immutable {
            let _ = Command::new("chattr").arg("-i").arg(&self.dir).status();
        } else {
            let _ = fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o755));
        }
    }
}
