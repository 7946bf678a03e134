//! Authorization without a human: every evaluator outcome through the public coordinator, the
//! per-agent cascade, and the fail-closed file cases (malformed, wrong version, symlinked,
//! hard-linked).

use crate::approvals_common::Fixture;
use clawmcp_node::approvals::DenialCode;
use serde_json::{Value, json};

fn policy(defaults: Value, agents: Value) -> Value {
    json!({"version": 1, "defaults": defaults, "agents": agents})
}

#[tokio::test]
async fn security_deny_beats_a_matching_allowlist() {
    let fx = Fixture::new();
    fx.write_policy(&policy(
        json!({"security": "deny", "ask": "off"}),
        json!({"main": {"allowlist": [{"pattern": fx.exe("tool")}]}}),
    ));
    let denial = fx.authorize(&fx.request("tool", &[])).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::SecurityDeny);
    assert_eq!(denial.to_string(), "exec-approvals-v2: SecurityDeny (security=deny for agent 'main')");
}

#[tokio::test]
async fn an_allowlist_match_runs_without_asking_and_is_stamped() {
    let fx = Fixture::new();
    fx.write_policy(&policy(
        json!({}),
        json!({"main": {"allowlist": [{"id": "e1", "pattern": format!("{}/bin/*", fx.root.display())}]}}),
    ));
    let auth = fx.authorize(&fx.request("tool", &["--any", "args"])).await.unwrap();
    assert_eq!(auth.argv, [fx.exe("tool").as_str(), "--any", "args"]);
    assert_eq!(auth.agent_id, "main");
    let entry = &fx.read_policy()["agents"]["main"]["allowlist"][0];
    assert_eq!(entry["lastResolvedPath"], fx.exe("tool"));
    assert_eq!(entry["id"], "e1", "identity untouched");
}

#[tokio::test]
async fn an_allowlist_miss_with_ask_off_is_denied() {
    let fx = Fixture::new();
    fx.write_policy(&policy(json!({"ask": "off"}), json!({"main": {"allowlist": [{"pattern": fx.exe("tool")}]}})));
    let denial = fx.authorize(&fx.request("other", &[])).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::AllowlistMiss);
    assert!(denial.reason.contains(&fx.exe("other")) && denial.reason.contains("ask=off"), "{denial}");
}

#[tokio::test]
async fn ask_deny_refuses_unmatched_commands_even_under_full() {
    let fx = Fixture::new();
    fx.write_policy(&policy(
        json!({"security": "full", "ask": "deny"}),
        json!({"main": {"allowlist": [{"pattern": fx.exe("tool")}]}}),
    ));
    assert_eq!(fx.authorize(&fx.request("other", &[])).await.unwrap_err().code, DenialCode::AskDeny);
    fx.authorize(&fx.request("tool", &[])).await.unwrap();
}

#[tokio::test]
async fn full_with_ask_off_allows_anything() {
    let fx = Fixture::with_policy(policy(json!({"security": "full", "ask": "off"}), json!({})));
    fx.authorize(&fx.request("other", &["x"])).await.unwrap();
}

#[tokio::test]
async fn agents_cascade_over_the_wildcard_and_defaults() {
    let fx = Fixture::new();
    fx.write_policy(&policy(
        json!({"security": "full", "ask": "off"}),
        json!({"*": {"allowlist": [{"pattern": fx.exe("tool")}]}, "ops": {"security": "deny"}, "ci": {"security": "allowlist"}}),
    ));
    let mut request = fx.request("other", &[]);
    fx.authorize(&request).await.unwrap();
    request.agent_id = Some("ops".into());
    assert_eq!(fx.authorize(&request).await.unwrap_err().code, DenialCode::SecurityDeny);
    request.agent_id = Some("ci".into());
    assert_eq!(fx.authorize(&request).await.unwrap_err().code, DenialCode::AllowlistMiss);
    let mut wildcard_grant = fx.request("tool", &[]);
    wildcard_grant.agent_id = Some("ci".into());
    let auth = fx.authorize(&wildcard_grant).await.unwrap();
    assert_eq!(auth.agent_id, "ci");
    assert!(fx.read_policy()["agents"]["*"]["allowlist"][0]["lastUsedAt"].is_i64(), "the wildcard entry is stamped");
}

#[tokio::test]
async fn generated_entries_without_arg_pattern_and_basename_patterns_authorize_nothing() {
    let fx = Fixture::new();
    fx.write_policy(&policy(
        json!({"ask": "off"}),
        json!({"main": {"allowlist": [{"pattern": fx.exe("tool"), "source": "allow-always"}, {"pattern": "other"}]}}),
    ));
    assert_eq!(fx.authorize(&fx.request("tool", &[])).await.unwrap_err().code, DenialCode::AllowlistMiss);
    assert_eq!(fx.authorize(&fx.request("other", &[])).await.unwrap_err().code, DenialCode::AllowlistMiss);
}

