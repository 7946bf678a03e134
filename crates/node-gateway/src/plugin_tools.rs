//! `node.pluginTools.update`: every served command published to the gateway's agent as a plugin
//! tool behind `mcp.tools.call.v1`, which the gateway's Linux allowlist admits by default. So
//! `device.status` (and every later capability) is callable from a gateway agent with no
//! `gateway.nodes.commands.allow` entry, while the gateway's own allowlist still governs direct
//! `node.invoke`.
//!
//! The gateway's limits (`docs/gateway-protocol.md` §10.5): at most 128 descriptors, names
//! `^[A-Za-z][A-Za-z0-9_-]*` up to 64 characters, descriptions up to 1024 characters. Our
//! dotted names become underscored (`device.status` -> `device_status`); `mcp.tool` keeps the
//! real name, which is what a call carries back.
//!
//! Not published: the `system.run` family and `system.execApprovals.*`. The gateway reaches those
//! through its own flows (the exec tool's prepare -> approve -> re-invoke, and
//! `exec.approvals.node.*`), which a second path would bypass.

use clawmcp_node::capability::Command;
use serde_json::{Value, json};
use tracing::warn;

/// The node command that runs a published tool.
pub const MCP_TOOLS_CALL: &str = "mcp.tools.call.v1";
/// `mcp.server` in every descriptor, and the only server a call may name.
pub const SERVER_NAME: &str = "clawmcp";
/// `pluginId` of the descriptors (the real node host's id for MCP-backed tools).
pub const PLUGIN_ID: &str = "node-mcp";

pub const MAX_TOOLS: usize = 128;
pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Commands that have their own gateway flow: never published as plugin tools, and refused when
/// a `mcp.tools.call.v1` names them anyway (the published set and the callable set are one).
pub fn has_gateway_flow(name: &str) -> bool {
    name == "system.run" || name == "system.run.prepare" || name.starts_with("system.execApprovals.")
}

/// The gateway-side name of command `name`, or `None` when it cannot be made valid.
pub fn tool_name(name: &str) -> Option<String> {
    let mapped: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let valid =
        mapped.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && mapped.chars().count() <= MAX_NAME_CHARS;
    valid.then_some(mapped)
}

/// `node.pluginTools.update`'s params for `commands`.
pub fn update_params(commands: &[Command]) -> Value {
    let mut tools = Vec::new();
    for command in commands.iter().filter(|command| !has_gateway_flow(command.name())) {
        let Some(name) = tool_name(command.name()) else {
            warn!(command = command.name(), "not published as a gateway plugin tool: no valid gateway name");
            continue;
        };
        if tools.len() == MAX_TOOLS {
            warn!(
                limit = MAX_TOOLS,
                "more commands than the gateway accepts as plugin tools; the rest are not published"
            );
            break;
        }
        let tool = command.tool();
        let description: String = tool.description.chars().take(MAX_DESCRIPTION_CHARS).collect();
        tools.push(json!({
            "pluginId": PLUGIN_ID,
            "name": name,
            "description": description,
            "parameters": tool.input_schema,
            "command": MCP_TOOLS_CALL,
            "mcp": {"server": SERVER_NAME, "tool": command.name()},
        }));
    }
    json!({ "tools": tools })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_gateway_names_or_are_left_out() {
        assert_eq!(tool_name("device.status").as_deref(), Some("device_status"));
        assert_eq!(tool_name("system.execApprovals.get").as_deref(), Some("system_execApprovals_get"));
        assert_eq!(tool_name("a-b.c").as_deref(), Some("a-b_c"));
        assert_eq!(tool_name("9lives"), None, "must start with a letter");
        assert_eq!(tool_name(&"x".repeat(MAX_NAME_CHARS)).map(|n| n.len()), Some(MAX_NAME_CHARS));
        assert_eq!(tool_name(&"x".repeat(MAX_NAME_CHARS + 1)), None);
    }
}
