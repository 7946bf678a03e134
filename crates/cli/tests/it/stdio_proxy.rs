//! `clawmcp call --stdio`: the stdio relay to a running node, driven through the real binary the
//! way a stdio-only MCP client drives it (one JSON-RPC message per stdin line, answers read from
//! stdout), against a real node: a whole session, concurrency with a slow call, cancellation
//! and progress reaching the node and back, a stopped node, EOF, and token rotation.

use std::io::Write;
use std::process::Stdio;

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::support::{
    Background, Finished, Node, Sandbox, WAIT_LIMIT, long_run, recorded_pids, stderr_of, wait_all_dead, wait_for,
};

/// A running `clawmcp call --stdio` pointed at a node.
struct Relay {
    process: Background,
}

impl Relay {
    fn start(node: &Node, sandbox: &Sandbox, extra_args: &[&str]) -> Self {
        let mut args = vec!["--stdio"];
        args.extend_from_slice(extra_args);
        Relay { process: node.spawn_with_stdin(sandbox, "call", &args, Stdio::piped()) }
    }

    /// Sends `tools/call` of a long `system.run` (a shell and its sleeping child, both recording
    /// their pids) as request `id`, and returns those pids once both run.
    fn start_long_run(&mut self, id: Value, sandbox: &Sandbox) -> Vec<i32> {
        let pid_file = sandbox.root().join("pids");
        let arguments: Value = serde_json::from_str(&long_run(&pid_file)).unwrap();
        self.request(id, "tools/call", json!({"name": "system.run", "arguments": arguments}));
        wait_for(WAIT_LIMIT, "the long run to start", || recorded_pids(&pid_file), || self.diagnostics())
    }

    fn send(&mut self, message: Value) {
        let stdin = self.process.stdin();
        writeln!(stdin, "{message}").expect("write a line to the relay");
        stdin.flush().expect("flush the relay's stdin");
    }

    fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Every complete stdout line so far, each asserted to be a JSON-RPC 2.0 object: stdout
    /// must carry nothing else.
    fn frames(&self) -> Vec<Value> {
        let stdout = self.process.stdout();
        let complete = stdout.rsplit_once('\n').map_or("", |(lines, _partial)| lines);
        complete
            .lines()
            .map(|line| {
                let frame: Value =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                assert_eq!(frame["jsonrpc"], "2.0", "stdout line is not JSON-RPC: {line}");
                frame
            })
            .collect()
    }

    fn response_to(&self, id: &Value) -> Option<Value> {
        self.frames().into_iter().find(|frame| &frame["id"] == id && frame.get("method").is_none())
    }

    /// Waits (bounded) for the response to `id`.
    fn answer(&self, id: Value) -> Value {
        wait_for(WAIT_LIMIT, &format!("the relay's answer to id {id}"), || self.response_to(&id), || self.diagnostics())
    }

    fn diagnostics(&self) -> String {
        format!("relay stdout:\n{}\nrelay stderr:\n{}", self.process.stdout(), self.process.stderr())
    }

    /// Closes stdin (EOF) and waits for the relay to exit.
    fn finish(mut self) -> Finished {
        self.process.close_stdin();
        self.process.wait("the relay to exit after EOF on stdin")
    }
}

fn tool_text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {answer}"))
}

fn assert_relay_error(answer: &Value, text: &str) {
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(text), "{message:?} lacks {text:?}");
}

#[test]
fn a_whole_session_runs_through_the_relay() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &[]);
    let client_info = json!({"name": "stdio-test", "version": "1"});
    relay.request(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}),
    );
    let initialized = relay.answer(json!(1));
    assert_eq!(initialized["result"]["serverInfo"]["name"], "clawmcp-node", "{initialized}");
    relay.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    relay.request(json!("list"), "tools/list", json!({}));
    let listed = relay.answer(json!("list"));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("no tools in {listed}"));
    assert!(tools.iter().any(|tool| tool["name"] == "system.which"), "{listed}");
    relay.request(json!(3), "tools/call", json!({"name": "system.which", "arguments": {"bins": ["sh"]}}));
    let which = relay.answer(json!(3));
    assert_eq!(which["result"]["isError"], false, "{which}");
    let found: Value = serde_json::from_str(tool_text(&which)).unwrap();
    assert!(found["bins"]["sh"].as_str().is_some_and(|path| path.starts_with('/')), "{found}");
    relay.request(json!(4), "ping", json!({}));
    assert_eq!(relay.answer(json!(4))["result"], json!({}));
    // The notification got no line: four requests, four lines.
    assert_eq!(relay.frames().len(), 4, "{}", relay.diagnostics());
    let finished = relay.finish();
    assert_eq!(finished.code(), Some(0), "stderr:\n{}", finished.stderr);
}

