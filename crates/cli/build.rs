//! Stamps the git commit into `clawmcp --version` (`CLAWMCP_GIT_COMMIT`), so a bug report names
//! the exact build. From a git checkout: `git rev-parse HEAD`. From a packaged crate (a crates
//! tarball, `cargo install clawmcp`): the commit `cargo package` recorded in
//! `.cargo_vcs_info.json`. Otherwise, or without git on PATH: `unknown`. Nothing here can fail
//! the build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Digits shown, as `git rev-parse --short=12` would.
const SHORT: usize = 12;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let commit = checkout_commit(&manifest_dir).or_else(|| packaged_commit(&manifest_dir)).unwrap_or_else(|| {
        // git failed in a checkout (not on PATH for this build, or refused the directory): watch
        // the workspace's `.git` itself, so the next build after a commit, a checkout or git
        // becoming usable asks again instead of keeping `unknown` until build.rs changes.
        let dot_git = manifest_dir.join("../../.git");
        if dot_git.exists() {
            println!("cargo:rerun-if-changed={}", dot_git.display());
        }
        "unknown".to_owned()
    });
    println!("cargo:rustc-env=CLAWMCP_GIT_COMMIT={commit}");
}

/// HEAD of the checkout this crate sits in, and the files that move when HEAD does (HEAD itself,
/// the branch it points at, packed-refs), wherever this worktree keeps them. Only a checkout of
/// this workspace counts: a crate unpacked inside some other repository (a home directory kept
/// in git) must not take that repository's commit.
fn checkout_commit(manifest_dir: &Path) -> Option<String> {
    let top = PathBuf::from(git(manifest_dir, &["rev-parse", "--show-toplevel"])?);
    let ours = top.join("crates/cli").canonicalize().ok()? == manifest_dir.canonicalize().ok()?;
    if !ours {
        return None;
    }
    let commit = git(manifest_dir, &["rev-parse", &format!("--short={SHORT}"), "HEAD"])?;
    let branch = git(manifest_dir, &["symbolic-ref", "-q", "HEAD"]);
    for path in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        let resolved = git(manifest_dir, &["rev-parse", "--path-format=absolute", "--git-path", path]);
        // Only existing files: cargo re-runs a build script on every build while a file it was
        // told to watch does not exist.
        if let Some(resolved) = resolved.filter(|resolved| Path::new(resolved).exists()) {
            println!("cargo:rerun-if-changed={resolved}");
        }
    }
    Some(commit)
}

/// `{"git": {"sha1": "<40 hex>"}, ...}`, written by `cargo package`; read without a JSON crate
/// (a build dependency costs every build): the first 40-hex run after `"sha1"`.
fn packaged_commit(manifest_dir: &Path) -> Option<String> {
    let info = std::fs::read_to_string(manifest_dir.join(".cargo_vcs_info.json")).ok()?;
    let after = &info[info.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = after.find(|c: char| c.is_ascii_hexdigit())?;
    let sha: String = after[start..].chars().take_while(char::is_ascii_hexdigit).collect();
    (sha.len() == 40).then(|| sha[..SHORT].to_owned())
}

/// One line of git's output, or `None` when git is missing, fails, or this is not a checkout.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let line = text.trim();
    (output.status.success() && !line.is_empty()).then(|| line.to_owned())
}
