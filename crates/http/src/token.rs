//! The local bearer token: how it is made, where it lives, and how a running server notices that
//! it was rotated.
//!
//! Spec 000's rules: 32 bytes from the OS CSPRNG, base64url without padding (43 characters), in
//! `mcp-token.txt`, created lazily on the first server start, persistent, regenerated only when
//! the file is missing, blank, or holds something that is not a token (not 43 base64url
//! characters: never served). A file that exists but cannot be read is an error, never a reason
//! to regenerate: a silent new token would lock out every configured client. The file is read
//! under the state trust rules (`clawmcp_fs::read_state_file`: no symlinks, no FIFOs, ours and
//! writable by nobody else, bounded), is 0600 in a 0700 directory and is written atomically
//! (temp file, fsync, rename), so a reader sees the old token or the new one, never half of one.
//!
//! [`LiveToken`] stats the file on every request and re-reads it when it changed, so
//! `clawmcp token --reset` takes effect on the next request without a restart.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clawmcp_fs::{FileStamp, create_private_dir, write_private_atomic};
use subtle::ConstantTimeEq;

/// The token file's name inside the data directory.
pub const TOKEN_FILE_NAME: &str = "mcp-token.txt";

/// Random bytes in a token (256 bits).
pub const TOKEN_BYTES: usize = 32;

/// Why the token could not be loaded or written.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "cannot read the MCP token file `{path}`: {source}. It exists, so it is not replaced \
         (that would lock out configured clients): make it a readable UTF-8 text file, or run \
         `clawmcp token --reset` to write a new token"
    )]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write the MCP token file `{path}`: {source}. Check that its directory is writable by you")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot create the directory `{path}` for the MCP token: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    /// The file or its directory breaks the state trust rules (`clawmcp_fs::read_state_file`);
    /// the message says what and how to fix it.
    #[error("{0}")]
    Untrusted(io::Error),
    #[error("the operating system's random number generator failed: {0}")]
    Random(getrandom::Error),
}

