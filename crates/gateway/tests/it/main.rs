//! Integration tests of `clawmcp-gateway` against the in-repo fake gateway (`clawmcp-testkit`).
//!
//! One test binary (compile once), one module per topic. Timers run on tokio's paused clock
//! (`start_paused`), so timeouts, backoff and the tick watchdog are exercised without sleeping
//! and without any wall-clock assertion; every wait is wrapped in [`support::within`] so a
//! broken client fails the test instead of hanging it.

mod config;
mod connection;
mod faults;
mod persistent;
mod requests;
mod support;
mod tools_invoke;
