//! The exec-approval policy file (`crates/node/src/approvals`): the file parser, the effective
//! policy it yields, and the path matcher and `argPattern` evaluation that policy drives.
//!
//! Input: fields separated by the byte 0xFF (never part of UTF-8 text):
//! `current file 0xFF desired file 0xFF agent id 0xFF executable path 0xFF arg 0xFF arg ...`.
//! Missing fields take defaults (no desired file, agent `main`, `/usr/bin/true`, no arguments).
//!
//! Checked on every input, beyond "never panics":
//! - a file that fails to parse denies everything;
//! - a parsed file saves and reads back as the same policy;
//! - reading a file over `system.execApprovals.get` and sending it back unchanged is accepted;
//! - a remote update that `validate_update` accepts (the desired file, taken as `set` takes it)
//!   never lets the command run without a human where the current file would not: neither at
//!   once nor by the prompt timeout's fallback. (Asking where the current file denied outright
//!   is allowed: `ask=off` -> `on-miss` is tightening, a human's consent is what asking is for.)
//! - the entry "allow always" records for a command matches that command and no other (or none
//!   is recorded, for the paths no glob can name exactly).

#![no_main]

use clawmcp_node::approvals::evaluator::{Evaluation, Verdict, evaluate, fallback_decision};
use clawmcp_node::approvals::matcher::{self, build_arg_pattern, exact_path_pattern, find_match, path_matches};
use clawmcp_node::approvals::model::{
    ALLOW_ALWAYS_SOURCE, AllowlistEntry, ApprovalsFile, EffectivePolicy, FILE_VERSION, normalize_agent_id,
};
use clawmcp_node::approvals::remote::{check_agent_shapes, validate_update};
use clawmcp_node::approvals::store::{Loaded, parse_file, sha256_hex};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const SEPARATOR: u8 = 0xFF;

fuzz_target!(|data: &[u8]| {
    let mut fields = data.split(|&b| b == SEPARATOR);
    let current_bytes = fields.next().unwrap_or_default();
    let desired_bytes = fields.next();
    let text = |field: &[u8]| std::str::from_utf8(field).ok().map(str::to_owned);
    let Some(agent) = fields.next().map(text).unwrap_or(Some(String::new())) else { return };
    let Some(path) = fields.next().map(text).unwrap_or(Some("/usr/bin/true".into())) else { return };
    let Some(args) = fields.map(text).collect::<Option<Vec<String>>>() else { return };
    let agent = normalize_agent_id(Some(&agent));

    let current = match parse_file(current_bytes.to_vec()) {
        Loaded::Present { file, hash } => {
            assert_eq!(hash, sha256_hex(current_bytes));
            file
        }
        Loaded::Invalid { .. } => {
            let reach = Reach::of(&EffectivePolicy::fail_closed(&agent), &path, &args);
            assert_eq!(reach, Reach::NOTHING, "an unusable file must deny everything");
            check_allow_always(&path, &args);
            return;
        }
        Loaded::Missing => unreachable!("bytes are never a missing file"),
    };

    // Saved (as `PolicyStore::save` writes) and read back: the same file.
    let saved = format!("{}\n", serde_json::to_string_pretty(&current).expect("the model serialises"));
    match parse_file(saved.into_bytes()) {
        Loaded::Present { file, .. } => assert_eq!(file, current, "save then load changed the file"),
        other => panic!("a saved file does not load: {other:?}"),
    }

    // `system.execApprovals.get`, then `set` with the very same file: nothing loosens.
    let snapshot = serde_json::to_value(current.redacted_for_snapshot()).expect("the snapshot serialises");
    let echoed = as_remote_set_takes_it(&snapshot).expect("a snapshot is a valid remote file");
    assert_eq!(validate_update(&current, &echoed), Ok(()), "sending the snapshot back unchanged is refused");

    let before = Reach::of(&current.effective(&agent), &path, &args);
    if let Some(desired) = desired_bytes.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        && let Some(desired) = as_remote_set_takes_it(&desired)
        && validate_update(&current, &desired).is_ok()
    {
        let saved = desired.normalized_for_save(current.socket.as_ref());
        let after = Reach::of(&saved.effective(&agent), &path, &args);
        assert!(
            after.is_no_looser_than(before),
            "an accepted remote update loosened agent {agent:?} for {path} {args:?}: {before:?} -> {after:?}"
        );
    }
    check_allow_always(&path, &args);
});

