//! Protocol v4 wire shapes: the three frame kinds, `ErrorShape`, the `connect` parameters, the
//! `connect.challenge` payload and `hello-ok`.
//!
//! The gateway validates parameters as *closed* objects (unknown keys and `null` for an optional
//! string are rejected), so every optional field here is `skip_serializing_if` and nothing
//! serializes a `None` as `null`. Inbound shapes are the opposite: lenient (`serde(default)`),
//! because a newer gateway adds fields and this client must not break on them.
//!
//! Source of truth: `packages/gateway-protocol/src/schema/frames.ts` as digested in
//! `docs/gateway-protocol.md` §2, §4 and §6.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::secret::Secret;

/// The protocol this client speaks; it sends `minProtocol = maxProtocol = 4` (operators must).
pub const PROTOCOL_VERSION: u32 = 4;

/// `policy.maxPayload` when a `hello-ok` omits it: the gateway's `MAX_PAYLOAD_BYTES` (25 MiB).
pub const DEFAULT_MAX_PAYLOAD: usize = 26_214_400;

/// `policy.tickIntervalMs` when a `hello-ok` omits it: the gateway's `TICK_INTERVAL_MS`.
pub const DEFAULT_TICK_INTERVAL_MS: u64 = 30_000;

/// One WebSocket text frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Frame {
    Req(RequestFrame),
    Res(ResponseFrame),
    Event(EventFrame),
}

impl Frame {
    /// Parses one inbound text frame; unknown `type` values and missing required fields are errors.
    pub fn parse(text: &str) -> Result<Frame, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The JSON text of this frame.
    pub fn to_text(&self) -> String {
        // Frames hold only strings, numbers, bools and `Value`s: serialization cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// `{type:"req", id, method, params?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestFrame {
    pub id: String,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// `{type:"res", id, ok, payload?, error?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFrame {
    pub id: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorShape>,
}

impl ResponseFrame {
    /// An interim `ok:true` response with `payload.status == "accepted"`: for expect-final
    /// methods the real answer follows under the same id.
    pub fn is_interim_accepted(&self) -> bool {
        self.ok && self.payload.as_ref().and_then(|p| p.get("status")).and_then(Value::as_str) == Some("accepted")
    }
}

/// `{type:"event", event, payload?, seq?, stateVersion?}`. `seq` counts per connection from 1 for
/// broadcasts; targeted and pre-auth events may omit it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventFrame {
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_version: Option<Value>,
}

/// The gateway's error object. Branch on [`code`](Self::code) and [`detail_code`](Self::detail_code)
/// (for example `INVALID_REQUEST` + `AUTH_TOKEN_MISMATCH`); `message` is for humans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorShape {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ErrorShape {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorShape { code: code.into(), message: message.into(), details: None, retryable: None, retry_after_ms: None }
    }

    /// `details.code`, the machine-readable reason (`AUTH_TOKEN_MISMATCH`, `PAIRING_REQUIRED`, ...).
    pub fn detail_code(&self) -> Option<&str> {
        self.details.as_ref()?.get("code")?.as_str()
    }
}

impl fmt::Display for ErrorShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.detail_code() {
            Some(detail) => write!(f, "{} [{}/{}]", self.message, self.code, detail),
            None => write!(f, "{} [{}]", self.message, self.code),
        }
    }
}

/// The connection's role. Operators call methods and receive events; nodes host commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Operator,
    Node,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::Node => "node",
        }
    }
}

/// `connect.params.client`. `id` and `mode` are closed enums on the gateway
/// (`GATEWAY_CLIENT_IDS`, modes `webchat|cli|ui|backend|node|worker|probe|test`); anything else
/// is refused with "invalid connect params".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub id: String,
    pub mode: String,
    pub version: String,
    pub platform: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_identifier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
}

