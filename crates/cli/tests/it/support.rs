//! The harness every behaviour test shares: a private sandbox per test, the real `clawmcp`
//! binary run with a scrubbed environment, a running node that is killed by PID when the test
//! ends, and bounded waits that fail with the node's stderr instead of hanging.
//!
//! Why it looks like this:
//! - Each test gets its own temp dir (data dir, `HOME`, log files) and its own free loopback
//!   port, so tests run in parallel and never touch the developer's `~/.config/clawmcp`.
//! - Variables the binary reads (`CLAWMCP_DATA_DIR`, `OPENCLAW_MCP_PORT`, ...) are removed from
//!   every child, so a developer's shell cannot steer a test; tests that exercise them set them.
//! - A free port is found by binding port 0 and closing it; another process may grab it before
//!   the node binds, so [`Node::start_with`] retries on "already in use" with a new port.
//! - Nothing waits unboundedly: readiness, exits and polls all have a limit and then panic
//!   with what the processes printed.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// The binary under test, built by cargo for this test target.
pub const BIN: &str = env!("CARGO_BIN_EXE_clawmcp");

/// Longest wait for a node to answer its first probe. A debug build starts in well under a
/// second; the margin absorbs a loaded 2-core CI machine.
pub const READY_LIMIT: Duration = Duration::from_secs(10);

/// Longest wait for anything else to happen (a process to exit, a prompt to appear).
pub const WAIT_LIMIT: Duration = Duration::from_secs(15);

/// Longest a one-shot command may run before the test fails instead of hanging.
const ONE_SHOT_LIMIT: Duration = Duration::from_secs(30);

/// How long a dropped node gets to shut down gracefully before it is killed: its own drain
/// bound (5 s) plus a margin.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(7);

const POLL: Duration = Duration::from_millis(20);

/// Numbers the log files of background processes (unique within this test binary; each test's
/// sandbox is its own directory anyway).
static NEXT_LOG: AtomicUsize = AtomicUsize::new(0);

/// How often to retry a node start that lost its port to another process.
const PORT_ATTEMPTS: usize = 5;

/// Environment the binary (or its logging) reads; never inherited from the test runner.
const SCRUBBED_ENV: &[&str] = &[
    "CLAWMCP_DATA_DIR",
    "OPENCLAW_MCP_PORT",
    "OPENCLAW_MCP_TOKEN",
    "CLAWMCP_APPROVAL_TIMEOUT_MS",
    "CLAWMCP_NODE_TOOLS",
    "RUST_LOG",
    "XDG_CONFIG_HOME",
];

/// A test's private directory: `data/` (not created: the node creates it), `home/` (`$HOME` of
/// every child) and log files.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        fs::create_dir(dir.path().join("home")).expect("the sandbox home");
        Sandbox { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The data dir the tests pass to the binary. Absent until something creates it.
    pub fn data(&self) -> PathBuf {
        self.root().join("data")
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    pub fn token_path(&self) -> PathBuf {
        self.data().join("mcp-token.txt")
    }

    pub fn settings_path(&self) -> PathBuf {
        self.data().join("settings.json")
    }

    pub fn approvals_path(&self) -> PathBuf {
        self.data().join("exec-approvals.json")
    }

    /// Creates the data dir (0700, as the node would) and writes `name` in it.
    pub fn write_data_file(&self, name: &str, contents: &str) -> PathBuf {
        create_private_dir(&self.data());
        let path = self.data().join(name);
        fs::write(&path, contents).expect("write a data file");
        path
    }

    /// `exec-approvals.json` that lets everything run without asking, for tests that need a
    /// command to actually run rather than wait for a decision.
    pub fn allow_every_command(&self) {
        self.write_data_file("exec-approvals.json", r#"{"version":1,"defaults":{"security":"full","ask":"off"}}"#);
    }

    /// `clawmcp` with the scrubbed environment and this sandbox's `$HOME`, stdin closed.
    pub fn command(&self) -> Command {
        self.command_for(BIN)
    }

    /// `program` (a wrapper that runs `clawmcp`, say) set up as [`Sandbox::command`] is.
    pub fn command_for(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        for name in SCRUBBED_ENV {
            command.env_remove(name);
        }
        command.env("HOME", self.home()).stdin(Stdio::null());
        command
    }

    /// A one-shot `clawmcp <args>`, bounded in time.
    pub fn clawmcp<I, S>(&self, args: I) -> assert_cmd::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = self.command();
        command.args(args);
        one_shot(command)
    }
}

fn one_shot(command: Command) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::from_std(command);
    command.timeout(ONE_SHOT_LIMIT);
    command
}

