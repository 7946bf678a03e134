//! A node capability: a family of commands backed by one native feature, each command one
//! [`Command`] (the core's [`ToolDef`]: descriptor and handler in one value).
//!
//! A command never knows which transport called it: the loopback MCP server and the gateway
//! node connection build the same [`InvokeRequest`] and render the same [`ToolOutcome`] (MCP
//! content blocks, or the gateway's `payloadJSON`). Adding a command = one module with its
//! [`CommandSpec`] and handler, one line in its capability's command list, one README row.

use std::future::Future;

use clawmcp_mcp::{CallContext, Schema, Tool, ToolAnnotations, ToolDef, ToolFailure, ToolOutcome, ToolOutput};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

/// One command as published in `tools/list` (and to the gateway): the literal each command
/// module writes, turned into a [`Command`] by [`CommandSpec::with_handler`].
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// Dotted command name, also the MCP tool name (`system.run`).
    pub name: &'static str,
    /// A human-readable name for clients' UIs (MCP 2025-06-18 `title`).
    pub title: Option<&'static str>,
    /// Curated description. `None` falls back to `"{category} capability: {command}"`.
    pub description: Option<&'static str>,
    /// JSON Schema of the arguments object. `None` publishes the permissive schema.
    pub input_schema: Option<Schema>,
    /// JSON Schema of the result, for commands whose result shape is fixed: clients of MCP
    /// 2025-06-18 and later then also get the result as `structuredContent`.
    pub output_schema: Option<Schema>,
    /// Behaviour hints for clients.
    pub annotations: ToolAnnotations,
}

impl CommandSpec {
    /// The category of a command: its name up to the first dot (`system.run` is `system`), as
    /// the gateway's `caps` list names it.
    pub fn category(&self) -> &'static str {
        category_of(self.name)
    }

    /// The MCP descriptor.
    pub fn tool(self) -> Tool {
        Tool {
            description: match self.description {
                Some(text) => text.to_string(),
                None => format!("{} capability: {}", self.category(), self.name),
            },
            name: self.name.to_string(),
            title: self.title.map(str::to_string),
            input_schema: self.input_schema.unwrap_or_else(clawmcp_mcp::permissive_schema),
            output_schema: self.output_schema,
            annotations: Some(self.annotations),
        }
    }

    /// The command: this descriptor and `handler`, whose JSON answer (or failure) becomes the
    /// command's outcome. A handler that answers with content blocks uses
    /// [`CommandSpec::with_output_handler`].
    pub fn with_handler<F, Fut>(self, handler: F) -> Command
    where
        F: Fn(InvokeRequest, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = InvokeResult> + Send + 'static,
    {
        self.with_output_handler(move |request, ctx| handler(request, ctx).map(|result| result.map(ToolOutput::from)))
    }

    /// The command, with a handler that builds its whole [`ToolOutput`].
    pub fn with_output_handler<F, Fut>(self, handler: F) -> Command
    where
        F: Fn(InvokeRequest, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutcome> + Send + 'static,
    {
        ToolDef::new(self.tool(), move |request, ctx| handler(request, ctx).boxed())
    }
}

/// The category of a command name (see [`CommandSpec::category`]).
pub fn category_of(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// One node command: descriptor and handler (see [`clawmcp_mcp::tool`]).
pub type Command = ToolDef<InvokeRequest>;

/// An invocation, identical whichever transport produced it.
#[derive(Debug, Clone)]
pub struct InvokeRequest {
    /// Transport-independent id of this invocation (a fresh random id for MCP calls).
    pub id: String,
    /// The command name, exactly as registered.
    pub command: String,
    /// The arguments object (empty when the caller sent none).
    pub args: Map<String, Value>,
    /// Session key from a gateway envelope; never taken from `args`, always `None` over MCP.
    pub session_key: Option<String>,
    /// Which transport delivered the call. It decides who may approve a `system.run`.
    pub caller: Caller,
}

impl clawmcp_mcp::tool::CallArguments for InvokeRequest {
    fn arguments_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.args
    }
}

/// Who sent an invocation. Commands answer every caller alike except where trust differs:
/// only the gateway's own `node.invoke` may carry an operator's exec approval, because the
/// gateway forwards `approved`/`approvalDecision` only when they match an approval record an
/// operator resolved (an MCP client is the agent itself and must not approve its own commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Caller {
    /// A local MCP client (`tools/call`).
    #[default]
    Mcp,
    /// The gateway's `node.invoke` of this command by name.
    Gateway,
    /// The gateway agent's call of a published plugin tool (`mcp.tools.call.v1`): arguments
    /// straight from a model, as over MCP.
    GatewayPluginTool,
}

