//! `system.run`: validate, authorize with the exec-approvals coordinator, recheck everything
//! that could have changed while a person was deciding, then run the argv with no shell.
//!
//! The order is the contract. Validation first, so nothing malformed reaches the policy or a
//! prompt. Authorization may wait for a human; the policy and the "Run system tools" switch can
//! change meanwhile, so both are rechecked immediately before launch (upstream's prelaunch
//! revalidation). From then on [`clawmcp_process::run`] owns the child: a timeout or a cancellation
//! stops the whole process tree before this returns.
//!
//! A command that runs and exits non-zero is a successful call: the caller gets the
//! `{stdout, stderr, exitCode, timedOut, success, durationMs}` payload, with `success` false.
//! Only refusing or failing to start the command is a tool error.

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use clawmcp_mcp::wire_size::{self, Nesting};
use clawmcp_mcp::{ToolAnnotations, ToolOutcome, ToolOutput};
use clawmcp_process::{
    self as process, CapturedStream, Containment, Launch, MAX_CAPTURED_BYTES, ProcessError, ProcessOutcome,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::request::{self, run_arguments_schema};
use super::{operator_approval, sandbox};
use crate::approvals::{Denial, DenialCode, ExecApprovals};
use crate::capability::{Caller, CapabilityError, CommandSpec, InvokeRequest};
use crate::settings::{LiveSettings, SandboxSettings};

/// The error of every `system.run*` call while the "Run system tools" switch is off.
pub const RUN_DISABLED: &str =
    "system.run is disabled by user setting (set NodeSystemRunEnabled to true in settings.json).";

pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "system.run",
        title: Some("Run a command"),
        output_schema: Some(output_schema()),
        description: Some(
            "Run a program on this machine, after exec-approval policy allows it. command is the argv \
             (no shell; use [\"sh\",\"-c\",\"...\"] for shell syntax). Returns {stdout, stderr, exitCode, \
             timedOut, success, durationMs}; a non-zero exit is a normal result with success false, and a \
             process ended by signal N reports exitCode 128+N. Each stream keeps its first 1 MiB, less if it is \
             mostly control bytes or binary, so the result stays under 4 MiB (stdoutTruncated/stderrTruncated \
             mark a cut). On timeout (timeoutMs, default 30000, at most \
             600000) or cancellation the whole process tree is killed. When the node's sandbox is on \
             (SystemRunSandbox), writes outside cwd and the temp directory fail, the network may be cut and \
             resource limits apply; a sandbox field then notes anything this kernel could not enforce.",
        ),
        input_schema: Some(run_arguments_schema().into()),
        annotations: ToolAnnotations::DESTRUCTIVE,
    });
    SPEC.clone()
}

/// The JSON Schema of a run's answer (its `outputSchema`): upstream's six keys always, the
/// truncation marks, `note` and `sandbox` only when they say something.
fn output_schema() -> clawmcp_mcp::Schema {
    serde_json::json!({
        "type": "object",
        "properties": {
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "exitCode": {"type": "integer"},
            "timedOut": {"type": "boolean"},
            "success": {"type": "boolean"},
            "durationMs": {"type": "integer", "minimum": 0},
            "stdoutTruncated": {"const": true},
            "stderrTruncated": {"const": true},
            "note": {"type": "string", "minLength": 1},
            "sandbox": {"type": "string", "minLength": 1}
        },
        "required": ["stdout", "stderr", "exitCode", "timedOut", "success", "durationMs"],
        "additionalProperties": false
    })
    .into()
}

/// Refuses when the "Run system tools" switch is off. Read live: the file may change any time.
pub fn ensure_enabled(settings: &LiveSettings) -> Result<(), CapabilityError> {
    match settings.current().node_system_run_enabled {
        true => Ok(()),
        false => Err(CapabilityError::new(RUN_DISABLED).with_code(UNAVAILABLE)),
    }
}

/// The gateway's codes: `SYSTEM_RUN_DENIED` for a run the exec-approval policy refused
/// (upstream's word for "ask the operator", which the gateway's exec tool turns into prepare,
/// approve, re-invoke), `UNAVAILABLE` while the command is switched off.
pub use clawmcp_mcp::tool::codes::{INVALID_REQUEST, SYSTEM_RUN_DENIED, UNAVAILABLE};