pub fn create_private_dir(dir: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).expect("create a private dir");
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("the bound address").port()
}

/// Permission bits of `path`.
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display())).permissions().mode() & 0o777
}

/// `GET http://127.0.0.1:<port>/`, optionally with a bearer token: the HTTP status, or why no
/// status came back.
pub fn probe(port: u16, token: Option<&str>) -> Result<u16, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let mut request = agent.get(format!("http://127.0.0.1:{port}/"));
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    request.call().map(|response| response.status().as_u16()).map_err(|e| e.to_string())
}

/// Polls `condition` until it returns `Some` or `limit` passes; then panics with `what` and
/// the diagnostics `context` produces at that moment.
pub fn wait_for<T>(
    limit: Duration,
    what: &str,
    mut condition: impl FnMut() -> Option<T>,
    context: impl FnOnce() -> String,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("gave up after {limit:?} waiting for {what}\n{}", context());
        }
        std::thread::sleep(POLL);
    }
}

/// Whether `pid` is a live process. A zombie counts as gone: it has exited and only waits for
/// its parent (or init, inside a container that may never reap it) to collect the status.
pub fn is_alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the command name, which is in parentheses and may
        // itself contain spaces or parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// `system.run` of a shell and its background child, both long-lived, recording their PIDs in
/// `pid_file`. Returns the `--params` JSON.
pub fn long_run(pid_file: &Path) -> String {
    let script = format!("sleep 300 & echo $! > {0}; echo $$ >> {0}; wait", pid_file.display());
    serde_json::json!({"command": ["sh", "-c", script]}).to_string()
}

/// The two PIDs `long_run` recorded, once it has.
pub fn recorded_pids(pid_file: &Path) -> Option<Vec<i32>> {
    let text = fs::read_to_string(pid_file).ok()?;
    let pids: Vec<i32> = text.lines().filter_map(|line| line.trim().parse().ok()).collect();
    (pids.len() == 2).then_some(pids)
}

/// Waits (bounded) until none of `pids` is alive.
pub fn wait_all_dead(pids: &[i32], node: &Node) {
    wait_for(
        WAIT_LIMIT,
        "the cancelled run's processes to be gone",
        || pids.iter().all(|pid| !is_alive(*pid)).then_some(()),
        || {
            format!(
                "still alive: {:?}\nnode stderr:\n{}",
                pids.iter().filter(|p| is_alive(**p)).collect::<Vec<_>>(),
                node.stderr()
            )
        },
    );
}

/// A process started by a test. Killed by PID (SIGKILL) if still running when dropped.
pub struct Background {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    status: Option<ExitStatus>,
}

/// What a finished background process left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl Background {
    /// Starts `command` with `stdin`, its stdout and stderr going to fresh files in `log_dir`.
    pub fn spawn(mut command: Command, log_dir: &Path, stdin: Stdio) -> Self {
        let unique = NEXT_LOG.fetch_add(1, Ordering::Relaxed);
        let stdout = log_dir.join(format!("bg-{unique}.stdout"));
        let stderr = log_dir.join(format!("bg-{unique}.stderr"));
        command
            .stdin(stdin)
            .stdout(fs::File::create(&stdout).expect("create a stdout log"))
            .stderr(fs::File::create(&stderr).expect("create a stderr log"));
        let child = command.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", command.get_program().display()));
        Background { child, stdout, stderr, status: None }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("a pid fits in i32")
    }

    pub fn stdin(&mut self) -> &mut std::process::ChildStdin {
        self.child.stdin.as_mut().expect("spawned with a piped stdin")
    }

    pub fn close_stdin(&mut self) {
        drop(self.child.stdin.take());
    }

    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The exit status if the process has exited.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        poll_exit(&mut self.child, &mut self.status)
    }

    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).unwrap_or_else(|e| panic!("send {signal} to {}: {e}", self.pid()));
    }

    /// Waits (bounded) for the process to exit on its own.
    pub fn wait(&mut self, what: &str) -> Finished {
        let status = wait_for(
            WAIT_LIMIT,
            what,
            || poll_exit(&mut self.child, &mut self.status),
            || format!("stdout:\n{}\nstderr:\n{}", read(&self.stdout), read(&self.stderr)),
        );
        Finished { status, stdout: self.stdout(), stderr: self.stderr() }
    }
}

