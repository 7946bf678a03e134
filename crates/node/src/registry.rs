//! The live capability list (single source of truth), the tool filter, and their MCP face.
//!
//! [`Registry`] holds capabilities in registration order; [`Registry::builtin`] is the one list
//! of what `clawmcp node` serves (the binary, the metadata tests and the README drift test all
//! build it there). [`NodeMcpService`] turns it into MCP `tools/list` and `tools/call` by
//! reading the registry on every call, so a capability registered after start appears on the
//! next list with no other change.
//!
//! [`ToolFilter`] (`clawmcp node --tools`, shared with the other surfaces from `clawmcp-mcp`)
//! narrows what is served, on `tools/list` *and* `tools/call`.

use std::sync::{Arc, RwLock};

use clawmcp_mcp::{CallContext, McpService, RpcError, Tool, ToolResult, permissive_schema};
pub use clawmcp_mcp::{ToolFilter, ToolFilterError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use crate::approvals::ExecApprovals;
use crate::capability::{Capability, CommandSpec, InvokeRequest};
use crate::device::DeviceCapability;
use crate::settings::LiveSettings;
use crate::system::SystemCapability;

/// Capabilities in registration order. Cheap to share.
#[derive(Default)]
pub struct Registry {
    capabilities: RwLock<Vec<Arc<dyn Capability>>>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Every capability `clawmcp node` serves, in the published order (`system.*`, then
    /// `device.*`). A new capability is registered here and nowhere else.
    pub fn builtin(settings: Arc<LiveSettings>, approvals: Arc<ExecApprovals>) -> Self {
        let registry = Registry::new();
        registry.register(Arc::new(SystemCapability::new(settings, approvals)));
        registry.register(Arc::new(DeviceCapability::new()));
        registry
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

    /// The patterns of `filter` that select no command. A command switched off right now (the
    /// system-run switch) still counts when a pattern names it exactly, since the switch can
    /// come back on while the node runs.
    pub fn unmatched_patterns<'f>(&self, filter: &'f ToolFilter) -> Vec<&'f str> {
        let commands = self.commands();
        let served = commands.iter().map(|(_, spec)| spec.name);
        filter.unmatched(served).into_iter().filter(|pattern| self.find(pattern).is_none()).collect()
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
        title: None,
        output_schema: None,
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
    filter: ToolFilter,
    local_methods: Vec<Arc<dyn LocalMethods>>,
}

impl NodeMcpService {
    pub fn new(registry: Arc<Registry>) -> Self {
        NodeMcpService { registry, filter: ToolFilter::all(), local_methods: Vec::new() }
    }

    /// Serves only the tools `filter` allows, on `tools/list` and `tools/call` alike.
    pub fn with_filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
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
        self.registry
            .commands()
            .into_iter()
            .filter(|(_, spec)| self.filter.allows(spec.name))
            .map(|(cap, spec)| tool_for(cap.as_ref(), spec))
            .collect()
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Map<String, Value>, ctx: CallContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let Some(capability) = self.registry.find(name) else {
                return ToolResult::error(format!("Unknown tool: {name}"));
            };
            if !self.filter.allows(name) {
                return ToolResult::error(format!(
                    "Tool {name} is not served: this node was started with the tool filter `{}` (clawmcp node \
                     --tools or CLAWMCP_NODE_TOOLS), which does not match it. Restart the node with a filter that \
                     includes {name} to use it.",
                    self.filter.describe()
                ));
            }
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

#[cfg(test)]
mod tests {
    use clawmcp_mcp::ToolAnnotations;

    use super::*;
    use crate::capability::InvokeResult;

    /// Serves `names`; every call answers with the command it ran.
    struct Echo(&'static [&'static str]);

    impl Capability for Echo {
        fn category(&self) -> &'static str {
            "echo"
        }

        fn commands(&self) -> Vec<CommandSpec> {
            let spec = |name| CommandSpec {
                name,
                description: Some("echo"),
                input_schema: None,
                annotations: ToolAnnotations::READ_ONLY,
            };
            self.0.iter().copied().map(spec).collect()
        }

        fn invoke<'a>(&'a self, request: InvokeRequest, _ctx: CallContext) -> BoxFuture<'a, InvokeResult> {
            async move { Ok(Value::String(request.command)) }.boxed()
        }
    }

    const NAMES: &[&str] = &["system.which", "system.run", "system.run.prepare", "device.info", "device.status"];

    fn allowed(spec: &str) -> Vec<&'static str> {
        let filter = ToolFilter::parse(spec).unwrap();
        NAMES.iter().copied().filter(|name| filter.allows(name)).collect()
    }

    #[test]
    fn star_crosses_dots_and_names_are_exact_and_case_sensitive() {
        assert_eq!(allowed("system.which,device.*"), ["system.which", "device.info", "device.status"]);
        assert_eq!(allowed("system.run*"), ["system.run", "system.run.prepare"]);
        assert_eq!(allowed("*"), NAMES);
        assert_eq!(allowed("system.run"), ["system.run"], "a plain name is exact, not a prefix");
        assert!(allowed("Device.*").is_empty());
        assert_eq!(allowed("device.?nfo"), ["device.info"]);
    }

    #[test]
    fn commas_split_patterns_except_inside_braces() {
        assert_eq!(allowed(" system.{which,run} , device.info ,"), ["system.which", "system.run", "device.info"]);
    }

    #[test]
    fn blank_lists_allow_everything() {
        for blank in ["", " ", ",", " , ,"] {
            let filter = ToolFilter::parse(blank).unwrap();
            assert!(!filter.is_restricted() && filter.allows("anything"), "{blank:?}");
        }
        assert!(ToolFilter::parse("device.*").unwrap().is_restricted());
    }

    #[test]
    fn a_bad_glob_names_the_pattern() {
        let error = ToolFilter::parse("system.which,device.[").unwrap_err();
        assert_eq!(error.pattern, "device.[");
        assert!(error.to_string().contains("`device.[`") && error.to_string().contains("comma-separated globs"));
        assert!(ToolFilter::parse("system.{which").is_err());
    }

    #[test]
    fn unmatched_lists_each_pattern_that_selects_nothing() {
        let filter = ToolFilter::parse("system.which,sytem.*,device.*,nope").unwrap();
        assert_eq!(filter.unmatched(NAMES.iter().copied()), ["sytem.*", "nope"]);
        assert!(ToolFilter::all().unmatched(NAMES.iter().copied()).is_empty());
        assert_eq!(filter.describe(), "system.which,sytem.*,device.*,nope");
    }

    #[tokio::test]
    async fn the_service_lists_and_runs_only_what_the_filter_allows() {
        let registry = Arc::new(Registry::new());
        registry.register(Arc::new(Echo(NAMES)));
        let filter = ToolFilter::parse("system.which,device.*").unwrap();
        assert_eq!(registry.unmatched_patterns(&filter), Vec::<&str>::new());
        let service = NodeMcpService::new(registry).with_filter(filter);

        let listed: Vec<String> = service.list_tools().into_iter().map(|tool| tool.name).collect();
        assert_eq!(listed, ["system.which", "device.info", "device.status"]);

        let ran = service.call_tool("device.info", Map::new(), CallContext::detached()).await;
        assert_eq!((ran.is_error, ran.first_text()), (false, Some("\"device.info\"")));
        let refused = service.call_tool("system.run", Map::new(), CallContext::detached()).await;
        assert!(refused.is_error);
        let text = refused.first_text().unwrap();
        assert!(text.contains("system.run is not served") && text.contains("`system.which,device.*`"), "{text}");
        let unknown = service.call_tool("system.nope", Map::new(), CallContext::detached()).await;
        assert_eq!(unknown.first_text(), Some("Unknown tool: system.nope"));
    }

    #[test]
    fn a_pattern_naming_a_hidden_command_exactly_still_counts() {
        /// Lists nothing, but owns `system.run` (as the run switch does when off).
        struct Hidden;
        impl Capability for Hidden {
            fn category(&self) -> &'static str {
                "system"
            }
            fn commands(&self) -> Vec<CommandSpec> {
                Vec::new()
            }
            fn handles(&self, command: &str) -> bool {
                command == "system.run"
            }
            fn invoke<'a>(&'a self, _request: InvokeRequest, _ctx: CallContext) -> BoxFuture<'a, InvokeResult> {
                async { Err("off".into()) }.boxed()
            }
        }
        let registry = Registry::new();
        registry.register(Arc::new(Hidden));
        let filter = ToolFilter::parse("system.run,system.run*").unwrap();
        assert_eq!(registry.unmatched_patterns(&filter), ["system.run*"]);
    }
}