/// A fresh token: 32 CSPRNG bytes, base64url without padding.
pub fn generate() -> Result<String, TokenError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(TokenError::Random)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Whether `token` has the shape [`generate`] gives: 43 base64url characters. Anything else (a
/// one-character token, 4 KiB of text) was not written by clawmcp and is never served.
pub fn is_well_formed(token: &str) -> bool {
    token.len() == TOKEN_CHARS && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Characters in a token: 32 bytes in base64url without padding.
pub const TOKEN_CHARS: usize = 43;

/// The most bytes read from a token file: a token and a newline, with room for stray whitespace.
const MAX_TOKEN_FILE_BYTES: u64 = 1024;

/// The token in `path`, creating the file (and a 0700 directory) if it is missing or blank, and
/// replacing it if it holds something that is not a token (see [`is_well_formed`]). The
/// directory must already be trusted (see `clawmcp_fs::check_private_dir`) or be created here.
pub fn load_or_create(path: &Path) -> Result<String, TokenError> {
    if let Some(dir) = parent_dir(path) {
        clawmcp_fs::create_private_dir(dir).map_err(|source| dir_error(dir, source))?;
    }
    match read_token_file(path) {
        Ok(Some(token)) if is_well_formed(&token) => Ok(token),
        Ok(Some(other)) => {
            tracing::warn!(
                path = %path.display(),
                chars = other.chars().count(),
                "MCP token file does not hold a clawmcp token ({TOKEN_CHARS} base64url characters); writing a new one"
            );
            reset(path)
        }
        Ok(None) => reset(path),
        Err(source) if clawmcp_fs::untrusted(&source).is_some() => Err(TokenError::Untrusted(source)),
        Err(source) => Err(TokenError::Read { path: path.to_owned(), source }),
    }
}

/// Writes a new token to `path` whatever it held, and returns it.
pub fn reset(path: &Path) -> Result<String, TokenError> {
    let token = generate()?;
    if let Some(dir) = parent_dir(path) {
        create_private_dir(dir).map_err(|source| dir_error(dir, source))?;
    }
    write_private_atomic(path, token.as_bytes())
        .map_err(|source| TokenError::Write { path: path.to_owned(), source })?;
    Ok(token)
}

/// The token as the server checks it, following the file while serving.
pub struct LiveToken {
    path: PathBuf,
    cache: Mutex<Cache>,
}

struct Cache {
    seen: FileStamp,
    token: Arc<str>,
}

impl LiveToken {
    /// Loads (or creates) the token in `path` and starts following the file.
    pub fn load_or_create(path: &Path) -> Result<Self, TokenError> {
        // Observed before loading: a change racing the load is then seen as a change on the
        // first request (one extra read) instead of being missed.
        let seen = FileStamp::of(path);
        let token = load_or_create(path)?;
        Ok(LiveToken { path: path.to_owned(), cache: Mutex::new(Cache { seen, token: token.into() }) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The token in force now. Costs one `stat` per call (microseconds; per request is fine) and a
    /// read only when the file changed. While the file is missing, blank or unreadable the last
    /// good token stays in force, so a half-finished manual edit cannot lock everyone out.
    pub fn current(&self) -> Arc<str> {
        let now = FileStamp::of(&self.path);
        let mut cache = self.lock();
        if now == cache.seen {
            return cache.token.clone();
        }
        // Recorded before reading: a file that fails to read is retried only when it changes
        // again, so a broken file logs one warning, not one per request.
        cache.seen = now.clone();
        match now {
            FileStamp::File { .. } => match read_token_file(&self.path) {
                Ok(Some(token)) if is_well_formed(&token) => {
                    if *token != *cache.token {
                        tracing::info!(path = %self.path.display(), "MCP token file changed: the new token is in force");
                        cache.token = token.into();
                    }
                }
                Ok(Some(_)) => tracing::warn!(
                    path = %self.path.display(),
                    "MCP token file does not hold a clawmcp token ({TOKEN_CHARS} base64url characters): still \
                     accepting the previous token; run `clawmcp token --reset` for a new one"
                ),
                Ok(None) => tracing::warn!(
                    path = %self.path.display(),
                    "MCP token file is blank: still accepting the previous token; run `clawmcp token --reset` for a new one"
                ),
                Err(e) => tracing::warn!(
                    path = %self.path.display(),
                    error = %e,
                    "MCP token file cannot be read: still accepting the previous token"
                ),
            },
            FileStamp::Missing => tracing::warn!(
                path = %self.path.display(),
                "MCP token file vanished: still accepting the previous token; run `clawmcp token --reset` to write a new one"
            ),
            FileStamp::StatFailed(kind) => tracing::warn!(
                path = %self.path.display(),
                error = %kind,
                "MCP token file cannot be checked: still accepting the previous token"
            ),
        }
        cache.token.clone()
    }

    /// Whether `presented` is the current token, compared in constant time (the length, 43 for
    /// every generated token, is not secret).
    pub fn verify(&self, presented: &[u8]) -> bool {
        let expected = self.current();
        presented.ct_eq(expected.as_bytes()).into()
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        // The cache is two plain fields assigned whole: a panic elsewhere cannot tear it.
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The trimmed contents, `None` if the file is missing or blank, `Err` if it breaks the state
/// trust rules (a symlink, a FIFO, another owner, writable by others: never read, never
/// blocking) or is not text. A file readable by others is made 0600 by the read.
pub fn read_token_file(path: &Path) -> io::Result<Option<String>> {
    let limits = clawmcp_fs::StateRules::private(MAX_TOKEN_FILE_BYTES);
    let Some(bytes) = clawmcp_fs::read_state_file(path, limits)? else { return Ok(None) };
    let text = clawmcp_fs::into_text(bytes)?;
    let token = text.trim();
    Ok((!token.is_empty()).then(|| token.to_owned()))
}

fn dir_error(dir: &Path, source: io::Error) -> TokenError {
    match clawmcp_fs::untrusted(&source) {
        Some(_) => TokenError::Untrusted(source),
        None => TokenError::CreateDir { path: dir.to_owned(), source },
    }
}

fn parent_dir(path: &Path) -> Option<&Path> {
    path.parent().filter(|dir| !dir.as_os_str().is_empty())
}
