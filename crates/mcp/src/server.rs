//! The MCP dispatcher: one parsed message in, at most one serialised response out. It knows
//! nothing about transports (HTTP, stdio) or about what tools do; both plug in from outside.
//!
//! A surface implements [`McpService`] (its tool list, its tool calls, optional extras), wraps it
//! in an [`McpServer`] and hands messages to [`McpServer::dispatch`]. The server owns the
//! protocol rules that must be identical on every surface: method table, the tool-error versus
//! JSON-RPC-error split, `notifications/cancelled` through the [`CancellationRegistry`], and the
//! progress heartbeat of long tool calls.
//!
//! # Progress heartbeat
//!
//! Real clients give up on a tool call after about 60 s unless `notifications/progress` for
//! their own `progressToken` arrives (they reset their timeout on it). Rather than every
//! long-running tool remembering to report, the dispatcher reports for all of them: while a
//! `tools/call` that carries `_meta.progressToken` runs, and the transport can carry
//! notifications for it, it sends progress whenever nothing was sent for
//! [`PROGRESS_INTERVAL`]. Without a token nothing is sent; after the answer nothing is sent.

use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cancel::{CancelOutcome, CancellationRegistry, DuplicatePolicy, Registration};
use crate::jsonrpc::{self, ErrorCode, Incoming, RequestId, RpcError, id_key_of_raw};
use crate::modern;
use crate::params::{self, ParamsError};
use crate::types::{CallContext, FrameSink, Icon, Progress, Rendered, RequestFacts, ResultFrame, Tool, ToolResult};
use crate::version::ProtocolVersion;

/// The protocol version the upstream Windows tray answers whatever the client asks;
/// [`WireStyle::TRAY`] keeps a node pinned to it for users who need the tray's exact answers.
pub const PROTOCOL_VERSION: &str = "2024-11-05";

/// The text of a tool error for a call the client cancelled.
pub const CANCELLED: &str = "cancelled";

/// The text of a tool error for a call the transport gave up on (its deadline), unless the
/// transport said why it ended otherwise ([`TransportEnd`]).
pub const TIMED_OUT: &str = "request timed out";

/// What a call still running answers when the server shuts down: it was stopped because the
/// server is going away, not because its deadline passed.
pub const SHUTTING_DOWN: &str = "cancelled: the server is shutting down, so this call was stopped before it finished";

/// Why a transport gave up on the requests it carries, in the words their answers use: set once
/// by the transport before it fires `transport_cancel`; unset it means the request's deadline
/// ([`TIMED_OUT`]). Shared by every request of a session, so one `set` covers them all.
#[derive(Debug, Clone, Default)]
pub struct TransportEnd(Arc<std::sync::OnceLock<&'static str>>);

impl TransportEnd {
    /// Records why; the first reason given wins.
    pub fn set(&self, reason: &'static str) {
        let _ = self.0.set(reason);
    }

    /// The text a call cut short by the transport answers.
    pub fn reason(&self) -> &'static str {
        self.0.get().copied().unwrap_or(TIMED_OUT)
    }
}

