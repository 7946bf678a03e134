//! `exec`: run a shell command or an argv, in the foreground or handed over to `process`.
//!
//! Schema and texts follow OpenClaw's own exec (`docs/tools-bridge.md` §2): `command`, `workdir`,
//! `env`, `timeout` in seconds (default 1800, 0 for none), `yieldMs` (default 10000) and
//! `background`. A command still running after `yieldMs`, or started with `background`, goes on
//! as a job of the server's [`JobRegistry`] and the result says `Command still running (session
//! bg-N, pid P)`. We also accept what the upstream bridge took (`cwd`) and an argv array for
//! `command`, which runs the program directly with no shell and no quoting to get wrong. The
//! PTY and host-routing options of OpenClaw (`pty`, `host`, `elevated`, ...) do not apply to a
//! local bridge and are not advertised.
//!
//! Unlike the upstream bridge, success is the exit code, never "stdout was empty"; there
//! is a timeout; output is bounded; and a timeout, a cancellation or a kill ends the whole
//! process tree (`clawmcp_process`). The result is the merged stdout and stderr, as a terminal
//! shows them; a non-zero exit is an error result ending in `(Command exited with code N)`.

use std::path::PathBuf;
use std::time::Duration;

use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolAnnotations, ToolResult};
use clawmcp_process::{Job, JobEnding, JobOptions, Launch, ProcessError};
use serde_json::{Map, Value, json};

use crate::args::{ArgError, Args, Param};
use crate::jobs::{JobEntry, JobLimits, JobMeta, JobRegistry, describe_exit};
use crate::text::format_size;
use crate::workspace::Workspace;
use crate::{BridgeTool, ToolContext};

pub(crate) const NAME: &str = "exec";

const WORKDIR: Param = Param::new(&["workdir", "cwd"]);
const ENV: &str = "env";
const TIMEOUT: &str = "timeout";
const YIELD_MS: &str = "yieldMs";
const BACKGROUND: Param = Param::new(&["background"]);
/// `command` may be an array, which [`Args`] does not read; `cmd` is OpenClaw's alias.
const COMMAND_NAMES: [&str; 2] = ["command", "cmd"];

/// OpenClaw's default time limit, in seconds.
const DEFAULT_TIMEOUT_SECS: f64 = 1800.0;
/// OpenClaw's default wait before a foreground command continues in the background.
const DEFAULT_YIELD: Duration = Duration::from_secs(10);
/// The largest `timeout` and `yieldMs` accepted: a week. Larger values are surely mistakes, and
/// `timeout: 0` already means "no limit".
const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Shells whose `-c` takes POSIX syntax. `$SHELL` is used only if it is one of them, so a fish
/// or nushell user still gets the syntax models write.
const POSIX_SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash"];

/// The text telling a caller where a running command went.
pub(crate) const FOLLOW_UP: &str = "Use process (list/poll/log/write/kill/clear/remove) for follow-up.";

/// The `exec` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Its parser reads `cmd` for `command` too (the upstream bridge's name), which the published
    // schema's `required` cannot say: the parser checks every argument itself.
    crate::local_tool(descriptor(), Checking::Handler, context, |context, arguments, ctx| async move {
        run(&context.workspace, context.jobs.as_deref(), &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    let limits = JobLimits::DEFAULT;
    Tool { title: None, output_schema: None,
        name: NAME.into(),
        description: format!(
            "Run a command on this machine with this server's OS permissions. `command` is a shell command \
             string (run with $SHELL -c when it is a POSIX shell, else /bin/sh -c) or an array of strings \
             (the program and its arguments, run directly with no shell). The working directory is `workdir` \
             (relative to the workspace root), default the workspace root. Returns stdout and stderr merged as \
             they were printed (the last {} is kept; an earlier cut is marked). A non-zero exit is an error \
             result ending in \"(Command exited with code N)\". timeout is in seconds (default {}; 0 for no \
             limit); when it runs out, or the call is cancelled, the whole process tree is killed. A command \
             still running after yieldMs (default {} ms), or started with background: true, goes on in the \
             background: the result names its session (bg-N) for the process tool (poll, log, write to stdin, \
             kill). There is no TTY.",
            format_size(limits.output_bytes as u64),
            DEFAULT_TIMEOUT_SECS,
            DEFAULT_YIELD.as_millis(),
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    ],
                    "description": "Shell command to execute, or an argv array [program, arg, ...] run without a shell",
                },
                "workdir": {"type": "string", "description": "Working directory (relative to the workspace root, or absolute; default the workspace root)"},
                "cwd": {"type": "string", "description": "Alias of workdir"},
                "env": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Environment variables to set for the command, added to this server's environment",
                },
                "timeout": {
                    "type": "number",
                    "minimum": 0,
                    "description": format!("Timeout in seconds (default {DEFAULT_TIMEOUT_SECS}; 0 for no limit); the whole process tree is killed when it runs out"),
                },
                "yieldMs": {
                    "type": "number",
                    "minimum": 0,
                    "description": format!("Milliseconds to wait before backgrounding (default {})", DEFAULT_YIELD.as_millis()),
                },
                "background": {"type": "boolean", "description": "Run in background immediately"},
            },
            "required": ["command"],
        }).into(),
        annotations: Some(ToolAnnotations::DESTRUCTIVE),
    }
}

