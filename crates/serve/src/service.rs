//! The MCP face of the bridge: what `initialize`, `tools/list`, `tools/call` and client
//! notifications see. The dispatcher (`clawmcp-mcp`) owns the protocol; this owns the answers.
//!
//! Capabilities match upstream's MCP SDK server: `tools: {listChanged: true}`, plus the Claude
//! `experimental` entries when channel mode is on (listed first, as upstream's JSON has it).

use std::sync::Arc;

use clawmcp_mcp::{CallContext, McpService, Tool, ToolFilter, ToolResult, ToolSet};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tracing::debug;

use crate::args::unknown_tool_message;
use crate::bridge::Bridge;
use crate::tools;

/// The one client notification the bridge handles (Claude channel mode).
pub const PERMISSION_REQUEST_NOTIFICATION: &str = "notifications/claude/channel/permission_request";

pub(crate) struct ServeService {
    bridge: Arc<Bridge>,
    /// The nine tools (`tools::tool_set`): `tools/list` and `tools/call` both derive from it.
    tools: ToolSet<Map<String, Value>>,
}

impl ServeService {
    pub(crate) fn new(bridge: Arc<Bridge>) -> Self {
        ServeService { tools: tools::tool_set(&bridge), bridge }
    }

    /// The tools served; a test adds one here and sees it listed and called.
    #[cfg(test)]
    pub(crate) fn tools(&self) -> &ToolSet<Map<String, Value>> {
        &self.tools
    }
}

impl McpService for ServeService {
    /// Every tool: upstream's bridge has no tool filter, and neither has this drop-in.
    fn list_tools(&self) -> Vec<Tool> {
        self.tools.list(&ToolFilter::all())
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, ToolResult> {
        async move {
            match self.tools.find(name) {
                Some(tool) => tool.call_mcp(arguments, ctx).await,
                // The SDK's wording, not the core's `Unknown tool` (a drop-in answers as upstream).
                None => ToolResult::error(unknown_tool_message(name)),
            }
        }
        .boxed()
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clawmcp_mcp::{ToolAnnotations, ToolDef};
    use serde_json::json;

    use super::*;
    use crate::claude::{ClaudeChannelMode, Notifier};
    use crate::queue::QueueLimits;

    fn service() -> ServeService {
        let bridge = Bridge::new(ClaudeChannelMode::Off, QueueLimits::default(), Notifier::new(None), Duration::ZERO);
        ServeService::new(bridge)
    }

    fn names(tools: Vec<Tool>) -> Vec<String> {
        tools.into_iter().map(|tool| tool.name).collect()
    }

    async fn call(service: &ServeService, name: &str, arguments: Value) -> ToolResult {
        service.call_tool(name, arguments.as_object().unwrap().clone(), CallContext::detached()).await
    }

    /// Answers with its arguments; it takes one integer `x`.
    fn throwaway() -> ToolDef<Map<String, Value>> {
        let descriptor = Tool {
            name: "throwaway".into(),
            title: None,
            description: "Answers with its arguments (a test's tool).".into(),
            input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}).into(),
            output_schema: None,
            annotations: Some(ToolAnnotations::READ_ONLY),
        };
        ToolDef::new(descriptor, |arguments, _ctx| std::future::ready(Ok(Value::Object(arguments).into())).boxed())
    }

    #[tokio::test]
    async fn a_registered_tool_is_listed_filtered_and_called_with_no_other_change() {
        let service = service();
        assert_eq!(names(service.list_tools()).len(), 9);
        service.tools().register([throwaway()]);
        let listed = names(service.list_tools());
        assert_eq!((listed.len(), listed.last().map(String::as_str)), (10, Some("throwaway")));
        let only = ToolFilter::parse("throw*").unwrap();
        assert_eq!(names(service.tools().list(&only)), ["throwaway"]);
        let ran = call(&service, "throwaway", json!({"x": 7})).await;
        assert_eq!((ran.is_error, ran.first_text()), (false, Some(r#"{"x":7}"#)));
        // A new tool of ours gets the core's schema check; upstream's nine keep zod's words.
        let refused = call(&service, "throwaway", json!({"x": "seven"})).await;
        assert!(refused.first_text().unwrap().starts_with("Invalid arguments for throwaway: `x` must be an integer"));
        assert_eq!(
            call(&service, "throwawya", json!({})).await.first_text(),
            Some("MCP error -32602: Tool throwawya not found"),
            "the SDK's wording for an unknown tool"
        );
    }

    #[tokio::test]
    async fn upstreams_tools_answer_bad_arguments_in_zods_words_not_the_cores() {
        let service = service();
        let missing = call(&service, "conversation_get", json!({})).await;
        assert_eq!(
            (missing.is_error, missing.first_text()),
            (
                true,
                Some(
                    "MCP error -32602: Input validation error: Invalid arguments for tool conversation_get: Invalid \
                     input: expected string, received undefined at session_key"
                )
            )
        );
        let small = call(&service, "events_poll", json!({"limit": 0, "extra": true})).await;
        assert_eq!(
            small.first_text(),
            Some(
                "MCP error -32602: Input validation error: Invalid arguments for tool events_poll: Too small: \
                 expected number to be >=1 at limit"
            )
        );
        let polled = call(&service, "events_poll", json!({})).await;
        assert_eq!(
            (polled.first_text(), &polled.structured_content),
            (Some("events: 0"), &Some(json!({"events": [], "next_cursor": 0})))
        );
    }
}
