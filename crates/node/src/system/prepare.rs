//! `system.run.prepare`: the plan `system.run` would execute, with nothing executed and nothing
//! asked of the approvals policy.
//!
//! A caller (the gateway before an approval prompt, an MCP client before `system.run`) uses it to
//! show a person exactly what would run: `cmdText` is the caller's `rawCommand` when given (already
//! checked against argv) or this node's shell-quoted rendering of argv.

use clawmcp_mcp::ToolAnnotations;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

use super::request::{self, run_arguments_schema};
use crate::capability::{CommandSpec, InvokeResult};
use crate::command_text::display_command;

pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "system.run.prepare",
        title: Some("Plan a command"),
        output_schema: None,
        description: Some(
            "Dry run of system.run: validates the same arguments and returns the plan \
             {cmdText, plan:{argv, cwd, rawCommand, agentId, sessionKey}} without running anything \
             or consulting exec approvals. cmdText is rawCommand, or argv quoted for a POSIX shell.",
        ),
        input_schema: Some(run_arguments_schema().into()),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

/// Serves `system.run.prepare` (the kill switch is checked by the caller).
pub fn invoke(args: &Map<String, Value>, session_key: Option<String>) -> InvokeResult {
    let run = request::validate(args, session_key).map_err(|reason| format!("Invalid system.run request: {reason}"))?;
    let plan = run.request;
    let cmd_text = plan.raw_command.clone().unwrap_or_else(|| display_command(&plan.argv));
    Ok(json!({
        "cmdText": cmd_text,
        "plan": {
            "argv": plan.argv,
            "cwd": plan.cwd.as_deref().map(|cwd| cwd.to_string_lossy()),
            "rawCommand": plan.raw_command,
            "agentId": plan.agent_id,
            "sessionKey": plan.session_key,
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(args: Value) -> InvokeResult {
        invoke(args.as_object().unwrap(), None)
    }

    #[test]
    fn returns_the_plan_with_quoted_command_text() {
        let payload = prepare(json!({"command": ["echo", "a b"], "cwd": "/tmp", "agentId": "ops"})).unwrap();
        assert_eq!(
            payload,
            json!({
                "cmdText": "echo 'a b'",
                "plan": {"argv": ["echo", "a b"], "cwd": "/tmp", "rawCommand": null, "agentId": "ops", "sessionKey": null}
            })
        );
    }

    #[test]
    fn raw_command_is_the_command_text_when_given() {
        let payload = prepare(json!({"command": ["sh", "-c", "ls | wc -l"], "rawCommand": "ls | wc -l"})).unwrap();
        assert_eq!(payload["cmdText"], "ls | wc -l");
        assert_eq!(payload["plan"]["rawCommand"], "ls | wc -l");
        assert_eq!(payload["plan"]["argv"], json!(["sh", "-c", "ls | wc -l"]), "wrapper argv is kept as given");
    }

    #[test]
    fn the_session_key_comes_from_the_envelope() {
        let payload = invoke(json!({"command": ["ls"]}).as_object().unwrap(), Some("agent:main:main".into())).unwrap();
        assert_eq!(payload["plan"]["sessionKey"], "agent:main:main");
    }

    #[test]
    fn invalid_requests_use_the_prepare_error_text() {
        let error = prepare(json!({"command": "echo hi"})).unwrap_err();
        assert_eq!(error.message, "Invalid system.run request: command-array-required");
        let error = prepare(json!({"command": ["ls"], "env": {"A": "b"}})).unwrap_err();
        assert_eq!(error.message, "Invalid system.run request: custom-env-not-supported");
    }
}
