//! Wall-clock milliseconds that advance with tokio's timer.
//!
//! Approval expiries arrive from the gateway as epoch milliseconds (`expiresAtMs`), so the TTLs
//! must be compared against wall-clock time. Reading `SystemTime` directly would make those
//! rules untestable under `tokio::time::pause()`; this clock takes the wall time once and then
//! adds tokio's monotonic elapsed time, which is the real wall clock in production (up to NTP
//! slew) and a controllable one in tests.

use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    epoch_ms_at_start: u64,
    started: Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        let epoch_ms_at_start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        Clock { epoch_ms_at_start, started: Instant::now() }
    }

    /// Milliseconds since the Unix epoch.
    pub(crate) fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.epoch_ms_at_start.saturating_add(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_the_paused_clock() {
        let clock = Clock::new();
        let before = clock.now_ms();
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(clock.now_ms() - before, 3_600_000);
    }
}
