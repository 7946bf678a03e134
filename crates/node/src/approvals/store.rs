//! `<data-dir>/exec-approvals.json` on disk: loading, the compare-and-swap hash, atomic saves.
//!
//! The file is read on every evaluation (it is small) so an edit made by hand applies to the next
//! command. Anything that makes the file untrustworthy — unreadable, not UTF-8, malformed JSON,
//! a version other than 1, larger than [`MAX_FILE_BYTES`], a symbolic link, a hard link (a
//! second name someone else may control), or not a regular file — yields [`Loaded::Invalid`],
//! which callers turn into the fail-closed policy (every command denied) and never overwrite.
//!
//! Only the file itself is checked for links; the data dir above it may be a symlink (dotfile
//! setups link `~/.config`), but it must be ours and writable by nobody else, which the node
//! checks at start (`DataDir::ensure`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use super::model::{ApprovalsFile, EffectivePolicy, FILE_VERSION};
use crate::settings::{create_private_dir, write_private_atomic};

/// A policy file larger than this is refused (read as invalid): far above any real allowlist,
/// small enough that reading it on every command is cheap.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash a missing file has: `missing:` + SHA-256 of the empty string.
pub fn missing_hash() -> String {
    format!("missing:{}", sha256_hex(b""))
}

/// The file as found on disk.
#[derive(Debug, Clone)]
pub enum Loaded {
    Missing,
    Present { file: ApprovalsFile, hash: String },
    Invalid { reason: String },
}

impl Loaded {
    /// The policy `agent_id` is judged by: the file's, the built-in defaults when it is missing,
    /// fail-closed when it is invalid.
    pub fn effective(&self, agent_id: &str) -> EffectivePolicy {
        match self {
            Loaded::Missing => ApprovalsFile::default().effective(agent_id),
            Loaded::Present { file, .. } => file.effective(agent_id),
            Loaded::Invalid { .. } => EffectivePolicy::fail_closed(agent_id),
        }
    }
}

/// A write was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("exec approvals file `{path}` is malformed, unsupported or untrusted ({reason}); fix or delete it")]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot write exec approvals file `{path}`: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// The longest a save waits for another process's load-check-save cycle (milliseconds long).
pub const CROSS_PROCESS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

const CROSS_PROCESS_LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// [`PolicyStore::lock`] held; dropping it releases both locks (closing the directory's
/// descriptor releases the `flock`).
pub struct WriteGuard<'a> {
    _local: MutexGuard<'a, ()>,
    _shared: Option<std::fs::File>,
}

/// The file plus the lock that serialises read-modify-write cycles within this process.
pub struct PolicyStore {
    path: PathBuf,
    write_lock: Mutex<()>,
}

impl PolicyStore {
    pub fn new(path: PathBuf) -> Self {
        PolicyStore { path, write_lock: Mutex::new(()) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and checks the file. Never fails: problems are [`Loaded::Invalid`] (and logged).
    pub fn load(&self) -> Loaded {
        let loaded = read_checked(&self.path);
        if let Loaded::Invalid { reason } = &loaded {
            tracing::warn!(path = %self.path.display(), %reason, "exec approvals file unusable; denying every command");
        }
        loaded
    }

    /// Holds the write lock for a load-check-save cycle: the in-process mutex, then an advisory
    /// lock (`flock`) on the file's directory, which every process writing through a store takes
    /// (the node, and `clawmcp approvals allow|remove|set-default` beside it), so a usage stamp
    /// written by the node cannot undo an owner's edit saved between its load and its save. The
    /// directory is locked rather than a lock file so that nothing new appears in the data dir.
    /// Waiting for another process is bounded by [`CROSS_PROCESS_LOCK_WAIT`]; past it (a writer
    /// stuck mid-save) the cycle goes on without it, still guarded by the hash compare.
    pub fn lock(&self) -> WriteGuard<'_> {
        let local = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let dir =
            self.path.parent().filter(|d| !d.as_os_str().is_empty()).and_then(|dir| std::fs::File::open(dir).ok());
        let shared = dir.and_then(|dir| {
            let deadline = std::time::Instant::now() + CROSS_PROCESS_LOCK_WAIT;
            loop {
                match dir.try_lock() {
                    Ok(()) => return Some(dir),
                    Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(CROSS_PROCESS_LOCK_POLL);
                    }
                    Err(error) => {
                        tracing::warn!(path = %self.path.display(), ?error, "exec approvals: saving without the cross-process lock");
                        return None;
                    }
                }
            }
        });
        WriteGuard { _local: local, _shared: shared }
    }