impl ClientInfo {
    /// `{id:"cli", mode:"cli"}`: the only device-less operator identity whose requested scopes the
    /// gateway keeps on loopback (any other id gets `scopes:[]`; `docs/gateway-protocol.md` §4.1).
    pub fn cli() -> Self {
        Self::with_identity("cli", "cli")
    }

    /// `{id:"node-host", mode:"node"}`: the node host identity, which makes the gateway send
    /// `node.invoke.cancel`.
    pub fn node_host() -> Self {
        Self::with_identity("node-host", "node")
    }

    fn with_identity(id: &str, mode: &str) -> Self {
        let (platform, family) = host_platform();
        ClientInfo {
            id: id.to_owned(),
            mode: mode.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            platform: platform.to_owned(),
            display_name: Some("clawmcp".to_owned()),
            device_family: Some(family.to_owned()),
            model_identifier: None,
            instance_id: None,
        }
    }
}

/// `(client.platform, client.deviceFamily)` the way OpenClaw reports this OS
/// (`src/shared/gateway-client-platform.ts`): the gateway's platform defaults need both.
pub fn host_platform() -> (&'static str, &'static str) {
    match std::env::consts::OS {
        "macos" => ("macos", "Mac"),
        "windows" => ("windows", "Windows"),
        "linux" => ("linux", "Linux"),
        other => (other, other),
    }
}

/// `connect.params.device`: the signed proof of the device key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceProof {
    pub id: String,
    pub public_key: String,
    pub signature: String,
    pub signed_at: u64,
    pub nonce: String,
}

/// `connect.params.auth`. Each secret is omitted when absent.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectAuth {
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "expose_secret")]
    pub token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "expose_secret")]
    pub bootstrap_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "expose_secret")]
    pub device_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "expose_secret")]
    pub password: Option<Secret>,
}

impl ConnectAuth {
    pub fn is_empty(&self) -> bool {
        self.token.is_none() && self.bootstrap_token.is_none() && self.device_token.is_none() && self.password.is_none()
    }

    /// The secret the device signature covers: `token ?? deviceToken ?? bootstrapToken ?? ""`
    /// (the gateway's `resolveSignatureToken`). A password is never signed.
    pub fn signature_token(&self) -> &str {
        self.token.as_ref().or(self.device_token.as_ref()).or(self.bootstrap_token.as_ref()).map_or("", Secret::expose)
    }
}

fn expose_secret<S: Serializer>(secret: &Option<Secret>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => serializer.serialize_str(secret.expose()),
        None => serializer.serialize_none(),
    }
}

/// `connect` parameters (ConnectParamsSchema). `scopes` is always sent (nodes send `[]`) and
/// must be the exact array the device signature covers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectParams {
    pub min_protocol: u32,
    pub max_protocol: u32,
    pub client: ClientInfo,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caps: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_env: Option<String>,
    pub role: Role,
    pub scopes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceProof>,
    #[serde(skip_serializing_if = "ConnectAuth::is_empty")]
    pub auth: ConnectAuth,
}

/// The `connect.challenge` event payload: echo `nonce`, sign with `signedAt = ts`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ConnectChallenge {
    pub nonce: String,
    pub ts: u64,
}

/// The `hello-ok` payload, parsed leniently. `raw` keeps everything (snapshot included).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloOk {
    pub protocol: u32,
    #[serde(default)]
    pub server: ServerInfo,
    #[serde(default)]
    pub features: Features,
    #[serde(default)]
    pub auth: HelloAuth,
    #[serde(default)]
    pub policy: Policy,
    #[serde(skip)]
    pub raw: Value,
}

impl HelloOk {
    /// Parses a `connect` response payload; anything but `type:"hello-ok"` with a numeric
    /// `protocol` is an error naming what was wrong.
    pub fn parse(payload: Value) -> Result<HelloOk, String> {
        match payload.get("type").and_then(Value::as_str) {
            Some("hello-ok") => {}
            Some(other) => return Err(format!("expected type \"hello-ok\", got {other:?}")),
            None => return Err("the connect response payload has no \"type\"".to_owned()),
        }
        let mut hello: HelloOk = serde_json::from_value(payload.clone()).map_err(|e| e.to_string())?;
        hello.raw = payload;
        Ok(hello)
    }

