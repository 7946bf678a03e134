//! `screen.record`: a clip of one monitor as an mp4 (H.264), recorded by ffmpeg: from X11 by its
//! x11grab, on Wayland from the desktop portal's screen cast, whose frames `gst-launch-1.0` reads
//! from PipeWire and pipes in as y4m ([`super::cast`]). Everything below holds for both.
//!
//! ffmpeg records the monitor's rectangle (RandR, as `screen.snapshot` finds it) into a file in
//! a private temporary directory (`clawmcp-record-*`, mode 0700), which is read back, checked to
//! be a finished mp4 (its `moov` index present; a killed ffmpeg leaves none) and returned: over
//! MCP as an embedded `video/mp4` resource plus the metadata as JSON text, to the gateway as
//! upstream's `{format, base64, durationMs, fps, screenIndex, hasAudio}`.
//!
//! Bounds: `durationMs` 100..300000, `fps` 1..60 (upstream's clamps); the file is at most
//! [`MAX_RECORDING_BYTES`] (16 MiB, about 21.3 MiB in base64, under the gateway's 25 MiB frame):
//! ffmpeg stops writing at [`STOP_AT_BYTES`] (`-fs`, the room above it holds the frame in flight
//! and the index), the result then says `truncated: true` and gives the real duration, read
//! from the file. ffmpeg may take the clip's duration plus [`START_ALLOWANCE`], then it is
//! stopped and the call fails. Its stderr is kept up to [`STDERR_KEPT`] bytes, for the error.
//!
//! Stopping: a cancelled call sends ffmpeg (and gst) SIGINT, SIGKILLs them after [`STOP_GRACE`],
//! waits for them, closes the portal session and deletes the directory before answering
//! `cancelled`. A call whose future is dropped kills both through `kill_on_drop`, drops its bus
//! connection (the portal closes the session of a peer that left) and removes the directory
//! through `TempDir`'s drop. A cast that sends no frame within [`cast::FIRST_FRAME_TIMEOUT`]
//! fails the call, saying why.
//! Directories a crashed node left behind (ours, older than [`STALE_AFTER`], longer than any
//! recording can take) are removed when the next recording starts.
//!
//! One recording at a time per node: a second call while one runs is refused at once (code
//! `UNAVAILABLE`) rather than queued, since it could wait up to five minutes without knowing
//! why. There is no audio backend: `includeAudio: true` (what the gateway's CLI and agent tool
//! send by default) is answered with `hasAudio: false` and a note saying why, never dropped silently.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::codes::UNAVAILABLE;
use clawmcp_mcp::{CallContext, Content, EmbeddedResource, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command as Process};

use super::{Desktop, MAX_SCREEN_INDEX, Session, cast, format_name, portal, whole_number, x11};
use crate::availability::{Gate, MissingBackend, Switch};
use crate::capability::{Command, CommandSpec};
pub(super) use crate::mp4::inspect_mp4;
use crate::settings::LiveSettings;

/// Upstream's defaults and clamps.
pub const DEFAULT_DURATION_MS: u64 = 10_000;
pub const MIN_DURATION_MS: u64 = 100;
pub const MAX_DURATION_MS: u64 = 300_000;
pub const DEFAULT_FPS: u32 = 10;
pub const MIN_FPS: u32 = 1;
pub const MAX_FPS: u32 = 60;
/// The largest file a recording returns.
pub const MAX_RECORDING_BYTES: u64 = 16 << 20;
/// Where ffmpeg stops writing (`-fs`): 2 MiB below [`MAX_RECORDING_BYTES`] for the frame being
/// written when the limit is reached and the index written after it.
pub const STOP_AT_BYTES: u64 = 14 << 20;
/// How long ffmpeg may take beyond the clip's duration (start-up, the X connection, the index).
pub const START_ALLOWANCE: Duration = Duration::from_secs(20);
/// How long ffmpeg has after SIGINT before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// Recording directories older than this were left by a node that died (a recording takes at
/// most five minutes plus [`START_ALLOWANCE`]).
pub const STALE_AFTER: Duration = Duration::from_secs(3600);
/// How much of ffmpeg's stderr is kept for an error message.
pub const STDERR_KEPT: usize = 4096;
/// How many temp-dir entries one stale scan looks at.
const STALE_SCAN_LIMIT: usize = 10_000;
/// The name prefix of recording directories in the temp dir.
pub const TEMP_PREFIX: &str = "clawmcp-record-";

