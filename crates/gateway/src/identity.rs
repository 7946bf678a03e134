//! The Ed25519 device identity and the signed `connect.params.device` proof.
//!
//! The gateway pairs *keys*, not processes: reusing the same key keeps the pairing record, so
//! the key lives in one file (`device-identity.json`, mode 0600, in a 0700 directory the caller
//! chooses) that is created atomically once and never rewritten. Operator and node roles must
//! use different directories: a key paired as operator needs manual approval to become a node.
//!
//! Wire facts (`docs/gateway-protocol.md` §5, `packages/gateway-client/src/device-auth.ts`):
//! device id = lowercase hex SHA-256 of the raw 32-byte public key; `publicKey` and `signature`
//! are base64url without padding; the signed string is the v3 payload (v2 is the legacy form the
//! gateway still accepts).

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::IdentityError;
use crate::frames::DeviceProof;

/// The identity file's name inside the directory given to [`DeviceIdentity::load_or_create`].
pub const IDENTITY_FILE: &str = "device-identity.json";

/// The on-disk format. The private key is the 32-byte Ed25519 seed, base64url.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredIdentity {
    version: u32,
    device_id: String,
    public_key: String,
    private_key: String,
    created_at_ms: u64,
}

const STORED_VERSION: u32 = 1;

/// The largest identity file read (a real one is about 400 bytes).
const MAX_IDENTITY_FILE_BYTES: u64 = 64 * 1024;

/// An Ed25519 key pair plus the derived device id. `Debug` never prints the private key.
pub struct DeviceIdentity {
    signing: SigningKey,
    device_id: String,
    public_key: String,
    path: Option<PathBuf>,
}

impl fmt::Debug for DeviceIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceIdentity").field("device_id", &self.device_id).field("path", &self.path).finish()
    }
}

impl DeviceIdentity {
    /// The identity for a fixed 32-byte seed (tests, and keys imported from elsewhere).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(&seed);
        let public = signing.verifying_key().to_bytes();
        DeviceIdentity {
            device_id: device_id_for(&public),
            public_key: URL_SAFE_NO_PAD.encode(public),
            signing,
            path: None,
        }
    }

    /// A fresh random identity, not persisted.
    pub fn generate() -> Result<Self, IdentityError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| IdentityError::Random(e.to_string()))?;
        Ok(Self::from_seed(seed))
    }

    /// Loads `dir/device-identity.json`, or creates it (and `dir`, 0700) on first use.
    ///
    /// Two processes racing to create it both end up with the file that won: the write is a
    /// no-clobber link of a fully written temp file, and the loser re-reads the winner's key.
    pub fn load_or_create(dir: &Path) -> Result<Self, IdentityError> {
        let path = dir.join(IDENTITY_FILE);
        // The directory first: a key read from a directory someone else can write is not ours.
        create_private_dir(dir)?;
        match Self::load(&path) {
            Err(IdentityError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        let mut identity = Self::generate()?;
        let stored = StoredIdentity {
            version: STORED_VERSION,
            device_id: identity.device_id.clone(),
            public_key: identity.public_key.clone(),
            private_key: URL_SAFE_NO_PAD.encode(identity.signing.to_bytes()),
            created_at_ms: now_ms(),
        };
        let text = serde_json::to_string_pretty(&stored).unwrap_or_default();
        let write_error = |source| IdentityError::Write { path: path.clone(), source };
        // tempfile creates the file 0600 on Unix, so the key is never briefly world-readable.
        // (A killed process leaves a `.tmpXXXX` here; it holds no key anyone else can read.)
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(write_error)?;
        temp.write_all(text.as_bytes()).and_then(|()| temp.as_file().sync_all()).map_err(write_error)?;
        match temp.persist_noclobber(&path) {
            Ok(_) => {
                identity.path = Some(path);
                Ok(identity)
            }
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Self::load(&path),
            Err(e) => Err(write_error(e.error)),
        }
    }

    /// Loads an existing identity file, refusing one that other users can read.
    pub fn load(path: &Path) -> Result<Self, IdentityError> {
        let read_error = |source| IdentityError::Read { path: path.to_owned(), source };
        let malformed = |reason: String| IdentityError::Malformed { path: path.to_owned(), reason };
        // A private key readable by others may have leaked: refused, not silently made private.
        let rules = clawmcp_fs::StateRules { max_bytes: MAX_IDENTITY_FILE_BYTES, exposed: clawmcp_fs::Exposed::Refuse };
        let bytes = match clawmcp_fs::read_state_file(path, rules) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(read_error(io::Error::from(io::ErrorKind::NotFound))),
            Err(source) if clawmcp_fs::untrusted(&source).is_some() => {
                return Err(IdentityError::Untrusted { source });
            }
            Err(source) => return Err(read_error(source)),
        };
        let text = clawmcp_fs::into_text(bytes).map_err(|e| malformed(e.to_string()))?;
        let stored: StoredIdentity = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
        if stored.version != STORED_VERSION {
            return Err(malformed(format!("unknown version {}", stored.version)));
        }
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(stored.private_key.trim())
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| malformed("privateKey is not a base64url 32-byte seed".to_owned()))?;
        let mut identity = Self::from_seed(seed);
        if identity.device_id != stored.device_id || identity.public_key != stored.public_key {
            return Err(malformed("deviceId/publicKey do not match the private key".to_owned()));
        }
        identity.path = Some(path.to_owned());
        Ok(identity)
    }

    /// Lowercase hex SHA-256 of the raw public key (64 characters); a node's id is this value.
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// The raw public key, base64url without padding.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// Where the identity is stored, if it came from a file.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Ed25519 signature over the UTF-8 bytes of `payload`, base64url without padding.
    pub fn sign(&self, payload: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.sign(payload.as_bytes()).to_bytes())
    }

    /// The `connect.params.device` object for `payload`, signed with the v3 string.
    pub fn proof(&self, payload: &DeviceAuthPayload<'_>) -> DeviceProof {
        DeviceProof {
            id: self.device_id.clone(),
            public_key: self.public_key.clone(),
            signature: self.sign(&payload.v3()),
            signed_at: payload.signed_at_ms,
            nonce: payload.nonce.to_owned(),
        }
    }
}

