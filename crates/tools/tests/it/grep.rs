//! `grep`: regex search with ripgrep's crates: output modes, context, case, filters, ignore
//! files, binary files, real regex errors, and the default caps at their edges.

use crate::common;

use common::{Fixture, err_text, ok_text};
use serde_json::json;

fn project() -> Fixture {
    let f = Fixture::new();
    f.file("src/main.rs", "fn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n");
    f.file("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
    f.file("README.md", "# Demo\nCall add() to Add numbers.\n");
    f
}

#[tokio::test]
async fn content_mode_prints_path_line_text_by_default() {
    let f = project();
    let result = f.call("grep", json!({"pattern": "add\\("})).await;
    assert_eq!(
        ok_text(&result),
        "README.md:2:Call add() to Add numbers.\nsrc/lib.rs:1:pub fn add(a: i32, b: i32) -> i32 {\nsrc/main.rs:2:    let total = add(1, 2);"
    );
    let plain = f.call("grep", json!({"pattern": "^pub", "-n": false})).await;
    assert_eq!(ok_text(&plain), "src/lib.rs:pub fn add(a: i32, b: i32) -> i32 {");
}

#[tokio::test]
async fn output_modes_files_and_counts() {
    let f = project();
    let files = f.call("grep", json!({"pattern": "add", "output_mode": "files_with_matches"})).await;
    assert_eq!(ok_text(&files), "README.md\nsrc/lib.rs\nsrc/main.rs");
    let counts = f.call("grep", json!({"pattern": "a", "output_mode": "count", "path": "src"})).await;
    assert_eq!(ok_text(&counts), "src/lib.rs:2\nsrc/main.rs:3");
    let bad = f.call("grep", json!({"pattern": "a", "output_mode": "lines"})).await;
    assert_eq!(
        err_text(&bad),
        "Parameter `output_mode` must be one of content, files_with_matches, count, got \"lines\""
    );
}

#[tokio::test]
async fn case_is_sensitive_unless_asked() {
    let f = project();
    let sensitive = f.call("grep", json!({"pattern": "Add", "output_mode": "count"})).await;
    assert_eq!(ok_text(&sensitive), "README.md:1");
    let insensitive = f.call("grep", json!({"pattern": "ADD", "-i": true, "output_mode": "files_with_matches"})).await;
    assert_eq!(ok_text(&insensitive), "README.md\nsrc/lib.rs\nsrc/main.rs");
    let alias = f.call("grep", json!({"pattern": "ADD", "ignore_case": true, "path": "src/lib.rs"})).await;
    assert_eq!(ok_text(&alias), "src/lib.rs:1:pub fn add(a: i32, b: i32) -> i32 {");
}

#[tokio::test]
async fn context_lines_and_group_separators() {
    let f = Fixture::new();
    f.file("a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n");
    let around = f.call("grep", json!({"pattern": "hit", "-C": 1})).await;
    assert_eq!(ok_text(&around), "a.txt-2-2\na.txt:3:hit\na.txt-4-4\n--\na.txt-7-7\na.txt:8:hit\na.txt-9-9");
    let after_only = f.call("grep", json!({"pattern": "hit", "-C": 1, "-B": 0})).await;
    assert_eq!(ok_text(&after_only), "a.txt:3:hit\na.txt-4-4\n--\na.txt:8:hit\na.txt-9-9");
    f.file("b.txt", "hit\n");
    let two_files = f.call("grep", json!({"pattern": "hit", "-A": 1})).await;
    assert!(ok_text(&two_files).ends_with("a.txt-9-9\n--\nb.txt:1:hit"), "{}", ok_text(&two_files));
}

#[tokio::test]
async fn glob_type_and_path_filters() {
    let f = project();
    let glob = f.call("grep", json!({"pattern": "add", "glob": "*.{md,txt}"})).await;
    assert_eq!(ok_text(&glob), "README.md:2:Call add() to Add numbers.");
    let include =
        f.call("grep", json!({"pattern": "add", "include": "lib.rs", "output_mode": "files_with_matches"})).await;
    assert_eq!(ok_text(&include), "src/lib.rs");
    let rust = f.call("grep", json!({"pattern": "add", "type": "rust", "output_mode": "files_with_matches"})).await;
    assert_eq!(ok_text(&rust), "src/lib.rs\nsrc/main.rs");
    let unknown = f.call("grep", json!({"pattern": "add", "type": "klingon"})).await;
    assert!(err_text(&unknown).starts_with("Invalid file type \"klingon\": unrecognized file type: klingon."));
    let bad_glob = f.call("grep", json!({"pattern": "add", "glob": "[z-a]"})).await;
    assert!(err_text(&bad_glob).starts_with("Invalid glob filter \"[z-a]\": "), "{}", err_text(&bad_glob));
    let single = f.call("grep", json!({"pattern": "total", "path": f.path("src/main.rs")})).await;
    assert_eq!(ok_text(&single), "src/main.rs:2:    let total = add(1, 2);\nsrc/main.rs:3:    println!(\"{total}\");");
}

#[tokio::test]
async fn bad_regexes_return_the_parsers_message() {
    let f = project();
    let result = f.call("grep", json!({"pattern": "fn (main"})).await;
    let message = err_text(&result);
    assert!(message.starts_with("Invalid regex \"fn (main\": regex parse error:"), "{message}");
    assert!(message.contains("unclosed group"), "{message}");
}

#[tokio::test]
async fn ignored_pruned_and_binary_files_are_not_searched() {
    let f = Fixture::new();
    f.file(".gitignore", "target/\n*.gen\n");
    f.file("target/debug/out.txt", "needle\n");
    f.file("code.gen", "needle\n");
    f.file("node_modules/pkg/index.js", "needle\n");
    f.file(".hidden/notes.txt", "needle\n");
    f.file("image.bin", b"needle\x00\x01\x02needle");
    f.file("src/ok.txt", "a needle here\n");
    let result = f.call("grep", json!({"pattern": "needle"})).await;
    assert_eq!(
        ok_text(&result),
        ".hidden/notes.txt:1:needle\nsrc/ok.txt:1:a needle here\n\n[Skipped 1 binary file(s).]"
    );
}

#[tokio::test]
async fn multiline_matches_span_lines() {
    let f = Fixture::new();
    f.file("a.rs", "struct A {\n    x: u8,\n}\nstruct B;\n");
    let single_line = f.call("grep", json!({"pattern": "A \\{.*x"})).await;
    assert!(ok_text(&single_line).starts_with("No matches found for \"A \\\\{.*x\" in "));
    let multi = f.call("grep", json!({"pattern": "A \\{.*?x", "multiline": true})).await;
    assert_eq!(ok_text(&multi), "a.rs:1:struct A {\na.rs:2:    x: u8,");
}

#[tokio::test]
async fn crlf_files_match_end_anchors_and_show_no_carriage_returns() {
    let f = Fixture::new();
    f.file("win.txt", "alpha\r\nbeta\r\n");
    let result = f.call("grep", json!({"pattern": "a$"})).await;
    assert_eq!(ok_text(&result), "win.txt:1:alpha\nwin.txt:2:beta");
}

#[tokio::test]
async fn non_utf8_lines_are_matched_and_shown_lossily() {
    let f = Fixture::new();
    f.file("latin1.txt", b"caf\xe9 noir\n");
    let result = f.call("grep", json!({"pattern": "noir"})).await;
    assert_eq!(ok_text(&result), "latin1.txt:1:caf\u{FFFD} noir");
}

#[tokio::test]
async fn the_default_head_limit_is_500_entries_exactly() {
    let f = Fixture::new();
    f.file("at.txt", "m\n".repeat(500));
    let at = ok_text(&f.call("grep", json!({"pattern": "m"})).await).to_string();
    assert_eq!(at.lines().count(), 500);
    assert!(!at.contains('['));
    f.file("at.txt", "m\n".repeat(501));
    let over = ok_text(&f.call("grep", json!({"pattern": "m"})).await).to_string();
    let (list, note) = over.split_once("\n\n").unwrap();
    assert_eq!(list.lines().count(), 500);
    assert!(note.starts_with("[Output limited to head_limit=500 lines; more results exist."), "{note}");
    let raised = ok_text(&f.call("grep", json!({"pattern": "m", "head_limit": 501})).await).to_string();
    assert_eq!(raised.lines().count(), 501);
}

#[tokio::test]
async fn output_never_exceeds_50kb() {
    let f = Fixture::new();
    f.file("wide.txt", format!("{}\n", "w".repeat(400)).repeat(400));
    let result = ok_text(&f.call("grep", json!({"pattern": "w"})).await).to_string();
    let (list, note) = result.split_once("\n\n").unwrap();
    assert!(list.len() <= 50 * 1024, "{}", list.len());
    let next_line = format!("wide.txt:{}:{}", list.lines().count() + 1, "w".repeat(400));
    assert!(list.len() + 1 + next_line.len() > 50 * 1024, "the cap stopped one line early");
    assert!(note.starts_with("[Output truncated at 50KB; more results exist."), "{note}");
}

#[tokio::test]
async fn missing_paths_and_patterns_are_reported() {
    let f = project();
    let missing = f.call("grep", json!({"pattern": "x", "path": "nope"})).await;
    assert!(err_text(&missing).starts_with("Path not found: nope (resolved to "));
    let no_pattern = f.call("grep", json!({"path": "src"})).await;
    assert!(
        err_text(&no_pattern).starts_with("Invalid arguments for grep: `pattern` is required (The regular expression"),
        "{}",
        err_text(&no_pattern)
    );
}