/// The size bound of a recording: ffmpeg stops at `stop_at` bytes; a file over `max` is never
/// returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeBound {
    pub stop_at: u64,
    pub max: u64,
}

impl Default for SizeBound {
    fn default() -> Self {
        SizeBound { stop_at: STOP_AT_BYTES, max: MAX_RECORDING_BYTES }
    }
}

/// Where and how big recordings are made.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub size: SizeBound,
    /// The directory the private recording directories are made in (the system temp dir).
    pub temp_root: PathBuf,
    /// The `PATH` ffmpeg is looked up on; `None` is the node's own, read at each call.
    pub search_path: Option<OsString>,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions { size: SizeBound::default(), temp_root: std::env::temp_dir(), search_path: None }
    }
}

impl RecordOptions {
    /// ffmpeg on the search path, or which package provides it.
    fn ffmpeg(&self) -> Result<PathBuf, MissingBackend> {
        self.program("ffmpeg", "ffmpeg")
    }

    /// `program` on the search path, or `package`, which provides it.
    pub(super) fn program(&self, program: &str, package: &str) -> Result<PathBuf, MissingBackend> {
        match &self.search_path {
            Some(path) => MissingBackend::program_in(program, package, Some(path)),
            None => MissingBackend::program(program, package),
        }
    }
}

/// `screen.record`, behind the screen switch, ffmpeg and the desktop: an X display, or on Wayland
/// the desktop portal and GStreamer's PipeWire source. `timeout` bounds the portal's start.
pub(super) fn command(
    settings: Arc<LiveSettings>,
    desktop: Desktop,
    timeout: Duration,
    options: RecordOptions,
) -> Command {
    let gate = {
        let (desktop, options) = (desktop.clone(), options.clone());
        let probe = portal::Probe::new(match &desktop {
            Desktop::Portal(bus) => bus.clone(),
            _ => portal::Bus::Env,
        });
        Gate::new(settings, Some(&Switch::SCREEN), move || match desktop.session()? {
            Session::X11(_) => options.ffmpeg().map(drop),
            Session::Portal(bus) => {
                probe.check()?;
                options.ffmpeg()?;
                cast::gst_launch(&options)?;
                cast::screencast_offered(&bus)
            }
        })
    };
    let recorder = Arc::new(Recorder { desktop, timeout, options, busy: tokio::sync::Mutex::new(()) });
    let handler = command_spec().with_output_handler({
        let gate = gate.clone();
        move |request, ctx| {
            let (gate, recorder) = (gate.clone(), recorder.clone());
            async move {
                gate.admit("screen.record")?;
                let args = RecordArgs::parse(&request.args)?;
                recorder.record(&args, &ctx).await
            }
        }
    });
    gate.apply(handler)
}

pub fn command_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "screen.record",
        title: Some("Screen recording"),
        output_schema: None,
        description: Some(
            "Record one monitor of this machine's screen (X11; on Wayland through the desktop portal's screen \
             cast, where screenIndex 0 is the monitor the portal casts) as an mp4 video (H.264, with the mouse \
             pointer where the desktop can draw it). durationMs 100..300000 (default 10000), fps 1..60 \
             (default 10), screenIndex picks the monitor (0 = primary), format mp4 only; no audio is recorded (includeAudio true is answered with hasAudio false \
             and a note). The call takes the \
             clip's duration. Returns the video as an embedded resource and {format, durationMs, \
             requestedDurationMs, fps, screenIndex, hasAudio, width, height, bytes, truncated}: a clip is at most \
             16 MiB; one that reached it is cut short (truncated: true, durationMs is what was recorded). One \
             recording at a time.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "format": {"type": "string", "enum": ["mp4"], "default": "mp4"},
                    "durationMs": {"type": "integer", "minimum": MIN_DURATION_MS, "maximum": MAX_DURATION_MS, "default": DEFAULT_DURATION_MS},
                    "fps": {"type": "number", "minimum": MIN_FPS, "maximum": MAX_FPS, "default": DEFAULT_FPS},
                    "screenIndex": {"type": "integer", "minimum": 0, "maximum": MAX_SCREEN_INDEX, "default": 0},
                    "includeAudio": {"type": "boolean", "default": false, "description": "No audio is recorded yet: true is answered with hasAudio false and a note."}
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

/// The arguments, with upstream's defaults and clamps applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RecordArgs {
    pub duration_ms: u64,
    /// Whole frames per second (a fractional `fps` is rounded).
    pub fps: u32,
    pub screen_index: usize,
    /// Asked for sound (answered with `hasAudio: false` and why: no audio backend).
    pub include_audio: bool,
}

