//! `camera.list`, `camera.snap`, `camera.clip`: this machine's V4L2 cameras (category `camera`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`v4l2`] | discovery: `/dev/video*` nodes that are video capture devices (`VIDIOC_QUERYCAP`), stable ids, who holds a busy one |
//! | [`ffmpeg`] | the capture pipeline from a [`ffmpeg::Source`] (a V4L2 device; a lavfi graph in tests): one frame as PNG/JPEG, or an H.264 MP4 clip, bounded in time and size, killed on cancel |
//! | this file | arguments (upstream's names, defaults and clamps), device choice, the answers |
//!
//! The "Camera" switch (`NodeCameraEnabled`, off by default) is read live: off, no camera
//! command is listed and a call says how to turn it on. `camera.snap` and `camera.clip` also
//! need ffmpeg on the node's `PATH`. "No camera" is not a missing backend: `camera.list` then
//! answers an empty list, and a capture says what the scan found instead. Over MCP a snap is an
//! `image` block and a clip an embedded `video/mp4` resource, each beside its metadata as JSON
//! text; the gateway gets upstream's payloads with the bytes as base64. Every capture is logged
//! with its size. Audio is not recorded (no audio capture backend yet): `includeAudio` is
//! accepted as upstream has it, and the answer says `hasAudio: false` and why.

pub(crate) mod ffmpeg;
mod v4l2;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::codes::{INVALID_REQUEST, UNAVAILABLE};
use clawmcp_mcp::{CallContext, Content, EmbeddedResource, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde::Serialize;
use serde_json::{Map, Value, json};

use self::ffmpeg::{CaptureError, ImageFormat, Limits, Source};
use crate::availability::{Gate, MissingBackend, Switch};
use crate::capability::{Capability, Command, CommandSpec, InvokeRequest, args};
use crate::settings::LiveSettings;

/// Upstream's `camera.snap` clamps and defaults.
pub const MIN_WIDTH: u32 = 16;
pub const MAX_WIDTH: u32 = 4096;
pub const DEFAULT_MAX_WIDTH: u32 = 1280;
const DEFAULT_QUALITY: u8 = 80;
/// Upstream's `camera.clip` clamps and default.
pub const MIN_DURATION_MS: u64 = 100;
pub const MAX_DURATION_MS: u64 = 60_000;
pub const DEFAULT_DURATION_MS: u64 = 3_000;

/// The `camera` capability.
pub struct CameraCapability {
    commands: Vec<Command>,
}

/// Where the capability looks and what bounds it.
#[derive(Debug, Clone)]
struct Config {
    /// The device directory scanned for `videoN` nodes.
    root: PathBuf,
    /// The ffmpeg program looked up on `PATH`.
    ffmpeg: &'static str,
    limits: Limits,
    /// Captures read this instead of a device (tests: the same pipeline from lavfi).
    #[cfg(test)]
    test_source: Option<Source>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            root: PathBuf::from("/dev"),
            ffmpeg: "ffmpeg",
            limits: Limits::default(),
            #[cfg(test)]
            test_source: None,
        }
    }
}

impl CameraCapability {
    /// The cameras under `/dev`.
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        CameraCapability::with_config(settings, Config::default())
    }

    fn with_config(settings: Arc<LiveSettings>, config: Config) -> Self {
        let config = Arc::new(config);
        let listing = Gate::new(settings.clone(), Some(&Switch::CAMERA), || Ok(()));
        let program = config.ffmpeg;
        let capture =
            Gate::new(settings, Some(&Switch::CAMERA), move || MissingBackend::program(program, "ffmpeg").map(drop));
        let list = list_spec().with_output_handler({
            let (gate, config) = (listing.clone(), config.clone());
            move |_request, _ctx| {
                let (gate, config) = (gate.clone(), config.clone());
                async move {
                    gate.admit("camera.list")?;
                    let scan = scan(&config).await?;
                    Ok(ToolOutput::from(list_answer(&scan)))
                }
            }
        });
        let snap = snap_spec().with_output_handler({
            let (gate, config) = (capture.clone(), config.clone());
            move |request, ctx| snap(gate.clone(), config.clone(), request, ctx)
        });
        let clip = clip_spec().with_output_handler({
            let (gate, config) = (capture.clone(), config);
            move |request, ctx| clip(gate.clone(), config.clone(), request, ctx)
        });
        CameraCapability { commands: vec![listing.apply(list), capture.apply(snap), capture.apply(clip)] }
    }
}

