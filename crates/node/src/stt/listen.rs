//! `stt.listen`'s voice activity detection: when speech starts in a live stream of samples and
//! when it has ended, fed by [`crate::audio::Capture::listen`] as the samples arrive.
//!
//! The per-frame decision (voice or not, 16 ms frames of 16 kHz audio) is earshot's small
//! neural network (pure Rust, no dependencies; see ARCHITECTURE.md's crate table). This file
//! turns those decisions into a start and an end: speech starts at [`START_FRAMES`] voiced
//! frames in a row (a click or a knock is shorter), and ends once [`HANG`] has passed since
//! the last voiced frame, counting both silent samples and time in which no samples arrived at
//! all (a silent PulseAudio monitor, a muted or suspended source sends nothing).

use std::time::Duration;

use crate::audio::{Heard, LISTEN_RATE};

/// earshot's frame: 256 samples, 16 ms at 16 kHz.
pub const FRAME: usize = 256;
/// A frame whose score is at least this is voiced (earshot's recommended default).
pub const THRESHOLD: f32 = 0.5;
/// Voiced frames in a row that start speech (48 ms).
pub const START_FRAMES: usize = 3;
/// The silence after speech that ends it: long enough for the pauses between words and
/// sentences, short enough that the caller is answered promptly.
pub const HANG: Duration = Duration::from_millis(1000);
/// What is kept before the detected start: the soft onset of the first word, and some silence
/// before it, as a recording of a person speaking has (tiny.en's words vary with where the
/// audio starts; this is the tests' lead silence, a choice, not a measured optimum).
pub const PRE_ROLL_MS: u64 = 1500;

const SAMPLES_PER_MS: usize = LISTEN_RATE as usize / 1000;

/// The detector's state over one listen.
pub struct SpeechDetector {
    vad: Box<earshot::Detector>,
    /// Every sample received, up to `max_samples`.
    heard: Vec<i16>,
    max_samples: usize,
    /// How many of `heard` went through the VAD (whole frames).
    framed: usize,
    voiced_run: usize,
    /// Where speech started (a sample index), once it has.
    speech_start: Option<usize>,
    /// The sample index after the last voiced frame of the speech.
    speech_end: usize,
    /// When samples last arrived (time since the start of the listen).
    last_data: Duration,
}

impl SpeechDetector {
    /// A detector keeping at most `max_ms` of audio (the listen's time limit: a stream cannot
    /// deliver more in that time; anything beyond is ignored).
    pub fn new(max_ms: u64) -> SpeechDetector {
        SpeechDetector {
            vad: earshot::Detector::default_boxed(),
            heard: Vec::new(),
            max_samples: max_ms as usize * SAMPLES_PER_MS,
            framed: 0,
            voiced_run: 0,
            speech_start: None,
            speech_end: 0,
            last_data: Duration::ZERO,
        }
    }

    /// Takes the samples that arrived by `now` (maybe none) and says whether the speech has
    /// ended (speech, then [`HANG`] without voice).
    pub fn push(&mut self, samples: &[i16], now: Duration) -> Heard {
        let room = self.max_samples.saturating_sub(self.heard.len());
        if !samples.is_empty() {
            self.last_data = now;
            self.heard.extend_from_slice(&samples[..samples.len().min(room)]);
        }
        while self.framed + FRAME <= self.heard.len() {
            let frame = &self.heard[self.framed..self.framed + FRAME];
            let voiced = self.vad.predict_i16(frame) >= THRESHOLD;
            self.framed += FRAME;
            if !voiced {
                self.voiced_run = 0;
                continue;
            }
            self.voiced_run += 1;
            if self.speech_start.is_none() && self.voiced_run >= START_FRAMES {
                self.speech_start = Some(self.framed - START_FRAMES * FRAME);
            }
            if self.speech_start.is_some() {
                self.speech_end = self.framed;
            }
        }
        match self.speech_start {
            Some(_) if self.trailing_silence(now) >= HANG => Heard::Enough,
            _ => Heard::More,
        }
    }

    /// The silence since the last voiced frame: silent samples, then time with no samples.
    fn trailing_silence(&self, now: Duration) -> Duration {
        let silent_samples = self.heard.len().saturating_sub(self.speech_end);
        let silent = Duration::from_millis((silent_samples / SAMPLES_PER_MS) as u64);
        silent + now.saturating_sub(self.last_data)
    }

    /// Whether speech has started.
    pub fn heard_speech(&self) -> bool {
        self.speech_start.is_some()
    }

    /// How much audio arrived, in ms.
    pub fn duration_ms(&self) -> u64 {
        (self.heard.len() / SAMPLES_PER_MS) as u64
    }

    /// The speech (from [`PRE_ROLL_MS`] before its start to the end of what was heard) as
    /// Whisper's samples, and where it starts in the listen in ms; `None` if nobody spoke.
    pub fn speech(&self) -> Option<(u64, Vec<f32>)> {
        let start = self.speech_start?.saturating_sub(PRE_ROLL_MS as usize * SAMPLES_PER_MS);
        let samples = self.heard[start..].iter().map(|&sample| f32::from(sample) / 32768.0).collect();
        Some(((start / SAMPLES_PER_MS) as u64, samples))
    }
}