impl RecordArgs {
    pub fn parse(args: &Map<String, Value>) -> Result<RecordArgs, ToolFailure> {
        if format_name(args).is_some_and(|format| !format.is_empty() && format != "mp4") {
            return Err(ToolFailure::invalid_request("Unsupported screen recording format. Only mp4 is supported."));
        }
        let duration_ms = whole_number(args, "durationMs")?
            .map_or(DEFAULT_DURATION_MS, |ms| ms.clamp(MIN_DURATION_MS as i64, MAX_DURATION_MS as i64) as u64);
        let fps = match args.get("fps") {
            None | Some(Value::Null) => DEFAULT_FPS,
            Some(value) => match value.as_f64().filter(|fps| fps.is_finite()) {
                Some(fps) => fps.round().clamp(f64::from(MIN_FPS), f64::from(MAX_FPS)) as u32,
                None => return Err(ToolFailure::invalid_request("fps must be a number (frames per second, 1..60)")),
            },
        };
        let screen_index = whole_number(args, "screenIndex")?.unwrap_or(0).clamp(0, MAX_SCREEN_INDEX as i64) as usize;
        let include_audio = crate::capability::args::include_audio(args, false)?;
        Ok(RecordArgs { duration_ms, fps, screen_index, include_audio })
    }
}

/// Makes one recording at a time.
struct Recorder {
    desktop: Desktop,
    /// How long the portal may take to start a screen cast.
    timeout: Duration,
    options: RecordOptions,
    busy: tokio::sync::Mutex<()>,
}

