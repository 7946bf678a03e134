//! [`FakeConfig`]: how a [`FakeGateway`](crate::FakeGateway) behaves from the start. Runtime
//! knobs (ticks on/off, refusing auth, accepting) live on the gateway itself.

use std::time::Duration;

/// The shared secret the fake checks, like `gateway.auth.mode`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeAuth {
    Token(String),
    Password(String),
    None,
}

#[derive(Debug, Clone)]
pub struct FakeConfig {
    pub auth: FakeAuth,
    /// `policy.tickIntervalMs` and the period of `tick` events.
    pub tick_interval: Duration,
    /// Whether `tick` events are sent at all (also switchable at run time).
    pub ticks: bool,
    /// `policy.maxPayload`; larger inbound frames after the handshake close the socket (1009).
    pub max_payload: usize,
    /// The only protocol the fake accepts (the real gateway: 4).
    pub protocol: u32,
    pub server_version: String,
    /// `features.methods` in hello-ok.
    pub methods: Vec<String>,
    /// `features.events` in hello-ok.
    pub events: Vec<String>,
    /// Send `connect.challenge` on open (off to test the client's challenge timeout).
    pub send_challenge: bool,
    /// Refuse device-less operators, as for the Control UI.
    pub require_device: bool,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            auth: FakeAuth::Token("fake-gateway-token".to_owned()),
            tick_interval: Duration::from_secs(30),
            ticks: true,
            max_payload: 26_214_400,
            protocol: 4,
            server_version: "2026.9.6-fake".to_owned(),
            methods: ["health", "sessions.list", "sessions.subscribe", "sessions.describe", "send", "chat.message.get"]
                .map(str::to_owned)
                .to_vec(),
            events: ["connect.challenge", "tick", "session.message", "exec.approval.requested", "shutdown"]
                .map(str::to_owned)
                .to_vec(),
            send_challenge: true,
            require_device: false,
        }
    }
}

impl FakeConfig {
    /// The default config with this token.
    pub fn with_token(token: &str) -> Self {
        FakeConfig { auth: FakeAuth::Token(token.to_owned()), ..FakeConfig::default() }
    }
}
