//! `device.*` commands (being built).
