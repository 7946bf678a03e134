//! `system.run.prepare`: the plan `system.run` would execute, with nothing executed and nobody
//! asked.
//!
//! A caller (the gateway before an approval prompt, an MCP client before `system.run`) uses it to
//! show a person exactly what would run: `cmdText` is the caller's `rawCommand` when given (already
//! checked against argv) or this node's shell-quoted rendering of argv.
//!
//! The rest is the shape the gateway's exec tool reads (upstream's node host answers the same):
//! `plan {argv, cwd, commandText, commandPreview, agentId, sessionKey, policySnapshot}` — the plan
//! an operator approves and the gateway sends back with the decision — `execPolicy {security,
//! ask}`, the policy the agent's runs are judged by now, and `allowAlwaysCoverage`, which this node
//! leaves empty (`complete: false`): "allow always" here records one exact argv, not patterns.
//! `commandText` is argv as the gateway renders it, `commandPreview` the shell script or display
//! text the caller gave when that differs.

use clawmcp_mcp::ToolAnnotations;
use serde_json::json;
use std::sync::LazyLock;

use super::request::{self, run_arguments_schema};
use crate::approvals::{ExecApprovals, resolve};
use crate::capability::{CommandSpec, InvokeRequest, InvokeResult};
use crate::command_text::{display_command, gateway_command};

pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "system.run.prepare",
        title: Some("Plan a command"),
        output_schema: None,
        description: Some(
            "Dry run of system.run: validates the same arguments and returns the plan \
             {cmdText, plan:{argv, cwd, commandText, commandPreview, rawCommand, agentId, sessionKey, \
             policySnapshot}, execPolicy:{security, ask}} without running anything or asking anyone. cmdText is \
             rawCommand, or argv quoted for a POSIX shell.",
        ),
        input_schema: Some(run_arguments_schema().into()),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