#[tokio::test]
async fn argument_bound_entries_bind_the_arguments() {
    let fx = Fixture::new();
    fx.write_policy(&policy(
        json!({"ask": "off"}),
        json!({"main": {"allowlist": [{"pattern": fx.exe("tool"), "argPattern": "^--version\u{0}$", "source": "allow-always"}]}}),
    ));
    fx.authorize(&fx.request("tool", &["--version"])).await.unwrap();
    assert_eq!(fx.authorize(&fx.request("tool", &["--help"])).await.unwrap_err().code, DenialCode::AllowlistMiss);
    assert_eq!(fx.authorize(&fx.request("tool", &[])).await.unwrap_err().code, DenialCode::AllowlistMiss);
}

#[tokio::test]
async fn env_assignments_are_never_vouched_for_by_the_allowlist() {
    let fx = Fixture::new();
    fx.write_policy(&policy(json!({"ask": "off"}), json!({"main": {"allowlist": [{"pattern": fx.exe("tool")}]}})));
    let mut request = fx.request("tool", &[]);
    request.argv.splice(0..0, ["env".to_string(), "A=1".to_string()]);
    let denial = fx.authorize(&request).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::AllowlistMiss);
    assert!(denial.reason.contains("env NAME=VALUE"), "{denial}");
    let mut plain_wrapper = fx.request("tool", &["x"]);
    plain_wrapper.argv.insert(0, "env".to_string());
    let auth = fx.authorize(&plain_wrapper).await.unwrap();
    assert_eq!(auth.argv, [fx.exe("tool").as_str(), "x"], "a wrapper that sets nothing is transparent");
}

#[tokio::test]
async fn resolution_and_validation_failures() {
    let fx = Fixture::new();
    let missing = fx.authorize(&fx.request("nope", &[])).await.unwrap_err();
    assert_eq!(missing.code, DenialCode::ResolutionFailed);
    assert!(missing.to_string().starts_with("exec-approvals-v2: ResolutionFailed (cannot resolve"), "{missing}");
    let empty = fx.authorize(&clawmcp_node::approvals::RunRequest::default()).await.unwrap_err();
    assert_eq!(empty.code, DenialCode::ValidationFailed);
    let mut relative = fx.request("tool", &[]);
    relative.argv[0] = "./bin/tool".into();
    relative.cwd = Some(fx.root.clone());
    fx.write_policy(&policy(json!({"security": "full", "ask": "off"}), json!({})));
    assert_eq!(fx.authorize(&relative).await.unwrap().argv[0], fx.exe("tool"));
}

async fn assert_fail_closed(fx: &Fixture, needle: &str) {
    let denial = fx.authorize(&fx.request("tool", &[])).await.unwrap_err();
    assert_eq!(denial.code, DenialCode::SecurityDeny, "{needle}");
    assert!(denial.reason.contains(needle) && denial.reason.contains("fix or delete"), "{denial}");
    let get = fx.approvals.get_snapshot().unwrap_err();
    assert!(get.message.contains("malformed, unsupported or untrusted"), "{get}");
}

#[tokio::test]
async fn malformed_and_wrong_version_files_deny_everything() {
    let fx = Fixture::new();
    let full = policy(json!({"security": "full", "ask": "off"}), json!({}));
    std::fs::write(fx.policy_path(), "{\"version\":1,").unwrap();
    assert_fail_closed(&fx, "not a valid approvals file").await;
    let mut v2 = full.clone();
    v2["version"] = json!(2);
    fx.write_policy(&v2);
    assert_fail_closed(&fx, "version 2").await;
    let mut bad_enum = full.clone();
    bad_enum["defaults"]["security"] = json!("everything");
    fx.write_policy(&bad_enum);
    assert_fail_closed(&fx, "not a valid approvals file").await;
    fx.write_policy(&full);
    fx.authorize(&fx.request("tool", &[])).await.unwrap();
}

#[tokio::test]
async fn symlinked_and_hard_linked_files_deny_everything() {
    let fx = Fixture::new();
    let elsewhere = fx.root.join("elsewhere.json");
    std::fs::write(&elsewhere, policy(json!({"security": "full", "ask": "off"}), json!({})).to_string()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fx.policy_path()).unwrap();
    assert_fail_closed(&fx, "symbolic link").await;
    std::fs::remove_file(fx.policy_path()).unwrap();
    std::fs::hard_link(&elsewhere, fx.policy_path()).unwrap();
    assert_fail_closed(&fx, "hard links").await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_file_is_never_overwritten_by_an_approval() {
    let fx = Fixture::new();
    std::fs::write(fx.policy_path(), "garbage").unwrap();
    assert_eq!(fx.authorize(&fx.request("tool", &[])).await.unwrap_err().code, DenialCode::SecurityDeny);
    assert!(fx.approvals.pending().is_empty(), "fail-closed never prompts");
    assert_eq!(std::fs::read_to_string(fx.policy_path()).unwrap(), "garbage");
}
