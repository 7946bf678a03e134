//! Process lifecycle of the stdio surfaces (`clawmcp tools`, `clawmcp serve`) and of the node:
//! a bridge whose parent is killed exits and takes its `exec` jobs with it, a bridge started
//! from a thread that then exits does not, stdout carries nothing but JSON-RPC at any log
//! level, and the node stops on SIGINT with a call in flight and frees its port.
//!
//! The parent-kill tests put a `sh` between the test and the bridge, and give the bridge the
//! test's own stdin pipe: killing the `sh` leaves that pipe open, so only the parent watchdog,
//! not EOF, can end the bridge. The bridge is then an orphan (reparented to init, which in a
//! container may never reap it), so it is watched through `/proc` and a zombie counts as gone.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use clawmcp_testkit::{FakeGateway, Reply};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::support::{
    BIN, Background, Node, Sandbox, WAIT_LIMIT, is_alive, long_run, recorded_pids, wait_all_dead, wait_for,
};

/// What the bridge logs when its watchdog sees the parent gone.
const PARENT_GONE_LOG: &str = "the process that started clawmcp exited";

/// The token the fake gateway accepts (`FakeConfig::default`).
const FAKE_GATEWAY_TOKEN: &str = "fake-gateway-token";

/// Variables the gateway crate and the tools bridge read; a developer's shell must not steer
/// these tests (the sandbox sets `OPENCLAW_HOME` and `OPENCLAW_WORKSPACE` itself).
const OPENCLAW_ENV: &[&str] = &[
    "OPENCLAW_CONFIG_PATH",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_GATEWAY_URL",
    "OPENCLAW_GATEWAY_TOKEN",
    "OPENCLAW_GATEWAY_PASSWORD",
    "OPENCLAW_GATEWAY_PORT",
    "OPENCLAW_ALLOW_INSECURE_PRIVATE_WS",
    "OPENCLAW_REQUESTER_SESSION_KEY",
    "OPENCLAW_MCP_ENABLED_TOOLS",
    "OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS",
];

/// Runs the bridge as `sh`'s background job, on the stdin `sh` was given, and records its PID.
/// `"$@"` is the bridge's command line. A non-interactive shell points a background job's stdin
/// at /dev/null unless told otherwise, hence the explicit `<&3`.
const PARENT_SCRIPT: &str = r#"exec 3<&0; "$@" <&3 3<&- & echo $! > "$BRIDGE_PID_FILE"; wait"#;

/// How a test runs the bridge.
enum Launch {
    /// As the test's own child.
    Direct,
    /// As the child of a `sh` that is the test's child (see the module docs).
    UnderShell,
}

/// One stdio bridge driven over its stdin, its stdout read back from a file.
struct Bridge {
    /// The test's child: the bridge itself, or its parent `sh`. Holds the bridge's stdin.
    process: Background,
    pid: i32,
    /// Processes that must not outlive the test even if it fails: killed on drop if alive.
    reap_on_drop: Vec<i32>,
}

impl Bridge {
    /// `clawmcp <args>` with the OpenClaw environment pointed into `sandbox`.
    fn start(sandbox: &Sandbox, launch: Launch, args: &[&str], env: &[(&str, &str)]) -> Self {
        let openclaw_home = sandbox.root().join("openclaw");
        let workspace = sandbox.root().join("workspace");
        for dir in [&openclaw_home, &workspace] {
            std::fs::create_dir_all(dir).expect("an OpenClaw dir in the sandbox");
        }
        let pid_file = sandbox.root().join("bridge.pid");
        let mut command = match launch {
            Launch::Direct => sandbox.command(),
            Launch::UnderShell => {
                let mut command = sandbox.command_for("sh");
                command.args(["-c", PARENT_SCRIPT, "sh", BIN]).env("BRIDGE_PID_FILE", &pid_file);
                command
            }
        };
        for name in OPENCLAW_ENV {
            command.env_remove(name);
        }
        command
            .args(args)
            .env("CLAWMCP_DATA_DIR", sandbox.data())
            .env("OPENCLAW_HOME", &openclaw_home)
            .env("OPENCLAW_WORKSPACE", &workspace)
            .envs(env.iter().copied())
            .current_dir(sandbox.root());
        let process = Background::spawn(command, sandbox.root(), Stdio::piped());
        let pid = match launch {
            Launch::Direct => process.pid(),
            Launch::UnderShell => wait_for(
                WAIT_LIMIT,
                "the parent shell to start the bridge",
                || std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok(),
                || process.stderr(),
            ),
        };
        Bridge { process, pid, reap_on_drop: vec![pid] }
    }

    fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    fn send_line(&mut self, line: &str) {
        writeln!(self.process.stdin(), "{line}").expect("write to the bridge's stdin");
    }

