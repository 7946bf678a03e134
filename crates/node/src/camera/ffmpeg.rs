//! The capture pipeline: one ffmpeg run per call, from a [`Source`] to a still image on a pipe
//! or an MP4 clip in a private temp dir, bounded in time and size and stopped on cancel.
//!
//! Production reads a V4L2 device; tests read a lavfi graph (a solid colour, a colour that
//! changes at 1 s), and everything after the input arguments (scaling, encoding, limits,
//! cancellation, the result) is the same code, which is what the tests exercise.
//!
//! ffmpeg is a direct child (it does not fork), started with `kill_on_drop`, and every way out
//! but a normal exit (cancel, time limit, too much output) SIGKILLs and reaps it before the
//! call answers: SIGTERM is not enough, an ffmpeg waiting on an input that delivers no frame
//! ignores it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// Where the frames come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A V4L2 capture device node (`/dev/video0`).
    V4l2 { device: PathBuf },
    /// A lavfi filter graph standing in for a camera (tests only).
    #[cfg(test)]
    Lavfi { graph: String },
}

impl Source {
    /// ffmpeg's input arguments for this source.
    fn input_args(&self) -> Vec<OsString> {
        match self {
            Source::V4l2 { device } => vec!["-f".into(), "v4l2".into(), "-i".into(), device.into()],
            #[cfg(test)]
            Source::Lavfi { graph } => vec!["-f".into(), "lavfi".into(), "-i".into(), graph.into()],
        }
    }

    /// The device node, for a "busy" message naming who holds it.
    fn device(&self) -> Option<&Path> {
        match self {
            Source::V4l2 { device } => Some(device),
            #[cfg(test)]
            Source::Lavfi { .. } => None,
        }
    }
}

/// The bounds of one capture.
#[derive(Debug, Clone)]
pub struct Limits {
    /// A snap that has no frame by then fails (a camera that never delivers).
    pub snap_timeout: Duration,
    /// A clip may take this much longer than its duration (opening the device, the encoder's
    /// flush, moving the index to the front) before it fails.
    pub clip_allowance: Duration,
    /// The largest still image returned.
    pub max_image_bytes: usize,
    /// ffmpeg's `-fs` for a clip: it stops encoding once the file reaches this size.
    pub max_clip_bytes: u64,
    /// Where the clip's private temp dir is made.
    pub temp_root: PathBuf,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            snap_timeout: Duration::from_secs(10),
            clip_allowance: Duration::from_secs(15),
            max_image_bytes: 32 << 20,
            max_clip_bytes: 16 << 20,
            temp_root: std::env::temp_dir(),
        }
    }
}

/// `-fs` is checked between packets and the encoder's queued frames still follow, so a clip
/// may end a little past it; past this much more it is refused rather than read.
pub fn clip_read_limit(max_clip_bytes: u64) -> u64 {
    max_clip_bytes + max_clip_bytes / 2 + (1 << 20)
}

/// Why a capture produced nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureError {
    Cancelled,
    /// Words for the caller.
    Failed(String),
}

impl CaptureError {
    fn failed(message: impl Into<String>) -> Self {
        CaptureError::Failed(message.into())
    }
}

/// Image formats of a snap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
}

impl ImageFormat {
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Png => "png",
        }
    }

    pub fn mime_type(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Png => "image/png",
        }
    }
}