impl Capability for CameraCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

fn list_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "camera.list",
        title: Some("List cameras"),
        description: Some(
            "List this machine's cameras (V4L2 video capture devices). Takes no arguments. Returns {devices: [{id, \
             name, position, deviceType}], cameras: [{deviceId, name, isDefault}]} (the same cameras in the shapes of \
             the OpenClaw node hosts and of the Windows node; the first is the default); pass an id to camera.snap or \
             camera.clip as deviceId. Empty lists mean no camera is connected.",
        ),
        input_schema: Some(json!({"type": "object", "properties": {}, "additionalProperties": false}).into()),
        output_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "devices": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "minLength": 1},
                                "name": {"type": "string"},
                                "position": {"type": "string", "enum": ["unknown"]},
                                "deviceType": {"type": "string", "enum": ["v4l2"]}
                            },
                            "required": ["id", "name", "position", "deviceType"],
                            "additionalProperties": false
                        }
                    },
                    "cameras": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "deviceId": {"type": "string", "minLength": 1},
                                "name": {"type": "string"},
                                "isDefault": {"type": "boolean"}
                            },
                            "required": ["deviceId", "name", "isDefault"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["devices", "cameras"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

fn snap_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "camera.snap",
        title: Some("Camera photo"),
        description: Some(
            "Take one photo with a camera of this machine. deviceId from camera.list (default: the first camera); \
             format jpeg (default) or png; maxWidth scales the photo down to at most that width (16..4096, default \
             1280); quality 1..100 for jpeg (default 80). Returns the image and {format, width, height, bytes, \
             deviceId}.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "deviceId": {"type": "string", "description": "A deviceId from camera.list; omit for the default camera."},
                    "format": {"type": "string", "enum": ["jpeg", "jpg", "png"], "default": "jpeg"},
                    "maxWidth": {"type": "integer", "minimum": MIN_WIDTH, "maximum": MAX_WIDTH, "default": DEFAULT_MAX_WIDTH},
                    "quality": {"type": "number", "minimum": 0, "maximum": 100, "default": DEFAULT_QUALITY, "description": "JPEG quality 1..100, or a fraction 0..1 (0.95 is 95)."}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

fn clip_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "camera.clip",
        title: Some("Camera video clip"),
        description: Some(
            "Record a short video with a camera of this machine, as H.264 MP4. deviceId from camera.list (default: \
             the first camera); durationMs 100..60000 (default 3000); format mp4 (the only one). No sound is \
             recorded (includeAudio is accepted and answered with hasAudio false). Returns the video as an \
             embedded video/mp4 resource and {format, durationMs, requestedDurationMs, frames, bytes, hasAudio, \
             truncated, deviceId}; truncated means the clip stopped at the 16 MiB size limit.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "deviceId": {"type": "string", "description": "A deviceId from camera.list; omit for the default camera."},
                    "durationMs": {"type": "integer", "minimum": MIN_DURATION_MS, "maximum": MAX_DURATION_MS, "default": DEFAULT_DURATION_MS},
                    "includeAudio": {"type": "boolean", "default": true},
                    "format": {"type": "string", "enum": ["mp4"], "default": "mp4"}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

/// `deviceId`: a non-blank string, or absent for the default camera.
fn device_id(args: &Map<String, Value>) -> Result<Option<String>, ToolFailure> {
    match args.get("deviceId") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => Ok(Some(id.trim().to_owned()).filter(|id| !id.is_empty())),
        Some(_) => Err(ToolFailure::invalid_request("deviceId must be a string: a deviceId from camera.list")),
    }
}

/// A lower-cased, trimmed `format`; `None` when absent or blank.
fn format_arg(args: &Map<String, Value>) -> Result<Option<String>, ToolFailure> {
    match args.get("format") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim().to_ascii_lowercase()).filter(|text| !text.is_empty())),
        Some(_) => Err(ToolFailure::invalid_request("format must be a string")),
    }
}

