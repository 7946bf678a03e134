//! `read` through the public entry point, at its default limits (2000 lines, 50KB, 2000-byte
//! lines, 5MB images) and on real files: huge, sparse, binary, non-UTF-8, unreadable.

use crate::common;

use std::fs;
use std::io::Write;

use base64::Engine as _;
use clawmcp_mcp::Content;
use common::{Fixture, err_text, ok_text};
use serde_json::json;

fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
    lines.map(|i| format!("{i:>6}\tline {i}")).collect::<Vec<_>>().join("\n")
}

fn lines_file(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn text_comes_back_numbered_and_file_path_is_an_alias() {
    let f = Fixture::new();
    f.file("src/a.txt", "alpha\nbeta\n");
    let result = f.call("read", json!({"file_path": "src/a.txt"})).await;
    assert_eq!(ok_text(&result), "     1\talpha\n     2\tbeta");
    let absolute = f.call("read", json!({"path": f.path("src/a.txt")})).await;
    assert_eq!(ok_text(&absolute), "     1\talpha\n     2\tbeta");
}

#[tokio::test]
async fn tilde_expands_to_the_home_directory() {
    let f = Fixture::new();
    f.file("home/notes.md", "hi\n");
    assert_eq!(ok_text(&f.call("read", json!({"path": "~/notes.md"})).await), "     1\thi");
}

#[tokio::test]
async fn the_default_line_cap_is_2000_lines_exactly() {
    let f = Fixture::new();
    f.file("at_cap.txt", lines_file(2000));
    assert_eq!(ok_text(&f.call("read", json!({"path": "at_cap.txt"})).await), numbered(1..=2000));
    f.file("over.txt", lines_file(2001));
    let over = f.call("read", json!({"path": "over.txt"})).await;
    let expected = format!("{}\n\n[Showing lines 1-2000 of 2001. Use offset=2001 to continue.]", numbered(1..=2000));
    assert_eq!(ok_text(&over), expected);
    let rest = f.call("read", json!({"path": "over.txt", "offset": 2001})).await;
    assert_eq!(ok_text(&rest), "  2001\tline 2001");
}

#[tokio::test]
async fn the_default_byte_cap_is_50kb_with_openclaws_hint() {
    let f = Fixture::new();
    // 100-byte lines render as 107 bytes with their prefix; n of them joined by newlines take
    // 108n - 1 bytes, so 474 fit in 51200.
    let content: String = (0..1000).map(|_| format!("{}\n", "x".repeat(100))).collect();
    f.file("wide.txt", content);
    let result = f.call("read", json!({"path": "wide.txt"})).await;
    let text = ok_text(&result);
    let (body, hint) = text.split_once("\n\n").unwrap();
    assert!(body.len() <= 50 * 1024, "{}", body.len());
    assert_eq!(body.lines().count(), 474);
    assert_eq!(hint, "[Showing lines 1-474 of 1000 (50KB limit). Use offset=475 to continue.]");
}

#[tokio::test]
async fn a_50mb_file_yields_a_capped_slice_and_an_exact_continuation_hint() {
    let f = Fixture::new();
    let path = f.path("huge.log");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    let mut total_lines = 0u64;
    let mut written = 0u64;
    while written < 50 * 1024 * 1024 {
        let line = format!("{total_lines:08} the quick brown fox jumps over the lazy dog\n");
        out.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        total_lines += 1;
    }
    out.flush().unwrap();
    drop(out);

    let head = f.call("read", json!({"path": "huge.log"})).await;
    let text = ok_text(&head);
    let (body, hint) = text.split_once("\n\n").unwrap();
    assert!(body.len() <= 50 * 1024);
    let shown = body.lines().count() as u64;
    assert!(shown < 2000, "the 50KB cap binds before the line cap here");
    assert_eq!(
        hint,
        format!("[Showing lines 1-{shown} of {total_lines} (50KB limit). Use offset={} to continue.]", shown + 1)
    );

    let tail = f.call("read", json!({"path": "huge.log", "offset": total_lines - 1})).await;
    let last_two: Vec<&str> = ok_text(&tail).lines().collect();
    assert_eq!(last_two.len(), 2);
    assert!(last_two[1].ends_with(&format!("{:08} the quick brown fox jumps over the lazy dog", total_lines - 1)));
}

#[tokio::test]
async fn a_50mb_sparse_file_is_refused_as_binary_from_its_first_bytes() {
    let f = Fixture::new();
    let path = f.path("sparse.img");
    let file = fs::File::create(&path).unwrap();
    file.set_len(50 * 1024 * 1024).unwrap();
    let result = f.call("read", json!({"path": "sparse.img"})).await;
    assert!(
        err_text(&result).contains("looks like a binary file (50MB, NUL byte at offset 0)"),
        "{}",
        err_text(&result)
    );
}

#[tokio::test]
async fn binary_files_are_refused_even_with_a_text_extension() {
    let f = Fixture::new();
    f.file("data.txt", b"header\x00\x01\x02");
    let result = f.call("read", json!({"path": "data.txt"})).await;
    assert!(err_text(&result).contains("NUL byte at offset 6"));
}

#[tokio::test]
async fn lines_over_2000_bytes_are_cut_with_a_marker() {
    let f = Fixture::new();
    f.file("min.js", format!("{}\n{}\nshort\n", "a".repeat(2000), "b".repeat(2001)));
    let result = f.call("read", json!({"path": "min.js"})).await;
    let text = ok_text(&result);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("     1\t{}", "a".repeat(2000)));
    assert_eq!(lines[1], format!("     2\t{} … [line truncated, 2001 bytes in total]", "b".repeat(2000)));
    assert_eq!(lines[2], "     3\tshort");
    assert!(text.contains("1 line(s) longer than 2000 bytes were cut"));
}

