//! `glob`: full glob syntax, ignore files, pruned directories, mtime order, the 1000 cap.

use crate::common;

use common::{Fixture, err_text, ok_text, set_mtime};
use serde_json::json;

/// Files with distinct, increasing mtimes in the order given (so the output order is known).
fn tree(f: &Fixture, files: &[&str]) {
    for (i, rel) in files.iter().enumerate() {
        let path = f.file(rel, "x");
        set_mtime(&path, 1_700_000_000 + i as u64);
    }
}

async fn glob(f: &Fixture, args: serde_json::Value) -> Vec<String> {
    ok_text(&f.call("glob", args).await).lines().map(str::to_string).collect()
}

#[tokio::test]
async fn full_glob_syntax_matches_relative_paths_newest_first() {
    let f = Fixture::new();
    tree(&f, &["top.rs", "src/a.rs", "src/deep/b.rs", "src/c.ts", "src/d.tsx", "src/e1.md", "src/e2.md", "src/ex.md"]);
    assert_eq!(glob(&f, json!({"pattern": "**/*.rs"})).await, ["src/deep/b.rs", "src/a.rs", "top.rs"]);
    assert_eq!(glob(&f, json!({"pattern": "*.rs"})).await, ["top.rs"], "* does not cross /");
    assert_eq!(glob(&f, json!({"pattern": "src/*.{ts,tsx}"})).await, ["src/d.tsx", "src/c.ts"]);
    assert_eq!(glob(&f, json!({"pattern": "src/e[0-9].md"})).await, ["src/e2.md", "src/e1.md"]);
    assert_eq!(glob(&f, json!({"pattern": "src/e?.md"})).await, ["src/ex.md", "src/e2.md", "src/e1.md"]);
    assert_eq!(glob(&f, json!({"pattern": "*.rs", "path": "src"})).await, ["a.rs"], "relative to path");
    assert_eq!(glob(&f, json!({"pattern": "**/b.rs", "cwd": "src"})).await, ["deep/b.rs"], "legacy cwd");
}

#[tokio::test]
async fn equal_mtimes_are_ordered_by_path() {
    let f = Fixture::new();
    for rel in ["b.txt", "a.txt", "c.txt"] {
        set_mtime(&f.file(rel, ""), 1_600_000_000);
    }
    set_mtime(&f.file("old.txt", ""), 1_500_000_000);
    assert_eq!(glob(&f, json!({"pattern": "*.txt"})).await, ["a.txt", "b.txt", "c.txt", "old.txt"]);
}

#[tokio::test]
async fn gitignore_and_ignore_files_are_honoured_without_a_git_repo() {
    let f = Fixture::new();
    tree(&f, &["keep.log", "build/out.log", "debug.log", "sub/local.log", "sub/other.log"]);
    f.file(".gitignore", "build/\ndebug.log\n");
    f.file("sub/.ignore", "local.log\n");
    assert_eq!(glob(&f, json!({"pattern": "**/*.log"})).await, ["sub/other.log", "keep.log"]);
}

#[tokio::test]
async fn hidden_files_are_listed_but_vcs_and_dependency_dirs_are_not() {
    let f = Fixture::new();
    tree(
        &f,
        &[
            ".env",
            ".github/ci.yml",
            ".git/config",
            "node_modules/x/index.js",
            "venv/lib.py",
            "__pycache__/m.pyc",
            "app.js",
        ],
    );
    let all = glob(&f, json!({"pattern": "**/*"})).await;
    assert_eq!(all, ["app.js", ".github/ci.yml", ".env"]);
    let inside = glob(&f, json!({"pattern": "**/*.js", "path": "node_modules"})).await;
    assert_eq!(inside, ["x/index.js"], "an explicit base inside a pruned dir still works");
}

#[tokio::test]
async fn the_1000_result_cap_is_exact() {
    let f = Fixture::new();
    for i in 0..1000 {
        set_mtime(&f.file(&format!("d/{i:04}.txt"), ""), 1_700_000_000 + i);
    }
    let at_cap = glob(&f, json!({"pattern": "d/*.txt"})).await;
    assert_eq!(at_cap.len(), 1000);
    assert_eq!(at_cap[0], "d/0999.txt");

    set_mtime(&f.file("d/1000.txt", ""), 1);
    let over = ok_text(&f.call("glob", json!({"pattern": "d/*.txt"})).await).to_string();
    let (list, note) = over.split_once("\n\n").unwrap();
    assert_eq!(list.lines().count(), 1000);
    assert!(!list.contains("d/1000.txt"), "the oldest file is the one left out");
    assert_eq!(
        note,
        "[Showing the 1000 most recently modified of 1001 matching files. Narrow the pattern or path to see the rest.]"
    );
}

#[tokio::test]
async fn errors_are_specific() {
    let f = Fixture::new();
    f.file("file.txt", "");
    let none = ok_text(&f.call("glob", json!({"pattern": "*.zig"})).await).to_string();
    assert!(none.starts_with("No files found matching \"*.zig\" in "), "{none}");
    let bad = f.call("glob", json!({"pattern": "src/[a-"})).await;
    assert!(
        err_text(&bad).starts_with("Invalid glob pattern: error parsing glob 'src/[a-': unclosed character class"),
        "{}",
        err_text(&bad)
    );
    let missing = f.call("glob", json!({"pattern": "*", "path": "nowhere"})).await;
    assert!(err_text(&missing).starts_with("Directory not found: nowhere (resolved to "));
    let file = f.call("glob", json!({"pattern": "*", "path": "file.txt"})).await;
    assert!(err_text(&file).contains("is a file, but glob's path must be a directory"));
    let no_pattern = f.call("glob", json!({})).await;
    assert!(
        err_text(&no_pattern).starts_with("Invalid arguments for glob: `pattern` is required (Glob pattern to match"),
        "{}",
        err_text(&no_pattern)
    );
}
