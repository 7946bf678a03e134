//! The MCP dispatcher: one parsed message in, at most one serialised response out. It knows
//! nothing about transports (HTTP, stdio) or about what tools do; both plug in from outside.
//!
//! A surface implements [`McpService`] (its tool list, its tool calls, optional extras), wraps it
//! in an [`McpServer`] and hands messages to [`McpServer::dispatch`]. The server owns the
//! protocol rules that must be identical on every surface: method table, the tool-error versus
//! JSON-RPC-error split, and `notifications/cancelled` through the [`CancellationRegistry`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::cancel::{CancelOutcome, CancellationRegistry, DuplicatePolicy, Registration};
use crate::jsonrpc::{self, ErrorCode, Incoming, RequestId, RpcError, id_key_of_raw, params_value};
use crate::types::{CallContext, FrameSink, Progress, Tool, ToolResult};

/// The protocol version we speak (spec 000). Clients asking for newer versions accept it.
pub const PROTOCOL_VERSION: &str = "2024-11-05";

/// The text of a tool error for a call the client cancelled.
pub const CANCELLED: &str = "cancelled";

/// The text of a tool error for a call the transport gave up on (deadline or shutdown).
pub const TIMED_OUT: &str = "request timed out";

/// How long a cancelled tool may take to clean up (kill and reap a process tree) before its
/// future is dropped anyway. The response waits for this so that "cancelled" means "stopped".
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What a surface provides. Every method but `list_tools` and `call_tool` has a default.
pub trait McpService: Send + Sync + 'static {
    /// The live tool list; called on every `tools/list`, never cached.
    fn list_tools(&self) -> Vec<Tool>;

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

    /// The `protocolVersion` answered to a client that asked for `requested`. The node answers
    /// spec 000's fixed version whatever is asked; a surface that must match an upstream SDK's
    /// negotiation (echo a supported version) overrides this.
    fn protocol_version(&self, requested: Option<&str>) -> String {
        let _ = requested;
        PROTOCOL_VERSION.to_string()
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

    /// A notification outside the MCP table. Ignored by default.
    fn notification(&self, _method: &str, _params: Option<Value>) {}
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
    /// Where progress notifications go, if this transport can carry them for this request.
    pub sink: Option<Arc<dyn FrameSink>>,
}

impl RequestContext {
    pub fn new(transport_cancel: CancellationToken) -> Self {
        RequestContext { transport_cancel, sink: None }
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
    registry: CancellationRegistry,
    service: Arc<S>,
}

impl<S: McpService + ?Sized> McpServer<S> {
    pub fn new(info: ServerInfo, service: Arc<S>, duplicates: DuplicatePolicy) -> Self {
        McpServer { info, registry: CancellationRegistry::new(duplicates), service }
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
                    Ok(value) => jsonrpc::success_frame(&id, &value),
                    Err(error) => jsonrpc::error_frame(Some(&id), &error),
                })
            }
        }
    }

    async fn request(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&RawValue>,
        ctx: RequestContext,
    ) -> Result<Box<RawValue>, RpcError> {
        // Results are serialised straight from their typed form into the frame: a tool list
        // or a tool result never takes a detour through a `Value` tree (a deep copy per call).
        match method {
            "initialize" => raw(&self.initialize(params)),
            "ping" => raw(&json!({})),
            "tools/list" => raw(&ToolsList { tools: self.service.list_tools() }),
            "tools/call" => raw(&self.tools_call(Some(id), params, ctx).await?),
            "resources/list" => raw(&json!({"resources": []})),
            "resources/templates/list" => raw(&json!({"resourceTemplates": []})),
            "prompts/list" => raw(&json!({"prompts": []})),
            // A notification method sent with an id still gets an (empty) answer.
            "notifications/initialized" | "notifications/cancelled" => {
                self.notification(method, params);
                raw(&json!({}))
            }
            other => match self.service.custom_request(other, params_value(params)) {
                Some(future) => match AssertUnwindSafe(future).catch_unwind().await {
                    Ok(result) => raw(&result?),
                    Err(_) => {
                        tracing::error!(method = other, "custom request handler panicked");
                        Err(RpcError::internal())
                    }
                },
                None => Err(RpcError::method_not_found(other)),
            },
        }
    }

    fn initialize(&self, params: Option<&RawValue>) -> Value {
        let params = params_value(params);
        let requested = params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
        let mut result = Map::new();
        result.insert("protocolVersion".into(), self.service.protocol_version(requested).into());
        result.insert("capabilities".into(), self.service.capabilities());
        result.insert("serverInfo".into(), json!({"name": self.info.name, "version": self.info.version}));
        if let Some(instructions) = self.service.instructions() {
            result.insert("instructions".into(), instructions.into());
        }
        Value::Object(result)
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            "notifications/initialized" => {}
            "notifications/cancelled" => self.cancelled(params),
            other => self.service.notification(other, params_value(params)),
        }
    }

    fn cancelled(&self, params: Option<&RawValue>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct CancelledParams {
            request_id: Option<Box<RawValue>>,
        }
        let request_id =
            params.and_then(|raw| serde_json::from_str::<CancelledParams>(raw.get()).ok()).and_then(|p| p.request_id);
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
        let progress = match (&ctx.sink, meta.as_ref().and_then(|m| m.get("progressToken"))) {
            (Some(sink), Some(token)) if token.is_string() || token.is_number() => {
                Some(Progress::new(token.clone(), sink.clone()))
            }
            _ => None,
        };
        let tool_cancel = CancellationToken::new();
        let call_ctx = CallContext { cancel: tool_cancel.clone(), progress, meta };
        let mut call = AssertUnwindSafe(self.service.call_tool(&name, arguments, call_ctx)).catch_unwind();
        let caller_cancel = registration.as_ref().map(|r| r.token().clone()).unwrap_or_default();

        let finished = tokio::select! {
            biased;
            outcome = &mut call => Some(outcome),
            _ = caller_cancel.cancelled() => None,
            _ = ctx.transport_cancel.cancelled() => None,
        };
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
                return Ok(ToolResult::error(if by_caller { CANCELLED } else { TIMED_OUT }));
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
            return Ok(ToolResult::error(TIMED_OUT));
        }
        Ok(result)
    }
}

/// The `tools/list` result.
#[derive(serde::Serialize)]
struct ToolsList {
    tools: Vec<Tool>,
}

/// Serialises a result for embedding in its response frame.
fn raw<T: serde::Serialize + ?Sized>(result: &T) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(result).map_err(|_| RpcError::internal())
}

type CallParts = (String, Map<String, Value>, Option<Value>);

/// Validates `tools/call` params. Each failure is a tool error message (spec 000 reports
/// argument problems to the model, not as JSON-RPC errors).
fn parse_call_params(params: Option<&RawValue>) -> Result<CallParts, String> {
    let Some(Value::Object(mut params)) = params_value(params) else {
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
