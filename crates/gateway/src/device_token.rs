//! The device token a gateway hands out in `hello-ok.auth.deviceToken`, kept so a rotated shared
//! token does not cost a re-pairing.
//!
//! When the operator changes `gateway.auth.token`, the gateway closes every socket with 4001 and
//! refuses the stale token with `details.canRetryWithDeviceToken: true`; the real node host then
//! reconnects with `auth: {token: <stale>, deviceToken}` and is let in as the same paired device
//! (`docs/gateway-protocol.md` §9.3). We do the same: [`crate::GatewayClient`] saves every token it
//! is issued here and retries once with it when the gateway says it may.
//!
//! One JSON file per data dir (`device-auth.json`, 0600 in a 0700 dir, opened without following
//! symlinks), holding one token per gateway URL and role: a node that moves between gateways keeps
//! each pairing.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::frames::Role;
use crate::secret::Secret;

/// The file name inside the data dir.
pub const DEVICE_AUTH_FILE: &str = "device-auth.json";

/// A few tokens of ~43 characters each: anything larger is not ours.
const MAX_FILE_BYTES: u64 = 256 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    version: u32,
    /// `"<role> <url>"` -> token.
    tokens: BTreeMap<String, String>,
}

/// Where one connection's device token lives (a file, and a key in it).
#[derive(Debug)]
pub struct DeviceTokenStore {
    path: PathBuf,
    key: String,
    /// Serializes read-modify-write of the file within this process.
    write: Mutex<()>,
}

impl DeviceTokenStore {
    /// The store for `role` on the gateway at `url`, in `dir/device-auth.json`.
    pub fn new(dir: &Path, url: &str, role: Role) -> Self {
        DeviceTokenStore {
            path: dir.join(DEVICE_AUTH_FILE),
            key: format!("{} {}", role.as_str(), url.trim_end_matches('/')),
            write: Mutex::new(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved token, if any. A missing file is no token; an unreadable or untrusted one is
    /// logged and counts as no token (the shared secret still works; only the rotation
    /// shortcut is lost).
    pub fn load(&self) -> Option<Secret> {
        match self.read() {
            Ok(stored) => stored.tokens.get(&self.key).map(|token| Secret::from(token.as_str())),
            Err(error) => {
                warn!(path = %self.path.display(), %error, "ignoring the saved device token");
                None
            }
        }
    }

    /// Saves `token` (no write when it is already the saved one).
    pub fn save(&self, token: &Secret) -> io::Result<()> {
        let _guard = self.write.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut stored = self.read()?;
        if stored.tokens.get(&self.key).map(String::as_str) == Some(token.expose()) {
            return Ok(());
        }
        stored.version = 1;
        stored.tokens.insert(self.key.clone(), token.expose().to_owned());
        let text = serde_json::to_vec_pretty(&stored).map_err(io::Error::other)?;
        clawmcp_fs::write_private_atomic(&self.path, &text)
    }

    fn read(&self) -> io::Result<Stored> {
        let rules = clawmcp_fs::StateRules { max_bytes: MAX_FILE_BYTES, exposed: clawmcp_fs::Exposed::MakePrivate };
        match clawmcp_fs::read_state_file(&self.path, rules)? {
            None => Ok(Stored::default()),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a device token file: {e}", self.path.display()),
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn tokens_are_kept_per_gateway_and_role_in_a_private_file() {
        let dir = private_dir();
        let a = DeviceTokenStore::new(dir.path(), "ws://127.0.0.1:1/", Role::Node);
        let b = DeviceTokenStore::new(dir.path(), "ws://127.0.0.1:2", Role::Node);
        let operator = DeviceTokenStore::new(dir.path(), "ws://127.0.0.1:1", Role::Operator);
        assert!(a.load().is_none());
        a.save(&Secret::from("token-a")).unwrap();
        b.save(&Secret::from("token-b")).unwrap();
        assert_eq!(a.load().unwrap().expose(), "token-a");
        assert_eq!(b.load().unwrap().expose(), "token-b");
        assert!(operator.load().is_none(), "a node's token is not an operator's");
        // The trailing slash does not make it another gateway.
        let again = DeviceTokenStore::new(dir.path(), "ws://127.0.0.1:1", Role::Node);
        assert_eq!(again.load().unwrap().expose(), "token-a");
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_corrupt_or_symlinked_file_is_no_token_and_is_not_followed() {
        let dir = private_dir();
        let store = DeviceTokenStore::new(dir.path(), "ws://h", Role::Node);
        std::fs::write(store.path(), b"not json").unwrap();
        assert!(store.load().is_none());
        assert!(store.save(&Secret::from("t")).is_err(), "a corrupt file is not overwritten blindly");

        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, br#"{"version":1,"tokens":{"node ws://h":"planted"}}"#).unwrap();
        std::fs::remove_file(store.path()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, store.path()).unwrap();
        assert!(store.load().is_none(), "a symlink in place of the file is refused");
    }
}
