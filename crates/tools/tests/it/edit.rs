//! `edit`: unique exact replacement, every refusal leaves the file byte-for-byte unchanged,
//! line endings and the rest of the file are preserved.

use crate::common;

use std::fs;

use common::{Fixture, err_text, ok_text};
use serde_json::json;

const SOURCE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

#[tokio::test]
async fn a_unique_match_is_replaced_and_a_diff_returned() {
    let f = Fixture::new();
    f.file("main.rs", SOURCE);
    let result = f.call("edit", json!({"path": "main.rs", "oldText": "let x = 1;", "newText": "let x = 2;"})).await;
    assert_eq!(
        ok_text(&result),
        "Successfully replaced text in main.rs.\n\n--- main.rs\n+++ main.rs\n@@ -1,4 +1,4 @@\n fn main() {\n-    let x = 1;\n\
         +    let x = 2;\n     println!(\"{x}\");\n }"
    );
    assert_eq!(fs::read_to_string(f.path("main.rs")).unwrap(), SOURCE.replace("x = 1", "x = 2"));
    assert!(f.temp_leftovers().is_empty());
}

#[tokio::test]
async fn claude_code_and_upstream_bridge_names_are_accepted() {
    let f = Fixture::new();
    f.file("a.txt", "one two\n");
    ok_text(&f.call("edit", json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"})).await);
    ok_text(&f.call("edit", json!({"path": "a.txt", "oldString": "two", "newString": "2"})).await);
    assert_eq!(fs::read_to_string(f.path("a.txt")).unwrap(), "1 2\n");
}

#[tokio::test]
async fn several_matches_are_refused_with_count_and_lines_and_nothing_changes() {
    let f = Fixture::new();
    let original = "a = 1\nb = 2\na = 1\n\na = 1\n";
    f.file("cfg", original);
    let result = f.call("edit", json!({"path": "cfg", "oldText": "a = 1", "newText": "a = 9"})).await;
    assert_eq!(
        err_text(&result),
        "Found 3 occurrences of the text in cfg (at lines 1, 3, 5). The text must be unique. Please provide more \
         context to make it unique, or set replace_all to replace every occurrence."
    );
    assert_eq!(fs::read_to_string(f.path("cfg")).unwrap(), original);

    let all = f.call("edit", json!({"path": "cfg", "oldText": "a = 1", "newText": "a = 9", "replace_all": true})).await;
    assert!(ok_text(&all).starts_with("Successfully replaced 3 occurrences of the text in cfg."));
    assert_eq!(fs::read_to_string(f.path("cfg")).unwrap(), original.replace("a = 1", "a = 9"));
}

#[tokio::test]
async fn text_not_found_is_refused_with_a_whitespace_hint() {
    let f = Fixture::new();
    f.file("main.rs", SOURCE);
    let result = f.call("edit", json!({"path": "main.rs", "oldText": "let x =  1;", "newText": "y"})).await;
    assert_eq!(
        err_text(&result),
        "Could not find the exact text in main.rs. The old text must match exactly including all whitespace and \
         newlines. The file was not changed. The text does occur if whitespace is ignored: check indentation \
         (tabs vs spaces), trailing spaces and line breaks, and copy it exactly from read output."
    );
    let numbered =
        f.call("edit", json!({"path": "main.rs", "oldText": "     2\t    let x = 1;", "newText": "y"})).await;
    assert!(err_text(&numbered).contains("line-number prefix"));
    assert_eq!(fs::read_to_string(f.path("main.rs")).unwrap(), SOURCE);
}

#[tokio::test]
async fn identical_and_empty_old_text_are_refused() {
    let f = Fixture::new();
    f.file("a.txt", "same\n");
    let same = f.call("edit", json!({"path": "a.txt", "oldText": "same", "newText": "same"})).await;
    assert_eq!(err_text(&same), "No changes made to a.txt: oldText and newText are identical.");
    let empty = f.call("edit", json!({"path": "a.txt", "oldText": "", "newText": "x"})).await;
    assert!(err_text(&empty).starts_with("oldText is empty"));
    let missing = f.call("edit", json!({"path": "a.txt", "oldText": "same"})).await;
    assert_eq!(err_text(&missing), "Missing required parameter: newText (newText or new_string)");
    assert_eq!(fs::read_to_string(f.path("a.txt")).unwrap(), "same\n");
}

#[tokio::test]
async fn an_empty_new_text_deletes() {
    let f = Fixture::new();
    f.file("a.txt", "keep\ndrop me\nkeep\n");
    ok_text(&f.call("edit", json!({"path": "a.txt", "oldText": "drop me\n", "newText": ""})).await);
    assert_eq!(fs::read_to_string(f.path("a.txt")).unwrap(), "keep\nkeep\n");
}

#[tokio::test]
async fn crlf_files_stay_crlf_when_the_edit_is_written_with_lf() {
    let f = Fixture::new();
    f.file("win.txt", "first\r\nsecond\r\nthird\r\n");
    let result = f
        .call("edit", json!({"path": "win.txt", "oldText": "first\nsecond", "newText": "one\ntwo\nthree-and-a-half"}))
        .await;
    ok_text(&result);
    assert_eq!(fs::read(f.path("win.txt")).unwrap(), b"one\r\ntwo\r\nthree-and-a-half\r\nthird\r\n");
    assert!(!ok_text(&result).contains('\r'), "the diff is shown without carriage returns");
}

#[tokio::test]
async fn untouched_lines_bom_and_missing_final_newline_are_preserved() {
    let f = Fixture::new();
    // Mixed endings: only the matched region may change.
    let original = "\u{FEFF}a\r\nb\nc\r\nlast";
    f.file("mixed.txt", original);
    ok_text(&f.call("edit", json!({"path": "mixed.txt", "oldText": "last", "newText": "LAST"})).await);
    assert_eq!(fs::read_to_string(f.path("mixed.txt")).unwrap(), "\u{FEFF}a\r\nb\nc\r\nLAST");
}

#[tokio::test]
async fn binary_and_non_utf8_files_are_refused_unchanged() {
    let f = Fixture::new();
    let binary = b"abc\x00def".to_vec();
    f.file("bin", &binary);
    let result = f.call("edit", json!({"path": "bin", "oldText": "abc", "newText": "x"})).await;
    assert!(err_text(&result).contains("looks like a binary file (NUL byte at offset 3)"));
    assert_eq!(fs::read(f.path("bin")).unwrap(), binary);

    let latin1 = b"caf\xe9 au lait\n".to_vec();
    f.file("latin1.txt", &latin1);
    let result = f.call("edit", json!({"path": "latin1.txt", "oldText": "au lait", "newText": "noir"})).await;
    assert!(err_text(&result).contains("is not valid UTF-8 (invalid byte at offset 3)"));
    assert_eq!(fs::read(f.path("latin1.txt")).unwrap(), latin1);
}

#[tokio::test]
async fn missing_files_are_reported_like_openclaw() {
    let f = Fixture::new();
    let result = f.call("edit", json!({"path": "ghost.txt", "oldText": "a", "newText": "b"})).await;
    assert!(err_text(&result).starts_with("File not found: ghost.txt (resolved to "));
    assert!(!f.path("ghost.txt").exists());
}

/// At exactly the limit the edit applies; one byte over (a sparse file: nothing is read before
/// the refusal) it is refused. A file that reports less than it yields is bounded by the bytes
/// read: the unit test `edit::tests::the_limit_is_on_bytes_read_not_on_the_size_reported`.
#[tokio::test]
async fn the_16mb_size_limit_is_inclusive() {
    let f = Fixture::new();
    let limit = 16 * 1024 * 1024;
    let mut content = vec![b'.'; limit];
    content[..6].copy_from_slice(b"token\n");
    f.file("at_limit.txt", &content);
    ok_text(&f.call("edit", json!({"path": "at_limit.txt", "oldText": "token", "newText": "TOKEN"})).await);
    assert!(fs::read(f.path("at_limit.txt")).unwrap().starts_with(b"TOKEN\n"));

    let sparse = fs::File::create(f.path("over.txt")).unwrap();
    sparse.set_len(limit as u64 + 1).unwrap();
    let over = f.call("edit", json!({"path": "over.txt", "oldText": "token", "newText": "TOKEN"})).await;
    assert!(err_text(&over).starts_with("over.txt is 16.0MB, over the 16MB edit limit"), "{}", err_text(&over));
}

#[cfg(unix)]
#[tokio::test]
async fn a_failed_write_leaves_the_file_unchanged_and_no_temp_file() {
    let f = Fixture::new();
    let path = f.file("locked/main.rs", SOURCE);
    let guard = common::Unwritable::dir(&f.path("locked"));
    let result = f.call("edit", json!({"path": "locked/main.rs", "oldText": "x = 1", "newText": "x = 2"})).await;
    let message = err_text(&result).to_string();
    drop(guard);
    assert!(message.starts_with("Permission denied: cannot write locked/main.rs"), "{message}");
    assert_eq!(fs::read_to_string(&path).unwrap(), SOURCE);
    assert!(f.temp_leftovers().is_empty());
}

/// 24 edits of one file at once, each replacing its own unique string, through four spellings
/// of the path (relative, `./`, absolute, a symlink): all 24 changes land. Before per-path
/// serialisation each edit read the same original and the last rename won: all 24 reported
/// success and 2 changes survived.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_of_one_file_all_land() {
    let f = Fixture::new();
    let original: String = (0..24).map(|i| format!("line {i}: token-{i:02}\n")).collect();
    let abs = f.file("shared.txt", &original);
    std::os::unix::fs::symlink(&abs, f.path("alias.txt")).unwrap();
    let spellings =
        ["shared.txt".to_string(), "./shared.txt".to_string(), abs.display().to_string(), "alias.txt".into()];
    let edits = (0..24).map(|i| {
        let path = spellings[i % spellings.len()].clone();
        f.call("edit", json!({"path": path, "oldText": format!("token-{i:02}"), "newText": format!("DONE-{i:02}")}))
    });
    let results = futures_util::future::join_all(edits).await;
    let content = fs::read_to_string(&abs).unwrap();
    for (i, result) in results.iter().enumerate() {
        ok_text(result);
        assert!(
            content.contains(&format!("line {i}: DONE-{i:02}\n")),
            "edit {i} reported success but is lost:\n{content}"
        );
    }
    assert_eq!(content, original.replace("token", "DONE"));
    assert!(f.temp_leftovers().is_empty());
}

/// A write racing edits of the same file: whatever the order, the write is never undone by an
/// edit that read the content from before it (the lost update: the write's marker would
/// vanish), and every edit applies to the content that was current when it ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_racing_edits_is_never_undone() {
    let f = Fixture::new();
    let tokens: String = (0..12).map(|i| format!("token-{i:02}\n")).collect();
    for round in 0..8 {
        let path = f.file(&format!("race-{round}.txt"), &tokens);
        let name = format!("race-{round}.txt");
        let written = format!("written in round {round}\n{tokens}");
        let write = f.call("write", json!({"path": name, "content": written}));
        let edits = (0..12).map(|i| {
            f.call("edit", json!({"path": name, "oldText": format!("token-{i:02}"), "newText": format!("DONE-{i:02}")}))
        });
        let (write, edits) = tokio::join!(write, futures_util::future::join_all(edits));
        ok_text(&write);
        let content = fs::read_to_string(&path).unwrap();
        assert!(content.starts_with(&format!("written in round {round}\n")), "the write was lost:\n{content}");
        for (i, edit) in edits.iter().enumerate() {
            // Each token is unique and the write restores all of them, so every edit finds its
            // text; its change is there unless the write (a whole-file replace) came after it.
            ok_text(edit);
            let (old, new) = (format!("token-{i:02}\n"), format!("DONE-{i:02}\n"));
            assert!(content.contains(&old) ^ content.contains(&new), "round {round}, token {i}:\n{content}");
        }
    }
    assert!(f.temp_leftovers().is_empty());
}