#[tokio::test]
async fn non_utf8_text_is_decoded_lossily_with_a_note() {
    let f = Fixture::new();
    f.file("latin1.txt", b"na\xefve caf\xe9\n");
    let result = f.call("read", json!({"path": "latin1.txt"})).await;
    assert_eq!(
        ok_text(&result),
        "     1\tna\u{FFFD}ve caf\u{FFFD}\n\n[Note: the file is not valid UTF-8; undecodable bytes are shown as U+FFFD (\u{FFFD}).]"
    );
}

#[tokio::test]
async fn images_are_image_content_up_to_5mb() {
    let f = Fixture::new();
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&[1, 2, 3, 0, 0, 4]);
    f.file("pic.gif", &gif);
    let result = f.call("read", json!({"path": "pic.gif"})).await;
    assert!(!result.is_error);
    assert_eq!(result.content.len(), 2);
    let Content::Image { data, mime_type } = &result.content[1] else { panic!("expected an image block") };
    assert_eq!(mime_type, "image/gif");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap(), gif);

    let cap = 5 * 1024 * 1024;
    let png = f.path("at_cap.png");
    fs::write(&png, b"\x89PNG\r\n\x1a\n").unwrap();
    fs::File::options().write(true).open(&png).unwrap().set_len(cap).unwrap();
    let at_cap = f.call("read", json!({"path": "at_cap.png"})).await;
    assert!(!at_cap.is_error);
    let Content::Image { data, .. } = &at_cap.content[1] else { panic!("expected an image block") };
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap().len() as u64, cap);

    fs::File::options().write(true).open(&png).unwrap().set_len(cap + 1).unwrap();
    let over = f.call("read", json!({"path": "at_cap.png"})).await;
    assert_eq!(
        err_text(&over),
        "Image at_cap.png (resolved to ".to_string()
            + &png.display().to_string()
            + ") is 5.0MB, over the 5MB limit for returning an image. Resize or crop it first."
    );
}

#[tokio::test]
async fn missing_paths_and_directories_get_specific_messages() {
    let f = Fixture::new();
    let missing = f.call("read", json!({"path": "nope.txt"})).await;
    let expected = format!(
        "File not found: nope.txt (resolved to {}). Relative paths resolve against the workspace root {}.",
        f.path("nope.txt").display(),
        f.root().display()
    );
    assert_eq!(err_text(&missing), expected);

    fs::create_dir(f.path("sub")).unwrap();
    let dir = f.call("read", json!({"path": "sub"})).await;
    assert!(err_text(&dir).contains("is a directory, not a file. To list it use glob"));

    let no_path = f.call("read", json!({})).await;
    assert_eq!(err_text(&no_path), "Missing required parameter: path (path or file_path)");
    let bad_offset = f.call("read", json!({"path": "x", "offset": -3})).await;
    assert_eq!(err_text(&bad_offset), "Parameter `offset` must be an integer >= 0, got -3");
    let bad_limit = f.call("read", json!({"path": "x", "limit": 0})).await;
    assert_eq!(err_text(&bad_limit), "Parameter `limit` must be an integer >= 1, got 0");
}

#[cfg(unix)]
#[tokio::test]
async fn fifos_are_refused_instead_of_blocking() {
    let f = Fixture::new();
    let fifo = f.path("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo (coreutils) runs");
    assert!(status.success());
    let result = f.call("read", json!({"path": "pipe"})).await;
    assert!(
        err_text(&result).starts_with("Cannot read pipe (resolved to ")
            && err_text(&result).contains(": it is a FIFO (named pipe), not a regular file"),
        "{}",
        err_text(&result)
    );
}

/// Mode 000 stops an ordinary user but not root (CAP_DAC_OVERRIDE). The test asserts that the
/// tool reports exactly what the OS decides for this process: the permission message when the
/// OS refuses, the content when it allows (as root it does; the message wording itself is
/// pinned by the fs_error unit test).
#[cfg(unix)]
#[tokio::test]
async fn unreadable_files_report_what_the_os_decides() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let path = f.file("secret.txt", "s3cret\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let os_allows = fs::File::open(&path).is_ok();
    let result = f.call("read", json!({"path": "secret.txt"})).await;
    if os_allows {
        assert!(common::running_as_root(f.root()), "only root should read a mode-000 file");
        assert_eq!(ok_text(&result), "     1\ts3cret");
    } else {
        assert!(err_text(&result).starts_with("Permission denied: cannot read secret.txt"), "{}", err_text(&result));
    }
}
