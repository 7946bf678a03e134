//! Whisper through CTranslate2 (the `ct2rs` binding, cargo feature `whisper`).
//!
//! The model is loaded on the first transcription and kept (0.3 s for tiny.en; reloaded if its
//! directory changes, after a `clawmcp models install`). Inference is CPU-bound C++: it runs on
//! a blocking thread, one transcription at a time (CTranslate2 already uses every core for one),
//! in Whisper's 30 s windows, and a cancelled call stops before its next window (a window in
//! progress finishes first: the binding offers no way to interrupt one). Each window that holds
//! words is one segment, timed by where its sound is ([`speech_span`]).
//!
//! The binding's high-level `Whisper` is not used: its spectrogram differs from the one Whisper
//! was trained on ([`super::features`] says how) and its prompt gives an English-only model the
//! language and task tokens it never saw (tiny.en then drops or changes words, and stops at its
//! first timestamp). This file decodes as faster-whisper does: the features, the prompt
//! (`<|startoftranscript|>`, the language and task only for a multilingual model,
//! `<|notimestamps|>`, the previous windows' words after `<|startofprev|>`), beam 5.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ct2rs::Tokenizer as _;
use ct2rs::sys::{StorageView, Whisper};
use ct2rs::tokenizers::hf;
use ct2rs::{Config, WhisperOptions};
use tokio::sync::Semaphore;

use super::decode::SAMPLE_RATE;
use super::features::{HOP, MelFilters, WINDOW_FRAMES};

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

/// A loaded model: the network, its tokenizer, the filter bank for its mel count.
struct Model {
    whisper: Whisper,
    tokenizer: hf::Tokenizer,
    filters: MelFilters,
}

/// The loaded model and the one-at-a-time permit.
pub struct Engine {
    loaded: Mutex<Option<(PathBuf, Arc<Model>)>>,
    permit: Arc<Semaphore>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine { loaded: Mutex::new(None), permit: Arc::new(Semaphore::new(1)) }
    }
}

/// At most this many of the previous windows' tokens prompt the next one (faster-whisper's
/// `max_length // 2 - 1`).
const MAX_PREVIOUS_TOKENS: usize = 223;

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

    fn model(&self, dir: &Path) -> Result<Arc<Model>, EngineError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((at, model)) = &*loaded
            && at == dir
        {
            return Ok(model.clone());
        }
        let cannot_load = |e: anyhow::Error| {
            EngineError::Failed(format!("Transcribe failed: cannot load the model in {}: {e:#}", dir.display()))
        };
        let whisper = Whisper::new(dir, Config::default()).map_err(cannot_load)?;
        let tokenizer = hf::Tokenizer::new(dir).map_err(cannot_load)?;
        let filters = MelFilters::new(whisper.n_mels());
        let model = Arc::new(Model { whisper, tokenizer, filters });
        *loaded = Some((dir.to_owned(), model.clone()));
        Ok(model)
    }

    fn run(
        &self,
        dir: &Path,
        samples: &[f32],
        language: Option<&str>,
        stop: &AtomicBool,
    ) -> Result<Vec<Segment>, EngineError> {
        let failed = |e: anyhow::Error| EngineError::Failed(format!("Transcribe failed: {e:#}"));
        let model = self.model(dir)?;
        let mel = model.filters.log_mel(samples);
        // faster-whisper's defaults: beam 5, patience 1, the model's suppressed tokens.
        let options = WhisperOptions::default();
        let mut previous: Vec<String> = Vec::new();
        let mut segments = Vec::new();
        let mut seek = 0;
        while seek < mel.content_frames() {
            if stop.load(Ordering::Relaxed) {
                return Err(EngineError::Cancelled);
            }
            let frames = (mel.content_frames() - seek).min(WINDOW_FRAMES);
            let mut window = mel.window(seek, frames);
            let features =
                StorageView::new(&[1, mel.mels(), WINDOW_FRAMES], &mut window, Default::default()).map_err(failed)?;
            // A multilingual model is told the language (or finds it out) once per window, from
            // the encoder's output, which generation then reuses.
            let (input, language_token) = if model.whisper.is_multilingual() {
                let encoded = model.whisper.encode(&features, false).map_err(failed)?;
                let token = match language {
                    Some(language) => format!("<|{language}|>"),
                    None => model
                        .whisper
                        .detect_language(&encoded)
                        .map_err(failed)?
                        .into_iter()
                        .next()
                        .and_then(|ranked| ranked.into_iter().next())
                        .map(|best| best.language)
                        .ok_or_else(|| EngineError::Failed("Transcribe failed: no language detected".into()))?,
                };
                (Some(encoded), Some(token))
            } else {
                (None, None)
            };
            let prompt = prompt(&previous, language_token.as_deref());
            let results =
                model.whisper.generate(input.as_ref().unwrap_or(&features), &[prompt], &options).map_err(failed)?;
            let tokens =
                results.into_iter().next().and_then(|result| result.sequences.into_iter().next()).unwrap_or_default();
            let text = model.tokenizer.decode(tokens.clone()).map_err(failed)?.trim().to_owned();
            previous.extend(tokens);
            let start = seek * HOP;
            let window_samples = &samples[start.min(samples.len())..((seek + frames) * HOP).min(samples.len())];
            seek += frames;
            if text.is_empty() {
                continue;
            }
            let offset_ms = start as u64 * 1000 / u64::from(SAMPLE_RATE);
            let window_ms = window_samples.len() as u64 * 1000 / u64::from(SAMPLE_RATE);
            let (start_ms, end_ms) = speech_span(window_samples).unwrap_or((0, window_ms));
            segments.push(Segment { text, start_ms: offset_ms + start_ms, end_ms: offset_ms + end_ms });
        }
        Ok(segments)
    }
}

/// faster-whisper's prompt without timestamps: the last words heard (so a sentence cut by a
/// window boundary reads on), the start of transcript, the language and task for a
/// multilingual model only (an English-only model was trained without them), no timestamps.
fn prompt<'a>(previous: &'a [String], language_token: Option<&'a str>) -> Vec<&'a str> {
    let mut prompt = Vec::new();
    if !previous.is_empty() {
        prompt.push("<|startofprev|>");
        prompt.extend(previous[previous.len().saturating_sub(MAX_PREVIOUS_TOKENS)..].iter().map(String::as_str));
    }
    prompt.push("<|startoftranscript|>");
    if let Some(language_token) = language_token {
        prompt.extend([language_token, "<|transcribe|>"]);
    }
    prompt.push("<|notimestamps|>");
    prompt
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
