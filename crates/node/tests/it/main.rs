//! Integration tests of the node crate through its public API, in one test binary: every test
//! binary links the whole node (Chromium's protocol types, the speech stack), so one binary is one
//! link instead of eleven (about 100 MB and several seconds of linking each). One module per topic;
//! `approvals_common` and `system_support` are the shared fixtures.

mod approvals_common;
mod system_support;

mod approvals_commands;
mod approvals_operator;
mod approvals_policy;
mod approvals_prompt;
mod file_channel;
mod metadata;
mod output_schemas;
mod system_approvals;
mod system_commands;
mod system_run;
mod system_sandbox;
