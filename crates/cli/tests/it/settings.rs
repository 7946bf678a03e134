//! `clawmcp settings` and `settings.json`: the mode matrix on disk, and the "Run system tools"
//! switch that a running node applies to its next listing and call.

use predicates::str::contains;
use serde_json::{Value, json};

use crate::support::{Node, Sandbox, json_of, mode};

const ECHO: &str = r#"{"command":["echo","hello"]}"#;

fn settings_file(sandbox: &Sandbox) -> Value {
    serde_json::from_str(&std::fs::read_to_string(sandbox.settings_path()).unwrap()).unwrap()
}

#[test]
fn switching_system_run_off_hides_and_refuses_it_at_once_and_on_restores_it() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let names = node.tool_names(&sandbox);
    assert!(names.iter().any(|n| n == "system.run") && names.iter().any(|n| n == "system.run.prepare"), "{names:?}");

    node.run(&sandbox, "settings", &["set", "NodeSystemRunEnabled", "false"]).assert().success();
    let names = node.tool_names(&sandbox);
    assert!(!names.iter().any(|n| n.starts_with("system.run")), "still listed: {names:?}");
    assert!(names.iter().any(|n| n == "system.which"), "other tools stay: {names:?}");

    // Refused outright: with the default policy an enabled system.run would wait for an
    // approval here instead of answering.
    for tool in ["system.run", "system.run.prepare"] {
        node.run(&sandbox, "call", &[tool, "--params", ECHO])
            .assert()
            .code(1)
            .stderr(contains("system.run is disabled by user setting"))
            .stderr(contains("NodeSystemRunEnabled"));
    }
    node.run(&sandbox, "approvals", &["list"]).assert().success().stdout("");

    node.run(&sandbox, "settings", &["set", "NodeSystemRunEnabled", "true"]).assert().success();
    let names = node.tool_names(&sandbox);
    assert!(names.iter().any(|n| n == "system.run") && names.iter().any(|n| n == "system.run.prepare"), "{names:?}");
    let plan = json_of(&node.run(&sandbox, "call", &["system.run.prepare", "--params", ECHO]).assert().success());
    assert!(plan.is_object(), "{plan}");
}

#[test]
fn show_prints_the_defaults_when_there_is_no_file() {
    let sandbox = Sandbox::new();
    let assert = sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).assert().success();
    let shown = json_of(&assert);
    assert_eq!(shown["EnableNodeMode"], json!(false));
    assert_eq!(shown["EnableMcpServer"], json!(true));
    assert_eq!(shown["NodeSystemRunEnabled"], json!(true));
    assert.stderr(contains("does not exist yet"));
    assert!(!sandbox.data().exists(), "showing settings writes nothing");
}

#[test]
fn set_saves_a_private_file_that_show_reads_back() {
    let sandbox = Sandbox::new();
    sandbox
        .clawmcp(["settings", "--data-dir"])
        .arg(sandbox.data())
        .args(["set", "EnableMcpServer", "false"])
        .assert()
        .success()
        .stderr(contains(sandbox.settings_path().display().to_string()))
        .stderr(contains("a running node stops serving MCP on its port within seconds"));
    assert_eq!(mode(&sandbox.data()), 0o700);
    assert_eq!(mode(&sandbox.settings_path()), 0o600);
    assert_eq!(settings_file(&sandbox)["EnableMcpServer"], json!(false));

    let shown =
        json_of(&sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).arg("show").assert().success());
    assert_eq!(shown["EnableMcpServer"], json!(false));

    // Each key says when a running node applies it.
    for (key, value, says) in [
        ("EnableMcpServer", "true", "serves MCP on its port again"),
        ("NodeScreenEnabled", "true", "applies it at once: its next tools/list and its next call see it"),
        ("SystemRunSandbox.Network", "false", "applies it to its next system.run"),
    ] {
        sandbox
            .clawmcp(["settings", "--data-dir"])
            .arg(sandbox.data())
            .args(["set", key, value])
            .assert()
            .success()
            .stderr(contains(says));
    }
}

