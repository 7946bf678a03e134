//! The workspace root the local tools resolve relative paths against.
//!
//! `clawmcp tools` roots it at its process's working directory, which is wherever the MCP client
//! starts it, as the upstream bridge did (`BridgeOptions::local_root`; OpenClaw's own agent tools
//! use the agent workspace instead, which is why a client should start it in the project).
//! Relative paths join the root, absolute paths are used as given (this is not a sandbox: the tools run with the process's
//! OS permissions, as the spec says), and `~` / `~/…` expand to the home directory as
//! pi-coding-agent's `expandPath` does.

use std::path::{Path, PathBuf};

/// Where relative paths point. Cheap to clone into blocking tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    home: Option<PathBuf>,
}

/// A path argument resolved for one call: what the client typed (for messages it will
/// recognise) and the absolute path we operate on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetPath {
    pub given: String,
    pub abs: PathBuf,
    /// The root a relative `given` was joined to, so "not found" can say where we looked.
    relative_to: Option<PathBuf>,
}

impl Workspace {
    /// A workspace rooted at `root`, made absolute against the current directory if relative.
    /// `~` expands to the user's home directory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        Workspace { root, home: dirs::home_dir() }
    }

    /// Overrides the directory `~` expands to (`None`: `~` paths are refused).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path argument. Fails only for an empty path or `~` without a known home.
    pub(crate) fn resolve(&self, given: &str) -> Result<TargetPath, String> {
        if given.trim().is_empty() {
            return Err("The path is empty. Pass a file path, relative to the workspace root or absolute.".into());
        }
        let home_relative = if given == "~" { Some("") } else { given.strip_prefix("~/") };
        if let Some(rest) = home_relative {
            let Some(home) = &self.home else {
                return Err(format!(
                    "Cannot expand `~` in {given:?}: no home directory is known for this process. Use an absolute path."
                ));
            };
            return Ok(TargetPath { given: given.to_string(), abs: home.join(rest), relative_to: None });
        }
        let path = Path::new(given);
        if path.is_absolute() {
            Ok(TargetPath { given: given.to_string(), abs: path.to_path_buf(), relative_to: None })
        } else {
            Ok(TargetPath { given: given.to_string(), abs: self.root.join(path), relative_to: Some(self.root.clone()) })
        }
    }

    /// The root itself as a target, for tools whose path argument is optional.
    pub(crate) fn root_target(&self) -> TargetPath {
        TargetPath { given: self.root.display().to_string(), abs: self.root.clone(), relative_to: None }
    }

    /// How a path found by a search is shown: relative to the root when inside it (short and
    /// directly usable as an argument), absolute otherwise.
    pub(crate) fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => slash_path(rel),
            _ => path.display().to_string(),
        }
    }
}

impl TargetPath {
    /// `src/a.rs (resolved to /ws/src/a.rs)` for relative input, the path alone otherwise.
    pub(crate) fn describe(&self) -> String {
        match &self.relative_to {
            Some(_) => format!("{} (resolved to {})", self.given, self.abs.display()),
            None => self.given.clone(),
        }
    }

    /// A hint for "not found": where relative paths point.
    pub(crate) fn lookup_hint(&self) -> String {
        match &self.relative_to {
            Some(root) => format!("Relative paths resolve against the workspace root {}.", root.display()),
            None => "Check the spelling of the path.".to_string(),
        }
    }
}

/// A relative path with `/` separators on every platform, as globs and clients expect.
pub(crate) fn slash_path(rel: &Path) -> String {
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> Workspace {
        Workspace::new("/ws").with_home(Some(PathBuf::from("/home/u")))
    }

    #[test]
    fn relative_joins_root_absolute_stays_tilde_expands() {
        assert_eq!(ws().resolve("src/a.rs").unwrap().abs, PathBuf::from("/ws/src/a.rs"));
        assert_eq!(ws().resolve("/etc/hosts").unwrap().abs, PathBuf::from("/etc/hosts"));
        assert_eq!(ws().resolve("~").unwrap().abs, PathBuf::from("/home/u"));
        assert_eq!(ws().resolve("~/notes.md").unwrap().abs, PathBuf::from("/home/u/notes.md"));
        // `~user` is not expanded (pi does not either): it is a relative name.
        assert_eq!(ws().resolve("~bob/x").unwrap().abs, PathBuf::from("/ws/~bob/x"));
    }

    #[test]
    fn empty_path_and_unknown_home_are_refused_with_a_reason() {
        assert!(ws().resolve(" ").unwrap_err().contains("The path is empty"));
        let no_home = Workspace::new("/ws").with_home(None);
        assert!(no_home.resolve("~/x").unwrap_err().contains("no home directory"));
    }

    #[test]
    fn describe_mentions_resolution_only_for_relative_input() {
        assert_eq!(ws().resolve("a.txt").unwrap().describe(), "a.txt (resolved to /ws/a.txt)");
        assert_eq!(ws().resolve("/tmp/a").unwrap().describe(), "/tmp/a");
        assert!(ws().resolve("a.txt").unwrap().lookup_hint().contains("/ws"));
    }

    #[test]
    fn display_is_root_relative_inside_and_absolute_outside() {
        assert_eq!(ws().display(Path::new("/ws/src/a.rs")), "src/a.rs");
        assert_eq!(ws().display(Path::new("/other/a.rs")), "/other/a.rs");
        assert_eq!(ws().display(Path::new("/ws")), "/ws");
    }

    #[test]
    fn relative_root_is_made_absolute() {
        assert!(Workspace::new("rel").root().is_absolute());
    }
}
