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
//!
//! The ignore files are read by `ignore_files`, not by the `ignore` crate (whose plain blocking
//! reads would hang on a FIFO named `.gitignore` and read `.gitignore -> /dev/zero` without
//! bound); only regular files are ever returned, and grep opens each one non-blocking and
//! checks its type again on the descriptor, since it may have been swapped since the walk saw it.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use clawmcp_mcp::CANCELLED;
use ignore::overrides::Override;
use ignore::types::Types;
use ignore::{DirEntry, WalkBuilder};
use tokio_util::sync::CancellationToken;

use crate::ignore_files::IgnoreRules;

/// Directory names pruned wherever they appear below the walk root.
pub(crate) const ALWAYS_SKIPPED_DIRS: [&str; 5] = [".git", "node_modules", ".venv", "venv", "__pycache__"];

/// The longest glob accepted from a caller (glob's `pattern`, grep's `glob`). Real ones are a
/// few dozen bytes; globset bounds what one compiles to, this bounds the time it takes.
pub(crate) const MAX_GLOB_BYTES: usize = 4096;

/// Refuses a glob over [`MAX_GLOB_BYTES`]; `param` names the argument.
pub(crate) fn check_glob_length(param: &str, glob: &str) -> Result<(), String> {
    if glob.len() <= MAX_GLOB_BYTES {
        return Ok(());
    }
    Err(format!(
        "The glob in `{param}` is {} bytes, over the {MAX_GLOB_BYTES}-byte limit. Use a shorter pattern (fewer \
         {{a,b,...}} alternatives, or several calls).",
        glob.len()
    ))
}

/// How many problem descriptions are quoted in the note.
const QUOTED_PROBLEMS: usize = 3;

/// Narrowing a walk beyond the ignore files: grep's `glob` (ripgrep's `-g`, which overrides the
/// ignore files in both directions) and `type`.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    pub overrides: Option<Override>,
    pub types: Option<Types>,
}

/// The files below one root, in walk order.
pub(crate) struct Files {
    walk: ignore::Walk,
    decider: Arc<Decider>,
}

/// Walks `root` (a directory). Nothing is opened but directories and, through
/// [`crate::ignore_files`], the ignore files.
pub(crate) fn files(root: &Path, filters: Filters) -> Files {
    let mut problems = Vec::new();
    let rules = IgnoreRules::for_root(root, &mut problems);
    let decider = Arc::new(Decider { filters, state: Mutex::new(DeciderState { rules, problems }) });
    let mut builder = WalkBuilder::new(root);
    // The crate's own ignore-file reading is off (it would block on a FIFO and read without
    // bound); `Decider` applies the same rules from files read safely.
    builder
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    let filter = decider.clone();
    builder.filter_entry(move |entry| filter.keep(entry));
    Files { walk: builder.build(), decider }
}

impl Files {
    /// The next regular file, `None` at the end. An entry the walk cannot read, or an ignore
    /// file that could not be used, is recorded in `problems` and passed over; a fired `cancel`
    /// ends the walk with the cancellation error (checked per entry, so a huge tree stops
    /// promptly). FIFOs, devices, sockets and symlinks are never returned.
    pub(crate) fn next(
        &mut self,
        cancel: &CancellationToken,
        problems: &mut Problems,
    ) -> Result<Option<DirEntry>, String> {
        let mut found = None;
        for entry in self.walk.by_ref() {
            if cancel.is_cancelled() {
                return Err(CANCELLED.into());
            }
            match entry {
                Ok(entry) if entry.file_type().is_some_and(|t| t.is_file()) => {
                    found = Some(entry);
                    break;
                }
                Ok(_) => {}
                Err(err) => problems.record(err),
            }
        }
        let mut state = self.decider.state.lock().unwrap_or_else(PoisonError::into_inner);
        for problem in state.problems.drain(..) {
            problems.record(problem);
        }
        Ok(found)
    }
}

/// What the walk keeps, in ripgrep's order: overrides first (a match either way decides), then
/// the ignore files, then the file type.
struct Decider {
    filters: Filters,
    state: Mutex<DeciderState>,
}

struct DeciderState {
    rules: IgnoreRules,
    problems: Vec<String>,
}

impl Decider {
    fn keep(&self, entry: &DirEntry) -> bool {
        if is_always_skipped(entry) {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if let Some(overrides) = &self.filters.overrides {
            let matched = overrides.matched(entry.path(), is_dir);
            if !matched.is_none() {
                return matched.is_whitelist();
            }
        }
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let DeciderState { rules, problems } = &mut *state;
            if rules.is_ignored(entry.path(), entry.depth(), is_dir, problems) {
                return false;
            }
        }
        !self.filters.types.as_ref().is_some_and(|types| types.matched(entry.path(), is_dir).is_ignore())
    }
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
    use std::fs;

