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

use std::sync::Arc;

use clawmcp_mcp::server::{decode_params, decoded_custom_request};
use clawmcp_mcp::{CallContext, McpService, RequestContext, RpcError, Tool, ToolResult, ToolSet, Unserved, raw_result};
pub use clawmcp_mcp::{ToolFilter, ToolFilterError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::approvals::ExecApprovals;
use crate::camera::CameraCapability;
use crate::canvas::{CanvasCapability, CanvasOptions};
use crate::capability::{Caller, Capability, Command, InvokeRequest, category_of};
use crate::clipboard::ClipboardCapability;
use crate::device::DeviceCapability;
use crate::events::NodeEvents;
use crate::files::channel::{self, FileChannels};
use crate::files::{FilePolicy, FilesCapability};
use crate::location::LocationCapability;
use crate::screen::ScreenCapability;
use crate::settings::LiveSettings;
use crate::stt::SttCapability;
use crate::system::SystemCapability;
use crate::tts::TtsCapability;

/// Every command in registration order (the core's [`ToolSet`]). Cheap to share.
#[derive(Default)]
pub struct Registry {
    commands: ToolSet<InvokeRequest>,
    /// The file commands' roots, for status reports (set by [`Registry::builtin`]).
    file_policy: Option<FilePolicy>,
    /// The file channel the file commands attach to (set by [`Registry::builtin`]); served as
    /// methods only by a [`NodeMcpService::with_file_channel`].
    file_channels: Option<Arc<FileChannels>>,
    /// The canvas, whose browser [`Registry::shutdown`] stops (set by [`Registry::builtin`]).
    canvas: Option<CanvasCapability>,
    /// Node events the capabilities send outside a call; the gateway link routes them.
    events: Arc<NodeEvents>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Every capability `clawmcp node` serves, in the published order (`system.*`, then
    /// `device.*`). A new capability is registered here and nowhere else.
    pub fn builtin(settings: Arc<LiveSettings>, approvals: Arc<ExecApprovals>) -> Self {
        let mut registry = Registry::new();
        registry.register(&SystemCapability::new(settings.clone(), approvals));
        registry.register(&DeviceCapability::new());
        registry.register(&ScreenCapability::new(settings.clone()));
        registry.register(&CameraCapability::new(settings.clone()));
        registry.register(&ClipboardCapability::new(settings.clone()));
        registry.register(&LocationCapability::new(settings.clone()));
        registry.register(&TtsCapability::new(settings.clone()));
        registry.register(&SttCapability::new(settings.clone()));
        let options = CanvasOptions { events: registry.events.clone(), ..CanvasOptions::default() };
        let canvas = CanvasCapability::with_options(settings.clone(), options);
        registry.register(&canvas);
        registry.canvas = Some(canvas);
        let file_policy = FilePolicy::new(settings);
        let file_channels = FileChannels::new();
        registry.register(&FilesCapability::with_channels(file_policy.clone(), file_channels.clone()));
        registry.file_policy = Some(file_policy);
        registry.file_channels = Some(file_channels);
        registry
    }

    /// Stops what the capabilities keep running between calls (the canvas's browser) and waits
    /// until it is gone: the node calls this as it stops.
    pub async fn shutdown(&self) {
        if let Some(canvas) = &self.canvas {
            canvas.shutdown().await;
        }
    }

    /// Where node events go: the gateway link routes them while it is joined.
    pub fn events(&self) -> &Arc<NodeEvents> {
        &self.events
    }

    /// The file channel's table (see [`crate::files::channel`]), when the file commands are
    /// registered.
    pub fn file_channels(&self) -> Option<&Arc<FileChannels>> {
        self.file_channels.as_ref()
    }

    /// The roots the file commands serve right now (`NodeFileRoots`, default home), for
    /// `clawmcp node status` and `clawmcp doctor`; `None` when they are not registered.
    pub fn file_roots(&self) -> Option<Vec<std::path::PathBuf>> {
        self.file_policy.as_ref().map(FilePolicy::roots)
    }

    /// Adds a capability's commands; they are visible to the next `tools/list` on every
    /// transport.
    pub fn register(&self, capability: &dyn Capability) {
        self.commands.register(capability.commands());
    }

    /// Adds single commands (a test's throwaway command, an extension's).
    pub fn register_commands(&self, commands: impl IntoIterator<Item = Command>) {
        self.commands.register(commands);
    }

    /// Every command, listed right now or switched off, in registration order.
    pub fn commands(&self) -> Vec<Command> {
        self.commands.all()
    }

    /// The commands listed right now.
    pub fn listed(&self) -> Vec<Command> {
        self.commands.listed(&ToolFilter::all())
    }

    /// The commands the gateway sees right now through `filter`: listed, allowed, not local-only.
    pub fn gateway_surface(&self, filter: &ToolFilter) -> Vec<Command> {
        self.commands.listed_remotely(filter)
    }

    /// The command a gateway call named `name` reaches through `filter` (see
    /// [`ToolSet::served_remotely`]).
    pub fn served_to_gateway(&self, name: &str, filter: &ToolFilter) -> Result<Command, Unserved> {
        self.commands.served_remotely(name, filter)
    }

    /// Every command not listed right now, with why (its switch is off, its backend missing),
    /// in registration order: what `clawmcp node status` and `clawmcp doctor` report.
    pub fn unavailable(&self) -> Vec<(String, String)> {
        self.commands()
            .iter()
            .filter_map(|command| command.unavailable_reason().map(|reason| (command.name().to_owned(), reason)))
            .collect()
    }

    /// The categories served right now, in registration order (the gateway's `caps`).
    pub fn categories(&self) -> Vec<String> {
        let mut categories: Vec<String> = Vec::new();
        for command in self.listed() {
            let category = category_of(command.name());
            if !categories.iter().any(|known| known == category) {
                categories.push(category.to_owned());
            }
        }
        categories
    }

    /// The command named exactly `name` (case-sensitive, as MCP tool names are), even while
    /// switched off.
    pub fn find(&self, name: &str) -> Option<Command> {
        self.commands.find(name)
    }

    /// The patterns of `filter` that select no command. A command switched off right now (the
    /// system-run switch) still counts, since the switch can come back on while the node runs.
    pub fn unmatched_patterns<'f>(&self, filter: &'f ToolFilter) -> Vec<&'f str> {
        self.commands.unmatched_patterns(filter)
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
    /// The file channel's methods and capability, served only where set (the node's HTTP
    /// listener: the methods need a request's authentication generation).
    file_channels: Option<Arc<FileChannels>>,
}

impl NodeMcpService {
    pub fn new(registry: Arc<Registry>) -> Self {
        NodeMcpService { registry, filter: ToolFilter::all(), local_methods: Vec::new(), file_channels: None }
    }

    /// Serves the file channel (`openclaw/files/*`, advertised in `initialize` under
    /// `capabilities.experimental["openclaw/file-channel"]`): for the node's authenticated HTTP
    /// listener only. Nothing changes when the registry has no file commands.
    pub fn with_file_channel(mut self) -> Self {
        self.file_channels = self.registry.file_channels().cloned();
        self
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
        self.registry.commands.list(&self.filter)
    }

    fn call_tool<'a>(&'a self, name: &'a str, args: Map<String, Value>, ctx: CallContext) -> BoxFuture<'a, ToolResult> {
        let request = InvokeRequest {
            id: new_invoke_id(),
            command: name.to_string(),
            args,
            session_key: None,
            caller: Caller::Mcp,
        };
        self.registry
            .commands
            .call_mcp(name, request, ctx, &self.filter, |name| {
                format!(
                    "Tool {name} is not served: this node was started with the tool filter `{}` (clawmcp node \
                     --tools or CLAWMCP_NODE_TOOLS), which does not match it. Restart the node with a filter that \
                     includes {name} to use it.",
                    self.filter.describe()
                )
            })
            .boxed()
    }

    fn capabilities(&self) -> Value {
        let mut capabilities = json!({"tools": {"listChanged": false}});
        if self.file_channels.is_some() {
            capabilities["experimental"] = json!({channel::EXTENSION: channel::capability()});
        }
        capabilities
    }

    /// The file allowance is the node HTTP listener's (the service with the file channel), for
    /// the file-transfer commands this node serves.
    fn is_file_command(&self, name: &str) -> bool {
        self.file_channels.is_some() && crate::files::TRANSFER_COMMANDS.contains(&name) && self.filter.allows(name)
    }

    fn custom_request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> Option<BoxFuture<'a, Result<Value, RpcError>>> {
        self.local_methods.iter().find_map(|m| m.handle(method, params.clone()))
    }

    fn custom_request_in<'a>(
        &'a self,
        method: &'a str,
        params: Option<&'a RawValue>,
        ctx: &RequestContext,
    ) -> Option<BoxFuture<'a, Result<Box<RawValue>, RpcError>>> {
        let generation = ctx.auth_generation;
        let answer = match (&self.file_channels, method) {
            // An input's frame is read where it lies in the params (every byte of a create).
            (Some(channels), channel::INPUT) => channels.input(params, generation).and_then(|v| raw_result(&v)),
            // A poll's answer is written around frames escaped when they were made.
            (Some(channels), channel::POLL) => {
                decode_params(params).and_then(|params| channels.poll(params, generation))
            }
            (Some(channels), channel::OPEN) => {
                decode_params(params).and_then(|params| channels.open(params, generation)).and_then(|v| raw_result(&v))
            }
            (Some(channels), channel::CLOSE) => {
                decode_params(params).and_then(|params| channels.close(params, generation)).and_then(|v| raw_result(&v))
            }
            _ => return decoded_custom_request(self, method, params),
        };
        Some(futures_util::future::ready(answer).boxed())
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
    use crate::capability::CommandSpec;

    /// Commands named `names`; every call answers with the command it ran.
    fn echo(names: &[&'static str]) -> Vec<Command> {
        let spec = |name| CommandSpec {
            name,
            title: None,
            description: Some("echo"),
            input_schema: None,
            output_schema: None,
            annotations: ToolAnnotations::READ_ONLY,
        };
        names
            .iter()
            .copied()
            .map(|name| spec(name).with_handler(|request, _ctx| async move { Ok(Value::String(request.command)) }))
            .collect()
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
        registry.register_commands(echo(NAMES));
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

    #[tokio::test]
    async fn a_pattern_naming_a_hidden_command_exactly_still_counts() {
        // Listed never (as the run switch when off), but still owned and answering.
        let registry = Registry::new();
        registry.register_commands(echo(&["system.run"]).into_iter().map(|command| command.listed_while(|| false)));
        let filter = ToolFilter::parse("system.run,system.run*").unwrap();
        assert_eq!(registry.unmatched_patterns(&filter), Vec::<&str>::new());
        assert!(registry.listed().is_empty() && registry.find("system.run").is_some());
        let service = NodeMcpService::new(Arc::new(registry));
        assert!(service.list_tools().is_empty());
        let ran = service.call_tool("system.run", Map::new(), CallContext::detached()).await;
        assert_eq!(ran.first_text(), Some("\"system.run\""), "the hidden command's own handler answers");
    }

    #[test]
    fn categories_follow_the_listed_commands_in_order() {
        let registry = Registry::new();
        registry.register_commands(echo(&["system.which", "device.info", "system.run", "canvas.show"]));
        registry.register_commands(echo(&["camera.snap"]).into_iter().map(|command| command.listed_while(|| false)));
        assert_eq!(registry.categories(), ["system", "device", "canvas"]);
    }
}
