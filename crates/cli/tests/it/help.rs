//! `--help` of every subcommand, checked in under `tests/it/help/` (one file per command, named
//! like its man page: `clawmcp-node-service-install.txt`), so a help text cannot change without
//! the change showing in review. The commands are found by walking each help's `Commands:`
//! list, so a new subcommand needs a snapshot too.
//!
//! After an intended change: `CLAWMCP_UPDATE_HELP=1 cargo test -p clawmcp --test it help`, then
//! read the diff.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::BIN;

const UPDATE: &str = "CLAWMCP_UPDATE_HELP";

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/help")
}

/// `clawmcp <path> --help` with an empty environment: the `[env: NAME=value]` that clap prints
/// for a set variable, and terminal colours, must not leak in.
fn help(path: &[String]) -> String {
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .args(path)
        .arg("--help")
        .output()
        .expect("clawmcp runs");
    assert!(
        output.status.success(),
        "clawmcp {} --help failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("help is UTF-8")
}

/// The subcommand names under the `Commands:` heading of a help text (`help` is clap's own).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.strip_prefix("  ")?.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command's help, keyed by its snapshot's file name.
fn every_help() -> BTreeMap<String, String> {
    let mut helps = BTreeMap::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let text = help(&path);
        for sub in subcommands(&text) {
            let mut child = path.clone();
            child.push(sub);
            pending.push(child);
        }
        let name = std::iter::once("clawmcp").chain(path.iter().map(String::as_str)).collect::<Vec<_>>().join("-");
        helps.insert(format!("{name}.txt"), text);
    }
    helps
}

#[test]
fn the_help_of_every_subcommand_matches_its_snapshot() {
    let helps = every_help();
    assert!(helps.contains_key("clawmcp-node-service-install.txt"), "the walk reaches nested subcommands");
    let dir = snapshot_dir();
    if std::env::var_os(UPDATE).is_some() {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        for (name, text) in &helps {
            fs::write(dir.join(name), text).unwrap();
        }
        return;
    }
    let mut problems = Vec::new();
    for (name, text) in &helps {
        match fs::read_to_string(dir.join(name)) {
            Ok(snapshot) if snapshot == *text => {}
            Ok(snapshot) => problems.push(format!("{name} changed:\n{}", diff(&snapshot, text))),
            Err(_) => problems.push(format!("{name} has no snapshot; the help is:\n{text}")),
        }
    }
    for entry in fs::read_dir(&dir).into_iter().flatten() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !helps.contains_key(&name) {
            problems.push(format!("{name} is a snapshot of a command that no longer exists"));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nIf intended: {UPDATE}=1 cargo test -p clawmcp --test it help",
        problems.join("\n\n")
    );
}

/// The lines that differ, `-` the snapshot's and `+` the binary's, with their line numbers.
fn diff(snapshot: &str, actual: &str) -> String {
    let (old, new): (Vec<&str>, Vec<&str>) = (snapshot.lines().collect(), actual.lines().collect());
    let mut out = String::new();
    for i in 0..old.len().max(new.len()) {
        let (a, b) = (old.get(i), new.get(i));
        if a != b {
            if let Some(a) = a {
                out.push_str(&format!("{:>4} - {a}\n", i + 1));
            }
            if let Some(b) = b {
                out.push_str(&format!("{:>4} + {b}\n", i + 1));
            }
        }
    }
    out
}