impl Recorder {
    async fn record(&self, args: &RecordArgs, ctx: &CallContext) -> ToolOutcome {
        let Ok(_one_at_a_time) = self.busy.try_lock() else {
            return Err(ToolFailure::new(
                "Screen recording not available: a recording is already running on this node (one at a time); wait \
                 for it to end or cancel it, then call again",
            )
            .with_code(UNAVAILABLE));
        };
        let failed = |what: String| ToolFailure::new(format!("Recording failed: {what}"));
        let ffmpeg = self.options.ffmpeg().map_err(|missing| {
            ToolFailure::new(format!("Screen recording not available: {missing}")).with_code(UNAVAILABLE)
        })?;
        let session = self.desktop.session().map_err(|missing| {
            ToolFailure::new(format!("Screen recording not available: {missing}")).with_code(UNAVAILABLE)
        })?;
        // Where the frames come from: ffmpeg's own x11grab, or the portal's cast through gst.
        let (input, cast, width, height) = match session {
            Session::X11(display) => {
                let display = display.unwrap_or_else(|| std::env::var("DISPLAY").unwrap_or_default());
                let (monitor, _) = {
                    let (display, index) = (display.clone(), args.screen_index);
                    tokio::task::spawn_blocking(move || x11::monitor(Some(&display), index))
                        .await
                        .map_err(|e| failed(e.to_string()))?
                        .map_err(ToolFailure::new)?
                };
                let input: Vec<String> = vec![
                    "-f".into(),
                    "x11grab".into(),
                    "-framerate".into(),
                    args.fps.to_string(),
                    "-video_size".into(),
                    format!("{}x{}", monitor.width & !1, monitor.height & !1),
                    "-i".into(),
                    format!("{display}+{},{}", monitor.x, monitor.y),
                ];
                (input, None, u32::from(monitor.width), u32::from(monitor.height))
            }
            Session::Portal(bus) => {
                if args.screen_index != 0 {
                    return Err(ToolFailure::invalid_request(format!(
                        "screenIndex {} does not exist: on Wayland the desktop portal casts one monitor, which is \
                         screenIndex 0 (the portal does not say where the monitors are); use screenIndex 0",
                        args.screen_index
                    )));
                }
                let unavailable = |missing: MissingBackend| {
                    ToolFailure::new(format!("Screen recording not available: {missing}")).with_code(UNAVAILABLE)
                };
                let gst = cast::gst_launch(&self.options).map_err(unavailable)?;
                let address = bus.address().map_err(unavailable)?;
                let started = cast::start(&address, self.timeout, &ctx.cancel).await.map_err(|error| {
                    match error == clawmcp_mcp::CANCELLED {
                        true => clawmcp_mcp::CANCELLED.into(),
                        false => failed(error),
                    }
                })?;
                let (width, height) = started.size.unwrap_or((0, 0));
                // Odd sides are cropped off below (yuv420p); the portal may not say the size.
                let input: Vec<String> = ["-f", "yuv4mpegpipe", "-i", "-", "-vf", "crop=trunc(iw/2)*2:trunc(ih/2)*2"]
                    .map(String::from)
                    .into();
                (input, Some((started, gst)), width, height)
            }
        };
        // yuv420p halves both chroma dimensions, so H.264 needs even sides: drop an odd last
        // column or row.
        let (width, height) = (width & !1, height & !1);
        if cast.is_none() && (width == 0 || height == 0) {
            return Err(failed(format!("monitor {} is {}x{}", args.screen_index, width, height)));
        }
        let dir = match tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&self.options.temp_root)
        {
            Ok(dir) => dir,
            Err(e) => {
                end_cast(None, &cast).await;
                return Err(failed(format!("cannot make a directory in {}: {e}", self.options.temp_root.display())));
            }
        };
        remove_stale(&self.options.temp_root, dir.path(), SystemTime::now());
        let output = dir.path().join("recording.mp4");
        let size = self.options.size;
        // The cast's consumer, its stdout to be ffmpeg's stdin; named after the directory, so its
        // PipeWire client (and its command line) says whose it is.
        let mut feed = match &cast {
            Some((started, gst)) => {
                let name = dir.path().file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                let spawned = started.consumer(gst, args.fps, &name).and_then(|mut command| command.spawn());
                match spawned {
                    Ok(child) => Some(Feed::new(child)),
                    Err(e) => {
                        end_cast(None, &cast).await;
                        return Err(failed(format!("cannot start {}: {e}", gst.display())));
                    }
                }
            }
            None => None,
        };
        let frames_in = match feed.as_mut().and_then(|feed| feed.child.stdout.take()) {
            Some(stdout) => stdout
                .into_owned_fd()
                .map(Stdio::from)
                .map_err(|e| failed(format!("cannot pipe gst into ffmpeg: {e}")))?,
            None => Stdio::null(),
        };
        let spawned = Process::new(&ffmpeg)
            .args(["-hide_banner", "-nostdin", "-nostats", "-loglevel", "error"])
            .args(&input)
            // Frame counts as they are encoded, read for the first frame of a cast.
            .args(["-progress", "pipe:1"])
            .args(["-t", &format!("{}.{:03}", args.duration_ms / 1000, args.duration_ms % 1000), "-an"])
            // A constant output rate: under load x11grab's wall-clock timestamps jump, and
            // without it the muxer's guess of the rate was seen to turn 1.5 s into 120 frames.
            .args(["-r", &args.fps.to_string(), "-fps_mode", "cfr"])
            // zerolatency: no frame is held back in the encoder, so after `-fs` is reached at
            // most the frame being written follows.
            .args(["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p"])
            // `-fs` compares the bytes ffmpeg has written (its own count, buffered ones included),
            // so it stops after the first frame that reaches `stop_at`.
            .args(["-fs", &size.stop_at.to_string(), "-y"])
            .arg(&output)
            .stdin(frames_in)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                end_cast(feed.as_mut(), &cast).await;
                return Err(failed(format!("cannot start {}: {e}", ffmpeg.display())));
            }
        };
        let stderr = tokio::spawn(read_kept(child.stderr.take()));
        let (encoded, mut first_frame) = tokio::sync::watch::channel(false);
        tokio::spawn(watch_progress(child.stdout.take(), encoded));
        let started = Instant::now();
        let deadline = tokio::time::sleep(Duration::from_millis(args.duration_ms) + START_ALLOWANCE);
        tokio::pin!(deadline);
        let first_frame_due = tokio::time::sleep(cast::FIRST_FRAME_TIMEOUT);
        tokio::pin!(first_frame_due);
        let mut ticks = tokio::time::interval(Duration::from_secs(1));
        let total = args.duration_ms as f64 / 1000.0;
        let mut reported = 0.0;
        let ended: Result<std::process::ExitStatus, ToolFailure> = loop {
            let feeding = feed.as_ref().is_some_and(|feed| !feed.ended);
            let awaiting_first_frame = cast.is_some() && !*first_frame.borrow();
            tokio::select! {
                status = child.wait() => break status.map_err(|e| failed(format!("cannot wait for ffmpeg: {e}"))),
                () = ctx.cancel.cancelled() => break Err(clawmcp_mcp::CANCELLED.into()),
                () = &mut deadline => break Err(failed(format!(
                    "ffmpeg did not finish within {} s of a {total} s clip",
                    START_ALLOWANCE.as_secs()
                ))),
                // (Only polled while `feeding`, when there is a feed.)
                ended = async { feed.as_mut().expect("a feed").ended().await }, if feeding => {
                    // The cast broke before the clip was recorded: say gst's reason. After the
                    // clip's time, gst's write error is ffmpeg closing its stdin on finishing,
                    // and a clean end (EOS: the desktop stopped casting) lets ffmpeg finish a
                    // shorter clip: either way ffmpeg answers.
                    let early = started.elapsed() < Duration::from_millis(args.duration_ms);
                    if let Some(why) = ended.filter(|_| early) {
                        break Err(failed(format!("the screen cast stopped: {why}")));
                    }
                }
                () = &mut first_frame_due, if awaiting_first_frame => {
                    break Err(failed(format!(
                        "no frame arrived from the screen cast within {} s: the compositor sends frames when the \
                         screen repaints, so either the stream was not linked (is wireplumber or another PipeWire \
                         session manager running in this session?) or nothing on the screen changed (some \
                         compositors send no first frame until something does)",
                        cast::FIRST_FRAME_TIMEOUT.as_secs()
                    )));
                }
                // A frame came: the loop goes round, and the time-out above is off. (A closed
                // channel, ffmpeg gone, disables this arm instead of spinning.)
                Ok(()) = first_frame.changed(), if awaiting_first_frame => {}
                _ = ticks.tick() => {
                    // Whole seconds recorded, each once (the first tick is at 0 s).
                    let seconds = started.elapsed().as_secs_f64().min(total).floor();
                    if let Some(progress) = ctx.progress.as_ref().filter(|_| seconds > reported) {
                        progress.report(seconds, Some(total), Some("recording"));
                        reported = seconds;
                    }
                }
            }
        };
        let status = match ended {
            Ok(status) => status,
            Err(error) => {
                // Nothing of the call outlives its answer: both children reaped, the cast
                // closed, the directory removed.
                stop(&mut child).await;
                end_cast(feed.as_mut(), &cast).await;
                drop(dir);
                return Err(error);
            }
        };
        // ffmpeg took the clip's frames: the cast is no longer needed.
        let pointer = cast.as_ref().map(|(started, _)| started.pointer);
        end_cast(feed.as_mut(), &cast).await;
        let stderr = stderr.await.unwrap_or_default();
        if !status.success() {
            return Err(failed(format!("ffmpeg {status}: {}", stderr.trim())));
        }
        let bytes = read_bounded(&output, size.max).map_err(failed)?;
        let facts = inspect_mp4(&bytes).map_err(|why| failed(format!("ffmpeg wrote no finished mp4: {why}")))?;
        // Cut short by the size bound: ffmpeg reached `stop_at` before the clip's last frame
        // (half a frame's tolerance for the timestamps' rounding).
        let frame_ms = 1000.0 / f64::from(args.fps);
        let truncated =
            facts.index_offset >= size.stop_at && (facts.duration_ms as f64) + frame_ms / 2.0 < args.duration_ms as f64;
        tracing::info!(
            screen = args.screen_index,
            width,
            height,
            fps = args.fps,
            duration_ms = facts.duration_ms,
            bytes = bytes.len(),
            truncated,
            "screen recorded"
        );
        let base64 = STANDARD.encode(&bytes);
        let mut meta = json!({
            "format": "mp4",
            "durationMs": facts.duration_ms,
            "requestedDurationMs": args.duration_ms,
            "fps": args.fps,
            "screenIndex": args.screen_index,
            "hasAudio": false,
            "width": width,
            "height": height,
            "bytes": bytes.len(),
            "truncated": truncated,
        });
        if args.include_audio {
            meta["audio"] = json!(crate::capability::args::NO_AUDIO);
        }
        if let Some(pointer) = pointer {
            meta["backend"] = json!("portal");
            meta["pointer"] = json!(pointer);
        }
        let gateway = json!({
            "format": "mp4",
            "base64": base64,
            "durationMs": facts.duration_ms,
            "fps": args.fps,
            "screenIndex": args.screen_index,
            "hasAudio": false,
        });
        let uri = format!("clawmcp://recording/{}.mp4", random_id());
        Ok(ToolOutput::from(meta)
            .with_block(Content::Resource {
                resource: EmbeddedResource::Blob { uri, mime_type: Some("video/mp4".into()), blob: base64 },
            })
            .with_gateway_payload(gateway))
    }
}