/// How long a cancelled tool may take to clean up (kill and reap a process tree) before its
/// future is dropped anyway. The response waits for this so that "cancelled" means "stopped".
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// How long a tool call with a progress token may go without a progress notification before
/// the dispatcher sends one. Issue 5 requires one at least every 10 s and clients give up after
/// about 60 s of silence: 5 s stays well under both even if one notification is lost or late,
/// while costing a single small frame per call every 5 s.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// What a surface provides. Every method but `list_tools` and `call_tool` has a default.
pub trait McpService: Send + Sync + 'static {
    /// The live tool list; called on every `tools/list`, never cached.
    fn list_tools(&self) -> Vec<Tool>;

    /// Resolves when `list_tools` is worth reading: awaited before each `tools/list`. A surface
    /// whose list is still being discovered waits here (bounded, it must resolve on its own);
    /// the default is ready at once.
    fn list_ready(&self) -> BoxFuture<'_, ()> {
        futures_util::future::ready(()).boxed()
    }

    /// Runs one tool. Unknown names and bad arguments are tool errors (`ToolResult::error`).
    /// The future must finish promptly once `ctx.cancel` fires.
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, ToolResult>;

    /// `initialize` `capabilities`.
    fn capabilities(&self) -> Value {
        json!({"tools": {"listChanged": false}})
    }

    /// `initialize` `instructions`, if any.
    fn instructions(&self) -> Option<String> {
        None
    }

    /// A request method outside the MCP table (e.g. a local approvals API). `None` means
    /// "not mine" and becomes `-32601`.
    fn custom_request<'a>(
        &'a self,
        _method: &'a str,
        _params: Option<Value>,
    ) -> Option<BoxFuture<'a, Result<Value, RpcError>>> {
        None
    }

    /// [`McpService::custom_request`] for a service that needs what the transport knows of the
    /// request (its authentication generation), that reads the params as the JSON text they came
    /// in (a file channel input's frame, read where it lies in them), or that answers with JSON it
    /// wrote itself (a file channel poll's frames, escaped once when they were made). The default
    /// decodes the params ([`decode_params`]) and forwards to `custom_request`.
    fn custom_request_in<'a>(
        &'a self,
        method: &'a str,
        params: Option<&'a RawValue>,
        _ctx: &RequestContext,
    ) -> Option<BoxFuture<'a, Result<Box<RawValue>, RpcError>>> {
        decoded_custom_request(self, method, params)
    }

    /// A notification outside the MCP table. Ignored by default.
    fn notification(&self, _method: &str, _params: Option<Value>) {}

    /// Whether `name` is one of this service's file commands, whose request may declare itself
    /// to the HTTP transport (`X-OpenClaw-File-Command`) for the transport's file allowance of
    /// body and result (docs/node-http.md §12). None by default.
    fn is_file_command(&self, _name: &str) -> bool {
        false
    }
}

/// The `_meta` key of a `tools/call` that attaches an OpenClaw file channel, and that extension's
/// `experimental` capability name (docs/node-http.md §12). Here, in the core, because the HTTP
/// transport reads it too: a declared file call that streams over a channel gives its file
/// envelope back once parsed.
pub const FILE_CHANNEL_EXTENSION: &str = "openclaw/file-channel";

/// The small wire conventions in which upstream programs differ, so each surface can answer
/// exactly like the program it replaces. Everything else about the protocol is the same on every
/// surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireStyle {
    /// How `initialize` picks the revision it answers.
    pub versions: VersionRule,
    /// `"Method not found: <method>"` (tray) or a bare `"Method not found"` (TypeScript SDK).
    pub method_not_found_names_method: bool,
    /// Successful tool results carry `"isError": false` (tray) or leave the key out (SDK).
    pub explicit_success_flag: bool,
    /// An `execution` object added to every `tools/list` entry (the SDK adds
    /// `{"taskSupport": "forbidden"}`), or none.
    pub tool_execution_task_support: Option<&'static str>,
    /// Whether the stateless revision (2026-07-28, [`crate::modern`]) is served: `server/discover`
    /// answers and `_meta`-versioned requests are served without a session. Off, discover is an
    /// unknown method (-32601), which a dual-era client takes as "use `initialize`", and a
    /// request's `_meta` is ignored as every `initialize`-era server ignores it.
    pub serves_stateless_era: bool,
}

/// How an HTTP request is served (see [`McpServer::http_era`]).
#[derive(Debug)]
pub enum HttpEra {
    /// By the `initialize` revisions' rules: every JSON-RPC answer at HTTP 200.
    Legacy,
    /// Statelessly (2026-07-28): errors at the status [`modern::http_status_of_error`] gives.
    Stateless,
    /// Refused before it runs, with this error (at its status).
    Rejected(RpcError),
}

/// How a wire style chooses the protocol revision of `initialize` and of the fields it emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionRule {
    /// The one rule of this core ([`ProtocolVersion::negotiate`]): the client's revision when
    /// served, else the newest; each revision's fields only to clients that have it.
    Negotiate,
    /// Always this revision, whatever the client asks (the tray's rule).
    Pinned(ProtocolVersion),
    /// The TypeScript SDK's rule: echo a requested version found in this list (preferred
    /// first), else answer the first; every field is written whatever was negotiated, as the
    /// SDK writes them (so `serve` answers byte for byte like `openclaw mcp serve`).
    SdkList(&'static [&'static str]),
}

impl WireStyle {
    /// clawmcp's own surfaces (`node`, `tools`): the tray's wire habits, the core's negotiation.
    pub const NEGOTIATING: WireStyle = WireStyle {
        versions: VersionRule::Negotiate,
        method_not_found_names_method: true,
        explicit_success_flag: true,
        tool_execution_task_support: None,
        serves_stateless_era: true,
    };

