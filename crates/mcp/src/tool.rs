//! The one way to define a tool, on every surface: a [`ToolDef`] is the descriptor that
//! `tools/list` publishes *and* the handler that `tools/call` runs, in one value, so the name a
//! client sees and the code that answers it cannot drift apart. A surface keeps its tools in a
//! [`ToolSet`] and derives listing, filtering and dispatch from it; nothing else names a tool.
//!
//! A handler answers with a [`ToolOutput`] (JSON, content blocks, a gateway payload) or a
//! [`ToolFailure`] (a message and, for the gateway, a machine-readable code). Transports render
//! that one answer their way: MCP as content blocks ([`render`]), the gateway as `payloadJSON`
//! ([`ToolOutput::gateway_payload`]).

use std::sync::{Arc, OnceLock, RwLock};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use crate::arguments::{ArgumentCheck, Checking};
use crate::tool_filter::ToolFilter;
use crate::types::{CallContext, Content, Tool, ToolResult};

/// What a tool produced, before a transport renders it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// The JSON answer: over MCP the first text block (compact JSON) and, for a tool with an
    /// output schema, `structuredContent`; for the gateway the payload unless
    /// [`ToolOutput::gateway`] replaces it.
    pub payload: Option<Value>,
    /// Content blocks after the JSON text (screenshots, audio, files): what a model reads
    /// directly. Never base64 inside a text block.
    pub blocks: Vec<Content>,
    /// The gateway's `payloadJSON` when it differs from `payload` (upstream shapes carry an
    /// image inline as base64, where MCP gets an image block).
    pub gateway: Option<Value>,
    /// Node events (`node.event {event, payloadJSON}`) the gateway transport sends before the
    /// result, as the real node host does (`system.run` -> `exec.finished`). MCP ignores them.
    pub gateway_events: Vec<NodeEvent>,
    /// A failure the gateway protocol reports in-band: the real node host answers some commands'
    /// failures (`file.*`: `{ok:false, code, message}`) as a successful invoke whose payload says
    /// so, and a gateway agent reads them there. Over MCP the answer is then an `isError` result
    /// with this text, so a model cannot mistake it for data; the gateway still gets the payload.
    pub mcp_error: Option<String>,
    /// The MCP answer itself, when the tool produces it in MCP's form: `clawmcp serve`'s upstream
    /// pairs of a summary text and `structuredContent` (with no output schema, as upstream), a
    /// gateway tool's forwarded result (its own blocks, its own `isError`), the local coding
    /// tools' text and image blocks. Rendered as it is, so such a surface keeps its bytes; the
    /// gateway payload and events are unaffected.
    pub mcp: Option<ToolResult>,
}

/// One node event for the gateway: its name and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEvent {
    pub event: &'static str,
    pub payload: Value,
}

impl From<Value> for ToolOutput {
    fn from(payload: Value) -> Self {
        ToolOutput { payload: Some(payload), ..ToolOutput::default() }
    }
}

impl ToolOutput {
    /// An answer made only of content blocks.
    pub fn blocks(blocks: Vec<Content>) -> Self {
        ToolOutput { blocks, ..ToolOutput::default() }
    }

    /// `self` with one more content block.
    pub fn with_block(mut self, block: Content) -> Self {
        self.blocks.push(block);
        self
    }

    /// `self` with the gateway's payload set apart from the MCP one.
    pub fn with_gateway_payload(mut self, payload: Value) -> Self {
        self.gateway = Some(payload);
        self
    }

    /// `self` with a node event for the gateway.
    pub fn with_gateway_event(mut self, event: &'static str, payload: Value) -> Self {
        self.gateway_events.push(NodeEvent { event, payload });
        self
    }

    /// A failure answered in-band (see [`ToolOutput::mcp_error`]): `payload` for the gateway,
    /// an `isError` result saying `message` over MCP.
    pub fn in_band_failure(message: impl Into<String>, payload: Value) -> Self {
        ToolOutput { payload: Some(payload), mcp_error: Some(message.into()), ..ToolOutput::default() }
    }

    /// An answer already in MCP's form (see [`ToolOutput::mcp`]).
    pub fn mcp(result: ToolResult) -> Self {
        ToolOutput { mcp: Some(result), ..ToolOutput::default() }
    }