    /// Writes `file` atomically (0600, data dir 0700) and returns the new hash. Callers hold
    /// [`PolicyStore::lock`] and have just loaded a present or missing (never invalid) file.
    pub fn save(&self, file: &ApprovalsFile) -> Result<String, StoreError> {
        let mut text = serde_json::to_string_pretty(file).expect("the approvals model always serialises");
        text.push('\n');
        let write_error = |source| StoreError::Write { path: self.path.clone(), source };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(write_error)?;
        }
        write_private_atomic(&self.path, text.as_bytes()).map_err(write_error)?;
        Ok(sha256_hex(text.as_bytes()))
    }

    /// Load, let `mutate` change the file (it returns whether it did), save if it did. A missing
    /// file starts as the default file; an invalid one is never overwritten.
    pub fn update(&self, mutate: impl FnOnce(&mut ApprovalsFile) -> bool) -> Result<bool, StoreError> {
        let _guard = self.lock();
        let mut file = match self.load() {
            Loaded::Present { file, .. } => file,
            Loaded::Missing => ApprovalsFile::default_file(),
            Loaded::Invalid { reason } => return Err(StoreError::Invalid { path: self.path.clone(), reason }),
        };
        file.agents.get_or_insert_with(Default::default);
        if !mutate(&mut file) {
            return Ok(false);
        }
        self.save(&file)?;
        Ok(true)
    }
}

fn invalid(reason: impl Into<String>) -> Loaded {
    Loaded::Invalid { reason: reason.into() }
}

/// Reads the file under the state trust rules (`clawmcp_fs::read_state_file`: opened without
/// following a symlink or blocking on a FIFO, then judged on the opened descriptor: a regular
/// file with one name, owned by us, writable by nobody else, at most [`MAX_FILE_BYTES`]), so a
/// swap between a check and the read cannot substitute another file.
fn read_checked(path: &Path) -> Loaded {
    let bytes = match clawmcp_fs::read_state_file(path, clawmcp_fs::StateRules::private(MAX_FILE_BYTES)) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Loaded::Missing,
        Err(e) => return invalid(e.to_string()),
    };
    parse_file(bytes)
}

