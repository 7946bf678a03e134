//! The headless prompt flow end to end: a command that needs a human waits in the queue until
//! the terminal answers, the (paused-clock) timeout hands over to askFallback, or the caller
//! cancels; plus revalidation between authorization and launch.

use std::time::Duration;

use crate::approvals_common::{Fixture, path_exists};
use clawmcp_mcp::ErrorCode;
use clawmcp_node::LocalMethods;
use clawmcp_node::approvals::{
    ApprovalsApi, Approver, DEFAULT_PROMPT_TIMEOUT, Decision, DenialCode, LIST_METHOD, MAX_PENDING, POLICY_CHANGED,
    RESOLVE_METHOD,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(start_paused = true)]
async fn allow_once_runs_this_time_and_records_nothing() {
    let fx = Fixture::new();
    let mut request = fx.request("tool", &["a", "b c"]);
    request.cwd = Some(fx.root.clone());
    request.agent_id = Some("  ".into());
    let run = fx.spawn(request.clone(), CancellationToken::new());
    let pending = fx.wait_pending(1).await;
    let prompt = &pending[0];
    assert_eq!(prompt.argv, request.argv);
    assert_eq!(prompt.resolved_executable, fx.exe("tool"));
    assert_eq!(prompt.agent_id, "main");
    assert_eq!(prompt.cwd.as_deref(), Some(fx.root.to_str().unwrap()));
    assert_eq!(prompt.expires_at_ms - prompt.requested_at_ms, DEFAULT_PROMPT_TIMEOUT.as_millis() as u64);

    fx.approvals.resolve(&prompt.id, Decision::AllowOnce).unwrap();
    let auth = run.await.unwrap().unwrap();
    assert_eq!(auth.resolved_executable.to_str().unwrap(), fx.exe("tool"));
    assert_eq!(auth.argv, [fx.exe("tool").as_str(), "a", "b c"]);
    assert!(auth.env.is_empty());
    assert!(fx.approvals.pending().is_empty());
    assert!(!path_exists(&fx.policy_path()), "allow-once writes nothing");

    let again = fx.spawn(request, CancellationToken::new());
    let second = fx.wait_pending(1).await;
    assert_ne!(second[0].id, prompt.id);
    fx.approvals.resolve(&second[0].id, Decision::Deny).unwrap();
    assert!(again.await.unwrap().is_err());
}

#[tokio::test(start_paused = true)]
async fn allow_always_persists_a_bound_entry_and_the_same_command_then_runs_without_asking() {
    let fx = Fixture::new();
    let request = fx.request("tool", &["a", "b.c"]);
    let run = fx.spawn(request.clone(), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::AllowAlways).unwrap();
    run.await.unwrap().unwrap();

    let file = fx.read_policy();
    let entries = file["agents"]["main"]["allowlist"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["pattern"], fx.exe("tool"));
    assert_eq!(entries[0]["argPattern"], "^a\u{0}b\\.c\u{0}$");
    assert_eq!(entries[0]["source"], "allow-always");
    assert_eq!(entries[0]["id"].as_str().unwrap().len(), 36);
    assert!(entries[0].get("lastUsedAt").is_none());

    // No prompt: the future completes without anyone answering (a prompt would time out and deny).
    let auth = fx.authorize(&request).await.unwrap();
    assert_eq!(auth.argv[1..], ["a", "b.c"]);
    let stamped = &fx.read_policy()["agents"]["main"]["allowlist"][0];
    assert!(stamped["lastUsedAt"].as_i64().unwrap() > 0);
    assert_eq!(stamped["lastResolvedPath"], fx.exe("tool"));
    assert_eq!(stamped["lastUsedCommand"], format!("{} a b.c", fx.exe("tool")));

    // Other arguments are another command.
    let different = fx.spawn(fx.request("tool", &["a", "bxc"]), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::Deny).unwrap();
    assert_eq!(different.await.unwrap().unwrap_err().code, DenialCode::UserDenied);
}