    /// Whether `features.methods` advertises `method`. The list is conservative: some real
    /// methods (`sessions.get`, `chat.inject`) are not advertised.
    pub fn advertises_method(&self, method: &str) -> bool {
        self.features.methods.iter().any(|m| m == method)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub conn_id: Option<String>,
    #[serde(default)]
    pub boot_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Features {
    #[serde(default)]
    pub methods: Vec<String>,
    #[serde(default)]
    pub events: Vec<String>,
    #[serde(default)]
    pub capabilities: Vec<String>,
}

/// `hello-ok.auth`: `scopes` is the live, enforced scope set of this socket (device-less clients
/// other than `cli`/`cli` get `[]`, so check it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloAuth {
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub device_token: Option<Secret>,
    #[serde(default)]
    pub issued_at_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// The largest frame the gateway accepts from us; larger sends are refused locally.
    #[serde(default = "default_max_payload")]
    pub max_payload: usize,
    #[serde(default)]
    pub max_buffered_bytes: Option<u64>,
    /// The gateway ticks this often; silence for twice as long means the link is dead.
    #[serde(default = "default_tick_interval_ms")]
    pub tick_interval_ms: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_payload: DEFAULT_MAX_PAYLOAD,
            max_buffered_bytes: None,
            tick_interval_ms: DEFAULT_TICK_INTERVAL_MS,
        }
    }
}

fn default_max_payload() -> usize {
    DEFAULT_MAX_PAYLOAD
}

fn default_tick_interval_ms() -> u64 {
    DEFAULT_TICK_INTERVAL_MS
}

