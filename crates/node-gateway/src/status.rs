//! What the node's gateway connection is doing, in the words an operator acts on: connected or
//! not, paired or waiting for which approval, and the exact command that unblocks it.
//!
//! Two approvals stand between a new node and its first invoke (`docs/gateway-protocol.md` §11):
//! the *device* (silently approved on loopback by default; otherwise the connect is refused
//! `NOT_PAIRED` with a `requestId`, approved by `openclaw devices approve <requestId>`), then the
//! *command surface* (`openclaw nodes approve <requestId>`; until then node methods fail with
//! `PAIRING_CHANGED`, and the node is not told the request id, so the hint names
//! `openclaw nodes pending`).

use clawmcp_gateway::{GatewayError, LinkStatus};
use serde::Serialize;

/// The socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionState {
    Connecting,
    Connected,
    Stopped,
}

/// Where the node stands with the gateway's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pairing {
    /// Not known yet (not connected since start).
    Unknown,
    /// The gateway refused the device until an operator approves it.
    DevicePending,
    /// Connected; the command surface awaits `openclaw nodes approve`.
    Pending,
    /// Invocable.
    Approved,
    /// The operator rejected the surface: connected, serving nothing until a new approval.
    Rejected,
}

/// A snapshot of the node's gateway side (also written to the status file for `clawmcp node
/// status`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    pub url: String,
    /// The gateway's name for this node: the device id.
    pub node_id: String,
    pub display_name: String,
    pub state: ConnectionState,
    pub pairing: Pairing,
    /// The pending pairing request, when the gateway told us (device pairing only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The commands this node declares.
    pub commands: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// What to do about the state, when something is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Invocations answered since start.
    pub invokes: u64,
}

impl GatewayStatus {
    pub fn new(url: String, node_id: String, display_name: String, commands: Vec<String>) -> Self {
        GatewayStatus {
            url,
            node_id,
            display_name,
            state: ConnectionState::Connecting,
            pairing: Pairing::Unknown,
            request_id: None,
            commands,
            last_error: None,
            hint: None,
            invokes: 0,
        }
    }

    /// Takes in the client's link state (a connect refusal can move pairing).
    pub fn observe_link(&mut self, link: &LinkStatus) {
        match link {
            LinkStatus::Connected(_) => {
                self.state = ConnectionState::Connected;
                self.last_error = None;
                if self.pairing == Pairing::DevicePending {
                    // The device got in; the surface is judged next.
                    self.pairing = Pairing::Unknown;
                    self.request_id = None;
                }
            }
            LinkStatus::Connecting { last_error, error } => {
                self.state = ConnectionState::Connecting;
                self.last_error = (last_error != "connecting").then(|| last_error.clone());
                if let Some(request_id) = error.as_ref().and_then(device_pairing_request) {
                    self.pairing = Pairing::DevicePending;
                    self.request_id = Some(request_id);
                }
            }
            LinkStatus::Stopped(error) => {
                self.state = ConnectionState::Stopped;
                self.last_error = Some(error.to_string());
            }
        }
        self.hint = self.compute_hint(link);
    }

    /// Takes in what a node method answered (the surface probe) or a `node.pair.resolved`.
    pub fn observe_pairing(&mut self, pairing: Pairing) {
        if pairing != self.pairing {
            self.request_id = None;
        }
        self.pairing = pairing;
        self.hint = self.compute_hint_connected();
    }

    /// The pending surface's request id, when the gateway named it.
    pub fn observe_surface_request(&mut self, request_id: String) {
        self.pairing = Pairing::Pending;
        self.request_id = Some(request_id);
        self.hint = self.compute_hint_connected();
    }

    fn compute_hint(&self, link: &LinkStatus) -> Option<String> {
        match link {
            LinkStatus::Connected(_) => self.compute_hint_connected(),
            // Closed by us (a stop, a rejoin): nothing for the operator to do.
            LinkStatus::Stopped(GatewayError::Closed) => None,
            LinkStatus::Connecting { error: Some(error), .. } => Some(self.refusal_hint(error)),
            // Stopped on its own (a spent setup code, a protocol mismatch): no retry follows, so
            // the hint must not promise one.
            LinkStatus::Stopped(error) if self.refusal_hint(error).contains(KEEPS_RETRYING) => Some(format!(
                "this node stopped connecting to the gateway at {}: fix what lastError says, then restart `clawmcp \
                 node`",
                self.url
            )),
            LinkStatus::Stopped(error) => Some(self.refusal_hint(error)),
            LinkStatus::Connecting { error: None, .. } => None,
        }
    }

