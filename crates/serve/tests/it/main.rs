//! Integration tests of `clawmcp serve` against the in-repo fake gateway (`clawmcp-testkit`):
//! a whole session over in-memory stdio pipes, driven by a minimal MCP client.
//!
//! One test binary, one module per topic. Timers run on tokio's paused clock (`start_paused`),
//! so timeouts, TTLs and reconnects are exercised without sleeping and without any wall-clock
//! assertion; every wait is bounded by [`support::within`] so a broken bridge fails instead of
//! hanging.

mod claude;
mod events;
mod faults;
mod lifecycle;
mod metadata;
mod support;
mod tools;