/// Serves `system.run` (the kill switch has been checked by the caller once already).
pub async fn invoke(
    settings: &LiveSettings,
    approvals: &ExecApprovals,
    call: &InvokeRequest,
    cancel: &CancellationToken,
    progress: Option<&clawmcp_mcp::Progress>,
) -> ToolOutcome {
    let args = &call.args;
    let run_id = args.get("runId").and_then(Value::as_str).map(str::to_owned);
    let run = request::validate(args, request::session_key(call))
        .map_err(|reason| denied_to(call.caller, &Denial::new(DenialCode::ValidationFailed, reason.to_string())))?;
    let approver = operator_approval::approver(call.caller, args, &run)?;
    // On the gateway path a refusal also tells the gateway the run is over (`exec.denied`).
    let refuse = |denial: Denial| match call.caller {
        Caller::Gateway => denied(&denial).with_gateway_event(EXEC_DENIED, exec_denied(&run.request, &run_id, &denial)),
        Caller::Mcp | Caller::GatewayPluginTool => denied_to(call.caller, &denial),
    };
    // A run waiting for a person says so to the caller (MCP progress), not "running for N s".
    let on_wait = |waiting: &str| {
        if let Some(progress) = progress {
            progress.note(waiting);
        }
    };
    let authorization = match approvals.authorize_with(&run.request, &approver, cancel, &on_wait).await {
        Ok(authorization) => authorization,
        Err(_) if cancel.is_cancelled() => return Err(clawmcp_mcp::CANCELLED.into()),
        Err(denial) => return Err(refuse(denial)),
    };

    // Prelaunch: the decision may be minutes old.
    approvals.revalidate(&authorization).map_err(refuse)?;
    ensure_enabled(settings)?;
    if cancel.is_cancelled() {
        return Err(clawmcp_mcp::CANCELLED.into());
    }

    // The sandbox as the settings say now (read live, like the switch): prepared for this run's
    // working directory, or the run is refused. Never uncontained when containment was asked for.
    let sandbox = settings.current().system_run_sandbox;
    let containment = match sandbox.enabled {
        true => Some(prepare_containment(&sandbox, run.request.cwd.as_deref())?),
        false => None,
    };

    // Launch exactly what was judged: the resolved executable, and the variables of an
    // unwrapped `env NAME=VALUE` wrapper.
    let launch = Launch {
        argv: &authorization.argv,
        cwd: run.request.cwd.as_deref(),
        env_overrides: &authorization.env,
        passed_fds: &[],
    };
    match process::run_contained(launch, containment.as_ref(), run.timeout(), cancel).await {
        Ok(outcome) => {
            let note = containment.as_ref().and_then(|containment| sandbox_note(containment, &sandbox, &outcome));
            let mut result = payload(outcome);
            if let Some(note) = note {
                result.insert("sandbox".into(), note.into());
            }
            let finished = exec_finished(&run.request, run_id, &result);
            let gateway = gateway_payload(&result);
            Ok(ToolOutput::from(Value::Object(result))
                .with_gateway_payload(gateway)
                .with_gateway_event(EXEC_FINISHED, finished))
        }
        Err(ProcessError::Cancelled) => Err(clawmcp_mcp::CANCELLED.into()),
        Err(error @ ProcessError::Containment { .. }) => Err(format!(
            "Execution failed: the system.run sandbox (SystemRunSandbox.Enabled) could not be applied, so the \
             command did not run: {error}. `clawmcp doctor` shows what this kernel supports."
        )
        .into()),
        Err(ProcessError::Spawn { .. }) if run.request.cwd.as_deref().is_some_and(|cwd| !cwd.is_dir()) => {
            let cwd = run.request.cwd.as_deref().unwrap_or(Path::new("")).display();
            Err(format!("Execution failed: cwd `{cwd}` is not an existing directory; pass a directory that exists.")
                .into())
        }
        Err(error @ ProcessError::Spawn { .. }) => Err(format!(
            "Execution failed: {error}. Check the program name with system.which, or pass an absolute path."
        )
        .into()),
        Err(error @ ProcessError::Wait { .. }) => Err(format!("Execution failed: {error}.").into()),
    }
}

/// The node event the real node host sends to the gateway after a run; it wakes the agent's
/// node session with the output.
pub const EXEC_FINISHED: &str = "exec.finished";

/// The node event for a run the policy refused; the gateway ends its tracking of the run on it.
pub const EXEC_DENIED: &str = "exec.denied";

