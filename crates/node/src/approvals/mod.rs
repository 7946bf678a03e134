//! The V2 exec-approval policy (being built).
