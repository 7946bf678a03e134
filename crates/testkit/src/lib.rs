//! Test helpers shared by clawmcp's crates; never linked into the binary (`publish = false`,
//! dev-dependency only).
//!
//! The centrepiece is [`FakeGateway`]: an in-process OpenClaw gateway on `127.0.0.1:0` that
//! speaks the real protocol v4 frames and the real `POST /tools/invoke` shapes, both on one
//! port like the real gateway, with scripted handlers and fault injection. It is written from
//! the protocol as documented (`docs/gateway-protocol.md`, `docs/tools-bridge.md` §6) and as a
//! real 2026.9.6 gateway answers, independently of `clawmcp-gateway`, so a bug in the client's
//! wire types cannot hide behind the same bug in the fake.
//!
//! # Layout
//!
//! - [`gateway`]: [`FakeGateway`], its listener, recordings and the knobs tests turn.
//! - [`config`]: [`FakeConfig`], what the fake is when it starts (auth, ticks, limits).
//! - [`reply`]: scripted answers ([`Reply`] for WebSocket methods, [`ToolReply`] for HTTP).
//! - [`handshake`]: `connect` validation (closed objects, protocol range, device signature,
//!   shared secret) with the gateway's real error codes and messages.
//! - [`connection`]: one WebSocket after the upgrade: challenge, handshake, request dispatch,
//!   events with per-connection `seq`, ticks, and the fault controls.
//! - [`tools_http`]: the `/tools/invoke` endpoint.
//!
//! Dropping the [`FakeGateway`] stops everything it started.

pub mod config;
pub mod connection;
pub mod gateway;
pub mod handshake;
pub mod reply;
pub mod tools_http;

pub use config::{FakeAuth, FakeConfig};
pub use gateway::{FakeGateway, Received, ToolCall};
pub use reply::{Gate, Reply, ToolReply, gateway_error};