/// `exec.denied`: `{sessionKey, runId, host:"node", command, reason, suppressNotifyOnExit}` as
/// upstream sends it.
fn exec_denied(request: &crate::approvals::RunRequest, run_id: &Option<String>, denial: &Denial) -> Value {
    serde_json::json!({
        "sessionKey": request.session_key.as_deref().unwrap_or("node"),
        "runId": run_id,
        "host": "node",
        "command": event_command(request),
        "reason": denial.event_reason(),
        "suppressNotifyOnExit": false,
    })
}

/// The command text both exec events carry: the caller's `rawCommand`, else argv as the
/// gateway renders it.
fn event_command(request: &crate::approvals::RunRequest) -> String {
    request.raw_command.clone().unwrap_or_else(|| crate::command_text::gateway_command(&request.argv))
}

/// The most characters of output `exec.finished` carries (the agent reads the full result from
/// the invoke; the event is a wake-up note).
const EXEC_FINISHED_OUTPUT_CHARS: usize = 4000;

/// `exec.finished`: `{sessionKey, runId, host:"node", command, exitCode, timedOut, success,
/// output, suppressNotifyOnExit}` as upstream sends it (`sessionKey` "node" without a session).
fn exec_finished(request: &crate::approvals::RunRequest, run_id: Option<String>, result: &Map<String, Value>) -> Value {
    let text = |key: &str| result.get(key).and_then(Value::as_str).unwrap_or_default();
    let output =
        [text("stdout"), text("stderr")].iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect::<Vec<_>>();
    let output = output.join("\n");
    let skip = output.chars().count().saturating_sub(EXEC_FINISHED_OUTPUT_CHARS);
    let command = event_command(request);
    serde_json::json!({
        "sessionKey": request.session_key.as_deref().unwrap_or("node"),
        "runId": run_id,
        "host": "node",
        "command": command,
        "exitCode": result.get("exitCode"),
        "timedOut": result.get("timedOut"),
        "success": result.get("success"),
        "output": output.chars().skip(skip).collect::<String>(),
        "suppressNotifyOnExit": false,
    })
}

/// The gateway's payload: the real node host's keys `{exitCode, timedOut, success, stdout,
/// stderr, error}` (its exec tool parses exactly these), plus our truncation and sandbox notes
/// when there are any. `durationMs` stays on the MCP side.
fn gateway_payload(result: &Map<String, Value>) -> Value {
    let mut gateway = result.clone();
    gateway.remove("durationMs");
    gateway.insert("error".into(), Value::Null);
    Value::Object(gateway)
}

/// The containment of a run in `cwd` (the node's own working directory when the call names none).
fn prepare_containment(sandbox: &SandboxSettings, cwd: Option<&Path>) -> Result<Containment, CapabilityError> {
    let node_cwd;
    let cwd = match cwd {
        Some(cwd) => cwd,
        None => {
            node_cwd = std::env::current_dir().map_err(|error| {
                CapabilityError::new(format!(
                    "Execution failed: the sandbox needs the working directory to make it writable, and the node's \
                     cannot be read ({error}); pass cwd."
                ))
            })?;
            &node_cwd
        }
    };
    Containment::prepare(&sandbox::policy_for(sandbox, cwd)).map_err(|error| {
        CapabilityError::new(format!(
            "Execution failed: the system.run sandbox (SystemRunSandbox.Enabled) cannot be set up, so the command \
             did not run: {error}."
        ))
    })
}

