//! The loopback MCP HTTP transport of the node host (`docs/node-http.md`): plain JSON-RPC over
//! `POST http://127.0.0.1:<port>/`, behind a security gate, with bounded bodies, time and
//! concurrency; a `tools/call` asking for progress is answered as a short event stream. It knows
//! nothing about what tools do: every accepted message goes to a shared
//! [`McpServer`](clawmcp_mcp::McpServer), so a `notifications/cancelled` arriving on one connection
//! reaches the `tools/call` running on another.
//!
//! # Layout
//!
//! - [`server`]: bind, accept, connections, the per-request pipeline and shutdown.
//! - `coalesce`: a connection's small writes gathered into one (pipelined answers).
//! - `connections`: the connection budget (authenticated vs not, eviction, per-phase deadlines).
//! - `gate`: loopback, browser signals, Host, bearer token, media type; the refusal table.
//! - `body`: reading a body bounded in size and time.
//! - `pools`: ingress, tool and control slots.
//! - `sse`: the streamed answer of a `tools/call` with a progress token (progress, then result).
//! - [`limits`]: every bound, with the defaults of `docs/node-http.md`.
//! - [`token`]: the bearer token file and its live reload.
//! - [`client`]: the one HTTP MCP client (`call`, the stdio relay, `tools`' gateway discovery).
//!
//! The CLI calls [`bind`], prints [`HttpServer::endpoint`], then runs [`HttpServer::serve`].

mod body;
pub mod client;
mod coalesce;
mod connections;
mod gate;
pub mod limits;
mod pools;
pub mod server;
mod sse;
pub mod token;

pub use limits::{FILE_ENVELOPE_BYTES, Limits, MAX_BODY_BYTES};
pub use server::{BindError, HttpConfig, HttpServer, bind};

/// Entry points for the fuzz targets in `fuzz/` only: hidden, not an API. Each forwards to one of
/// the gate's private header checks and reports a refusal as the status and text it answers.
#[doc(hidden)]
pub mod fuzzing {
    use std::net::IpAddr;

    use http::{Request, StatusCode};

    use crate::gate;
    use crate::token::LiveToken;

    /// How the server would refuse: status and body text.
    pub type Refused = (StatusCode, &'static str);

    fn refused(refusal: gate::Refusal) -> Refused {
        (refusal.status(), refusal.text())
    }

    pub fn admit<B>(peer: IpAddr, request: &Request<B>, token: &LiveToken) -> Result<(), Refused> {
        let headers = gate::Headers::scan(request.headers());
        gate::admit(peer, request.method(), request.uri(), &headers, token).map(drop).map_err(refused)
    }

    pub fn require_json<B>(request: &Request<B>) -> Result<(), Refused> {
        gate::require_json(&gate::Headers::scan(request.headers())).map_err(refused)
    }

    pub fn wants_event_stream<B>(request: &Request<B>) -> bool {
        gate::wants_event_stream(&gate::Headers::scan(request.headers()))
    }

    pub fn accepts_event_stream<B>(request: &Request<B>) -> bool {
        gate::accepts_event_stream(&gate::Headers::scan(request.headers()))
    }
}