/// The desired file as `system.execApprovals.set` accepts it: an object with version 1, agent
/// shapes checked on the raw JSON, then the typed parse.
fn as_remote_set_takes_it(raw: &Value) -> Option<ApprovalsFile> {
    let object = raw.as_object()?;
    if object.get("version").and_then(Value::as_i64) != Some(FILE_VERSION) {
        return None;
    }
    check_agent_shapes(object).ok()?;
    serde_json::from_value(raw.clone()).ok()
}

/// How a command can come to run under one policy without a human's consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reach {
    /// Without asking anyone.
    unattended: bool,
    /// When a prompt goes unanswered and `askFallback` decides.
    by_fallback: bool,
}

impl Reach {
    const NOTHING: Reach = Reach { unattended: false, by_fallback: false };

    /// As `ExecApprovals::authorize` decides for a command without `env` wrappers.
    fn of(policy: &EffectivePolicy, path: &str, args: &[String]) -> Reach {
        let matched = find_match(&policy.allowlist, path, args).is_some();
        let evaluation =
            Evaluation { security: policy.policy.security, ask: policy.policy.ask, allowlist_matched: matched };
        let first = evaluate(evaluation, None);
        let fallback = fallback_decision(policy.policy.security, policy.policy.ask_fallback, matched);
        Reach {
            unattended: first == Verdict::Allow,
            by_fallback: first == Verdict::RequiresPrompt && evaluate(evaluation, Some(fallback)) == Verdict::Allow,
        }
    }

    fn is_no_looser_than(self, before: Reach) -> bool {
        (!self.unattended || before.unattended) && (!self.by_fallback || before.by_fallback || before.unattended)
    }
}

/// The entry an "allow always" answer records (`exact_path_pattern` + `build_arg_pattern`)
/// authorizes exactly the command it was made for: this path with these arguments, no other
/// path (the other fields, taken as paths) and not the arguments with the first one dropped.
fn check_allow_always(path: &str, args: &[String]) {
    // Only what `resolve` produces: an absolute path and arguments an `execve` can carry.
    if !path.starts_with('/') || path.contains('\0') || args.iter().any(|arg| arg.contains('\0')) {
        return;
    }
    let Some(pattern) = exact_path_pattern(path) else {
        // Recorded as "allow once" instead: only for whitespace outside ASCII at an end.
        let unnameable = |c: Option<char>| c.is_some_and(|c| c.is_whitespace() && !c.is_ascii());
        assert!(unnameable(path.chars().next()) || unnameable(path.chars().last()), "no exact pattern for {path:?}");
        return;
    };
    let entry = AllowlistEntry {
        pattern,
        arg_pattern: Some(build_arg_pattern(args)),
        source: Some(ALLOW_ALWAYS_SOURCE.into()),
        ..Default::default()
    };
    let entries = [entry];
    assert!(
        find_match(&entries, path, args).is_some(),
        "allow-always entry {:?} does not match {path:?} {args:?}",
        entries[0]
    );
    for other in args.iter().filter(|other| other.as_str() != path && other.starts_with('/')) {
        assert!(
            !path_matches(&entries[0].pattern, other),
            "exact pattern {:?} also matches {other:?}",
            entries[0].pattern
        );
    }
    if let Some((_, fewer)) = args.split_first() {
        assert!(
            !matcher::arg_pattern_matches(entries[0].arg_pattern.as_deref().unwrap_or_default(), fewer),
            "the argument binding of {args:?} also accepts {fewer:?}"
        );
    }
}