    /// The node host exactly as the upstream Windows tray answers (`docs/node-http.md` §10):
    /// 2024-11-05 whatever the client asks, no newer-revision fields. The tray has no stateless
    /// era, so a pinned node has none either.
    pub const TRAY: WireStyle = WireStyle {
        versions: VersionRule::Pinned(ProtocolVersion::V2024_11_05),
        serves_stateless_era: false,
        ..WireStyle::NEGOTIATING
    };

    /// A server built on `@modelcontextprotocol/sdk` 1.x (e.g. `openclaw mcp serve`).
    pub const TYPESCRIPT_SDK: WireStyle = WireStyle {
        versions: VersionRule::SdkList(&["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"]),
        method_not_found_names_method: false,
        explicit_success_flag: false,
        tool_execution_task_support: Some("forbidden"),
        // `openclaw mcp serve` answers discover with -32601; serve also pushes session-scoped
        // notifications (live events, Claude channel messages) that the stateless revision
        // only delivers over `subscriptions/listen`, which is not served (see `crate::modern`).
        serves_stateless_era: false,
    };

    /// The `protocolVersion` `initialize` answers to a client that asked for `requested`.
    fn initialize_version(&self, requested: Option<&str>) -> &'static str {
        match self.versions {
            VersionRule::Negotiate => ProtocolVersion::negotiate(requested).as_str(),
            VersionRule::Pinned(version) => version.as_str(),
            VersionRule::SdkList(list) => list.iter().find(|v| Some(**v) == requested).copied().unwrap_or(list[0]),
        }
    }

    /// The revision whose fields a request is answered with. `requested` is what the request
    /// itself says (an HTTP `MCP-Protocol-Version` header), `negotiated` what this session's
    /// `initialize` settled (stdio), if anything.
    fn render_version(
        &self,
        requested: Option<ProtocolVersion>,
        negotiated: Option<ProtocolVersion>,
    ) -> ProtocolVersion {
        match self.versions {
            VersionRule::Negotiate => requested.or(negotiated).unwrap_or(ProtocolVersion::WITHOUT_HEADER),
            VersionRule::Pinned(version) => version,
            VersionRule::SdkList(_) => ProtocolVersion::NEWEST,
        }
    }
}

/// `serverInfo` of `initialize`.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
}

/// Per-message context from the transport.
#[derive(Clone)]
pub struct RequestContext {
    /// Fires when the transport gives up: request deadline, connection gone, shutdown.
    pub transport_cancel: CancellationToken,
    /// Why it gave up, for the answer of a call it cut short.
    pub transport_end: TransportEnd,
    /// Where progress notifications go, if this transport can carry them for this request.
    pub sink: Option<Arc<dyn FrameSink>>,
    /// The revision this request says it speaks (HTTP's `MCP-Protocol-Version` header, read
    /// leniently with [`ProtocolVersion::from_header`]); `None` when it says nothing.
    pub protocol_version: Option<ProtocolVersion>,
    /// The authentication generation that admitted this request: the HTTP transport's bearer
    /// token as one numbered snapshot (a rotation gives the next number), read in the same
    /// check that accepted the bearer. `None` on a transport without authentication (stdio).
    pub auth_generation: Option<u64>,
    /// The most bytes this call's encoded result may take, when the transport grants it more
    /// than [`MAX_TOOL_RESULT_BYTES`] (a declared file command's allowance); `None`: that bound.
    pub result_allowance: Option<usize>,
}

impl RequestContext {
    pub fn new(transport_cancel: CancellationToken) -> Self {
        RequestContext {
            transport_cancel,
            transport_end: TransportEnd::default(),
            sink: None,
            protocol_version: None,
            auth_generation: None,
            result_allowance: None,
        }
    }
}

/// Which concurrency pool a message needs. Transports keep tool calls from starving control
/// traffic (ping, cancellation, listing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageClass {
    /// `tools/call`: may run for minutes.
    Tool,
    /// Everything else: answered at once.
    Control,
}

