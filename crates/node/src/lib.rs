//! The node host: native capabilities behind one trait, served by every transport.
//!
//! # Layout
//!
//! - [`capability`]: the [`Capability`] trait, invocation types, lenient argument readers.
//! - [`availability`]: the owner's switches and backend probes that decide what is served now.
//! - [`registry`]: the live capability list and its MCP service ([`NodeMcpService`]).
//! - [`settings`]: the data directory and `settings.json` (mode matrix, kill switches), read live.
//! - [`system`]: `system.*` (which, notify, run, run.prepare, execApprovals.get/set).
//! - [`approvals`]: the V2 exec-approval policy, its store and the headless prompt queue.
//! - [`device`]: `device.info`, `device.status`.
//! - [`screen`]: `screen.snapshot` and `screen.record` (X11; recording through ffmpeg).
//! - [`camera`]: `camera.list`, `camera.snap`, `camera.clip` (V4L2 through ffmpeg).
//! - [`clipboard`]: `clipboard.read`, `clipboard.write` (X11 selections).
//! - [`canvas`]: `canvas.present/hide/navigate/eval/snapshot/caps` (Chromium over the DevTools protocol).
//! - [`events`]: node events a capability sends the gateway outside a call (A2UI actions), through the link.
//! - [`stt`]: `stt.transcribe`, `stt.listen`, `stt.status` (Whisper through CTranslate2, feature `whisper`; models from
//!   `clawmcp models install`).
//! - [`files`]: `file.stat`, `file.fetch`, `file.create`, `file.write`, `dir.list`, `dir.fetch`, `fs.listDir`
//!   (the real node host's file commands, inside the owner's `NodeFileRoots`) and the file channel
//!   (`openclaw/file-channel`) that binary `file.fetch` and `file.create` stream over.

pub mod approvals;
pub mod audio;
pub mod availability;
pub mod camera;
pub mod canvas;
pub mod capability;
pub mod clipboard;
mod command_text;
mod dbus;
pub mod device;
pub mod events;
pub mod files;
mod imaging;
pub mod location;
mod mp4;
pub mod registry;
pub mod screen;
pub mod settings;
pub mod stt;
pub mod system;
#[cfg(test)]
mod test_support;
pub mod tts;

pub use capability::{Caller, Capability, CapabilityError, CommandSpec, InvokeRequest, InvokeResult};
pub use registry::{LocalMethods, NodeMcpService, Registry};