    /// Sends request `id` and waits (bounded) for its answer.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&json!(id))
    }

    /// Waits (bounded) for the answer with this `id` (`null` for an unparseable request).
    fn answer(&self, id: &Value) -> Value {
        wait_for(
            WAIT_LIMIT,
            &format!("the answer to request {id}"),
            || self.frames().into_iter().find(|frame| &frame["id"] == id && frame.get("method").is_none()),
            || format!("stdout:\n{}\nstderr:\n{}", self.process.stdout(), self.process.stderr()),
        )
    }

    /// Every complete stdout line parsed so far (a line that is not JSON is a `null`).
    fn frames(&self) -> Vec<Value> {
        complete_lines(&self.process.stdout()).map(|line| serde_json::from_str(line).unwrap_or(Value::Null)).collect()
    }

    fn initialize(&mut self) -> Value {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "clawmcp-lifecycle-test", "version": "1"}
        });
        let answer = self.request(1, "initialize", params);
        assert!(answer.get("result").is_some(), "initialize failed: {answer}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    fn is_alive(&self) -> bool {
        is_alive(self.pid)
    }

    /// Waits (bounded) until the bridge process is gone.
    fn wait_gone(&self, why: &str) {
        wait_for(
            WAIT_LIMIT,
            &format!("the bridge to exit {why}"),
            || (!self.is_alive()).then_some(()),
            || format!("stderr:\n{}", self.process.stderr()),
        );
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for pid in &self.reap_on_drop {
            if is_alive(*pid) {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
        }
    }
}

/// Lines that end in a newline: the last one may still be being written.
fn complete_lines(text: &str) -> impl Iterator<Item = &str> {
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().filter(|line| !line.trim().is_empty())
}

/// A token file for `--token-file`: the tools bridge wants an explicit secret with `--url`.
fn token_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.write_data_file("gateway-token.txt", "lifecycle-test-token\n")
}

/// `clawmcp tools` pointed at a loopback port nothing listens on: discovery fails fast and the
/// bridge serves its local tools and the bundled gateway catalogue.
/// `verbosity` ("" for the default level) comes first.
fn tools_args(sandbox: &Sandbox, verbosity: &'static str) -> Vec<String> {
    let closed = format!("ws://127.0.0.1:{}", crate::support::free_port());
    let token = token_file(sandbox).display().to_string();
    let args = [verbosity.into(), "tools".into(), "--url".into(), closed, "--token-file".into(), token];
    args.into_iter().filter(|arg: &String| !arg.is_empty()).collect()
}

fn args_ref(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn is_error(result: &Value) -> bool {
    result["result"]["isError"] == json!(true)
}

/// A runtime for the fake gateway, whose tasks run while the test thread blocks.
fn gateway_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a Tokio runtime")
}

/// A fake gateway that accepts `sessions.subscribe` and lists no conversations.
fn fake_gateway(runtime: &tokio::runtime::Runtime) -> FakeGateway {
    let fake = runtime.block_on(FakeGateway::start());
    fake.on("sessions.subscribe", |_| Reply::Ok(json!({"subscribed": true})));
    fake.on("sessions.list", |_| Reply::Ok(json!({"sessions": []})));
    fake
}

fn serve_args(fake: &FakeGateway, verbosity: &'static str) -> Vec<String> {
    vec![verbosity.into(), "serve".into(), "--url".into(), fake.url(), "--token".into(), FAKE_GATEWAY_TOKEN.into()]
}

/// Starts the long-running `sh` + `sleep` pair as a background `exec` job (request id 2) and
/// returns their PIDs once both run.
fn start_background_job(bridge: &mut Bridge, sandbox: &Sandbox) -> Vec<i32> {
    let pid_file = sandbox.root().join("job.pids");
    let mut arguments: Value = serde_json::from_str(&long_run(&pid_file)).expect("long_run gives JSON");
    arguments["background"] = json!(true);
    let started = bridge.request(2, "tools/call", json!({"name": "exec", "arguments": arguments}));
    assert!(!is_error(&started), "the background exec did not start: {started}");
    let job =
        wait_for(WAIT_LIMIT, "the background job to start", || recorded_pids(&pid_file), || bridge.process.stderr());
    bridge.reap_on_drop.extend(&job);
    assert!(job.iter().all(|pid| is_alive(*pid)), "the job is running");
    job
}

#[test]
fn sigterm_ends_clawmcp_tools_and_its_background_jobs_while_the_client_keeps_stdin_open() {
    let sandbox = Sandbox::new();
    let mut bridge = Bridge::start(&sandbox, Launch::Direct, &args_ref(&tools_args(&sandbox, "-v")), &[]);
    bridge.initialize();
    let job = start_background_job(&mut bridge, &sandbox);

    bridge.process.signal(Signal::SIGTERM);
    let ended = bridge.process.wait("clawmcp tools to exit on SIGTERM with its stdin still open");
    assert_eq!(ended.code(), Some(0), "stderr:\n{}", ended.stderr);
    // The session kills its jobs and waits for them before it returns.
    for pid in &job {
        assert!(!is_alive(*pid), "process {pid} of the background job outlived the bridge");
    }
}

