//! From a requested argv to the one file that will run.
//!
//! Policy is judged on the executable the kernel would load, not on the name a caller typed:
//! `argv[0]` without `/` is searched in the node's `PATH` (absolute directories only: a relative
//! entry would make the caller-chosen cwd decide what runs), with `/` it is taken relative to
//! the request's cwd, and the result is canonicalized (symlinks followed). The launch uses that
//! path, so what runs is what was judged.
//!
//! `env` wrappers (`env`, `/usr/bin/env`, `/bin/env`, up to four deep) are unwrapped when they
//! only set variables: `env A=B prog args` is judged as `prog args`, `prog` is found with the
//! `PATH` the wrapper would set, and the assignments are handed to the launcher instead of
//! running `env` itself. Such a command has no durable identity (arguments alone do not capture
//! `LD_PRELOAD=...`), so no allowlist entry vouches for it and "allow always" is not recorded.
//! An `env` with any option (`-i`, `-S`, ...) is not unwrapped: `env` itself is the executable.
//!
//! Shells are deliberately *not* unwrapped: for `sh -c "..."` the executable is the shell and
//! the script is an argument. Unwrapping would mean parsing shell syntax to guess what runs; an
//! allowlist entry for a shell must bind its arguments (or a human approves each script).

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

/// How many nested `env` wrappers are unwrapped; deeper nesting leaves `env` as the executable.
pub const MAX_ENV_DEPTH: usize = 4;

const ENV_SPELLINGS: [&str; 3] = ["env", "/usr/bin/env", "/bin/env"];

/// A command ready to be judged and launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedCommand {
    /// Canonical absolute path of the executable.
    pub executable: PathBuf,
    /// The same path as text (only UTF-8 paths are accepted, since patterns are text).
    pub executable_text: String,
    /// Arguments after the executable.
    pub args: Vec<String>,
    /// Variables set by unwrapped `env` wrappers, in order.
    pub env: Vec<(String, String)>,
}

impl ResolvedCommand {
    /// Whether an allowlist entry can vouch for this command: its arguments are all it is.
    pub fn is_durable(&self) -> bool {
        self.env.is_empty()
    }

    /// The argv to launch: the resolved path, then the arguments.
    pub fn launch_argv(&self) -> Vec<String> {
        std::iter::once(self.executable_text.clone()).chain(self.args.iter().cloned()).collect()
    }
}

/// Resolves `argv` (non-empty) run in `cwd` with the node's `search_path` (`$PATH`).
pub fn resolve(argv: &[String], cwd: Option<&Path>, search_path: Option<&OsStr>) -> Result<ResolvedCommand, String> {
    let (program_index, env) = unwrap_env(argv);
    let program = argv.get(program_index).ok_or("the command is empty")?;
    let wrapper_path = env.iter().rev().find(|(name, _)| name == "PATH").map(|(_, value)| OsStr::new(value.as_str()));
    let located = locate(program, cwd, wrapper_path.or(search_path))?;
    let executable = fs::canonicalize(&located).map_err(|e| format!("cannot resolve `{}`: {e}", located.display()))?;
    let meta = fs::metadata(&executable).map_err(|e| format!("cannot inspect `{}`: {e}", executable.display()))?;
    if !meta.is_file() {
        return Err(format!("`{}` is not a regular file", executable.display()));
    }
    if !is_executable(&meta) {
        return Err(format!("`{}` is not executable", executable.display()));
    }
    let executable_text = executable
        .to_str()
        .ok_or_else(|| format!("`{}` is not a UTF-8 path; approval patterns cannot name it", executable.display()))?
        .to_string();
    Ok(ResolvedCommand { executable, executable_text, args: argv[program_index + 1..].to_vec(), env })
}

