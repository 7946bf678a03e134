//! Who may approve a `system.run`, from the caller and the approval fields the call carries.
//!
//! The OpenClaw gateway's exec tool runs a command that needs a person in three steps:
//! `system.run.prepare` (the plan and a [`PolicySnapshot`]), an operator's decision
//! (`exec.approval.request` / `exec.approval.resolve`), then `system.run` again with
//! `approved: true`, `approvalDecision` and `systemRunPlan`. The gateway forwards those fields only
//! when the call's `runId` matches an approval record an operator resolved for this node, so on
//! the gateway's own `node.invoke` they are the operator's word. From anyone else (an MCP client,
//! a gateway agent's plugin-tool call) they would be the agent approving itself, and are refused.
//!
//! A forwarded approval counts only for the plan it was given for: argv, `cwd`, agent and
//! session must be the prepared plan's, and the plan's snapshot must still describe this node's
//! policy (checked in [`crate::approvals::ExecApprovals::authorize`]). Upstream's node host has the
//! same rules and messages.

use serde_json::{Map, Value};

use super::request::ValidRun;
use crate::approvals::{Approver, Decision, PolicySnapshot};
use crate::capability::{Caller, CapabilityError};
use crate::command_text::gateway_command;

/// The fields only the gateway may send.
pub const APPROVAL_FIELDS: [&str; 3] = ["approved", "approvalDecision", "approvalSource"];

/// The approver of `run`, sent by `caller` with `args`.
pub fn approver(caller: Caller, args: &Map<String, Value>, run: &ValidRun) -> Result<Approver, CapabilityError> {
    let present = |key: &str| args.get(key).is_some_and(|value| !value.is_null());
    match caller {
        Caller::Gateway => gateway_approver(args, run),
        Caller::Mcp | Caller::GatewayPluginTool => match APPROVAL_FIELDS.iter().find(|key| present(key)) {
            Some(key) => Err(CapabilityError::invalid_request(format!(
                "{key} is set by an OpenClaw gateway after its operator approves the command; a caller cannot \
                 approve its own command. Remove {key}: this node's exec-approval policy decides, and when it asks, \
                 a person answers with `clawmcp approvals`."
            ))),
            None => Ok(Approver::Terminal),
        },
    }
}

fn gateway_approver(args: &Map<String, Value>, run: &ValidRun) -> Result<Approver, CapabilityError> {
    let approved = args.get("approved") == Some(&Value::Bool(true));
    // Upstream reads any other value as "no decision".
    let decision = match args.get("approvalDecision").and_then(Value::as_str) {
        Some("allow-once") => Some(Decision::AllowOnce),
        Some("allow-always") => Some(Decision::AllowAlways),
        _ => None,
    };
    let explicit = approved || decision.is_some();
    let fallback = match args.get("approvalSource") {
        None | Some(Value::Null) => false,
        Some(Value::String(source)) if source == "ask-fallback" => true,
        Some(Value::String(source)) if source == "auto-review" => {
            return Err(CapabilityError::invalid_request(
                "approvalSource auto-review is not accepted by this node: a model's review is not an operator's \
                 approval. Ask an operator (exec.approval.resolve) instead.",
            ));
        }
        Some(_) => {
            return Err(CapabilityError::invalid_request(
                "approvalSource CapabilityError::invalid_request (expected ask-fallback)",
            ));
        }
    };
    if fallback && (args.contains_key("approved") || args.contains_key("approvalDecision")) {
        return Err(CapabilityError::invalid_request("approvalSource cannot be combined with explicit approval"));
    }
    if !explicit && !fallback {
        return Ok(Approver::GatewayOperator);
    }
    let what = if fallback { "approvalSource" } else { "explicit approval" };
    let plan = args.get("systemRunPlan").and_then(Value::as_object);
    let Some(plan) = plan else {
        return Err(CapabilityError::invalid_request(format!(
            "{what} requires matching systemRunPlan (none was sent)"
        )));
    };
    if let Some(field) = plan_mismatch(plan, run) {
        return Err(CapabilityError::invalid_request(format!(
            "{what} requires matching systemRunPlan ({field} differs from the prepared plan)"
        )));
    }
    let snapshot = match plan.get("policySnapshot") {
        None | Some(Value::Null) => {
            return Err(CapabilityError::invalid_request(
                "delayed approval requires a prepared policy snapshot (plan.policySnapshot from system.run.prepare)",
            ));
        }
        Some(value) => PolicySnapshot::parse(value).map_err(|reason| {
            CapabilityError::invalid_request(format!("systemRunPlan CapabilityError::invalid_request: {reason}"))
        })?,
    };
    Ok(match fallback {
        true => Approver::AskFallback { snapshot },
        false => Approver::Granted { decision: decision.unwrap_or(Decision::AllowOnce), snapshot },
    })
}

/// The first plan field that does not describe `run`, as upstream compares them.
fn plan_mismatch(plan: &Map<String, Value>, run: &ValidRun) -> Option<&'static str> {
    let request = &run.request;
    let text = |key: &str| plan.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
    let argv: Option<Vec<&str>> =
        plan.get("argv").and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).collect());
    if argv.as_deref() != Some(&request.argv.iter().map(String::as_str).collect::<Vec<_>>()[..]) {
        return Some("argv");
    }
    let command_text = text("commandText").or_else(|| text("rawCommand"));
    if command_text != Some(gateway_command(&request.argv).as_str()) {
        return Some("commandText");
    }
    let cwd = request.cwd.as_deref().and_then(|cwd| cwd.to_str()).map(str::trim).filter(|cwd| !cwd.is_empty());
    if text("cwd") != cwd {
        return Some("cwd");
    }
    let agent = request.agent_id.as_deref().map(str::trim).filter(|id| !id.is_empty());
    if text("agentId") != agent {
        return Some("agentId");
    }
    let session = request.session_key.as_deref().map(str::trim).filter(|key| !key.is_empty());
    if text("sessionKey") != session {
        return Some("sessionKey");
    }
    None
}