/// The exit status, remembered once seen (a reaped child cannot be waited for again).
fn poll_exit(child: &mut Child, status: &mut Option<ExitStatus>) -> Option<ExitStatus> {
    if status.is_none() {
        *status = child.try_wait().expect("try_wait on our own child");
    }
    *status
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

impl Drop for Background {
    fn drop(&mut self) {
        if self.try_status().is_none() {
            // Our own unreaped child, so the PID cannot have been reused.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A running `clawmcp node` on a free loopback port, serving from its sandbox's data dir.
pub struct Node {
    process: Background,
    pub port: u16,
    data: PathBuf,
}

/// How a node start ended while waiting for readiness.
enum Start {
    Ready,
    PortTaken,
}

impl Node {
    /// `clawmcp node --port <free> --data-dir <sandbox data>`.
    pub fn start(sandbox: &Sandbox) -> Self {
        let data = sandbox.data();
        Node::start_with(sandbox, |command, port| {
            command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(&data);
        })
    }

    /// `clawmcp node` in node mode: joined to the gateway at `url` with the token in `token_file`
    /// (`--gateway-token-file`), then `extra`.
    pub fn start_joined(sandbox: &Sandbox, url: &str, token_file: &Path, extra: &[&str]) -> Self {
        let data = sandbox.data();
        Node::start_with(sandbox, |command, port| {
            command.arg("--port").arg(port.to_string()).arg("--data-dir").arg(&data);
            command.args(["--gateway-url", url, "--gateway-token-file"]).arg(token_file).args(extra);
        })
    }

    /// `clawmcp node` with the port (and anything else) passed by `configure`; the node must
    /// serve from the sandbox's data dir. Retries with a new port if the chosen one was taken.
    pub fn start_with(sandbox: &Sandbox, configure: impl Fn(&mut Command, u16)) -> Self {
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            let mut command = sandbox.command();
            command.arg("node");
            configure(&mut command, port);
            let mut node =
                Node { process: Background::spawn(command, sandbox.root(), Stdio::null()), port, data: sandbox.data() };
            match node.wait_ready() {
                Start::Ready => return node,
                Start::PortTaken => continue,
            }
        }
        panic!("could not start a node: {PORT_ATTEMPTS} free ports were all taken before the node bound them");
    }

    fn wait_ready(&mut self) -> Start {
        let token_path = self.data.join("mcp-token.txt");
        let port = self.port;
        let process = &mut self.process;
        let mut last_probe = String::from("the token file does not exist yet");
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Some(status) = process.try_status() {
                let stderr = process.stderr();
                if stderr.contains("already in use") {
                    return Start::PortTaken;
                }
                panic!("the node exited with {status} before it was ready\nstderr:\n{stderr}");
            }
            if let Some(token) = read_token(&token_path) {
                match probe(port, Some(&token)) {
                    Ok(200) => return Start::Ready,
                    Ok(status) => last_probe = format!("GET / answered HTTP {status}"),
                    Err(e) => last_probe = format!("GET / failed: {e}"),
                }
            }
            if Instant::now() >= deadline {
                panic!(
                    "the node on port {port} was not ready after {READY_LIMIT:?} ({last_probe})\nstderr:\n{}",
                    process.stderr()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// The token currently in the token file.
    pub fn token(&self) -> String {
        read_token(&self.data.join("mcp-token.txt")).expect("the node has written its token file")
    }

    pub fn stdout(&self) -> String {
        self.process.stdout()
    }

    pub fn stderr(&self) -> String {
        self.process.stderr()
    }

    pub fn is_running(&mut self) -> bool {
        self.process.try_status().is_none()
    }

    /// Sends `signal` and waits (bounded) for the node to exit.
    pub fn stop_with(&mut self, signal: Signal) -> Finished {
        self.process.signal(signal);
        self.process.wait(&format!("the node to exit after {signal}"))
    }

    /// The arguments that point subcommand `sub` at this node: port and data dir for the client
    /// commands, the data dir alone for the file commands.
    fn target_args(&self, sub: &str) -> Vec<String> {
        let data = self.data.display().to_string();
        match sub {
            "call" | "approvals" | "doctor" => {
                vec![sub.into(), "--port".into(), self.port.to_string(), "--data-dir".into(), data]
            }
            _ => vec![sub.into(), "--data-dir".into(), data],
        }
    }

    /// A one-shot `clawmcp <sub> <target args> <args>` against this node.
    pub fn run(&self, sandbox: &Sandbox, sub: &str, args: &[&str]) -> assert_cmd::Command {
        let mut command = sandbox.command();
        command.args(self.target_args(sub)).args(args);
        one_shot(command)
    }

    /// `clawmcp <sub> <target args> <args>` in the background.
    pub fn spawn(&self, sandbox: &Sandbox, sub: &str, args: &[&str]) -> Background {
        self.spawn_with_stdin(sandbox, sub, args, Stdio::null())
    }

    /// `clawmcp call system.run` of [`long_run`] against this node, in the background; returns
    /// the caller and the run's two PIDs once both processes run.
    pub fn call_long_run(&self, sandbox: &Sandbox) -> (Background, Vec<i32>) {
        let pid_file = sandbox.root().join("run.pids");
        let call = self.spawn(sandbox, "call", &["system.run", "--params", &long_run(&pid_file)]);
        let pids = wait_for(WAIT_LIMIT, "the run to start", || recorded_pids(&pid_file), || call.stderr());
        (call, pids)
    }

    pub fn spawn_with_stdin(&self, sandbox: &Sandbox, sub: &str, args: &[&str], stdin: Stdio) -> Background {
        let mut command = sandbox.command();
        command.args(self.target_args(sub)).args(args);
        Background::spawn(command, sandbox.root(), stdin)
    }

    /// `clawmcp call --list-tools` parsed: the tool names.
    pub fn tool_names(&self, sandbox: &Sandbox) -> Vec<String> {
        let output = self.run(sandbox, "call", &["--list-tools"]).assert().success().get_output().stdout.clone();
        let listing: Value = serde_json::from_slice(&output).expect("--list-tools prints JSON");
        listing["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("--list-tools output has no tools array: {listing}"))
            .iter()
            .map(|tool| tool["name"].as_str().expect("every tool has a name").to_string())
            .collect()
    }
}

impl Drop for Node {
    /// SIGTERM first, so a run still in flight (a test that failed midway) is cancelled and its
    /// process tree killed by the node, then the [`Background`] guard's SIGKILL as a backstop.
    fn drop(&mut self) {
        if self.process.try_status().is_none() && kill(Pid::from_raw(self.process.pid()), Signal::SIGTERM).is_ok() {
            let deadline = Instant::now() + SHUTDOWN_LIMIT;
            while self.process.try_status().is_none() && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
        }
    }
}

fn read_token(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|text| text.trim().to_string()).filter(|token| !token.is_empty())
}

/// stdout of a finished one-shot command as text.
pub fn stdout_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

/// stderr of a finished one-shot command as text.
pub fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

/// stdout of a finished one-shot command parsed as JSON.
pub fn json_of(assert: &assert_cmd::assert::Assert) -> Value {
    let stdout = stdout_of(assert);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{stdout}"))
}