/// `camera.snap`'s arguments with upstream's defaults and clamps applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SnapArgs {
    device_id: Option<String>,
    format: ImageFormat,
    max_width: u32,
    quality: u8,
}

impl SnapArgs {
    fn parse(args: &Map<String, Value>) -> Result<SnapArgs, ToolFailure> {
        let format = match format_arg(args)?.as_deref() {
            None | Some("jpeg" | "jpg") => ImageFormat::Jpeg,
            Some("png") => ImageFormat::Png,
            Some(other) => {
                return Err(ToolFailure::invalid_request(format!(
                    "Unsupported camera snap format `{other}`. Supported formats: jpeg, png."
                )));
            }
        };
        let max_width = args::whole_number(args, "maxWidth")?
            .map_or(DEFAULT_MAX_WIDTH, |width| width.clamp(i64::from(MIN_WIDTH), i64::from(MAX_WIDTH)) as u32);
        let quality = args::quality(args, DEFAULT_QUALITY)?;
        Ok(SnapArgs { device_id: device_id(args)?, format, max_width, quality })
    }
}

/// `camera.clip`'s arguments with upstream's defaults and clamps applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClipArgs {
    device_id: Option<String>,
    duration_ms: u64,
    include_audio: bool,
}

impl ClipArgs {
    fn parse(args: &Map<String, Value>) -> Result<ClipArgs, ToolFailure> {
        match format_arg(args)?.as_deref() {
            None | Some("mp4") => {}
            Some(other) => {
                return Err(ToolFailure::invalid_request(format!(
                    "Unsupported camera clip format `{other}`. Supported formats: mp4."
                )));
            }
        }
        let duration_ms = args::whole_number(args, "durationMs")?
            .map_or(DEFAULT_DURATION_MS, |ms| ms.clamp(MIN_DURATION_MS as i64, MAX_DURATION_MS as i64) as u64);
        let include_audio = args::include_audio(args, true)?;
        Ok(ClipArgs { device_id: device_id(args)?, duration_ms, include_audio })
    }
}

/// One scan of the device directory, off the runtime's threads (it opens device nodes).
async fn scan(config: &Config) -> Result<v4l2::Scan, ToolFailure> {
    let root = config.root.clone();
    tokio::task::spawn_blocking(move || v4l2::scan(&root))
        .await
        .map_err(|e| ToolFailure::new(format!("List failed: {e}")))
}

/// One camera in `camera.list`'s `cameras`, the Windows node's shape. Serialised camelCase as
/// upstream documents it; upstream's `CameraInfo` record actually serialises PascalCase
/// (`DeviceId`, `Name`, `IsDefault`), a drift we do not copy.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CameraInfo<'a> {
    device_id: &'a str,
    name: &'a str,
    is_default: bool,
}

/// `camera.list`'s answer, in both upstream shapes: `devices` is what the gateway's CLI (`openclaw
/// nodes camera list` reads only it), its agent tool and the real Linux node plugin use (V4L2
/// knows no front or back: `position` is `unknown`, as the plugin says); `cameras` is the Windows
/// node's.
fn list_answer(scan: &v4l2::Scan) -> Value {
    let cameras: Vec<CameraInfo<'_>> = scan
        .cameras
        .iter()
        .enumerate()
        .map(|(index, camera)| CameraInfo { device_id: &camera.id, name: &camera.name, is_default: index == 0 })
        .collect();
    let devices: Vec<Value> = scan
        .cameras
        .iter()
        .map(|camera| json!({"id": camera.id, "name": camera.name, "position": "unknown", "deviceType": "v4l2"}))
        .collect();
    json!({"devices": devices, "cameras": cameras})
}

