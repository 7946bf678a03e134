//! Whisper through CTranslate2 (the `ct2rs` binding, cargo feature `whisper`).
//!
//! The model is loaded on the first transcription and kept (0.3 s for tiny.en; reloaded if its
//! directory changes, after a `clawmcp models install`). Inference is CPU-bound C++: it runs on
//! a blocking thread, one transcription at a time (CTranslate2 already uses every core for one),
//! in Whisper's 30 s windows, and a cancelled call stops before its next window (a window in
//! progress finishes first: the binding offers no way to interrupt one). Each window that holds
//! words is one segment, timed by where its sound is ([`speech_span`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ct2rs::{Config, Whisper, WhisperOptions};
use tokio::sync::Semaphore;

use super::decode::SAMPLE_RATE;

/// One transcribed stretch of speech.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub text: String,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// Why a transcription produced nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    Cancelled,
    Failed(String),
}

/// The loaded model and the one-at-a-time permit.
pub struct Engine {
    loaded: Mutex<Option<(PathBuf, Arc<Whisper>)>>,
    permit: Arc<Semaphore>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine { loaded: Mutex::new(None), permit: Arc::new(Semaphore::new(1)) }
    }
}

/// Samples per Whisper window (30 s).
const WINDOW: usize = 30 * SAMPLE_RATE as usize;

impl Engine {
    /// Transcribes `samples` (16 kHz mono) with the model in `model_dir`, in `language` (a
    /// primary subtag such as `en`; `None` detects it). Waits for an earlier call to finish.
    pub async fn transcribe(
        self: &Arc<Self>,
        model_dir: &Path,
        samples: Vec<f32>,
        language: Option<String>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Vec<Segment>, EngineError> {
        let permit = tokio::select! {
            permit = self.permit.clone().acquire_owned() => permit.map_err(|e| EngineError::Failed(e.to_string()))?,
            () = cancel.cancelled() => return Err(EngineError::Cancelled),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let work = {
            let (engine, dir, stop) = (self.clone(), model_dir.to_owned(), stop.clone());
            // The permit moves to the thread: released when the inference really ends, even if
            // this call was dropped, so two inferences never overlap.
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                engine.run(&dir, &samples, language.as_deref(), &stop)
            })
        };
        // The blocking thread cannot be aborted: on cancel it is told to stop at the next window.
        let _stopper = StopOnDrop(stop.clone());
        tokio::pin!(work);
        let outcome = tokio::select! {
            done = &mut work => done,
            () = cancel.cancelled() => {
                stop.store(true, Ordering::Relaxed);
                let _ = work.await;
                return Err(EngineError::Cancelled);
            }
        };
        outcome.map_err(|e| EngineError::Failed(format!("Transcribe failed: {e}")))?
    }

    fn model(&self, dir: &Path) -> Result<Arc<Whisper>, EngineError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((at, whisper)) = &*loaded
            && at == dir
        {
            return Ok(whisper.clone());
        }
        let whisper = Whisper::new(dir, Config::default()).map_err(|e| {
            EngineError::Failed(format!("Transcribe failed: cannot load the model in {}: {e:#}", dir.display()))
        })?;
        let whisper = Arc::new(whisper);
        *loaded = Some((dir.to_owned(), whisper.clone()));
        Ok(whisper)
    }

    fn run(
        &self,
        dir: &Path,
        samples: &[f32],
        language: Option<&str>,
        stop: &AtomicBool,
    ) -> Result<Vec<Segment>, EngineError> {
        let whisper = self.model(dir)?;
        let options = WhisperOptions::default();
        let mut segments = Vec::new();
        for (index, window) in samples.chunks(WINDOW).enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Err(EngineError::Cancelled);
            }
            let offset_ms = (index * WINDOW) as u64 * 1000 / u64::from(SAMPLE_RATE);
            // Without timestamps: with them, this binding's prompt for an English-only model (it
            // adds the language and task tokens such a model was not trained with) makes tiny.en
            // stop after its first timestamp token, so `generate_segments` answers empty text.
            let texts = whisper
                .generate(window, language, false, &options)
                .map_err(|e| EngineError::Failed(format!("Transcribe failed: {e:#}")))?;
            let text =
                texts.iter().map(|text| text.trim()).filter(|text| !text.is_empty()).collect::<Vec<_>>().join(" ");
            if text.is_empty() {
                continue;
            }
            let window_ms = window.len() as u64 * 1000 / u64::from(SAMPLE_RATE);
            let (start_ms, end_ms) = speech_span(window).unwrap_or((0, window_ms));
            segments.push(Segment { text, start_ms: offset_ms + start_ms, end_ms: offset_ms + end_ms });
        }
        Ok(segments)
    }
}

/// Where in `window` there is sound: from the first to the last 10 ms frame whose RMS is within
/// 30 dB of the loudest frame's (and above -60 dBFS), in ms. `None` for silence. A segment's
/// times are this span of its window (at most 30 s): Whisper without timestamps says what was
/// said in a window, not when.
fn speech_span(window: &[f32]) -> Option<(u64, u64)> {
    const FRAME: usize = SAMPLE_RATE as usize / 100;
    let rms: Vec<f32> = window
        .chunks(FRAME)
        .map(|frame| (frame.iter().map(|s| s * s).sum::<f32>() / frame.len() as f32).sqrt())
        .collect();
    let loudest = rms.iter().copied().fold(0.0f32, f32::max);
    let threshold = (loudest * 0.031_6).max(0.001);
    let first = rms.iter().position(|&level| level > threshold)?;
    let last = rms.iter().rposition(|&level| level > threshold)?;
    Some((first as u64 * 10, ((last as u64 + 1) * 10).min(window.len() as u64 * 1000 / u64::from(SAMPLE_RATE))))
}

/// Tells a running transcription to stop when the call's future is dropped (the client went
/// away without a cancel).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
