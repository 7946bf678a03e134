//! Every failure this crate reports, one enum per area: the WebSocket client ([`GatewayError`]),
//! config discovery ([`ConfigError`]), the device identity file ([`IdentityError`]) and
//! `POST /tools/invoke` ([`InvokeError`]).
//!
//! Each variant names what was attempted (URL, method, path, tool) and carries the gateway's own
//! `code`/`message`/`details` when there is one, so a caller can both branch on it and print it.
//! [`GatewayError`] is `Clone` (sources are `Arc`ed) because one terminal failure is handed to
//! every request that waits on the dead client.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_tungstenite::tungstenite;

use crate::frames::ErrorShape;

/// Close codes that mean "this handshake will never succeed as sent": protocol error (1002),
/// unsupported or invalid data (1003, 1007), policy violation (1008, auth and pairing) and
/// message too big (1009, the pre-auth cap). Anything else (1012 restart, 1013 try again later,
/// a dropped socket) is worth a retry.
const TERMINAL_CLOSE_CODES: [u16; 5] = [1002, 1003, 1007, 1008, 1009];

/// The gateway's `details.code` for a bootstrap token it will never accept again.
const SPENT_SETUP_CODE: &str = "AUTH_BOOTSTRAP_TOKEN_INVALID";

/// A failure of the gateway WebSocket client.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GatewayError {
    #[error("invalid gateway URL `{url}`: {reason}")]
    InvalidUrl { url: String, reason: String },

    #[error("cannot open a WebSocket to the gateway at `{url}`: {source}")]
    Connect {
        url: String,
        #[source]
        source: Arc<tungstenite::Error>,
    },

    #[error(
        "the gateway at `{url}` did not complete the {stage} within {waited:?}; is an OpenClaw gateway (protocol 4) running there?"
    )]
    HandshakeTimeout { url: String, stage: &'static str, waited: Duration },

    #[error("the gateway at `{url}` refused the connection: {error}")]
    ConnectRejected { url: String, error: Box<ErrorShape> },

    #[error("the gateway at `{url}` closed the connection during the handshake ({})", describe_close(*.code, .reason))]
    HandshakeClosed { url: String, code: Option<u16>, reason: String },

    #[error("the gateway at `{url}` broke the handshake protocol: {reason}")]
    BadHandshake { url: String, reason: String },

    #[error("the gateway at `{url}` speaks protocol {server}, clawmcp speaks {client}; upgrade the older side")]
    ProtocolMismatch { url: String, server: u32, client: u32 },

    #[error("gateway method `{method}` failed: {error}")]
    Rejected { method: String, error: Box<ErrorShape> },

    #[error("gateway method `{method}` got no response within {after:?}")]
    Timeout { method: String, after: Duration },

    #[error("the gateway connection dropped while `{method}` was in flight ({reason}); it may or may not have run")]
    Disconnected { method: String, reason: String },

    #[error("not connected to the gateway: `{method}` waited {waited:?} for a reconnect (last error: {last_error})")]
    NotConnected { method: String, waited: Duration, last_error: String },

    #[error("`{method}` request is {size} bytes, over the gateway's maxPayload of {limit} bytes; nothing was sent")]
    PayloadTooLarge { method: String, size: usize, limit: usize },

    #[error("cannot encode the params of `{method}`: {reason}")]
    InvalidParams { method: String, reason: String },

    #[error("the gateway client was closed")]
    Closed,

    #[error("the gateway client stopped reconnecting: {0}")]
    Stopped(Box<GatewayError>),
}

fn describe_close(code: Option<u16>, reason: &str) -> String {
    match (code, reason.is_empty()) {
        (Some(code), false) => format!("close code {code}: {reason}"),
        (Some(code), true) => format!("close code {code}"),
        (None, _) => "no close frame".to_owned(),
    }
}

impl GatewayError {
    /// The gateway's error object, when the gateway answered with one.
    pub fn error_shape(&self) -> Option<&ErrorShape> {
        match self {
            GatewayError::ConnectRejected { error, .. } | GatewayError::Rejected { error, .. } => Some(error),
            GatewayError::Stopped(inner) => inner.error_shape(),
            _ => None,
        }
    }

    /// The gateway's `code` (`INVALID_REQUEST`, `NOT_PAIRED`, `FORBIDDEN`, ...).
    pub fn code(&self) -> Option<&str> {
        self.error_shape().map(|e| e.code.as_str())
    }

    /// The gateway's `details.code` (`AUTH_TOKEN_MISMATCH`, `PAIRING_REQUIRED`, ...).
    pub fn detail_code(&self) -> Option<&str> {
        self.error_shape().and_then(ErrorShape::detail_code)
    }