#[cfg(test)]
mod tests {
    use clawmcp_mcp::tool::codes::INVALID_REQUEST;
    use serde_json::json;

    use super::*;
    use crate::approvals::model::{EffectivePolicy, Policy};
    use crate::system::request::validate;

    fn snapshot() -> Value {
        PolicySnapshot::of(&EffectivePolicy { agent_id: "main".into(), policy: Policy::DEFAULT, allowlist: Vec::new() })
            .to_json()
    }

    fn plan() -> Value {
        json!({"argv": ["echo", "hi there"], "commandText": "echo \"hi there\"", "cwd": "/tmp", "agentId": null,
               "sessionKey": "agent:main:main", "policySnapshot": snapshot()})
    }

    fn judged(caller: Caller, args: Value) -> Result<Approver, CapabilityError> {
        let args = args.as_object().unwrap().clone();
        let run = validate(&args, Some("agent:main:main".into())).unwrap();
        approver(caller, &args, &run)
    }

    fn run_args(extra: Value) -> Value {
        let mut args = json!({"command": ["echo", "hi there"], "cwd": "/tmp"});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        args
    }

    #[test]
    fn plain_calls_ask_the_callers_approver() {
        assert_eq!(judged(Caller::Mcp, run_args(json!({}))).unwrap(), Approver::Terminal);
        assert_eq!(judged(Caller::Gateway, run_args(json!({}))).unwrap(), Approver::GatewayOperator);
        assert_eq!(
            judged(Caller::Gateway, run_args(json!({"approved": false, "systemRunPlan": plan()}))).unwrap(),
            Approver::GatewayOperator,
            "approved:false and a plan alone approve nothing"
        );
    }

    #[test]
    fn only_the_gateway_may_carry_an_approval() {
        for caller in [Caller::Mcp, Caller::GatewayPluginTool] {
            for field in APPROVAL_FIELDS {
                let error =
                    judged(caller, run_args(json!({(field): "allow-once", "systemRunPlan": plan()}))).unwrap_err();
                assert_eq!(error.code, Some(INVALID_REQUEST));
                assert!(
                    error.message.starts_with(&format!("{field} is set by an OpenClaw gateway")),
                    "{}",
                    error.message
                );
                assert!(error.message.contains("clawmcp approvals"));
            }
        }
    }

    #[test]
    fn a_forwarded_decision_is_granted_with_its_snapshot() {
        let granted = judged(
            Caller::Gateway,
            run_args(json!({"approved": true, "approvalDecision": "allow-always", "systemRunPlan": plan()})),
        )
        .unwrap();
        let expected = PolicySnapshot::parse(&snapshot()).unwrap();
        assert_eq!(granted, Approver::Granted { decision: Decision::AllowAlways, snapshot: expected.clone() });
        let once = judged(Caller::Gateway, run_args(json!({"approved": true, "systemRunPlan": plan()}))).unwrap();
        assert_eq!(once, Approver::Granted { decision: Decision::AllowOnce, snapshot: expected.clone() });
        let fallback =
            judged(Caller::Gateway, run_args(json!({"approvalSource": "ask-fallback", "systemRunPlan": plan()})))
                .unwrap();
        assert_eq!(fallback, Approver::AskFallback { snapshot: expected });
    }

    #[test]
    fn the_plan_must_be_the_prepared_one() {
        let cases = [
            ("argv", json!(["echo", "hi"])),
            ("commandText", json!("echo hi there")),
            ("cwd", json!("/var")),
            ("agentId", json!("ops")),
            ("sessionKey", json!("agent:other:main")),
        ];
        for (field, value) in cases {
            let mut plan = plan();
            plan[field] = value;
            let error =
                judged(Caller::Gateway, run_args(json!({"approved": true, "systemRunPlan": plan}))).unwrap_err();
            assert_eq!(error.code, Some(INVALID_REQUEST));
            assert_eq!(
                error.message,
                format!("explicit approval requires matching systemRunPlan ({field} differs from the prepared plan)")
            );
        }
        let error = judged(Caller::Gateway, run_args(json!({"approved": true}))).unwrap_err();
        assert!(error.message.contains("none was sent"), "{}", error.message);
        let mut plan = plan();
        plan.as_object_mut().unwrap().remove("policySnapshot");
        let error = judged(Caller::Gateway, run_args(json!({"approved": true, "systemRunPlan": plan}))).unwrap_err();
        assert!(error.message.starts_with("delayed approval requires a prepared policy snapshot"), "{}", error.message);
    }

    #[test]
    fn approval_sources_are_checked() {
        let error =
            judged(Caller::Gateway, run_args(json!({"approvalSource": "auto-review", "systemRunPlan": plan()})))
                .unwrap_err();
        assert!(error.message.contains("not an operator's approval"), "{}", error.message);
        let error = judged(
            Caller::Gateway,
            run_args(json!({"approvalSource": "ask-fallback", "approved": true, "systemRunPlan": plan()})),
        )
        .unwrap_err();
        assert_eq!(error.message, "approvalSource cannot be combined with explicit approval");
        let error = judged(Caller::Gateway, run_args(json!({"approvalSource": "whatever"}))).unwrap_err();
        assert_eq!(error.message, "approvalSource CapabilityError::invalid_request (expected ask-fallback)");
    }
}
