//! The policy an operator's approval was given under (`plan.policySnapshot`).
//!
//! The gateway's exec tool approves a command in steps: `system.run.prepare` here, then the
//! operator decides (seconds or minutes later), then the gateway re-invokes `system.run` with the
//! decision and the prepared plan. The snapshot taken at prepare travels through the gateway and
//! back, and the re-invoke runs only if this node's policy for the agent is still the one the
//! operator saw: the same security, ask, askFallback and autoAllowSkills, and every allowlist rule
//! still there (new rules are fine). Anything else is refused as "policy changed; request
//! approval again" — an operator approved a command against rules that no longer hold.
//!
//! The wire shape is upstream's `{security, ask, askFallback, autoAllowSkills, allowlistRules:
//! [{pattern, argPattern?, source?}]}`, rules sorted, `source` only when it is `allow-always`: the
//! gateway parses the plan it forwards with exactly these rules and drops a plan it cannot read.

use serde_json::{Map, Value, json};

use super::model::{ALLOW_ALWAYS_SOURCE, Ask, EffectivePolicy, Security};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySnapshot {
    security: Security,
    ask: Ask,
    ask_fallback: Security,
    auto_allow_skills: bool,
    /// Sorted, without duplicates.
    rules: Vec<Rule>,
}

/// What an allowlist entry grants, as the snapshot names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Rule {
    pattern: String,
    arg_pattern: Option<String>,
    allow_always: bool,
}

impl PolicySnapshot {
    /// The snapshot of `policy` as it stands.
    pub fn of(policy: &EffectivePolicy) -> Self {
        let mut rules: Vec<Rule> = policy
            .allowlist
            .iter()
            .filter(|entry| !entry.pattern.trim().is_empty())
            .map(|entry| Rule {
                pattern: entry.pattern.trim().to_string(),
                arg_pattern: entry.arg_pattern.clone().filter(|arg| !arg.is_empty()),
                allow_always: entry.source.as_deref() == Some(ALLOW_ALWAYS_SOURCE),
            })
            .collect();
        rules.sort();
        rules.dedup();
        let p = policy.policy;
        PolicySnapshot {
            security: p.security,
            ask: p.ask,
            ask_fallback: p.ask_fallback,
            auto_allow_skills: p.auto_allow_skills,
            rules,
        }
    }

    /// Whether an approval given under `self` still holds under `now`.
    pub fn is_current(&self, now: &PolicySnapshot) -> bool {
        self.security == now.security
            && self.ask == now.ask
            && self.ask_fallback == now.ask_fallback
            && self.auto_allow_skills == now.auto_allow_skills
            && self.rules.iter().all(|rule| now.rules.binary_search(rule).is_ok())
    }

    pub fn to_json(&self) -> Value {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|rule| {
                let mut out = Map::new();
                out.insert("pattern".into(), rule.pattern.clone().into());
                if let Some(arg) = &rule.arg_pattern {
                    out.insert("argPattern".into(), arg.clone().into());
                }
                if rule.allow_always {
                    out.insert("source".into(), ALLOW_ALWAYS_SOURCE.into());
                }
                Value::Object(out)
            })
            .collect();
        json!({
            "security": self.security.as_str(),
            "ask": self.ask.as_str(),
            "askFallback": self.ask_fallback.as_str(),
            "autoAllowSkills": self.auto_allow_skills,
            "allowlistRules": rules,
        })
    }

    /// Reads a snapshot that came back through the gateway. The reason names the field.
    pub fn parse(value: &Value) -> Result<Self, String> {
        let object = value.as_object().ok_or("policySnapshot must be an object")?;
        let text =
            |key: &str| object.get(key).and_then(Value::as_str).ok_or(format!("policySnapshot.{key} is missing"));
        let security = parse_security(text("security")?).ok_or("policySnapshot.security is not deny|allowlist|full")?;
        let ask = match text("ask")? {
            "off" => Ask::Off,
            "on-miss" => Ask::OnMiss,
            "always" => Ask::Always,
            "deny" => Ask::Deny,
            _ => return Err("policySnapshot.ask is not off|on-miss|always|deny".into()),
        };
        let ask_fallback =
            parse_security(text("askFallback")?).ok_or("policySnapshot.askFallback is not deny|allowlist|full")?;
        let auto_allow_skills = object
            .get("autoAllowSkills")
            .and_then(Value::as_bool)
            .ok_or("policySnapshot.autoAllowSkills is missing")?;
        let raw_rules =
            object.get("allowlistRules").and_then(Value::as_array).ok_or("policySnapshot.allowlistRules is missing")?;
        let mut rules = Vec::with_capacity(raw_rules.len());
        for raw in raw_rules {
            let pattern = raw.get("pattern").and_then(Value::as_str).ok_or("an allowlist rule has no pattern")?;
            let arg_pattern = match raw.get("argPattern") {
                None | Some(Value::Null) => None,
                Some(Value::String(arg)) if arg.is_empty() => None,
                Some(Value::String(arg)) => Some(arg.clone()),
                Some(_) => return Err("an allowlist rule's argPattern is not a string".into()),
            };
            let allow_always = match raw.get("source") {
                None | Some(Value::Null) => false,
                Some(Value::String(source)) if source == ALLOW_ALWAYS_SOURCE => true,
                Some(_) => return Err("an allowlist rule's source is not allow-always".into()),
            };
            rules.push(Rule { pattern: pattern.trim().to_string(), arg_pattern, allow_always });
        }
        rules.sort();
        rules.dedup();
        Ok(PolicySnapshot { security, ask, ask_fallback, auto_allow_skills, rules })
    }
}