/// The fuzz target `exec_approvals` found that the recorded pattern is trimmed before it is
/// compiled: "allow always" for `tool ` (trailing space) recorded a rule that ran `tool`.
#[tokio::test(start_paused = true)]
async fn allow_always_for_a_path_ending_in_whitespace_binds_that_path_and_no_other() {
    let fx = Fixture::new();
    fx.add_exe("tool ");
    let spaced = fx.request("tool ", &["x"]);
    let run = fx.spawn(spaced.clone(), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::AllowAlways).unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(fx.read_policy()["agents"]["main"]["allowlist"][0]["pattern"], format!("{}[ ]", fx.exe("tool")));

    fx.authorize(&spaced).await.expect("the approved path runs without asking");
    let plain = fx.spawn(fx.request("tool", &["x"]), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::Deny).unwrap();
    assert_eq!(plain.await.unwrap().unwrap_err().code, DenialCode::UserDenied, "`tool` is another file");
}

/// No glob names a path ending in non-ASCII whitespace exactly (trimming removes it, a class of
/// it never matches): such an "allow always" is an "allow once" and records nothing.
#[tokio::test(start_paused = true)]
async fn allow_always_records_nothing_for_a_path_no_pattern_can_name() {
    let fx = Fixture::new();
    fx.add_exe("tool\u{a0}");
    let request = fx.request("tool\u{a0}", &[]);
    let run = fx.spawn(request.clone(), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::AllowAlways).unwrap();
    run.await.unwrap().unwrap();
    assert!(!path_exists(&fx.policy_path()), "nothing recorded");
    let again = fx.spawn(request, CancellationToken::new());
    fx.wait_pending(1).await;
    again.abort();
}

#[tokio::test(start_paused = true)]
async fn allow_always_is_only_recorded_under_security_allowlist() {
    let fx = Fixture::with_policy(json!({"version": 1, "defaults": {"security": "full", "ask": "always"}}));
    let before = std::fs::read_to_string(fx.policy_path()).unwrap();
    let run = fx.spawn(fx.request("tool", &[]), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::AllowAlways).unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(fx.policy_path()).unwrap(), before);
}

#[tokio::test(start_paused = true)]
async fn allow_always_is_not_recorded_for_env_assignments() {
    let fx = Fixture::new();
    let mut request = fx.request("tool", &["x"]);
    request.argv.splice(0..0, ["env".to_string(), "LD_PRELOAD=/tmp/evil.so".to_string()]);
    let run = fx.spawn(request, CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::AllowAlways).unwrap();
    let auth = run.await.unwrap().unwrap();
    assert_eq!(auth.argv, [fx.exe("tool").as_str(), "x"]);
    assert_eq!(auth.env, [("LD_PRELOAD".to_string(), "/tmp/evil.so".to_string())]);
    assert!(!path_exists(&fx.policy_path()), "an entry could not capture the environment");
}

