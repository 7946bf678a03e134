//! The pending-yield store: which `sessions_spawn` runs a later `sessions_yield` waits for.
//!
//! One file per run in `<workspace>/temp/openclaw-mcp-pending-yields/` (the upstream bridge's
//! directory, so both bridges see the same runs): the name is the SHA-256 of the run id plus
//! `.json`, the content `{runId, sessionKey, createdAt}`. Each record is written to a temporary
//! file and renamed into place (clawmcp-fs), so concurrent spawns — in one process or in several
//! bridge processes — never lose an update: there is no shared file to read-modify-write.
//! Directory 0700, files 0600.
//!
//! Records are scoped by the requester session key (`null` for none): a yield only waits for the
//! runs its own requester spawned. Finished runs are removed by the yield that sees them finish;
//! a record older than [`PENDING_MAX_AGE`] is removed when read (its requester never yielded),
//! which the upstream store never did. Reads skip temporary files, non-regular files and files
//! over [`MAX_RECORD_BYTES`], and look at no more than [`MAX_RECORDS_SCANNED`] entries.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tracing::{debug, warn};

/// The store's directory under the workspace.
pub const PENDING_DIR: &str = "temp/openclaw-mcp-pending-yields";

/// A record larger than this is not ours (the real ones are ~150 bytes).
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// Directory entries looked at per read, so a flooded directory cannot stall a yield.
pub const MAX_RECORDS_SCANNED: usize = 10_000;

/// A run nobody yielded on for this long is forgotten.
pub const PENDING_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// One spawned run awaiting a yield.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRun {
    pub run_id: String,
    /// The requester that spawned it; `None` for an unscoped spawn.
    pub session_key: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// The store rooted at one workspace. Cheap to clone; all state is on disk.
#[derive(Debug, Clone)]
pub struct PendingStore {
    dir: PathBuf,
}

impl PendingStore {
    pub fn new(workspace: &Path) -> Self {
        PendingStore { dir: workspace.join(PENDING_DIR) }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records `run_id` as spawned by `session_key` (last writer wins for one run id).
    pub fn record(&self, run_id: &str, session_key: Option<&str>) -> io::Result<()> {
        clawmcp_fs::create_private_dir(&self.dir)?;
        let created_at = OffsetDateTime::now_utc().format(&Rfc3339).map_err(io::Error::other)?;
        let run = PendingRun { run_id: run_id.to_owned(), session_key: session_key.map(str::to_owned), created_at };
        let json = serde_json::to_vec(&run).map_err(io::Error::other)?;
        clawmcp_fs::write_private_atomic(&self.path_of(run_id), &json)
    }

    /// The runs spawned by exactly `session_key`, oldest first. Unreadable entries are skipped;
    /// expired ones are removed.
    pub fn read(&self, session_key: Option<&str>) -> Vec<PendingRun> {
        // Records in a directory someone else can write could name runs they chose.
        match clawmcp_fs::check_private_dir(&self.dir) {
            Err(error) if clawmcp_fs::untrusted(&error).is_some() => {
                warn!(%error, "not reading the pending-yield store");
                return Vec::new();
            }
            _ => {}
        }
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(error) => {
                warn!(dir = %self.dir.display(), %error, "cannot read the pending-yield store");
                return Vec::new();
            }
        };
        let now = SystemTime::now();
        let mut runs: Vec<PendingRun> = Vec::new();
        for entry in entries.take(MAX_RECORDS_SCANNED).flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let Some(run) = read_record(&path) else { continue };
            if is_expired(&run, now) {
                debug!(run_id = %run.run_id, "forgetting a pending run nobody yielded on");
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if run.session_key.as_deref() == session_key && !runs.iter().any(|r| r.run_id == run.run_id) {
                runs.push(run);
            }
        }
        runs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.run_id.cmp(&b.run_id)));
        runs
    }

    /// Forgets `run_id` (no error if it is not there).
    pub fn remove(&self, run_id: &str) {
        match std::fs::remove_file(self.path_of(run_id)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(error) => warn!(run_id, %error, "cannot remove a finished run from the pending-yield store"),
        }
    }

    fn path_of(&self, run_id: &str) -> PathBuf {
        let digest = Sha256::digest(run_id.as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }
}

