//! `screen.snapshot`: one monitor's pixels as an image a model can read, and `screen.record`: a
//! clip of one monitor as an mp4 (category `screen`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`x11`] | the capture: RandR monitors, core `GetImage`, the XFixes cursor drawn on top |
//! | [`record`] | `screen.record`: ffmpeg x11grab into a private temp dir, size and time bounds, stopping |
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
//! listed and a call says how to turn it on. A node without an X display does not list it either.
//! `screen.record` also needs ffmpeg on the node's PATH. Every capture and recording is logged
//! with its size. Wayland (the desktop portal) is not served yet.

mod record;
mod x11;

pub use record::{RecordOptions, SizeBound};

/// What a Wayland session without Xwayland lacks for screen capture.
const WAYLAND_GAP: &str = "screen capture through the desktop portal is not supported yet";

use std::sync::{Arc, LazyLock};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::codes::INVALID_REQUEST;
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

impl ScreenCapability {
    /// Captures the display `DISPLAY` names.
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        ScreenCapability::for_display(settings, None)
    }

    /// Captures `display` (`:99`), or the one `DISPLAY` names when `None`.
    pub fn for_display(settings: Arc<LiveSettings>, display: Option<String>) -> Self {
        ScreenCapability::with_recording(settings, display, RecordOptions::default())
    }

    /// [`ScreenCapability::for_display`], recording with `recording`'s bounds and places.
    pub fn with_recording(settings: Arc<LiveSettings>, display: Option<String>, recording: RecordOptions) -> Self {
        let record = record::command(settings.clone(), display.clone(), recording);
        let gate = {
            let display = display.clone();
            Gate::new(settings, Some(&Switch::SCREEN), move || {
                MissingBackend::x11_display(display.as_deref(), WAYLAND_GAP)
            })
        };
        let snapshot = command_spec().with_output_handler({
            let gate = gate.clone();
            move |request, ctx| {
                let (gate, display) = (gate.clone(), display.clone());
                async move {
                    gate.admit("screen.snapshot")?;
                    let args = SnapshotArgs::parse(&request.args)?;
                    let work = tokio::task::spawn_blocking(move || snapshot(display.as_deref(), &args));
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
            "Capture one monitor of this machine's screen (X11) as an image. format png (default) or jpeg; \
             maxWidth scales the image down to that width (16..7680; without it the image is kept under about \
             1.15 megapixels and 1 MB); quality 1..100 for jpeg (default 80); screenIndex (alias monitor) picks the \
             monitor, 0 = primary; includePointer (default true) draws the mouse pointer. Returns the image and \
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
            Some(_) => return Err(invalid("Unsupported screen snapshot format. Supported formats: png, jpeg.")),
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
            Some(_) => return Err(invalid("includePointer must be true or false")),
        };
        Ok(SnapshotArgs { format, max_width, quality, screen_index, include_pointer })
    }
}

/// An argument error (code `INVALID_REQUEST`).
fn invalid(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(message).with_code(INVALID_REQUEST)
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
    let (width, height, bytes) = imaging::fit_encoded(full, args.max_width, |pixels| match args.format {
        Format::Png => imaging::encode_png(pixels),
        Format::Jpeg => imaging::encode_jpeg(pixels, args.quality),
    })
    .map_err(|error| ToolFailure::new(format!("Capture failed: {error}")))?;
    let encode_time = started.elapsed() - capture_time;
    let captured_at_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    tracing::info!(
        screen = args.screen_index,
        width,
        height,
        bytes = bytes.len(),
        format = args.format.name(),
        shm = captured.shared_memory,
        capture_ms = capture_time.as_secs_f64() * 1e3,
        encode_ms = encode_time.as_secs_f64() * 1e3,
        "screen captured"
    );
    let base64 = STANDARD.encode(&bytes);
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
    let scale = f64::from(width) / f64::from(captured.width);
    let meta = json!({
        "format": args.format.name(),
        "width": width,
        "height": height,
        "bytes": bytes.len(),
        "screenIndex": captured.index,
        "capturedWidth": captured.width,
        "capturedHeight": captured.height,
        "scale": (scale * 1e6).round() / 1e6,
        "monitors": monitors,
        "capturedAtMs": captured_at_ms,
    });
    let gateway = json!({
        "format": args.format.name(),
        "width": width,
        "height": height,
        "base64": base64,
        "screenIndex": captured.index,
        "capturedAtMs": captured_at_ms,
    });
    Ok(ToolOutput::from(meta)
        .with_block(Content::Image { data: base64, mime_type: args.format.mime_type().into() })
        .with_gateway_payload(gateway))
}

#[cfg(test)]
mod tests;