/// Serves `system.run.prepare` (the kill switch is checked by the caller).
pub fn invoke(approvals: &ExecApprovals, call: &InvokeRequest) -> InvokeResult {
    let run = request::validate(&call.args, request::session_key(call))
        .map_err(|reason| format!("Invalid system.run request: {reason}"))?;
    let plan = run.request;
    let cmd_text = plan.raw_command.clone().unwrap_or_else(|| display_command(&plan.argv));
    // The operator approves a binary, not a name PATH resolves later: argv[0] becomes the
    // canonical executable the run would launch (as upstream's node host plans it), and the
    // re-invoke carries that argv. An `env NAME=VALUE` wrapper is kept as given.
    let search_path = std::env::var_os("PATH");
    let argv = match resolve::resolve(&plan.argv, plan.cwd.as_deref(), search_path.as_deref()) {
        Ok(resolved) if resolved.env.is_empty() => {
            std::iter::once(resolved.executable_text).chain(resolved.args).collect::<Vec<_>>()
        }
        Ok(_) => plan.argv.clone(),
        Err(reason) => return Err(format!("Invalid system.run request: {reason}").into()),
    };
    let command_text = gateway_command(&argv);
    let preview = plan.raw_command.clone().filter(|raw| *raw != command_text);
    let (policy, snapshot) = approvals.current_policy(plan.agent_id.as_deref());
    Ok(json!({
        "cmdText": cmd_text,
        "plan": {
            "argv": argv,
            "cwd": plan.cwd.as_deref().map(|cwd| cwd.to_string_lossy()),
            "commandText": command_text,
            "commandPreview": preview,
            "rawCommand": plan.raw_command,
            "agentId": plan.agent_id,
            "sessionKey": plan.session_key,
            "policySnapshot": snapshot.to_json(),
        },
        "execPolicy": {"security": policy.security.as_str(), "ask": policy.ask.as_str()},
        "allowAlwaysCoverage": {"complete": false, "patterns": []},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    use crate::capability::Caller;

    fn call(args: Value, session_key: Option<&str>, caller: Caller) -> InvokeRequest {
        InvokeRequest {
            id: "t".into(),
            command: "system.run.prepare".into(),
            args: args.as_object().unwrap().clone(),
            session_key: session_key.map(String::from),
            caller,
        }
    }

    /// Prepares `args` over MCP against the built-in policy (no approvals file).
    fn prepare(args: Value) -> InvokeResult {
        let dir = tempfile::tempdir().unwrap();
        invoke(&ExecApprovals::open(dir.path().join("exec-approvals.json")), &call(args, None, Caller::Mcp))
    }

    /// The canonical path of `program` on PATH, as the plan names it.
    fn on_path(program: &str) -> String {
        let path = std::env::var_os("PATH").unwrap();
        let found = std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| candidate.is_file());
        std::fs::canonicalize(found.unwrap()).unwrap().to_str().unwrap().to_owned()
    }

    #[test]
    fn returns_the_plan_with_quoted_command_text_and_the_policy_it_is_judged_by() {
        let payload = prepare(json!({"command": ["echo", "a b"], "cwd": "/tmp", "agentId": "ops"})).unwrap();
        let echo = on_path("echo");
        assert_eq!(
            payload,
            json!({
                "cmdText": "echo 'a b'",
                "plan": {"argv": [echo, "a b"], "cwd": "/tmp", "commandText": format!("{echo} \"a b\""), "commandPreview": null,
                         "rawCommand": null, "agentId": "ops", "sessionKey": null,
                         "policySnapshot": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny",
                                            "autoAllowSkills": false, "allowlistRules": []}},
                "execPolicy": {"security": "allowlist", "ask": "on-miss"},
                "allowAlwaysCoverage": {"complete": false, "patterns": []},
            })
        );
    }

    #[test]
    fn raw_command_is_the_command_text_when_given() {
        let payload = prepare(json!({"command": ["sh", "-c", "ls | wc -l"], "rawCommand": "ls | wc -l"})).unwrap();
        assert_eq!(payload["cmdText"], "ls | wc -l");
        assert_eq!(payload["plan"]["rawCommand"], "ls | wc -l");
        let sh = on_path("sh");
        assert_eq!(
            payload["plan"]["commandText"],
            format!("{sh} -c \"ls | wc -l\""),
            "the gateway's rendering of argv"
        );
        assert_eq!(payload["plan"]["commandPreview"], "ls | wc -l", "what the person reads");
        assert_eq!(
            payload["plan"]["argv"],
            json!([sh, "-c", "ls | wc -l"]),
            "the binary that would run, then argv as given"
        );
    }

    #[test]
    fn the_session_key_comes_from_the_envelope_or_the_gateways_params() {
        let dir = tempfile::tempdir().unwrap();
        let approvals = ExecApprovals::open(dir.path().join("exec-approvals.json"));
        let session = |args: Value, envelope: Option<&str>, caller| {
            invoke(&approvals, &call(args, envelope, caller)).unwrap()["plan"]["sessionKey"].clone()
        };
        assert_eq!(session(json!({"command": ["ls"]}), Some("agent:main:main"), Caller::Gateway), "agent:main:main");
        let named = json!({"command": ["ls"], "sessionKey": "agent:ops:main"});
        assert_eq!(session(named.clone(), None, Caller::Gateway), "agent:ops:main", "where the exec tool puts it");
        assert_eq!(session(named, None, Caller::Mcp), Value::Null, "an MCP client names no session");
    }

    #[test]
    fn an_env_wrapper_is_planned_as_given_and_an_unknown_program_is_refused() {
        let payload = prepare(json!({"command": ["env", "A=1", "echo", "hi"]})).unwrap();
        assert_eq!(payload["plan"]["argv"], json!(["env", "A=1", "echo", "hi"]));
        let error = prepare(json!({"command": ["no-such-program-clawmcp"]})).unwrap_err();
        assert!(
            error.message.starts_with("Invalid system.run request: ")
                && error.message.contains("no-such-program-clawmcp"),
            "{}",
            error.message
        );
    }

    #[test]
    fn invalid_requests_use_the_prepare_error_text() {
        let error = prepare(json!({"command": "echo hi"})).unwrap_err();
        assert_eq!(error.message, "Invalid system.run request: command-array-required");
        let error = prepare(json!({"command": ["ls"], "env": {"A": "b"}})).unwrap_err();
        assert_eq!(error.message, "Invalid system.run request: custom-env-not-supported");
    }
}