    fn compute_hint_connected(&self) -> Option<String> {
        match self.pairing {
            Pairing::Pending => Some(match &self.request_id {
                Some(id) => format!(
                    "approve this node's commands on the gateway host: `openclaw nodes approve {id}` (this node \
                     retries on its own)"
                ),
                None => "approve this node's commands on the gateway host: `openclaw nodes pending`, then `openclaw \
                         nodes approve <requestId>` (this node retries on its own)"
                    .to_owned(),
            }),
            Pairing::Rejected => Some(
                "the operator rejected this node's commands; reconnect (`clawmcp node` restart) to ask again, then \
                 `openclaw nodes approve <requestId>`"
                    .to_owned(),
            ),
            Pairing::DevicePending => self.request_id.as_ref().map(|id| devices_approve(id)),
            Pairing::Unknown | Pairing::Approved => None,
        }
    }

    fn refusal_hint(&self, error: &GatewayError) -> String {
        if let Some(request_id) = device_pairing_request(error) {
            return devices_approve(&request_id);
        }
        if error.is_tls_pin_mismatch() {
            return format!(
                "the certificate the gateway at {} presents is not the pinned one: compare --gateway-tls-fingerprint \
                 (GatewayTlsFingerprint in settings.json) with `openssl x509 -noout -fingerprint -sha256 -in \
                 <its certificate>` on the gateway host; a new certificate needs a new pin (or a new setup code)",
                self.url
            );
        }
        match error.detail_code() {
            Some("AUTH_TOKEN_MISMATCH" | "AUTH_TOKEN_MISSING") => format!(
                "the gateway at {} refused the token: pass the gateway's `gateway.auth.token` with \
                 --gateway-token-file FILE (or OPENCLAW_GATEWAY_TOKEN)",
                self.url
            ),
            Some("AUTH_PASSWORD_MISMATCH" | "AUTH_PASSWORD_MISSING") => format!(
                "the gateway at {} refused the password: pass `gateway.auth.password` with --gateway-password-file FILE",
                self.url
            ),
            _ if error.is_spent_setup_code() => spent_setup_code_advice(&self.url),
            Some("PAIRING_REQUIRED") => "approve this device on the gateway host: `openclaw devices list`, then \
                                         `openclaw devices approve <requestId>`"
                .to_owned(),
            _ => format!(
                "is the gateway running at {}? (`openclaw gateway status` on its host); {KEEPS_RETRYING}",
                self.url
            ),
        }
    }
}

/// A setup code the gateway refused, in the operator's words: what happened, why retrying
/// cannot help, and how to get a code that works. The hint of the status and the error
/// `clawmcp node --pair` exits with.
pub fn spent_setup_code_advice(url: &str) -> String {
    format!(
        "the gateway at {url} refused the setup code: it was already used, has expired or was revoked. A setup code \
         admits one device once (for 10 minutes), so retrying it cannot help. Make a new one on the gateway host \
         (`openclaw qr --setup-code-only`, or the Control UI's Devices > Node host dialog, whose code also approves \
         this node's commands) and run `clawmcp node --pair <new-code>`"
    )
}

/// The default hint's promise, true only while the client retries.
const KEEPS_RETRYING: &str = "this node keeps retrying";

fn devices_approve(request_id: &str) -> String {
    format!(
        "approve this device on the gateway host: `openclaw devices approve {request_id}` (this node retries on its own)"
    )
}

