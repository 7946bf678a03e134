//! The local bearer token: how it is made, where it lives, and how a running server notices that
//! it was rotated.
//!
//! The rules (`docs/node-http.md` §1): 32 bytes from the OS CSPRNG, base64url without padding (43
//! characters), in `mcp-token.txt`, created lazily on the first server start, persistent,
//! regenerated only when the file is missing, blank, or holds something that is not a token (not 43
//! base64url characters: never served). A file that exists but cannot be read is an error, never a
//! reason to regenerate: a silent new token would lock out every configured client. The file is
//! read under the state trust rules (`clawmcp_fs::read_state_file`: no symlinks, no FIFOs, ours and
//! writable by nobody else, bounded), is 0600 in a 0700 directory and is written atomically (temp
//! file, fsync, rename), so a reader sees the old token or the new one, never half of one.
//!
//! [`LiveToken`] checks the file (one `fstat` of the descriptor it was read from) on the first
//! request after [`RECHECK_AFTER`] has passed since the last check, and re-reads it when it
//! changed, so `clawmcp token --reset` (or an edit) is in force for every request that arrives a
//! millisecond after it, without a restart.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clawmcp_fs::{FileStamp, create_private_dir, write_private_atomic};

/// The token file's name inside the data directory.
pub const TOKEN_FILE_NAME: &str = "mcp-token.txt";

/// How long one check of the token file stands. A request that arrives this long after the last
/// check checks again; the ones before it use the token that check found. Why not every request:
/// the `fstat` was a twentieth of the node's CPU per `ping` under load (bench/NODE_RESULTS.md),
/// and no client can rotate the token and send its next request within a millisecond (the
/// `clawmcp token --reset` process alone takes longer to exit).
pub const RECHECK_AFTER: Duration = Duration::from_millis(1);

const RECHECK_NANOS: u64 = RECHECK_AFTER.as_nanos() as u64;

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
    /// The file or its directory breaks the state trust rules (`clawmcp_fs::open_state_file`);
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
///
/// The file is followed through the descriptor it was read from, not its name: each check (at
/// most one per [`RECHECK_AFTER`], by whichever request comes first) is one `fstat` of that
/// descriptor (no path walk; a third of the cost of a `stat` by name, measured
/// in bench/NODE_RESULTS.md) under a shared read lock, and the presented token is compared under
/// the same read lock (no shared reference count touched per request). Only a change takes the
/// write lock: with an exclusive lock on every request, two runtime threads checking tokens at
/// once queued on each other's `fstat` (a futex sleep and wake-up per contended request, seen
/// with `strace -f -k` under wrk at 16 connections). A change shows on the descriptor:
/// new contents or mode (its change time, modification time or length moved), the name given to
/// another file (`clawmcp token --reset` renames a new file over it, or it was deleted: the held
/// file has no links left), or the file renamed away (its change time moved). The one change it
/// cannot see is the data directory itself renamed away while the node runs.
pub struct LiveToken {
    path: PathBuf,
    cache: RwLock<Cache>,
    /// The clock [`LiveToken::checked_until`] counts from.
    started: Instant,
    /// Nanoseconds after `started` until which the last check stands (0: never checked).
    checked_until: AtomicU64,
}

struct Cache {
    source: Source,
    token: Arc<str>,
    /// The authentication generation: 0 for the token loaded at start, one more for each token
    /// put in force since. The token and its number change together under the cache's lock, so
    /// a request admitted by a token holds that token's number and no other (docs/node-http.md §12's
    /// "bearer and file-channel epoch as one immutable authentication generation").
    generation: u64,
}

/// Where the token in force was read from, as far as telling a change goes.
enum Source {
    /// Not read yet through a held descriptor: the next check reads the file.
    Unread,
    /// The open token file and its `fstat` taken just before its contents were read.
    Held { file: std::fs::File, stamp: HeldStamp },
    /// No file could be held (missing, or refused by the trust rules): the name's `stat` when
    /// that was found, so a broken file is retried (and warned about) once per change.
    Name(FileStamp),
}