#[test]
fn set_drops_the_legacy_flag_and_keeps_unknown_keys() {
    let sandbox = Sandbox::new();
    sandbox.write_data_file(
        "settings.json",
        r#"{"EnableNodeMode":true,"EnableMcpServer":false,"McpOnlyMode":true,"TtsProvider":"piper"}"#,
    );
    sandbox
        .clawmcp(["settings", "--data-dir"])
        .arg(sandbox.data())
        .args(["set", "NodeSystemRunEnabled", "false"])
        .assert()
        .success();
    let saved = settings_file(&sandbox);
    assert_eq!(saved.get("McpOnlyMode"), None, "{saved}");
    assert_eq!(saved["EnableMcpServer"], json!(true), "migrated: {saved}");
    assert_eq!(saved["EnableNodeMode"], json!(false), "migrated: {saved}");
    assert_eq!(saved["NodeSystemRunEnabled"], json!(false), "{saved}");
    assert_eq!(saved["TtsProvider"], json!("piper"), "{saved}");
}

#[test]
fn unknown_keys_and_values_are_usage_errors() {
    let sandbox = Sandbox::new();
    for args in
        [["set", "McpOnlyMode", "true"], ["set", "NodeSystemRunEnabled", "yes"], ["set", "enablemcpserver", "true"]]
    {
        sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).args(args).assert().code(2);
    }
    assert!(!sandbox.data().exists());
}

#[test]
fn the_sandbox_is_set_key_by_key_and_impossible_values_are_usage_errors() {
    let sandbox = Sandbox::new();
    let set = |key: &str, value: &str| {
        sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).args(["set", key, value]).assert()
    };
    set("SystemRunSandbox.Enabled", "true").success();
    set("SystemRunSandbox.Network", "false").success();
    set("SystemRunSandbox.MemoryMiB", "none").success();
    set("SystemRunSandbox.MaxProcesses", "1024").success();
    set("SystemRunSandbox.CpuSeconds", "30").success();
    set("SystemRunSandbox.WritablePaths", "/srv/a:/srv/b").success();
    let saved = settings_file(&sandbox)["SystemRunSandbox"].clone();
    assert_eq!(
        saved,
        json!({"Enabled": true, "Network": false, "WritablePaths": ["/srv/a", "/srv/b"], "MemoryMiB": null,
               "MaxProcesses": 1024, "CpuSeconds": 30})
    );
    for (key, value, says) in [
        ("SystemRunSandbox.MaxProcesses", "1025", "out of range"),
        ("SystemRunSandbox.MaxProcesses", "0", "out of range"),
        ("SystemRunSandbox.MemoryMiB", "lots", "not a limit"),
        ("SystemRunSandbox.WritablePaths", "relative/dir", "is relative"),
        ("SystemRunSandbox.Enabled", "yes", "true or false"),
    ] {
        set(key, value).code(2).stderr(contains(says));
    }
    assert_eq!(settings_file(&sandbox)["SystemRunSandbox"], saved, "a refused value changes nothing");
}

#[test]
fn file_roots_are_absolute_paths_and_empty_is_the_home_default() {
    let sandbox = Sandbox::new();
    let set = |value: &str| {
        sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).args(["set", "NodeFileRoots", value]).assert()
    };
    set("/srv/a:/home/me/projects").success();
    assert_eq!(settings_file(&sandbox)["NodeFileRoots"], json!(["/srv/a", "/home/me/projects"]));
    set("srv/relative").code(2).stderr(contains("NodeFileRoots: `srv/relative` is relative"));
    assert_eq!(settings_file(&sandbox)["NodeFileRoots"], json!(["/srv/a", "/home/me/projects"]), "refused: unchanged");
    set("").success();
    assert!(settings_file(&sandbox).get("NodeFileRoots").is_none(), "empty: back to the default (home)");
}

