//! The directory walk `glob` and `grep` share, so both see the same files.
//!
//! ripgrep's `ignore` walker: `.gitignore` (also outside a git repository, since a workspace
//! need not be one), `.ignore`, `.git/info/exclude` and the global git excludes are honoured.
//! Hidden files are included, as the upstream bridge's `find`/`grep -r` included them, but the
//! directories the bridge always pruned (`.git`, `node_modules`, `.venv`, `venv`,
//! `__pycache__`) are skipped even when nothing ignores them: they are never what a coding
//! search wants and can hold millions of files. A search rooted inside one of them still works
//! (only entries below the root are pruned). Entries are visited in file-name order so the
//! output is deterministic. Symlinks are not followed.

use std::path::Path;

use clawmcp_mcp::CANCELLED;
use ignore::{DirEntry, Walk, WalkBuilder};
use tokio_util::sync::CancellationToken;

/// Directory names pruned wherever they appear below the walk root.
pub(crate) const ALWAYS_SKIPPED_DIRS: [&str; 5] = [".git", "node_modules", ".venv", "venv", "__pycache__"];

/// How many problem descriptions are quoted in the note.
const QUOTED_PROBLEMS: usize = 3;

pub(crate) fn builder(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| !is_always_skipped(entry))
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// The next regular file of `walk`, `None` at the end. An entry the walk cannot read is recorded
/// in `problems` and passed over; a fired `cancel` ends the walk with the cancellation error
/// (checked per entry, so a huge tree stops promptly).
pub(crate) fn next_file(
    walk: &mut Walk,
    cancel: &CancellationToken,
    problems: &mut Problems,
) -> Result<Option<DirEntry>, String> {
    for entry in walk.by_ref() {
        if cancel.is_cancelled() {
            return Err(CANCELLED.into());
        }
        match entry {
            Ok(entry) if entry.file_type().is_some_and(|t| t.is_file()) => return Ok(Some(entry)),
            Ok(_) => {}
            Err(err) => problems.record(err),
        }
    }
    Ok(None)
}

fn is_always_skipped(entry: &DirEntry) -> bool {
    entry.depth() > 0
        && entry.file_type().is_some_and(|t| t.is_dir())
        && entry.file_name().to_str().is_some_and(|name| ALWAYS_SKIPPED_DIRS.contains(&name))
}

/// Paths the walk or the search could not read. They do not fail the call (the other results
/// are still useful) but are reported, never silently dropped.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    count: usize,
    quoted: Vec<String>,
}

impl Problems {
    pub(crate) fn record(&mut self, problem: impl std::fmt::Display) {
        self.count += 1;
        if self.quoted.len() < QUOTED_PROBLEMS {
            self.quoted.push(problem.to_string());
        }
    }

    /// `[Note: 2 path(s) could not be read: a: Permission denied; b: …]`, if any.
    pub(crate) fn note(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let more = if self.count > self.quoted.len() { "; …" } else { "" };
        Some(format!("[Note: {} path(s) could not be read: {}{more}]", self.count, self.quoted.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_counted_and_a_few_quoted() {
        let mut problems = Problems::default();
        assert_eq!(problems.note(), None);
        for i in 0..5 {
            problems.record(format!("p{i}"));
        }
        assert_eq!(problems.note().unwrap(), "[Note: 5 path(s) could not be read: p0; p1; p2; …]");
    }

    #[test]
    fn pruned_dirs_are_skipped_below_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["node_modules/pkg", ".git/objects", "src", ".config"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join("f.txt"), "x").unwrap();
        }
        let found: Vec<String> = builder(dir.path())
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| crate::workspace::slash_path(e.path().strip_prefix(dir.path()).unwrap()))
            .collect();
        assert_eq!(found, [".config/f.txt", "src/f.txt"]);
        let inside: Vec<_> = builder(&dir.path().join("node_modules")).build().filter_map(Result::ok).collect();
        assert!(inside.iter().any(|e| e.path().ends_with("pkg/f.txt")));
    }
}
