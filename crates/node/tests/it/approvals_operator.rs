//! Authorization when the approver is the gateway's operator: nobody here is asked, a run that
//! needs a person is refused at once, and a forwarded decision counts only for the policy it was
//! given under (the snapshot `system.run.prepare` took).

use crate::approvals_common::Fixture;
use clawmcp_node::approvals::{APPROVAL_STALE, Approver, Decision, DenialCode};
use serde_json::{Value, json};

fn on_miss(fx: &Fixture) -> Value {
    json!({"version": 1, "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny"},
           "agents": {"main": {"allowlist": [{"pattern": fx.exe("tool")}]}}})
}

fn granted(fx: &Fixture, decision: Decision) -> Approver {
    Approver::Granted { decision, snapshot: fx.approvals.current_policy(None).1 }
}

#[tokio::test]
async fn a_run_that_needs_a_person_is_refused_at_once_with_nothing_pending() {
    let fx = Fixture::new();
    fx.write_policy(&on_miss(&fx));
    let denial = fx.authorize_as(&fx.request("other", &[]), &Approver::GatewayOperator).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::ApprovalRequired);
    assert_eq!(denial.event_reason(), "approval-required");
    assert!(denial.reason.starts_with("approval required: "), "{denial}");
    assert!(denial.reason.contains(&fx.exe("other")) && denial.reason.contains("ask=on-miss"), "{denial}");
    assert!(fx.approvals.pending().is_empty(), "no terminal prompt for a gateway call");
    fx.authorize_as(&fx.request("tool", &[]), &Approver::GatewayOperator).await.expect("allowlisted runs");
}

#[tokio::test]
async fn an_operators_decision_runs_it_and_allow_always_records_the_exact_argv() {
    let fx = Fixture::new();
    fx.write_policy(&on_miss(&fx));
    let auth = fx.authorize_as(&fx.request("other", &["x"]), &granted(&fx, Decision::AllowOnce)).await.unwrap();
    assert_eq!(auth.argv, [fx.exe("other").as_str(), "x"]);
    assert_eq!(fx.read_policy()["agents"]["main"]["allowlist"].as_array().unwrap().len(), 1, "once records nothing");

    fx.authorize_as(&fx.request("other", &["x"]), &granted(&fx, Decision::AllowAlways)).await.unwrap();
    let list = fx.read_policy()["agents"]["main"]["allowlist"].clone();
    let recorded = list.as_array().unwrap().iter().find(|entry| entry["pattern"] == fx.exe("other")).unwrap().clone();
    assert_eq!(recorded["source"], "allow-always");
    fx.authorize_as(&fx.request("other", &["x"]), &Approver::GatewayOperator).await.expect("now allowlisted");
    let other_args = fx.authorize_as(&fx.request("other", &["y"]), &Approver::GatewayOperator).await.unwrap_err();
    assert_eq!(other_args.code, DenialCode::ApprovalRequired, "the grant is bound to its arguments");
}

#[tokio::test]
async fn a_decision_for_an_older_policy_is_refused() {
    let fx = Fixture::new();
    fx.write_policy(&on_miss(&fx));
    let approver = granted(&fx, Decision::AllowOnce);
    // The owner tightens the policy while the operator reads the prompt.
    let mut tightened = on_miss(&fx);
    tightened["defaults"]["ask"] = json!("always");
    fx.write_policy(&tightened);
    let denial = fx.authorize_as(&fx.request("other", &[]), &approver).await.unwrap_err();
    assert_eq!((denial.code, denial.reason.as_str()), (DenialCode::ValidationFailed, APPROVAL_STALE));
    assert_eq!(denial.event_reason(), "approval-required", "asking again is the way on");

    // A removed allowlist rule makes it stale too; an added one does not.
    fx.write_policy(&on_miss(&fx));
    let approver = granted(&fx, Decision::AllowOnce);
    let mut grown = on_miss(&fx);
    grown["agents"]["main"]["allowlist"].as_array_mut().unwrap().push(json!({"pattern": "/usr/bin/id"}));
    fx.write_policy(&grown);
    fx.authorize_as(&fx.request("other", &[]), &approver).await.expect("a new rule keeps the approval current");
    let mut shrunk = on_miss(&fx);
    shrunk["agents"]["main"]["allowlist"] = json!([]);
    fx.write_policy(&shrunk);
    let denial = fx.authorize_as(&fx.request("other", &[]), &approver).await.unwrap_err();
    assert_eq!(denial.reason, APPROVAL_STALE);
}

#[tokio::test]
async fn security_deny_wins_over_an_operator() {
    let fx = Fixture::new();
    let mut deny = on_miss(&fx);
    deny["defaults"]["security"] = json!("deny");
    fx.write_policy(&deny);
    let denial = fx.authorize_as(&fx.request("tool", &[]), &granted(&fx, Decision::AllowAlways)).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::SecurityDeny);
    assert_eq!(denial.event_reason(), "security=deny");
}

#[tokio::test]
async fn ask_fallback_applies_this_nodes_fallback() {
    let fx = Fixture::new();
    fx.write_policy(&on_miss(&fx));
    let fallback = Approver::AskFallback { snapshot: fx.approvals.current_policy(None).1 };
    let denial = fx.authorize_as(&fx.request("other", &[]), &fallback).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::UserDenied);
    assert_eq!(denial.reason, "the operator did not decide in time (askFallback=deny)");

    let mut lenient = on_miss(&fx);
    lenient["defaults"]["askFallback"] = json!("allowlist");
    fx.write_policy(&lenient);
    let fallback = Approver::AskFallback { snapshot: fx.approvals.current_policy(None).1 };
    fx.authorize_as(&fx.request("tool", &[]), &fallback).await.expect("allowlisted under askFallback=allowlist");
    let denial = fx.authorize_as(&fx.request("other", &[]), &fallback).await.unwrap_err();
    assert!(denial.reason.contains("askFallback=allowlist and the allowlist does not match"), "{denial}");
}