    /// The gateway's `payloadJSON`: its own payload, else the JSON answer, else `null`.
    pub fn gateway_payload(&self) -> &Value {
        self.gateway.as_ref().or(self.payload.as_ref()).unwrap_or(&Value::Null)
    }
}

/// A tool's failure: a message for the model (and the human reading the transcript), and
/// optionally one of the gateway's error codes (`INVALID_REQUEST`, `UNAVAILABLE`,
/// `SYSTEM_RUN_DENIED`, ...). Over MCP it is an `isError` result with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    pub message: String,
    pub code: Option<&'static str>,
    /// Node events the gateway transport sends before the error, as for a [`ToolOutput`]
    /// (`system.run` refused -> `exec.denied`, which ends the gateway's tracking of the run).
    pub gateway_events: Vec<NodeEvent>,
}

impl ToolFailure {
    pub fn new(message: impl Into<String>) -> Self {
        ToolFailure { message: message.into(), code: None, gateway_events: Vec::new() }
    }

    /// A bad argument: the message says what is wrong and what to send instead; the gateway gets
    /// `INVALID_REQUEST`, upstream's code for it.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        ToolFailure::new(message).with_code(codes::INVALID_REQUEST)
    }

    /// `self` with a gateway error code.
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// `self` with a node event for the gateway.
    pub fn with_gateway_event(mut self, event: &'static str, payload: Value) -> Self {
        self.gateway_events.push(NodeEvent { event, payload });
        self
    }
}

impl From<String> for ToolFailure {
    fn from(message: String) -> Self {
        ToolFailure::new(message)
    }
}

impl From<&str> for ToolFailure {
    fn from(message: &str) -> Self {
        ToolFailure::new(message)
    }
}

/// The gateway's error codes a [`ToolFailure`] (or a transport) answers with, in one place.
pub mod codes {
    /// Arguments (or a request) the command cannot take.
    pub const INVALID_REQUEST: &str = "INVALID_REQUEST";
    /// The command cannot run right now (switched off, busy, a backend failed).
    pub const UNAVAILABLE: &str = "UNAVAILABLE";
    /// The exec-approval policy refused the run (the gateway's exec tool then asks the operator).
    pub const SYSTEM_RUN_DENIED: &str = "SYSTEM_RUN_DENIED";
    /// The invocation ran out of its time budget.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// The caller cancelled the invocation.
    pub const CANCELLED: &str = "CANCELLED";
}

/// A handler's answer.
pub type ToolOutcome = Result<ToolOutput, ToolFailure>;

/// An MCP result as a handler's answer, rendered back byte for byte by [`render`]: a tool error
/// made of one non-empty text is a [`ToolFailure`] (what it is), anything else an answer in MCP's
/// form ([`ToolOutput::mcp`]: an error with images or several blocks, as a gateway tool may send).
impl From<ToolResult> for ToolOutcome {
    fn from(result: ToolResult) -> Self {
        match result.content.as_slice() {
            [Content::Text { text }] if result.is_error && !text.is_empty() && result.structured_content.is_none() => {
                Err(ToolFailure::new(text.clone()))
            }
            _ => Ok(ToolOutput::mcp(result)),
        }
    }
}

/// The MCP result of an answer: the JSON as a compact text block (always there, so clients of
/// every revision can read it), then the content blocks; `structuredContent` when the tool
/// declares an output schema (the revision filter drops it for clients before 2025-06-18).
pub fn render(outcome: ToolOutcome, structured: bool) -> ToolResult {
    match outcome {
        Ok(ToolOutput { mcp: Some(result), .. }) => result,
        Ok(ToolOutput { mcp_error: Some(message), .. }) => ToolResult::error(message),
        Ok(ToolOutput { payload, blocks, .. }) => {
            let mut content = Vec::with_capacity(blocks.len() + 1);
            if let Some(payload) = &payload {
                content.push(Content::Text { text: payload.to_string() });
            }
            content.extend(blocks);
            if content.is_empty() {
                // MCP requires `content`; an empty answer still says it succeeded.
                content.push(Content::Text { text: "{}".into() });
            }
            let structured_content = payload.filter(|payload| structured && payload.is_object());
            ToolResult { content, structured_content, is_error: false }
        }
        Err(failure) if failure.message.is_empty() => ToolResult::error("tool execution failed"),
        Err(failure) => ToolResult::error(failure.message),
    }
}