/// What the caller must know about the sandbox after a run: the rules that fell back on this
/// kernel, and a tree killed for its size. `None` when everything asked for held.
fn sandbox_note(containment: &Containment, sandbox: &SandboxSettings, outcome: &ProcessOutcome) -> Option<String> {
    let mut notes = Vec::new();
    if outcome.process_limit_exceeded {
        let limit = sandbox.max_processes.map_or_else(String::new, |limit| format!(" ({limit})"));
        notes.push(format!(
            "the command had more processes and threads than SystemRunSandbox.MaxProcesses{limit} allows: all of \
             them were killed"
        ));
    }
    notes.extend(containment.report().fallback_note());
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// A refusal as `caller` reads it: the gateway gets upstream's text exactly (its tools and
/// agents match it); an MCP client and a gateway agent's plugin tool call get it in plain words
/// first.
fn denied_to(caller: Caller, denial: &Denial) -> CapabilityError {
    match caller {
        Caller::Gateway => denied(denial),
        Caller::Mcp | Caller::GatewayPluginTool => {
            CapabilityError::new(denial.explained()).with_code(SYSTEM_RUN_DENIED)
        }
    }
}

fn denied(denial: &Denial) -> CapabilityError {
    CapabilityError::new(denial.to_string()).with_code(SYSTEM_RUN_DENIED)
}

/// The most bytes each stream may take on the wire, after its two JSON encodings (the payload is
/// a string in the frame: MCP text block, gateway `payloadJSON`). Both streams at the bound plus
/// the other fields stay under [`MAX_RESULT_WIRE_BYTES`].
pub const MAX_STREAM_WIRE_BYTES: usize = 3 * 512 * 1024;

/// What a `system.run` response frame stays under, whatever the program wrote: the 4 MiB both
/// transports accept as a body. That holds for each rendering of the payload: a client of MCP
/// 2025-06-18 or later gets it twice (the text block and `structuredContent`), so its frame stays
/// under twice this, inside the core's `MAX_TOOL_RESULT_BYTES` backstop.
pub const MAX_RESULT_WIRE_BYTES: usize = 4 * 1024 * 1024;

/// The result payload. `stdoutTruncated`/`stderrTruncated` and `note` appear only when output
/// was cut, so an ordinary result has exactly upstream's shape.
///
/// A stream is cut twice if need be: at [`MAX_CAPTURED_BYTES`] read (the process crate), then at
/// [`MAX_STREAM_WIRE_BYTES`] encoded, which only output full of characters JSON escapes (NUL,
/// control bytes, binary decoded lossily) reaches before the first cut.
fn payload(outcome: ProcessOutcome) -> Map<String, Value> {
    let mut result = Map::new();
    let stdout = fit_to_wire(&outcome.stdout);
    let stderr = fit_to_wire(&outcome.stderr);
    result.insert("stdout".into(), stdout.text.into());
    result.insert("stderr".into(), stderr.text.into());
    result.insert("exitCode".into(), outcome.exit_code.into());
    result.insert("timedOut".into(), outcome.timed_out.into());
    result.insert("success".into(), (outcome.exit_code == 0 && !outcome.timed_out).into());
    result.insert("durationMs".into(), duration_ms(outcome.duration).into());
    let mut notes = Vec::new();
    for (name, stream, fitted) in [("stdout", &outcome.stdout, &stdout), ("stderr", &outcome.stderr, &stderr)] {
        if stream.truncated || fitted.cut_for_wire {
            result.insert(format!("{name}Truncated"), true.into());
            notes.push(truncation_note(name, stream, fitted));
        }
    }
    if !notes.is_empty() {
        notes.push("redirect large output to a file and read it in parts".into());
        result.insert("note".into(), notes.join("; ").into());
    }
    result
}

/// A stream's text as it goes on the wire.
struct Fitted<'a> {
    text: &'a str,
    /// Cut further than the capture was, to fit [`MAX_STREAM_WIRE_BYTES`] once encoded.
    cut_for_wire: bool,
}

fn fit_to_wire(stream: &CapturedStream) -> Fitted<'_> {
    let text = wire_size::prefix_within(&stream.text, MAX_STREAM_WIRE_BYTES, Nesting::Twice);
    Fitted { text, cut_for_wire: text.len() < stream.text.len() }
}

