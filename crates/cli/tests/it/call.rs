//! `clawmcp call`: the upstream `winnode` contract (result JSON on stdout; exit 0 success,
//! 1 tool or transport error, 2 usage error) plus clawmcp's endpoint and token flags.

use std::path::Path;

use nix::sys::signal::Signal;
use predicates::str::contains;
use serde_json::Value;

use crate::support::{Node, Sandbox, free_port, json_of, long_run, recorded_pids, stderr_of, stdout_of, wait_all_dead};

const WHICH_SH: &str = r#"{"bins":["sh"]}"#;

/// `system.which` found `sh` at an absolute path that exists.
fn assert_found_sh(result: &Value) {
    let path = result["bins"]["sh"].as_str().unwrap_or_else(|| panic!("no bins.sh in {result}"));
    assert!(Path::new(path).is_absolute() && Path::new(path).exists(), "{path}");
}

#[test]
fn list_tools_prints_the_tools_as_json() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let names = node.tool_names(&sandbox);
    for expected in ["system.which", "system.run", "system.run.prepare", "device.info"] {
        assert!(names.iter().any(|name| name == expected), "{expected} missing from {names:?}");
    }
    assert!(
        !names.iter().any(|name| name.starts_with("clawmcp/")),
        "the terminal's approval methods must not be tools an agent can call: {names:?}"
    );
}

#[test]
fn a_tool_result_is_pretty_json_on_stdout() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let assert = node.run(&sandbox, "call", &["system.which", "--params", WHICH_SH]).assert().success();
    assert_found_sh(&json_of(&assert));
    assert!(stdout_of(&assert).contains("\n  \"bins\""), "pretty-printed with 2 spaces:\n{}", stdout_of(&assert));
}

#[test]
fn params_can_come_from_a_file_or_stdin() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let file = sandbox.root().join("params.json");
    std::fs::write(&file, WHICH_SH).unwrap();
    let from_file = format!("@{}", file.display());

    let assert = node.run(&sandbox, "call", &["system.which", "--params", &from_file]).assert().success();
    assert_found_sh(&json_of(&assert));

    let assert =
        node.run(&sandbox, "call", &["system.which", "--params", "@-"]).write_stdin(WHICH_SH).assert().success();
    assert_found_sh(&json_of(&assert));
}

#[test]
fn a_tool_error_goes_to_stderr_with_status_1() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    node.run(&sandbox, "call", &["system.which"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(contains("Invalid arguments for system.which: `bins` is required"));
}

#[test]
fn an_unknown_tool_is_status_1() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    node.run(&sandbox, "call", &["no.such.tool"]).assert().code(1).stdout("").stderr(contains("no.such.tool"));
}

#[test]
fn bad_params_are_usage_errors_found_before_connecting() {
    let sandbox = Sandbox::new();
    // Nothing listens here: status 2 proves the params were refused before any connection.
    let port = free_port().to_string();
    for (params, says) in [
        ("{", "not valid JSON"),
        ("nope", "not valid JSON"),
        ("[1]", "must be a JSON object"),
        ("1", "must be a JSON object"),
        ("\"text\"", "must be a JSON object"),
        ("@/no/such/params.json", "/no/such/params.json"),
    ] {
        sandbox
            .clawmcp(["call", "system.which", "--port", &port, "--params", params])
            .assert()
            .code(2)
            .stderr(contains(says));
    }
}

#[test]
fn missing_and_unknown_arguments_are_usage_errors() {
    let sandbox = Sandbox::new();
    let port = free_port().to_string();
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["call"],
        &["call", "--bogus"],
        &["call", "system.which", "--list-tools"],
        &["call", "--list-tools", "--params", "{}"],
        &["call", "system.which", "--params"],
        &["call", "--list-tools", "--port", "0"],
        &["call", "--list-tools", "--port", "65536"],
        &["call", "--list-tools", "--timeout-ms", "0"],
        &["call", "--list-tools", "--timeout-ms", "3600001"],
        &["call", "--list-tools", "--port", &port, "--url", "https://127.0.0.1:1/"],
        &["call", "--list-tools", "--port", &port, "--url", "not a url"],
    ];
    for args in cases {
        let assert = sandbox.clawmcp(*args).assert();
        let output = assert.get_output();
        assert_eq!(output.status.code(), Some(2), "clawmcp {args:?}: {output:?}");
        assert!(!output.stderr.is_empty(), "clawmcp {args:?} must say what is wrong");
    }
}

