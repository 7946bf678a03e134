//! `fs.listDir {path?}` -> `{path, parent?, home, entries: [{name, path, hidden?}]}`: the
//! subdirectories of one directory, for the gateway's directory picker (upstream's
//! `listHostDirectories`; the gateway checks the answer against a closed schema, so nothing else
//! is in it).
//!
//! `path` defaults to the home directory and is resolved lexically, not through symlinks (a
//! symlink to a directory is listed as one, as upstream). Visible names come first, then the
//! dot-directories (`hidden: true`), each group sorted bytewise. Failures are invoke errors
//! (`INVALID_REQUEST`), not in-band payloads, as upstream answers this command. The file roots
//! apply here too: only what `NodeFileRoots` covers is browsed.

use std::path::PathBuf;
use std::sync::LazyLock;

use clawmcp_mcp::{ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use crate::capability::CommandSpec;
use crate::files::dir_list::names;
use crate::files::{FilePolicy, display, normalize, open_dir};

pub fn spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "fs.listDir",
        title: Some("Browse directories"),
        output_schema: None,
        description: Some(
            "List the subdirectories of one directory on this machine (a directory picker), inside the roots its \
             owner serves (NodeFileRoots, default the home directory). path (absolute) defaults to the home \
             directory. Returns {path, parent, home, entries: [{name, path, hidden}]}: visible directories first, \
             then dot-directories (hidden: true), each sorted by name.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Absolute directory; default the home directory."}},
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

pub fn run(policy: &FilePolicy, args: &Map<String, Value>) -> ToolOutcome {
    let home =
        dirs::home_dir().ok_or_else(|| ToolFailure::invalid_request("fs.listDir: this user has no home directory"))?;
    let requested = match args.get("path") {
        None | Some(Value::Null) => home.clone(),
        Some(Value::String(text)) if text.is_empty() => home.clone(),
        Some(Value::String(text)) => PathBuf::from(text),
        Some(_) => return Err(ToolFailure::invalid_request("INVALID_REQUEST: path must be a string")),
    };
    if !requested.is_absolute() {
        return Err(ToolFailure::invalid_request("fs.listDir path must be absolute"));
    }
    let resolved = normalize(&requested);
    let refused = |error: crate::files::FileError| {
        ToolFailure::invalid_request(format!("fs.listDir {}: {}", error.code, error.message))
    };
    policy.check(&resolved).map_err(refused)?;
    // The directory itself may be reached through a symlink (the picker follows them); where it
    // leads must be inside the roots too.
    let real = std::fs::canonicalize(&resolved).map_err(|error| {
        ToolFailure::invalid_request(format!("fs.listDir cannot open {}: {error}", display(&resolved)))
    })?;
    policy.check(&real).map_err(refused)?;
    let (dir, _) = open_dir(&real).map_err(refused)?;
    let mut visible = Vec::new();
    let mut hidden = Vec::new();
    for name in names(dir, &real).map_err(refused)? {
        let path = resolved.join(&name);
        // A symlink counts when it leads to a directory (stat follows it; a broken one does not).
        if !std::fs::metadata(&path).is_ok_and(|meta| meta.is_dir()) {
            continue;
        }
        let text = name.to_string_lossy().into_owned();
        match text.starts_with('.') {
            true => hidden.push(json!({"name": text, "path": display(&path), "hidden": true})),
            false => visible.push(json!({"name": text, "path": display(&path)})),
        }
    }
    visible.extend(hidden);
    let mut result = json!({"path": display(&resolved), "home": display(&home), "entries": visible});
    if let Some(parent) = resolved.parent() {
        result["parent"] = json!(display(parent));
    }
    Ok(ToolOutput::from(result))
}
