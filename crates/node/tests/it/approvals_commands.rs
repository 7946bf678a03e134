//! `system.execApprovals.get` / `.set` through the public API: snapshot shape, compare-and-swap,
//! and the tighten-only rules per scope, with the file left untouched on every refusal.

use crate::approvals_common::{Fixture, path_exists};
use clawmcp_node::approvals::store::{missing_hash, sha256_hex};
use serde_json::{Map, Value, json};

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn set(fx: &Fixture, file: Value) -> Result<Value, String> {
    let base = fx.approvals.get_snapshot().unwrap()["hash"].as_str().unwrap().to_string();
    fx.approvals.set_from_args(&args(json!({"baseHash": base, "file": file}))).map_err(|e| e.message)
}

/// Applies `file` and asserts it is refused with `message` and the file is byte-for-byte kept.
fn assert_refused(fx: &Fixture, file: Value, message: &str) {
    let before = std::fs::read(fx.policy_path()).ok();
    assert_eq!(set(fx, file), Err(message.to_string()));
    assert_eq!(std::fs::read(fx.policy_path()).ok(), before, "file untouched after: {message}");
}

#[test]
fn get_on_a_missing_file_shows_the_defaults_without_creating_it() {
    let fx = Fixture::new();
    let snapshot = fx.approvals.get_snapshot().unwrap();
    assert_eq!(
        snapshot,
        json!({
            "path": fx.policy_path().to_str().unwrap(),
            "exists": false,
            "hash": missing_hash(),
            "file": {
                "version": 1,
                "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny", "autoAllowSkills": false},
                "agents": {}
            }
        })
    );
    assert!(snapshot.get("baseHash").is_none());
    assert!(!path_exists(&fx.policy_path()));
}

#[test]
fn get_hashes_the_raw_text_and_redacts_the_socket_token() {
    let fx = Fixture::new();
    let text =
        r#"{"version":1,"socket":{"path":"/run/a.sock","token":"s3cret"},"agents":{"main":{"askFallback":"on-miss"}}}"#;
    std::fs::write(fx.policy_path(), text).unwrap();
    let snapshot = fx.approvals.get_snapshot().unwrap();
    assert_eq!(snapshot["exists"], true);
    assert_eq!(snapshot["hash"], sha256_hex(text.as_bytes()));
    assert!(snapshot.get("baseHash").is_none());
    assert_eq!(snapshot["file"]["socket"], json!({"path": "/run/a.sock"}));
    assert!(!snapshot.to_string().contains("s3cret"));
    assert_eq!(
        snapshot["file"]["agents"]["main"],
        json!({"askFallback": "allowlist"}),
        "legacy value read canonically"
    );
}

#[test]
fn set_requires_a_base_hash() {
    let fx = Fixture::new();
    for bad in [
        json!({"file": {"version": 1}}),
        json!({"baseHash": "  ", "file": {"version": 1}}),
        json!({"baseHash": 7, "file": {"version": 1}}),
    ] {
        let error = fx.approvals.set_from_args(&args(bad)).unwrap_err();
        assert_eq!(error.message, "baseHash is required for exec approvals updates; reload and retry");
        assert_eq!(error.code, Some("INVALID_REQUEST"), "the caller's request is wrong, as upstream answers");
    }
}

#[test]
fn set_requires_a_version_1_file() {
    let fx = Fixture::new();
    let hash = missing_hash();
    for bad in
        [json!({"baseHash": hash}), json!({"baseHash": hash, "file": "{}"}), json!({"baseHash": hash, "file": null})]
    {
        assert_eq!(fx.approvals.set_from_args(&args(bad)).unwrap_err().message, "exec approvals file required");
    }
    for bad in [json!({}), json!({"version": 2}), json!({"version": "1"})] {
        let error = fx.approvals.set_from_args(&args(json!({"baseHash": hash, "file": bad}))).unwrap_err();
        assert_eq!(error.message, "exec approvals file version 1 required");
    }
    assert!(!path_exists(&fx.policy_path()));
}

#[test]
fn a_stale_hash_is_refused_and_the_file_untouched() {
    let fx = Fixture::with_policy(json!({"version": 1}));
    let before = std::fs::read(fx.policy_path()).unwrap();
    for stale in [missing_hash(), sha256_hex(b"something else")] {
        let error = fx
            .approvals
            .set_from_args(&args(json!({"baseHash": stale, "file": {"version": 1, "defaults": {"security": "deny"}}})))
            .unwrap_err();
        assert_eq!(error.message, "exec approvals changed; reload and retry");
        assert_eq!(error.code, Some("INVALID_REQUEST"), "upstream's code for a stale hash");
    }
    assert_eq!(std::fs::read(fx.policy_path()).unwrap(), before);
}