/// The code behind one tool: its input (the arguments, or a surface's richer request) and the
/// call's context in, an answer out. `'static` futures: a call may outlive the list it came from.
pub type Handler<I> = dyn Fn(I, CallContext) -> BoxFuture<'static, ToolOutcome> + Send + Sync;

/// A live check deciding whether a tool is listed right now. Two questions, because they are
/// asked at different rates: [`Availability::is_available`] on every `tools/list` for every
/// tool (keep it cheap: no allocation, no message built), [`Availability::unavailable_reason`]
/// only by status reports (`clawmcp node status`, `doctor`): why it is hidden and what would
/// bring it back (a switch to turn on, a package to install).
///
/// A closure answering `Err(reason)` is one; a check with a cheaper yes/no (the node's
/// capability gates) implements both questions itself.
pub trait Availability: Send + Sync + 'static {
    fn is_available(&self) -> bool;
    /// `None` while available.
    fn unavailable_reason(&self) -> Option<String>;
}

impl<F: Fn() -> Result<(), String> + Send + Sync + 'static> Availability for F {
    fn is_available(&self) -> bool {
        self().is_ok()
    }

    fn unavailable_reason(&self) -> Option<String> {
        self().err()
    }
}

/// One tool: what `tools/list` shows and what `tools/call` runs. Cheap to clone.
pub struct ToolDef<I> {
    tool: Arc<Tool>,
    handler: Arc<Handler<I>>,
    available: Option<Arc<dyn Availability>>,
    /// Served to local MCP clients only, never to a remote transport (the gateway).
    local_only: bool,
    /// How [`ToolDef::call_mcp`] checks a call's arguments before the handler runs.
    checking: Checking,
    /// The input schema, compiled at the first call that needs it.
    arguments: Arc<OnceLock<ArgumentCheck>>,
}

/// What a tool's input holds as its MCP arguments (checked against its input schema).
pub trait CallArguments {
    fn arguments_mut(&mut self) -> &mut Map<String, Value>;
}

impl CallArguments for Map<String, Value> {
    fn arguments_mut(&mut self) -> &mut Map<String, Value> {
        self
    }
}

impl<I> Clone for ToolDef<I> {
    fn clone(&self) -> Self {
        ToolDef {
            tool: self.tool.clone(),
            handler: self.handler.clone(),
            available: self.available.clone(),
            local_only: self.local_only,
            checking: self.checking,
            arguments: self.arguments.clone(),
        }
    }
}

impl<I> std::fmt::Debug for ToolDef<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef").field("tool", &self.tool).field("switched", &self.available.is_some()).finish()
    }
}

impl<I: 'static> ToolDef<I> {
    pub fn new(
        tool: Tool,
        handler: impl Fn(I, CallContext) -> BoxFuture<'static, ToolOutcome> + Send + Sync + 'static,
    ) -> Self {
        // MCP: an output schema's root is an object schema; SDK clients (the Python SDK's
        // ListToolsResult) refuse the whole tools/list otherwise. Every surface's tests build
        // their tools, so a definition that breaks the rule fails there.
        debug_assert!(
            tool.output_schema.as_ref().is_none_or(|schema| schema.to_value()["type"] == "object"),
            "{}: an outputSchema must have \"type\": \"object\" at its root",
            tool.name
        );
        ToolDef {
            tool: Arc::new(tool),
            handler: Arc::new(handler),
            available: None,
            local_only: false,
            checking: Checking::Shape,
            arguments: Arc::default(),
        }
    }

    /// `self`, with its arguments checked the way `checking` says (by default
    /// [`Checking::Shape`]: against the input schema's shape).
    pub fn with_checking(mut self, checking: Checking) -> Self {
        self.checking = checking;
        // Compiled anew for this mode (a clone shares its original's compiled check).
        self.arguments = Arc::default();
        self
    }

    pub fn checking(&self) -> Checking {
        self.checking
    }

    /// `self`, served to local MCP clients only: a remote transport neither declares nor runs it
    /// (the node's own `app.*` tools, which manage this machine's node).
    pub fn local_only(mut self) -> Self {
        self.local_only = true;
        self
    }

    pub fn is_local_only(&self) -> bool {
        self.local_only
    }

    /// `self`, listed only while `listed` says so. A call that reaches it while it is hidden
    /// still runs its handler, which says why it is off (better than "Unknown tool").
    pub fn listed_while(self, listed: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.available_while(move || if listed() { Ok(()) } else { Err("switched off".to_owned()) })
    }

    /// `self`, listed only while `available` says so (see [`Availability`]: a closure answering
    /// `Err(why)` will do). As with [`ToolDef::listed_while`], a call still reaches the handler.
    pub fn available_while(mut self, available: impl Availability) -> Self {
        self.available = Some(Arc::new(available));
        self
    }

    /// Why the tool is not listed right now; `None` while it is.
    pub fn unavailable_reason(&self) -> Option<String> {
        self.available.as_ref().and_then(|available| available.unavailable_reason())
    }

    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// Whether the tool is listed right now.
    pub fn is_listed(&self) -> bool {
        self.available.as_ref().is_none_or(|available| available.is_available())
    }

    /// Runs the handler.
    pub fn call(&self, input: I, ctx: CallContext) -> BoxFuture<'static, ToolOutcome> {
        (self.handler)(input, ctx)
    }

    /// The tool's input schema, compiled (once).
    pub fn argument_check(&self) -> &ArgumentCheck {
        self.arguments.get_or_init(|| ArgumentCheck::new(&self.tool.input_schema).with_checking(self.checking))
    }
}