/// Judges the bytes of an approvals file: UTF-8, a valid approvals document, version 1.
/// Anything else is [`Loaded::Invalid`] with the reason. Public so the fuzz target
/// (`fuzz/fuzz_targets/exec_approvals.rs`) parses exactly what a read parses.
pub fn parse_file(bytes: Vec<u8>) -> Loaded {
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => return invalid("it is not UTF-8 text"),
    };
    let file: ApprovalsFile = match serde_json::from_str(&text) {
        Ok(file) => file,
        Err(e) => return invalid(format!("it is not a valid approvals file: {e}")),
    };
    match file.version {
        Some(FILE_VERSION) => Loaded::Present { hash: sha256_hex(text.as_bytes()), file },
        Some(other) => invalid(format!("it has version {other}; only version {FILE_VERSION} is supported")),
        None => invalid(format!("it has no version; only version {FILE_VERSION} is supported")),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::approvals::model::Security;

    fn store() -> (tempfile::TempDir, PolicyStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = PolicyStore::new(dir.path().join("exec-approvals.json"));
        (dir, store)
    }

    #[test]
    fn missing_hash_is_the_hash_of_nothing() {
        assert_eq!(missing_hash(), "missing:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn hash_is_lowercase_hex_sha256_of_the_raw_text() {
        let (_dir, store) = store();
        let text = "{ \"version\": 1 }";
        fs::write(store.path(), text).unwrap();
        match store.load() {
            Loaded::Present { hash, .. } => assert_eq!(hash, sha256_hex(text.as_bytes())),
            other => panic!("{other:?}"),
        }
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn missing_file_is_missing_and_uses_the_defaults() {
        let (_dir, store) = store();
        let loaded = store.load();
        assert!(matches!(loaded, Loaded::Missing));
        assert_eq!(loaded.effective("main").policy.security, Security::Allowlist);
    }

    fn assert_invalid(store: &PolicyStore, needle: &str) {
        match store.load() {
            Loaded::Invalid { reason } => assert!(reason.contains(needle), "{reason}"),
            other => panic!("expected invalid ({needle}), got {other:?}"),
        }
        assert_eq!(store.load().effective("main").policy.security, Security::Deny);
    }

    #[test]
    fn malformed_and_wrong_version_files_fail_closed() {
        let (_dir, store) = store();
        fs::write(store.path(), "{ not json").unwrap();
        assert_invalid(&store, "not a valid approvals file");
        fs::write(store.path(), r#"{"version":2}"#).unwrap();
        assert_invalid(&store, "version 2");
        fs::write(store.path(), r#"{"defaults":{}}"#).unwrap();
        assert_invalid(&store, "no version");
        fs::write(store.path(), r#"{"version":1,"defaults":{"security":"bogus"}}"#).unwrap();
        assert_invalid(&store, "not a valid approvals file");
        fs::write(store.path(), [0xff, 0xfe]).unwrap();
        assert_invalid(&store, "UTF-8");
    }

    #[test]
    fn a_directory_at_the_path_fails_closed() {
        let (_dir, store) = store();
        fs::create_dir(store.path()).unwrap();
        assert_invalid(&store, "not a regular file");
    }

    #[test]
    fn a_file_at_the_size_limit_is_read_and_one_byte_more_is_refused() {
        let (_dir, store) = store();
        let head = r#"{"version":1}"#;
        let padded = format!("{head}{}", " ".repeat(MAX_FILE_BYTES as usize - head.len()));
        fs::write(store.path(), &padded).unwrap();
        assert!(matches!(store.load(), Loaded::Present { .. }));
        fs::write(store.path(), format!("{padded} ")).unwrap();
        assert_invalid(&store, "larger than");
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_and_hard_linked_files_fail_closed() {
        let (dir, store) = store();
        let real = dir.path().join("real.json");
        fs::write(&real, r#"{"version":1,"defaults":{"security":"full"}}"#).unwrap();
        std::os::unix::fs::symlink(&real, store.path()).unwrap();
        assert_invalid(&store, "symbolic link");
        fs::remove_file(store.path()).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), store.path()).unwrap();
        assert_invalid(&store, "symbolic link");
        fs::remove_file(store.path()).unwrap();
        fs::hard_link(&real, store.path()).unwrap();
        assert_invalid(&store, "hard links");
    }

    #[test]
    fn update_saves_privately_and_refuses_an_invalid_file() {
        let (_dir, store) = store();
        assert!(store.update(|_| true).unwrap());
        let Loaded::Present { file, .. } = store.load() else { panic!("saved file must load") };
        assert_eq!(file, ApprovalsFile::default_file());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(store.path()).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(!store.update(|_| false).unwrap(), "no change, no write");
        fs::write(store.path(), "garbage").unwrap();
        assert!(matches!(store.update(|_| true), Err(StoreError::Invalid { .. })));
        assert_eq!(fs::read_to_string(store.path()).unwrap(), "garbage", "an invalid file is never overwritten");
    }

    #[test]
    fn a_save_waits_for_another_process_holding_the_directory_lock() {
        let (dir, store) = store();
        // Another process's cycle, as the kernel sees it: a flock on the directory.
        let other = std::fs::File::open(dir.path()).unwrap();
        other.lock().unwrap();
        let (started, saved) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                started.0.send(()).unwrap();
                saved.0.send(store.update(|_| true).unwrap()).unwrap();
            });
            started.1.recv().unwrap();
            assert!(
                saved.1.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
                "the save waits while the other cycle holds the lock"
            );
            assert!(!store.path().exists());
            other.unlock().unwrap();
            assert!(saved.1.recv_timeout(CROSS_PROCESS_LOCK_WAIT).unwrap());
        });
        assert!(matches!(store.load(), Loaded::Present { .. }));
    }

    #[test]
    fn a_lock_held_past_the_bound_does_not_stop_the_save() {
        let (dir, store) = store();
        let stuck = std::fs::File::open(dir.path()).unwrap();
        stuck.lock().unwrap();
        let started = std::time::Instant::now();
        assert!(store.update(|_| true).unwrap(), "saved without the cross-process lock");
        assert!(started.elapsed() >= CROSS_PROCESS_LOCK_WAIT, "it waited the bound first");
        assert!(matches!(store.load(), Loaded::Present { .. }));
    }

    #[test]
    fn save_creates_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let store = PolicyStore::new(dir.path().join("a/b/exec-approvals.json"));
        let hash = store.save(&ApprovalsFile::default_file()).unwrap();
        match store.load() {
            Loaded::Present { hash: loaded, .. } => assert_eq!(loaded, hash),
            other => panic!("{other:?}"),
        }
    }
}