/// Lowercase hex SHA-256 of a raw 32-byte Ed25519 public key.
pub fn device_id_for(public_key: &[u8; 32]) -> String {
    Sha256::digest(public_key).iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a base64url (or standard base64, as the gateway also accepts) signature of `payload`
/// by `public_key`. Used by tests that play the gateway's side.
pub fn verify_signature(public_key: &str, payload: &str, signature: &str) -> bool {
    let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).or_else(|_| STANDARD.decode(text)).ok();
    let key = decode(public_key).and_then(|bytes| <[u8; 32]>::try_from(bytes).ok());
    let signature = decode(signature).and_then(|bytes| <[u8; 64]>::try_from(bytes).ok());
    match (key.and_then(|k| VerifyingKey::from_bytes(&k).ok()), signature) {
        (Some(key), Some(signature)) => key.verify(payload.as_bytes(), &Signature::from_bytes(&signature)).is_ok(),
        _ => false,
    }
}

/// The fields the device signature covers. `scopes` must be the exact array sent in
/// `connect.params.scopes` (same order); `token` is [`ConnectAuth::signature_token`].
///
/// [`ConnectAuth::signature_token`]: crate::frames::ConnectAuth::signature_token
#[derive(Debug, Clone)]
pub struct DeviceAuthPayload<'a> {
    pub device_id: &'a str,
    pub client_id: &'a str,
    pub client_mode: &'a str,
    pub role: &'a str,
    pub scopes: &'a [String],
    pub signed_at_ms: u64,
    pub token: &'a str,
    pub nonce: &'a str,
    pub platform: Option<&'a str>,
    pub device_family: Option<&'a str>,
}

impl DeviceAuthPayload<'_> {
    /// `v3|deviceId|clientId|clientMode|role|scopes|signedAtMs|token|nonce|platform|deviceFamily`,
    /// platform and family trimmed and ASCII-lowercased (only A-Z change), missing ones empty.
    pub fn v3(&self) -> String {
        format!(
            "v3|{}|{}|{}",
            self.common_fields(),
            normalize_metadata(self.platform),
            normalize_metadata(self.device_family)
        )
    }

    /// The legacy v2 form: the v3 fields without platform and family.
    pub fn v2(&self) -> String {
        format!("v2|{}", self.common_fields())
    }

    fn common_fields(&self) -> String {
        [
            self.device_id,
            self.client_id,
            self.client_mode,
            self.role,
            &self.scopes.join(","),
            &self.signed_at_ms.to_string(),
            self.token,
            self.nonce,
        ]
        .join("|")
    }
}