/// A command's failure: a message for the caller (over MCP an `isError` result) and optionally
/// a gateway error code.
pub type CapabilityError = ToolFailure;

/// The JSON answer of a command that has no content blocks (most of them).
pub type InvokeResult = Result<Value, CapabilityError>;

/// A family of commands backed by one native feature, registered with one line in
/// [`crate::Registry::builtin`].
pub trait Capability: Send + Sync + 'static {
    /// Every command this capability owns, in published order. A command with a live switch is
    /// still here, marked with [`ToolDef::listed_while`]: hidden from lists while off, its
    /// handler explains the switch to a caller that reaches it anyway.
    fn commands(&self) -> Vec<Command>;

    /// Runs `request.command` directly (tests, and callers that hold a capability rather than
    /// the registry).
    fn invoke(&self, request: InvokeRequest, ctx: CallContext) -> BoxFuture<'static, ToolOutcome> {
        match self.commands().into_iter().find(|command| command.name() == request.command) {
            Some(command) => command.call(request, ctx),
            None => {
                let error = CapabilityError::new(format!("Unknown command: {}", request.command));
                futures_util::future::ready(Err(error)).boxed()
            }
        }
    }
}

/// Typed accessors with the upstream leniency: a wrong JSON type reads as absent (the default
/// applies) rather than failing, so a model's near-miss still runs with documented defaults.
pub mod args {
    use serde_json::{Map, Value};

    pub fn string<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
        args.get(key).and_then(Value::as_str)
    }

    pub fn bool(args: &Map<String, Value>, key: &str) -> Option<bool> {
        args.get(key).and_then(Value::as_bool)
    }

    /// Integers that fit `i64`; floats with no fractional part count (`5.0`).
    pub fn int(args: &Map<String, Value>, key: &str) -> Option<i64> {
        let value = args.get(key)?;
        value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
    }

    /// A whole number the caller must get right (a limit, a size): absent or `null` is `None`,
    /// `5` and `5.0` are `5`, anything else is an error naming the argument. Unlike [`int`],
    /// a wrong type fails, because a silently applied default would not be what was asked.
    pub fn whole_number(args: &Map<String, Value>, key: &str) -> Result<Option<i64>, super::CapabilityError> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => int(args, key).map(Some).ok_or_else(|| {
                super::CapabilityError::new(format!("{key} must be a whole number"))
                    .with_code(clawmcp_mcp::tool::codes::INVALID_REQUEST)
            }),
        }
    }

    /// An encoder quality on the 1..100 scale, from either scale callers use: a whole number is
    /// the Windows node's 1..100; a fraction from 0 to 1 is the scale of the gateway's CLI and
    /// agent tool, the macOS/iOS nodes and the Linux node plugin (`0.95` is 95). Out of range is
    /// clamped, as upstream clamps; absent or `null` is `default`; anything else is an error.
    pub fn quality(args: &Map<String, Value>, default: u8) -> Result<u8, super::CapabilityError> {
        let Some(value) = args.get("quality").filter(|value| !value.is_null()) else { return Ok(default) };
        let Some(number) = value.as_f64().filter(|number| number.is_finite()) else {
            return Err(super::CapabilityError::new(
                "quality must be a number: 1..100, or a fraction 0..1 (0.8 is 80)",
            )
            .with_code(clawmcp_mcp::tool::codes::INVALID_REQUEST));
        };
        let percent = match value.is_f64() && number <= 1.0 {
            true => number * 100.0,
            false => number,
        };
        Ok(percent.round().clamp(1.0, 100.0) as u8)
    }

    /// `includeAudio` (absent or `null`: `default`). No capture records sound yet, so `true` is
    /// answered with [`NO_AUDIO`] beside `hasAudio: false` rather than refused: the gateway's CLI
    /// and agent tool send `true` unless told otherwise.
    pub fn include_audio(args: &Map<String, Value>, default: bool) -> Result<bool, super::CapabilityError> {
        match args.get("includeAudio") {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(on)) => Ok(*on),
            Some(_) => Err(super::CapabilityError::new("includeAudio must be true or false")
                .with_code(clawmcp_mcp::tool::codes::INVALID_REQUEST)),
        }
    }

    /// What a video answer says when audio was asked for (see [`include_audio`]).
    pub const NO_AUDIO: &str = "not recorded: this node has no audio capture backend yet, so the clip is video only";

    /// String array elements, trimmed, blanks dropped; non-strings skipped.
    pub fn string_array(args: &Map<String, Value>, key: &str) -> Vec<String> {
        args.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }
}
