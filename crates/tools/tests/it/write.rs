//! `write`: parents created, atomic replacement, modes kept, refusals leave everything as it was.

use crate::common;

use std::fs;

use common::{Fixture, err_text, ok_text};
use serde_json::json;

#[tokio::test]
async fn creates_parents_and_reports_bytes_written() {
    let f = Fixture::new();
    let result = f.call("write", json!({"file_path": "a/b/c.txt", "content": "héllo\n"})).await;
    assert_eq!(ok_text(&result), "Successfully wrote 7 bytes to a/b/c.txt");
    assert_eq!(fs::read_to_string(f.path("a/b/c.txt")).unwrap(), "héllo\n");
    assert!(f.temp_leftovers().is_empty());
}

#[tokio::test]
async fn overwrites_whole_file_and_allows_empty_content() {
    let f = Fixture::new();
    f.file("x.txt", "a much longer original content\n");
    ok_text(&f.call("write", json!({"path": "x.txt", "content": "short"})).await);
    assert_eq!(fs::read_to_string(f.path("x.txt")).unwrap(), "short");
    ok_text(&f.call("write", json!({"path": "x.txt", "content": ""})).await);
    assert_eq!(fs::read(f.path("x.txt")).unwrap(), b"");
}

#[cfg(unix)]
#[tokio::test]
async fn an_existing_files_permissions_survive_the_rename() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let script = f.file("run.sh", "#!/bin/sh\n");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
    ok_text(&f.call("write", json!({"path": "run.sh", "content": "#!/bin/sh\necho ok\n"})).await);
    assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o7777, 0o750);
}

#[cfg(unix)]
#[tokio::test]
async fn writing_through_a_symlink_updates_the_target_and_keeps_the_link() {
    let f = Fixture::new();
    let real = f.file("real/config.toml", "old");
    std::os::unix::fs::symlink(&real, f.path("config.toml")).unwrap();
    ok_text(&f.call("write", json!({"path": "config.toml", "content": "new"})).await);
    assert!(fs::symlink_metadata(f.path("config.toml")).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(&real).unwrap(), "new");

    std::os::unix::fs::symlink(f.path("missing-target"), f.path("dangling")).unwrap();
    let dangling = f.call("write", json!({"path": "dangling", "content": "x"})).await;
    assert!(err_text(&dangling).contains("symlink whose target does not exist"));
}

#[tokio::test]
async fn a_directory_target_is_refused_and_left_intact() {
    let f = Fixture::new();
    f.file("dir/inside.txt", "keep");
    let result = f.call("write", json!({"path": "dir", "content": "data"})).await;
    assert!(err_text(&result).contains("it is a directory. Pass the path of a file inside it."));
    assert_eq!(fs::read_to_string(f.path("dir/inside.txt")).unwrap(), "keep");
    assert!(f.temp_leftovers().is_empty());
}

#[tokio::test]
async fn a_file_in_the_parent_path_is_reported() {
    let f = Fixture::new();
    f.file("plain", "I am a file");
    let result = f.call("write", json!({"path": "plain/child.txt", "content": "x"})).await;
    let message = err_text(&result);
    assert!(message.starts_with("Cannot create the parent directories of plain/child.txt"), "{message}");
    assert_eq!(fs::read_to_string(f.path("plain")).unwrap(), "I am a file");
}

/// A real failure after the write started: the directory refuses the temp file. The old
/// content must survive untouched and no temp file may remain.
#[cfg(unix)]
#[tokio::test]
async fn a_refused_write_never_leaves_a_partial_file() {
    let f = Fixture::new();
    let target = f.file("locked/data.txt", "original");
    let guard = common::Unwritable::dir(&f.path("locked"));
    let result = f.call("write", json!({"path": "locked/data.txt", "content": "replacement"})).await;
    let message = err_text(&result).to_string();
    drop(guard);
    assert!(message.starts_with("Permission denied: cannot write locked/data.txt"), "{message}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "original");
    assert!(f.temp_leftovers().is_empty(), "{:?}", f.temp_leftovers());
}

#[tokio::test]
async fn content_must_be_a_string() {
    let f = Fixture::new();
    let missing = f.call("write", json!({"path": "a.txt"})).await;
    // Refused by the input schema's check, before the tool runs, naming what the argument is.
    let schema = "Every argument, its type and what it means are in the tool's input schema (tools/list).";
    let expected =
        format!("Invalid arguments for write: `content` is required (Content to write to the file). {schema}");
    assert_eq!(err_text(&missing), expected);
    let null = f.call("write", json!({"path": "a.txt", "content": null})).await;
    let expected = format!(
        "Invalid arguments for write: `content` must be a string, not null (Content to write to the file). {schema}"
    );
    assert_eq!(err_text(&null), expected);
    let number = f.call("write", json!({"path": "a.txt", "content": 42})).await;
    let expected = format!(
        "Invalid arguments for write: `content` must be a string, not 42 (Content to write to the file). {schema}"
    );
    assert_eq!(err_text(&number), expected);
    assert!(!f.path("a.txt").exists());
}
