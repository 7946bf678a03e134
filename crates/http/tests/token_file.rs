//! The bearer token file: format, permissions, persistence, regeneration rules, reset, and the
//! live view a running server uses.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clawmcp_http::token::{self, LiveToken, TOKEN_FILE_NAME, TokenError};

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn assert_token_shape(token: &str) {
    assert_eq!(token.len(), 43, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{token}");
    assert_eq!(URL_SAFE_NO_PAD.decode(token).unwrap().len(), 32);
}

#[test]
fn generated_tokens_are_43_base64url_chars_of_32_random_bytes() {
    let a = token::generate().unwrap();
    let b = token::generate().unwrap();
    assert_token_shape(&a);
    assert_token_shape(&b);
    assert_ne!(a, b);
}

#[test]
fn first_load_creates_a_private_file_in_a_private_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("a").join("b");
    let path = data.join(TOKEN_FILE_NAME);
    let created = token::load_or_create(&path).unwrap();
    assert_token_shape(&created);
    assert_eq!(fs::read_to_string(&path).unwrap(), created);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    let leftovers: Vec<_> = fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [TOKEN_FILE_NAME], "no temp file is left behind");
}

#[test]
fn the_token_persists_across_loads_and_is_read_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TOKEN_FILE_NAME);
    let created = token::load_or_create(&path).unwrap();
    assert_eq!(token::load_or_create(&path).unwrap(), created);
    fs::write(&path, format!("  {created}\r\n")).unwrap();
    assert_eq!(token::load_or_create(&path).unwrap(), created);
}

#[test]
fn a_missing_or_blank_file_is_regenerated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TOKEN_FILE_NAME);
    for blank in ["", " \n\t\r\n"] {
        fs::write(&path, blank).unwrap();
        let regenerated = token::load_or_create(&path).unwrap();
        assert_token_shape(&regenerated);
        assert_eq!(fs::read_to_string(&path).unwrap(), regenerated);
        assert_eq!(mode(&path), 0o600);
    }
}

#[test]
fn an_existing_unreadable_file_is_an_error_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // Not UTF-8 text: readable bytes, but not a token we could have written.
    let path = dir.path().join(TOKEN_FILE_NAME);
    fs::write(&path, [0xc3, 0x28]).unwrap();
    let error = token::load_or_create(&path).unwrap_err();
    assert!(matches!(error, TokenError::Read { .. }), "{error:?}");
    assert!(error.to_string().contains("clawmcp token --reset"), "{error}");
    assert_eq!(fs::read(&path).unwrap(), [0xc3, 0x28]);

    // Something that is not a regular file is refused with what it is and how to fix it.
    let directory = dir.path().join("dir-token");
    fs::create_dir(&directory).unwrap();
    let error = token::load_or_create(&directory).unwrap_err();
    assert!(matches!(error, TokenError::Untrusted(_)), "{error:?}");
    assert!(error.to_string().contains("it is a directory") && error.to_string().contains("mv "), "{error}");
    assert!(directory.is_dir());
}

#[test]
fn reset_always_writes_a_new_private_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TOKEN_FILE_NAME);
    let first = token::load_or_create(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let second = token::reset(&path).unwrap();
    assert_token_shape(&second);
    assert_ne!(first, second);
    assert_eq!(fs::read_to_string(&path).unwrap(), second);
    assert_eq!(mode(&path), 0o600, "the replacement file is private again");
    assert_eq!(token::load_or_create(&path).unwrap(), second);
}

/// Waits out the live token's check interval: a change made now is in force after it.
fn settle() {
    std::thread::sleep(token::RECHECK_AFTER);
}

#[test]
fn live_token_follows_the_file_and_keeps_the_last_good_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TOKEN_FILE_NAME);
    let live = LiveToken::load_or_create(&path).unwrap();
    let first = live.current().to_string();
    assert!(live.verify(first.as_bytes()));

    let second = token::reset(&path).unwrap();
    settle();
    assert_eq!(&*live.current(), second);
    assert!(!live.verify(first.as_bytes()));
    assert!(live.verify(second.as_bytes()));

    fs::remove_file(&path).unwrap();
    settle();
    assert!(live.verify(second.as_bytes()), "a vanished file keeps the last token");
    fs::write(&path, "   ").unwrap();
    settle();
    assert!(live.verify(second.as_bytes()), "a blanked file keeps the last token");

    let third = token::reset(&path).unwrap();
    settle();
    assert!(live.verify(third.as_bytes()), "a recreated file is picked up");
    assert!(!live.verify(second.as_bytes()));
    assert!(!live.verify(b""));
}

#[test]
fn each_token_put_in_force_is_the_next_authentication_generation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TOKEN_FILE_NAME);
    let live = LiveToken::load_or_create(&path).unwrap();
    let first = live.current().to_string();
    assert_eq!(live.admit(first.as_bytes()), Some(0));
    assert_eq!(live.admit(b"not the token"), None);
    // Re-reading an unchanged token (touched, rewritten with the same text) is no rotation.
    fs::write(&path, format!("{first}\n")).unwrap();
    settle();
    assert_eq!(live.admit(first.as_bytes()), Some(0));
    let second = token::reset(&path).unwrap();
    settle();
    assert_eq!(live.admit(first.as_bytes()), None, "the old token admits nothing once rotated");
    assert_eq!(live.admit(second.as_bytes()), Some(1));
    assert_eq!(live.generation(), 1);
    // A broken file keeps the token, and so its generation.
    fs::write(&path, "   ").unwrap();
    settle();
    assert_eq!(live.admit(second.as_bytes()), Some(1));
    let third = token::reset(&path).unwrap();
    settle();
    assert_eq!(live.admit(third.as_bytes()), Some(2));
}

#[test]
fn live_token_sees_every_kind_of_change_through_the_file_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(TOKEN_FILE_NAME);
    let live = LiveToken::load_or_create(&path).unwrap();
    let first = live.current().to_string();

    // Rewritten in place (same file, same length): its times moved.
    let second = token::generate().unwrap();
    let mut file = fs::OpenOptions::new().write(true).truncate(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, second.as_bytes()).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    drop(file);
    settle();
    assert!(live.verify(second.as_bytes()), "an in-place rewrite is seen");
    assert!(!live.verify(first.as_bytes()));

    // Renamed away (the held file keeps its one link) and a new file put in its place.
    fs::rename(&path, dir.path().join("old-token.txt")).unwrap();
    let third = token::generate().unwrap();
    fs::write(&path, &third).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    settle();
    assert!(live.verify(third.as_bytes()), "a file renamed away is seen");
    assert!(!live.verify(second.as_bytes()));

    // Made readable by others: seen (its change time moved), made private again, same token.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    settle();
    assert!(live.verify(third.as_bytes()));
    assert_eq!(mode(&path), 0o600, "the re-read under the trust rules made it private again");

    // Replaced by a link to a file someone else could control: refused, the last token stays.
    let elsewhere = dir.path().join("planted.txt");
    let planted = token::generate().unwrap();
    fs::write(&elsewhere, &planted).unwrap();
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    settle();
    assert!(!live.verify(planted.as_bytes()), "never read through a symlink");
    assert!(live.verify(third.as_bytes()));
}