/// The dispatcher. Cheap to share behind an `Arc`.
pub struct McpServer<S: McpService + ?Sized> {
    info: ServerInfo,
    /// `serverInfo.icons`, for clients of 2025-11-25 and later (empty: none sent).
    icons: Vec<Icon>,
    wire: WireStyle,
    registry: CancellationRegistry,
    service: Arc<S>,
    /// The revision this session's `initialize` negotiated, for a server that serves one session
    /// (stdio). `None` for a stateless server (HTTP): every request says its own revision.
    session: Option<std::sync::Mutex<Option<ProtocolVersion>>>,
}

impl<S: McpService + ?Sized> McpServer<S> {
    /// A stateless server with clawmcp's wire conventions ([`WireStyle::NEGOTIATING`]).
    pub fn new(info: ServerInfo, service: Arc<S>, duplicates: DuplicatePolicy) -> Self {
        McpServer {
            info,
            icons: Vec::new(),
            wire: WireStyle::NEGOTIATING,
            registry: CancellationRegistry::new(duplicates),
            service,
            session: None,
        }
    }

    /// Sends `icons` as `serverInfo.icons` to clients of MCP 2025-11-25 and later (`initialize`,
    /// `server/discover`); older clients see the `serverInfo` they always did.
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = icons;
        self
    }

    /// Answers with another program's wire conventions.
    pub fn with_wire(mut self, wire: WireStyle) -> Self {
        self.wire = wire;
        self
    }

    /// This server serves one session (a stdio process): the revision `initialize` negotiates
    /// decides the fields of every later answer.
    pub fn for_one_session(mut self) -> Self {
        self.session = Some(std::sync::Mutex::new(None));
        self
    }

    /// The revision whose fields answer a request with `ctx`.
    fn render_version(&self, ctx: &RequestContext) -> ProtocolVersion {
        let negotiated = self.session.as_ref().and_then(|s| *s.lock().unwrap_or_else(|p| p.into_inner()));
        self.wire.render_version(ctx.protocol_version, negotiated)
    }

    pub fn service(&self) -> &Arc<S> {
        &self.service
    }

    pub fn registry(&self) -> &CancellationRegistry {
        &self.registry
    }

    /// Parses and dispatches one message body.
    pub async fn handle(&self, body: &[u8], ctx: RequestContext) -> Option<String> {
        match jsonrpc::parse(body) {
            Ok(message) => self.dispatch(message, ctx).await,
            Err(rejection) => jsonrpc::rejection_frame(rejection),
        }
    }

    /// Whether the dispatcher would report progress for `message` given a sink: a `tools/call`
    /// request whose `params._meta.progressToken` is a string or a number. Transports use it to
    /// decide whether this one request needs a channel for notifications (HTTP answers it as an
    /// event stream). Only `_meta` is decoded; the arguments are skipped, not copied.
    pub fn wants_progress(message: &Incoming) -> bool {
        #[derive(Deserialize)]
        struct MetaOnly {
            #[serde(rename = "_meta")]
            meta: Option<Value>,
        }
        let Incoming::Request { method, params: Some(params), .. } = message else { return false };
        method == "tools/call"
            && serde_json::from_str::<MetaOnly>(params.get())
                .ok()
                .and_then(|p| p.meta)
                .is_some_and(|meta| progress_token(&meta).is_some())
    }

    /// Classifies a parsed message for the transport's concurrency pools.
    pub fn classify(message: &Incoming) -> MessageClass {
        match message.method() {
            Some("tools/call") => MessageClass::Tool,
            _ => MessageClass::Control,
        }
    }

    /// Dispatches one parsed message. `None` means "send no body" (a notification).
    pub async fn dispatch(&self, message: Incoming, ctx: RequestContext) -> Option<String> {
        match message {
            Incoming::Response => None,
            Incoming::Notification { method, params } => {
                if method == "tools/call" {
                    // JSON-RPC says a notification still runs; only the answer is dropped.
                    let _ = self.tools_call(None, params.as_deref(), ctx).await;
                } else {
                    self.notification(&method, params.as_deref());
                }
                None
            }
            Incoming::Request { id, method, params } => {
                let result = self.request(&id, &method, params.as_deref(), ctx).await;
                Some(match result {
                    Ok(value) => jsonrpc::raw_success_frame(&id, &value),
                    Err(error) => jsonrpc::error_frame(Some(&id), &error),
                })
            }
        }
    }

    /// Routes a request by era (see [`crate::modern`]): a request whose `_meta` names the
    /// stateless revision is served statelessly; everything else (every `initialize`) by the
    /// `initialize` revisions, unchanged.
    async fn request(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&RawValue>,
        mut ctx: RequestContext,
    ) -> Result<Box<RawValue>, RpcError> {
        if !self.wire.serves_stateless_era {
            return self.legacy_request(id, method, params, ctx, false).await;
        }
        let modern = match method {
            "initialize" => None,
            _ => modern::era_of(params).transpose()?,
        };
        if method == "server/discover" {
            // Answered in either era: it is how a dual-era client learns this server is one.
            return self.discover();
        }
        if modern.is_none() {
            return self.legacy_request(id, method, params, ctx, false).await;
        }
        if modern::is_removed(method) {
            return Err(self.method_not_found(method));
        }
        ctx.protocol_version = Some(ProtocolVersion::NEWEST);
        let result = self.legacy_request(id, method, params, ctx, true).await?;
        let hints = if method.ends_with("/list") { modern::CACHE_HINTS } else { &[] };
        modern::decorate(&result, &self.server_info(), hints)
    }

    /// The era an HTTP request is served in, checked against its routing headers before it
    /// runs (see [`modern::check_routing_headers`]). Stdio has no headers and no such step: the
    /// dispatcher alone decides there.
    pub fn http_era(&self, message: &Incoming, headers: &modern::RoutingHeaders<'_>) -> HttpEra {
        let Incoming::Request { method, params, .. } = message else { return HttpEra::Legacy };
        if !self.wire.serves_stateless_era || method == "initialize" {
            return HttpEra::Legacy;
        }
        match modern::era_of(params.as_deref()) {
            Some(Ok(request)) => match modern::check_routing_headers(&request, method, params.as_deref(), headers) {
                Ok(()) => HttpEra::Stateless,
                Err(error) => HttpEra::Rejected(error),
            },
            Some(Err(error)) => HttpEra::Rejected(error),
            // Discover is answered whatever the era; a legacy client may probe it bare.
            None if method == "server/discover" => HttpEra::Legacy,
            None if headers.names_modern_version() => HttpEra::Rejected(RpcError::new(
                ErrorCode::InvalidParams,
                format!(
                    "Invalid params: the MCP-Protocol-Version header names a stateless revision, so params._meta must carry {} and {} ({{}} for no capabilities)",
                    modern::META_PROTOCOL_VERSION,
                    modern::META_CLIENT_CAPABILITIES
                ),
            )),
            None => HttpEra::Legacy,
        }
    }

    /// `server/discover`: what this server serves, in the stateless revision's shape.
    fn discover(&self) -> Result<Box<RawValue>, RpcError> {
        let mut result = Map::new();
        result.insert("supportedVersions".into(), json!(modern::MODERN_VERSIONS));
        result.insert("capabilities".into(), modern::capabilities(&self.service.capabilities()));
        if let Some(instructions) = self.service.instructions() {
            result.insert("instructions".into(), instructions.into());
        }
        modern::decorate(&raw(&result)?, &self.server_info_at(ProtocolVersion::NEWEST), modern::CACHE_HINTS)
    }

    /// `serverInfo` as every stateless result's `_meta` carries it: name and version only (the
    /// icons go once, in `server/discover`).
    fn server_info(&self) -> Value {
        json!({"name": self.info.name, "version": self.info.version})
    }

    /// `serverInfo` as `initialize` and `server/discover` answer a client of `version`.
    fn server_info_at(&self, version: ProtocolVersion) -> Value {
        let mut info = self.server_info();
        if version.at_least(ProtocolVersion::V2025_11_25) && !self.icons.is_empty() {
            info["icons"] = json!(self.icons);
        }
        info
    }

    fn method_not_found(&self, method: &str) -> RpcError {
        match self.wire.method_not_found_names_method {
            true => RpcError::method_not_found(method),
            false => RpcError::new(ErrorCode::MethodNotFound, "Method not found"),
        }
    }

    /// A request by the `initialize` revisions' rules (`stateless`: for the stateless revision,
    /// which drops the SDK style's `execution` object).
    async fn legacy_request(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&RawValue>,
        ctx: RequestContext,
        stateless: bool,
    ) -> Result<Box<RawValue>, RpcError> {
        // Results are serialised straight from their typed form into the frame: a tool list
        // or a tool result never takes a detour through a `Value` tree (a deep copy per call).
        let version = self.render_version(&ctx);
        match method {
            "initialize" => raw(&self.initialize(params)?),
            "ping" => Ok(empty_result()),
            "tools/list" => {
                let execution = match stateless {
                    true => None,
                    false => {
                        self.wire.tool_execution_task_support.map(|support| ToolExecution { task_support: support })
                    }
                };
                self.service.list_ready().await;
                let tools = self.service.list_tools();
                raw(&ToolsList {
                    tools: tools
                        .iter()
                        .map(|tool| ListedTool { tool: Rendered::new(tool, version), execution })
                        .collect(),
                })
            }
            "tools/call" => {
                let name = call_name(params);
                let limit = ctx.result_allowance.map_or(MAX_TOOL_RESULT_BYTES, |more| more.max(MAX_TOOL_RESULT_BYTES));
                let result = self.tools_call(Some(id), params, ctx).await?;
                let encoded = self.encode_result(&result, version)?;
                match encoded.get().len() {
                    len if len <= limit => Ok(encoded),
                    len => {
                        tracing::warn!(tool = %name, bytes = len, "tool result over the response limit; answered with an error");
                        let declarable = limit == MAX_TOOL_RESULT_BYTES && self.service.is_file_command(&name);
                        self.encode_result(&ToolResult::error(oversized_result(&name, len, limit, declarable)), version)
                    }
                }
            }
            "resources/list" => raw(&json!({"resources": []})),
            "resources/templates/list" => raw(&json!({"resourceTemplates": []})),
            "prompts/list" => raw(&json!({"prompts": []})),
            // A notification method sent with an id still gets an (empty) answer.
            "notifications/initialized" | "notifications/cancelled" => {
                self.notification(method, params);
                raw(&json!({}))
            }
            other => match self.service.custom_request_in(other, params, &ctx) {
                Some(future) => match AssertUnwindSafe(future).catch_unwind().await {
                    Ok(result) => result,
                    Err(_) => {
                        tracing::error!(method = other, "custom request handler panicked");
                        Err(RpcError::internal())
                    }
                },
                None => Err(self.method_not_found(other)),
            },
        }
    }

    /// A tool result as the wire style writes it for `version`.
    fn encode_result(&self, result: &ToolResult, version: ProtocolVersion) -> Result<Box<RawValue>, RpcError> {
        raw(&ResultFrame { result, version, explicit_success_flag: self.wire.explicit_success_flag })
    }

    fn initialize(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let params = decode_params(params)?;
        let requested = params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
        let answered = self.wire.initialize_version(requested);
        if let Some(session) = &self.session {
            *session.lock().unwrap_or_else(|p| p.into_inner()) = ProtocolVersion::parse(answered);
        }
        let mut result = Map::new();
        result.insert("protocolVersion".into(), answered.into());
        result.insert("capabilities".into(), self.service.capabilities());
        let version = ProtocolVersion::parse(answered).unwrap_or(ProtocolVersion::V2024_11_05);
        result.insert("serverInfo".into(), self.server_info_at(version));
        if let Some(instructions) = self.service.instructions() {
            result.insert("instructions".into(), instructions.into());
        }
        Ok(Value::Object(result))
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            "notifications/initialized" => {}
            "notifications/cancelled" => self.cancelled(params),
            other => match params::decode(params) {
                Ok(params) => self.service.notification(other, params),
                // A notification is never answered: all that can be done is to say why in the log.
                Err(error) => tracing::warn!(method = %jsonrpc::clip(other, 128), "notification dropped: {error}"),
            },
        }
    }

    fn cancelled(&self, params: Option<&RawValue>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelledParams {
            request_id: Option<Box<RawValue>>,
        }
        let request_id = match params.map(|raw| serde_json::from_str::<CancelledParams>(raw.get())) {
            Some(Ok(params)) => params.request_id,
            Some(Err(error)) => {
                tracing::warn!("notifications/cancelled with unreadable params ignored: {error}");
                return;
            }
            None => None,
        };
        let Some(key) = request_id.as_deref().and_then(id_key_of_raw) else {
            tracing::warn!("notifications/cancelled without a usable requestId ignored");
            return;
        };
        let outcome = self.registry.cancel(&key);
        if outcome == CancelOutcome::Ambiguous {
            tracing::warn!(?key, "cancellation ignored: more than one active call has this id");
        } else {
            tracing::debug!(?key, ?outcome, "cancellation");
        }
    }

    /// `tools/call`. Returns `Err` only for protocol faults (a panicking tool, a duplicate id on
    /// a surface that refuses them); everything else is a `ToolResult`.
    async fn tools_call(
        &self,
        id: Option<&RequestId>,
        params: Option<&RawValue>,
        ctx: RequestContext,
    ) -> Result<ToolResult, RpcError> {
        let (name, arguments, meta) = match parse_call_params(params) {
            Ok(parts) => parts,
            Err(message) => return Ok(ToolResult::error(message)),
        };
        let registration = match id {
            Some(id) => Some(
                self.registry
                    .register(id.key().clone())
                    .map_err(|e| RpcError::new(ErrorCode::InvalidRequest, e.to_string()))?,
            ),
            None => None,
        };
        if registration.as_ref().is_some_and(Registration::is_cancelled) {
            return Ok(ToolResult::error(CANCELLED));
        }
        // Progress belongs to a request: a `tools/call` notification gets no answer, so there
        // is nothing for progress to keep alive.
        let progress = match (id, &ctx.sink, meta.as_ref().and_then(progress_token)) {
            (Some(_), Some(sink), Some(token)) => Some(Progress::new(token.clone(), sink.clone())),
            _ => None,
        };
        let started = Instant::now();
        let tool_cancel = CancellationToken::new();
        let request = id.map(|id| RequestFacts { id: id.clone(), auth_generation: ctx.auth_generation });
        let call_ctx = CallContext { cancel: tool_cancel.clone(), progress: progress.clone(), meta, request };
        let mut call = AssertUnwindSafe(self.service.call_tool(&name, arguments, call_ctx)).catch_unwind();
        let caller_cancel = registration.as_ref().map(|r| r.token().clone()).unwrap_or_default();

        let finished = tokio::select! {
            biased;
            outcome = &mut call => Some(outcome),
            _ = caller_cancel.cancelled() => None,
            _ = ctx.transport_cancel.cancelled() => None,
            never = heartbeat(progress.as_ref(), started) => match never {},
        };
        // The answer is decided: no progress may follow it, from the heartbeat (stopped with the
        // select) or from anything the tool left holding a clone.
        if let Some(progress) = &progress {
            progress.close();
        }
        let outcome = match finished {
            Some(outcome) => outcome,
            None => {
                // Stop the tool's work and give it a bounded time to clean up, so that the
                // answer "cancelled" means the work has really ended.
                tool_cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
                drop(call);
                let by_caller = caller_cancel.is_cancelled();
                drop(registration);
                return Ok(ToolResult::error(if by_caller { CANCELLED } else { ctx.transport_end.reason() }));
            }
        };
        let result = match outcome {
            Ok(result) => result,
            Err(_) => {
                tracing::error!(tool = %name, "tool panicked");
                return Err(RpcError::internal());
            }
        };
        if let Some(registration) = registration
            && !registration.try_complete()
        {
            return Ok(ToolResult::error(CANCELLED));
        }
        // A tool that noticed the transport deadline reports "cancelled"; the caller did not
        // cancel, so say what actually happened.
        if result.is_error && result.first_text() == Some(CANCELLED) && ctx.transport_cancel.is_cancelled() {
            return Ok(ToolResult::error(ctx.transport_end.reason()));
        }
        Ok(result)
    }
}

