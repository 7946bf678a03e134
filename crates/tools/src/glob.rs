//! `glob`: files whose path matches a glob, newest first.
//!
//! OpenClaw has no glob tool (`docs/tools-bridge.md` §2); the schema is the upstream bridge's
//! (`pattern`, base directory) under Claude Code's names (`path`; the bridge's `cwd` is still
//! accepted). Where the bridge translated globs to a regex by hand (no `{a,b}`, no `[...]`, no
//! cap, no ordering) we use `globset` for full glob syntax and the shared
//! gitignore-aware walk.
//!
//! Semantics: the pattern matches the path relative to the base directory with `/`
//! separators; `*` and `?` do not cross `/`, `**/` matches any number of directories
//! including none. Only regular files are listed (as the bridge's `find -type f`), relative to
//! the base. Order: most recently modified first; equal times by path, ascending. Only the
//! newest [`MAX_RESULTS`] are kept while walking, so memory stays bounded on huge trees.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs;
use std::io;
use std::time::SystemTime;

use clawmcp_mcp::{CallContext, Checking, Tool, ToolAnnotations, ToolResult};
use globset::{GlobBuilder, GlobSetBuilder};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{Args, Param};
use crate::fs_error;
use crate::walk::{self, ALWAYS_SKIPPED_DIRS, Problems};
use crate::workspace::{TargetPath, Workspace, slash_path};
use crate::{BridgeTool, ToolContext};

pub(crate) const NAME: &str = "glob";

const PATTERN: Param = Param::new(&["pattern"]);
const PATH: Param = Param::with_legacy(&["path", "cwd"], 1);

/// Files listed per call.
pub(crate) const MAX_RESULTS: usize = 1000;

/// The `glob` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Numbers and booleans may come as strings; the parser reads them (see the crate docs).
    crate::local_tool(descriptor(), Checking::StringifiedScalars, context, |context, arguments, ctx| async move {
        run(&context.workspace, &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    Tool {
        title: None,
        output_schema: None,
        name: NAME.into(),
        description: format!(
            "Find files by glob pattern, e.g. \"**/*.rs\" or \"src/**/*.{{ts,tsx}}\". Full glob syntax: *, ?, **, \
             {{a,b}}, [abc], [!abc]. The pattern matches paths relative to `path` (default: the workspace root); \
             * does not cross /, so use **/ to search subdirectories. Honours .gitignore and .ignore files, \
             includes hidden files, and always skips {}. Returns regular files relative to `path`, most recently \
             modified first (equal times by path), at most {MAX_RESULTS}.",
            ALWAYS_SKIPPED_DIRS.join(", ")
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern to match files against, e.g. \"**/*.ts\""},
                "path": {
                    "type": "string",
                    "description": "Directory to search in (relative or absolute); defaults to the workspace root",
                },
            },
            "required": ["pattern"],
        })
        .into(),
        annotations: Some(ToolAnnotations::READ_ONLY),
    }
}

struct GlobRequest {
    pattern: String,
    base: TargetPath,
}

pub(crate) async fn run(workspace: &Workspace, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
    let request = match parse(workspace, args) {
        Ok(request) => request,
        Err(message) => return ToolResult::error(message),
    };
    let cancel = ctx.cancel.clone();
    crate::blocking(NAME, move || find_files(&request, MAX_RESULTS, &cancel).unwrap_or_else(ToolResult::error)).await
}

fn parse(workspace: &Workspace, args: &Map<String, Value>) -> Result<GlobRequest, String> {
    let args = Args::new(args);
    let pattern = args.required_string(PATTERN, false).map_err(|e| e.to_string())?;
    let base = match args.string(PATH).map_err(|e| e.to_string())? {
        Some(path) if !path.trim().is_empty() => workspace.resolve(&path)?,
        _ => workspace.root_target(),
    };
    let pattern = pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern).to_string();
    walk::check_glob_length("pattern", &pattern)?;
    if pattern.starts_with('/') {
        return Err(format!(
            "The glob pattern {pattern:?} is absolute, but patterns match paths relative to `path`. Put the \
             directory in `path` and the rest in `pattern`, e.g. path \"/src\" and pattern \"**/*.rs\"."
        ));
    }
    Ok(GlobRequest { pattern, base })
}

/// A match; the derived order (newest first, then path) is the output order.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Found {
    newest_first: Reverse<SystemTime>,
    path: String,
}

