//! Structural validation of `system.run` / `system.run.prepare` arguments (V2 phase 1).
//!
//! Both commands accept exactly the same arguments and fail with the same reason codes (upstream
//! `ExecApprovalV2InputValidator`), checked in this order: `command`, `cwd`, `env`, timeout,
//! `rawCommand`. Unlike the lenient readers in [`crate::capability::args`], a wrong type here is
//! an error: these arguments decide what runs, so a near-miss must not run with a default.
//!
//! Deviation from upstream: an argument or `cwd` containing a NUL byte is rejected
//! (`malformed-command` / `malformed-cwd`) because no process can receive it; upstream fails later,
//! at launch.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::approvals::RunRequest;
use crate::capability::{Caller, InvokeRequest};
use crate::command_text::raw_command_matches;

/// Timeout when the caller gives none.
pub const DEFAULT_TIMEOUT_MS: u32 = 30_000;

/// The longest a run may last whatever the caller asks (ten minutes). Larger requests are
/// clamped, not refused, as upstream does at execution.
pub const MAX_TIMEOUT_MS: u32 = 600_000;

/// Why the arguments were refused. `Display` is the upstream reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRun {
    /// `command` is a string; it must be an argv array (there is no implicit shell).
    #[error("command-array-required")]
    CommandArrayRequired,
    #[error("malformed-command")]
    MalformedCommand,
    #[error("missing-command")]
    MissingCommand,
    #[error("empty-command")]
    EmptyCommand,
    #[error("malformed-cwd")]
    MalformedCwd,
    #[error("empty-cwd")]
    EmptyCwd,
    #[error("malformed-env")]
    MalformedEnv,
    #[error("custom-env-not-supported")]
    CustomEnvNotSupported,
    #[error("invalid-timeout")]
    InvalidTimeout,
    #[error("raw-command-mismatch")]
    RawCommandMismatch,
    #[error("malformed-raw-command")]
    MalformedRawCommand,
}

/// Arguments that passed validation.
#[derive(Debug, Clone)]
pub struct ValidRun {
    /// What the approvals coordinator authorizes and the runner executes.
    pub request: RunRequest,
    /// The timeout as requested (1..=i32::MAX); see [`ValidRun::timeout`].
    pub requested_timeout_ms: u32,
}

impl ValidRun {
    /// The time limit actually applied: the request, clamped to [`MAX_TIMEOUT_MS`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.requested_timeout_ms.min(MAX_TIMEOUT_MS)))
    }
}

/// The JSON Schema of the arguments `system.run` and `system.run.prepare` accept.
pub fn run_arguments_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "array",
                "description": "Program and arguments, passed verbatim with no shell, e.g. [\"ls\", \"-la\"]. \
                                For shell syntax (pipes, globs, &&) name the shell: [\"sh\", \"-c\", \"ls | wc -l\"].",
                "items": {"type": "string"},
                "minItems": 1
            },
            "cwd": {"type": "string", "minLength": 1, "description": "Working directory. Default: the node's."},
            "env": {
                "type": "object",
                "maxProperties": 0,
                "description": "Only {} is accepted: the command runs with the node's environment."
            },
            "timeoutMs": {
                "type": "integer",
                "minimum": 1,
                "maximum": i32::MAX,
                "default": DEFAULT_TIMEOUT_MS,
                "description": "Time limit in milliseconds; values above 600000 (10 minutes) are clamped. \
                                On expiry the whole process tree is killed and timedOut is true."
            },
            "timeout": {"type": "integer", "minimum": 1, "maximum": i32::MAX, "description": "Alias of timeoutMs."},
            "rawCommand": {
                "type": "string",
                "description": "Display text for approvals. Must describe command exactly: command quoted for a \
                                POSIX shell, or quoted only where an argument is empty or has spaces or \", or for \
                                [\"sh\", \"-c\", script] the script alone."
            },
            "agentId": {"type": "string", "description": "Agent whose exec-approval policy applies. Default: main."}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

/// The session a call belongs to: the gateway envelope's, else, on the gateway's own
/// `node.invoke`, the `sessionKey` argument (where the gateway's exec tool puts it, after checking
/// it against the approval). Never an MCP client's: the argument would name any session it liked.
pub fn session_key(request: &InvokeRequest) -> Option<String> {
    match request.caller {
        Caller::Gateway => request
            .session_key
            .clone()
            .or_else(|| request.args.get("sessionKey").and_then(Value::as_str).map(str::to_owned)),
        Caller::Mcp | Caller::GatewayPluginTool => request.session_key.clone(),
    }
}

