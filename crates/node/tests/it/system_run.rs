//! `system.run` end to end: through the MCP dispatcher for wire shapes, through
//! `Capability::invoke` where a test needs to hold the future (cancellation, drop).

use std::time::Duration;

use crate::system_support::{
    Node, context, payload_of, pid_is_dead, pids_in, run_request, text_of, tree_pids, tree_script, wait_until_dead,
};
use clawmcp_mcp::ProtocolVersion;
use clawmcp_node::Capability;
use clawmcp_node::system::{MAX_CAPTURED_BYTES, MAX_RESULT_WIRE_BYTES};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn echo_round_trip() {
    let node = Node::new();
    let result = node.call("system.run", json!({"command": ["echo", "hello", "world"]})).await;
    let payload = payload_of(&result);
    assert_eq!(payload["stdout"], "hello world\n");
    assert_eq!(payload["stderr"], "");
    assert_eq!(payload["exitCode"], 0);
    assert_eq!(payload["timedOut"], false);
    assert_eq!(payload["success"], true);
    assert!(payload["durationMs"].is_u64());
    let keys: Vec<&str> = payload.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["stdout", "stderr", "exitCode", "timedOut", "success", "durationMs"]);
}

#[tokio::test]
async fn a_nonzero_exit_is_a_successful_call() {
    let node = Node::new();
    let result = node.call("system.run", json!({"command": ["sh", "-c", "echo oops >&2; exit 42"]})).await;
    assert_eq!(result["isError"], false, "a command that ran is not a tool error");
    let payload = payload_of(&result);
    assert_eq!((payload["exitCode"].clone(), payload["success"].clone()), (json!(42), json!(false)));
    assert_eq!(payload["stderr"], "oops\n");
    assert_eq!(payload["stdout"], "");
}

#[tokio::test]
async fn argv_is_passed_verbatim_without_a_shell() {
    let node = Node::new();
    let args = ["a b", "\"double\"", "it's", "$HOME", "*", "", "semi;colon"];
    let mut command = vec!["printf", "[%s]\n"];
    command.extend(args);
    let payload = payload_of(&node.call("system.run", json!({"command": command})).await);
    let expected: String = args.iter().map(|arg| format!("[{arg}]\n")).collect();
    assert_eq!(payload["stdout"], expected);
}

#[tokio::test]
async fn cwd_is_honoured() {
    let node = Node::new();
    let cwd = node.scratch().canonicalize().unwrap();
    let payload = payload_of(&node.call("system.run", json!({"command": ["pwd", "-P"], "cwd": cwd})).await);
    assert_eq!(payload["stdout"].as_str().unwrap().trim_end(), cwd.to_str().unwrap());
}

#[tokio::test]
async fn a_missing_program_or_cwd_is_a_tool_error_that_says_what_to_check() {
    let node = Node::new();
    let result = node.call("system.run", json!({"command": ["no-such-program-x9"]})).await;
    assert_eq!(result["isError"], true);
    assert!(text_of(&result).starts_with("exec-approvals-v2: ResolutionFailed ("), "{result}");
    let result = node.call("system.run", json!({"command": ["ls"], "cwd": "/no/such/dir"})).await;
    assert_eq!(result["isError"], true);
    assert!(text_of(&result).contains("cwd `/no/such/dir` is not an existing directory"), "{result}");
}

#[tokio::test]
async fn non_utf8_output_is_decoded_lossily() {
    let node = Node::new();
    let payload = payload_of(&node.call("system.run", json!({"command": ["printf", "\\377\\376ok"]})).await);
    assert_eq!(payload["stdout"], "\u{fffd}\u{fffd}ok");
}

#[tokio::test]
async fn large_stdout_is_truncated_and_the_child_still_finishes() {
    let node = Node::new();
    let total = 3 * MAX_CAPTURED_BYTES;
    let script = format!("head -c {total} /dev/zero | tr '\\0' x; echo done >&2");
    let payload = payload_of(&node.call("system.run", json!({"command": ["sh", "-c", script]})).await);
    assert_eq!(payload["timedOut"], false);
    assert_eq!(payload["success"], true);
    assert_eq!(payload["stderr"], "done\n", "stderr is captured separately and completely");
    assert_eq!(payload["stdout"].as_str().unwrap().len(), MAX_CAPTURED_BYTES);
    assert_eq!(payload["stdoutTruncated"], true);
    assert!(payload.get("stderrTruncated").is_none());
    assert!(payload["note"].as_str().unwrap().contains(&total.to_string()), "{}", payload["note"]);
}

