//! `screen.snapshot`: one monitor's pixels as an image a model can read, and `screen.record`: a
//! clip of one monitor as an mp4 (category `screen`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`x11`] | the capture: RandR monitors, core `GetImage`, the XFixes cursor drawn on top |
//! | [`portal`] | Wayland: the desktop portal's Screenshot, bounded in time, its file read bounded and removed |
//! | [`record`] | `screen.record`: ffmpeg (x11grab, or the cast's frames) into a private temp dir, size and time bounds, stopping |
//! | [`cast`] | Wayland recording: the portal's ScreenCast session and gst-launch reading its PipeWire stream |
//! | this file | `screen.snapshot`'s arguments (upstream's names, defaults and clamps), scaling, PNG/JPEG encoding, the answer |
//!
//! Over MCP the answer is an `image` content block plus the metadata as JSON text (never base64
//! in text); the gateway gets upstream's payload `{format, width, height, base64, screenIndex,
//! capturedAtMs}`. Unless the caller names `maxWidth`, the image is scaled to at most
//! [`DEFAULT_MAX_PIXELS`] (about 1.15 megapixels, what vision models read without tiling) and
//! further if its encoding would pass [`imaging::DEFAULT_MAX_BYTES`] (1 MB: a photo-like screen in
//! PNG), and the result says the scale so a client can map coordinates back to the screen.
//!
//! The "Screen" switch (`NodeScreenEnabled`, off by default) is read live: off, the command is not
//! listed and a call says how to turn it on. A node with neither an X display nor the desktop portal
//! on its session bus does not list it either.
//! `screen.record` also needs ffmpeg on the node's PATH. Every capture and recording is logged
//! with its size.
//!
//! Which desktop: X11 when `DISPLAY` is set (also under Xwayland, where both are set: X11 needs
//! no portal round trip and knows the monitors), else Wayland through the desktop portal when
//! `WAYLAND_DISPLAY` is set and the portal is on the session bus. On Wayland screenIndex 0 is the
//! whole desktop (the portal's shot covers every output and nobody says where the monitors are),
//! and the pointer is not drawn (the metadata says so). Recording on Wayland goes through the
//! portal's ScreenCast and PipeWire ([`cast`]), screenIndex 0 being the monitor the portal casts.

mod cast;
mod portal;
mod record;
mod x11;

pub use portal::DEFAULT_TIMEOUT as PORTAL_TIMEOUT;
pub use record::{RecordOptions, SizeBound};

use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::{Content, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use crate::availability::{Gate, MissingBackend, Switch};
use crate::capability::{Capability, Command, CommandSpec};
use crate::imaging::{self, Layout, Pixels};
use crate::settings::LiveSettings;

/// What `screen.snapshot` returns at most when the caller names no `maxWidth`, and upstream's
/// `maxWidth` clamps (shared with every command that returns an image).
pub use crate::imaging::{DEFAULT_MAX_PIXELS, MAX_WIDTH, MIN_WIDTH};
/// Upstream's clamp.
pub const MAX_SCREEN_INDEX: u64 = 32;
const DEFAULT_QUALITY: u8 = 80;

/// The `screen` capability.
pub struct ScreenCapability {
    commands: Vec<Command>,
}

/// Which desktop `screen.snapshot` captures.
#[derive(Debug, Clone)]
enum Desktop {
    /// The session the node runs in: `DISPLAY`, else `WAYLAND_DISPLAY` and the portal.
    Env,
    /// An X display (`:99`).
    X11(String),
    /// The desktop portal on this bus, whatever the environment says.
    Portal(portal::Bus),
}

/// The backend one call uses.
enum Session {
    /// The display, `None` for the one `DISPLAY` names.
    X11(Option<String>),
    Portal(portal::Bus),
}

impl Desktop {
    fn session(&self) -> Result<Session, MissingBackend> {
        match self {
            Desktop::X11(display) => Ok(Session::X11(Some(display.clone()))),
            Desktop::Portal(bus) => Ok(Session::Portal(bus.clone())),
            Desktop::Env => Desktop::session_of(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty())),
        }
    }

    /// The node's own session, `set` saying which variables are set: X11 wins when both are
    /// (Xwayland), Wayland without `DISPLAY`.
    fn session_of(set: impl Fn(&str) -> bool) -> Result<Session, MissingBackend> {
        match (set("DISPLAY"), set("WAYLAND_DISPLAY")) {
            (true, _) => Ok(Session::X11(None)),
            (false, true) => Ok(Session::Portal(portal::Bus::Env)),
            (false, false) => Err(MissingBackend::no_display()),
        }
    }
}

