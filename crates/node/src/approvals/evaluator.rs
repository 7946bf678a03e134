//! The pure decision: policy + allowlist outcome + (optional) human decision -> verdict.
//!
//! The precedence is upstream's and fixed; each step exists for a reason:
//! 1. security=deny denies, whatever a human said (an absolute override).
//! 2. A human "deny" denies.
//! 3. With no decision yet: ask=always, or ask=on-miss with security=allowlist and no allowlist
//!    match, needs a prompt (the human gets a chance before a miss becomes a denial).
//! 4. security=allowlist, no match and no approval: allowlist miss.
//! 5. ask=deny, no decision and no match: denied without asking.
//! 6. Otherwise allow.
//!
//! The coordinator calls it twice: without a decision (pass 1), and, if a prompt was needed,
//! with the human's answer or the `askFallback` stand-in (pass 2).

use super::Decision;
use super::model::{Ask, Security};

/// The facts the verdict depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evaluation {
    pub security: Security,
    pub ask: Ask,
    /// An allowlist entry authorizes this exact command.
    pub allowlist_matched: bool,
}

/// Why a command is denied, as the denial code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyReason {
    SecurityDeny,
    UserDenied,
    AllowlistMiss,
    AskDeny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    RequiresPrompt,
    Deny(DenyReason),
}

pub fn evaluate(evaluation: Evaluation, decision: Option<Decision>) -> Verdict {
    if evaluation.security == Security::Deny {
        return Verdict::Deny(DenyReason::SecurityDeny);
    }
    if decision == Some(Decision::Deny) {
        return Verdict::Deny(DenyReason::UserDenied);
    }
    if decision.is_none() && requires_prompt(evaluation) {
        return Verdict::RequiresPrompt;
    }
    let approved = decision.is_some();
    if evaluation.security == Security::Allowlist && !evaluation.allowlist_matched && !approved {
        return Verdict::Deny(DenyReason::AllowlistMiss);
    }
    if evaluation.ask == Ask::Deny && !approved && !evaluation.allowlist_matched {
        return Verdict::Deny(DenyReason::AskDeny);
    }
    Verdict::Allow
}

fn requires_prompt(evaluation: Evaluation) -> bool {
    match evaluation.ask {
        Ask::Always => true,
        Ask::OnMiss => evaluation.security == Security::Allowlist && !evaluation.allowlist_matched,
        Ask::Off | Ask::Deny => false,
    }
}