    /// Whether reconnecting cannot help: the gateway refused our credentials, pairing or
    /// protocol (OpenClaw's reference client pauses on the same conditions), or the request we
    /// send is itself invalid. A refusal marked `retryable` or `UNAVAILABLE` (gateway starting,
    /// busy) is not terminal.
    pub fn is_terminal(&self) -> bool {
        match self {
            GatewayError::ConnectRejected { error, .. } => error.retryable != Some(true) && error.code != "UNAVAILABLE",
            GatewayError::HandshakeClosed { code: Some(code), .. } => TERMINAL_CLOSE_CODES.contains(code),
            GatewayError::InvalidUrl { .. }
            | GatewayError::BadHandshake { .. }
            | GatewayError::ProtocolMismatch { .. }
            | GatewayError::Closed
            | GatewayError::Stopped(_) => true,
            _ => false,
        }
    }

    /// A refusal by the gateway itself (credentials, pairing, a policy close), as opposed to a
    /// broken URL or protocol: what a persistent node keeps retrying, because the operator can
    /// resolve it (approve the device, fix the token) without restarting us. A spent setup code
    /// is not one: nothing the operator does makes that bootstrap token valid again, so the real
    /// node host exits on it, and so does a persistent client ([`Self::is_spent_setup_code`]).
    pub fn is_refusal(&self) -> bool {
        matches!(self, GatewayError::ConnectRejected { .. } | GatewayError::HandshakeClosed { .. })
            && !self.is_spent_setup_code()
    }

    /// The gateway refused a setup code's bootstrap token (`AUTH_BOOTSTRAP_TOKEN_INVALID`:
    /// already used, expired or revoked). A code admits one device once; only a new code helps.
    pub fn is_spent_setup_code(&self) -> bool {
        self.detail_code() == Some(SPENT_SETUP_CODE)
    }

    /// The `wss://` gateway's certificate is not the pinned one.
    pub fn is_tls_pin_mismatch(&self) -> bool {
        matches!(self, GatewayError::Connect { source, .. } if source.to_string().contains(crate::tls_pin::PIN_MISMATCH))
    }

    /// `retryAfterMs` from a refused connect, the earliest the gateway wants to see us again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            GatewayError::ConnectRejected { error, .. } => error.retry_after_ms.map(Duration::from_millis),
            _ => None,
        }
    }
}

/// A failure to work out which gateway to use and how to authenticate.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the OpenClaw config `{path}`: {source}")]
    ReadConfig { path: PathBuf, source: io::Error },

    #[error("cannot parse the OpenClaw config `{path}` as JSON5: {reason}")]
    ParseConfig { path: PathBuf, reason: String },

    #[error("`{key}` in `{path}` must be {expected}")]
    BadConfigValue { path: PathBuf, key: String, expected: &'static str },

    #[error("{name}={value:?} is not a port number (1-65535)")]
    BadPort { name: String, value: String },

    #[error("pass either --{flag} or --{flag}-file, not both")]
    ConflictingFlags { flag: &'static str },

    #[error("cannot read the {what} file `{path}`: {source}")]
    ReadSecretFile { what: &'static str, path: PathBuf, source: io::Error },

    #[error("the {what} file `{path}` is empty")]
    EmptySecretFile { what: &'static str, path: PathBuf },

    #[error(
        "`{key}` in `{path}` is a secret reference clawmcp cannot resolve ({reason}); set OPENCLAW_GATEWAY_TOKEN or OPENCLAW_GATEWAY_PASSWORD, or pass --token-file/--password-file"
    )]
    SecretRef { path: PathBuf, key: String, reason: String },

    #[error("no gateway credentials: {0}")]
    NoCredentials(String),

    #[error("invalid gateway URL `{url}` (from {origin}): {reason}")]
    InvalidUrl { url: String, origin: String, reason: String },

    #[error(
        "refusing plaintext ws:// to the non-loopback host `{host}` (URL from {origin}): the credentials and chat data would cross the network unencrypted; use wss://, an SSH tunnel to 127.0.0.1, or set OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1 on a trusted private network"
    )]
    InsecureUrl { host: String, origin: String },
}

/// A failure to load, create or use the device identity file.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot create the identity directory `{path}`: {source}")]
    CreateDir { path: PathBuf, source: io::Error },

    #[error("cannot read the device identity `{path}`: {source}")]
    Read { path: PathBuf, source: io::Error },

    #[error("cannot write the device identity `{path}`: {source}")]
    Write { path: PathBuf, source: io::Error },

    #[error(
        "the device identity `{path}` is malformed ({reason}); move it away to create a new identity (the gateway will then need to pair the new device)"
    )]
    Malformed { path: PathBuf, reason: String },

    /// The file or its directory breaks the state trust rules (a symlink, a FIFO, another
    /// owner, readable or writable by others); the message says what and how to fix it.
    #[error("device identity: {source}")]
    Untrusted { source: io::Error },

    #[error("the OS random number generator failed: {0}")]
    Random(String),
}

