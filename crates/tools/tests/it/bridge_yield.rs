//! `sessions_spawn` capture and `sessions_yield` against the fake gateway: records survive
//! concurrent spawns (one process and two), a yield waits until every run has left the real
//! `{content, details}` active list (the upstream bridge's defect reported completion at once),
//! unreadable lists never count as completion, and timeouts and cancellation keep the records.

use crate::bridge_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bridge_support::{Setup, call, call_with, json_result, subagents_details, text, within};
use clawmcp_mcp::{CANCELLED, CallContext};
use clawmcp_testkit::ToolReply;
use clawmcp_tools::bridge::PendingStore;
use serde_json::{Value, json};

const REQUESTER: &str = "agent:main:discord:channel:42";

/// A setup whose gateway serves `sessions_spawn` (lifted from the HTTP deny list), answering
/// each spawn with a new run id `run-<n>`.
async fn spawning_setup() -> Setup {
    let setup = Setup::new()
        .await
        .with_config(json!({"gateway": {"tools": {"allow": ["sessions_spawn"]}}}))
        .with_env("OPENCLAW_REQUESTER_SESSION_KEY", REQUESTER);
    let counter = Arc::new(AtomicUsize::new(0));
    setup.fake.on_tool("sessions_spawn", move |_| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let accepted = json!({"status": "accepted", "childSessionKey": format!("agent:main:subagent:{n}"), "runId": format!("run-{n}"), "mode": "run"});
        ToolReply::ok(json_result(&accepted))
    });
    setup
}

/// Scripts `subagents list` to answer with the active lists in `script`, one per call; the last
/// one repeats.
fn script_subagents(setup: &Setup, script: Vec<Vec<&'static str>>) -> Arc<AtomicUsize> {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    setup.fake.on_tool("subagents", move |_| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let active = &script[n.min(script.len() - 1)];
        ToolReply::ok(json_result(&subagents_details(active, &["older-run"])))
    });
    calls
}

fn pending_ids(setup: &Setup, key: Option<&str>) -> Vec<String> {
    let mut ids: Vec<String> = PendingStore::new(&setup.workspace()).read(key).into_iter().map(|r| r.run_id).collect();
    ids.sort();
    ids
}

fn parsed(result: &clawmcp_mcp::ToolResult) -> Value {
    serde_json::from_str(text(result)).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(result)))
}

#[tokio::test(start_paused = true)]
async fn concurrent_spawns_from_two_bridges_lose_no_record() {
    let setup = spawning_setup().await;
    let (first, second) = (setup.bridge().await, setup.bridge().await);
    let mut spawns = Vec::new();
    for n in 0..40 {
        let bridge = if n % 2 == 0 { first.clone() } else { second.clone() };
        let args = if n % 4 == 1 {
            json!({"task": format!("t{n}"), "sessionKey": "agent:main:telegram:7"})
        } else {
            json!({"task": format!("t{n}")})
        };
        spawns.push(tokio::spawn(async move { call(&bridge, "sessions_spawn", args).await }));
    }
    for spawn in spawns {
        let result = within(spawn).await.unwrap();
        assert!(!result.is_error, "{}", text(&result));
    }
    let bodies = setup.bodies("sessions_spawn");
    assert_eq!(bodies.len(), 40);
    let hoisted = bodies.iter().filter(|b| b["sessionKey"] == "agent:main:telegram:7").count();
    assert_eq!(hoisted, 10);
    assert!(bodies.iter().all(|b| b["args"].get("sessionKey").is_none()), "the requester key is hoisted out of args");

    let (mine, telegram) = (pending_ids(&setup, Some(REQUESTER)), pending_ids(&setup, Some("agent:main:telegram:7")));
    assert_eq!(mine.len() + telegram.len(), 40);
    assert_eq!(telegram.len(), 10);
    let mut all: Vec<String> = mine.into_iter().chain(telegram).collect();
    all.sort();
    let mut expected: Vec<String> = (0..40).map(|n| format!("run-{n}")).collect();
    expected.sort();
    assert_eq!(all, expected);
}