#[test]
fn killing_the_parent_of_clawmcp_tools_ends_it_and_its_background_jobs() {
    let sandbox = Sandbox::new();
    let mut bridge = Bridge::start(&sandbox, Launch::UnderShell, &args_ref(&tools_args(&sandbox, "-v")), &[]);
    bridge.initialize();
    let job = start_background_job(&mut bridge, &sandbox);

    bridge.process.signal(Signal::SIGKILL);
    bridge.process.wait("the parent shell to die");
    bridge.wait_gone("after its parent was killed");
    for pid in &job {
        assert!(!is_alive(*pid), "process {pid} of the background job outlived the bridge");
    }
    let stderr = bridge.process.stderr();
    assert!(stderr.contains(PARENT_GONE_LOG), "the watchdog, not EOF, ended the session; stderr:\n{stderr}");
}

#[test]
fn killing_the_parent_of_clawmcp_serve_ends_it_and_closes_the_gateway_connection() {
    let runtime = gateway_runtime();
    let fake = fake_gateway(&runtime);
    let sandbox = Sandbox::new();
    let mut bridge = Bridge::start(&sandbox, Launch::UnderShell, &args_ref(&serve_args(&fake, "-v")), &[]);
    bridge.initialize();
    wait_for(
        WAIT_LIMIT,
        "the bridge to subscribe",
        || (!fake.requests("sessions.subscribe").is_empty()).then_some(()),
        || bridge.process.stderr(),
    );

    bridge.process.signal(Signal::SIGKILL);
    bridge.process.wait("the parent shell to die");
    bridge.wait_gone("after its parent was killed");
    let closes = runtime
        .block_on(async { tokio::time::timeout(WAIT_LIMIT, fake.wait_for_client_closes(1)).await })
        .expect("the bridge closed its gateway connection");
    assert_eq!(closes[0].1, 1000, "a graceful close, not a dropped socket");
    let stderr = bridge.process.stderr();
    assert!(stderr.contains(PARENT_GONE_LOG), "the watchdog, not EOF, ended the session; stderr:\n{stderr}");
}

/// `PR_SET_PDEATHSIG` fires when the *thread* that started us exits; a client that spawns its
/// servers from a short-lived thread must not lose them.
#[cfg(target_os = "linux")]
#[test]
fn the_exit_of_the_thread_that_started_the_bridge_is_not_a_parent_death() {
    let sandbox = Sandbox::new();
    let args = tools_args(&sandbox, "-v");
    let (mut bridge, spawning_thread) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut bridge = Bridge::start(&sandbox, Launch::Direct, &args_ref(&args), &[]);
                // Answered only once the death signal is armed.
                bridge.initialize();
                let me = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
                (bridge, Path::new("/proc").join(me))
            })
            .join()
            .expect("the spawning thread")
    });
    wait_for(
        WAIT_LIMIT,
        "the spawning thread to be gone",
        || (!spawning_thread.exists()).then_some(()),
        || spawning_thread.display().to_string(),
    );
    wait_for(
        WAIT_LIMIT,
        "the bridge to notice the thread exit",
        || bridge.process.stderr().contains("the thread that started clawmcp exited").then_some(()),
        || bridge.process.stderr(),
    );

    let answer = bridge.request(2, "ping", json!({}));
    assert_eq!(answer["result"], json!({}), "the bridge still serves");
    assert!(bridge.is_alive());
    bridge.process.close_stdin();
    let ended = bridge.process.wait("the bridge to exit on EOF");
    assert_eq!(ended.code(), Some(0), "stderr:\n{}", ended.stderr);
    assert!(!ended.stderr.contains(PARENT_GONE_LOG), "stderr:\n{}", ended.stderr);
}

/// Every stdout line is a JSON-RPC 2.0 answer or notification; stderr did get the logs.
fn assert_stdout_is_json_rpc_only(bridge: &mut Bridge) {
    bridge.process.close_stdin();
    let ended = bridge.process.wait("the bridge to exit on EOF");
    assert_eq!(ended.code(), Some(0), "stderr:\n{}", ended.stderr);
    assert!(ended.stdout.ends_with('\n'), "every frame is a whole line: {:?}", ended.stdout);
    let mut frames = 0;
    for line in ended.stdout.lines() {
        let frame: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        let answer = frame.get("id").is_some() && (frame.get("result").is_some() != frame.get("error").is_some());
        let notification = frame.get("method").is_some_and(Value::is_string) && frame.get("result").is_none();
        assert!(answer || notification, "neither an answer nor a request/notification: {line}");
        frames += 1;
    }
    assert!(frames >= 5, "every request was answered:\n{}", ended.stdout);
    let trace_lines = ended.stderr.lines().filter(|line| line.contains("TRACE") || line.contains("DEBUG")).count();
    assert!(trace_lines > 0, "the logs went to stderr:\n{}", ended.stderr);
}