#[test]
fn the_tts_provider_is_a_known_id_and_empty_is_the_best_ready_one() {
    let sandbox = Sandbox::new();
    let set = |value: &str| {
        sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).args(["set", "NodeTtsProvider", value]).assert()
    };
    set("ESPEAK-NG").success();
    assert_eq!(settings_file(&sandbox)["NodeTtsProvider"], json!("espeak-ng"), "saved as its id");
    set("windows").code(2).stderr(contains(
        "Unknown TTS provider `windows`. Known providers on Linux: piper, espeak-ng, speech-dispatcher.",
    ));
    assert_eq!(settings_file(&sandbox)["NodeTtsProvider"], json!("espeak-ng"), "refused: unchanged");
    set("").success();
    assert!(settings_file(&sandbox).get("NodeTtsProvider").is_none(), "empty: back to the best ready one");
}

#[test]
fn canvas_trusted_origins_are_canonical_origins_and_empty_is_none() {
    let sandbox = Sandbox::new();
    let set = |value: &str| {
        let args = ["set", "NodeCanvasTrustedOrigins", value];
        sandbox.clawmcp(["settings", "--data-dir"]).arg(sandbox.data()).args(args).assert()
    };
    set("https://Board.example:443/, http://127.0.0.1:8080").success();
    assert_eq!(
        settings_file(&sandbox)["NodeCanvasTrustedOrigins"],
        json!(["https://board.example", "http://127.0.0.1:8080"]),
        "saved as canonical origins"
    );
    set("https://board.example/page").code(2).stderr(contains("has a path, query or fragment"));
    assert_eq!(settings_file(&sandbox)["NodeCanvasTrustedOrigins"].as_array().map(Vec::len), Some(2), "unchanged");
    set("").success();
    assert!(settings_file(&sandbox).get("NodeCanvasTrustedOrigins").is_none(), "empty: none");
}

#[test]
fn doctor_reports_the_sandbox_section() {
    let sandbox = Sandbox::new();
    // No node runs with this data dir (on a free port), which fails: exit status 1.
    let port = crate::support::free_port().to_string();
    let doctor = || sandbox.clawmcp(["doctor", "--port", &port, "--data-dir"]).arg(sandbox.data()).assert().code(1);
    doctor()
        .stdout(contains("system.run sandbox\n"))
        .stdout(contains("DISABLED: system.run runs commands uncontained"))
        .stdout(contains("filesystem: "))
        .stdout(contains("processes: "));
    sandbox.write_data_file("settings.json", r#"{"SystemRunSandbox":{"Enabled":true,"Network":false}}"#);
    doctor().stdout(contains("enabled (SystemRunSandbox.Enabled)")).stdout(contains("network: "));
    // A broken file is a finding, not a failure.
    sandbox.write_data_file("settings.json", r#"{"SystemRunSandbox":{"Enabeld":true}}"#);
    doctor().stdout(contains("unknown field `Enabeld`")).stdout(contains("switched off"));
}

#[test]
fn the_node_says_at_start_what_the_sandbox_holds() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    assert!(node.stderr().contains("system.run runs commands uncontained"), "{}", node.stderr());
    drop(node);
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", r#"{"SystemRunSandbox":{"Enabled":true}}"#);
    let node = Node::start(&sandbox);
    assert!(
        node.stderr().contains("system.run sandbox:") && node.stderr().contains("filesystem: "),
        "{}",
        node.stderr()
    );
}

/// Options go before or after the subcommand alike: `settings set K V --data-dir D`,
/// `approvals list --port P`, `node status --data-dir D` (they were refused after it).
#[test]
fn options_are_taken_before_or_after_the_subcommand() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    sandbox.clawmcp(["settings", "set", "NodeCameraEnabled", "true", "--data-dir"]).arg(&data).assert().success();
    assert_eq!(
        settings_file(&sandbox)["NodeCameraEnabled"],
        true,
        "saved where --data-dir (after the subcommand) says"
    );

    let node = Node::start(&sandbox);
    let port = node.port.to_string();
    for args in [["approvals", "list", "--port", &port], ["approvals", "--port", &port, "list"]] {
        sandbox.clawmcp(args).arg("--data-dir").arg(&data).assert().success();
    }
    sandbox.clawmcp(["node", "status", "--data-dir"]).arg(&data).assert().success().stdout(contains("running"));
}
