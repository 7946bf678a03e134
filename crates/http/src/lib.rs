//! Loopback MCP HTTP transport (being built).
