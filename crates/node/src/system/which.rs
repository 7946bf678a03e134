//! `system.which`: where the node's PATH finds each named program.
//!
//! The gateway uses it to decide which skills a node can run, so it answers for the node process
//! as it is: the node's own PATH, names only (a name with `/` or `\` is a path, not something to
//! look up, and is omitted), found entries only.
//!
//! It reports what `system.run` would find: only absolute PATH directories are searched, and
//! (deviation from upstream) on Unix a file counts only if it is executable (`access(X_OK)`).
//! Upstream skips that check off Windows, so it would report a non-executable file that
//! `system.run` then cannot start.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::LazyLock;

use clawmcp_mcp::ToolAnnotations;
use serde_json::{Map, Value, json};

use crate::capability::{CapabilityError, CommandSpec, InvokeResult, args};

/// The most names one call may look up. Each name costs a `stat` per PATH entry; the bound keeps
/// a single call cheap while staying far above any real skill list.
pub const MAX_BINS: usize = 1024;

pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "system.which",
        title: Some("Find programs"),
        output_schema: Some(output_schema()),
        description: Some(
            "Find programs on this machine's PATH (the node's own PATH). Returns {bins:{name:absolutePath}} \
             listing only the names found as executable files; names containing '/' or '\\' are not looked up.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "bins": {
                        "type": "array",
                        "description": "Program names to look up, e.g. [\"git\", \"python3\"].",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "maxItems": MAX_BINS
                    }
                },
                "required": ["bins"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

/// The JSON Schema of `system.which`'s answer: each name found, with its absolute path.
fn output_schema() -> clawmcp_mcp::Schema {
    json!({
        "type": "object",
        "properties": {
            "bins": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^/"}}
        },
        "required": ["bins"],
        "additionalProperties": false
    })
    .into()
}

/// Serves `system.which` against the node process's PATH.
pub async fn invoke(args: &Map<String, Value>) -> InvokeResult {
    let names = args::string_array(args, "bins");
    if names.is_empty() {
        return Err(CapabilityError::new("Missing bins parameter").with_code(clawmcp_mcp::tool::codes::INVALID_REQUEST));
    }
    if names.len() > MAX_BINS {
        return Err(format!(
            "Too many bins: {} names given, at most {MAX_BINS} per call; split the lookup into several calls",
            names.len()
        )
        .into());
    }
    let path = std::env::var_os("PATH");
    let found = tokio::task::spawn_blocking(move || resolve(&names, path.as_deref()))
        .await
        .map_err(|_| "system.which failed unexpectedly; retry the call")?;
    Ok(json!({ "bins": found }))
}

/// Looks up each name on `path_var` (a PATH value); only names found appear in the result, in
/// request order.
fn resolve(names: &[String], path_var: Option<&OsStr>) -> Map<String, Value> {
    let mut found = Map::new();
    // Only absolute PATH directories count, as for `system.run` (see `approvals::resolve`): a
    // relative entry (or an empty one, meaning ".") would make the caller's cwd decide.
    let absolute_dirs = path_var.into_iter().flat_map(std::env::split_paths).filter(|dir| dir.is_absolute());
    let Ok(search_path) = std::env::join_paths(absolute_dirs) else { return found };
    for name in names {
        if name.contains(['/', '\\']) || found.contains_key(name) {
            continue;
        }
        let hit = which::which_in_global(name, Some(&search_path)).ok().and_then(|mut hits| hits.next());
        // A path that is not UTF-8 cannot be reported faithfully in JSON: leave it out.
        if let Some(path) = hit.as_deref().and_then(Path::to_str) {
            found.insert(name.clone(), Value::String(path.to_string()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use super::*;

    /// A directory with an executable `tool`, a non-executable `data`, and a directory `dir`.
    fn fixture() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        fs::write(bin.join("tool"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(bin.join("tool"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(bin.join("data"), "not a program").unwrap();
        fs::set_permissions(bin.join("data"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::create_dir(bin.join("dir")).unwrap();
        fs::set_permissions(bin.join("dir"), fs::Permissions::from_mode(0o755)).unwrap();
        (dir, bin)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_executables_and_omits_the_rest() {
        let (_dir, bin) = fixture();
        let path = std::env::join_paths([PathBuf::from("/nonexistent"), bin.clone()]).unwrap();
        let found = resolve(&names(&["tool", "missing", "data", "dir"]), Some(&path));
        assert_eq!(Value::Object(found), json!({"tool": bin.join("tool").to_str().unwrap()}));
    }

    #[test]
    fn names_with_separators_are_never_looked_up() {
        let (dir, bin) = fixture();
        let path = std::env::join_paths([dir.path()]).unwrap();
        // `bin/tool` exists under a PATH entry, but a path is not a program name.
        let found = resolve(&names(&["bin/tool", "bin\\tool", bin.join("tool").to_str().unwrap()]), Some(&path));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn the_first_path_entry_wins_and_results_are_absolute() {
        let (_first, first_bin) = fixture();
        let (_second, second_bin) = fixture();
        let path = std::env::join_paths([&first_bin, &second_bin]).unwrap();
        let found = resolve(&names(&["tool"]), Some(&path));
        let reported = Path::new(found["tool"].as_str().unwrap());
        assert_eq!(reported, first_bin.join("tool"));
        assert!(reported.is_absolute());
    }

    #[test]
    fn relative_and_empty_path_entries_are_ignored() {
        let (_dir, bin) = fixture();
        // A relative spelling of the fixture's bin directory, valid from this process's cwd.
        let cwd = std::env::current_dir().unwrap();
        let relative = Path::new(&"../".repeat(cwd.components().count())).join(bin.strip_prefix("/").unwrap());
        assert!(relative.join("tool").is_file(), "the relative entry does lead to the tool");
        let path = std::env::join_paths([relative.as_path(), Path::new("")]).unwrap();
        assert!(resolve(&names(&["tool"]), Some(&path)).is_empty());
    }

    #[test]
    fn no_path_finds_nothing() {
        assert!(resolve(&names(&["sh"]), None).is_empty());
    }

    #[tokio::test]
    async fn empty_or_missing_bins_is_an_error() {
        for args in [json!({}), json!({"bins": []}), json!({"bins": ["  ", 7]}), json!({"bins": "sh"})] {
            let error = invoke(args.as_object().unwrap()).await.unwrap_err();
            assert_eq!(error.message, "Missing bins parameter", "{args}");
        }
    }

    #[tokio::test]
    async fn the_bins_limit_is_enforced_at_its_edge() {
        let at_limit: Vec<String> = (0..MAX_BINS).map(|i| format!("no-such-program-{i}")).collect();
        let ok = invoke(json!({"bins": at_limit}).as_object().unwrap()).await.unwrap();
        assert_eq!(ok, json!({"bins": {}}));
        let over: Vec<String> = (0..=MAX_BINS).map(|i| format!("no-such-program-{i}")).collect();
        let error = invoke(json!({"bins": over}).as_object().unwrap()).await.unwrap_err();
        assert!(error.message.contains("at most 1024"), "{}", error.message);
    }

    #[tokio::test]
    async fn uses_the_node_process_path() {
        let result = invoke(json!({"bins": ["sh", "definitely-not-a-program-x9"]}).as_object().unwrap()).await.unwrap();
        let sh = result["bins"]["sh"].as_str().expect("sh is on PATH");
        assert!(Path::new(sh).is_absolute() && sh.ends_with("/sh"), "{sh}");
        assert_eq!(result["bins"].as_object().unwrap().len(), 1);
    }
}