impl<I: CallArguments + 'static> ToolDef<I> {
    /// Checks the arguments' shape against the input schema (see [`crate::arguments`]), then
    /// runs the handler and renders its answer for MCP. A call of the wrong shape is a tool
    /// error naming each problem; the handler does not run.
    pub async fn call_mcp(&self, mut input: I, ctx: CallContext) -> ToolResult {
        if self.checking == Checking::Handler {
            return render(self.call(input, ctx).await, self.tool.output_schema.is_some());
        }
        // Moved into a `Value` for the check and back, not cloned: arguments can be 16 MiB
        // (`file.write`'s content).
        let instance = Value::Object(std::mem::take(input.arguments_mut()));
        let checked = self.argument_check().check(self.name(), &instance);
        if let Value::Object(arguments) = instance {
            *input.arguments_mut() = arguments;
        }
        if let Err(problems) = checked {
            return ToolResult::error(problems);
        }
        render(self.call(input, ctx).await, self.tool.output_schema.is_some())
    }
}

/// Why a call reaches no tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unserved {
    /// No tool has the name.
    Unknown,
    /// The surface's tool filter (`--tools`) leaves it out.
    Filtered,
    /// The tool is for local MCP clients only and the call came from a remote transport.
    LocalOnly,
}

/// A surface's tools in published order: listing, filtering and lookup derive from it alone.
/// Tools may be added while serving; the next list shows them.
pub struct ToolSet<I> {
    tools: RwLock<Vec<ToolDef<I>>>,
}

impl<I> Default for ToolSet<I> {
    fn default() -> Self {
        ToolSet { tools: RwLock::new(Vec::new()) }
    }
}

impl<I: 'static> ToolSet<I> {
    pub fn new(tools: impl IntoIterator<Item = ToolDef<I>>) -> Self {
        ToolSet { tools: RwLock::new(tools.into_iter().collect()) }
    }

    /// Adds tools at the end; visible to the next list on every transport.
    pub fn register(&self, tools: impl IntoIterator<Item = ToolDef<I>>) {
        self.tools.write().unwrap_or_else(|poisoned| poisoned.into_inner()).extend(tools);
    }

    /// Every tool, listed right now or not.
    pub fn all(&self) -> Vec<ToolDef<I>> {
        self.tools.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// The tools listed right now that `filter` allows, in order.
    pub fn listed(&self, filter: &ToolFilter) -> Vec<ToolDef<I>> {
        let tools = self.tools.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        // The filter first: it is a pattern match, where a tool's availability may read a
        // settings file (a tool the filter leaves out need not be checked at all).
        tools.iter().filter(|tool| filter.allows(tool.name()) && tool.is_listed()).cloned().collect()
    }

    /// The `tools/list` entries of [`ToolSet::listed`].
    pub fn list(&self, filter: &ToolFilter) -> Vec<Tool> {
        self.listed(filter).iter().map(|tool| tool.tool().clone()).collect()
    }

    /// The tool named exactly `name` (case-sensitive, as MCP tool names are), listed or not.
    pub fn find(&self, name: &str) -> Option<ToolDef<I>> {
        let tools = self.tools.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        tools.iter().find(|tool| tool.name() == name).cloned()
    }

    /// The patterns of `filter` that select no tool of this set (a hidden tool counts: its
    /// switch can come back on while serving).
    pub fn unmatched_patterns<'f>(&self, filter: &'f ToolFilter) -> Vec<&'f str> {
        let tools = self.all();
        filter.unmatched(tools.iter().map(ToolDef::name))
    }

    /// The tool a call named `name` reaches through `filter`, on every transport: unknown, or
    /// outside the filter, or the tool (listed or switched off: its handler explains a switch).
    pub fn served(&self, name: &str, filter: &ToolFilter) -> Result<ToolDef<I>, Unserved> {
        let tool = self.find(name).ok_or(Unserved::Unknown)?;
        match filter.allows(name) {
            true => Ok(tool),
            false => Err(Unserved::Filtered),
        }
    }

    /// [`ToolSet::listed`] for a remote transport: without the local-only tools.
    pub fn listed_remotely(&self, filter: &ToolFilter) -> Vec<ToolDef<I>> {
        self.listed(filter).into_iter().filter(|tool| !tool.is_local_only()).collect()
    }

    /// [`ToolSet::served`] for a remote transport: a local-only tool is not served.
    pub fn served_remotely(&self, name: &str, filter: &ToolFilter) -> Result<ToolDef<I>, Unserved> {
        let tool = self.served(name, filter)?;
        match tool.is_local_only() {
            true => Err(Unserved::LocalOnly),
            false => Ok(tool),
        }
    }
}