#[test]
fn a_slow_call_does_not_block_ping_and_its_cancellation_reaches_the_node() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &[]);
    let pids = relay.start_long_run(json!(10), &sandbox);

    relay.request(json!(11), "ping", json!({}));
    assert_eq!(relay.answer(json!(11))["result"], json!({}));
    assert!(relay.response_to(&json!(10)).is_none(), "the slow call is still running");

    relay.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10, "reason": "test"}}),
    );
    let cancelled = relay.answer(json!(10));
    assert_eq!(cancelled["result"]["isError"], true, "{cancelled}");
    assert!(tool_text(&cancelled).contains("cancelled"), "{cancelled}");
    wait_all_dead(&pids, &node);
    assert_eq!(relay.finish().code(), Some(0));
}

#[test]
fn progress_of_a_long_call_reaches_the_stdio_client_before_its_answer() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &[]);
    // Longer than the node's progress interval (5 s), so at least one heartbeat is due.
    let params =
        json!({"name": "system.run", "arguments": {"command": ["sleep", "6"]}, "_meta": {"progressToken": "p-1"}});
    relay.request(json!(20), "tools/call", params);
    let answer = relay.answer(json!(20));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let frames = relay.frames();
    let answered_at = frames.iter().position(|frame| frame["id"] == 20).unwrap();
    let progress_at = frames
        .iter()
        .position(|frame| frame["method"] == "notifications/progress" && frame["params"]["progressToken"] == "p-1");
    assert!(progress_at.is_some_and(|at| at < answered_at), "no progress before the answer: {frames:?}");
    assert_eq!(relay.finish().code(), Some(0));
}

#[test]
fn a_stopped_node_gives_each_request_a_json_rpc_error_and_the_relay_carries_on() {
    let sandbox = Sandbox::new();
    let mut node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &[]);
    relay.request(json!(1), "ping", json!({}));
    assert_eq!(relay.answer(json!(1))["result"], json!({}));

    node.stop_with(Signal::SIGTERM);
    relay.request(json!(2), "ping", json!({}));
    relay.request(json!("list"), "tools/list", json!({}));
    let listening = format!("no clawmcp node is listening on http://127.0.0.1:{}/", node.port);
    for id in [json!(2), json!("list")] {
        let answer = relay.answer(id);
        assert_relay_error(&answer, &listening);
        assert_relay_error(&answer, "start one with `clawmcp node`");
    }
    let finished = relay.finish();
    assert_eq!(finished.code(), Some(0), "stderr:\n{}", finished.stderr);
}

#[test]
fn eof_ends_the_relay_with_status_0() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let finished = Relay::start(&node, &sandbox, &[]).finish();
    assert_eq!(finished.code(), Some(0), "stderr:\n{}", finished.stderr);
    assert_eq!(finished.stdout, "", "nothing but answers reaches stdout");
}

#[test]
fn eof_with_a_call_in_flight_exits_and_the_node_stops_the_call() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &[]);
    let pids = relay.start_long_run(json!(1), &sandbox);
    let finished = relay.finish();
    assert_eq!(finished.code(), Some(0), "stderr:\n{}", finished.stderr);
    // The relay dropped the unanswered exchange with its connection; the node cancels on that.
    wait_all_dead(&pids, &node);
}

#[test]
fn a_token_rotated_mid_session_is_picked_up_from_the_token_file() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &[]);
    relay.request(json!(1), "ping", json!({}));
    assert_eq!(relay.answer(json!(1))["result"], json!({}));

    let before = node.token();
    node.run(&sandbox, "token", &["--reset"]).assert().success();
    assert_ne!(node.token(), before, "the token was rotated");
    relay.request(json!(2), "ping", json!({}));
    assert_eq!(relay.answer(json!(2))["result"], json!({}), "{}", relay.diagnostics());
    relay.request(json!(3), "tools/list", json!({}));
    assert!(relay.answer(json!(3))["result"]["tools"].is_array());
    assert_eq!(relay.finish().code(), Some(0));
}

#[test]
fn a_wrong_token_flag_is_reported_and_never_replaced_by_the_file() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let mut relay = Relay::start(&node, &sandbox, &["--token", "not-the-token"]);
    relay.request(json!(1), "ping", json!({}));
    let answer = relay.answer(json!(1));
    assert_relay_error(&answer, "rejected the bearer token (HTTP 401)");
    assert_relay_error(&answer, "the --token value");
    assert_eq!(relay.finish().code(), Some(0));
}

#[test]
fn stdio_cannot_be_combined_with_a_tool_or_list_tools() {
    let sandbox = Sandbox::new();
    for args in [
        &["call", "--stdio", "system.which"][..],
        &["call", "--stdio", "--list-tools"],
        &["call", "--stdio", "--params", "{}"],
    ] {
        let assert = sandbox.clawmcp(args).assert().code(2);
        assert!(stderr_of(&assert).contains("cannot be used with"), "{args:?}: {}", stderr_of(&assert));
    }
}
