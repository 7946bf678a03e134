//! Reading `.gitignore`, `.ignore`, `.git/info/exclude` and the global git excludes ourselves,
//! for the shared walk (`walk`).
//!
//! The `ignore` crate reads these with a plain blocking `File::open` and an unbounded line
//! reader, so a FIFO named `.gitignore` hangs a search for good and `.gitignore -> /dev/zero` (a
//! symlink a cloned repository can carry) grows one line until memory runs out. The walk
//! therefore switches the crate's own ignore-file reading off and reads the files here through
//! [`clawmcp_fs::read_regular_file`]: non-blocking, type-checked on the descriptor, at most
//! [`MAX_IGNORE_FILE_BYTES`]. A file that fails those checks is reported and its rules are not
//! applied; the files are parsed by the crate's own `GitignoreBuilder`, so the rule syntax is
//! exactly ripgrep's.
//!
//! The precedence is ripgrep's (its `Ignore::matched_ignore` with `require_git(false)`):
//! `.ignore` rules beat `.gitignore` rules, which beat `.git/info/exclude`, which beats the
//! global excludes file; within one kind the deepest directory's match wins, a `!` rule
//! whitelisting. Directories above the walk root (up to `/`) contribute too.

use std::io;
use std::path::{Path, PathBuf};

use clawmcp_fs::{FileKind, not_regular_kind, read_regular_file};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The largest ignore file (or git config file) read. Real ones are a few KiB; a bigger one is
/// reported and skipped rather than parsed into an unbounded glob set.
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// Git's first line of a `.git` file (a worktree or submodule): `gitdir: <path>`.
const GITDIR_PREFIX: &str = "gitdir: ";

/// The ignore rules one directory contributes.
#[derive(Debug)]
pub(crate) struct DirRules {
    /// The directory, as the walk names it (its rules match paths under this prefix).
    pub dir: PathBuf,
    dot_ignore: Gitignore,
    git_ignore: Gitignore,
    git_exclude: Gitignore,
}

impl DirRules {
    /// Reads the ignore files of `dir`; what could not be read is described in `problems`.
    pub(crate) fn load(dir: &Path, problems: &mut Vec<String>) -> DirRules {
        let git_exclude = match git_common_dir(dir, problems) {
            Some(git_dir) => rules_from(dir, &git_dir.join("info/exclude"), problems),
            None => Gitignore::empty(),
        };
        DirRules {
            dir: dir.to_path_buf(),
            dot_ignore: rules_from(dir, &dir.join(".ignore"), problems),
            git_ignore: rules_from(dir, &dir.join(".gitignore"), problems),
            git_exclude,
        }
    }

    fn is_empty(&self) -> bool {
        self.dot_ignore.is_empty() && self.git_ignore.is_empty() && self.git_exclude.is_empty()
    }
}

/// Every rule that applies below a walk root: the root's ancestors, the directories walked so
/// far, the global excludes.
#[derive(Debug)]
pub(crate) struct IgnoreRules {
    /// The walk root, as the walk names it, and canonicalised (ancestors' rules match
    /// canonical paths).
    root: PathBuf,
    canonical_root: PathBuf,
    /// Ancestors of the root with any rules, deepest first, rooted at canonical paths.
    above: Vec<DirRules>,
    /// The root and the directories from it down to the one being walked: `walked[i]` is at
    /// depth `i`.
    walked: Vec<DirRules>,
    global: Gitignore,
}

impl IgnoreRules {
    /// The rules for a walk rooted at the directory `root`.
    pub(crate) fn for_root(root: &Path, problems: &mut Vec<String>) -> IgnoreRules {
        let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let above = canonical_root
            .ancestors()
            .skip(1)
            .map(|dir| DirRules::load(dir, problems))
            .filter(|rules| !rules.is_empty())
            .collect();
        IgnoreRules {
            root: root.to_path_buf(),
            canonical_root,
            above,
            walked: vec![DirRules::load(root, problems)],
            global: global_excludes(root, problems),
        }
    }

    /// Whether the ignore files exclude `path`, an entry at `depth` (>= 1) below the root.
    /// Entries must come in the walk's depth-first order: the directories from the root down
    /// to the entry's parent are loaded (once each) as the walk enters them.
    pub(crate) fn is_ignored(&mut self, path: &Path, depth: usize, is_dir: bool, problems: &mut Vec<String>) -> bool {
        let Some(parent) = path.parent() else { return false };
        if depth == 0 {
            return false;
        }
        self.walked.truncate(depth);
        if self.walked.len() == depth && self.walked[depth - 1].dir != parent {
            self.walked.pop();
        }
        if self.walked.len() < depth {
            self.walked.push(DirRules::load(parent, problems));
        }
        self.matched(path, is_dir).is_ignore()
    }