/// The request id in the gateway's "run `openclaw nodes approve <id>`" wording, if any.
pub fn approve_request_in(message: &str) -> Option<String> {
    const COMMAND: &str = "openclaw nodes approve ";
    let start = message.find(COMMAND)? + COMMAND.len();
    let id: String = message[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    (!id.is_empty() && id != "requestId").then_some(id)
}

/// The request id of a refused connect that waits for device pairing (`openclaw devices approve
/// <requestId>`): the node's own, or the operator device of its app tools.
pub fn device_pairing_request(error: &GatewayError) -> Option<String> {
    let shape = error.error_shape()?;
    if shape.code != "NOT_PAIRED" && shape.detail_code() != Some("PAIRING_REQUIRED") {
        return None;
    }
    shape.details.as_ref()?.get("requestId")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use clawmcp_gateway::ErrorShape;
    use serde_json::json;

    use super::*;

    fn refused(code: &str, details: serde_json::Value) -> LinkStatus {
        let mut shape = ErrorShape::new(code, "refused");
        shape.details = Some(details);
        let error = GatewayError::ConnectRejected { url: "ws://g".into(), error: Box::new(shape) };
        LinkStatus::Connecting { last_error: error.to_string(), error: Some(error) }
    }

    fn status() -> GatewayStatus {
        GatewayStatus::new("ws://g".into(), "dev".into(), "n".into(), vec![])
    }

    #[test]
    fn device_pairing_names_the_exact_approve_command_and_clears_once_in() {
        let mut status = status();
        status.observe_link(&refused("NOT_PAIRED", json!({"code":"PAIRING_REQUIRED","requestId":"r-1"})));
        assert_eq!(status.pairing, Pairing::DevicePending);
        assert_eq!(status.request_id.as_deref(), Some("r-1"));
        assert!(status.hint.as_deref().unwrap().contains("`openclaw devices approve r-1`"), "{:?}", status.hint);
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["pairing"], "device-pending");
        assert_eq!(json["state"], "connecting");
    }

    #[test]
    fn a_pending_surface_points_at_nodes_pending_and_approve() {
        let mut status = status();
        status.observe_pairing(Pairing::Pending);
        let hint = status.hint.clone().unwrap();
        assert!(hint.contains("openclaw nodes pending") && hint.contains("openclaw nodes approve"), "{hint}");
        status.observe_pairing(Pairing::Approved);
        assert!(status.hint.is_none());
    }

    #[test]
    fn a_surface_request_id_named_by_the_gateway_makes_the_hint_exact() {
        let message = "node capability surface is awaiting operator approval; run `openclaw nodes approve \
                       488d5672-9239-4886-80be-41dabe76aa1c` (see `openclaw nodes pending`), then this node retries";
        assert_eq!(approve_request_in(message).as_deref(), Some("488d5672-9239-4886-80be-41dabe76aa1c"));
        assert_eq!(approve_request_in("run `openclaw nodes approve <requestId>`"), None);
        assert_eq!(approve_request_in("nothing here"), None);
        let mut status = status();
        status.observe_surface_request("r-9".into());
        assert_eq!(status.pairing, Pairing::Pending);
        assert!(status.hint.as_deref().unwrap().contains("`openclaw nodes approve r-9`"));
        status.observe_pairing(Pairing::Pending);
        assert_eq!(status.request_id.as_deref(), Some("r-9"), "a repeated pending keeps the id");
        status.observe_pairing(Pairing::Approved);
        assert!(status.request_id.is_none());
    }

    #[test]
    fn a_spent_setup_code_says_to_make_a_new_one() {
        let mut status = status();
        status.observe_link(&refused("INVALID_REQUEST", json!({"code":"AUTH_BOOTSTRAP_TOKEN_INVALID"})));
        let hint = status.hint.clone().unwrap();
        assert!(
            hint.contains("openclaw qr --setup-code-only") && hint.contains("clawmcp node --pair <new-code>"),
            "{hint}"
        );
        assert!(!hint.contains("retrying") || hint.contains("cannot help"), "{hint}");
    }

    #[test]
    fn a_link_that_stopped_on_its_own_promises_no_retry() {
        let mut status = status();
        let mismatch = GatewayError::ProtocolMismatch { url: "ws://g".into(), server: 5, client: 4 };
        status
            .observe_link(&LinkStatus::Connecting { last_error: mismatch.to_string(), error: Some(mismatch.clone()) });
        assert!(status.hint.as_deref().unwrap().contains("keeps retrying"), "{:?}", status.hint);
        status.observe_link(&LinkStatus::Stopped(GatewayError::Stopped(Box::new(mismatch))));
        let hint = status.hint.clone().unwrap();
        assert!(!hint.contains("retrying") && hint.contains("restart `clawmcp node`"), "{hint}");
    }

    #[test]
    fn a_link_we_closed_asks_nothing_of_the_operator() {
        let mut status = status();
        status.observe_link(&LinkStatus::Stopped(GatewayError::Closed));
        assert_eq!(status.state, ConnectionState::Stopped);
        assert!(status.hint.is_none(), "{:?}", status.hint);
    }

    #[test]
    fn a_wrong_token_says_which_flag_fixes_it() {
        let mut status = status();
        status.observe_link(&refused("INVALID_REQUEST", json!({"code":"AUTH_TOKEN_MISMATCH"})));
        assert_eq!(status.pairing, Pairing::Unknown);
        assert!(status.hint.unwrap().contains("--gateway-token-file"));
        assert!(status.last_error.unwrap().contains("refused"));
    }
}