#[tokio::test(start_paused = true)]
async fn yield_waits_until_every_run_has_left_the_real_active_list() {
    let setup = spawning_setup().await;
    let bridge = setup.bridge().await;
    for task in ["a", "b"] {
        assert!(!within(call(&bridge, "sessions_spawn", json!({"task": task}))).await.is_error);
    }
    // The gateway's answer has the real envelope: `active` only inside details / the JSON text.
    let polls = script_subagents(&setup, vec![vec!["run-0", "run-1"], vec!["run-1"], vec!["run-1", "other"], vec![]]);
    let started = tokio::time::Instant::now();
    let result = within(call(&bridge, "sessions_yield", json!({}))).await;
    assert!(!result.is_error, "{}", text(&result));
    let outcome = parsed(&result);
    assert_eq!(outcome["status"], "completed");
    assert_eq!(outcome["count"], 2);
    assert_eq!(polls.load(Ordering::SeqCst), 4);
    assert_eq!(started.elapsed(), Duration::from_secs(15), "three 5 s poll intervals");
    assert_eq!(outcome["elapsed"], "15s");
    let finished: Vec<&str> =
        outcome["subagents"].as_array().unwrap().iter().map(|s| s["runId"].as_str().unwrap()).collect();
    assert_eq!(finished, ["run-0", "run-1"]);
    assert!(pending_ids(&setup, Some(REQUESTER)).is_empty(), "finished records are cleaned up");
    assert!(setup.bodies("subagents").iter().all(|b| b["sessionKey"] == REQUESTER && b.get("agentId").is_none()));
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_list_is_not_completion_and_the_timeout_keeps_the_record() {
    let setup = spawning_setup().await;
    let bridge = setup.bridge().await;
    within(call(&bridge, "sessions_spawn", json!({"task": "a"}))).await;
    // Text without JSON (as if the gateway changed its shape): never read as "no active runs".
    setup.fake.on_tool("subagents", |_| {
        ToolReply::ok(json!({"content": [{"type": "text", "text": "active subagents:\n1. run-0 running"}]}))
    });
    let result = within(call(&bridge, "sessions_yield", json!({"timeoutMs": 12_000}))).await;
    let outcome = parsed(&result);
    assert_eq!(outcome["status"], "timeout", "{outcome}");
    assert_eq!(outcome["pending"], json!(["run-0"]));
    assert_eq!(pending_ids(&setup, Some(REQUESTER)), ["run-0"]);
    assert_eq!(setup.bodies("subagents").len(), 3, "polled at 0, 5 and 10 s, then the 12 s deadline");
}

#[tokio::test(start_paused = true)]
async fn a_still_active_run_times_out_and_stays_pending() {
    let setup = spawning_setup().await;
    let bridge = setup.bridge().await;
    within(call(&bridge, "sessions_spawn", json!({"task": "a"}))).await;
    script_subagents(&setup, vec![vec!["run-0"]]);
    let started = tokio::time::Instant::now();
    let outcome = parsed(&within(call(&bridge, "sessions_yield", json!({"timeoutMs": 7_000}))).await);
    assert_eq!(outcome["status"], "timeout");
    assert_eq!(started.elapsed(), Duration::from_secs(7));
    assert_eq!(pending_ids(&setup, Some(REQUESTER)), ["run-0"]);
}

#[tokio::test(start_paused = true)]
async fn cancellation_ends_the_wait_at_once_and_keeps_the_record() {
    let setup = spawning_setup().await;
    let bridge = setup.bridge().await;
    within(call(&bridge, "sessions_spawn", json!({"task": "a"}))).await;
    script_subagents(&setup, vec![vec!["run-0"]]);
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let waiting = tokio::spawn({
        let bridge = bridge.clone();
        async move { call_with(&bridge, "sessions_yield", json!({}), ctx).await }
    });
    tokio::time::sleep(Duration::from_secs(60)).await;
    cancel.cancel();
    let result = within(waiting).await.unwrap();
    assert_eq!(text(&result), CANCELLED);
    assert_eq!(pending_ids(&setup, Some(REQUESTER)), ["run-0"]);
}

#[tokio::test(start_paused = true)]
async fn with_nothing_recorded_the_active_list_decides() {
    let setup = spawning_setup().await;
    let bridge = setup.bridge().await;
    script_subagents(&setup, vec![vec![]]);
    let idle = parsed(&within(call(&bridge, "sessions_yield", json!({"timeoutMs": 100}))).await);
    assert_eq!(idle["status"], "no_pending_subagent");

    script_subagents(&setup, vec![vec!["external"], vec!["external"], vec![]]);
    let outcome = parsed(&within(call(&bridge, "sessions_yield", json!({"sessionKey": "agent:main:other"}))).await);
    assert_eq!(outcome["status"], "completed");
    assert_eq!(outcome["subagents"][0]["runId"], "external");
    assert!(setup.bodies("subagents").iter().skip(1).all(|b| b["sessionKey"] == "agent:main:other"));
}

#[tokio::test(start_paused = true)]
async fn a_failing_list_with_nothing_recorded_is_an_error() {
    let setup = spawning_setup().await;
    let bridge = setup.bridge().await;
    setup.fake.on_tool("subagents", |_| {
        ToolReply::json(
            400,
            json!({"ok": false, "error": {"type": "tool_error", "message": "subagent controller agent required"}}),
        )
    });
    let result = within(call(&bridge, "sessions_yield", json!({}))).await;
    assert!(result.is_error);
    let outcome = parsed(&result);
    assert_eq!(outcome["status"], "error");
    assert!(
        outcome["message"]
            .as_str()
            .unwrap()
            .starts_with("Could not list subagents: Error: subagent controller agent required")
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_spawn_records_nothing() {
    let setup = spawning_setup().await;
    setup
        .fake
        .on_tool("sessions_spawn", |_| ToolReply::ok(json_result(&json!({"status": "forbidden", "error": "no"}))));
    let bridge = setup.bridge().await;
    let result = within(call(&bridge, "sessions_spawn", json!({"task": "a"}))).await;
    assert!(result.is_error, "status forbidden is a tool error");
    assert!(pending_ids(&setup, Some(REQUESTER)).is_empty());
}

#[test]
fn records_written_from_many_threads_at_once_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let root = dir.path().to_owned();
            std::thread::spawn(move || {
                let store = PendingStore::new(&root);
                for n in 0..50 {
                    store.record(&format!("run-{t}-{n}"), Some(REQUESTER)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let runs = PendingStore::new(dir.path()).read(Some(REQUESTER));
    assert_eq!(runs.len(), 400);
    let files = std::fs::read_dir(dir.path().join(clawmcp_tools::bridge::PENDING_DIR)).unwrap().count();
    assert_eq!(files, 400, "no temporary file is left behind");
}