/// What the caller asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CommandLine {
    Shell(String),
    Argv(Vec<String>),
}

struct ExecRequest {
    command: CommandLine,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    timeout: Option<Duration>,
    yield_after: Duration,
    background: bool,
}

impl ExecRequest {
    /// The command as the caller wrote it, for listings and messages.
    fn label(&self) -> String {
        match &self.command {
            CommandLine::Shell(line) => line.clone(),
            CommandLine::Argv(argv) => argv.join(" "),
        }
    }

    fn argv(&self) -> Vec<String> {
        match &self.command {
            CommandLine::Shell(line) => vec![shell(), "-c".into(), line.clone()],
            CommandLine::Argv(argv) => argv.clone(),
        }
    }

    fn meta(&self) -> JobMeta {
        JobMeta { command: self.label(), timeout: self.timeout }
    }
}

pub(crate) async fn run(
    workspace: &Workspace,
    jobs: Option<&JobRegistry>,
    args: &Map<String, Value>,
    ctx: &CallContext,
) -> ToolResult {
    // Parsing checks the working directory (a stat), which is file I/O: off the async threads.
    let (parse_workspace, parse_args) = (workspace.clone(), args.clone());
    let request = match crate::run_blocking(NAME, move || parse(&parse_workspace, &parse_args)).await {
        Ok(Ok(request)) => request,
        Ok(Err(message)) => return ToolResult::error(message),
        Err(panicked) => return panicked,
    };
    if ctx.cancel.is_cancelled() {
        return ToolResult::error(CANCELLED);
    }
    if request.background {
        match jobs {
            None => return ToolResult::error(NO_REGISTRY),
            Some(jobs) if !jobs.has_room() => return ToolResult::error(registry_full(jobs.limits().max_jobs)),
            Some(_) => {}
        }
    }
    let output_limit = jobs.map_or(JobLimits::DEFAULT, JobRegistry::limits).output_bytes;
    // Only a job that can be handed over can ever be written to; others read end of file.
    let options = JobOptions { timeout: request.timeout, output_limit, pipe_stdin: jobs.is_some() };
    let argv = request.argv();
    let launch = Launch { argv: &argv, cwd: Some(&request.cwd), env_overrides: &request.env, passed_fds: &[] };
    let job = match Job::start(launch, options) {
        Ok(job) => job,
        Err(error) => return start_failure(&request, &error),
    };
    let Some(jobs) = jobs else {
        return run_to_the_end(job, &request, ctx).await;
    };
    if !request.background {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return cancel(job).await,
            () = job.finished() => return finished(&job, &request),
            () = tokio::time::sleep(request.yield_after) => {}
        }
    }
    match jobs.admit(job, request.meta()) {
        Ok(entry) => still_running(&entry),
        Err(full) if request.background => {
            // Room was checked before the start; another call took it meanwhile.
            full.job.kill().await;
            ToolResult::error(registry_full(full.max_jobs))
        }
        // No room to hand it over: keep it in the foreground.
        Err(full) => run_to_the_end(*full.job, &request, ctx).await,
    }
}

const NO_REGISTRY: &str = "Background jobs are not available to this caller: it keeps no job registry (a `clawmcp \
                           tools` server does). Run the command in the foreground (omit background).";