impl ScreenCapability {
    /// Captures the session the node runs in (`DISPLAY`, else Wayland through the portal).
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        ScreenCapability::for_display(settings, None)
    }

    /// Captures `display` (`:99`), or the node's own session when `None`.
    pub fn for_display(settings: Arc<LiveSettings>, display: Option<String>) -> Self {
        ScreenCapability::with_recording(settings, display, RecordOptions::default())
    }

    /// [`ScreenCapability::for_display`], recording with `recording`'s bounds and places.
    pub fn with_recording(settings: Arc<LiveSettings>, display: Option<String>, recording: RecordOptions) -> Self {
        let desktop = display.map_or(Desktop::Env, Desktop::X11);
        let record = record::command(settings.clone(), desktop.clone(), portal::DEFAULT_TIMEOUT, recording);
        ScreenCapability::build(settings, desktop, portal::DEFAULT_TIMEOUT, record)
    }

    /// Snapshots and records through the desktop portal on the session bus at `bus` (a D-Bus
    /// address), each shot and each cast's start bounded by `timeout`.
    pub fn for_portal(settings: Arc<LiveSettings>, bus: String, timeout: Duration) -> Self {
        ScreenCapability::for_portal_recording(settings, bus, timeout, RecordOptions::default())
    }

    /// [`ScreenCapability::for_portal`], recording with `recording`'s bounds and places.
    pub fn for_portal_recording(
        settings: Arc<LiveSettings>,
        bus: String,
        timeout: Duration,
        recording: RecordOptions,
    ) -> Self {
        let desktop = Desktop::Portal(portal::Bus::At(bus));
        let record = record::command(settings.clone(), desktop.clone(), timeout, recording);
        ScreenCapability::build(settings, desktop, timeout, record)
    }

    fn build(settings: Arc<LiveSettings>, desktop: Desktop, timeout: Duration, record: Command) -> Self {
        let gate = {
            let desktop = desktop.clone();
            let probe = portal::Probe::new(match &desktop {
                Desktop::Portal(bus) => bus.clone(),
                _ => portal::Bus::Env,
            });
            Gate::new(settings, Some(&Switch::SCREEN), move || match desktop.session()? {
                Session::X11(_) => Ok(()),
                Session::Portal(_) => probe.check(),
            })
        };
        let snapshot = command_spec().with_output_handler({
            let gate = gate.clone();
            move |request, ctx| {
                let (gate, desktop) = (gate.clone(), desktop.clone());
                async move {
                    gate.admit("screen.snapshot")?;
                    let args = SnapshotArgs::parse(&request.args)?;
                    let session = desktop.session().map_err(|missing| ToolFailure::new(missing.to_string()))?;
                    let work = match session {
                        Session::X11(display) => {
                            tokio::task::spawn_blocking(move || snapshot(display.as_deref(), &args))
                        }
                        Session::Portal(bus) => {
                            let shot = portal_shot(&bus, &args, timeout, &ctx.cancel).await?;
                            tokio::task::spawn_blocking(move || portal_answer(shot, &args))
                        }
                    };
                    tokio::select! {
                        // The capture takes milliseconds; a cancelled caller just stops waiting.
                        () = ctx.cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.into()),
                        done = work => done.map_err(|e| ToolFailure::new(format!("Capture failed: {e}")))?,
                    }
                }
            }
        });
        ScreenCapability { commands: vec![gate.apply(snapshot), record] }
    }
}