fn find_files(request: &GlobRequest, max_results: usize, cancel: &CancellationToken) -> Result<ToolResult, String> {
    let base = &request.base;
    match fs::metadata(&base.abs) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{} is a file, but glob's path must be a directory to search in. Use read to open the file.",
                base.describe()
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("Directory not found: {}. {}", base.describe(), base.lookup_hint()));
        }
        Err(e) => return Err(fs_error::describe("search", base, &e)),
    }
    // Through a GlobSet: its build reports a glob too big to compile as an error, where
    // `Glob::compile_matcher` would panic.
    let matcher = GlobBuilder::new(&request.pattern)
        .literal_separator(true)
        .build()
        .and_then(|glob| GlobSetBuilder::new().add(glob).build())
        .map_err(|e| format!("Invalid glob pattern: {e}"))?;

    // A max-heap on the output order keeps the `max_results` best; its top is the worst kept.
    let mut kept = BinaryHeap::with_capacity(max_results + 1);
    let mut total = 0usize;
    let mut problems = Problems::default();
    let mut files = walk::files(&base.abs, walk::Filters::default());
    while let Some(entry) = files.next(cancel, &mut problems)? {
        let Ok(relative) = entry.path().strip_prefix(&base.abs) else { continue };
        let relative = slash_path(relative);
        if !matcher.is_match(&relative) {
            continue;
        }
        let modified = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
        total += 1;
        kept.push(Found { newest_first: Reverse(modified), path: relative });
        if kept.len() > max_results {
            kept.pop();
        }
    }

    let mut out = kept.into_sorted_vec().into_iter().map(|found| found.path).collect::<Vec<_>>().join("\n");
    if total == 0 {
        out = format!("No files found matching {:?} in {}.", request.pattern, base.describe());
    } else if total > max_results {
        out.push_str(&format!(
            "\n\n[Showing the {max_results} most recently modified of {total} matching files. Narrow the pattern \
             or path to see the rest.]"
        ));
    }
    if let Some(note) = problems.note() {
        out.push_str("\n\n");
        out.push_str(&note);
    }
    Ok(ToolResult::text(out))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    #[test]
    fn found_orders_newest_first_then_by_path() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut items = [
            Found { newest_first: Reverse(t), path: "b".into() },
            Found { newest_first: Reverse(t + Duration::from_secs(1)), path: "z".into() },
            Found { newest_first: Reverse(t), path: "a".into() },
        ];
        items.sort();
        let paths: Vec<_> = items.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["z", "a", "b"]);
    }

    #[test]
    fn the_cap_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for i in 0..5u64 {
            let path = dir.path().join(format!("f{i}.txt"));
            fs::write(&path, "x").unwrap();
            fs::File::options().write(true).open(&path).unwrap().set_modified(base + Duration::from_secs(i)).unwrap();
        }
        let workspace = Workspace::new(dir.path()).with_home(Some(PathBuf::from("/h")));
        let request = parse(&workspace, json!({"pattern": "*.txt"}).as_object().unwrap()).unwrap();
        let result = find_files(&request, 2, &CancellationToken::new()).unwrap();
        assert_eq!(
            result.first_text().unwrap(),
            "f4.txt\nf3.txt\n\n[Showing the 2 most recently modified of 5 matching files. Narrow the pattern or \
             path to see the rest.]"
        );
    }

    #[test]
    fn globs_are_limited_in_length_and_one_too_big_to_compile_is_an_error() {
        let workspace = Workspace::new("/ws");
        let at_limit = "?".repeat(walk::MAX_GLOB_BYTES);
        assert!(parse(&workspace, json!({"pattern": at_limit}).as_object().unwrap()).is_ok());
        let over = "?".repeat(walk::MAX_GLOB_BYTES + 1);
        let err = parse(&workspace, json!({"pattern": over}).as_object().unwrap()).err().unwrap();
        assert_eq!(
            err,
            "The glob in `pattern` is 4097 bytes, over the 4096-byte limit. Use a shorter pattern (fewer {a,b,...} \
             alternatives, or several calls)."
        );
        // What used to reach `Glob::compile_matcher` and panic there ("regex compilation
        // shouldn't fail") is refused by its length before anything is compiled.
        let star_storm = "*".repeat(100_000);
        let err = parse(&workspace, json!({"pattern": star_storm}).as_object().unwrap()).err().unwrap();
        assert!(err.starts_with("The glob in `pattern` is 100000 bytes"), "{err}");
    }

    #[test]
    fn absolute_patterns_are_refused_with_a_fix() {
        let workspace = Workspace::new("/ws");
        let err = parse(&workspace, json!({"pattern": "/src/**/*.rs"}).as_object().unwrap()).err().unwrap();
        assert!(err.contains("Put the directory in `path`"), "{err}");
        let ok = parse(&workspace, json!({"pattern": "./src/*.rs", "cwd": "sub"}).as_object().unwrap()).unwrap();
        assert_eq!(ok.pattern, "src/*.rs");
        assert_eq!(ok.base.abs, PathBuf::from("/ws/sub"));
    }
}