/// A failure of `POST /tools/invoke` before an HTTP status was received (a status, even 4xx or
/// 5xx, is a response, not an error).
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    #[error("invalid gateway URL `{url}`: {reason}")]
    InvalidUrl { url: String, reason: String },

    #[error("the gateway credential cannot be sent in an Authorization header (it contains control characters)")]
    InvalidCredential,

    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),

    /// The upstream bridge's wording (`GATEWAY_TOOL_TIMEOUT`), kept so transcripts match.
    #[error("Gateway request timed out after {}ms: {tool}", .after.as_millis())]
    Timeout { tool: String, after: Duration },

    #[error("cannot reach the gateway at `{url}` for tool `{tool}`: {source}")]
    Transport {
        tool: String,
        url: String,
        #[source]
        source: reqwest::Error,
    },

    #[error("the gateway's response to tool `{tool}` exceeds {limit} bytes")]
    ResponseTooLarge { tool: String, limit: usize },

    #[error("cannot encode the request for tool `{tool}`: {reason}")]
    Encode { tool: String, reason: String },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_refused_pin_is_recognised_through_the_tls_stack() {
        let tls = |text: String| GatewayError::Connect {
            url: "wss://127.0.0.1:1".into(),
            source: Arc::new(tungstenite::Error::Tls(tungstenite::error::TlsError::Rustls(Box::new(
                rustls::Error::General(text),
            )))),
        };
        assert!(
            tls(format!("{}: the certificate is ab, the pin is cd", crate::tls_pin::PIN_MISMATCH))
                .is_tls_pin_mismatch()
        );
        assert!(!tls("something else".into()).is_tls_pin_mismatch());
    }

    fn rejected(code: &str, retryable: Option<bool>) -> GatewayError {
        let mut error = ErrorShape::new(code, "nope");
        error.retryable = retryable;
        error.details = Some(json!({"code": "AUTH_TOKEN_MISMATCH"}));
        GatewayError::ConnectRejected { url: "ws://127.0.0.1:1".into(), error: Box::new(error) }
    }

    #[test]
    fn terminal_classification() {
        assert!(rejected("INVALID_REQUEST", None).is_terminal());
        assert!(rejected("NOT_PAIRED", None).is_terminal());
        assert!(!rejected("INVALID_REQUEST", Some(true)).is_terminal());
        assert!(!rejected("UNAVAILABLE", None).is_terminal());
        let closed = |code| GatewayError::HandshakeClosed { url: String::new(), code, reason: String::new() };
        assert!(closed(Some(1008)).is_terminal());
        assert!(closed(Some(1002)).is_terminal());
        assert!(!closed(Some(1012)).is_terminal());
        assert!(!closed(Some(1013)).is_terminal());
        assert!(!closed(None).is_terminal());
        let timeout = GatewayError::Timeout { method: "m".into(), after: Duration::from_secs(1) };
        assert!(!timeout.is_terminal());
    }

    #[test]
    fn a_spent_setup_code_is_terminal_even_for_a_persistent_node() {
        let mut shape = ErrorShape::new("INVALID_REQUEST", "unauthorized: setup code invalid");
        shape.details = Some(json!({"code": "AUTH_BOOTSTRAP_TOKEN_INVALID", "canRetryWithDeviceToken": false}));
        let spent = GatewayError::ConnectRejected { url: "ws://127.0.0.1:1".into(), error: Box::new(shape) };
        assert!(spent.is_terminal() && spent.is_spent_setup_code());
        assert!(!spent.is_refusal(), "no operator action revives a spent code: a persistent node must not wait");
        assert!(GatewayError::Stopped(Box::new(spent)).is_spent_setup_code(), "seen through Stopped");
        let pairing = rejected("NOT_PAIRED", None);
        assert!(pairing.is_refusal() && !pairing.is_spent_setup_code());
    }

    #[test]
    fn codes_reach_through_stopped() {
        let stopped = GatewayError::Stopped(Box::new(rejected("INVALID_REQUEST", None)));
        assert_eq!(stopped.code(), Some("INVALID_REQUEST"));
        assert_eq!(stopped.detail_code(), Some("AUTH_TOKEN_MISMATCH"));
        assert!(stopped.to_string().contains("nope [INVALID_REQUEST/AUTH_TOKEN_MISMATCH]"));
    }

    #[test]
    fn invoke_timeout_keeps_upstream_wording() {
        let error = InvokeError::Timeout { tool: "sessions_list".into(), after: Duration::from_millis(1500) };
        assert_eq!(error.to_string(), "Gateway request timed out after 1500ms: sessions_list");
    }
}