/// What a capture reads, with the deviceId to report, and ffmpeg's path.
async fn prepare(
    command: &str,
    config: &Config,
    device_id: Option<&str>,
) -> Result<(std::path::PathBuf, Source, String), ToolFailure> {
    let ffmpeg = MissingBackend::program(config.ffmpeg, "ffmpeg").map_err(|missing| {
        ToolFailure::new(format!("{command} is not available on this machine: {missing}")).with_code(UNAVAILABLE)
    })?;
    #[cfg(test)]
    if let Some(source) = &config.test_source {
        return Ok((ffmpeg, source.clone(), "lavfi".to_owned()));
    }
    let scan = scan(config).await?;
    let camera = scan.resolve(device_id).map_err(|message| {
        let code = match device_id.is_some() && !scan.cameras.is_empty() {
            true => INVALID_REQUEST,
            false => UNAVAILABLE,
        };
        ToolFailure::new(message).with_code(code)
    })?;
    Ok((ffmpeg, Source::V4l2 { device: camera.node.clone() }, camera.id.clone()))
}

fn captured(error: CaptureError) -> ToolFailure {
    match error {
        CaptureError::Cancelled => clawmcp_mcp::CANCELLED.into(),
        CaptureError::Failed(message) => ToolFailure::new(message).with_code(UNAVAILABLE),
    }
}

async fn snap(gate: Gate, config: Arc<Config>, request: InvokeRequest, ctx: CallContext) -> ToolOutcome {
    gate.admit("camera.snap")?;
    let args = SnapArgs::parse(&request.args)?;
    let (program, source, device_id) = prepare("camera.snap", &config, args.device_id.as_deref()).await?;
    let image = ffmpeg::snap(&program, &source, args.format, args.max_width, args.quality, &config.limits, &ctx.cancel)
        .await
        .map_err(captured)?;
    tracing::info!(
        device = %device_id,
        width = image.width,
        height = image.height,
        bytes = image.bytes.len(),
        format = args.format.name(),
        "camera photo taken"
    );
    let base64 = STANDARD.encode(&image.bytes);
    let meta = json!({
        "format": args.format.name(),
        "width": image.width,
        "height": image.height,
        "bytes": image.bytes.len(),
        "deviceId": device_id,
    });
    let gateway = json!({"format": args.format.name(), "width": image.width, "height": image.height, "base64": base64});
    Ok(ToolOutput::from(meta)
        .with_block(Content::Image { data: base64, mime_type: args.format.mime_type().into() })
        .with_gateway_payload(gateway))
}

async fn clip(gate: Gate, config: Arc<Config>, request: InvokeRequest, ctx: CallContext) -> ToolOutcome {
    gate.admit("camera.clip")?;
    let args = ClipArgs::parse(&request.args)?;
    let (program, source, device_id) = prepare("camera.clip", &config, args.device_id.as_deref()).await?;
    let clip =
        ffmpeg::clip(&program, &source, args.duration_ms, &config.limits, &ctx.cancel).await.map_err(captured)?;
    tracing::info!(
        device = %device_id,
        duration_ms = clip.duration_ms,
        frames = clip.frames,
        bytes = clip.bytes.len(),
        truncated = clip.truncated,
        "camera clip recorded"
    );
    let base64 = STANDARD.encode(&clip.bytes);
    let mut meta = json!({
        "format": "mp4",
        "durationMs": clip.duration_ms,
        "requestedDurationMs": args.duration_ms,
        "frames": clip.frames,
        "bytes": clip.bytes.len(),
        "hasAudio": false,
        "truncated": clip.truncated,
        "deviceId": device_id,
    });
    if args.include_audio {
        meta["audio"] = json!(args::NO_AUDIO);
    }
    let gateway = json!({"format": "mp4", "base64": base64, "durationMs": clip.duration_ms, "hasAudio": false});
    let recorded_at = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let resource = EmbeddedResource::Blob {
        uri: format!("clawmcp://camera.clip/{recorded_at}.mp4"),
        mime_type: Some("video/mp4".into()),
        blob: base64,
    };
    Ok(ToolOutput::from(meta).with_block(Content::Resource { resource }).with_gateway_payload(gateway))
}

#[cfg(test)]
mod tests;