#[test]
fn timeout_limits_at_the_edge_are_accepted() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    for ms in ["1", "3600000"] {
        // 1 ms may or may not be enough for a loopback round trip: either way it is not a usage error.
        let assert = node.run(&sandbox, "call", &["--list-tools", "--timeout-ms", ms]).assert();
        let code = assert.get_output().status.code();
        assert!(code == Some(0) || (ms == "1" && code == Some(1)), "--timeout-ms {ms}: {:?}", assert.get_output());
    }
}

#[test]
fn no_node_listening_says_so_and_how_to_start_one() {
    let sandbox = Sandbox::new();
    let port = free_port();
    sandbox
        .clawmcp(["call", "system.which", "--params", WHICH_SH, "--port", &port.to_string()])
        .assert()
        .code(1)
        .stdout("")
        .stderr(contains(format!("no clawmcp node is listening on http://127.0.0.1:{port}/")))
        .stderr(contains("clawmcp node"));
}

#[test]
fn a_wrong_token_is_rejected_with_a_hint_naming_its_source() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);

    node.run(&sandbox, "call", &["--list-tools", "--token", "wrong"])
        .assert()
        .code(1)
        .stderr(contains("HTTP 401"))
        .stderr(contains("--token"));

    let mut from_env = node.run(&sandbox, "call", &["--list-tools"]);
    from_env.env("OPENCLAW_MCP_TOKEN", "wrong").assert().code(1).stderr(contains("OPENCLAW_MCP_TOKEN"));

    // Another data dir holds another token: the hint names that file.
    let other = Sandbox::new();
    other.clawmcp(["token", "--reset", "--data-dir"]).arg(other.data()).assert().success();
    other
        .clawmcp(["call", "--list-tools", "--port", &node.port.to_string(), "--data-dir"])
        .arg(other.data())
        .assert()
        .code(1)
        .stderr(contains("HTTP 401"))
        .stderr(contains(other.token_path().display().to_string()));

    // No token file at all.
    let empty = Sandbox::new();
    empty
        .clawmcp(["call", "--list-tools", "--port", &node.port.to_string(), "--data-dir"])
        .arg(empty.data())
        .assert()
        .code(1)
        .stderr(contains("HTTP 401"))
        .stderr(contains("no token was sent"));
}

#[test]
fn the_token_from_openclaw_mcp_token_is_used() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let empty = Sandbox::new();
    let mut call = empty.clawmcp(["call", "system.which", "--params", WHICH_SH, "--port", &node.port.to_string()]);
    call.arg("--data-dir").arg(empty.data()).env("OPENCLAW_MCP_TOKEN", node.token());
    assert_found_sh(&json_of(&call.assert().success()));
}

#[test]
fn url_overrides_port() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let dead_port = free_port().to_string();
    for url in [format!("http://127.0.0.1:{}/", node.port), format!("http://localhost:{}", node.port)] {
        let mut call = sandbox.clawmcp(["call", "system.which", "--params", WHICH_SH, "--port", &dead_port]);
        call.args(["--url", &url, "--data-dir"]).arg(sandbox.data());
        assert_found_sh(&json_of(&call.assert().success()));
    }
}

#[test]
fn the_endpoint_variable_is_honoured_by_call() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let mut call = sandbox.clawmcp(["call", "system.which", "--params", WHICH_SH]);
    call.env("OPENCLAW_MCP_PORT", node.port.to_string()).env("CLAWMCP_DATA_DIR", sandbox.data());
    assert_found_sh(&json_of(&call.assert().success()));
}

#[test]
fn verbose_output_never_shows_the_token() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let assert = node.run(&sandbox, "call", &["-vv", "system.which", "--params", WHICH_SH]).assert().success();
    assert!(!stderr_of(&assert).contains(&node.token()), "token leaked:\n{}", stderr_of(&assert));
    assert!(!node.stderr().contains(&node.token()), "token leaked by the node:\n{}", node.stderr());
}

#[test]
fn ctrl_c_cancels_the_run_on_the_node() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = Node::start(&sandbox);
    let (mut call, pids) = node.call_long_run(&sandbox);

    call.signal(Signal::SIGINT);
    let ended = call.wait("the interrupted call to exit");
    assert_eq!(ended.code(), Some(130), "{ended:?}");
    assert!(ended.stderr.contains("cancelling the call on the node"), "{ended:?}");
    wait_all_dead(&pids, &node);
}

#[test]
fn a_client_timeout_cancels_the_run_on_the_node() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = Node::start(&sandbox);
    let pid_file = sandbox.root().join("run.pids");

    // The call gives up long before the run would end; the node sees the connection close.
    node.run(&sandbox, "call", &["system.run", "--params", &long_run(&pid_file), "--timeout-ms", "3000"])
        .assert()
        .code(1)
        .stderr(contains("timed out after 3000 ms"));

    let pids = recorded_pids(&pid_file).expect("the run started within the client's 3 s");
    wait_all_dead(&pids, &node);
}