fn parse_security(text: &str) -> Option<Security> {
    match text {
        "deny" => Some(Security::Deny),
        "allowlist" => Some(Security::Allowlist),
        "full" => Some(Security::Full),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::model::{AllowlistEntry, Policy};

    fn policy(security: Security, ask: Ask, entries: &[(&str, Option<&str>, Option<&str>)]) -> EffectivePolicy {
        EffectivePolicy {
            agent_id: "main".into(),
            policy: Policy { security, ask, ask_fallback: Security::Deny, auto_allow_skills: false },
            allowlist: entries
                .iter()
                .map(|(pattern, arg, source)| AllowlistEntry {
                    pattern: pattern.to_string(),
                    arg_pattern: arg.map(String::from),
                    source: source.map(String::from),
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn wire_shape_is_upstreams_and_round_trips() {
        let snapshot = PolicySnapshot::of(&policy(
            Security::Allowlist,
            Ask::OnMiss,
            &[("/usr/bin/ls", None, Some("manual")), ("/usr/bin/echo", Some("^hi$"), Some("allow-always"))],
        ));
        let wire = snapshot.to_json();
        assert_eq!(
            wire,
            json!({"security": "allowlist", "ask": "on-miss", "askFallback": "deny", "autoAllowSkills": false,
                   "allowlistRules": [{"pattern": "/usr/bin/echo", "argPattern": "^hi$", "source": "allow-always"},
                                      {"pattern": "/usr/bin/ls"}]}),
            "sorted; source only when allow-always"
        );
        assert_eq!(PolicySnapshot::parse(&wire).unwrap(), snapshot);
    }

    #[test]
    fn current_means_same_policy_and_no_rule_gone() {
        let before = PolicySnapshot::of(&policy(Security::Allowlist, Ask::OnMiss, &[("/usr/bin/ls", None, None)]));
        let more =
            policy(Security::Allowlist, Ask::OnMiss, &[("/usr/bin/ls", None, None), ("/usr/bin/id", None, None)]);
        assert!(before.is_current(&PolicySnapshot::of(&more)), "a new rule keeps an approval current");
        for changed in [
            policy(Security::Allowlist, Ask::OnMiss, &[]),
            policy(Security::Allowlist, Ask::Always, &[("/usr/bin/ls", None, None)]),
            policy(Security::Full, Ask::OnMiss, &[("/usr/bin/ls", None, None)]),
            policy(Security::Allowlist, Ask::OnMiss, &[("/usr/bin/ls", Some("^-l$"), None)]),
        ] {
            assert!(!before.is_current(&PolicySnapshot::of(&changed)), "{changed:?}");
        }
    }

    #[test]
    fn a_malformed_snapshot_names_its_field() {
        let mut wire = PolicySnapshot::of(&policy(Security::Full, Ask::Off, &[])).to_json();
        wire["askFallback"] = json!("sometimes");
        assert_eq!(PolicySnapshot::parse(&wire).unwrap_err(), "policySnapshot.askFallback is not deny|allowlist|full");
        assert_eq!(PolicySnapshot::parse(&json!("x")).unwrap_err(), "policySnapshot must be an object");
        let mut wire = PolicySnapshot::of(&policy(Security::Full, Ask::Off, &[])).to_json();
        wire["allowlistRules"] = json!([{"pattern": "/bin/x", "source": "manual"}]);
        assert!(PolicySnapshot::parse(&wire).unwrap_err().contains("source"));
    }
}