/// A fresh request id: 32 lowercase hex characters (128 random bits). The fixed width keeps
/// frame sizes predictable; uniqueness only matters per connection, so if the OS RNG were ever
/// unavailable a process-wide counter takes over instead of failing the request.
pub fn random_id() -> String {
    static FALLBACK: AtomicU64 = AtomicU64::new(1);
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        bytes[8..].copy_from_slice(&FALLBACK.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn request_frame_omits_absent_params() {
        let frame = Frame::Req(RequestFrame { id: "1".into(), method: "health".into(), params: None });
        assert_eq!(frame.to_text(), r#"{"type":"req","id":"1","method":"health"}"#);
        let frame = Frame::Req(RequestFrame { id: "2".into(), method: "x".into(), params: Some(json!({})) });
        assert_eq!(frame.to_text(), r#"{"type":"req","id":"2","method":"x","params":{}}"#);
    }

    /// Found by the fuzz target `gateway_frame`: without serde_json's `float_roundtrip` the
    /// number below parsed one unit in the last place off, so a relayed payload changed.
    #[test]
    fn floats_in_payloads_survive_a_round_trip_exactly() {
        let text = r#"{"type":"res","id":"a","ok":true,"payload":{"n":2.6233333733333335e+41,"m":0.1}}"#;
        let frame = Frame::parse(text).unwrap();
        assert_eq!(Frame::parse(&frame.to_text()).unwrap(), frame);
        assert_eq!(frame.to_text(), text);
    }

    #[test]
    fn parses_res_and_event_frames() {
        let res = Frame::parse(r#"{"type":"res","id":"a","ok":false,"error":{"code":"FORBIDDEN","message":"missing scope: operator.read","details":{"code":"MISSING_SCOPE"}}}"#).unwrap();
        let Frame::Res(res) = res else { panic!("not a res") };
        let error = res.error.unwrap();
        assert_eq!(error.detail_code(), Some("MISSING_SCOPE"));
        assert_eq!(error.to_string(), "missing scope: operator.read [FORBIDDEN/MISSING_SCOPE]");

        let event = Frame::parse(r#"{"type":"event","event":"tick","payload":{"ts":1},"seq":7,"extra":1}"#).unwrap();
        assert_eq!(
            event,
            Frame::Event(EventFrame {
                event: "tick".into(),
                payload: Some(json!({"ts":1})),
                seq: Some(7),
                state_version: None
            })
        );
        assert!(Frame::parse(r#"{"type":"weird"}"#).is_err());
        assert!(Frame::parse(r#"{"type":"res","id":"a"}"#).is_err());
    }

    #[test]
    fn interim_accepted_is_recognised() {
        let interim =
            ResponseFrame { id: "a".into(), ok: true, payload: Some(json!({"status":"accepted"})), error: None };
        assert!(interim.is_interim_accepted());
        let done = ResponseFrame { id: "a".into(), ok: true, payload: Some(json!({"status":"ok"})), error: None };
        assert!(!done.is_interim_accepted());
    }

    #[test]
    fn connect_params_never_serialize_null() {
        let params = ConnectParams {
            min_protocol: 4,
            max_protocol: 4,
            client: ClientInfo {
                id: "cli".into(),
                mode: "cli".into(),
                version: "1".into(),
                platform: "linux".into(),
                display_name: None,
                device_family: None,
                model_identifier: None,
                instance_id: None,
            },
            caps: vec![],
            commands: None,
            path_env: None,
            role: Role::Operator,
            scopes: vec!["operator.read".into()],
            device: None,
            auth: ConnectAuth { token: Some(Secret::new("t")), ..ConnectAuth::default() },
        };
        let value = serde_json::to_value(&params).unwrap();
        assert_eq!(
            value,
            json!({"minProtocol":4,"maxProtocol":4,
                   "client":{"id":"cli","mode":"cli","version":"1","platform":"linux"},
                   "role":"operator","scopes":["operator.read"],"auth":{"token":"t"}})
        );
        let no_auth = ConnectParams { auth: ConnectAuth::default(), ..params };
        assert!(serde_json::to_value(&no_auth).unwrap().get("auth").is_none());
    }

    #[test]
    fn signature_token_prefers_shared_token_then_device_then_bootstrap() {
        let mut auth = ConnectAuth { bootstrap_token: Some("b".into()), ..ConnectAuth::default() };
        assert_eq!(auth.signature_token(), "b");
        auth.device_token = Some("d".into());
        assert_eq!(auth.signature_token(), "d");
        auth.token = Some("t".into());
        assert_eq!(auth.signature_token(), "t");
        let password_only = ConnectAuth { password: Some("p".into()), ..ConnectAuth::default() };
        assert_eq!(password_only.signature_token(), "");
    }

    #[test]
    fn hello_ok_parses_with_defaults() {
        let hello =
            HelloOk::parse(json!({"type":"hello-ok","protocol":4,"server":{"version":"2026.9.6","connId":"c1"},
            "features":{"methods":["sessions.list"],"events":["tick"]},
            "auth":{"method":"token","role":"operator","scopes":["operator.read"],"deviceToken":"dt"},
            "policy":{"maxPayload":1024,"tickIntervalMs":1000}}))
            .unwrap();
        assert_eq!(hello.server.version, "2026.9.6");
        assert!(hello.advertises_method("sessions.list"));
        assert!(!hello.advertises_method("chat.inject"));
        assert_eq!(hello.policy.max_payload, 1024);
        assert_eq!(hello.policy.tick_interval_ms, 1000);
        assert_eq!(hello.auth.device_token.as_ref().map(Secret::expose), Some("dt"));

        let minimal = HelloOk::parse(json!({"type":"hello-ok","protocol":4})).unwrap();
        assert_eq!(minimal.policy, Policy::default());
        assert!(HelloOk::parse(json!({"type":"hello","protocol":4})).unwrap_err().contains("hello-ok"));
        assert!(HelloOk::parse(json!({"type":"hello-ok"})).is_err());
    }

    #[test]
    fn random_ids_are_fixed_width_hex_and_distinct() {
        let a = random_id();
        let b = random_id();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