/// Validates `args`. `session_key` comes from [`session_key`], never straight from `args`.
pub fn validate(args: &Map<String, Value>, session_key: Option<String>) -> Result<ValidRun, InvalidRun> {
    let argv = parse_argv(args.get("command"))?;
    let cwd = match args.get("cwd") {
        None => None,
        Some(Value::String(cwd)) if cwd.contains('\0') => return Err(InvalidRun::MalformedCwd),
        Some(Value::String(cwd)) if cwd.trim().is_empty() => return Err(InvalidRun::EmptyCwd),
        Some(Value::String(cwd)) => Some(PathBuf::from(cwd)),
        Some(_) => return Err(InvalidRun::MalformedCwd),
    };
    check_env(args.get("env"))?;
    let requested_timeout_ms = match args.get("timeoutMs").or_else(|| args.get("timeout")) {
        None => DEFAULT_TIMEOUT_MS,
        Some(value) => parse_timeout(value)?,
    };
    let raw_command = match args.get("rawCommand") {
        None => None,
        Some(Value::String(raw)) if raw_command_matches(raw, &argv) => Some(raw.clone()),
        Some(Value::String(_)) => return Err(InvalidRun::RawCommandMismatch),
        Some(_) => return Err(InvalidRun::MalformedRawCommand),
    };
    let agent_id = args.get("agentId").and_then(Value::as_str).map(String::from);
    Ok(ValidRun { request: RunRequest { argv, cwd, raw_command, agent_id, session_key }, requested_timeout_ms })
}

fn parse_argv(command: Option<&Value>) -> Result<Vec<String>, InvalidRun> {
    let items = match command {
        None => return Err(InvalidRun::MissingCommand),
        Some(Value::String(_)) => return Err(InvalidRun::CommandArrayRequired),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(InvalidRun::MalformedCommand),
    };
    let argv = items
        .iter()
        .map(|item| match item {
            Value::String(arg) if !arg.contains('\0') => Ok(arg.clone()),
            _ => Err(InvalidRun::MalformedCommand),
        })
        .collect::<Result<Vec<_>, _>>()?;
    match argv.first() {
        None => Err(InvalidRun::MissingCommand),
        Some(program) if program.trim().is_empty() => Err(InvalidRun::EmptyCommand),
        Some(_) => Ok(argv),
    }
}

/// `env` may be present only as an object of strings, and only empty: the run inherits the
/// node's environment, and a caller-chosen environment (`LD_PRELOAD`, `PATH`) would change what
/// an approval actually approved.
fn check_env(env: Option<&Value>) -> Result<(), InvalidRun> {
    match env {
        None => Ok(()),
        Some(Value::Object(vars)) if vars.values().any(|v| !v.is_string()) => Err(InvalidRun::MalformedEnv),
        Some(Value::Object(vars)) if vars.is_empty() => Ok(()),
        Some(Value::Object(_)) => Err(InvalidRun::CustomEnvNotSupported),
        Some(_) => Err(InvalidRun::MalformedEnv),
    }
}

