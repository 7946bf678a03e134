//! `system.*` commands (being built).