    fn matched(&self, path: &Path, is_dir: bool) -> Match<()> {
        let (mut dot_ignore, mut git_ignore, mut git_exclude) = (Match::None, Match::None, Match::None);
        let mut consult = |rules: &DirRules, path: &Path| {
            if dot_ignore.is_none() {
                dot_ignore = rules.dot_ignore.matched(path, is_dir).map(|_| ());
            }
            if git_ignore.is_none() {
                git_ignore = rules.git_ignore.matched(path, is_dir).map(|_| ());
            }
            if git_exclude.is_none() {
                git_exclude = rules.git_exclude.matched(path, is_dir).map(|_| ());
            }
        };
        for rules in self.walked.iter().rev() {
            consult(rules, path);
        }
        if !self.above.is_empty() {
            let canonical = match path.strip_prefix(&self.root) {
                Ok(relative) => self.canonical_root.join(relative),
                Err(_) => path.to_path_buf(),
            };
            for rules in &self.above {
                consult(rules, &canonical);
            }
        }
        dot_ignore.or(git_ignore).or(git_exclude).or(self.global.matched(path, is_dir).map(|_| ()))
    }
}

/// The rules of one ignore file, rooted at `dir`; empty if it does not exist or cannot be used.
fn rules_from(dir: &Path, file: &Path, problems: &mut Vec<String>) -> Gitignore {
    let Some(bytes) = read_small_file(file, problems) else { return Gitignore::empty() };
    let mut builder = GitignoreBuilder::new(dir);
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        // As the crate's own reader: a line that is not UTF-8 is skipped, a BOM dropped.
        let Ok(line) = std::str::from_utf8(line) else { continue };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = if index == 0 { line.trim_start_matches('\u{feff}') } else { line };
        if let Err(error) = builder.add_line(Some(file.to_path_buf()), line) {
            problems.push(format!("{}: line {}: {error}", file.display(), index + 1));
        }
    }
    builder.build().unwrap_or_else(|error| {
        problems.push(format!("{}: {error}; its rules were not applied", file.display()));
        Gitignore::empty()
    })
}

/// The bytes of a small regular file, `None` if there is none; anything else is a problem.
fn read_small_file(path: &Path, problems: &mut Vec<String>) -> Option<Vec<u8>> {
    match read_regular_file(path, MAX_IGNORE_FILE_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(error) if matches!(error.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => None,
        Err(error) => {
            let what = match not_regular_kind(&error) {
                Some(kind) => format!("it is {kind}, not a regular file, so it was not read"),
                None => error.to_string(),
            };
            problems.push(format!("{}: {what}; its rules were not applied", path.display()));
            None
        }
    }
}

/// The git directory whose `info/exclude` applies to `dir`, if `dir` holds a `.git`: the
/// directory itself, or for a `.git` file (a linked worktree) the common dir it names, as the
/// `ignore` crate resolves it.
fn git_common_dir(dir: &Path, problems: &mut Vec<String>) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    if FileKind::of(&meta).is_some() {
        return None;
    }
    let pointer = read_small_file(&dot_git, problems)?;
    let first_line = String::from_utf8_lossy(pointer.split(|&b| b == b'\n').next()?).into_owned();
    let real_git_dir = PathBuf::from(first_line.strip_prefix(GITDIR_PREFIX)?.trim_end_matches('\r'));
    let common = read_small_file(&real_git_dir.join("commondir"), problems)?;
    let common = String::from_utf8_lossy(common.split(|&b| b == b'\n').next()?).trim_end_matches('\r').to_string();
    Some(if common.starts_with('.') { real_git_dir.join(common) } else { PathBuf::from(common) })
}

/// The global excludes file's rules (git's `core.excludesFile`, by default
/// `$XDG_CONFIG_HOME/git/ignore`), rooted at `root`.
fn global_excludes(root: &Path, problems: &mut Vec<String>) -> Gitignore {
    match global_excludes_path(problems) {
        Some(path) => rules_from(root, &path, problems),
        None => Gitignore::empty(),
    }
}