/// Output JSON must escape (NUL is `\\u0000` twice over: 7 bytes each) is bounded where it
/// counts, on the wire: the whole response frame, both streams full, stays under 4 MiB.
#[tokio::test]
async fn escaped_output_stays_under_the_wire_bound_and_is_marked() {
    let node = Node::new();
    let script = format!("head -c {MAX_CAPTURED_BYTES} /dev/zero; head -c {MAX_CAPTURED_BYTES} /dev/zero >&2");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "system.run", "arguments": {"command": ["sh", "-c", script]}}});
    let frame = node.raw_request(&body).await;
    assert!(frame.len() <= MAX_RESULT_WIRE_BYTES, "a {} byte frame", frame.len());
    assert!(frame.len() > MAX_RESULT_WIRE_BYTES / 2, "both streams kept as much as fits: {} bytes", frame.len());
    let result = serde_json::from_str::<serde_json::Value>(&frame).unwrap()["result"].clone();
    let payload = payload_of(&result);
    for stream in ["stdout", "stderr"] {
        let text = payload[stream].as_str().unwrap();
        assert!(!text.is_empty() && text.bytes().all(|b| b == 0), "{stream} keeps a prefix of what was written");
        assert_eq!(payload[format!("{stream}Truncated")], true);
    }
    let note = payload["note"].as_str().unwrap();
    assert!(note.contains("escape") && note.contains(&MAX_CAPTURED_BYTES.to_string()), "{note}");

    // A client of 2025-06-18 or later also gets the payload as structuredContent: the same
    // streams, encoded once more. Each rendering keeps to the bound, the frame to twice it (under
    // the core's 8 MiB result backstop, so it is sent, not replaced by an error).
    let frame = node.raw_request_at(&body, Some(ProtocolVersion::V2025_06_18)).await;
    assert!(frame.len() <= 2 * MAX_RESULT_WIRE_BYTES, "a {} byte frame", frame.len());
    assert!(frame.len() <= clawmcp_mcp::server::MAX_TOOL_RESULT_BYTES);
    let result = serde_json::from_str::<serde_json::Value>(&frame).unwrap()["result"].clone();
    let structured = &result["structuredContent"];
    assert_eq!(structured, &payload_of(&result), "structuredContent is the text block's JSON");
    assert!(serde_json::to_string(structured).unwrap().len() <= MAX_RESULT_WIRE_BYTES);
    assert_eq!(structured["stdoutTruncated"], true);

    // Plain text at the capture bound is not cut again.
    let plain = format!("head -c {MAX_CAPTURED_BYTES} /dev/zero | tr '\\0' x");
    let payload = payload_of(&node.call("system.run", json!({"command": ["sh", "-c", plain]})).await);
    assert_eq!(payload["stdout"].as_str().unwrap().len(), MAX_CAPTURED_BYTES);
    assert!(payload.get("stdoutTruncated").is_none());
}

#[tokio::test]
async fn timeout_kills_the_whole_tree() {
    let node = Node::new();
    let pid_file = node.scratch().join("pids");
    let args = json!({"command": ["sh", "-c", tree_script(&pid_file)], "timeoutMs": 300});
    let payload = payload_of(&node.call("system.run", args).await);
    assert_eq!(payload["timedOut"], true);
    assert_eq!(payload["success"], false);
    let pids = pids_in(&std::fs::read_to_string(&pid_file).unwrap());
    assert_eq!(pids.len(), 3);
    for pid in pids {
        assert!(pid_is_dead(pid), "pid {pid} outlived the timeout");
    }
}

#[tokio::test]
async fn the_timeout_alias_applies() {
    let node = Node::new();
    let payload = payload_of(&node.call("system.run", json!({"command": ["sleep", "1000"], "timeout": 100})).await);
    assert_eq!(payload["timedOut"], true);
}

#[tokio::test]
async fn cancellation_kills_the_tree_before_invoke_returns() {
    let node = Node::new();
    let pid_file = node.scratch().join("pids");
    let cancel = CancellationToken::new();
    let invoke =
        node.capability.invoke(run_request(json!({"command": ["sh", "-c", tree_script(&pid_file)]})), context(&cancel));
    let trigger = async {
        let pids = tree_pids(&pid_file).await;
        cancel.cancel();
        pids
    };
    let (result, pids) = tokio::join!(invoke, trigger);
    assert_eq!(result.unwrap_err().message, "cancelled");
    for pid in pids {
        assert!(pid_is_dead(pid), "pid {pid} still ran when invoke returned");
    }
}

#[tokio::test]
async fn dropping_the_invoke_future_kills_the_tree() {
    let node = Node::new();
    let pid_file = node.scratch().join("pids");
    let cancel = CancellationToken::new();
    let mut invoke =
        node.capability.invoke(run_request(json!({"command": ["sh", "-c", tree_script(&pid_file)]})), context(&cancel));
    let pids = tokio::select! {
        result = &mut invoke => panic!("the run ended by itself: {result:?}"),
        pids = tree_pids(&pid_file) => pids,
    };
    drop(invoke);
    wait_until_dead(&pids).await;
}

