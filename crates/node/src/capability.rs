//! The one capability trait every native feature implements, and the types of an invocation.
//!
//! A capability never knows which transport called it: the loopback MCP server and (later) the
//! gateway node connection build the same [`InvokeRequest`] and get the same [`InvokeResult`].
//! Adding a capability = one module implementing [`Capability`] + one registration line.

use clawmcp_mcp::{CallContext, ToolAnnotations};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

/// One command a capability serves, as published in `tools/list` (and to the gateway).
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// Dotted command name, also the MCP tool name (`system.run`).
    pub name: &'static str,
    /// Curated description. `None` falls back to `"{category} capability: {command}"`.
    pub description: Option<&'static str>,
    /// JSON Schema of the arguments object. `None` publishes the permissive schema.
    pub input_schema: Option<clawmcp_mcp::Schema>,
    /// Behaviour hints for clients.
    pub annotations: ToolAnnotations,
}

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
}

/// A capability's failure: a message for the caller. Over MCP it becomes `isError: true`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CapabilityError {
    pub message: String,
}

impl CapabilityError {
    pub fn new(message: impl Into<String>) -> Self {
        CapabilityError { message: message.into() }
    }
}

impl From<String> for CapabilityError {
    fn from(message: String) -> Self {
        CapabilityError { message }
    }
}

impl From<&str> for CapabilityError {
    fn from(message: &str) -> Self {
        CapabilityError { message: message.to_string() }
    }
}

/// The payload of a successful invocation (serialised compactly as the MCP text content).
pub type InvokeResult = Result<Value, CapabilityError>;

/// A family of commands backed by one native feature.
pub trait Capability: Send + Sync + 'static {
    /// Category for the description fallback and the gateway `caps` list (`system`, `device`).
    fn category(&self) -> &'static str;

    /// The commands served *right now*. Read on every `tools/list` and `tools/call`, so a
    /// capability may hide commands live (the system-run kill switch does).
    fn commands(&self) -> Vec<CommandSpec>;

    /// Whether this capability owns `command`, even when it is hidden right now. The default is
    /// "currently listed"; a capability with a live switch answers for its hidden commands too,
    /// so a call to a switched-off command gets the capability's own explanation instead of
    /// "Unknown tool".
    fn handles(&self, command: &str) -> bool {
        self.commands().iter().any(|spec| spec.name == command)
    }

    /// Runs one command. `ctx.cancel` fires on client cancellation, deadline or shutdown; the
    /// capability must then stop its work (kill child processes) and return promptly.
    fn invoke<'a>(&'a self, request: InvokeRequest, ctx: CallContext) -> BoxFuture<'a, InvokeResult>;
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