/// One encoded still.
#[derive(Debug, Clone)]
pub struct Image {
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// ffmpeg's JPEG scale (`-q:v` 2 best .. 31 worst) for a quality of 1 (worst) .. 100 (best).
pub fn jpeg_qscale(quality: u8) -> u8 {
    let quality = quality.clamp(1, 100);
    2 + ((100 - u32::from(quality)) * 29 / 99) as u8
}

/// One frame from `source`, at most `max_width` wide (aspect kept, height even).
pub async fn snap(
    ffmpeg: &Path,
    source: &Source,
    format: ImageFormat,
    max_width: u32,
    quality: u8,
    limits: &Limits,
    cancel: &CancellationToken,
) -> Result<Image, CaptureError> {
    let mut args = common_args();
    args.extend(source.input_args());
    args.extend(["-frames:v", "1", "-an", "-vf"].map(OsString::from));
    args.push(format!("scale=min(iw\\,{max_width}):-2,setsar=1").into());
    match format {
        // rgb24: the PNG is plain 8-bit RGB, whatever the camera's pixel format.
        ImageFormat::Png => args.extend(["-pix_fmt", "rgb24", "-c:v", "png"].map(OsString::from)),
        ImageFormat::Jpeg => {
            args.extend(["-c:v", "mjpeg", "-q:v"].map(OsString::from));
            args.push(jpeg_qscale(quality).to_string().into());
        }
    }
    args.extend(["-f", "image2pipe", "pipe:1"].map(OsString::from));
    let run = run(ffmpeg, &args, Keep::Head(limits.max_image_bytes), limits.snap_timeout, cancel).await;
    let finished = match run {
        Ok(finished) => finished,
        Err(Stop::Cancelled) => return Err(CaptureError::Cancelled),
        Err(Stop::TimedOut) => {
            return Err(CaptureError::failed(format!(
                "Snap failed: the camera delivered no frame within {} s (ffmpeg stopped)",
                limits.snap_timeout.as_secs_f64()
            )));
        }
        Err(Stop::TooLarge) => {
            return Err(CaptureError::failed(format!(
                "Snap failed: the image is larger than {} bytes; ask for a smaller maxWidth or format jpeg",
                limits.max_image_bytes
            )));
        }
        Err(Stop::Spawn(error)) => {
            return Err(CaptureError::failed(format!("Snap failed: cannot start ffmpeg: {error}")));
        }
    };
    if !finished.status.success() || finished.stdout.is_empty() {
        return Err(CaptureError::failed(failure("Snap failed", source, &finished)));
    }
    let (width, height) = image_size(&finished.stdout, format)
        .ok_or_else(|| CaptureError::failed("Snap failed: ffmpeg's output is not a readable image"))?;
    Ok(Image { bytes: finished.stdout, width, height })
}

/// One encoded clip.
#[derive(Debug, Clone)]
pub struct Clip {
    pub bytes: Vec<u8>,
    /// The container's duration (the MP4 `mvhd`), which is what a player shows.
    pub duration_ms: u64,
    /// Frames encoded, as ffmpeg counted them.
    pub frames: u64,
    /// Stopped early at [`Limits::max_clip_bytes`].
    pub truncated: bool,
}

/// `duration_ms` of `source` as H.264 in MP4, no audio.
pub async fn clip(
    ffmpeg: &Path,
    source: &Source,
    duration_ms: u64,
    limits: &Limits,
    cancel: &CancellationToken,
) -> Result<Clip, CaptureError> {
    // Private (0700) and removed when dropped, on every path out of this function.
    let dir = tempfile::Builder::new()
        .prefix("clawmcp-camera-")
        .tempdir_in(&limits.temp_root)
        .map_err(|e| CaptureError::failed(format!("Clip failed: cannot make a temp dir: {e}")))?;
    let path = dir.path().join("clip.mp4");
    let mut args = common_args();
    args.extend(["-nostats", "-progress", "pipe:1"].map(OsString::from));
    args.extend(source.input_args());
    args.extend(["-t".into(), format!("{}.{:03}", duration_ms / 1000, duration_ms % 1000).into()]);
    // libx264's 4:2:0 needs even sides; cameras have them, the filter only guarantees it.
    args.extend(["-an", "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2,setsar=1"].map(OsString::from));
    args.extend(
        ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-fs"]
            .map(OsString::from),
    );
    args.push(limits.max_clip_bytes.to_string().into());
    args.extend(["-f".into(), "mp4".into(), "-y".into(), path.clone().into_os_string()]);
    let deadline = Duration::from_millis(duration_ms) + limits.clip_allowance;
    // stdout carries -progress: key=value blocks, of which only the last matters.
    let finished = match run(ffmpeg, &args, Keep::Tail(PROGRESS_TAIL), deadline, cancel).await {
        Ok(finished) => finished,
        Err(Stop::Cancelled) => return Err(CaptureError::Cancelled),
        Err(Stop::TimedOut) => {
            return Err(CaptureError::failed(format!(
                "Clip failed: the camera did not deliver {} s of video within {} s (ffmpeg stopped)",
                duration_ms as f64 / 1000.0,
                deadline.as_secs_f64()
            )));
        }
        // Only a `Keep::Head` can overflow; the progress tail never does.
        Err(Stop::TooLarge) => return Err(CaptureError::failed("Clip failed: too much progress output")),
        Err(Stop::Spawn(error)) => {
            return Err(CaptureError::failed(format!("Clip failed: cannot start ffmpeg: {error}")));
        }
    };
    if !finished.status.success() {
        return Err(CaptureError::failed(failure("Clip failed", source, &finished)));
    }
    let read_limit = clip_read_limit(limits.max_clip_bytes);
    let bytes = tokio::task::spawn_blocking(move || clawmcp_fs::read_regular_file(&path, read_limit))
        .await
        .map_err(|e| CaptureError::failed(format!("Clip failed: {e}")))?
        // Past `read_limit` this is an error naming it, not a cut clip.
        .map_err(|e| CaptureError::failed(format!("Clip failed: cannot read the encoded clip: {e}")))?;
    drop(dir);
    let duration_ms = crate::mp4::inspect_mp4(&bytes)
        .map_err(|why| {
            CaptureError::failed(format!("Clip failed: ffmpeg wrote no finished MP4 ({why}; no video arrived?)"))
        })?
        .duration_ms;
    let frames = last_progress_value(&finished.stdout, "frame").unwrap_or(0);
    if frames == 0 {
        return Err(CaptureError::failed("Clip failed: the camera delivered no frame"));
    }
    let truncated = bytes.len() as u64 >= limits.max_clip_bytes;
    Ok(Clip { bytes, duration_ms, frames, truncated })
}

/// How much of `-progress` output is kept: a few blocks of ~250 bytes.
const PROGRESS_TAIL: usize = 4096;
/// How much of stderr is kept for an error message (its end: ffmpeg's last words).
pub(crate) const STDERR_TAIL: usize = 8192;

pub(crate) fn common_args() -> Vec<OsString> {
    ["-hide_banner", "-nostdin", "-loglevel", "error"].map(OsString::from).to_vec()
}

/// The caller's message for an ffmpeg that exited without a result.
fn failure(what: &str, source: &Source, finished: &Finished) -> String {
    failure_message(what, source.device(), &finished.status.to_string(), &finished.stderr)
}

/// `what` failed with ffmpeg's `status` and `stderr`: a busy device is said plainly with who
/// holds it, a permission problem with its fix; anything else quotes ffmpeg's last line.
pub fn failure_message(what: &str, device: Option<&Path>, status: &str, stderr: &str) -> String {
    let said = stderr.lines().map(str::trim).rfind(|line| !line.is_empty()).unwrap_or("");
    let name = device.map_or_else(|| "the source".to_owned(), |d| d.display().to_string());
    if stderr.contains("Device or resource busy") {
        let holders = device.map(super::v4l2::holders).unwrap_or_default();
        let by = match holders.is_empty() {
            true => "another program (not one this user can see)".to_owned(),
            false => holders.iter().map(|h| format!("{} (pid {})", h.name, h.pid)).collect::<Vec<_>>().join(", "),
        };
        return format!("{what}: {name} is busy: it is in use by {by}; close that program and try again");
    }
    if stderr.contains("Permission denied") {
        return format!("{what}: cannot open {name}: {}", super::v4l2::PERMISSION_DENIED);
    }
    match said.is_empty() {
        true => format!("{what}: ffmpeg {status} and produced nothing"),
        false => format!("{what}: ffmpeg {status}: {said}"),
    }
}

/// What a finished ffmpeg left.
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

pub(crate) enum Stop {
    Cancelled,
    TimedOut,
    TooLarge,
    Spawn(std::io::Error),
}

/// What of a stream [`run`] keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Keep {
    /// All of it, up to this many bytes; past that the run stops ([`Stop::TooLarge`]).
    Head(usize),
    /// The last this many bytes, reading on.
    Tail(usize),
}