fn truncation_note(name: &str, stream: &CapturedStream, fitted: &Fitted<'_>) -> String {
    if fitted.cut_for_wire {
        format!(
            "{name} was cut to its first {} bytes of text (the command wrote {}): it holds characters JSON must \
             escape (control bytes or binary data), and the result stays under {MAX_RESULT_WIRE_BYTES} bytes on the wire",
            fitted.text.len(),
            stream.total_bytes
        )
    } else {
        format!("{name} was cut to its first {MAX_CAPTURED_BYTES} bytes (the command wrote {})", stream.total_bytes)
    }
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::system::request::InvalidRun;

    fn outcome(exit_code: i32, timed_out: bool, stdout: CapturedStream) -> ProcessOutcome {
        let empty = CapturedStream { text: String::new(), total_bytes: 0, truncated: false };
        ProcessOutcome {
            stdout,
            stderr: empty,
            exit_code,
            timed_out,
            duration: Duration::from_millis(12),
            process_limit_exceeded: false,
        }
    }

    fn text(text: &str) -> CapturedStream {
        CapturedStream { text: text.into(), total_bytes: text.len() as u64, truncated: false }
    }

    #[test]
    fn success_needs_exit_zero_and_no_timeout() {
        assert_eq!(
            Value::Object(payload(outcome(0, false, text("hi\n")))),
            json!({"stdout": "hi\n", "stderr": "", "exitCode": 0, "timedOut": false, "success": true, "durationMs": 12})
        );
        assert_eq!(payload(outcome(42, false, text("")))["success"], false);
        assert_eq!(payload(outcome(0, true, text("")))["success"], false);
    }

    #[test]
    fn the_gateway_gets_the_real_node_hosts_keys_and_an_exec_finished_note() {
        let result = payload(outcome(0, false, text("hi\n")));
        assert_eq!(
            gateway_payload(&result),
            json!({"stdout": "hi\n", "stderr": "", "exitCode": 0, "timedOut": false, "success": true, "error": null})
        );
        let request = crate::approvals::RunRequest {
            argv: vec!["echo".into(), "hi there".into()],
            cwd: None,
            raw_command: None,
            agent_id: None,
            session_key: None,
        };
        assert_eq!(
            exec_finished(&request, Some("run-1".into()), &result),
            json!({"sessionKey": "node", "runId": "run-1", "host": "node", "command": "echo \"hi there\"",
                   "exitCode": 0, "timedOut": false, "success": true, "output": "hi", "suppressNotifyOnExit": false})
        );
        let mut long = payload(outcome(1, false, text(&"y".repeat(EXEC_FINISHED_OUTPUT_CHARS + 10))));
        long.insert("stderr".into(), "boom\n".into());
        let note = exec_finished(&request, None, &long);
        let output = note["output"].as_str().unwrap();
        assert_eq!(output.chars().count(), EXEC_FINISHED_OUTPUT_CHARS, "the tail, bounded");
        assert!(output.ends_with("y\nboom"), "stdout then stderr: {}", &output[output.len() - 10..]);
    }

    #[test]
    fn truncation_is_marked_and_explained() {
        let cut = CapturedStream { text: "x".into(), total_bytes: 5_000_000, truncated: true };
        let result = payload(outcome(0, false, cut));
        assert_eq!(result["stdoutTruncated"], true);
        assert!(result.get("stderrTruncated").is_none());
        let note = result["note"].as_str().unwrap();
        assert!(note.contains("stdout") && note.contains("5000000") && note.contains("1048576"), "{note}");
    }

    #[test]
    fn the_gateway_gets_the_v2_denial_text_and_mcp_plain_words_then_it() {
        let denial = Denial::new(DenialCode::ValidationFailed, InvalidRun::MissingCommand.to_string());
        let gateway = denied_to(Caller::Gateway, &denial);
        assert_eq!(gateway.message, "exec-approvals-v2: ValidationFailed (missing-command)");
        for caller in [Caller::Mcp, Caller::GatewayPluginTool] {
            let error = denied_to(caller, &denial);
            assert_eq!(
                error.message,
                "`command` is missing or empty: name the program and its arguments, e.g. [\"uname\", \"-a\"] \
                 (exec-approvals-v2: ValidationFailed (missing-command))"
            );
            assert_eq!(error.code, gateway.code);
        }
    }

    /// Every validation reason has plain words (a new reason stops this from compiling until it
    /// is listed here).
    #[test]
    fn every_validation_reason_and_a_denial_at_the_prompt_have_plain_words() {
        use InvalidRun::*;
        let _every_reason_is_listed = |reason: InvalidRun| match reason {
            CommandArrayRequired
            | MalformedCommand
            | MissingCommand
            | EmptyCommand
            | MalformedCwd
            | EmptyCwd
            | MalformedEnv
            | CustomEnvNotSupported
            | InvalidTimeout
            | RawCommandMismatch
            | MalformedRawCommand => {}
        };
        let reasons = [
            CommandArrayRequired,
            MalformedCommand,
            MissingCommand,
            EmptyCommand,
            MalformedCwd,
            EmptyCwd,
            MalformedEnv,
            CustomEnvNotSupported,
            InvalidTimeout,
            RawCommandMismatch,
            MalformedRawCommand,
        ];
        let denials =
            reasons.iter().map(|reason| Denial::new(DenialCode::ValidationFailed, reason.to_string())).chain([
                Denial::new(DenialCode::UserDenied, "user-denied"),
                Denial::new(DenialCode::UserDenied, "cancelled"),
            ]);
        for denial in denials {
            let explained = denial.explained();
            assert!(explained.len() > denial.to_string().len() + 20, "{explained}");
            assert!(explained.ends_with(&format!(" ({denial})")), "{explained}");
        }
    }
}
