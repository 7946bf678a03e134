//! The MCP face of the bridge: what `initialize`, `tools/list`, `tools/call` and client
//! notifications see. The dispatcher (`clawmcp-mcp`) owns the protocol; this owns the answers.
//!
//! Capabilities match upstream's MCP SDK server: `tools: {listChanged: true}`, plus the Claude
//! `experimental` entries when channel mode is on (listed first, as upstream's JSON has it).

use std::sync::Arc;

use clawmcp_mcp::{CallContext, McpService, Tool, ToolResult};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tracing::debug;

use crate::bridge::Bridge;
use crate::tools;

/// The one client notification the bridge handles (Claude channel mode).
pub const PERMISSION_REQUEST_NOTIFICATION: &str = "notifications/claude/channel/permission_request";

pub(crate) struct ServeService {
    bridge: Arc<Bridge>,
    tools: Vec<Tool>,
}

impl ServeService {
    pub(crate) fn new(bridge: Arc<Bridge>) -> Self {
        ServeService { bridge, tools: tools::descriptors() }
    }
}

impl McpService for ServeService {
    fn list_tools(&self) -> Vec<Tool> {
        self.tools.clone()
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, ToolResult> {
        async move { tools::call(&self.bridge, name, &arguments, &ctx).await }.boxed()
    }

    fn capabilities(&self) -> Value {
        let mut capabilities = Map::new();
        if let Some(experimental) = self.bridge.mode().experimental_capabilities() {
            capabilities.insert("experimental".into(), experimental);
        }
        capabilities.insert("tools".into(), json!({"listChanged": true}));
        Value::Object(capabilities)
    }

    fn notification(&self, method: &str, params: Option<Value>) {
        if method == PERMISSION_REQUEST_NOTIFICATION {
            self.bridge.claude_permission_request(params.as_ref());
        } else {
            debug!(%method, "ignoring a client notification");
        }
    }
}