/// Where git's global excludes file is: `core.excludesFile` from the first git config file that
/// sets it (`$GIT_CONFIG_GLOBAL`, which replaces the next two, else `~/.gitconfig`, then
/// `$XDG_CONFIG_HOME/git/config`; then the system config), else git's default.
fn global_excludes_path(problems: &mut Vec<String>) -> Option<PathBuf> {
    let env_path = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = dirs::home_dir();
    let xdg_config = env_path("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut configs = Vec::new();
    match env_path("GIT_CONFIG_GLOBAL") {
        Some(global) => configs.push(global),
        None => {
            configs.extend(home.as_ref().map(|h| h.join(".gitconfig")));
            configs.extend(xdg_config.as_ref().map(|x| x.join("git/config")));
        }
    }
    configs.push(env_path("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    configs
        .iter()
        .find_map(|config| {
            let bytes = read_small_file(config, problems)?;
            excludes_file_setting(&String::from_utf8_lossy(&bytes), home.as_deref())
        })
        .or_else(|| xdg_config.map(|x| x.join("git/ignore")))
}

/// `core.excludesFile` in the text of one git config file (the last one set wins, as in git),
/// with a leading `~/` expanded.
fn excludes_file_setting(config: &str, home: Option<&Path>) -> Option<PathBuf> {
    let mut in_core = false;
    let mut found = None;
    for line in config.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"']).next().unwrap_or_default();
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_core && key.trim().eq_ignore_ascii_case("excludesfile") {
            let value = value.trim();
            let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
            found = Some(match (value.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(value),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn excludes_file_is_read_from_the_core_section_last_one_winning() {
        let home = Path::new("/home/u");
        let config = "[user]\n\texcludesfile = /not/core\n[core]\n\teditor = vi\n\tExcludesFile = \"~/first\"\n\
                      [core]\n  excludesfile=/abs/last\n";
        assert_eq!(excludes_file_setting(config, Some(home)), Some(PathBuf::from("/abs/last")));
        assert_eq!(excludes_file_setting("[core]\nexcludesFile = ~/.gi\n", Some(home)), Some(home.join(".gi")));
        assert_eq!(excludes_file_setting("[user]\nexcludesfile = x\n", Some(home)), None);
    }

    #[cfg(unix)]
    #[test]
    fn special_and_oversized_ignore_files_are_reported_not_read() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join(".gitignore"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(".ignore")).unwrap();
        let mut problems = Vec::new();
        let rules = DirRules::load(dir.path(), &mut problems);
        assert!(rules.is_empty());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].ends_with(
                ".ignore: it is a character device, not a regular file, so it was not read; its rules were not applied"
            ),
            "{problems:?}"
        );
        assert!(problems[1].contains(".gitignore: it is a FIFO (named pipe), not a regular file"), "{problems:?}");

        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let at_limit = format!("a\n{}", "#".repeat(MAX_IGNORE_FILE_BYTES as usize - 2));
        fs::write(sub.join(".gitignore"), &at_limit).unwrap();
        let mut problems = Vec::new();
        assert!(!DirRules::load(&sub, &mut problems).git_ignore.is_empty(), "exactly at the limit is read");
        assert!(problems.is_empty(), "{problems:?}");
        fs::write(sub.join(".gitignore"), at_limit + "#").unwrap();
        assert!(DirRules::load(&sub, &mut problems).git_ignore.is_empty());
        let expected =
            format!(".gitignore: it is larger than {MAX_IGNORE_FILE_BYTES} bytes; its rules were not applied");
        assert!(problems[0].ends_with(&expected), "{problems:?}");
    }

    #[test]
    fn a_worktree_git_file_leads_to_the_common_dirs_exclude() {
        let dir = tempfile::tempdir().unwrap();
        let main_git = dir.path().join("main/.git");
        let worktree_git = main_git.join("worktrees/wt");
        fs::create_dir_all(main_git.join("info")).unwrap();
        fs::create_dir_all(&worktree_git).unwrap();
        fs::write(main_git.join("info/exclude"), "secret.txt\n").unwrap();
        fs::write(worktree_git.join("commondir"), "../..\n").unwrap();
        let wt = dir.path().join("wt");
        fs::create_dir(&wt).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", worktree_git.display())).unwrap();
        let mut problems = Vec::new();
        let rules = DirRules::load(&wt, &mut problems);
        assert!(rules.git_exclude.matched(wt.join("secret.txt"), false).is_ignore(), "{problems:?}");
        assert!(problems.is_empty(), "{problems:?}");
    }
}