#[test]
fn stdout_carries_only_the_result() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let assert = node.run(&sandbox, "call", &["--list-tools"]).assert().success();
    assert!(serde_json::from_str::<Value>(&stdout_of(&assert)).is_ok(), "stdout is one JSON document");
    assert_eq!(stderr_of(&assert), "", "nothing but the result is printed on success");
}

/// `--output-file`: file.fetch's bytes land in the file exactly (and sha256-checked against the
/// node's), the metadata on stdout; an existing file is kept unless `--force`; a result with no
/// binary content writes nothing and says so.
#[test]
fn output_file_writes_the_fetched_bytes_once_and_only_with_force_again() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let source = sandbox.home().join("source.bin");
    let bytes: Vec<u8> = (0..70_000u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&source, &bytes).unwrap();
    let params = format!(r#"{{"path": "{}"}}"#, source.display());
    let out = sandbox.root().join("copy.bin");
    let out_arg = out.display().to_string();
    let fetch = |extra: &[&str]| {
        let mut args = vec!["file.fetch", "--params", params.as_str(), "--output-file", out_arg.as_str()];
        args.extend_from_slice(extra);
        node.run(&sandbox, "call", &args).assert()
    };
    let first = fetch(&[]).success();
    assert_eq!(std::fs::read(&out).unwrap(), bytes, "the exact bytes");
    assert_eq!(crate::support::mode(&out), 0o600);
    assert_eq!(json_of(&first)["size"], 70_000, "the metadata still goes to stdout");
    assert!(stderr_of(&first).contains("wrote 70000 bytes"), "{}", stderr_of(&first));
    assert!(stderr_of(&first).contains("sha256 checked"), "{}", stderr_of(&first));

    std::fs::write(&out, b"keep me").unwrap();
    fetch(&[]).code(2).stderr(contains("already exists: pass --force to replace it"));
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me", "not clobbered");
    fetch(&["--force"]).success();
    assert_eq!(std::fs::read(&out).unwrap(), bytes, "replaced with --force");

    let none = sandbox.root().join("none.bin");
    node.run(&sandbox, "call", &["device.info", "--output-file", none.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("device.info returned no image, audio or file content"));
    assert!(!none.exists(), "nothing is written");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes that differ at every position and from run to run of the sizes (no block repeats).
fn patterned(size: usize, seed: u32) -> Vec<u8> {
    (0..size as u32).map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8).collect()
}

/// Every name in `dir` (temp files included).
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// `clawmcp call <command> --params {"path": path} <flag> <file>` in the background, once the
/// transfer is under way (the first name appeared in `watched`: the node's temp file of a create,
/// the client's of a fetch).
fn transfer_under_way(
    node: &Node,
    sandbox: &Sandbox,
    [command, path, flag, file]: [&Path; 4],
    watched: &Path,
) -> crate::support::Background {
    let params = format!(r#"{{"path": "{}"}}"#, path.display());
    let args = [command.to_str().unwrap(), "--params", &params, flag.to_str().unwrap(), file.to_str().unwrap()];
    let transfer = node.spawn(sandbox, "call", &args);
    crate::support::wait_for(
        crate::support::WAIT_LIMIT,
        "the transfer's temp file",
        || (!names_in(watched).is_empty()).then_some(()),
        || transfer.stderr(),
    );
    transfer
}

/// `file.fetch --output-file` and `file.create --input-file` move the bytes over the node's file
/// channel, exactly, at every edge of the channel's framing: empty, one byte, one fragment less,
/// exactly one, one more, a whole 1 MiB message plus one byte (two messages), and several.
#[test]
fn fetch_and_create_move_every_edge_size_exactly_over_the_file_channel() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    // A directory of its own inside the served home, so every name in it is the test's.
    let home = sandbox.home().join("files");
    std::fs::create_dir(&home).unwrap();
    let local = sandbox.root().join("local");
    std::fs::create_dir(&local).unwrap();
    for (i, size) in [0usize, 1, 8191, 8192, 8193, 1024 * 1024 + 1, 3 * 1024 * 1024 + 5].into_iter().enumerate() {
        let bytes = patterned(size, i as u32);
        let source = home.join(format!("source-{size}.bin"));
        std::fs::write(&source, &bytes).unwrap();
        let fetched = local.join(format!("fetched-{size}.bin"));
        let params = format!(r#"{{"path": "{}"}}"#, source.display());
        let fetch = node
            .run(&sandbox, "call", &["file.fetch", "--params", &params, "--output-file", fetched.to_str().unwrap()])
            .assert()
            .success();
        let meta = json_of(&fetch);
        assert_eq!((meta["transport"].as_str(), meta["size"].as_u64()), (Some("binary"), Some(size as u64)), "{meta}");
        assert_eq!(meta["sha256"], sha256_hex(&bytes));
        assert!(stderr_of(&fetch).contains("over the file channel, sha256 checked"), "{}", stderr_of(&fetch));
        let written = std::fs::read(&fetched).unwrap();
        assert_eq!((written.len(), sha256_hex(&written)), (size, sha256_hex(&bytes)), "fetched {size}");
        assert_eq!(crate::support::mode(&fetched), 0o600);

        let created = home.join(format!("created-{size}.bin"));
        let params = format!(r#"{{"path": "{}"}}"#, created.display());
        let create = node
            .run(&sandbox, "call", &["file.create", "--params", &params, "--input-file", fetched.to_str().unwrap()])
            .assert()
            .success();
        assert_eq!(json_of(&create)["status"], "created", "{}", stdout_of(&create));
        assert_eq!(json_of(&create)["sha256"], sha256_hex(&bytes));
        let on_node = std::fs::read(&created).unwrap();
        assert_eq!((on_node.len(), sha256_hex(&on_node)), (size, sha256_hex(&bytes)), "created {size}");
    }
    // Nothing but the targets: no temp file on either side.
    assert!(names_in(&local).iter().all(|name| name.starts_with("fetched-")), "{:?}", names_in(&local));
    assert!(
        names_in(&home).iter().all(|n| n.starts_with("source-") || n.starts_with("created-")),
        "{:?}",
        names_in(&home)
    );
}

/// `file.create` never replaces: an existing target is answered `exists`, untouched, with a note;
/// --input-file fills in sizeBytes and expectedSha256 itself and refuses them in --params; it is
/// file.create's alone; a FIFO is refused before anything is sent.
#[test]
fn create_never_replaces_and_input_file_is_checked_before_anything_is_sent() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let input = sandbox.root().join("input.bin");
    std::fs::write(&input, b"new bytes").unwrap();
    let target = sandbox.home().join("kept.txt");
    std::fs::write(&target, b"old bytes").unwrap();
    let params = format!(r#"{{"path": "{}"}}"#, target.display());
    let input_arg = input.to_str().unwrap();
    let exists = node.run(&sandbox, "call", &["file.create", "--params", &params, "--input-file", input_arg]).assert();
    let exists = exists.success();
    assert_eq!(json_of(&exists)["status"], "exists");
    assert!(stderr_of(&exists).contains("never replaces"), "{}", stderr_of(&exists));
    assert_eq!(std::fs::read(&target).unwrap(), b"old bytes");

    let fresh = sandbox.home().join("fresh.txt");
    let with_size = format!(r#"{{"path": "{}", "sizeBytes": 9}}"#, fresh.display());
    node.run(&sandbox, "call", &["file.create", "--params", &with_size, "--input-file", input_arg])
        .assert()
        .code(2)
        .stderr(contains("`sizeBytes`, which --input-file sets from the file itself"));
    node.run(&sandbox, "call", &["file.write", "--params", &params, "--input-file", input_arg])
        .assert()
        .code(2)
        .stderr(contains("--input-file sends the bytes of the file `file.create` creates"));
    let fifo = sandbox.root().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let fresh_params = format!(r#"{{"path": "{}"}}"#, fresh.display());
    node.run(&sandbox, "call", &["file.create", "--params", &fresh_params, "--input-file", fifo.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("cannot read --input-file"));
    assert!(!fresh.exists(), "nothing was created");
}

/// Ctrl-C in the middle of a transfer cancels it on the node: the call exits 130, the node
/// leaves no partial or temp file of the create, the client no temp file of the fetch, and the
/// node takes the next transfer.
#[test]
fn ctrl_c_mid_transfer_stops_it_on_both_sides_and_leaves_nothing_behind() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    // A directory of its own inside the served home, so every name in it is the test's.
    let home = sandbox.home().join("files");
    std::fs::create_dir(&home).unwrap();
    // Large enough that the transfer is still moving when the test sees it started.
    let big = sandbox.root().join("big.bin");
    std::fs::write(&big, patterned(48 * 1024 * 1024, 7)).unwrap();
    let target = home.join("interrupted.bin");
    let create_args = [Path::new("file.create"), &target, Path::new("--input-file"), &big];
    let mut create = transfer_under_way(&node, &sandbox, create_args, &home);
    create.signal(Signal::SIGINT);
    let ended = create.wait("the interrupted create to exit");
    assert_eq!(ended.code(), Some(130), "{ended:?}");
    assert!(ended.stderr.contains("cancelling the call on the node"), "{ended:?}");
    crate::support::wait_for(
        crate::support::WAIT_LIMIT,
        "the node to remove the interrupted create's temp file",
        || names_in(&home).is_empty().then_some(()),
        || format!("{:?}\n{}", names_in(&home), node.stderr()),
    );

    let source = home.join("source.bin");
    std::fs::copy(&big, &source).unwrap();
    let local = sandbox.root().join("local");
    std::fs::create_dir(&local).unwrap();
    let output = local.join("out.bin");
    let fetch_args = [Path::new("file.fetch"), &source, Path::new("--output-file"), &output];
    let mut fetch = transfer_under_way(&node, &sandbox, fetch_args, &local);
    fetch.signal(Signal::SIGINT);
    let ended = fetch.wait("the interrupted fetch to exit");
    assert_eq!(ended.code(), Some(130), "{ended:?}");
    assert_eq!(names_in(&local), Vec::<String>::new(), "no partial output, no temp file");

    // The node is free for the next transfer.
    let small = sandbox.root().join("small.bin");
    std::fs::write(&small, b"after").unwrap();
    let params = format!(r#"{{"path": "{}"}}"#, home.join("after.txt").display());
    node.run(&sandbox, "call", &["file.create", "--params", &params, "--input-file", small.to_str().unwrap()])
        .assert()
        .success();
    assert_eq!(std::fs::read(home.join("after.txt")).unwrap(), b"after");
}

/// A node that stops mid-transfer ends the transfer first: the create answers CHANNEL_CLOSED
/// naming the shutdown (the client exits 1 saying so), no partial or temp file is left, and the
/// node stops cleanly instead of draining a call that waits for polls.
#[test]
fn a_node_shutting_down_mid_transfer_ends_it_and_leaves_nothing_behind() {
    let sandbox = Sandbox::new();
    let mut node = Node::start(&sandbox);
    let home = sandbox.home().join("files");
    std::fs::create_dir(&home).unwrap();
    let big = sandbox.root().join("big.bin");
    std::fs::write(&big, patterned(48 * 1024 * 1024, 3)).unwrap();
    let target = home.join("target.bin");
    let mut create = transfer_under_way(
        &node,
        &sandbox,
        [Path::new("file.create"), &target, Path::new("--input-file"), &big],
        &home,
    );
    let stopped = node.stop_with(Signal::SIGTERM);
    assert!(stopped.status.success(), "{stopped:?}");
    let ended = create.wait("the create to end with the node");
    assert_eq!(ended.code(), Some(1), "{ended:?}");
    assert!(ended.stderr.contains("CHANNEL_CLOSED") && ended.stderr.contains("shutting down"), "{ended:?}");
    assert_eq!(names_in(&home), Vec::<String>::new(), "no partial file, no temp file");
}

/// `clawmcp call` declares file commands (`X-OpenClaw-File-Command`), so the node takes a
/// 16 MiB `file.write` (22.4 MB of base64, over the 4 MiB body bound) and answers a 16 MiB unary
/// `file.fetch` (21.3 MB encoded, over the 8 MiB result bound) under its file allowance.
#[test]
fn file_commands_declare_themselves_for_the_file_allowance() {
    use base64::Engine;
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let bytes = patterned(16 * 1024 * 1024, 11);
    let target = sandbox.home().join("written.bin");
    let params = serde_json::json!({
        "path": target,
        "contentBase64": base64::engine::general_purpose::STANDARD.encode(&bytes),
    });
    let params_file = sandbox.root().join("write.json");
    std::fs::write(&params_file, params.to_string()).unwrap();
    let at_params = format!("@{}", params_file.display());
    let written = node.run(&sandbox, "call", &["file.write", "--params", &at_params]).assert().success();
    assert_eq!(json_of(&written)["size"], 16 * 1024 * 1024);
    assert_eq!(sha256_hex(&std::fs::read(&target).unwrap()), sha256_hex(&bytes));

    let fetch_params = format!(r#"{{"path": "{}", "maxBytes": 16777216}}"#, target.display());
    let fetched = node.run(&sandbox, "call", &["file.fetch", "--params", &fetch_params]).assert().success();
    let meta = json_of(&fetched);
    assert_eq!(
        (meta["size"].as_u64(), meta["sha256"].as_str()),
        (Some(16 * 1024 * 1024), Some(sha256_hex(&bytes).as_str()))
    );
}