fn registry_full(max_jobs: usize) -> String {
    format!(
        "Cannot start a background job: {max_jobs} background jobs are running, the most this server keeps. Kill one \
         with process (action kill; see action list), or run this command in the foreground."
    )
}

/// Waits for the end in the foreground; a cancellation kills the whole tree.
async fn run_to_the_end(job: Job, request: &ExecRequest, ctx: &CallContext) -> ToolResult {
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => cancel(job).await,
        () = job.finished() => finished(&job, request),
    }
}

async fn cancel(job: Job) -> ToolResult {
    job.kill().await;
    ToolResult::error(CANCELLED)
}

pub(crate) fn still_running(entry: &JobEntry) -> ToolResult {
    ToolResult::text(format!("Command still running (session {}, pid {}). {FOLLOW_UP}", entry.id, entry.job.pid()))
}

/// The result of a command that ended in the foreground.
fn finished(job: &Job, request: &ExecRequest) -> ToolResult {
    let exit = job.exit().expect("the job has finished");
    let output = job.output_since(0);
    let mut text = retention_note(output.discarded, output.total_bytes);
    let shown = output.text.trim_end();
    text.push_str(if shown.is_empty() { "(no output)" } else { shown });
    if exit.ending == JobEnding::Exited && exit.exit_code == 0 {
        return ToolResult::text(text);
    }
    text.push_str(&format!("\n\n(Command {})", describe_exit(&exit, request.timeout)));
    if exit.ending == JobEnding::TimedOut {
        text.push_str(
            "\n\nExternal side effects may already have happened. Check the resulting state before retrying, and \
             only raise the timeout for a command that is safe to run again.",
        );
    }
    ToolResult::error(text)
}

/// Marks output whose beginning fell out of the retention ring (empty when nothing did).
pub(crate) fn retention_note(discarded: u64, total: u64) -> String {
    if discarded == 0 {
        return String::new();
    }
    format!(
        "[{discarded} earlier bytes of output were discarded at the retention cap ({} in total were written); \
         redirect large output to a file and read it in parts]\n\n",
        total
    )
}

fn start_failure(request: &ExecRequest, error: &ProcessError) -> ToolResult {
    let hint = match &request.command {
        CommandLine::Argv(_) => "Check the program name (it is looked up on PATH) or pass an absolute path.",
        CommandLine::Shell(_) => "The shell could not be started; pass the command as an argv array instead.",
    };
    ToolResult::error(format!("Execution failed: {error}. {hint}"))
}

fn parse(workspace: &Workspace, map: &Map<String, Value>) -> Result<ExecRequest, String> {
    let args = Args::new(map);
    let text = |error: ArgError| error.to_string();
    let command = parse_command(map)?;
    let cwd = match args.string(WORKDIR).map_err(text)? {
        Some(dir) if !dir.trim().is_empty() => {
            let target = workspace.resolve(&dir)?;
            if !target.abs.is_dir() {
                return Err(format!(
                    "Working directory {} does not exist or is not a directory. {}",
                    target.describe(),
                    target.lookup_hint()
                ));
            }
            target.abs
        }
        _ => {
            let root = workspace.root().to_path_buf();
            if !root.is_dir() {
                return Err(format!(
                    "The workspace root {} does not exist, so it cannot be the working directory. Pass workdir, \
                     or start the server with an existing workspace.",
                    root.display()
                ));
            }
            root
        }
    };
    let timeout = match non_negative_number(map, TIMEOUT, Some(MAX_WAIT.as_secs_f64()))? {
        None => Some(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS)),
        Some(0.0) => None,
        Some(secs) => Some(Duration::from_secs_f64(secs)),
    };
    let yield_after = non_negative_number(map, YIELD_MS, Some(MAX_WAIT.as_millis() as f64))?
        .map_or(DEFAULT_YIELD, |ms| Duration::from_secs_f64(ms / 1000.0));
    Ok(ExecRequest {
        command,
        cwd,
        env: parse_env(map)?,
        timeout,
        yield_after,
        background: args.bool(BACKGROUND).map_err(text)?.unwrap_or(false),
    })
}

