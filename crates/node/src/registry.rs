//! The live capability list (single source of truth) and its MCP face.
//!
//! [`Registry`] holds capabilities in registration order; [`NodeMcpService`] turns it into MCP
//! `tools/list` and `tools/call` by reading the registry on every call, so a capability
//! registered after start appears on the next list with no other change.

use std::sync::{Arc, RwLock};

use clawmcp_mcp::{CallContext, McpService, RpcError, Tool, ToolResult, permissive_schema};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use crate::capability::{Capability, CommandSpec, InvokeRequest};

/// Capabilities in registration order. Cheap to share.
#[derive(Default)]
pub struct Registry {
    capabilities: RwLock<Vec<Arc<dyn Capability>>>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a capability; it is visible to the next `tools/list` on every transport.
    pub fn register(&self, capability: Arc<dyn Capability>) {
        self.capabilities.write().unwrap_or_else(|p| p.into_inner()).push(capability);
    }

    /// The current list.
    pub fn snapshot(&self) -> Vec<Arc<dyn Capability>> {
        self.capabilities.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Every command currently served, with the capability serving it, in registration order.
    pub fn commands(&self) -> Vec<(Arc<dyn Capability>, CommandSpec)> {
        self.snapshot()
            .into_iter()
            .flat_map(|cap| cap.commands().into_iter().map(move |spec| (cap.clone(), spec)))
            .collect()
    }

    /// The first capability owning `command` (exact, case-sensitive match, as MCP tool names
    /// are; see [`Capability::handles`]).
    pub fn find(&self, command: &str) -> Option<Arc<dyn Capability>> {
        self.snapshot().into_iter().find(|cap| cap.handles(command))
    }
}

/// The description a command publishes: curated, or the spec's fallback.
pub fn describe(category: &str, spec: &CommandSpec) -> String {
    match spec.description {
        Some(text) => text.to_string(),
        None => format!("{category} capability: {}", spec.name),
    }
}

/// Converts one command into its MCP tool descriptor (taking the spec: schemas are moved, not
/// copied, since `tools/list` builds them on every call).
pub fn tool_for(capability: &dyn Capability, spec: CommandSpec) -> Tool {
    Tool {
        name: spec.name.to_string(),
        description: describe(capability.category(), &spec),
        input_schema: spec.input_schema.unwrap_or_else(permissive_schema),
        annotations: Some(spec.annotations),
    }
}

/// Extra JSON-RPC methods the node serves beside MCP (the terminal approvals API). Kept out of
/// `tools/list` on purpose: an agent must not be able to approve its own commands.
pub trait LocalMethods: Send + Sync + 'static {
    fn handle<'a>(&'a self, method: &'a str, params: Option<Value>) -> Option<BoxFuture<'a, Result<Value, RpcError>>>;
}

/// The registry served as an MCP service.
pub struct NodeMcpService {
    registry: Arc<Registry>,
    local_methods: Vec<Arc<dyn LocalMethods>>,
}

impl NodeMcpService {
    pub fn new(registry: Arc<Registry>) -> Self {
        NodeMcpService { registry, local_methods: Vec::new() }
    }

    /// Adds a provider of local (non-tool) JSON-RPC methods.
    pub fn with_local_methods(mut self, methods: Arc<dyn LocalMethods>) -> Self {
        self.local_methods.push(methods);
        self
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

impl McpService for NodeMcpService {
    fn list_tools(&self) -> Vec<Tool> {
        self.registry.commands().into_iter().map(|(cap, spec)| tool_for(cap.as_ref(), spec)).collect()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Map<String, Value>, ctx: CallContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let Some(capability) = self.registry.find(name) else {
                return ToolResult::error(format!("Unknown tool: {name}"));
            };
            let request = InvokeRequest { id: new_invoke_id(), command: name.to_string(), args, session_key: None };
            match capability.invoke(request, ctx).await {
                Ok(payload) => ToolResult::json(&payload),
                Err(error) if error.message.is_empty() => ToolResult::error("tool execution failed"),
                Err(error) => ToolResult::error(error.message),
            }
        }
        .boxed()
    }

    fn custom_request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> Option<BoxFuture<'a, Result<Value, RpcError>>> {
        self.local_methods.iter().find_map(|m| m.handle(method, params.clone()))
    }
}

/// A random invocation id (128 bits, hex), like the GUID upstream builds per MCP call.
pub fn new_invoke_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