/// The `_meta.progressToken` the client sent, if it is one MCP allows (a string or a number).
fn progress_token(meta: &Value) -> Option<&Value> {
    meta.get("progressToken").filter(|token| token.is_string() || token.is_number())
}

/// Keeps a progress-awaiting client waiting while a tool runs: sends progress whenever nothing
/// was sent for [`PROGRESS_INTERVAL`] (the tool's own reports count), with strictly increasing
/// values and a message saying how long the call has run. Never returns; the caller drops it
/// when the call ends. Without progress it does nothing.
async fn heartbeat(progress: Option<&Progress>, started: Instant) -> Infallible {
    let Some(progress) = progress else { return std::future::pending().await };
    let mut due = started + PROGRESS_INTERVAL;
    loop {
        tokio::time::sleep_until(due).await;
        due =
            progress.heartbeat_if_quiet(PROGRESS_INTERVAL, || format!("running for {} s", started.elapsed().as_secs()));
    }
}

/// The `tools/list` result.
#[derive(serde::Serialize)]
struct ToolsList<'a> {
    tools: Vec<ListedTool<'a>>,
}

/// One `tools/list` entry: the tool, plus the `execution` object some wire styles add.
#[derive(serde::Serialize)]
struct ListedTool<'a> {
    #[serde(flatten)]
    tool: Rendered<'a, Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<ToolExecution>,
}

