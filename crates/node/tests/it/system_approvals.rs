//! `system.run` and the exec-approvals coordinator: what a human's decision, a cancellation and
//! the "Run system tools" switch do to a command that is waiting for approval.

use crate::system_support::{Node, context, run_request, single_pending};
use clawmcp_node::Capability;
use clawmcp_node::approvals::Decision;
use clawmcp_node::system::RUN_DISABLED;
use serde_json::json;
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
    assert!(
        error.message.starts_with("The command did not run: it was denied at the approval prompt."),
        "{}",
        error.message
    );
    assert!(
        error.message.ends_with(" (exec-approvals-v2: UserDenied (user-denied))"),
        "upstream's text follows: {}",
        error.message
    );
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

/// Collects the progress notifications a call sends.
struct Recorded(std::sync::Mutex<Vec<serde_json::Value>>);

impl clawmcp_mcp::FrameSink for Recorded {
    fn try_send(&self, frame: String) -> bool {
        self.0.lock().unwrap().push(serde_json::from_str(&frame).unwrap());
        true
    }
}

fn notes_of(sink: &Recorded) -> Vec<(f64, String)> {
    sink.0
        .lock()
        .unwrap()
        .iter()
        .map(|frame| {
            assert_eq!(frame["method"], "notifications/progress");
            assert_eq!(frame["params"]["progressToken"], "tok");
            (frame["params"]["progress"].as_f64().unwrap(), frame["params"]["message"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn assert_waiting_note(message: &str, id: &str) {
    let expected = format!("waiting for approval {id}: run `clawmcp approvals allow-once {id}` (or `deny {id}`);");
    assert!(message.starts_with(&expected) && message.ends_with("s left, then askFallback decides"), "{message}");
}

#[tokio::test]
async fn a_run_waiting_for_a_person_says_so_to_the_caller() {
    let node = Node::with_policy(ASK_ALWAYS);
    let cancel = CancellationToken::new();
    let sink = std::sync::Arc::new(Recorded(std::sync::Mutex::new(Vec::new())));
    let progress = clawmcp_mcp::Progress::new(json!("tok"), sink.clone());
    let ctx = clawmcp_mcp::CallContext { cancel: cancel.clone(), progress: Some(progress), meta: None, request: None };
    let invoke = node.capability.invoke(run_request(json!({"command": ["echo", "seen"]})), ctx);
    let approve = async {
        let id = single_pending(&node.approvals).await;
        node.approvals.resolve(&id, Decision::AllowOnce).unwrap();
        id
    };
    let (result, id) = tokio::join!(invoke, approve);
    assert_eq!(result.unwrap().payload.unwrap()["stdout"], "seen\n");
    let notes = notes_of(&sink);
    assert!(!notes.is_empty(), "the caller heard nothing while the run waited");
    assert_waiting_note(&notes[0].1, &id);
}

#[tokio::test(start_paused = true)]
async fn the_wait_is_repeated_until_it_is_answered() {
    let node = Node::with_policy(ASK_ALWAYS);
    let cancel = CancellationToken::new();
    let noted = std::sync::Mutex::new(Vec::new());
    let on_wait = |message: &str| noted.lock().unwrap().push(message.to_owned());
    let request = clawmcp_node::approvals::RunRequest {
        argv: vec!["echo".into(), "x".into()],
        ..clawmcp_node::approvals::RunRequest::default()
    };
    let decide = async {
        let id = single_pending(&node.approvals).await;
        // Two more notes while nobody answers (one every WAIT_NOTE_INTERVAL), then the answer.
        tokio::time::sleep(clawmcp_node::approvals::WAIT_NOTE_INTERVAL * 2 + std::time::Duration::from_millis(10))
            .await;
        node.approvals.resolve(&id, Decision::Deny).unwrap();
        id
    };
    let approver = clawmcp_node::approvals::Approver::Terminal;
    let (answer, id) = tokio::join!(node.approvals.authorize_with(&request, &approver, &cancel, &on_wait), decide);
    assert!(answer.is_err(), "denied");
    let noted = noted.into_inner().unwrap();
    assert_eq!(noted.len(), 3, "at once, then every WAIT_NOTE_INTERVAL: {noted:?}");
    for message in &noted {
        assert_waiting_note(message, &id);
    }
}