/// The cast's consumer (gst-launch) while it feeds ffmpeg.
struct Feed {
    child: Child,
    stderr: Option<tokio::task::JoinHandle<String>>,
    /// It has exited (and its end was reported).
    ended: bool,
}

impl Feed {
    fn new(mut child: Child) -> Feed {
        let stderr = Some(tokio::spawn(read_kept(child.stderr.take())));
        Feed { child, stderr, ended: false }
    }

    /// Waits for gst to exit: `None` when it ended well, else why not.
    async fn ended(&mut self) -> Option<String> {
        let status = self.child.wait().await;
        self.ended = true;
        let stderr = match self.stderr.take() {
            Some(task) => task.await.unwrap_or_default(),
            None => String::new(),
        };
        match status {
            Ok(status) if status.success() => None,
            Ok(status) => Some(format!("gst-launch-1.0 {status}: {}", stderr.trim())),
            Err(e) => Some(format!("cannot wait for gst-launch-1.0: {e}")),
        }
    }
}

/// Reads ffmpeg's `-progress` lines and says when the first frame has been encoded.
async fn watch_progress(stream: Option<tokio::process::ChildStdout>, encoded: tokio::sync::watch::Sender<bool>) {
    use tokio::io::AsyncBufReadExt;
    let Some(stream) = stream else { return };
    let mut lines = tokio::io::BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let frames = line.strip_prefix("frame=").and_then(|count| count.trim().parse::<u64>().ok());
        if frames.is_some_and(|frames| frames > 0) && !*encoded.borrow() {
            let _ = encoded.send(true);
        }
    }
}