    use super::*;

    /// Every file the walk returns below `root`, relative to `base`, and the problem note.
    fn walk_with(root: &Path, base: &Path, filters: Filters) -> (Vec<String>, Option<String>) {
        let mut files = files(root, filters);
        let mut problems = Problems::default();
        let mut found = Vec::new();
        while let Some(entry) = files.next(&CancellationToken::new(), &mut problems).unwrap() {
            found.push(crate::workspace::slash_path(entry.path().strip_prefix(base).unwrap()));
        }
        (found, problems.note())
    }

    fn all_files(root: &Path, base: &Path) -> Vec<String> {
        let (found, note) = walk_with(root, base, Filters::default());
        assert_eq!(note, None);
        found
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
        dir
    }

    #[test]
    fn ignore_files_apply_with_ripgreps_precedence() {
        let dir = tree(&[
            ("ws/.gitignore", "*.log\nbuild/\n!keep.log\n"),
            ("ws/.ignore", "!forced.log\n"),
            ("ws/a.log", ""),
            ("ws/keep.log", ""),
            ("ws/forced.log", ""),
            ("ws/build/out.txt", ""),
            ("ws/src/.gitignore", "!inner.log\ngen.rs\n"),
            ("ws/src/inner.log", ""),
            ("ws/src/gen.rs", ""),
            ("ws/src/main.rs", ""),
            ("ws/.git/info/exclude", "local.txt\n"),
            ("ws/local.txt", ""),
            ("ws/sub/deeper/local.txt", ""),
        ]);
        let ws = dir.path().join("ws");
        // .ignore's whitelist beats .gitignore; a deeper .gitignore's whitelist beats the root's;
        // info/exclude applies to the whole repository.
        assert_eq!(
            all_files(&ws, &ws),
            [".gitignore", ".ignore", "forced.log", "keep.log", "src/.gitignore", "src/inner.log", "src/main.rs"]
        );
        // Rooted below the file that holds the rules: the ancestors' rules still apply.
        assert_eq!(all_files(&ws.join("src"), &ws), ["src/.gitignore", "src/inner.log", "src/main.rs"]);
    }

    #[test]
    fn an_override_glob_beats_the_ignore_files_and_types_filter_after_them() {
        let dir = tree(&[(".gitignore", "*.rs\n"), ("a.rs", ""), ("b.py", ""), ("c.txt", "")]);
        let overrides = ignore::overrides::OverrideBuilder::new(dir.path()).add("*.rs").unwrap().build().unwrap();
        let (found, _) = walk_with(dir.path(), dir.path(), Filters { overrides: Some(overrides), types: None });
        assert_eq!(found, ["a.rs"]);
        let types = ignore::types::TypesBuilder::new().add_defaults().select("py").build().unwrap();
        let (found, _) = walk_with(dir.path(), dir.path(), Filters { overrides: None, types: Some(types) });
        assert_eq!(found, ["b.py"]);
    }

    #[cfg(unix)]
    #[test]
    fn fifos_sockets_and_hostile_ignore_files_are_passed_over_without_being_opened() {
        let dir = tree(&[("a.txt", "x"), ("sub/b.txt", "y"), ("other/c.txt", "z")]);
        let fifo_mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
        nix::unistd::mkfifo(&dir.path().join("pipe"), fifo_mode).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
        // Opened by a plain blocking reader these would hang (no writer) or never end.
        nix::unistd::mkfifo(&dir.path().join("sub/.gitignore"), fifo_mode).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("other/.gitignore")).unwrap();
        let (found, note) = walk_with(dir.path(), dir.path(), Filters::default());
        assert_eq!(found, ["a.txt", "other/c.txt", "sub/b.txt"]);
        let note = note.expect("the unusable ignore files are reported");
        assert!(note.starts_with("[Note: 2 path(s) could not be read: "), "{note}");
        assert!(note.contains("other/.gitignore: it is a character device, not a regular file"), "{note}");
        assert!(note.contains("sub/.gitignore: it is a FIFO (named pipe), not a regular file"), "{note}");
    }

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
        assert_eq!(all_files(dir.path(), dir.path()), [".config/f.txt", "src/f.txt"]);
        assert_eq!(all_files(&dir.path().join("node_modules"), dir.path()), ["node_modules/pkg/f.txt"]);
    }
}