/// Runs `program` with `args` to its end, keeping what `stdout` says of its output and the
/// tail of stderr. ffmpeg is killed and reaped on cancel, at `deadline`, and past a limit.
async fn run(
    program: &Path,
    args: &[OsString],
    stdout: Keep,
    deadline: Duration,
    cancel: &CancellationToken,
) -> Result<Finished, Stop> {
    run_with_input(program, args, Stdio::null(), stdout, deadline, cancel).await
}

/// [`run`] with `stdin` as the child's standard input (stt.transcribe hands ffmpeg the audio
/// file it opened and checked, so ffmpeg never resolves the caller's path itself).
pub(crate) async fn run_with_input(
    program: &Path,
    args: &[OsString],
    stdin: Stdio,
    stdout: Keep,
    deadline: Duration,
    cancel: &CancellationToken,
) -> Result<Finished, Stop> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(Stop::Spawn)?;
    tracing::debug!(pid = child.id(), "ffmpeg started");
    let (out, err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let outcome = {
        let work = async {
            let (out, err) = tokio::join!(read_capped(out, stdout), read_capped(err, Keep::Tail(STDERR_TAIL)));
            let (stdout, overflowed) = out;
            if overflowed {
                return Err(Stop::TooLarge);
            }
            let status = child.wait().await.map_err(Stop::Spawn)?;
            Ok(Finished { status, stdout, stderr: String::from_utf8_lossy(&err.0).into_owned() })
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Stop::Cancelled),
            () = tokio::time::sleep(deadline) => Err(Stop::TimedOut),
            done = work => done,
        }
    };
    if outcome.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    outcome
}

