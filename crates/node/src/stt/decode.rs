//! Audio in: one ffmpeg run turns an opened file (any format ffmpeg reads) into 16 kHz mono
//! 32-bit float samples, Whisper's input, bounded in time and bytes and killed with the call.
//!
//! ffmpeg gets the file as its standard input, already opened and checked by the caller (inside
//! the file roots, a regular file), and reads it as `/dev/stdin` through its file protocol, so
//! containers that need seeking (an MP4 whose index is at the end) still work and ffmpeg never
//! resolves the caller's path itself. The child and its pipes are the camera pipeline's
//! ([`crate::camera::ffmpeg::run_with_input`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::camera::ffmpeg::{Keep, Stop, common_args, run_with_input};

/// Whisper's sample rate.
pub const SAMPLE_RATE: u32 = 16_000;

/// Decoded audio.
#[derive(Debug, Clone)]
pub struct Samples {
    /// Mono samples in `[-1, 1]` at [`SAMPLE_RATE`].
    pub samples: Vec<f32>,
}

impl Samples {
    pub fn duration_ms(&self) -> u64 {
        self.samples.len() as u64 * 1000 / u64::from(SAMPLE_RATE)
    }
}

/// Why decoding produced nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    Cancelled,
    /// Longer than the `max_ms` asked for: words for the caller.
    TooLong(String),
    Failed(String),
}

/// Decodes `file` to at most `max_ms` of samples; longer audio is refused, not cut, unless
/// `cut` (the caller asked for only the first `max_ms`). `deadline` bounds the whole run.
pub async fn decode(
    ffmpeg: &Path,
    file: std::fs::File,
    max_ms: u64,
    cut: bool,
    deadline: Duration,
    cancel: &CancellationToken,
) -> Result<Samples, DecodeError> {
    let max_samples = max_ms * u64::from(SAMPLE_RATE) / 1000;
    let mut args = common_args();
    args.extend(["-i", "file:/dev/stdin", "-vn"].map(OsString::from));
    // One sample more than allowed tells "longer than the limit" from "exactly the limit". The
    // trim counts samples after the conversion to 16 kHz mono, so it comes last.
    let read_samples = if cut { max_samples } else { max_samples + 1 };
    args.extend([
        "-af".into(),
        format!("aresample={SAMPLE_RATE},aformat=sample_fmts=flt:channel_layouts=mono,atrim=end_sample={read_samples}")
            .into(),
    ]);
    args.extend(["-f", "f32le", "pipe:1"].map(OsString::from));
    let limit = (read_samples * 4) as usize;
    let finished = match run_with_input(ffmpeg, &args, Stdio::from(file), Keep::Head(limit), deadline, cancel).await {
        Ok(finished) => finished,
        Err(Stop::Cancelled) => return Err(DecodeError::Cancelled),
        Err(Stop::TimedOut) => {
            return Err(DecodeError::Failed(format!(
                "Transcribe failed: decoding the audio took longer than {} s (ffmpeg stopped)",
                deadline.as_secs()
            )));
        }
        Err(Stop::TooLarge) => return Err(too_long(max_ms)),
        Err(Stop::Spawn(error)) => {
            return Err(DecodeError::Failed(format!("Transcribe failed: cannot start ffmpeg: {error}")));
        }
    };
    if !finished.status.success() {
        let said = finished.stderr.lines().map(str::trim).rfind(|line| !line.is_empty()).unwrap_or("");
        return Err(DecodeError::Failed(format!(
            "Transcribe failed: ffmpeg cannot read the file as audio ({}): {said}",
            finished.status
        )));
    }
    let samples: Vec<f32> =
        finished.stdout.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    if samples.len() as u64 > max_samples {
        return Err(too_long(max_ms));
    }
    if samples.is_empty() {
        return Err(DecodeError::Failed("Transcribe failed: the file has no audio".to_owned()));
    }
    Ok(Samples { samples })
}

fn too_long(max_ms: u64) -> DecodeError {
    DecodeError::TooLong(format!(
        "Transcribe failed: the audio is longer than {max_ms} ms, the most one call transcribes; pass maxDurationMs \
         to transcribe only its beginning, or split the file"
    ))
}