#[tokio::test(start_paused = true)]
async fn deny_is_user_denied() {
    let fx = Fixture::new();
    let run = fx.spawn(fx.request("tool", &[]), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.approvals.resolve(&id, Decision::Deny).unwrap();
    let denial = run.await.unwrap().unwrap_err();
    assert_eq!(denial.code, DenialCode::UserDenied);
    assert_eq!(denial.to_string(), "exec-approvals-v2: UserDenied (user-denied)");
    assert!(fx.approvals.resolve(&id, Decision::AllowOnce).is_err(), "an answered prompt is gone");
}

#[tokio::test(start_paused = true)]
async fn timeout_with_ask_fallback_deny_denies_and_clears_the_prompt() {
    let fx = Fixture::new();
    let started = tokio::time::Instant::now();
    let denial = fx.authorize(&fx.request("tool", &[])).await.unwrap_err();
    assert_eq!(started.elapsed(), DEFAULT_PROMPT_TIMEOUT, "waits exactly the prompt timeout");
    assert_eq!(denial.code, DenialCode::UserDenied);
    assert!(denial.reason.contains("no decision within 120s (askFallback=deny)"), "{denial}");
    assert!(denial.reason.contains("clawmcp approvals"), "{denial}");
    assert!(fx.approvals.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_prompt_timeout_is_configurable_and_an_answer_just_before_it_counts() {
    let dir = tempfile::tempdir().unwrap();
    let approvals = std::sync::Arc::new(
        clawmcp_node::approvals::ExecApprovals::open(dir.path().join("exec-approvals.json"))
            .with_prompt_timeout(Duration::from_secs(5)),
    );
    let fx = Fixture::new();
    let request = fx.request("tool", &[]);
    let task = {
        let approvals = approvals.clone();
        let request = request.clone();
        tokio::spawn(async move { approvals.authorize(&request, &Approver::Terminal, &CancellationToken::new()).await })
    };
    while approvals.pending().is_empty() {
        tokio::task::yield_now().await;
    }
    let prompt = approvals.pending().remove(0);
    assert_eq!(prompt.expires_at_ms - prompt.requested_at_ms, 5_000);
    tokio::time::advance(Duration::from_millis(4_999)).await;
    approvals.resolve(&prompt.id, Decision::AllowOnce).unwrap();
    task.await.unwrap().unwrap();

    let started = tokio::time::Instant::now();
    assert!(approvals.authorize(&request, &Approver::Terminal, &CancellationToken::new()).await.is_err());
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn timeout_with_ask_fallback_full_allows_once() {
    for fallback in ["full", "off"] {
        let fx = Fixture::with_policy(
            json!({"version": 1, "defaults": {"security": "full", "ask": "always", "askFallback": fallback}}),
        );
        let auth = fx.authorize(&fx.request("tool", &[])).await;
        assert!(auth.is_ok(), "askFallback={fallback}: {auth:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn timeout_with_ask_fallback_allowlist_allows_only_what_the_allowlist_matches() {
    let fx = Fixture::new();
    for fallback in ["allowlist", "on-miss"] {
        fx.write_policy(&json!({
            "version": 1,
            "defaults": {"security": "allowlist", "ask": "always", "askFallback": fallback},
            "agents": {"main": {"allowlist": [{"pattern": fx.exe("tool")}]}}
        }));
        fx.authorize(&fx.request("tool", &["any"])).await.unwrap();
        let denial = fx.authorize(&fx.request("other", &[])).await.unwrap_err();
        assert_eq!(denial.code, DenialCode::UserDenied);
        assert!(denial.reason.contains("askFallback=allowlist and the allowlist does not match"), "{denial}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_fallback_never_exceeds_security() {
    let fx = Fixture::with_policy(json!({"version": 1, "defaults": {"security": "allowlist", "askFallback": "full"}}));
    let denial = fx.authorize(&fx.request("tool", &[])).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::UserDenied);
    assert!(denial.reason.contains("allowlist does not match"), "{denial}");
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_pending_prompt_removes_it() {
    let fx = Fixture::new();
    let cancel = CancellationToken::new();
    let run = fx.spawn(fx.request("tool", &[]), cancel.clone());
    let id = fx.wait_pending(1).await[0].id.clone();
    cancel.cancel();
    let denial = run.await.unwrap().unwrap_err();
    assert_eq!(denial.code, DenialCode::UserDenied);
    assert_eq!(denial.reason, "cancelled");
    assert!(fx.approvals.pending().is_empty());
    assert!(fx.approvals.resolve(&id, Decision::AllowOnce).is_err());

    let already = CancellationToken::new();
    already.cancel();
    let denial = fx.approvals.authorize(&fx.request("tool", &[]), &Approver::Terminal, &already).await.unwrap_err();
    assert_eq!(denial.reason, "cancelled");
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_authorization_withdraws_its_prompt() {
    let fx = Fixture::new();
    let run = fx.spawn(fx.request("tool", &[]), CancellationToken::new());
    fx.wait_pending(1).await;
    run.abort();
    let _ = run.await;
    assert!(fx.approvals.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn several_prompts_wait_at_once_up_to_the_cap() {
    let fx = Fixture::new();
    let cancel = CancellationToken::new();
    let runs: Vec<_> =
        (0..MAX_PENDING).map(|i| fx.spawn(fx.request("tool", &[&i.to_string()]), cancel.clone())).collect();
    let pending = fx.wait_pending(MAX_PENDING).await;
    assert_eq!(pending.len(), MAX_PENDING);
    let mut ids: Vec<_> = pending.iter().map(|p| p.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), MAX_PENDING);

    let started = tokio::time::Instant::now();
    let denial = fx.authorize(&fx.request("other", &[])).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "refused at once, not queued");
    assert_eq!(denial.code, DenialCode::Unavailable);
    assert!(denial.reason.contains("64 commands are already waiting"), "{denial}");

    // Answering one frees a slot.
    fx.approvals.resolve(&pending[0].id, Decision::AllowOnce).unwrap();
    let extra = fx.spawn(fx.request("other", &[]), cancel.clone());
    fx.wait_pending(MAX_PENDING).await;
    cancel.cancel();
    for run in runs.into_iter().chain([extra]) {
        let _ = run.await.unwrap();
    }
    assert!(fx.approvals.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_policy_tightened_while_the_human_decides_wins() {
    let fx = Fixture::new();
    let run = fx.spawn(fx.request("tool", &[]), CancellationToken::new());
    let id = fx.wait_pending(1).await[0].id.clone();
    fx.write_policy(&json!({"version": 1, "defaults": {"security": "allowlist", "ask": "always"}}));
    fx.approvals.resolve(&id, Decision::AllowAlways).unwrap();
    let denial = run.await.unwrap().unwrap_err();
    assert_eq!(denial.code, DenialCode::ValidationFailed);
    assert_eq!(denial.reason, POLICY_CHANGED);
    assert!(fx.read_policy()["agents"].get("main").is_none(), "nothing persisted for a refused run");
}

#[tokio::test]
async fn revalidate_tracks_tightening_between_authorize_and_launch() {
    let fx = Fixture::new();
    let policy = |security: &str, entries: serde_json::Value| json!({"version": 1, "defaults": {"security": security, "ask": "off"}, "agents": {"main": {"allowlist": entries}}});
    let grant = json!([{"pattern": fx.exe("tool")}]);
    fx.write_policy(&policy("allowlist", grant.clone()));
    let auth = fx.authorize(&fx.request("tool", &[])).await.unwrap();
    assert_eq!(fx.approvals.revalidate(&auth), Ok(()), "usage stamping is not a policy change");

    fx.write_policy(&policy("full", json!([{"pattern": fx.exe("tool")}, {"pattern": fx.exe("other")}])));
    assert_eq!(fx.approvals.revalidate(&auth), Ok(()), "looser policy and added entries keep it current");

    fx.write_policy(&policy("allowlist", json!([])));
    let denial = fx.approvals.revalidate(&auth).unwrap_err();
    assert_eq!(denial.to_string(), "exec-approvals-v2: ValidationFailed (policy-changed-before-execution)");

    fx.write_policy(&policy("deny", grant.clone()));
    assert_eq!(fx.approvals.revalidate(&auth).unwrap_err().code, DenialCode::ValidationFailed);

    std::fs::write(fx.policy_path(), "{ broken").unwrap();
    assert_eq!(fx.approvals.revalidate(&auth).unwrap_err().code, DenialCode::ValidationFailed);

    fx.write_policy(&policy("allowlist", grant));
    assert_eq!(fx.approvals.revalidate(&auth), Ok(()), "restored policy is current again");
}

#[tokio::test(start_paused = true)]
async fn the_terminal_api_lists_and_resolves() {
    let fx = Fixture::new();
    let api = ApprovalsApi(fx.approvals.clone());
    assert!(api.handle("tools/list", None).is_none(), "only its own methods");

    let empty = api.handle(LIST_METHOD, None).unwrap().await.unwrap();
    assert_eq!(empty, json!({"pending": []}));

    let run = fx.spawn(fx.request("tool", &["x"]), CancellationToken::new());
    fx.wait_pending(1).await;
    let listed = api.handle(LIST_METHOD, Some(json!({}))).unwrap().await.unwrap();
    let entry = &listed["pending"][0];
    assert_eq!(entry["argv"], json!([fx.exe("tool"), "x"]));
    assert_eq!(entry["resolvedExecutable"], fx.exe("tool"));
    assert_eq!(entry["agentId"], "main");
    assert!(entry["requestedAtMs"].is_u64() && entry["expiresAtMs"].is_u64());
    let id = entry["id"].as_str().unwrap().to_string();

    let unknown =
        api.handle(RESOLVE_METHOD, Some(json!({"id": "zzzzzzzz", "decision": "deny"}))).unwrap().await.unwrap_err();
    assert_eq!(unknown.code, ErrorCode::InvalidParams);
    assert!(unknown.message.contains("zzzzzzzz") && unknown.message.contains("clawmcp approvals"), "{unknown:?}");

    for bad in [None, Some(json!({"id": id})), Some(json!({"id": id, "decision": "allow"})), Some(json!([id]))] {
        let error = api.handle(RESOLVE_METHOD, bad.clone()).unwrap().await.unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParams, "{bad:?}");
    }

    let resolved =
        api.handle(RESOLVE_METHOD, Some(json!({"id": id, "decision": "allow-once"}))).unwrap().await.unwrap();
    assert_eq!(resolved, json!({"resolved": true}));
    run.await.unwrap().unwrap();
}