/// The index of the real program in `argv` and the variables the unwrapped wrappers set.
fn unwrap_env(argv: &[String]) -> (usize, Vec<(String, String)>) {
    let mut program = 0;
    let mut env = Vec::new();
    for _ in 0..MAX_ENV_DEPTH {
        if !argv.get(program).is_some_and(|token| ENV_SPELLINGS.contains(&token.as_str())) {
            break;
        }
        let mut next = program + 1;
        let mut options_ended = false;
        if argv.get(next).is_some_and(|token| token == "--") {
            next += 1;
            options_ended = true;
        }
        let mut assignments = Vec::new();
        while let Some(assignment) = argv.get(next).and_then(|token| parse_assignment(token)) {
            assignments.push(assignment);
            next += 1;
        }
        match argv.get(next) {
            Some(token) if options_ended || !token.starts_with('-') => {
                env.extend(assignments);
                program = next;
            }
            // An option we do not emulate, or `env` alone (prints the environment).
            _ => break,
        }
    }
    (program, env)
}

fn parse_assignment(token: &str) -> Option<(String, String)> {
    let (name, value) = token.split_once('=')?;
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| (name.to_string(), value.to_string()))
}

fn locate(program: &str, cwd: Option<&Path>, search_path: Option<&OsStr>) -> Result<PathBuf, String> {
    if program.trim().is_empty() {
        return Err("the command is empty".to_string());
    }
    if program.contains('/') {
        let path = Path::new(program);
        if path.is_absolute() {
            return Ok(path.to_path_buf());
        }
        return Ok(base_dir(cwd)?.join(path));
    }
    std::env::split_paths(search_path.unwrap_or_default())
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| fs::metadata(candidate).is_ok_and(|meta| meta.is_file() && is_executable(&meta)))
        .ok_or_else(|| format!("`{program}` was not found as an executable in any absolute PATH directory"))
}