/// A record under the state trust rules (`clawmcp_fs::read_state_file`); anything refused is
/// skipped, with the reason at debug level.
fn read_record(path: &Path) -> Option<PendingRun> {
    let text = match clawmcp_fs::read_state_file(path, clawmcp_fs::StateRules::private(MAX_RECORD_BYTES)) {
        Ok(text) => text?,
        Err(error) => {
            debug!(path = %path.display(), %error, "skipping a pending-yield record");
            return None;
        }
    };
    let run: PendingRun = serde_json::from_slice(&text).ok()?;
    (!run.run_id.is_empty()).then_some(run)
}

fn is_expired(run: &PendingRun, now: SystemTime) -> bool {
    let Ok(created) = OffsetDateTime::parse(&run.created_at, &Rfc3339) else { return false };
    let created = SystemTime::UNIX_EPOCH + Duration::from_secs(created.unix_timestamp().max(0) as u64);
    now.duration_since(created).is_ok_and(|age| age > PENDING_MAX_AGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_scoped_exactly_and_remove_forgets_one_run() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (PendingStore::new(dir.path()), PendingStore::new(dir.path()));
        a.record("run-a", Some("agent:main:discord:direct:a")).unwrap();
        b.record("run-b", Some("agent:main:discord:direct:b")).unwrap();
        a.record("run-main", None).unwrap();
        let ids = |store: &PendingStore, key| store.read(key).into_iter().map(|r| r.run_id).collect::<Vec<_>>();
        assert_eq!(ids(&b, Some("agent:main:discord:direct:a")), ["run-a"]);
        assert_eq!(ids(&a, Some("agent:main:discord:direct:b")), ["run-b"]);
        assert_eq!(ids(&a, None), ["run-main"]);
        b.remove("run-a");
        b.remove("never-recorded");
        assert!(ids(&a, Some("agent:main:discord:direct:a")).is_empty());
        assert_eq!(ids(&a, Some("agent:main:discord:direct:b")), ["run-b"]);
    }

    #[cfg(unix)]
    #[test]
    fn private_modes_and_no_temp_files_left() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = PendingStore::new(dir.path());
        store.record("r1", None).unwrap();
        assert_eq!(std::fs::metadata(store.dir()).unwrap().permissions().mode() & 0o777, 0o700);
        let files: Vec<_> = std::fs::read_dir(store.dir()).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].extension().unwrap(), "json");
        assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn junk_oversized_and_temp_files_are_skipped_and_old_records_expire() {
        let dir = tempfile::tempdir().unwrap();
        let store = PendingStore::new(dir.path());
        store.record("fresh", None).unwrap();
        std::fs::write(store.dir().join("junk.json"), "not json").unwrap();
        std::fs::write(store.dir().join(".x.json.1234.tmp"), r#"{"runId":"tmp","sessionKey":null,"createdAt":"x"}"#)
            .unwrap();
        let big =
            format!(r#"{{"runId":"big","sessionKey":null,"createdAt":"{}"}}"#, " ".repeat(MAX_RECORD_BYTES as usize));
        std::fs::write(store.dir().join("big.json"), big).unwrap();
        let old = r#"{"runId":"old","sessionKey":null,"createdAt":"2020-01-01T00:00:00Z"}"#;
        std::fs::write(store.dir().join("old.json"), old).unwrap();
        let ids: Vec<_> = store.read(None).into_iter().map(|r| r.run_id).collect();
        assert_eq!(ids, ["fresh"]);
        assert!(!store.dir().join("old.json").exists(), "an expired record is removed");
    }

    #[test]
    fn expiry_is_at_the_edge() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let at = |secs_ago: u64| {
            let created = OffsetDateTime::from_unix_timestamp(1_000_000_000 - secs_ago as i64).unwrap();
            PendingRun { run_id: "r".into(), session_key: None, created_at: created.format(&Rfc3339).unwrap() }
        };
        assert!(!is_expired(&at(PENDING_MAX_AGE.as_secs()), now));
        assert!(is_expired(&at(PENDING_MAX_AGE.as_secs() + 1), now));
        let unparsable = PendingRun { run_id: "r".into(), session_key: None, created_at: "yesterday".into() };
        assert!(!is_expired(&unparsable, now));
    }
}