/// The decision that stands in for a human who did not answer in time: the looser of
/// `askFallback` is capped by `security` (a fallback never grants more than the policy), then
/// full allows once, allowlist allows once only if the allowlist matched, deny denies.
pub fn fallback_decision(security: Security, ask_fallback: Security, allowlist_matched: bool) -> Decision {
    match security.min(ask_fallback) {
        Security::Full => Decision::AllowOnce,
        Security::Allowlist if allowlist_matched => Decision::AllowOnce,
        Security::Allowlist | Security::Deny => Decision::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECURITIES: [Security; 3] = [Security::Deny, Security::Allowlist, Security::Full];
    const ASKS: [Ask; 4] = [Ask::Off, Ask::OnMiss, Ask::Always, Ask::Deny];
    const DECISIONS: [Option<Decision>; 4] =
        [None, Some(Decision::AllowOnce), Some(Decision::AllowAlways), Some(Decision::Deny)];

    fn eval(security: Security, ask: Ask, allowlist_matched: bool) -> Evaluation {
        Evaluation { security, ask, allowlist_matched }
    }

    #[test]
    fn security_deny_overrides_everything() {
        for ask in ASKS {
            for matched in [false, true] {
                for decision in DECISIONS {
                    assert_eq!(
                        evaluate(eval(Security::Deny, ask, matched), decision),
                        Verdict::Deny(DenyReason::SecurityDeny),
                        "{ask:?} {matched} {decision:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_human_deny_denies_whenever_security_is_not_deny() {
        for security in [Security::Allowlist, Security::Full] {
            for ask in ASKS {
                for matched in [false, true] {
                    assert_eq!(
                        evaluate(eval(security, ask, matched), Some(Decision::Deny)),
                        Verdict::Deny(DenyReason::UserDenied)
                    );
                }
            }
        }
    }

    #[test]
    fn ask_always_prompts_even_when_the_allowlist_matches() {
        for security in [Security::Allowlist, Security::Full] {
            for matched in [false, true] {
                assert_eq!(evaluate(eval(security, Ask::Always, matched), None), Verdict::RequiresPrompt);
            }
        }
    }

    #[test]
    fn ask_on_miss_prompts_only_for_an_allowlist_miss() {
        assert_eq!(evaluate(eval(Security::Allowlist, Ask::OnMiss, false), None), Verdict::RequiresPrompt);
        assert_eq!(evaluate(eval(Security::Allowlist, Ask::OnMiss, true), None), Verdict::Allow);
        assert_eq!(evaluate(eval(Security::Full, Ask::OnMiss, false), None), Verdict::Allow, "full never misses");
    }

    #[test]
    fn allowlist_miss_without_prompt_or_approval() {
        assert_eq!(
            evaluate(eval(Security::Allowlist, Ask::Off, false), None),
            Verdict::Deny(DenyReason::AllowlistMiss)
        );
        assert_eq!(
            evaluate(eval(Security::Allowlist, Ask::Deny, false), None),
            Verdict::Deny(DenyReason::AllowlistMiss),
            "the allowlist miss is reported before ask=deny"
        );
        assert_eq!(evaluate(eval(Security::Allowlist, Ask::Off, true), None), Verdict::Allow);
    }

    #[test]
    fn ask_deny_denies_unmatched_commands_without_asking() {
        assert_eq!(evaluate(eval(Security::Full, Ask::Deny, false), None), Verdict::Deny(DenyReason::AskDeny));
        assert_eq!(evaluate(eval(Security::Full, Ask::Deny, true), None), Verdict::Allow, "a match answers it");
        assert_eq!(evaluate(eval(Security::Allowlist, Ask::Deny, true), None), Verdict::Allow);
    }

    #[test]
    fn an_approval_allows_an_allowlist_miss() {
        for decision in [Decision::AllowOnce, Decision::AllowAlways] {
            for ask in ASKS {
                assert_eq!(evaluate(eval(Security::Allowlist, ask, false), Some(decision)), Verdict::Allow);
                assert_eq!(evaluate(eval(Security::Full, ask, false), Some(decision)), Verdict::Allow);
            }
        }
    }

    #[test]
    fn full_with_ask_off_allows_everything() {
        for matched in [false, true] {
            assert_eq!(evaluate(eval(Security::Full, Ask::Off, matched), None), Verdict::Allow);
        }
    }

    #[test]
    fn the_second_pass_never_asks_again() {
        for security in SECURITIES {
            for ask in ASKS {
                for matched in [false, true] {
                    for decision in DECISIONS.into_iter().flatten() {
                        assert_ne!(evaluate(eval(security, ask, matched), Some(decision)), Verdict::RequiresPrompt);
                    }
                }
            }
        }
    }

    #[test]
    fn fallback_is_capped_by_security() {
        assert_eq!(fallback_decision(Security::Full, Security::Full, false), Decision::AllowOnce);
        assert_eq!(fallback_decision(Security::Allowlist, Security::Full, false), Decision::Deny);
        assert_eq!(fallback_decision(Security::Allowlist, Security::Full, true), Decision::AllowOnce);
        assert_eq!(fallback_decision(Security::Full, Security::Allowlist, true), Decision::AllowOnce);
        assert_eq!(fallback_decision(Security::Full, Security::Allowlist, false), Decision::Deny);
        assert_eq!(fallback_decision(Security::Full, Security::Deny, true), Decision::Deny);
    }
}