fn parse_command(map: &Map<String, Value>) -> Result<CommandLine, String> {
    let given = COMMAND_NAMES.iter().find_map(|name| map.get(*name).filter(|v| !v.is_null()).map(|v| (*name, v)));
    let Some((name, value)) = given else {
        return Err(missing_command());
    };
    match value {
        Value::String(line) if line.trim().is_empty() => Err(missing_command()),
        Value::String(line) => Ok(CommandLine::Shell(line.clone())),
        Value::Array(items) => {
            let argv: Option<Vec<String>> = items.iter().map(|item| item.as_str().map(str::to_string)).collect();
            match argv {
                Some(argv) if argv.first().is_some_and(|program| !program.is_empty()) => Ok(CommandLine::Argv(argv)),
                Some(_) => {
                    Err(format!("Parameter `{name}` is an empty argv: its first element must name the program to run."))
                }
                None => Err(command_type_error(name, value)),
            }
        }
        other => Err(command_type_error(name, other)),
    }
}

fn missing_command() -> String {
    "Missing required parameter: command".into()
}

fn command_type_error(name: &str, got: &Value) -> String {
    format!(
        "Parameter `{name}` must be a string (a shell command) or an array of strings (program and arguments, no \
         shell), got {}",
        kind(got)
    )
}

fn parse_env(map: &Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    let entries = match map.get(ENV) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(entries)) => entries,
        Some(other) => {
            return Err(format!(
                "Parameter `env` must be an object of variable names to string values, got {}",
                kind(other)
            ));
        }
    };
    entries
        .iter()
        .map(|(name, value)| {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!(
                    "Environment variable name {name:?} is invalid: it must be non-empty, without '=' or NUL."
                ));
            }
            match value {
                Value::String(text) if !text.contains('\0') => Ok((name.clone(), text.clone())),
                Value::String(_) => {
                    Err(format!("Environment variable {name} contains a NUL byte, which no process can receive."))
                }
                other => Err(format!("Environment variable {name} must be a string, got {}", kind(other))),
            }
        })
        .collect()
}

/// A number `>= 0` (and `<= max` when given) under `name`, as JSON or as a numeric string;
/// fractions are kept (sub-second timeouts are real). `None` when absent or null.
pub(crate) fn non_negative_number(
    map: &Map<String, Value>,
    name: &str,
    max: Option<f64>,
) -> Result<Option<f64>, String> {
    let value = match map.get(name) {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let number = match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok(),
        _ => None,
    };
    let upper = max.unwrap_or(f64::MAX);
    match number {
        Some(number) if number.is_finite() && (0.0..=upper).contains(&number) => Ok(Some(number)),
        _ => {
            let expected = max.map_or_else(|| "a number >= 0".to_string(), |max| format!("a number from 0 to {max}"));
            let got = if value.is_string() { "a string that is not a number".into() } else { kind(value) };
            Err(format!("Parameter `{name}` must be {expected}, got {got}"))
        }
    }
}

