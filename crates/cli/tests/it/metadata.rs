//! What a user reads about the tools is what they get: README.md's tool tables list exactly the
//! registered tools of each surface (built in-process from the same registries the binary
//! serves), and `--tools` narrows what the real binary lists and runs.

use std::path::Path;
use std::sync::Arc;

use clawmcp_node::Registry;
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::settings::LiveSettings;
use clawmcp_serve::{ConnectOverrides, Env, Secret, ServeOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::support::{Node, Sandbox, WAIT_LIMIT, free_port, stderr_of};

/// The tool names in the first column of the tables under the README heading `heading`, up to
/// the next `## ` heading: rows shaped `` | `name` | ... ``.
fn readme_tools(heading: &str) -> Vec<String> {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("README.md at the workspace root");
    let section = readme
        .split("\n## ")
        .find(|section| section.starts_with(heading))
        .unwrap_or_else(|| panic!("README.md has no `## {heading}` section"));
    let mut names: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect();
    names.sort_unstable();
    names
}

fn sorted(names: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().map(Into::into).collect();
    names.sort_unstable();
    names
}

#[test]
fn the_readme_lists_exactly_the_node_tools() {
    // The running binary lists its own app.* tools beside the built-in registry, whose
    // switched-off commands (screen.snapshot by default) count too: the table lists them all.
    // The app tools behind a switch are listed by turning it on.
    let sandbox = Sandbox::new();
    sandbox.write_data_file("settings.json", r#"{"AppConnectionChangesEnabled": true}"#);
    let node = Node::start(&sandbox);
    let dir = tempfile::tempdir().unwrap();
    let settings = LiveSettings::open(dir.path().join("settings.json")).expect("default settings");
    let approvals = ExecApprovals::open(dir.path().join("exec-approvals.json"));
    let builtin = Registry::builtin(Arc::new(settings), Arc::new(approvals));
    let mut served = node.tool_names(&sandbox);
    served.extend(builtin.commands().iter().map(|command| command.name().to_owned()));
    served.sort_unstable();
    served.dedup();
    assert_eq!(readme_tools("Tools served by `clawmcp node`"), served, "README.md's node table drifted");
}

#[test]
fn the_readme_lists_exactly_the_tools_clawmcp_tools_implements_itself() {
    let registered = sorted(clawmcp_tools::bridge::builtin_tools().into_iter().map(|tool| tool.name));
    assert_eq!(readme_tools("`clawmcp tools`"), registered, "README.md's clawmcp tools table drifted");
}

#[tokio::test]
async fn the_readme_lists_exactly_the_serve_tools() {
    assert_eq!(readme_tools("`clawmcp serve`"), sorted(serve_tool_names().await), "README.md's serve table drifted");
}

/// `tools/list` of an in-process `clawmcp serve` session. Its gateway is a listener that never
/// accepts: the connection stays pending, and the tools are listed without it.
async fn serve_tool_names() -> Vec<String> {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let home = tempfile::tempdir().unwrap();
    let connect = ConnectOverrides {
        url: Some(format!("ws://{}", silent.local_addr().unwrap())),
        token: Some(Secret::new("unused")),
        ..ConnectOverrides::default()
    };
    let env = Env::from_pairs([("HOME", home.path().display().to_string())]);
    let mut options = ServeOptions::new(connect, env);
    options.identity_dir = Some(home.path().join("serve"));

    let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let shutdown = CancellationToken::new();
    let session = tokio::spawn(clawmcp_serve::run_with_io(options, server_in, server_out, shutdown.clone()));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "readme", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    for frame in [initialize, initialized, list] {
        client_in.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(client_out).lines();
    let listed = tokio::time::timeout(WAIT_LIMIT, async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the session answers tools/list before ending");
            let frame: Value = serde_json::from_str(&line).unwrap();
            if frame["id"] == 2 {
                return frame;
            }
        }
    })
    .await
    .expect("clawmcp serve answered tools/list");
    shutdown.cancel();
    let _ = tokio::time::timeout(WAIT_LIMIT, session).await.expect("the session ends on shutdown");
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `clawmcp node` with `--tools patterns` (or the variable, when `from_env`).
fn start_filtered(sandbox: &Sandbox, patterns: &str, from_env: bool) -> Node {
    let data = sandbox.data();
    Node::start_with(sandbox, |command, port| {
        command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(&data);
        if from_env {
            command.env("CLAWMCP_NODE_TOOLS", patterns);
        } else {
            command.env_remove("CLAWMCP_NODE_TOOLS").arg("--tools").arg(patterns);
        }
    })
}

#[test]
fn node_tools_lists_only_the_matching_tools_and_refuses_the_rest_unrun() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = start_filtered(&sandbox, "system.which,device.*", false);
    assert_eq!(node.tool_names(&sandbox), ["system.which", "device.info", "device.status"]);

    node.run(&sandbox, "call", &["system.which", "--params", r#"{"bins":["sh"]}"#]).assert().success();
    let marker = sandbox.root().join("ran");
    let params = json!({"command": ["touch", marker.display().to_string()]}).to_string();
    let refused = node.run(&sandbox, "call", &["system.run", "--params", &params]).assert().code(1);
    let stderr = stderr_of(&refused);
    assert!(
        stderr.contains("system.run is not served") && stderr.contains("`system.which,device.*`"),
        "the refusal names the filter:\n{stderr}"
    );
    assert!(!marker.exists(), "a refused system.run ran nothing");
}

#[test]
fn node_tools_comes_from_the_environment_too() {
    let sandbox = Sandbox::new();
    let node = start_filtered(&sandbox, "device.status", true);
    assert_eq!(node.tool_names(&sandbox), ["device.status"]);
}

#[test]
fn a_node_tools_pattern_that_matches_nothing_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let port = free_port().to_string();
    let data = sandbox.data().display().to_string();
    let refused = sandbox
        .clawmcp(["node", "--port", &port, "--data-dir", &data, "--tools", "system.which,sytem.*"])
        .assert()
        .code(2);
    let stderr = stderr_of(&refused);
    assert!(stderr.contains("`sytem.*` matches no tool"), "{stderr}");
    assert!(stderr.contains("available tools: system.notify, system.run,"), "{stderr}");

    let bad = sandbox.clawmcp(["node", "--port", &port, "--data-dir", &data, "--tools", "device.["]).assert().code(2);
    assert!(stderr_of(&bad).contains("invalid tool pattern `device.[`"), "{}", stderr_of(&bad));
}

#[test]
fn a_bad_tools_glob_stops_clawmcp_tools_before_it_serves() {
    let sandbox = Sandbox::new();
    let refused = sandbox.clawmcp(["tools", "--tools", "read,sessions_{list"]).assert().code(2);
    assert!(stderr_of(&refused).contains("invalid tool pattern `sessions_{list`"), "{}", stderr_of(&refused));
    assert!(refused.get_output().stdout.is_empty(), "nothing was served on stdout");
}
