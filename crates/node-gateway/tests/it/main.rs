//! Integration tests of the node's gateway link against the in-repo fake gateway, in one test
//! binary (each links the whole node: one link instead of three, about 200 MB each). `common` is
//! the built-in registry joined to a fake gateway, which `duplex` and `system_run` share.

mod common;

mod duplex;
mod link;
mod system_run;
