//! Which paths the file commands may reach: the owner's roots (`NodeFileRoots` in
//! `settings.json`, absolute paths; the home directory when absent), read live on every call.
//!
//! A path is served when it lies inside a root, compared both as the root is written and as it
//! resolves (a home directory that is a symlink to `/data/me` still covers `/data/me/x`, the
//! canonical path of `~/x`). The commands check the path as asked and again where it really leads
//! (every symlink resolved), so a symlink inside a root pointing out of it is refused.
//!
//! Whatever the roots say, `/proc`, `/sys` and `/dev` are never served: kernel and device files
//! that report a size of 0 or never end, and could block a reader. Device files and FIFOs
//! elsewhere are refused by type on the opened descriptor (`clawmcp_fs::open_regular`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::files::{FileError, display};
use crate::settings::{LiveSettings, Settings};

/// Never served, whatever the roots say.
pub const FORBIDDEN: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The owner's file roots, read live.
#[derive(Clone)]
pub struct FilePolicy {
    source: Source,
}

#[derive(Clone)]
enum Source {
    Settings(Arc<LiveSettings>),
    /// Fixed roots (tests, embedders).
    Fixed(Vec<PathBuf>),
}

impl FilePolicy {
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        FilePolicy { source: Source::Settings(settings) }
    }

    /// Serves exactly `roots` (absolute paths).
    pub fn fixed(roots: Vec<PathBuf>) -> Self {
        FilePolicy { source: Source::Fixed(roots) }
    }

    /// The roots in effect now, as configured.
    pub fn roots(&self) -> Vec<PathBuf> {
        match &self.source {
            Source::Settings(settings) => roots_of(&settings.current()),
            Source::Fixed(roots) => roots.clone(),
        }
    }

    /// Refuses `path` (absolute, normalized) unless it is inside a root and outside
    /// [`FORBIDDEN`]; the refusal names the rule and how to change it.
    pub fn check(&self, path: &Path) -> Result<(), FileError> {
        if let Some(forbidden) = FORBIDDEN.iter().find(|forbidden| path.starts_with(forbidden)) {
            return Err(FileError::new(
                "PATH_POLICY_DENIED",
                format!(
                    "{} is under {forbidden}: this node never serves /proc, /sys or /dev (kernel and device files), \
                     whatever NodeFileRoots says",
                    display(path)
                ),
            ));
        }
        let roots = self.roots();
        let inside = roots
            .iter()
            .any(|root| path.starts_with(root) || std::fs::canonicalize(root).is_ok_and(|real| path.starts_with(real)));
        if inside {
            return Ok(());
        }
        let listed: Vec<String> = roots.iter().map(|root| display(root)).collect();
        Err(FileError::new(
            "PATH_POLICY_DENIED",
            format!(
                "{} is outside the file roots this node serves (NodeFileRoots: {}); the machine's owner can add a \
                 root with `clawmcp settings set NodeFileRoots {}:{}`",
                display(path),
                if listed.is_empty() { "none".to_owned() } else { listed.join(", ") },
                listed.join(":"),
                display(path),
            ),
        ))
    }
}

/// The roots `settings` put in effect: `NodeFileRoots`, else the home directory (none when the
/// user has no home directory: nothing is served).
pub fn roots_of(settings: &Settings) -> Vec<PathBuf> {
    match &settings.node_file_roots {
        Some(roots) => roots.clone(),
        None => dirs::home_dir().into_iter().collect(),
    }
}