/// What a wrong value was, for a message: numbers and booleans as themselves (short, and the
/// exact value matters for a range), anything else by its JSON type (never echoed whole: a
/// string may be megabytes).
fn kind(value: &Value) -> String {
    match value {
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::Null => "null".into(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// The shell for string commands: `$SHELL` when it is an existing POSIX shell (OpenClaw uses
/// the user's shell), else `/bin/sh` (what the upstream bridge's Node `exec` used).
fn shell() -> String {
    let from_env = std::env::var("SHELL").ok().filter(|path| {
        let path = std::path::Path::new(path);
        path.is_absolute()
            && path.file_name().and_then(|name| name.to_str()).is_some_and(|name| POSIX_SHELLS.contains(&name))
            && path.is_file()
    });
    from_env.unwrap_or_else(|| "/bin/sh".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn ws() -> Workspace {
        Workspace::new(std::env::temp_dir())
    }

    #[test]
    fn command_is_a_shell_string_or_an_argv() {
        let shell = parse(&ws(), &map(json!({"command": "ls | wc -l"}))).unwrap();
        assert_eq!(shell.command, CommandLine::Shell("ls | wc -l".into()));
        assert_eq!(&shell.argv()[1..], ["-c", "ls | wc -l"]);
        let argv = parse(&ws(), &map(json!({"command": ["printf", "%s", "a b"]}))).unwrap();
        assert_eq!(argv.argv(), ["printf", "%s", "a b"]);
        assert_eq!(argv.label(), "printf %s a b");
        let alias = parse(&ws(), &map(json!({"cmd": "true"}))).unwrap();
        assert_eq!(alias.command, CommandLine::Shell("true".into()));
    }

    #[test]
    fn bad_commands_say_what_is_expected() {
        let error = |args: Value| parse(&ws(), &map(args)).err().unwrap();
        assert_eq!(error(json!({})), "Missing required parameter: command");
        assert_eq!(error(json!({"command": "  "})), "Missing required parameter: command");
        assert!(error(json!({"command": []})).contains("empty argv"));
        assert!(error(json!({"command": [""]})).contains("empty argv"));
        assert!(error(json!({"command": ["ls", 3]})).starts_with("Parameter `command` must be a string"));
        assert!(error(json!({"command": 7})).ends_with("got 7"));
        assert!(error(json!({"command": {"argv": ["ls"]}})).ends_with("got an object"));
    }

    #[test]
    fn timeouts_default_to_openclaws_and_zero_means_none() {
        let parsed = |args: Value| parse(&ws(), &map(args)).unwrap();
        assert_eq!(parsed(json!({"command": "true"})).timeout, Some(Duration::from_secs(1800)));
        assert_eq!(parsed(json!({"command": "true", "timeout": 0})).timeout, None);
        assert_eq!(parsed(json!({"command": "true", "timeout": 0.25})).timeout, Some(Duration::from_millis(250)));
        assert_eq!(parsed(json!({"command": "true", "timeout": "2"})).timeout, Some(Duration::from_secs(2)));
        assert_eq!(parsed(json!({"command": "true"})).yield_after, Duration::from_secs(10));
        assert_eq!(parsed(json!({"command": "true", "yieldMs": 5})).yield_after, Duration::from_millis(5));
    }

    #[test]
    fn time_limits_are_bounded_at_a_week() {
        let week = MAX_WAIT.as_secs_f64();
        assert!(parse(&ws(), &map(json!({"command": "true", "timeout": week}))).is_ok());
        for (bad, got) in [
            (json!(week + 1.0), "604801.0"),
            (json!(-1), "-1"),
            (json!("soon"), "a string that is not a number"),
            (json!(true), "true"),
        ] {
            let error = parse(&ws(), &map(json!({"command": "true", "timeout": bad}))).err().unwrap();
            assert_eq!(error, format!("Parameter `timeout` must be a number from 0 to 604800, got {got}"));
        }
        let ms = MAX_WAIT.as_millis() as f64;
        assert!(parse(&ws(), &map(json!({"command": "true", "yieldMs": ms}))).is_ok());
        assert!(parse(&ws(), &map(json!({"command": "true", "yieldMs": ms + 1.0}))).is_err());
    }

    #[test]
    fn env_must_map_names_to_strings() {
        let env = |value: Value| parse(&ws(), &map(json!({"command": "true", "env": value})));
        assert_eq!(
            env(json!({"A": "1", "B": ""})).unwrap().env,
            [("A".into(), "1".into()), ("B".into(), String::new())]
        );
        assert!(env(json!({"A": 1})).err().unwrap().contains("Environment variable A must be a string, got 1"));
        assert!(env(json!({"A=B": "x"})).err().unwrap().contains("is invalid"));
        assert!(env(json!({"": "x"})).err().unwrap().contains("is invalid"));
        assert!(env(json!(["A=1"])).err().unwrap().starts_with("Parameter `env` must be an object"));
    }

    #[test]
    fn workdir_resolves_against_the_workspace_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let workspace = Workspace::new(dir.path());
        let parsed = parse(&workspace, &map(json!({"command": "pwd", "workdir": "sub"}))).unwrap();
        assert_eq!(parsed.cwd, dir.path().join("sub"));
        let alias = parse(&workspace, &map(json!({"command": "pwd", "cwd": "sub"}))).unwrap();
        assert_eq!(alias.cwd, dir.path().join("sub"));
        assert_eq!(parse(&workspace, &map(json!({"command": "pwd"}))).unwrap().cwd, dir.path());
        let missing = parse(&workspace, &map(json!({"command": "pwd", "workdir": "nope"}))).err().unwrap();
        assert!(missing.starts_with("Working directory nope (resolved to "), "{missing}");
    }

    #[test]
    fn the_retention_note_appears_only_after_a_cut() {
        assert_eq!(retention_note(0, 10), "");
        assert!(retention_note(1, 10).starts_with("[1 earlier bytes of output were discarded"));
    }
}
