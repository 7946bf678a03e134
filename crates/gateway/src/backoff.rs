//! The reconnect delay schedule: exponential from [`BackoffPolicy::initial`] to
//! [`BackoffPolicy::max`], plus up to [`BackoffPolicy::jitter`] of random extra delay.
//!
//! OpenClaw's reference client uses 1 s doubling to 30 s without jitter. We start at 0.5 s (a
//! gateway restart is usually over quickly) and add jitter so that many bridges restarted by
//! one gateway restart do not reconnect in lockstep.

use std::time::Duration;

/// How long to wait between reconnect attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffPolicy {
    /// The delay before the first reconnect attempt after a drop.
    pub initial: Duration,
    /// The ceiling the doubling stops at.
    pub max: Duration,
    /// Extra random delay as a fraction of the current delay (0.0 to 1.0).
    pub jitter: f64,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy { initial: Duration::from_millis(500), max: Duration::from_secs(30), jitter: 0.2 }
    }
}

/// The running state of one reconnect sequence; [`Backoff::reset`] after a successful connect.
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: BackoffPolicy,
    next: Duration,
}

impl Backoff {
    pub fn new(policy: BackoffPolicy) -> Self {
        Backoff { policy, next: policy.initial }
    }

    /// The delay to wait now; the following one doubles (up to `max`).
    pub fn next_delay(&mut self) -> Duration {
        let base = self.next.min(self.policy.max);
        self.next = base.saturating_mul(2).min(self.policy.max);
        base + base.mul_f64(self.policy.jitter.clamp(0.0, 1.0) * random_unit())
    }

    pub fn reset(&mut self) {
        self.next = self.policy.initial;
    }
}

/// A uniform random number in `[0, 1)`; 0 if the OS RNG fails (jitter is a nicety).
fn random_unit() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_ceiling_with_bounded_jitter() {
        let policy = BackoffPolicy { initial: Duration::from_millis(500), max: Duration::from_secs(4), jitter: 0.2 };
        let mut backoff = Backoff::new(policy);
        let bases = [500, 1000, 2000, 4000, 4000, 4000];
        for base in bases {
            let base = Duration::from_millis(base);
            let delay = backoff.next_delay();
            assert!(delay >= base && delay <= base.mul_f64(1.2), "{delay:?} outside [{base:?}, 1.2x]");
        }
        backoff.reset();
        let delay = backoff.next_delay();
        assert!(delay >= Duration::from_millis(500) && delay <= Duration::from_millis(600));
    }

    #[test]
    fn without_jitter_the_schedule_is_exact() {
        let policy = BackoffPolicy { initial: Duration::from_secs(1), max: Duration::from_secs(3), jitter: 0.0 };
        let mut backoff = Backoff::new(policy);
        let delays: Vec<_> = (0..4).map(|_| backoff.next_delay().as_secs()).collect();
        assert_eq!(delays, [1, 2, 3, 3]);
    }
}
