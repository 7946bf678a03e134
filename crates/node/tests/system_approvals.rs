//! `system.run` and the exec-approvals coordinator: what a human's decision, a cancellation and
//! the "Run system tools" switch do to a command that is waiting for approval.

mod system_support;

use clawmcp_node::Capability;
use clawmcp_node::approvals::Decision;
use clawmcp_node::system::RUN_DISABLED;
use serde_json::json;
use system_support::{Node, context, run_request, single_pending};
use tokio_util::sync::CancellationToken;

/// Every command needs a human decision.
const ASK_ALWAYS: &str = r#"{"version": 1, "defaults": {"security": "full", "ask": "always", "askFallback": "deny"}}"#;

#[tokio::test]
async fn an_approved_command_runs() {
    let node = Node::with_policy(ASK_ALWAYS);
    let cancel = CancellationToken::new();
    let invoke = node.capability.invoke(run_request(json!({"command": ["echo", "approved"]})), context(&cancel));
    let approve = async {
        let id = single_pending(&node.approvals).await;
        node.approvals.resolve(&id, Decision::AllowOnce).unwrap();
    };
    let (result, ()) = tokio::join!(invoke, approve);
    assert_eq!(result.unwrap().payload.unwrap()["stdout"], "approved\n");
}

#[tokio::test]
async fn a_denied_command_does_not_run() {
    let node = Node::with_policy(ASK_ALWAYS);
    let marker = node.scratch().join("ran");
    let cancel = CancellationToken::new();
    let invoke = node.capability.invoke(run_request(json!({"command": ["touch", marker]})), context(&cancel));
    let deny = async {
        let id = single_pending(&node.approvals).await;
        node.approvals.resolve(&id, Decision::Deny).unwrap();
    };
    let (result, ()) = tokio::join!(invoke, deny);
    let error = result.unwrap_err();
    assert_eq!(error.message, "exec-approvals-v2: UserDenied (user-denied)");
    assert_eq!(error.code, Some(clawmcp_node::system::SYSTEM_RUN_DENIED), "the gateway's code for a policy refusal");
    assert!(!marker.exists());
}

#[tokio::test]
async fn switching_run_off_while_a_human_decides_stops_the_launch() {
    let node = Node::with_policy(ASK_ALWAYS);
    let marker = node.scratch().join("ran");
    let cancel = CancellationToken::new();
    let invoke = node.capability.invoke(run_request(json!({"command": ["touch", marker]})), context(&cancel));
    let switch_off_then_approve = async {
        let id = single_pending(&node.approvals).await;
        node.set_run_enabled(false);
        node.approvals.resolve(&id, Decision::AllowOnce).unwrap();
    };
    let (result, ()) = tokio::join!(invoke, switch_off_then_approve);
    assert_eq!(result.unwrap_err().message, RUN_DISABLED);
    assert!(!marker.exists(), "the switch is rechecked after approval, before launch");
}

#[tokio::test]
async fn cancelling_while_waiting_for_approval_withdraws_the_request() {
    let node = Node::with_policy(ASK_ALWAYS);
    let marker = node.scratch().join("ran");
    let cancel = CancellationToken::new();
    let invoke = node.capability.invoke(run_request(json!({"command": ["touch", marker]})), context(&cancel));
    let cancel_while_pending = async {
        single_pending(&node.approvals).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(invoke, cancel_while_pending);
    assert_eq!(result.unwrap_err().message, "cancelled");
    assert!(node.approvals.pending().is_empty(), "a cancelled request no longer waits");
    assert!(!marker.exists());
}
