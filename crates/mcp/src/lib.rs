//! The MCP core shared by every clawmcp surface. It knows nothing about OpenClaw.
//!
//! # Layout
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes, exact request ids, response frames.
//! - [`client`]: the client side: request and cancellation frames, reading a server's responses
//!   and notifications (ids matched exactly, malformed frames named). HTTP lives elsewhere
//!   (`clawmcp_http::client`): the core knows no transport.
//! - [`params`]: `params` into a `Value`, with errors naming the place and the limit.
//! - [`cancel`]: the cancellation registry (in-flight calls, tombstones, completion guards).
//! - [`types`]: tool descriptors, tool results, the per-call context (cancel, progress).
//! - [`version`]: the MCP revisions served and the one negotiation rule.
//! - [`modern`]: the stateless revision (2026-07-28) served beside them: `server/discover`,
//!   per-request `_meta` versions, no session.
//! - [`server`]: the dispatcher and the [`McpService`] trait a surface implements.
//! - [`stdio`]: newline-delimited transport for the stdio surfaces.
//! - [`tool_filter`]: `--tools PATTERNS`, globs narrowing what a surface serves.
//! - [`wire_size`]: what text costs once JSON-escaped (once or twice), so bounds hold on the wire.
//!
//! Data flows one way: a transport parses bytes into an [`Incoming`], the [`McpServer`] applies
//! the protocol rules and calls the service, and the transport writes the frame it gets back.

pub mod arguments;
pub mod cancel;
pub mod client;
pub mod jsonrpc;
pub mod modern;
pub mod params;
pub mod server;
pub mod stdio;
pub mod tool;
pub mod tool_filter;
pub mod types;
pub mod version;
pub mod wire_size;

pub use arguments::Checking;
pub use cancel::{CancelOutcome, CancellationRegistry, DuplicatePolicy};
pub use jsonrpc::{ErrorCode, IdKey, Incoming, RequestId, RpcError};
pub use params::ParamsError;
pub use server::{
    CANCELLED, FILE_CHANNEL_EXTENSION, HttpEra, McpServer, McpService, MessageClass, PROTOCOL_VERSION, RequestContext,
    SHUTTING_DOWN, ServerInfo, TIMED_OUT, TransportEnd, VersionRule, WireStyle, raw_result,
};
pub use tool::{Handler, NodeEvent, ToolDef, ToolFailure, ToolOutcome, ToolOutput, ToolSet, Unserved};
pub use tool_filter::{ToolFilter, ToolFilterError};
pub use types::{
    CallContext, Content, EmbeddedResource, FrameSink, Icon, Progress, Rendered, RequestFacts, ResultFrame, Schema,
    Tool, ToolAnnotations, ToolResult, permissive_schema,
};
pub use version::ProtocolVersion;