impl Capability for ScreenCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "screen.snapshot",
        title: Some("Screenshot"),
        output_schema: None,
        description: Some(
            "Capture one monitor of this machine's screen (X11; on Wayland the whole desktop through the \
             desktop portal) as an image. format png (default) or jpeg; \
             maxWidth scales the image down to that width (16..7680; without it the image is kept under about \
             1.15 megapixels and 1 MB); quality 1..100 for jpeg (default 80); screenIndex (alias monitor) picks the \
             monitor, 0 = primary (on Wayland 0 = the whole desktop, the only one); includePointer (default true) \
             draws the mouse pointer (X11 only). Returns the image and \
             {format, width, height, screenIndex, capturedWidth, capturedHeight, scale, monitors}: divide image \
             coordinates by scale to get screen coordinates.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "format": {"type": "string", "enum": ["png", "jpeg", "jpg"], "default": "png"},
                    "maxWidth": {"type": "integer", "minimum": MIN_WIDTH, "maximum": MAX_WIDTH},
                    "quality": {"type": "number", "minimum": 0, "maximum": 100, "default": DEFAULT_QUALITY, "description": "JPEG quality 1..100, or a fraction 0..1 (0.72 is 72)."},
                    "screenIndex": {"type": "integer", "minimum": 0, "maximum": MAX_SCREEN_INDEX, "default": 0},
                    "monitor": {"type": "integer", "minimum": 0, "maximum": MAX_SCREEN_INDEX, "description": "Alias of screenIndex."},
                    "includePointer": {"type": "boolean", "default": true}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Png,
    Jpeg,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpeg",
        }
    }

    fn mime_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
        }
    }
}

/// The arguments, with upstream's defaults and clamps applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SnapshotArgs {
    format: Format,
    max_width: Option<u32>,
    quality: u8,
    screen_index: usize,
    include_pointer: bool,
}

impl SnapshotArgs {
    fn parse(args: &Map<String, Value>) -> Result<SnapshotArgs, ToolFailure> {
        let format = match format_name(args) {
            None => Format::Png,
            Some(text) if text.is_empty() || text == "png" => Format::Png,
            Some(text) if text == "jpeg" || text == "jpg" => Format::Jpeg,
            Some(_) => {
                return Err(ToolFailure::invalid_request(
                    "Unsupported screen snapshot format. Supported formats: png, jpeg.",
                ));
            }
        };
        let integer = |key: &str| whole_number(args, key);
        let max_width =
            integer("maxWidth")?.map(|width| width.clamp(i64::from(MIN_WIDTH), i64::from(MAX_WIDTH)) as u32);
        let quality = crate::capability::args::quality(args, DEFAULT_QUALITY)?;
        let index = match integer("screenIndex")? {
            Some(index) => Some(index),
            None => integer("monitor")?,
        };
        let screen_index = index.unwrap_or(0).clamp(0, MAX_SCREEN_INDEX as i64) as usize;
        let include_pointer = match args.get("includePointer") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(on)) => *on,
            Some(_) => return Err(ToolFailure::invalid_request("includePointer must be true or false")),
        };
        Ok(SnapshotArgs { format, max_width, quality, screen_index, include_pointer })
    }
}

/// `format`, trimmed and lower-cased, when given as a string.
fn format_name(args: &Map<String, Value>) -> Option<String> {
    args.get("format").and_then(Value::as_str).map(str::trim).map(str::to_ascii_lowercase)
}

use crate::capability::args::whole_number;

fn snapshot(display: Option<&str>, args: &SnapshotArgs) -> ToolOutcome {
    let started = std::time::Instant::now();
    let captured = x11::capture(display, args.screen_index, args.include_pointer).map_err(ToolFailure::new)?;
    let capture_time = started.elapsed();
    let full = Pixels { data: captured.rgb, width: captured.width, height: captured.height, layout: Layout::Rgb };
    let monitors: Vec<Value> = captured
        .monitors
        .iter()
        .enumerate()
        .map(|(index, m)| {
            json!({
                "index": index, "name": m.name, "x": m.x, "y": m.y, "width": m.width, "height": m.height,
                "widthMm": m.width_mm, "heightMm": m.height_mm, "primary": m.primary,
                "scaleFactor": captured.scale_factor,
            })
        })
        .collect();
    let backend = Capture { index: captured.index, monitors, time: capture_time, extra: Map::new() };
    tracing::debug!(shm = captured.shared_memory, "X11 capture");
    let outcome = answer(&full, backend, args);
    x11::recycle(full.data);
    outcome
}

