//! Behaviour tests of the `clawmcp` binary: the real executable, driven as a user drives it,
//! against a real `clawmcp node` on a free loopback port with a throwaway data dir.
//!
//! One test binary, one module per user-facing topic, so the harness in [`support`] is built
//! once. These tests cover what the issue promises a user (flags, environment, output, exit
//! statuses, files on disk, live reloads, signals); the library crates test their internals.
//!
//! The node needs Unix (signals, file modes, process groups), so do these tests.

mod approvals;
mod approvals_policy;
mod call;
mod doctor;
mod errors;
mod help;
mod install;
mod lifecycle;
mod metadata;
mod models;
mod node;
mod node_mode;
mod settings;
mod state_trust;
mod stdio_proxy;
mod support;
mod token;
