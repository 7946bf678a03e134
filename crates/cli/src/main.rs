//! The clawmcp binary.
fn main() {}