/// The part of a session both surfaces share: an unknown method and a line that is not JSON.
fn unknown_method_and_garbage(bridge: &mut Bridge) {
    let unknown = bridge.request(4, "clawmcp/no-such-method", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    bridge.send_line("{this is not json");
    let garbage = bridge.answer(&Value::Null);
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
}

#[test]
fn clawmcp_tools_writes_only_json_rpc_to_stdout_at_trace_level() {
    let sandbox = Sandbox::new();
    let args = tools_args(&sandbox, "-vv");
    let mut bridge = Bridge::start(&sandbox, Launch::Direct, &args_ref(&args), &[("RUST_LOG", "trace")]);
    bridge.initialize();
    let listed = bridge.request(2, "tools/list", json!({}));
    assert!(listed["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
    let echoed =
        bridge.request(3, "tools/call", json!({"name": "exec", "arguments": {"command": ["echo", "marker-7"]}}));
    assert!(!is_error(&echoed) && echoed.to_string().contains("marker-7"), "{echoed}");
    unknown_method_and_garbage(&mut bridge);
    assert_stdout_is_json_rpc_only(&mut bridge);
}

/// What `clawmcp tools` cannot do is said on stderr at the default level (WARN), with the fix:
/// a gateway that cannot be asked for its tools, and no gateway credentials at all (then the
/// local tools alone are served).
#[test]
fn clawmcp_tools_warns_when_the_gateway_cannot_be_asked_or_has_no_credentials() {
    let sandbox = Sandbox::new();
    let args = tools_args(&sandbox, "");
    let mut bridge = Bridge::start(&sandbox, Launch::Direct, &args_ref(&args), &[]);
    bridge.initialize();
    bridge.request(2, "tools/list", json!({}));
    wait_for(
        WAIT_LIMIT,
        "the discovery warning",
        || bridge.process.stderr().contains("could not be asked for its tools").then_some(()),
        || bridge.process.stderr(),
    );
    let stderr = bridge.process.stderr();
    assert!(stderr.contains(" WARN ") && stderr.contains("serving the recorded list"), "{stderr}");
    assert!(stderr.contains("cannot connect to the gateway"), "the reason: {stderr}");

    let closed = format!("ws://127.0.0.1:{}", crate::support::free_port());
    let mut local = Bridge::start(&sandbox, Launch::Direct, &["tools", "--url", &closed], &[]);
    local.initialize();
    let listed = local.request(2, "tools/list", json!({}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["read", "write", "edit", "exec", "glob", "grep", "process", "sessions_yield"]);
    let stderr = local.process.stderr();
    assert!(stderr.contains(" WARN ") && stderr.contains("serving the local tools only"), "{stderr}");
    assert!(stderr.contains("pass --token/--token-file or --password/--password-file"), "{stderr}");
}

#[test]
fn clawmcp_serve_writes_only_json_rpc_to_stdout_at_trace_level() {
    let runtime = gateway_runtime();
    let fake = fake_gateway(&runtime);
    let sandbox = Sandbox::new();
    let args = serve_args(&fake, "-vv");
    let mut bridge = Bridge::start(&sandbox, Launch::Direct, &args_ref(&args), &[("RUST_LOG", "trace")]);
    bridge.initialize();
    let listed = bridge.request(2, "tools/list", json!({}));
    assert!(listed["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
    let conversations = bridge.request(3, "tools/call", json!({"name": "conversations_list", "arguments": {}}));
    assert!(!is_error(&conversations) && conversations["result"].is_object(), "{conversations}");
    unknown_method_and_garbage(&mut bridge);
    assert_stdout_is_json_rpc_only(&mut bridge);
}

#[test]
fn sigint_with_a_run_in_flight_stops_the_node_kills_the_run_and_frees_the_port() {
    let sandbox = Sandbox::new();
    sandbox.allow_every_command();
    let mut node = Node::start(&sandbox);
    let (mut call, pids) = node.call_long_run(&sandbox);

    let stopped = node.stop_with(Signal::SIGINT);
    assert_eq!(stopped.code(), Some(0), "stderr:\n{}", stopped.stderr);
    wait_all_dead(&pids, &node);
    let answered = call.wait("the interrupted call to end");
    assert_eq!(answered.code(), Some(1), "the caller learns the run did not complete: {answered:?}");
    // The listener is closed: the port can be bound again at once.
    std::net::TcpListener::bind(("127.0.0.1", node.port)).expect("the node's port is free after it stopped");
}
