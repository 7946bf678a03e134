//! Special files never hang or exhaust the local tools: a FIFO, a character device, a socket or
//! a directory where a file is expected is refused at once with a message naming what it is,
//! never read and never replaced; reads are bounded by bytes read, not by the size a file
//! reports. Every call here would block forever (a FIFO without a writer) or never end
//! (`/dev/zero`) if a tool opened the path the ordinary way.

#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use common::{Fixture, err_text, ok_text};
use serde_json::json;

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
}

fn is_fifo(path: &Path) -> bool {
    fs::symlink_metadata(path).unwrap().file_type().is_fifo()
}

/// Every kind of special file, with the words its refusal must use.
struct Specials {
    _socket: UnixListener,
    cases: Vec<(PathBuf, &'static str)>,
}

fn specials(f: &Fixture) -> Specials {
    mkfifo(&f.path("pipe"));
    let socket = UnixListener::bind(f.path("sock")).unwrap();
    fs::create_dir(f.path("dir")).unwrap();
    let cases = vec![
        (f.path("pipe"), "it is a FIFO (named pipe), not a regular file"),
        (PathBuf::from("/dev/zero"), "it is a character device, not a regular file"),
        (f.path("sock"), "it is a socket, not a regular file"),
        (f.path("dir"), "it is a directory"),
    ];
    Specials { _socket: socket, cases }
}

#[tokio::test]
async fn read_refuses_every_special_file_by_name() {
    let f = Fixture::new();
    let specials = specials(&f);
    for (path, kind) in &specials.cases {
        let result = f.call("read", json!({"path": path})).await;
        let message = err_text(&result);
        let expected = match kind.starts_with("it is a directory") {
            true => "is a directory, not a file. To list it use glob".to_string(),
            false => format!("Cannot read {}: {kind}, and was left untouched (", path.display()),
        };
        assert!(message.contains(&expected), "{}: {message}", path.display());
    }
}

#[tokio::test]
async fn edit_refuses_every_special_file_and_leaves_it_as_it_was() {
    let f = Fixture::new();
    let specials = specials(&f);
    for (path, kind) in &specials.cases {
        let result = f.call("edit", json!({"path": path, "oldText": "a", "newText": "b"})).await;
        let message = err_text(&result);
        assert!(message.starts_with(&format!("Cannot edit {}: {kind}", path.display())), "{message}");
        assert!(message.ends_with("Pass the path of a regular file.") || kind.starts_with("it is a directory"));
    }
    assert!(is_fifo(&f.path("pipe")));
    assert!(fs::symlink_metadata(f.path("sock")).unwrap().file_type().is_socket());
    assert!(f.temp_leftovers().is_empty());
}

/// A character device for `write` to refuse: as root a fresh node in the temp dir (so a broken
/// refusal could never replace the real /dev/null); as anyone else /dev/null itself, which they
/// could not replace anyway, so only the refusal's own message makes this pass.
fn char_device(f: &Fixture) -> PathBuf {
    if common::running_as_root(f.root()) {
        let node = f.path("null-device");
        let kind = nix::sys::stat::SFlag::S_IFCHR;
        let mode = nix::sys::stat::Mode::from_bits_truncate(0o666);
        nix::sys::stat::mknod(&node, kind, mode, nix::sys::stat::makedev(1, 3)).expect("root can mknod");
        node
    } else {
        PathBuf::from("/dev/null")
    }
}

#[tokio::test]
async fn write_refuses_special_files_and_never_replaces_one() {
    let f = Fixture::new();
    let specials = specials(&f);
    let device = char_device(&f);
    let mut cases: Vec<_> = specials.cases.iter().filter(|(p, _)| p != Path::new("/dev/zero")).cloned().collect();
    cases.push((device.clone(), "it is a character device, not a regular file"));
    for (path, kind) in &cases {
        let result = f.call("write", json!({"path": path, "content": "replacement"})).await;
        let message = err_text(&result);
        assert!(message.starts_with(&format!("Cannot write {}: {kind}", path.display())), "{message}");
    }
    assert!(is_fifo(&f.path("pipe")), "the FIFO is still a FIFO");
    assert!(fs::symlink_metadata(f.path("sock")).unwrap().file_type().is_socket());
    assert!(fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
    assert!(f.path("dir").is_dir());

    // Through a symlink the target counts: the link stays, the FIFO stays.
    std::os::unix::fs::symlink(f.path("pipe"), f.path("link-to-pipe")).unwrap();
    let result = f.call("write", json!({"path": "link-to-pipe", "content": "x"})).await;
    assert!(err_text(&result).contains("it is a FIFO (named pipe), not a regular file"), "{}", err_text(&result));
    assert!(fs::symlink_metadata(f.path("link-to-pipe")).unwrap().file_type().is_symlink());
    assert!(is_fifo(&f.path("pipe")));
    assert!(f.temp_leftovers().is_empty());
}

#[tokio::test]
async fn grep_skips_a_fifo_in_the_tree_and_refuses_one_named_directly() {
    let f = Fixture::new();
    f.file("a.txt", "needle\n");
    f.file("sub/b.txt", "needle\n");
    mkfifo(&f.path("sub/pipe"));
    let _socket = UnixListener::bind(f.path("sock")).unwrap();
    let found = f.call("grep", json!({"pattern": "needle", "output_mode": "files_with_matches"})).await;
    assert_eq!(ok_text(&found), "a.txt\nsub/b.txt");

    let direct = f.call("grep", json!({"pattern": "needle", "path": "sub/pipe"})).await;
    assert!(
        err_text(&direct).starts_with("Cannot search sub/pipe (resolved to ")
            && err_text(&direct).contains(": it is a FIFO (named pipe), not a regular file"),
        "{}",
        err_text(&direct)
    );
    let zero = f.call("grep", json!({"pattern": "needle", "path": "/dev/zero"})).await;
    assert!(
        err_text(&zero).starts_with("Cannot search /dev/zero: it is a character device, not a regular file"),
        "{}",
        err_text(&zero)
    );
    assert!(is_fifo(&f.path("sub/pipe")));
}

#[tokio::test]
async fn hostile_ignore_files_are_reported_and_never_read() {
    let f = Fixture::new();
    f.file("a.txt", "needle\n");
    f.file("fifo-dir/b.txt", "needle\n");
    f.file("zero-dir/c.txt", "needle\n");
    mkfifo(&f.path("fifo-dir/.gitignore"));
    std::os::unix::fs::symlink("/dev/zero", f.path("zero-dir/.ignore")).unwrap();
    let grep = f.call("grep", json!({"pattern": "needle", "output_mode": "files_with_matches"})).await;
    let text = ok_text(&grep);
    assert!(
        text.starts_with("a.txt\nfifo-dir/b.txt\nzero-dir/c.txt\n\n[Note: 2 path(s) could not be read: "),
        "{text}"
    );
    assert!(text.contains("fifo-dir/.gitignore: it is a FIFO (named pipe), not a regular file"), "{text}");
    assert!(text.contains("zero-dir/.ignore: it is a character device, not a regular file"), "{text}");

    let glob = f.call("glob", json!({"pattern": "**/*.txt"})).await;
    let listed: Vec<&str> = ok_text(&glob).lines().take_while(|l| !l.is_empty()).collect();
    let mut listed = listed;
    listed.sort();
    assert_eq!(listed, ["a.txt", "fifo-dir/b.txt", "zero-dir/c.txt"]);
}