/// The portal's shot of the whole desktop, after checking the arguments it can serve.
async fn portal_shot(
    bus: &portal::Bus,
    args: &SnapshotArgs,
    timeout: Duration,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<portal::Shot, ToolFailure> {
    if args.screen_index != 0 {
        return Err(ToolFailure::invalid_request(format!(
            "screenIndex {} does not exist: on Wayland the desktop portal captures the whole desktop, which is \
             screenIndex 0 (the portal does not say where the monitors are); use screenIndex 0",
            args.screen_index
        )));
    }
    let address =
        bus.address().map_err(|missing| ToolFailure::new(format!("Screen capture not available: {missing}")))?;
    portal::capture(&address, timeout, cancel).await.map_err(|error| match error == clawmcp_mcp::CANCELLED {
        true => clawmcp_mcp::CANCELLED.into(),
        false => ToolFailure::new(format!("Capture failed: {error}")),
    })
}

fn portal_answer(shot: portal::Shot, args: &SnapshotArgs) -> ToolOutcome {
    let full = imaging::opaque(shot.pixels);
    let (width, height) = (full.width, full.height);
    let monitors = vec![json!({"index": 0, "name": "desktop", "x": 0, "y": 0, "width": width, "height": height})];
    let mut extra = Map::new();
    extra.insert("backend".into(), json!("portal"));
    extra.insert("pointer".into(), json!("not available on Wayland"));
    extra.insert("portalFile".into(), json!({"path": shot.file, "removed": shot.removed}));
    answer(&full, Capture { index: 0, monitors, time: shot.took, extra }, args)
}

/// What a backend tells the answer besides the pixels.
struct Capture {
    index: usize,
    monitors: Vec<Value>,
    time: Duration,
    /// Backend-specific metadata.
    extra: Map<String, Value>,
}

/// The shared tail: scaling, encoding, the metadata and the gateway payload.
fn answer(full: &Pixels, capture: Capture, args: &SnapshotArgs) -> ToolOutcome {
    let started = std::time::Instant::now();
    let (captured_width, captured_height) = (full.width, full.height);
    let (width, height, bytes) = imaging::fit_encoded(full, args.max_width, |pixels| match args.format {
        Format::Png => imaging::encode_png(pixels),
        Format::Jpeg => imaging::encode_jpeg(pixels, args.quality),
    })
    .map_err(|error| ToolFailure::new(format!("Capture failed: {error}")))?;
    let encode_time = started.elapsed();
    let captured_at_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    tracing::info!(
        screen = capture.index,
        width,
        height,
        bytes = bytes.len(),
        format = args.format.name(),
        capture_ms = capture.time.as_secs_f64() * 1e3,
        encode_ms = encode_time.as_secs_f64() * 1e3,
        "screen captured"
    );
    let base64 = STANDARD.encode(&bytes);
    let scale = f64::from(width) / f64::from(captured_width);
    let mut meta = json!({
        "format": args.format.name(),
        "width": width,
        "height": height,
        "bytes": bytes.len(),
        "screenIndex": capture.index,
        "capturedWidth": captured_width,
        "capturedHeight": captured_height,
        "scale": (scale * 1e6).round() / 1e6,
        "monitors": capture.monitors,
        "capturedAtMs": captured_at_ms,
    });
    if let Value::Object(meta) = &mut meta {
        meta.extend(capture.extra);
    }
    let gateway = json!({
        "format": args.format.name(),
        "width": width,
        "height": height,
        "base64": base64,
        "screenIndex": capture.index,
        "capturedAtMs": captured_at_ms,
    });
    Ok(ToolOutput::from(meta)
        .with_block(Content::Image { data: base64, mime_type: args.format.mime_type().into() })
        .with_gateway_payload(gateway))
}

#[cfg(test)]
mod tests;