#[test]
fn tightening_is_saved_and_the_result_has_the_get_shape() {
    let fx = Fixture::new();
    let base = format!("  {}  ", missing_hash());
    let file = json!({"version": 1, "defaults": {"security": "allowlist", "ask": "always"}, "agents": {"ops": {"security": "deny"}}});
    let result = fx.approvals.set_from_args(&args(json!({"baseHash": base, "file": file}))).unwrap();
    assert_eq!(result["exists"], true);
    assert!(result.get("baseHash").is_none());
    let raw = std::fs::read(fx.policy_path()).unwrap();
    assert_eq!(result["hash"], sha256_hex(&raw));
    assert_eq!(result, fx.approvals.get_snapshot().unwrap());
    assert_eq!(
        result["file"]["defaults"],
        json!({"security": "allowlist", "ask": "always", "askFallback": "deny", "autoAllowSkills": false})
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(fx.policy_path()).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_get_set_round_trip_is_accepted() {
    let fx = Fixture::with_policy(json!({
        "version": 1,
        "socket": {"path": "/run/a.sock", "token": "s3cret"},
        "agents": {"main": {"allowlist": [{"pattern": "/usr/bin/ls"}, {"pattern": "/usr/bin/git", "argPattern": "^status\u{0}$", "source": "allow-always"}]}}
    }));
    let snapshot = fx.approvals.get_snapshot().unwrap();
    let result =
        fx.approvals.set_from_args(&args(json!({"baseHash": snapshot["hash"], "file": snapshot["file"]}))).unwrap();
    assert_eq!(result["file"], snapshot["file"]);
    assert_eq!(fx.read_policy()["socket"]["token"], "s3cret", "the token a remote never saw is kept");
}

/// Found by the fuzz target `exec_approvals`: a hand-written entry without a pattern (it never
/// matches) was shown by `get`, and `set` refuses blank patterns, so sending the snapshot back,
/// or any tightening of it, was refused.
#[test]
fn a_get_set_round_trip_is_accepted_when_the_file_has_blank_patterns() {
    let fx = Fixture::with_policy(json!({
        "version": 1,
        "agents": {"main": {"allowlist": [{"pattern": " /usr/bin/ls "}, {"commandText": "no pattern"}, {"pattern": "  "}]}}
    }));
    let snapshot = fx.approvals.get_snapshot().unwrap();
    assert_eq!(snapshot["file"]["agents"]["main"]["allowlist"], json!([{"pattern": "/usr/bin/ls"}]));
    let result =
        fx.approvals.set_from_args(&args(json!({"baseHash": snapshot["hash"], "file": snapshot["file"]}))).unwrap();
    assert_eq!(result["file"], snapshot["file"]);
}

/// Found by the fuzz target `exec_approvals` too: a hand-written agent with a blank id (no caller
/// has one, a blank id is `main`, so it never applies) was shown by `get`, and `set` refuses blank
/// agent ids. The snapshot and every save leave it out, as blank patterns.
#[test]
fn a_get_set_round_trip_is_accepted_when_the_file_has_an_agent_with_a_blank_id() {
    let fx = Fixture::with_policy(json!({
        "version": 1,
        "agents": {"ops": {"ask": "always"}, "": {"ask": "on-miss"}, "  ": {"security": "full"}}
    }));
    let snapshot = fx.approvals.get_snapshot().unwrap();
    assert_eq!(snapshot["file"]["agents"], json!({"ops": {"ask": "always"}}));
    let result =
        fx.approvals.set_from_args(&args(json!({"baseHash": snapshot["hash"], "file": snapshot["file"]}))).unwrap();
    assert_eq!(result["file"], snapshot["file"]);
    assert_eq!(fx.read_policy()["agents"], json!({"ops": {"ask": "always"}}), "the save leaves it out too");
}

#[test]
fn loosening_is_refused_per_scope() {
    let fx = Fixture::with_policy(json!({
        "version": 1,
        "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny"},
        "agents": {"ops": {"security": "deny", "ask": "always"}}
    }));
    let with = |defaults: Value, agents: Value| json!({"version": 1, "defaults": defaults, "agents": agents});
    let defaults = json!({"security": "allowlist", "ask": "on-miss", "askFallback": "deny"});
    let ops = json!({"ops": {"security": "deny", "ask": "always"}});
    let cases = [
        (with(json!({"security": "full"}), ops.clone()), "security less restrictive for defaults"),
        (with(json!({"ask": "off"}), ops.clone()), "ask less restrictive for defaults"),
        (with(json!({"askFallback": "full"}), ops.clone()), "askFallback less restrictive for defaults"),
        (with(json!({"askFallback": "off"}), ops.clone()), "askFallback less restrictive for defaults"),
        (with(json!({"autoAllowSkills": true}), ops.clone()), "enabling autoAllowSkills for defaults"),
        (
            with(defaults.clone(), json!({"*": {"security": "full"}, "ops": ops["ops"]})),
            "security less restrictive for agent '*'",
        ),
        (with(defaults.clone(), json!({"*": {"ask": "off"}, "ops": ops["ops"]})), "ask less restrictive for agent '*'"),
        (
            with(defaults.clone(), json!({"ops": {"security": "allowlist", "ask": "always"}})),
            "security less restrictive for agent 'ops'",
        ),
        (with(defaults.clone(), json!({"ops": {"security": "deny"}})), "ask less restrictive for agent 'ops'"),
        (with(defaults.clone(), json!({})), "security less restrictive for agent 'ops'"),
        (
            with(defaults.clone(), json!({"main": {"askFallback": "allowlist"}, "ops": ops["ops"]})),
            "askFallback less restrictive for agent 'main'",
        ),
        (
            with(defaults.clone(), json!({"main": {"autoAllowSkills": true}, "ops": ops["ops"]})),
            "enabling autoAllowSkills for agent 'main'",
        ),
        (
            with(defaults.clone(), json!({"new": {"security": "full"}, "ops": ops["ops"]})),
            "security less restrictive for agent 'new'",
        ),
    ];
    for (file, tail) in cases {
        let before = std::fs::read(fx.policy_path()).unwrap();
        let error = set(&fx, file.clone()).unwrap_err();
        assert!(
            error.starts_with("Remote exec approval updates cannot make ") && error.ends_with(&format!("{tail}.")),
            "{file}: {error}"
        );
        assert_eq!(std::fs::read(fx.policy_path()).unwrap(), before);
    }
}

#[test]
fn tightening_every_scope_is_accepted() {
    let fx = Fixture::with_policy(
        json!({"version": 1, "defaults": {"security": "full", "ask": "off", "askFallback": "full", "autoAllowSkills": true}}),
    );
    let file = json!({
        "version": 1,
        "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "allowlist", "autoAllowSkills": false},
        "agents": {"*": {"ask": "always"}, "main": {"security": "deny"}, "ops": {"ask": "deny", "askFallback": "always"}}
    });
    let result = set(&fx, file).unwrap();
    assert_eq!(result["file"]["agents"]["ops"], json!({"ask": "deny", "askFallback": "deny"}));
}

#[test]
fn allowlist_entries_may_be_removed_but_not_added_or_changed() {
    let ls = json!({"id": "a", "pattern": "/usr/bin/ls"});
    let git = json!({"id": "b", "pattern": "/usr/bin/git", "argPattern": "^status\u{0}$", "source": "allow-always"});
    let fx = Fixture::with_policy(json!({"version": 1, "agents": {"main": {"allowlist": [ls, git]}}}));
    let with = |entries: Value| json!({"version": 1, "agents": {"main": {"allowlist": entries}}});
    let refused = "Remote exec approval updates cannot add or change allowlist entries for agent 'main'.";

    assert_refused(&fx, with(json!([ls, git, {"pattern": "/usr/bin/rm"}])), refused);
    assert_refused(&fx, with(json!([{"pattern": "/usr/bin/git", "source": "allow-always"}])), refused);
    assert_refused(
        &fx,
        with(json!([{"pattern": "/usr/bin/git", "argPattern": "^sta\u{0}tus\u{0}$", "source": "allow-always"}])),
        refused,
    );
    assert_refused(&fx, with(json!([{"pattern": "/usr/bin/*"}])), refused);
    assert_refused(&fx, with(json!([{"pattern": ""}])), "Empty allowlist patterns are not permitted.");
    assert_refused(
        &fx,
        json!({"version": 1, "agents": {"main": {"allowlist": [ls]}, "ops": {"allowlist": [ls]}}}),
        "Remote exec approval updates cannot add or change allowlist entries for agent 'ops'.",
    );

    let result = set(&fx, with(json!([git]))).unwrap();
    assert_eq!(result["file"]["agents"]["main"]["allowlist"], json!([git]));
    let emptied = set(&fx, json!({"version": 1, "agents": {}})).unwrap();
    assert_eq!(emptied["file"]["agents"], json!({}));
}

#[test]
fn malformed_updates_are_refused() {
    let fx = Fixture::with_policy(json!({"version": 1}));
    assert_refused(&fx, json!({"version": 1, "agents": {"x": null}}), "Exec approval agent 'x' is invalid.");
    assert_refused(&fx, json!({"version": 1, "agents": {" ": {}}}), "Exec approval agent ids cannot be empty.");
    let error = set(&fx, json!({"version": 1, "defaults": {"security": "nope"}})).unwrap_err();
    assert!(error.starts_with("Invalid exec approvals file"), "{error}");
}

#[test]
fn an_unusable_file_cannot_be_replaced_remotely() {
    let fx = Fixture::new();
    std::fs::write(fx.policy_path(), "not json").unwrap();
    let error = fx
        .approvals
        .set_from_args(&args(
            json!({"baseHash": sha256_hex(b"not json"), "file": {"version": 1, "defaults": {"security": "deny"}}}),
        ))
        .unwrap_err();
    assert!(error.message.contains("malformed, unsupported or untrusted"), "{error}");
    assert_eq!(std::fs::read_to_string(fx.policy_path()).unwrap(), "not json");
}