/// What an `fstat` of the held file must keep for the token to be unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeldStamp {
    inode: u64,
    links: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl HeldStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        HeldStamp {
            inode: meta.ino(),
            links: meta.nlink(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl Source {
    /// Whether the file may differ from what the token in force was read from.
    fn changed(&self, path: &Path) -> bool {
        match self {
            Source::Unread => true,
            // Renamed over or deleted shows as `links` dropping to 0.
            Source::Held { file, stamp } => file.metadata().map_or(true, |meta| HeldStamp::of(&meta) != *stamp),
            Source::Name(seen) => FileStamp::of(path) != *seen,
        }
    }
}

impl LiveToken {
    /// Loads (or creates) the token in `path` and starts following the file.
    pub fn load_or_create(path: &Path) -> Result<Self, TokenError> {
        let token = load_or_create(path)?;
        // `Unread`: the first check reads the file again through the descriptor it then holds,
        // so a change racing this load is never missed.
        Ok(LiveToken {
            path: path.to_owned(),
            cache: RwLock::new(Cache { source: Source::Unread, token: token.into(), generation: 0 }),
            started: Instant::now(),
            checked_until: AtomicU64::new(0),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The token in force now. While the file is missing, blank, refused or unreadable the last
    /// good token stays in force, so a half-finished manual edit cannot lock everyone out.
    pub fn current(&self) -> Arc<str> {
        self.with_fresh(|cache| cache.token.clone())
    }

    /// Whether `presented` is the current token, compared in constant time (the length, 43 for
    /// every generated token, is not secret).
    pub fn verify(&self, presented: &[u8]) -> bool {
        self.admit(presented).is_some()
    }

    /// [`LiveToken::verify`], answering the generation of the token that matched: what a request
    /// it admits carries, so everything bound to a token (the node's file channels) can tell a
    /// request admitted before a rotation from one admitted after it.
    pub fn admit(&self, presented: &[u8]) -> Option<u64> {
        self.with_fresh(|cache| {
            constant_time_eq::constant_time_eq(presented, cache.token.as_bytes()).then_some(cache.generation)
        })
    }

    /// The generation of the token in force now (see [`LiveToken::admit`]).
    pub fn generation(&self) -> u64 {
        self.with_fresh(|cache| cache.generation)
    }

    /// `read` applied to the cache, re-read first if the file changed since (checked when the
    /// last check is older than [`RECHECK_AFTER`]). The cache is plain fields assigned whole: a
    /// panic elsewhere cannot tear it, so a poisoned lock is used as is.
    fn with_fresh<R>(&self, read: impl FnOnce(&Cache) -> R) -> R {
        let now = self.nanos_since_start();
        {
            let cache = self.cache.read().unwrap_or_else(PoisonError::into_inner);
            if now < self.checked_until.load(Ordering::Relaxed) {
                return read(&cache);
            }
            if !cache.source.changed(&self.path) {
                self.checked_until.store(now.saturating_add(RECHECK_NANOS), Ordering::Relaxed);
                return read(&cache);
            }
        }
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        // Another request may have reloaded it between the two locks.
        if cache.source.changed(&self.path) {
            self.reload(&mut cache);
        }
        // Stamped once the reload is done: a request in the window uses the new cache.
        self.checked_until.store(now.saturating_add(RECHECK_NANOS), Ordering::Relaxed);
        read(&cache)
    }

    fn nanos_since_start(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn reload(&self, cache: &mut Cache) {
        // Taken before the file is opened: a failure is retried only when the name changes again,
        // so a broken file logs one warning, not one per request.
        let name = FileStamp::of(&self.path);
        let opened = clawmcp_fs::open_state_file(&self.path, clawmcp_fs::Exposed::MakePrivate);
        let (file, read) = match opened {
            Ok((mut file, _)) => {
                // Stamped before reading: a write after this shows as a change next time.
                let stamp = file.metadata().map(|meta| HeldStamp::of(&meta));
                let read = read_token_text(&self.path, &mut file);
                match stamp {
                    Ok(stamp) => (Some((file, stamp)), read),
                    Err(e) => (None, read.and(Err(e))),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => (None, Ok(None)),
            Err(e) => (None, Err(e)),
        };
        let missing = matches!(name, FileStamp::Missing);
        cache.source = match file {
            Some((file, stamp)) => Source::Held { file, stamp },
            None => Source::Name(name),
        };
        match read {
            Ok(Some(token)) if is_well_formed(&token) => {
                if *token != *cache.token {
                    tracing::info!(path = %self.path.display(), "MCP token file changed: the new token is in force");
                    cache.token = token.into();
                    cache.generation += 1;
                }
            }
            Ok(Some(_)) => tracing::warn!(
                path = %self.path.display(),
                "MCP token file does not hold a clawmcp token ({TOKEN_CHARS} base64url characters): still \
                 accepting the previous token; run `clawmcp token --reset` for a new one"
            ),
            Ok(None) if missing => tracing::warn!(
                path = %self.path.display(),
                "MCP token file vanished: still accepting the previous token; run `clawmcp token --reset` to write a new one"
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
        }
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

/// [`read_token_file`] for a file already opened under the trust rules (the live view holds the
/// descriptor it read): the trimmed text, `None` if blank, larger than [`MAX_TOKEN_FILE_BYTES`]
/// refused, not cut.
fn read_token_text(path: &Path, file: &mut std::fs::File) -> io::Result<Option<String>> {
    let read = clawmcp_fs::read_bounded(file, MAX_TOKEN_FILE_BYTES)?;
    if read.truncated {
        let refusal = clawmcp_fs::Untrusted {
            path: path.display().to_string(),
            problem: format!("it is larger than the {MAX_TOKEN_FILE_BYTES} bytes a token file may have"),
            fix: "Write a new token: `clawmcp token --reset`".into(),
        };
        return Err(io::Error::new(io::ErrorKind::InvalidData, refusal));
    }
    let text = clawmcp_fs::into_text(read.bytes)?;
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