impl<I: CallArguments + 'static> ToolSet<I> {
    /// One `tools/call`: an unknown name is a tool error naming it, a name `filter` does not
    /// allow gets `refused(name)`, anything else runs and is rendered for MCP.
    pub async fn call_mcp(
        &self,
        name: &str,
        input: I,
        ctx: CallContext,
        filter: &ToolFilter,
        refused: impl FnOnce(&str) -> String,
    ) -> ToolResult {
        match self.served(name, filter) {
            Ok(tool) => tool.call_mcp(input, ctx).await,
            Err(Unserved::Unknown | Unserved::LocalOnly) => {
                // (`served` never answers LocalOnly; only the remote lookups do.)
                let listed: Vec<ToolDef<I>> = self.listed(filter);
                ToolResult::error(unknown_tool(name, listed.iter().map(ToolDef::name)))
            }
            Err(Unserved::Filtered) => ToolResult::error(refused(name)),
        }
    }
}

/// The error of a call of a tool nobody serves: `Unknown tool: NAME`, and the closest name served
/// when the call looks like a typo of it (`system.whch`: did you mean `system.which`?).
pub fn unknown_tool<'a>(name: &str, served: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(name, served) {
        Some(close) => format!("Unknown tool: {name}. Did you mean `{close}`? (tools/list shows what is served)"),
        None => format!("Unknown tool: {name}"),
    }
}