#[tokio::test]
async fn client_cancellation_over_mcp_stops_the_tree_before_the_reply() {
    let node = Node::new();
    let pid_file = node.scratch().join("pids");
    let call = node.request(
        77,
        "tools/call",
        json!({"name": "system.run", "arguments": {"command": ["sh", "-c", tree_script(&pid_file)]}}),
    );
    let cancel = async {
        let pids = tree_pids(&pid_file).await;
        node.notify("notifications/cancelled", json!({"requestId": 77})).await;
        pids
    };
    let (result, pids) = tokio::join!(call, cancel);
    assert_eq!((result["isError"].clone(), text_of(&result)), (json!(true), "cancelled"));
    for pid in pids {
        assert!(pid_is_dead(pid), "pid {pid} still ran when the reply was sent");
    }
}

#[tokio::test(start_paused = true)]
async fn the_default_timeout_is_thirty_seconds() {
    // Paused clock: the runtime jumps to the next timer whenever it is idle, so this takes no real
    // time. The timer cannot fire early, so the virtual elapsed time is a lower bound.
    let node = Node::new();
    let started = tokio::time::Instant::now();
    let payload = payload_of(&node.call("system.run", json!({"command": ["sleep", "1000"]})).await);
    assert_eq!(payload["timedOut"], true);
    assert!(started.elapsed() >= Duration::from_millis(30_000), "{:?}", started.elapsed());
}

#[tokio::test(start_paused = true)]
async fn timeouts_above_ten_minutes_are_clamped() {
    let node = Node::new();
    let started = tokio::time::Instant::now();
    let payload =
        payload_of(&node.call("system.run", json!({"command": ["sleep", "100000"], "timeoutMs": 3_600_000})).await);
    assert_eq!(payload["timedOut"], true);
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(600) && elapsed < Duration::from_secs(3600), "{elapsed:?}");
}

/// Over MCP, arguments of the wrong shape (a type the input schema does not allow, `command`
/// missing) are refused before the command runs, naming the argument and what it must be; values
/// of the right shape that upstream refuses keep upstream's reason. The gateway gets upstream's
/// reason for both (`node_gateway` tests).
#[tokio::test]
async fn every_validation_reason_reaches_the_caller() {
    let node = Node::new();
    let shape = [
        (json!({"command": "ls"}), "`command` must be an array of strings, not \"ls\""),
        (json!({"command": [1]}), "`command[0]` must be a string, not 1"),
        (json!({}), "`command` is required"),
        (json!({"command": ["ls"], "cwd": 1}), "`cwd` must be a string, not 1"),
        (json!({"command": ["ls"], "env": "A=b"}), "`env` must be an object, not \"A=b\""),
        (json!({"command": ["ls"], "rawCommand": ["ls"]}), "`rawCommand` must be a string"),
    ];
    for (args, problem) in shape {
        for command in ["system.run", "system.run.prepare"] {
            let result = node.call(command, args.clone()).await;
            assert_eq!(result["isError"], true, "{args}");
            let text = text_of(&result);
            assert!(text.starts_with(&format!("Invalid arguments for {command}: {problem}")), "{args}: {text}");
        }
    }
    let values = [
        (json!({"command": [""]}), "empty-command"),
        (json!({"command": ["ls"], "cwd": ""}), "empty-cwd"),
        (json!({"command": ["ls"], "env": {"A": "b"}}), "custom-env-not-supported"),
        (json!({"command": ["ls"], "timeoutMs": 0}), "invalid-timeout"),
        (json!({"command": ["ls"], "rawCommand": "rm -rf /"}), "raw-command-mismatch"),
    ];
    for (args, reason) in values {
        let result = node.call("system.run", args.clone()).await;
        assert_eq!(result["isError"], true, "{args}");
        let text = text_of(&result);
        // Plain words first, then upstream's text (the gateway gets that alone: node_gateway tests).
        assert!(text.ends_with(&format!(" (exec-approvals-v2: ValidationFailed ({reason}))")), "{args}: {text}");
        assert!(text.len() > 60 && text.starts_with('`'), "{args}: {text}");
        let result = node.call("system.run.prepare", args.clone()).await;
        assert_eq!(text_of(&result), format!("Invalid system.run request: {reason}"), "{args}");
    }
}

#[tokio::test]
async fn an_accepted_raw_command_runs_its_argv() {
    let node = Node::new();
    let args = json!({"command": ["sh", "-c", "echo carried"], "rawCommand": "echo carried"});
    assert_eq!(payload_of(&node.call("system.run", args).await)["stdout"], "carried\n");
    let args = json!({"command": ["echo", "a b"], "rawCommand": "echo \"a b\""});
    assert_eq!(payload_of(&node.call("system.run", args).await)["stdout"], "a b\n");
}