fn normalize_metadata(value: Option<&str>) -> String {
    value.map(|v| v.trim().to_ascii_lowercase()).unwrap_or_default()
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn create_private_dir(dir: &Path) -> Result<(), IdentityError> {
    clawmcp_fs::create_private_dir(dir).map_err(|source| match clawmcp_fs::untrusted(&source) {
        Some(_) => IdentityError::Untrusted { source },
        None => IdentityError::CreateDir { path: dir.to_owned(), source },
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn fixed() -> DeviceIdentity {
        DeviceIdentity::from_seed([7u8; 32])
    }

    fn payload<'a>(identity: &'a DeviceIdentity, scopes: &'a [String]) -> DeviceAuthPayload<'a> {
        DeviceAuthPayload {
            device_id: identity.device_id(),
            client_id: "cli",
            client_mode: "cli",
            role: "operator",
            scopes,
            signed_at_ms: 1_737_264_000_000,
            token: "tok",
            nonce: "n-1",
            platform: Some("  Linux "),
            device_family: Some("Linux"),
        }
    }

    #[test]
    fn device_id_is_sha256_hex_of_the_raw_public_key() {
        let identity = fixed();
        let raw = URL_SAFE_NO_PAD.decode(identity.public_key()).unwrap();
        assert_eq!(raw.len(), 32);
        assert_eq!(identity.device_id(), device_id_for(&raw.try_into().unwrap()));
        // Pinned (computed independently with Python's `cryptography`): a change of derivation
        // (hex case, hashing the base64 text, ...) would silently break pairing.
        assert_eq!(identity.public_key(), "6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw");
        assert_eq!(identity.device_id(), "fe812c12f3ab4ce6ac5db69ac352f906cb1b11ef43fb33e252ef7ff552263889");
    }

    #[test]
    fn v3_and_v2_payload_strings_are_exact() {
        let identity = fixed();
        let scopes = vec!["operator.read".to_owned(), "operator.write".to_owned()];
        let payload = payload(&identity, &scopes);
        let id = identity.device_id();
        assert_eq!(
            payload.v3(),
            format!("v3|{id}|cli|cli|operator|operator.read,operator.write|1737264000000|tok|n-1|linux|linux")
        );
        assert_eq!(
            payload.v2(),
            format!("v2|{id}|cli|cli|operator|operator.read,operator.write|1737264000000|tok|n-1")
        );
        let bare = DeviceAuthPayload { platform: None, device_family: None, token: "", scopes: &[], ..payload };
        assert_eq!(bare.v3(), format!("v3|{id}|cli|cli|operator||1737264000000||n-1||"));
    }

    #[test]
    fn only_ascii_letters_are_lowercased() {
        assert_eq!(normalize_metadata(Some(" ÄBc ")), "Äbc");
    }

    #[test]
    fn sign_verify_round_trip() {
        let identity = fixed();
        let scopes = vec!["operator.read".to_owned(), "operator.write".to_owned()];
        let proof = identity.proof(&payload(&identity, &scopes));
        let v3 = payload(&identity, &scopes).v3();
        assert!(verify_signature(&proof.public_key, &v3, &proof.signature));
        assert!(!verify_signature(&proof.public_key, &payload(&identity, &scopes).v2(), &proof.signature));
        let other = DeviceIdentity::from_seed([8u8; 32]);
        assert!(!verify_signature(other.public_key(), &v3, &proof.signature));
        // Ed25519 is deterministic; this value also comes from Python's `cryptography`.
        assert_eq!(
            proof.signature,
            "OsmjmU2J4HJyEQi7I__Rj2D5NFOFfqmMm3M_slkz00FgABwGZSfrLIc7pxg40ziQ_DLwWOQ5B4gepNHAI-PsDQ"
        );
        assert_eq!(proof.signed_at, 1_737_264_000_000);
        assert_eq!(proof.nonce, "n-1");
        assert!(!proof.signature.contains('='));
    }

    #[cfg(unix)]
    #[test]
    fn creates_a_private_file_once_and_reloads_it() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("identity");
        let first = DeviceIdentity::load_or_create(&dir).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(IDENTITY_FILE)), 0o600);
        let second = DeviceIdentity::load_or_create(&dir).unwrap();
        assert_eq!(first.device_id(), second.device_id());
        assert_eq!(second.path(), Some(dir.join(IDENTITY_FILE).as_path()));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp files left behind");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_file_others_can_read() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        let identity = DeviceIdentity::load_or_create(temp.path()).unwrap();
        let path = identity.path().unwrap().to_owned();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let error = DeviceIdentity::load_or_create(temp.path()).unwrap_err();
        assert!(matches!(error, IdentityError::Untrusted { .. }), "{error}");
        assert!(error.to_string().contains("mode 0640") && error.to_string().contains("chmod 600"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_tampered_file() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        let identity = DeviceIdentity::load_or_create(temp.path()).unwrap();
        let path = identity.path().unwrap().to_owned();
        let text = fs::read_to_string(&path).unwrap().replace(identity.device_id(), &"0".repeat(64));
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let error = DeviceIdentity::load(&path).unwrap_err();
        assert!(matches!(error, IdentityError::Malformed { .. }), "{error}");
        fs::write(&path, "{").unwrap();
        assert!(matches!(DeviceIdentity::load(&path).unwrap_err(), IdentityError::Malformed { .. }));
    }
}
