//! The OpenClaw gateway client shared by `clawmcp serve`, `clawmcp tools` and node mode.
//!
//! # Layout
//!
//! - [`frames`]: protocol v4 wire shapes (`req`/`res`/`event`, `connect` params, `hello-ok`).
//!   Closed objects: absent optional fields are omitted, never `null`.
//! - [`identity`]: the Ed25519 device identity kept in a 0600 file and the v3/v2 signature payload.
//! - [`config`]: where the gateway is and which secret opens it, resolved the way OpenClaw does
//!   (flags, `OPENCLAW_*` env, `openclaw.json`), with the environment injectable for tests.
//! - [`client`]: [`GatewayClient`], one logical connection: request correlation, the event
//!   stream, the tick watchdog, payload limits and reconnection with backoff.
//! - `handshake` (private): upgrade, `connect.challenge`, `connect`, `hello-ok` for one socket.
//! - [`device_token`]: the device token a gateway issues, kept so a rotated shared token does
//!   not cost a re-pairing.
//! - [`backoff`]: the reconnect delay schedule (exponential with jitter).
//! - [`events`]: what subscribers receive, including the disconnect/reconnect markers.
//! - [`http`]: `POST /tools/invoke` with one wall-clock deadline.
//! - [`secret`]: a string that never shows up in `Debug` output or logs.
//! - [`setup_code`]: OpenClaw's one-paste pairing code (`oc-pair://...`).
//! - [`tls_pin`]: pinning a `wss://` gateway's certificate by its SHA-256 fingerprint.
//! - [`error`]: every failure a caller can see, each naming what was attempted.
//!
//! Data flows one way: [`config`] resolves a target, [`client`] or [`http`] talks to it, and the
//! surfaces above (channels, tools, node) interpret the payloads. Nothing here knows MCP.

pub mod backoff;
pub mod client;
pub mod config;
pub mod device_token;
pub mod error;
pub mod events;
pub mod frames;
mod handshake;
pub mod http;
pub mod identity;
pub mod secret;
pub mod setup_code;
pub mod tls_pin;

pub use backoff::BackoffPolicy;
pub use client::{ClientOptions, GatewayClient, LinkStatus, RequestOptions, StatusWatch, UpgradeHeader};
pub use config::{ConnectOverrides, Credentials, Env, GatewayTarget, LoadedConfig, UrlSource};
pub use device_token::DeviceTokenStore;
pub use error::{ConfigError, GatewayError, IdentityError, InvokeError};
pub use events::{EventSubscription, GatewayEvent};
pub use frames::{ClientInfo, ErrorShape, EventFrame, HelloOk, PROTOCOL_VERSION, Role};
pub use http::{
    InvokeBody, ToolOutcome, ToolsInvokeClient, ToolsInvokeOptions, ToolsInvokeRequest, ToolsInvokeResponse,
};
pub use identity::{DeviceAuthPayload, DeviceIdentity};
pub use secret::Secret;
pub use setup_code::SetupCode;
pub use tls_pin::TlsFingerprint;