fn base_dir(cwd: Option<&Path>) -> Result<PathBuf, String> {
    let current = || std::env::current_dir().map_err(|e| format!("cannot read the node's working directory: {e}"));
    match cwd {
        Some(dir) if dir.is_absolute() => Ok(dir.to_path_buf()),
        Some(dir) => Ok(current()?.join(dir)),
        None => current(),
    }
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = fs::canonicalize(dir.path()).unwrap();
            Fixture { _dir: dir, root }
        }

        fn tool(&self, rel: &str, mode: u32) -> PathBuf {
            let path = self.root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            }
            path
        }

        fn path_var(&self, dirs: &[&str]) -> std::ffi::OsString {
            std::env::join_paths(
                dirs.iter().map(|d| if d.starts_with('/') { PathBuf::from(d) } else { self.root.join(d) }),
            )
            .unwrap()
        }
    }

    #[test]
    fn bare_names_are_searched_in_path_order() {
        let fx = Fixture::new();
        fx.tool("a/tool", 0o755);
        let second = fx.tool("b/tool", 0o755);
        fx.tool("a/noexec", 0o644);
        let found = resolve(&argv(&["tool", "x"]), None, Some(&fx.path_var(&["b", "a"]))).unwrap();
        assert_eq!(found.executable, second);
        assert_eq!(found.args, ["x"]);
        assert_eq!(found.launch_argv(), [second.to_str().unwrap(), "x"]);
        let err = resolve(&argv(&["noexec"]), None, Some(&fx.path_var(&["a"]))).unwrap_err();
        assert!(err.contains("not found"), "{err}");
    }

    #[test]
    fn relative_path_entries_are_never_searched() {
        let fx = Fixture::new();
        fx.tool("tool", 0o755);
        let err = resolve(&argv(&["tool"]), Some(&fx.root), Some(OsStr::new(".::"))).unwrap_err();
        assert!(err.contains("not found"), "{err}");
    }

    #[test]
    fn relative_paths_resolve_against_the_cwd_and_symlinks_are_followed() {
        let fx = Fixture::new();
        let real = fx.tool("bin/real", 0o755);
        std::os::unix::fs::symlink(&real, fx.root.join("bin/alias")).unwrap();
        let found = resolve(&argv(&["./bin/alias"]), Some(&fx.root), None).unwrap();
        assert_eq!(found.executable, real);
        let absolute = resolve(&argv(&[fx.root.join("bin/alias").to_str().unwrap()]), None, None).unwrap();
        assert_eq!(absolute.executable, real);
    }

    #[test]
    fn failures_are_explained() {
        let fx = Fixture::new();
        fx.tool("plain", 0o644);
        fs::create_dir(fx.root.join("dir")).unwrap();
        let cwd = Some(fx.root.as_path());
        assert!(resolve(&argv(&["./missing"]), cwd, None).unwrap_err().contains("cannot resolve"));
        assert!(resolve(&argv(&["./plain"]), cwd, None).unwrap_err().contains("not executable"));
        assert!(resolve(&argv(&["./dir"]), cwd, None).unwrap_err().contains("not a regular file"));
        assert!(resolve(&argv(&["  "]), cwd, None).unwrap_err().contains("empty"));
    }

    #[test]
    fn env_assignments_are_unwrapped_and_kept_for_the_launch() {
        let fx = Fixture::new();
        let tool = fx.tool("bin/tool", 0o755);
        let path = fx.path_var(&["bin"]);
        let found = resolve(&argv(&["env", "A=1", "B=x=y", "tool", "arg"]), None, Some(&path)).unwrap();
        assert_eq!(found.executable, tool);
        assert_eq!(found.args, ["arg"]);
        assert_eq!(found.env, [("A".to_string(), "1".to_string()), ("B".to_string(), "x=y".to_string())]);
        assert!(!found.is_durable());
        let nested = resolve(&argv(&["/usr/bin/env", "--", "env", "tool"]), None, Some(&path)).unwrap();
        assert_eq!(nested.executable, tool);
        assert!(nested.is_durable(), "a wrapper that sets nothing changes nothing");
    }

    #[test]
    fn the_wrapper_path_decides_the_search() {
        let fx = Fixture::new();
        fx.tool("node-path/tool", 0o755);
        let wrapped = fx.tool("wrapper-path/tool", 0o755);
        let assignment = format!("PATH={}", fx.root.join("wrapper-path").display());
        let found = resolve(&argv(&["env", &assignment, "tool"]), None, Some(&fx.path_var(&["node-path"]))).unwrap();
        assert_eq!(found.executable, wrapped);
    }

    #[test]
    fn env_with_options_is_not_unwrapped() {
        let fx = Fixture::new();
        let env = fx.tool("bin/env", 0o755);
        fx.tool("bin/tool", 0o755);
        let path = fx.path_var(&["bin"]);
        for command in [vec!["env", "-i", "tool"], vec!["env", "A=1", "-S", "tool"], vec!["env"], vec!["env", "A=1"]] {
            let found = resolve(&argv(&command), None, Some(&path)).unwrap();
            assert_eq!(found.executable, env, "{command:?}");
            assert_eq!(found.args, argv(&command[1..]));
            assert!(found.env.is_empty());
        }
    }

    #[test]
    fn env_nesting_is_bounded() {
        let fx = Fixture::new();
        let env = fx.tool("bin/env", 0o755);
        fx.tool("bin/tool", 0o755);
        let path = fx.path_var(&["bin"]);
        let at_limit: Vec<&str> = std::iter::repeat_n("env", MAX_ENV_DEPTH).chain(["tool"]).collect();
        assert_ne!(resolve(&argv(&at_limit), None, Some(&path)).unwrap().executable, env);
        let beyond: Vec<&str> = std::iter::repeat_n("env", MAX_ENV_DEPTH + 1).chain(["tool"]).collect();
        let found = resolve(&argv(&beyond), None, Some(&path)).unwrap();
        assert_eq!(found.executable, env);
        assert_eq!(found.args, ["tool"]);
    }

    #[test]
    fn a_program_named_like_an_assignment_is_not_an_env_wrapper_argument() {
        assert_eq!(parse_assignment("A_1=x"), Some(("A_1".into(), "x".into())));
        assert_eq!(parse_assignment("1A=x"), None);
        assert_eq!(parse_assignment("./a=b"), None);
        assert_eq!(parse_assignment("noequals"), None);
    }

    #[test]
    fn shells_are_the_executable_themselves() {
        let fx = Fixture::new();
        let sh = fx.tool("bin/sh", 0o755);
        let found = resolve(&argv(&["sh", "-c", "rm -rf /"]), None, Some(&fx.path_var(&["bin"]))).unwrap();
        assert_eq!(found.executable, sh);
        assert_eq!(found.args, ["-c", "rm -rf /"]);
    }
}
