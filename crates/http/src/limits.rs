//! Every bound the loopback server enforces, in one struct, so that a reader sees them all at
//! once and tests can shrink any of them instead of waiting for real durations.
//!
//! `Limits::default()` gives the values of `docs/node-http.md` §2.8-§5. Four lease/streaming
//! slots for the `openclaw/file-channel` extension belong to that extension and arrive with it,
//! as a fourth pool beside the three below.

use std::time::Duration;

use clawmcp_mcp::server::CANCEL_GRACE;

/// Largest request body accepted (4 MiB, `docs/node-http.md` §2.8). Exactly this many bytes is
/// accepted.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The file allowance (`docs/node-http.md` §12, `X-OpenClaw-File-Command`): the largest body,
/// and the largest encoded result, of a request that declares a file command. 24 MiB holds the
/// biggest unary file upstream moves, 16 MiB, as base64 (22,369,624 bytes) with its JSON
/// around it; upstream's own figure (`FileTransportJson.EnvelopeBytes`) is not published.
pub const FILE_ENVELOPE_BYTES: usize = 24 * 1024 * 1024;

/// The bounds of one server. All fields are public so the CLI and tests can adjust them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, declared or streamed. Guards memory: a body is held whole while it
    /// is parsed.
    pub max_body_bytes: usize,
    /// Requests that may read and parse a body at once (32 ingress readers, `docs/node-http.md`
    /// §4). Bounds the memory held by bodies in flight to `ingress_readers * max_body_bytes`
    /// (plus `file_envelopes * file_envelope_bytes` for declared file commands).
    pub ingress_readers: usize,
    /// Largest body, and largest encoded result, of a request declaring a file command in
    /// `X-OpenClaw-File-Command` ([`FILE_ENVELOPE_BYTES`]).
    pub file_envelope_bytes: usize,
    /// Declared unary file requests held at once, body through result (2, `docs/node-http.md`
    /// §12: "Only two unary file envelopes/results can be retained concurrently"). A declared
    /// call that streams over the file channel gives its place back once its body is parsed.
    pub file_envelopes: usize,
    /// `tools/call` handlers at once (16, `docs/node-http.md` §4). Tool calls run for minutes, so
    /// they get a pool of their own.
    pub tool_slots: usize,
    /// Handlers for everything else at once (8, `docs/node-http.md` §4): ping, initialize,
    /// tools/list, `notifications/cancelled`, approvals. Separate from `tool_slots` so that busy
    /// tools can never starve a ping or the cancellation that would free them.
    pub control_slots: usize,
    /// How long a request waits for an ingress, tool or control slot before `503 server busy`
    /// (50 ms, `docs/node-http.md` §4). Short, so an overloaded server says so instead of queueing
    /// without end.
    pub slot_wait: Duration,
    /// Open connections at once, of every kind. When a new one arrives at the cap, the
    /// longest-idle connection is closed for it (unauthenticated ones first; one in the middle
    /// of a request never), so file descriptors stay bounded and the accept loop never waits.
    /// See `connections` for the whole budget.
    pub max_connections: usize,
    /// Open connections that have not yet presented a valid token (a connection counts as
    /// authenticated once one of its requests passed the bearer check). When a new connection
    /// finds this budget full, the longest-idle unauthenticated one is closed for it: processes
    /// without the token compete only with each other, never for the `max_connections -
    /// max_unauthenticated_connections` places kept for authenticated clients. Sized above the
    /// connections a real client opens at once (wrk's 64 in bench/node.sh).
    pub max_unauthenticated_connections: usize,
    /// Time an unauthenticated connection may wait before sending the first byte of a request
    /// (a new connection, or one kept open after a refusal). Clients write right after
    /// connecting; a socket that stays silent is holding a place, not asking.
    pub first_byte_timeout: Duration,
    /// Time from the first byte of a request head to its end (slowloris: a head trickling in one
    /// byte at a time is cut here). Real heads arrive in one packet.
    pub header_read_timeout: Duration,
    /// Time an authenticated keep-alive connection may stay idle between requests. Real clients
    /// close idle connections after 4-5 s, before this fires.
    pub idle_timeout: Duration,
    /// Bytes of request head (request line and headers). Real clients send well under 1 KiB.
    pub max_header_bytes: usize,
    /// Number of request headers.
    pub max_headers: usize,
    /// Time to receive a whole body once its headers arrived; a stalled upload then gets
    /// `408 request timed out` and frees its ingress slot. A 4 MiB body over loopback takes
    /// milliseconds.
    pub body_read_timeout: Duration,
    /// Deadline of one request from its headers to its answer, tool call included
    /// (`docs/node-http.md` §5: 6 minutes, longer than the 5-minute screen recording cap). On
    /// expiry the tool is cancelled and the call answers the tool error `request timed out`.
    pub request_timeout: Duration,
    /// After the transport gives up on a request (deadline, disconnect, shutdown), how long the
    /// handler may still run before it is abandoned. The dispatcher already bounds a cancelled
    /// tool's cleanup by `CANCEL_GRACE`; this catches a handler that ignores cancellation.
    pub abandon_after_cancel: Duration,
    /// On shutdown, how long in-flight requests (already cancelled) get to answer before
    /// `serve` returns anyway (5 s drain, `docs/node-http.md` §8).
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: MAX_BODY_BYTES,
            ingress_readers: 32,
            file_envelope_bytes: FILE_ENVELOPE_BYTES,
            file_envelopes: 2,
            tool_slots: 16,
            control_slots: 8,
            slot_wait: Duration::from_millis(50),
            max_connections: 256,
            max_unauthenticated_connections: 64,
            first_byte_timeout: Duration::from_secs(2),
            header_read_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            max_header_bytes: 64 * 1024,
            max_headers: 64,
            body_read_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(6 * 60),
            abandon_after_cancel: CANCEL_GRACE + Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}