/// The candidate closest to `name` by edit distance (a swap of two neighbours is one edit), if
/// it is within a quarter of the name's length (at least one edit): a typo, not a different word.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let within = (name.chars().count() / 4).max(1);
    candidates
        .into_iter()
        .map(|candidate| (strsim::osa_distance(name, candidate), candidate))
        .filter(|(distance, _)| *distance <= within)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use futures_util::FutureExt;
    use serde_json::{Map, json};

    use super::*;
    use crate::types::{Schema, ToolAnnotations, permissive_schema};

    fn tool(name: &str, output_schema: Option<Schema>) -> Tool {
        Tool {
            name: name.into(),
            title: None,
            description: format!("{name} for tests"),
            input_schema: permissive_schema(),
            output_schema,
            annotations: Some(ToolAnnotations::READ_ONLY),
        }
    }

    /// Answers with its arguments.
    fn echo(name: &str, output_schema: Option<Schema>) -> ToolDef<Map<String, Value>> {
        ToolDef::new(tool(name, output_schema), |args, _ctx| async move { Ok(Value::Object(args).into()) }.boxed())
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn a_mistyped_name_gets_the_closest_served_tool_and_a_different_word_none() {
        let set = ToolSet::new([echo("system.which", None), echo("system.run", None), echo("device.info", None)]);
        let all = ToolFilter::all();
        let call =
            |name: &'static str| set.call_mcp(name, Map::new(), CallContext::detached(), &all, |_| unreachable!());
        assert_eq!(
            call("system.whch").await.first_text(),
            Some("Unknown tool: system.whch. Did you mean `system.which`? (tools/list shows what is served)")
        );
        assert_eq!(call("sytem.run").await.first_text().map(|t| t.contains("`system.run`")), Some(true));
        assert_eq!(call("camera.snap").await.first_text(), Some("Unknown tool: camera.snap"), "not a typo of anything");
        // Within a quarter of the name's length, and at least one edit.
        assert_eq!(did_you_mean("ab", ["ac"]), Some("ac"));
        assert_eq!(did_you_mean("abcdefgh", ["abcdefXY"]), Some("abcdefXY"));
        assert_eq!(did_you_mean("abcdefgh", ["abcdeXYZ"]), None);
    }

    #[tokio::test]
    async fn a_registered_tool_is_listed_filtered_and_called_with_no_other_change() {
        let set = ToolSet::new([echo("a.one", None)]);
        set.register([echo("b.throwaway", None)]);
        let names = |tools: Vec<Tool>| tools.into_iter().map(|tool| tool.name).collect::<Vec<_>>();
        assert_eq!(names(set.list(&ToolFilter::all())), ["a.one", "b.throwaway"]);
        let only_b = ToolFilter::parse("b.*").unwrap();
        assert_eq!(names(set.list(&only_b)), ["b.throwaway"]);
        let ran = set
            .call_mcp("b.throwaway", args(json!({"x": 1})), CallContext::detached(), &only_b, |_| unreachable!())
            .await;
        assert_eq!((ran.is_error, ran.first_text()), (false, Some(r#"{"x":1}"#)));
        let refused = set
            .call_mcp("a.one", Map::new(), CallContext::detached(), &only_b, |name| format!("{name} is filtered"))
            .await;
        assert_eq!((refused.is_error, refused.first_text()), (true, Some("a.one is filtered")));
        let unknown =
            set.call_mcp("c", Map::new(), CallContext::detached(), &ToolFilter::all(), |_| unreachable!()).await;
        assert_eq!(unknown.first_text(), Some("Unknown tool: c"));
        assert_eq!(set.unmatched_patterns(&ToolFilter::parse("a.*,z.*").unwrap()), ["z.*"]);
    }

    #[tokio::test]
    async fn a_switched_tool_vanishes_from_lists_but_still_answers() {
        let on = Arc::new(AtomicBool::new(false));
        let switch = on.clone();
        let set = ToolSet::new([echo("run", None).listed_while(move || switch.load(Ordering::SeqCst))]);
        assert!(set.list(&ToolFilter::all()).is_empty());
        assert!(set.unmatched_patterns(&ToolFilter::parse("run").unwrap()).is_empty(), "a hidden tool still counts");
        let ran =
            set.call_mcp("run", Map::new(), CallContext::detached(), &ToolFilter::all(), |_| unreachable!()).await;
        assert!(!ran.is_error, "the handler decides what a hidden tool answers");
        on.store(true, Ordering::SeqCst);
        assert_eq!(set.list(&ToolFilter::all()).len(), 1);
    }

    #[test]
    fn a_tool_the_filter_leaves_out_is_never_asked_whether_it_is_available() {
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = asked.clone();
        let set = ToolSet::new([
            echo("kept", None),
            echo("left.out", None).listed_while(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                true
            }),
        ]);
        let filter = ToolFilter::parse("kept").unwrap();
        assert_eq!(set.list(&filter).len(), 1);
        assert_eq!(asked.load(Ordering::SeqCst), 0, "its check may read a file: not made for a filtered-out tool");
        assert_eq!(set.list(&ToolFilter::all()).len(), 2);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn structured_content_only_for_tools_with_an_output_schema_and_text_always() {
        let schema: Schema = json!({"type": "object"}).into();
        let plain = echo("plain", None).call_mcp(args(json!({"k": "v"})), CallContext::detached()).await;
        assert_eq!((&plain.structured_content, plain.first_text()), (&None, Some(r#"{"k":"v"}"#)));
        let typed = echo("typed", Some(schema)).call_mcp(args(json!({"k": "v"})), CallContext::detached()).await;
        assert_eq!(typed.structured_content, Some(json!({"k": "v"})));
        assert_eq!(typed.first_text(), Some(r#"{"k":"v"}"#), "a text block is always there for older clients");
    }

    #[test]
    #[should_panic(expected = "an outputSchema must have \"type\": \"object\" at its root")]
    fn an_output_schema_without_an_object_root_is_refused_where_it_is_defined() {
        let _ = echo("untyped", Some(json!({"oneOf": [{"type": "object"}]}).into()));
    }

    #[test]
    fn outputs_carry_blocks_and_a_gateway_payload_and_failures_a_code() {
        let image = Content::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() };
        let output = ToolOutput::from(json!({"width": 2, "height": 1}))
            .with_block(image.clone())
            .with_gateway_payload(json!({"format": "png", "base64": "iVBORw0KGgo="}));
        assert_eq!(output.gateway_payload()["base64"], "iVBORw0KGgo=");
        let rendered = render(Ok(output), false);
        assert_eq!(rendered.content, [Content::Text { text: r#"{"width":2,"height":1}"#.into() }, image.clone()]);
        // The image is a block of its own, never base64 inside the text.
        assert!(!rendered.first_text().unwrap().contains("iVBOR"));
        assert_eq!(render(Ok(ToolOutput::blocks(vec![image.clone()])), true).content, [image]);
        assert_eq!(ToolOutput::from(json!(1)).gateway_payload(), &json!(1));
        assert_eq!(ToolOutput::default().gateway_payload(), &Value::Null);

        let failure = ToolFailure::new("not allowed").with_code("SYSTEM_RUN_DENIED");
        assert_eq!((failure.code, failure.to_string().as_str()), (Some("SYSTEM_RUN_DENIED"), "not allowed"));
        let rendered = render(Err(failure), true);
        assert_eq!((rendered.is_error, rendered.first_text()), (true, Some("not allowed")));
        assert_eq!(render(Err("".into()), false).first_text(), Some("tool execution failed"));
    }

    #[test]
    fn an_mcp_result_round_trips_through_a_handler_byte_for_byte() {
        let image = Content::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() };
        let results = [
            ToolResult::text("plain"),
            ToolResult::error("one message"),
            ToolResult { structured_content: Some(json!({"events": []})), ..ToolResult::text("events: 0") },
            ToolResult {
                content: vec![Content::Text { text: "failed".into() }, image.clone()],
                ..ToolResult::error("")
            },
            ToolResult::error(""),
            ToolResult { content: Vec::new(), structured_content: None, is_error: false },
        ];
        for result in results {
            let outcome = ToolOutcome::from(result.clone());
            assert_eq!(render(outcome.clone(), false), result, "{outcome:?}");
            assert_eq!(render(outcome, true), result, "the output schema changes nothing of an MCP answer");
        }
        assert_eq!(ToolOutcome::from(ToolResult::error("no")), Err(ToolFailure::new("no")), "a failure is one");
    }

    #[tokio::test]
    async fn a_tool_that_checks_its_own_arguments_gets_them_unchecked() {
        let strict = Tool {
            input_schema: json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}).into(),
            ..tool("own", None)
        };
        let def = ToolDef::new(strict, |args: Map<String, Value>, _ctx| {
            async move { Ok(Value::Object(args).into()) }.boxed()
        });
        let refused = def.call_mcp(args(json!({"n": "x"})), CallContext::detached()).await;
        assert!(refused.is_error && refused.first_text().unwrap().starts_with("Invalid arguments for own: `n`"));
        let lenient = def.clone().with_checking(Checking::StringifiedScalars);
        let ran = lenient.call_mcp(args(json!({"n": "12"})), CallContext::detached()).await;
        assert_eq!((ran.is_error, ran.first_text()), (false, Some(r#"{"n":"12"}"#)));
        let own = def.with_checking(Checking::Handler);
        let ran = own.call_mcp(args(json!({"x": []})), CallContext::detached()).await;
        assert_eq!((ran.is_error, ran.first_text()), (false, Some(r#"{"x":[]}"#)), "the handler decides");
    }

    #[test]
    fn an_in_band_failure_is_an_error_over_mcp_and_a_payload_for_the_gateway() {
        let payload = json!({"ok": false, "code": "NOT_FOUND", "message": "file not found"});
        let output = ToolOutput::in_band_failure("NOT_FOUND: file not found", payload.clone());
        assert_eq!(output.gateway_payload(), &payload);
        let rendered = render(Ok(output), true);
        assert_eq!((rendered.is_error, rendered.first_text()), (true, Some("NOT_FOUND: file not found")));
        assert_eq!(rendered.structured_content, None);
    }
}
