//! The `system` capability as a client sees it: the listing (order, schemas, annotations), the
//! "Run system tools" kill switch, `system.run.prepare` and `system.which` over MCP.

use crate::system_support::{Node, payload_of, text_of};
use clawmcp_mcp::CallContext;
use clawmcp_node::system::{RUN_DISABLED, UNAVAILABLE};
use clawmcp_node::{Capability, InvokeRequest};
use serde_json::{Value, json};

const ALL_COMMANDS: [&str; 6] = [
    "system.notify",
    "system.run",
    "system.run.prepare",
    "system.which",
    "system.execApprovals.get",
    "system.execApprovals.set",
];

fn request(command: &str, args: Value) -> InvokeRequest {
    InvokeRequest {
        id: "t".into(),
        command: command.into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: clawmcp_node::Caller::Mcp,
    }
}

#[tokio::test]
async fn commands_are_listed_in_order_with_schemas_and_hints() {
    let node = Node::new();
    assert_eq!(node.tool_names().await, ALL_COMMANDS);
    let listed = node.request(1, "tools/list", json!({})).await;
    let tool = |name: &str| listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();

    let run = tool("system.run");
    assert_eq!(run["inputSchema"]["required"], json!(["command"]));
    assert_eq!(run["inputSchema"]["additionalProperties"], false);
    assert_eq!(run["annotations"]["destructiveHint"], true);
    assert_eq!(run["annotations"]["readOnlyHint"], false);
    assert_eq!(tool("system.run.prepare")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool("system.run.prepare")["inputSchema"], run["inputSchema"]);
    assert_eq!(tool("system.which")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool("system.which")["inputSchema"]["required"], json!(["bins"]));
    for name in ALL_COMMANDS {
        let description = tool(name)["description"].as_str().unwrap().to_string();
        assert!(!description.starts_with("system capability:"), "{name} needs a curated description");
    }
}

#[tokio::test]
async fn the_kill_switch_hides_and_refuses_run_and_re_enabling_restores_them() {
    let node = Node::new();
    let marker = node.scratch().join("ran");
    let touch = json!({"command": ["touch", marker]});

    node.set_run_enabled(false);
    let names = node.tool_names().await;
    assert_eq!(names, ["system.notify", "system.which", "system.execApprovals.get", "system.execApprovals.set"]);
    for command in ["system.run", "system.run.prepare"] {
        let result = node.call(command, touch.clone()).await;
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0]["text"], RUN_DISABLED, "MCP callers learn why, not 'Unknown tool'");
    }
    assert!(!marker.exists(), "a disabled run must not execute");
    // The capability itself refuses too (the gateway path calls it directly).
    for command in ["system.run", "system.run.prepare"] {
        let error = node.capability.invoke(request(command, touch.clone()), CallContext::detached()).await.unwrap_err();
        assert_eq!((error.message.as_str(), error.code), (RUN_DISABLED, Some(UNAVAILABLE)), "the gateway gets a code");
    }
    assert!(!marker.exists());

    node.set_run_enabled(true);
    assert_eq!(node.tool_names().await, ALL_COMMANDS);
    assert_eq!(payload_of(&node.call("system.run", touch).await)["success"], true);
    assert!(marker.exists());
}

#[tokio::test]
async fn prepare_returns_the_plan_and_runs_nothing() {
    let node = Node::new();
    let marker = node.scratch().join("prepared");
    let cwd = node.scratch();
    let args = json!({"command": ["touch", marker], "cwd": cwd, "agentId": "ops"});
    let payload = payload_of(&node.call("system.run.prepare", args).await);
    let marker_text = marker.to_str().unwrap();
    assert_eq!(payload["cmdText"], format!("touch {marker_text}"));
    let mut plan = payload["plan"].clone();
    let snapshot = plan.as_object_mut().unwrap().remove("policySnapshot").expect("the plan carries the policy");
    let touch = plan["argv"][0].as_str().unwrap().to_owned();
    assert!(touch.starts_with('/') && touch.ends_with("/touch"), "the binary that would run: {touch}");
    assert_eq!(
        plan,
        json!({"argv": [touch, marker_text], "cwd": cwd, "commandText": format!("{touch} {marker_text}"),
               "commandPreview": null, "rawCommand": null, "agentId": "ops", "sessionKey": null})
    );
    assert_eq!(payload["execPolicy"]["security"], snapshot["security"], "the policy the node judges by");
    assert!(snapshot["allowlistRules"].is_array());
    assert!(!marker.exists());
}

#[tokio::test]
async fn prepare_needs_no_approval() {
    let node = Node::with_policy(r#"{"version": 1, "defaults": {"security": "deny"}}"#);
    let payload = payload_of(&node.call("system.run.prepare", json!({"command": ["ls"]})).await);
    assert_eq!(payload["cmdText"], "ls");
    let refused = node.call("system.run", json!({"command": ["ls"]})).await;
    assert_eq!(refused["isError"], true);
    assert!(text_of(&refused).starts_with("exec-approvals-v2: "), "{refused}");
}

#[tokio::test]
async fn which_over_mcp() {
    let node = Node::new();
    let payload =
        payload_of(&node.call("system.which", json!({"bins": ["sh", "no-such-program-x9", "/bin/sh"]})).await);
    let bins = payload["bins"].as_object().unwrap();
    assert_eq!(bins.keys().collect::<Vec<_>>(), ["sh"]);
    assert!(bins["sh"].as_str().unwrap().starts_with('/'));
    let result = node.call("system.which", json!({"bins": []})).await;
    assert_eq!((result["isError"].clone(), text_of(&result)), (json!(true), "Missing bins parameter"));
}
