//! `clawmcp tools` as a whole session over in-memory stdio: `initialize` is answered while the
//! gateway is still being asked, the first `tools/list` waits (bounded) for the live list, a
//! list answered before a slow gateway's live list is followed by `list_changed`, and EOF on
//! stdin ends the session after stopping the local tools' background jobs.

use crate::bridge_support;

use std::time::Duration;

use bridge_support::{FakeLoopbackMcp, Setup, within};
use clawmcp_testkit::{Gate, Reply};
use clawmcp_tools::bridge;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio_util::sync::CancellationToken;

/// How long a test waits for a frame the server owes it.
const FRAME_WAIT: Duration = Duration::from_secs(30);

struct Client {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        self.input.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The next line the server writes, parsed. Bounded, so a frame that never comes fails the
    /// test instead of hanging it (every frame here is due within milliseconds).
    async fn next_frame(&mut self) -> Value {
        let line = tokio::time::timeout(FRAME_WAIT, self.output.next_line())
            .await
            .unwrap_or_else(|_| panic!("no frame from the server within {FRAME_WAIT:?}"))
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request; the next line must be its answer (nothing in between).
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let answer = self.next_frame().await;
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }
}

fn start(options: bridge::BridgeOptions) -> (Client, tokio::task::JoinHandle<Result<(), bridge::BridgeError>>) {
    let (client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let session = tokio::spawn(bridge::run_with_io(options, server_in, server_out, CancellationToken::new()));
    (Client { input: client_in, output: BufReader::new(client_out).lines() }, session)
}

fn initialize() -> Value {
    json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}})
}

#[tokio::test(start_paused = true)]
async fn initialize_is_answered_while_the_gateway_is_still_being_asked() {
    let setup = Setup::new().await.discovering();
    setup.fake.on("tools.effective", |_| Reply::Stall);
    let (mut client, session) = start(setup.options());
    let started = tokio::time::Instant::now();
    let answer = client.request(1, "initialize", initialize()).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "no virtual time passed: discovery did not hold it");
    assert_eq!(answer["result"]["serverInfo"]["name"], "clawmcp-tools");
    assert_eq!(answer["result"]["capabilities"]["tools"], json!({"listChanged": true}));
    drop(client);
    within(session).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_list_waits_for_the_live_gateway_list() {
    let setup = Setup::new().await.discovering();
    let effective = json!({"groups": [{"id": "core", "tools": [{"id": "brand_new", "rawDescription": "only the live gateway has it"}]}]});
    setup.fake.on("tools.effective", move |_| Reply::delay(Duration::from_millis(300), Reply::Ok(effective.clone())));
    let mcp = FakeLoopbackMcp::start(json!([]), "t").await;
    mcp.serve_grants(&setup.fake, "t");
    let (mut client, session) = start(setup.options());
    client.request(1, "initialize", initialize()).await;
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let listed = client.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read", "write", "edit", "exec", "glob", "grep", "process", "sessions_yield", "brand_new"]);
    drop(client);
    within(session).await.unwrap().unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eof_stops_background_jobs_and_ends_the_session_cleanly() {
    let setup = Setup::new().await;
    let (mut client, session) = start(setup.options());
    client.request(1, "initialize", initialize()).await;
    let started = client
        .request(2, "tools/call", json!({"name": "exec", "arguments": {"command": "sleep 600", "background": true}}))
        .await;
    let text = started["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(started["result"]["isError"], false, "{text}");
    let pid: u32 = text
        .split("pid ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"));
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "the job runs");
    drop(client);
    within(session).await.unwrap().unwrap();
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(state.is_empty() || state.contains(") Z "), "pid {pid} still runs after EOF: {state}");
}

#[tokio::test]
async fn list_ready_waits_for_discovery_even_on_a_current_thread_runtime() {
    use clawmcp_mcp::McpService;
    let setup = Setup::new().await.discovering();
    let effective = json!({"groups": [{"id": "core", "tools": [{"id": "brand_new"}]}]});
    setup.fake.on("tools.effective", move |_| Reply::delay(Duration::from_millis(200), Reply::Ok(effective.clone())));
    let options = setup.options();
    let prepared = bridge::prepare(&options).unwrap();
    let _discovery = prepared.start_discovery(&options, None);
    prepared.bridge.list_ready().await;
    let names: Vec<String> = prepared.bridge.list_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names.last().map(String::as_str), Some("brand_new"));
}

fn tool_names(list: &Value) -> Vec<String> {
    let tools = list["result"]["tools"].as_array().unwrap_or_else(|| panic!("not a tools/list answer: {list}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_list_served_before_a_slow_gateway_answers_is_followed_by_list_changed() {
    let setup = Setup::new().await.discovering();
    let effective = json!({"groups": [{"id": "core", "tools": [{"id": "brand_new"}]}]});
    // The gateway answers tools.effective only when the test says so: after the first list.
    let gate = Gate::new();
    let held = gate.clone();
    setup.fake.on("tools.effective", move |_| Reply::held(&held, Reply::Ok(effective.clone())));
    let mut options = setup.options();
    options.list_wait = Duration::from_millis(50);
    let (mut client, session) = start(options);
    client.request(1, "initialize", initialize()).await;
    let first = client.request(2, "tools/list", json!({})).await;
    assert!(!tool_names(&first).contains(&"brand_new".to_owned()), "the snapshot list: {first}");
    gate.open();
    let notification = client.next_frame().await;
    assert_eq!(notification, json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}));
    let second = client.request(3, "tools/list", json!({})).await;
    assert_eq!(tool_names(&second).last().map(String::as_str), Some("brand_new"), "{second}");
    drop(client);
    within(session).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_list_that_waited_for_the_live_catalog_gets_no_list_changed() {
    let setup = Setup::new().await.discovering();
    let effective = json!({"groups": [{"id": "core", "tools": [{"id": "brand_new"}]}]});
    setup.fake.on("tools.effective", move |_| Reply::delay(Duration::from_millis(100), Reply::Ok(effective.clone())));
    let (mut client, session) = start(setup.options());
    client.request(1, "initialize", initialize()).await;
    let listed = client.request(2, "tools/list", json!({})).await;
    assert_eq!(tool_names(&listed).last().map(String::as_str), Some("brand_new"), "{listed}");
    // Discovery settled before the list was answered: a notification would have been queued
    // ahead of that answer, so the next line is the ping's answer and nothing else.
    let pong = client.request(3, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    drop(client);
    within(session).await.unwrap().unwrap();
}