#[derive(Clone, Copy, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolExecution {
    task_support: &'static str,
}

/// The most bytes a `tools/call` result may take once encoded, whatever the tool: a backstop
/// behind each tool's own bounds (which cut and mark), so no tool can send a response a client
/// or the gateway would refuse or choke on. Twice the 4 MiB request bound both transports use.
pub const MAX_TOOL_RESULT_BYTES: usize = 8 * 1024 * 1024;

/// The error a result over its `limit` is replaced with; `declarable`: a file command that could
/// have declared itself for the file allowance.
fn oversized_result(tool: &str, bytes: usize, limit: usize, declarable: bool) -> String {
    let remedy = match declarable {
        true => {
            "Send the call with the header `X-OpenClaw-File-Command: <the command>` (its file allowance), or move \
             the bytes over the file channel (`transport: \"binary\"`, `clawmcp call ... --output-file`)."
        }
        false => "Ask for less (a narrower pattern, a line range, output redirected to a file read in parts).",
    };
    format!(
        "The result of {tool} was {bytes} bytes once encoded, over the {limit}-byte limit for a tool result, so it \
         was not sent. {remedy}"
    )
}

/// The tool name of a `tools/call`, for logs and errors (`?` when it cannot be read).
fn call_name(params: Option<&RawValue>) -> String {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    params
        .and_then(|raw| serde_json::from_str::<Named<'_>>(raw.get()).ok())
        .map_or_else(|| "?".to_owned(), |named| named.name.into_owned())
}

/// Serialises a result for embedding in its response frame.
/// `{}`, what `ping` answers, without serialising anything.
fn empty_result() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("{} is JSON")
}

