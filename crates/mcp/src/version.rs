//! The MCP protocol revisions this core speaks, and the one negotiation rule every surface uses.
//!
//! Current clients send 2025-06-18 or 2025-11-25, and some drop (Claude Code dropped servers
//! answering 2025-03-26) or silently fail (Codex against 2024-11-05) against a server that only
//! speaks an old revision. So `initialize` answers the client's revision when it is one of
//! [`ProtocolVersion::SUPPORTED`], otherwise the newest, and never fails over a version. Each
//! revision's additions are emitted only to clients that negotiated it ([`ProtocolVersion::at_least`]):
//! a 2024-11-05 client sees exactly the bytes it saw before.

use std::fmt;

/// One MCP revision, ordered oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// The revision the upstream tray answers (`docs/node-http.md` §10); tool annotations were
    /// later formalised but the tray sends them to every client, and so do we.
    V2024_11_05,
    /// Streamable HTTP, audio content.
    V2025_03_26,
    /// `title`, `outputSchema`, `structuredContent`, `resource_link` content, the
    /// `MCP-Protocol-Version` header.
    V2025_06_18,
    /// Icons, tool-name rules.
    V2025_11_25,
}

impl ProtocolVersion {
    /// Every revision served, newest first (the order `initialize` prefers).
    pub const SUPPORTED: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The newest revision served.
    pub const NEWEST: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// What a stateless HTTP request that names no revision (no `MCP-Protocol-Version` header) is
    /// served as: the MCP spec's rule for a missing header is to assume 2025-03-26, and that
    /// revision adds nothing a 2024-11-05 client would see.
    pub const WITHOUT_HEADER: ProtocolVersion = ProtocolVersion::V2025_03_26;

    pub fn parse(text: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::SUPPORTED.into_iter().find(|version| version.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
        }
    }

    /// True when this revision includes everything `other` introduced.
    pub fn at_least(self, other: ProtocolVersion) -> bool {
        self >= other
    }

    /// The revision to answer a client that asked for `requested` (`initialize`'s
    /// `protocolVersion`): the same when served, otherwise the newest. Never an error: a client
    /// that cannot use the answer says so itself, which beats refusing it.
    pub fn negotiate(requested: Option<&str>) -> ProtocolVersion {
        requested.and_then(ProtocolVersion::parse).unwrap_or(ProtocolVersion::NEWEST)
    }

    /// The revision a request's `MCP-Protocol-Version` header names, leniently: a served revision
    /// is used as is; anything else (a newer revision, a typo) is served as the newest we know,
    /// never refused. Clients are known to send a newer header than they negotiated (Claude
    /// Code sends 2025-11-25 after negotiating older), and every field we emit is one they parse.
    pub fn from_header(value: &str) -> ProtocolVersion {
        ProtocolVersion::parse(value.trim()).unwrap_or(ProtocolVersion::NEWEST)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_revision_is_echoed_anything_else_gets_the_newest() {
        for version in ProtocolVersion::SUPPORTED {
            assert_eq!(ProtocolVersion::negotiate(Some(version.as_str())), version);
            assert_eq!(ProtocolVersion::parse(&version.to_string()), Some(version));
        }
        for other in [None, Some("2024-10-07"), Some("2026-07-28"), Some(""), Some("latest")] {
            assert_eq!(ProtocolVersion::negotiate(other), ProtocolVersion::V2025_11_25, "{other:?}");
        }
    }

    #[test]
    fn revisions_are_ordered_and_headers_are_lenient() {
        assert!(ProtocolVersion::V2025_06_18.at_least(ProtocolVersion::V2025_03_26));
        assert!(!ProtocolVersion::V2025_03_26.at_least(ProtocolVersion::V2025_06_18));
        assert_eq!(ProtocolVersion::from_header(" 2025-06-18 "), ProtocolVersion::V2025_06_18);
        assert_eq!(ProtocolVersion::from_header("2099-01-01"), ProtocolVersion::NEWEST);
    }
}
