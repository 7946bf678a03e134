//! `clawmcp token`: where the token lives, printing it, and rotating it under a running node.

use predicates::prelude::*;
use predicates::str::contains;

use crate::support::{Node, Sandbox, mode, probe, stdout_of};

#[test]
fn token_prints_the_path_without_creating_anything() {
    let sandbox = Sandbox::new();
    let assert = sandbox.clawmcp(["token", "--data-dir"]).arg(sandbox.data()).assert().success();
    assert_eq!(stdout_of(&assert).trim_end(), sandbox.token_path().display().to_string());
    assert.stderr(contains("not created yet")).stderr(contains("clawmcp node"));
    assert!(!sandbox.data().exists(), "`clawmcp token` only reads");
}

#[test]
fn token_prints_the_path_of_a_running_node() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    node.run(&sandbox, "token", &[])
        .assert()
        .success()
        .stdout(format!("{}\n", sandbox.token_path().display()))
        .stderr("");
}

#[test]
fn the_default_data_dir_is_the_platform_config_dir() {
    let sandbox = Sandbox::new();
    let expected = sandbox.home().join(".config/clawmcp/mcp-token.txt");
    sandbox.clawmcp(["token"]).assert().success().stdout(format!("{}\n", expected.display()));

    let elsewhere = sandbox.root().join("xdg");
    let mut with_xdg = sandbox.clawmcp(["token"]);
    with_xdg.env("XDG_CONFIG_HOME", &elsewhere);
    with_xdg.assert().success().stdout(format!("{}\n", elsewhere.join("clawmcp/mcp-token.txt").display()));
}

#[test]
fn the_data_dir_variable_is_honoured_and_the_flag_wins() {
    let sandbox = Sandbox::new();
    let from_env = sandbox.root().join("from-env");
    let mut command = sandbox.clawmcp(["token"]);
    command.env("CLAWMCP_DATA_DIR", &from_env);
    command.assert().success().stdout(format!("{}\n", from_env.join("mcp-token.txt").display()));

    let mut command = sandbox.clawmcp(["token", "--data-dir"]);
    command.arg(sandbox.data()).env("CLAWMCP_DATA_DIR", &from_env);
    command.assert().success().stdout(format!("{}\n", sandbox.token_path().display()));
}

#[test]
fn print_prints_the_token_itself() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let assert = node.run(&sandbox, "token", &["--print"]).assert().success();
    let printed = stdout_of(&assert);
    assert_eq!(printed, format!("{}\n", node.token()));
    assert_eq!(printed.trim_end().len(), 43);
}

#[test]
fn print_without_a_token_file_says_how_to_get_one() {
    let sandbox = Sandbox::new();
    sandbox
        .clawmcp(["token", "--print", "--data-dir"])
        .arg(sandbox.data())
        .assert()
        .code(1)
        .stdout("")
        .stderr(contains(sandbox.token_path().display().to_string()))
        .stderr(contains("clawmcp node"));
}

#[test]
fn print_and_reset_together_is_a_usage_error() {
    let sandbox = Sandbox::new();
    sandbox.clawmcp(["token", "--print", "--reset", "--data-dir"]).arg(sandbox.data()).assert().code(2);
    assert!(!sandbox.token_path().exists());
}

#[test]
fn reset_rotates_the_token_of_a_running_node_without_a_restart() {
    let sandbox = Sandbox::new();
    let mut node = Node::start(&sandbox);
    let old = node.token();

    node.run(&sandbox, "token", &["--reset"])
        .assert()
        .success()
        .stdout(format!("{}\n", sandbox.token_path().display()))
        .stderr(contains("running node").and(contains(&old).not()));
    let new = node.token();
    assert_ne!(new, old);
    assert_eq!(new.len(), 43);
    assert_eq!(mode(&sandbox.token_path()), 0o600);

    // The very next requests: the old token is refused, the new one accepted.
    assert_eq!(probe(node.port, Some(&old)), Ok(401));
    assert_eq!(probe(node.port, Some(&new)), Ok(200));
    assert_eq!(probe(node.port, None), Ok(401));
    node.run(&sandbox, "call", &["--list-tools", &format!("--token={old}")])
        .assert()
        .code(1)
        .stderr(contains("HTTP 401"));
    node.run(&sandbox, "call", &["--list-tools"]).assert().success();
    assert!(node.is_running(), "the same node process serves the new token");
}

#[test]
fn reset_creates_a_private_token_where_none_existed() {
    let sandbox = Sandbox::new();
    sandbox.clawmcp(["token", "--reset", "--data-dir"]).arg(sandbox.data()).assert().success();
    assert_eq!(mode(&sandbox.data()), 0o700);
    assert_eq!(mode(&sandbox.token_path()), 0o600);
    let token = std::fs::read_to_string(sandbox.token_path()).unwrap();
    assert_eq!(token.trim().len(), 43);

    // A node started afterwards serves that token rather than minting another.
    let node = Node::start(&sandbox);
    assert_eq!(node.token(), token.trim());
}