fn raw<T: serde::Serialize + ?Sized>(result: &T) -> Result<Box<RawValue>, RpcError> {
    raw_result(result)
}

/// `result` as the JSON of a response's `result` (an internal error if it cannot be written).
pub fn raw_result<T: serde::Serialize + ?Sized>(result: &T) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(result).map_err(|_| RpcError::internal())
}

type CallParts = (String, Map<String, Value>, Option<Value>);

/// [`McpService::custom_request`] of `params` decoded (an answer of `-32602` when they cannot
/// be): what [`McpService::custom_request_in`] does for a request its service does not read raw.
pub fn decoded_custom_request<'a, S: McpService + ?Sized>(
    service: &'a S,
    method: &'a str,
    params: Option<&RawValue>,
) -> Option<BoxFuture<'a, Result<Box<RawValue>, RpcError>>> {
    let params = match decode_params(params) {
        Ok(params) => params,
        Err(error) => return Some(futures_util::future::ready(Err(error)).boxed()),
    };
    service.custom_request(method, params).map(|answer| async move { raw_result(&answer.await?) }.boxed())
}

/// Decodes the `params` of a method that reads them; what cannot be decoded is `-32602` with
/// the precise reason (`tools/call` reports the same reason as a tool error instead).
pub fn decode_params(params: Option<&RawValue>) -> Result<Option<Value>, RpcError> {
    params::decode(params).map_err(|error| RpcError::new(ErrorCode::InvalidParams, error.to_string()))
}

/// Validates `tools/call` params. Each failure is a tool error message (`docs/node-http.md` §6:
/// argument problems go to the model, not as JSON-RPC errors).
fn parse_call_params(params: Option<&RawValue>) -> Result<CallParts, String> {
    let params = params::decode(params).map_err(|error: ParamsError| error.to_string())?;
    let Some(Value::Object(mut params)) = params else {
        return Err("Invalid params: expected object".into());
    };
    let name = match params.remove("name") {
        Some(Value::String(name)) if name.trim().is_empty() => return Err("Empty tool name".into()),
        Some(Value::String(name)) => name,
        _ => return Err("Missing 'name'".into()),
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments,
        Some(_) => return Err("'arguments' must be a JSON object if present".into()),
    };
    Ok((name, arguments, params.remove("_meta")))
}
