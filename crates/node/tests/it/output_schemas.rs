//! Every command that publishes an `outputSchema` answers with `structuredContent` that the
//! schema accepts, and the same JSON as its text block (what clients before 2025-06-18 read).
//! Real answers from this machine, validated with an independent JSON Schema implementation.

use std::sync::Arc;

use clawmcp_mcp::{CallContext, McpService};
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::settings::LiveSettings;
use clawmcp_node::{NodeMcpService, Registry};
use serde_json::{Value, json};

/// The arguments each command with an output schema is called with. A command that gains an
/// output schema must be added here (the first test says which).
fn arguments_for(name: &str) -> Option<Value> {
    Some(match name {
        "device.info" => json!({}),
        "device.status" => json!({}),
        // Output on both streams and a non-zero exit: still a successful call.
        "system.run" => json!({"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]}),
        // stt.transcribe is listed only with its model in the data dir (a temp dir here): its
        // real answers are checked against its schema in crates/node/src/stt/tests.rs.
        "stt.status" => json!({}),
        "system.which" => json!({"bins": ["sh", "no-such-program-for-clawmcp"]}),
        "tts.status" => json!({}),
        _ => return None,
    })
}

fn service(dir: &tempfile::TempDir) -> NodeMcpService {
    // A policy that runs system.run without a prompt (this test is about the answer's shape).
    let policy = r#"{"version": 1, "defaults": {"security": "full", "ask": "off"}}"#;
    std::fs::write(dir.path().join("exec-approvals.json"), policy).unwrap();
    let settings = LiveSettings::open(dir.path().join("settings.json")).expect("default settings");
    let approvals = ExecApprovals::open(dir.path().join("exec-approvals.json"));
    NodeMcpService::new(Arc::new(Registry::builtin(Arc::new(settings), Arc::new(approvals))))
}

#[tokio::test]
async fn structured_results_match_their_published_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    let typed: Vec<_> = service.list_tools().into_iter().filter(|tool| tool.output_schema.is_some()).collect();
    let names: Vec<&str> = typed.iter().map(|tool| tool.name.as_str()).collect();
    for expected in ["device.info", "device.status", "system.which", "system.run"] {
        assert!(names.contains(&expected), "{expected} publishes an outputSchema: {names:?}");
    }
    for tool in &typed {
        let arguments = arguments_for(&tool.name)
            .unwrap_or_else(|| panic!("{} publishes an output schema: add its arguments to arguments_for", tool.name));
        let schema = tool.output_schema.as_ref().unwrap().to_value();
        let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: bad schema: {e}", tool.name));
        let result =
            service.call_tool(&tool.name, arguments.as_object().unwrap().clone(), CallContext::detached()).await;
        assert!(!result.is_error, "{}: {:?}", tool.name, result.first_text());
        let structured =
            result.structured_content.clone().unwrap_or_else(|| panic!("{}: no structuredContent", tool.name));
        let problems: Vec<String> = validator.iter_errors(&structured).map(|e| e.to_string()).collect();
        assert!(problems.is_empty(), "{}: {structured} does not match its schema: {problems:?}", tool.name);
        let text: Value = serde_json::from_str(result.first_text().unwrap()).unwrap();
        assert_eq!(text, structured, "{}: the text block and structuredContent differ", tool.name);
    }
}

#[tokio::test]
async fn the_schemas_are_strict_enough_to_catch_a_wrong_shape() {
    let dir = tempfile::tempdir().unwrap();
    let tools = service(&dir).list_tools();
    let schema_of = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        jsonschema::validator_for(&tool.output_schema.as_ref().unwrap().to_value()).unwrap()
    };
    let which = schema_of("system.which");
    assert!(which.is_valid(&json!({"bins": {"sh": "/usr/bin/sh"}})));
    assert!(!which.is_valid(&json!({"bins": {"sh": "usr/bin/sh"}})), "a relative path");
    assert!(!which.is_valid(&json!({"bins": ["/usr/bin/sh"]})), "an array");
    assert!(!which.is_valid(&json!({})), "bins missing");
    let info = schema_of("device.info");
    let mut answer = json!({
        "deviceName": "h", "modelIdentifier": "m", "systemName": "Linux", "systemVersion": "Debian 12",
        "kernelVersion": "6", "appVersion": "0.1.0", "appBuild": "0.1.0", "locale": "en-US", "architecture": "x86_64"
    });
    assert!(info.is_valid(&answer));
    answer.as_object_mut().unwrap().remove("locale");
    assert!(!info.is_valid(&answer), "a field missing");
    answer["locale"] = json!(7);
    assert!(!info.is_valid(&answer), "a field of the wrong type");
    let run = schema_of("system.run");
    let mut answer =
        json!({"stdout": "", "stderr": "", "exitCode": 3, "timedOut": false, "success": false, "durationMs": 4});
    assert!(run.is_valid(&answer));
    answer["stdoutTruncated"] = json!(false);
    assert!(!run.is_valid(&answer), "a truncation mark is only ever true");
    answer.as_object_mut().unwrap().remove("stdoutTruncated");
    answer["exitCode"] = json!(null);
    assert!(!run.is_valid(&answer), "every run has an exit code");
    answer["exitCode"] = json!(0);
    answer["pid"] = json!(7);
    assert!(!run.is_valid(&answer), "no field beyond the published ones");
}
