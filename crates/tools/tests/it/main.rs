//! Integration tests of `clawmcp tools`' local tools and gateway bridge, in one test binary (one
//! link instead of thirteen). One module per tool or topic; `common` reads results,
//! `jobs_support` drives background jobs, `bridge_support` runs the bridge against the fake gateway.

mod bridge_support;
mod common;
mod jobs_support;

mod bridge_catalog;
mod bridge_forwarding;
mod bridge_metadata;
mod bridge_stdio;
mod bridge_yield;
mod edit;
mod exec;
mod glob;
mod grep;
mod process;
mod read;
mod special_files;
mod write;