/// A positive integer that fits `i32` (upstream's bound). `5.0` counts as 5; `5.5`, `"5"`,
/// `null`, 0 and negatives do not.
fn parse_timeout(value: &Value) -> Result<u32, InvalidRun> {
    let whole =
        value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15).map(|f| f as i64));
    whole
        .filter(|ms| (1..=i64::from(i32::MAX)).contains(ms))
        .and_then(|ms| u32::try_from(ms).ok())
        .ok_or(InvalidRun::InvalidTimeout)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(args: Value) -> Result<ValidRun, InvalidRun> {
        validate(args.as_object().unwrap(), None)
    }

    fn reason(args: Value) -> String {
        check(args.clone()).map(|_| ()).expect_err(&format!("{args} must be refused")).to_string()
    }

    #[test]
    fn command_reasons() {
        assert_eq!(reason(json!({"command": "echo hi"})), "command-array-required");
        assert_eq!(reason(json!({"command": {"argv": ["echo"]}})), "malformed-command");
        assert_eq!(reason(json!({"command": null})), "malformed-command");
        assert_eq!(reason(json!({"command": ["echo", 1]})), "malformed-command");
        assert_eq!(reason(json!({"command": ["echo", "a\u{0}b"]})), "malformed-command");
        assert_eq!(reason(json!({})), "missing-command");
        assert_eq!(reason(json!({"command": []})), "missing-command");
        assert_eq!(reason(json!({"command": ["  ", "x"]})), "empty-command");
        // Empty arguments after the program are legitimate.
        assert_eq!(check(json!({"command": ["printf", ""]})).unwrap().request.argv, ["printf", ""]);
    }

    #[test]
    fn cwd_reasons() {
        assert_eq!(reason(json!({"command": ["ls"], "cwd": 5})), "malformed-cwd");
        assert_eq!(reason(json!({"command": ["ls"], "cwd": null})), "malformed-cwd");
        assert_eq!(reason(json!({"command": ["ls"], "cwd": "/tmp\u{0}x"})), "malformed-cwd");
        assert_eq!(reason(json!({"command": ["ls"], "cwd": " "})), "empty-cwd");
        let run = check(json!({"command": ["ls"], "cwd": "/tmp"})).unwrap();
        assert_eq!(run.request.cwd, Some(PathBuf::from("/tmp")));
    }

    #[test]
    fn env_reasons() {
        assert_eq!(reason(json!({"command": ["ls"], "env": []})), "malformed-env");
        assert_eq!(reason(json!({"command": ["ls"], "env": {"A": 1}})), "malformed-env");
        assert_eq!(reason(json!({"command": ["ls"], "env": {"A": "1", "B": null}})), "malformed-env");
        assert_eq!(reason(json!({"command": ["ls"], "env": {"PATH": "/tmp"}})), "custom-env-not-supported");
        assert!(check(json!({"command": ["ls"], "env": {}})).is_ok());
    }

    #[test]
    fn timeout_reasons_default_alias_and_clamp() {
        for bad in [json!(0), json!(-5), json!(1.5), json!("100"), json!(null), json!(i64::from(i32::MAX) + 1)] {
            assert_eq!(reason(json!({"command": ["ls"], "timeoutMs": bad})), "invalid-timeout", "{bad}");
            assert_eq!(reason(json!({"command": ["ls"], "timeout": bad})), "invalid-timeout", "{bad}");
        }
        let timeout = |args: Value| check(args).unwrap().timeout();
        assert_eq!(timeout(json!({"command": ["ls"]})), Duration::from_millis(30_000));
        assert_eq!(timeout(json!({"command": ["ls"], "timeoutMs": 1})), Duration::from_millis(1));
        assert_eq!(timeout(json!({"command": ["ls"], "timeoutMs": 250.0})), Duration::from_millis(250));
        assert_eq!(timeout(json!({"command": ["ls"], "timeout": 1234})), Duration::from_millis(1234));
        assert_eq!(timeout(json!({"command": ["ls"], "timeoutMs": 600_000})), Duration::from_millis(600_000));
        assert_eq!(timeout(json!({"command": ["ls"], "timeoutMs": 600_001})), Duration::from_millis(600_000));
        assert_eq!(timeout(json!({"command": ["ls"], "timeoutMs": i32::MAX})), Duration::from_millis(600_000));
        // `timeoutMs` wins over the alias, even when the alias is bad.
        assert_eq!(timeout(json!({"command": ["ls"], "timeoutMs": 10, "timeout": "x"})), Duration::from_millis(10));
    }

    #[test]
    fn raw_command_reasons() {
        assert_eq!(reason(json!({"command": ["ls"], "rawCommand": 3})), "malformed-raw-command");
        assert_eq!(reason(json!({"command": ["ls"], "rawCommand": null})), "malformed-raw-command");
        assert_eq!(reason(json!({"command": ["ls", "/"], "rawCommand": "rm -rf /"})), "raw-command-mismatch");
        let run = check(json!({"command": ["ls", "a b"], "rawCommand": "ls \"a b\""})).unwrap();
        assert_eq!(run.request.raw_command.as_deref(), Some("ls \"a b\""));
    }

    #[test]
    fn reasons_are_checked_in_upstream_order() {
        let everything_wrong = json!({"command": [], "cwd": 1, "env": 1, "timeoutMs": 0, "rawCommand": 1});
        assert_eq!(reason(everything_wrong), "missing-command");
        assert_eq!(reason(json!({"command": ["ls"], "cwd": "", "env": 1})), "empty-cwd");
        assert_eq!(reason(json!({"command": ["ls"], "env": {"A": "b"}, "timeoutMs": 0})), "custom-env-not-supported");
        assert_eq!(reason(json!({"command": ["ls"], "timeoutMs": 0, "rawCommand": 1})), "invalid-timeout");
    }

    #[test]
    fn agent_and_session_come_from_their_own_places() {
        let args = json!({"command": ["ls"], "agentId": "ops", "sessionKey": "forged"});
        let run = validate(args.as_object().unwrap(), Some("agent:main:x".into())).unwrap();
        assert_eq!(run.request.agent_id.as_deref(), Some("ops"));
        assert_eq!(run.request.session_key.as_deref(), Some("agent:main:x"));
        let run = check(json!({"command": ["ls"], "agentId": 5, "sessionKey": "forged"})).unwrap();
        assert_eq!((run.request.agent_id, run.request.session_key), (None, None));
    }
}