/// Reads `reader` to its end keeping what `keep` says; `true` when a [`Keep::Head`] overflowed
/// (reading stopped there, so the caller kills the writer).
async fn read_capped(mut reader: impl AsyncRead + Unpin, keep: Keep) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => return (kept, false),
            Ok(n) => {
                kept.extend_from_slice(&buffer[..n]);
                match keep {
                    Keep::Head(limit) if kept.len() > limit => return (kept, true),
                    Keep::Tail(limit) if kept.len() > limit => drop(kept.drain(..kept.len() - limit)),
                    _ => {}
                }
            }
        }
    }
}

/// The last `key=N` of ffmpeg's `-progress` output.
fn last_progress_value(progress: &[u8], key: &str) -> Option<u64> {
    String::from_utf8_lossy(progress)
        .lines()
        .filter_map(|line| line.trim().strip_prefix(key)?.strip_prefix('=')?.trim().parse().ok())
        .next_back()
}

/// Width and height from a PNG's IHDR or a JPEG's start-of-frame marker.
pub fn image_size(bytes: &[u8], format: ImageFormat) -> Option<(u32, u32)> {
    let be32 = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let be16 = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    match format {
        ImageFormat::Png => (bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR"))
            .then(|| Some((be32(16)?, be32(20)?)))?,
        ImageFormat::Jpeg => {
            if !bytes.starts_with(&[0xff, 0xd8]) {
                return None;
            }
            let mut at = 2;
            while at + 4 <= bytes.len() {
                if bytes[at] != 0xff {
                    return None;
                }
                let marker = bytes[at + 1];
                let length = usize::from(be16(at + 2)?);
                // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC).
                if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
                    return Some((u32::from(be16(at + 7)?), u32::from(be16(at + 5)?)));
                }
                at += 2 + length;
            }
            None
        }
    }
}