/// Ends a recording's screen cast, if it has one: its consumer (gst) stopped and reaped, then
/// the portal session closed. Every way out of a Wayland recording goes through here.
async fn end_cast(feed: Option<&mut Feed>, cast: &Option<(cast::Cast, PathBuf)>) {
    if let Some(feed) = feed {
        stop(&mut feed.child).await;
    }
    if let Some((started, _)) = cast {
        started.close().await;
    }
}

/// Asks ffmpeg to stop (SIGINT), then kills it after [`STOP_GRACE`]; returns once it is reaped.
async fn stop(child: &mut Child) {
    if let Some(pid) = child.id() {
        // Our own unreaped child: the PID cannot have been reused.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::SIGINT);
    }
    if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

/// The first [`STDERR_KEPT`] bytes of a stream, reading (and dropping) the rest to its end so
/// the writer never blocks.
async fn read_kept(stream: Option<tokio::process::ChildStderr>) -> String {
    let Some(mut stream) = stream else { return String::new() };
    let (mut kept, mut buffer) = (Vec::new(), [0u8; 1024]);
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        let room = STDERR_KEPT.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..read.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The file, if it is at most `max` bytes.
fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    // The shared bounded reader (no FIFO, no device, past `max` an error): as camera.clip reads.
    clawmcp_fs::read_regular_file(path, max).map_err(|error| match error.kind() {
        std::io::ErrorKind::InvalidData => format!(
            "the recording is over the {max}-byte bound; record a shorter clip, at a lower fps, or a smaller monitor"
        ),
        _ => format!("ffmpeg wrote no file ({error})"),
    })
}

/// Removes recording directories in `root` that are ours (owned by the owner of `ours`, the
/// directory just made), older than [`STALE_AFTER`], and not `ours`. Symlinks are never followed.
fn remove_stale(root: &Path, ours: &Path, now: SystemTime) {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::symlink_metadata(ours).map(|meta| meta.uid()) else { return };
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.take(STALE_SCAN_LIMIT).flatten() {
        let path = entry.path();
        if path == ours || !entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        let old = meta.modified().ok().and_then(|at| now.duration_since(at).ok()).is_some_and(|age| age > STALE_AFTER);
        if meta.is_dir() && meta.uid() == owner && old {
            match std::fs::remove_dir_all(&path) {
                Ok(()) => tracing::info!(path = %path.display(), "removed a recording left by an earlier node"),
                Err(error) => tracing::warn!(path = %path.display(), %error, "cannot remove an old recording"),
            }
        }
    }
}

fn random_id() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
pub(super) mod tests;
