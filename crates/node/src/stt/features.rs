//! Whisper's input: the log-mel spectrogram, computed as OpenAI's Whisper and faster-whisper
//! compute it, so the model hears what it was trained on and a transcript matches theirs.
//!
//! The details that change words (each was a difference from what the `ct2rs` binding's own
//! front end does): the STFT is centred (the audio reflected 200 samples at each end) with a
//! periodic Hann window of 400 and a hop of 160; the last STFT frame is dropped; the filters are
//! Slaney-style mel filters (librosa's default, area-normalised); and the log spectrum is clamped
//! to 8 (log10 units) below its maximum over the *whole* audio, not each frame's, then scaled as
//! `(x + 4) / 4`. A window shorter than 30 s is padded with zero *features* (faster-whisper's
//! `pad_or_trim`), not with the features of silence.

use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use super::decode::SAMPLE_RATE;

/// Samples per FFT frame (25 ms).
const N_FFT: usize = 400;
/// Samples between frames (10 ms): 100 frames a second.
pub const HOP: usize = 160;
/// Frames in one Whisper window (30 s), what the encoder takes.
pub const WINDOW_FRAMES: usize = 3000;
/// Frequency bins of a real FFT of `N_FFT` samples.
const BINS: usize = N_FFT / 2 + 1;

/// A log-mel spectrogram: `mels` rows of `frames` values, row-major.
pub struct LogMel {
    mels: usize,
    frames: usize,
    values: Vec<f32>,
}

impl LogMel {
    /// Mel bands per frame.
    pub fn mels(&self) -> usize {
        self.mels
    }

    /// Frames that hold audio (faster-whisper's `content_frames`: the padded last one excluded).
    pub fn content_frames(&self) -> usize {
        self.frames.saturating_sub(1)
    }

    /// The `mels` x [`WINDOW_FRAMES`] encoder input for frames `start..start + len` (`len` at
    /// most a window), the rest zero.
    pub fn window(&self, start: usize, len: usize) -> Vec<f32> {
        let len = len.min(WINDOW_FRAMES).min(self.frames.saturating_sub(start));
        let mut window = vec![0.0f32; self.mels * WINDOW_FRAMES];
        for (mel, row) in window.chunks_exact_mut(WINDOW_FRAMES).enumerate() {
            let from = mel * self.frames + start;
            row[..len].copy_from_slice(&self.values[from..from + len]);
        }
        window
    }
}

/// The mel filter bank for `mels` bands: for each band, the first bin it weighs and its weights.
pub struct MelFilters {
    bands: Vec<(usize, Vec<f32>)>,
    fft: Arc<dyn Fft<f32>>,
    hann: Vec<f32>,
}

impl MelFilters {
    /// Slaney-style filters between 0 Hz and the Nyquist frequency, as librosa (and so Whisper)
    /// builds them: 0-1000 Hz linear, above it logarithmic, each triangle normalised by its width.
    pub fn new(mels: usize) -> Self {
        let sample_rate = f64::from(SAMPLE_RATE);
        // Band edges in mel, evenly spaced up to the mel of 8 kHz (45.2456...), then in Hz.
        const MAX_MEL: f64 = 45.245_640_471_924_965;
        const LINEAR_HZ_PER_MEL: f64 = 200.0 / 3.0;
        const LOG_START_HZ: f64 = 1000.0;
        let log_start_mel = LOG_START_HZ / LINEAR_HZ_PER_MEL;
        let log_step = 6.4f64.ln() / 27.0;
        let edges_hz: Vec<f64> = (0..mels + 2)
            .map(|index| {
                let mel = MAX_MEL * index as f64 / (mels + 1) as f64;
                if mel >= log_start_mel {
                    LOG_START_HZ * (log_step * (mel - log_start_mel)).exp()
                } else {
                    LINEAR_HZ_PER_MEL * mel
                }
            })
            .collect();
        let bin_hz: Vec<f64> = (0..BINS).map(|bin| bin as f64 * sample_rate / N_FFT as f64).collect();
        let bands = (0..mels)
            .map(|band| {
                let (low, centre, high) = (edges_hz[band], edges_hz[band + 1], edges_hz[band + 2]);
                let norm = 2.0 / (high - low);
                let weights: Vec<f32> = bin_hz
                    .iter()
                    .map(|&hz| {
                        let rising = (hz - low) / (centre - low);
                        let falling = (high - hz) / (high - centre);
                        (rising.min(falling).max(0.0) * norm) as f32
                    })
                    .collect();
                let first = weights.iter().position(|&weight| weight > 0.0).unwrap_or(0);
                let last = weights.iter().rposition(|&weight| weight > 0.0).map_or(first, |last| last + 1);
                (first, weights[first..last].to_vec())
            })
            .collect();
        // numpy's `hanning(N + 1)[:-1]`: the periodic window, computed in f64 like numpy.
        let hann = (0..N_FFT)
            .map(|index| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * index as f64 / N_FFT as f64).cos()) as f32)
            .collect();
        MelFilters { bands, fft: FftPlanner::new().plan_fft_forward(N_FFT), hann }
    }

    /// The log-mel spectrogram of `samples` (16 kHz mono).
    pub fn log_mel(&self, samples: &[f32]) -> LogMel {
        // faster-whisper appends one hop of silence, then centres the STFT by reflection.
        let padded_len = samples.len() + HOP;
        let sample_at = |index: isize| -> f32 {
            let index = reflect(index, padded_len);
            samples.get(index).copied().unwrap_or(0.0)
        };
        // 1 + (padded + N_FFT - N_FFT) / HOP frames, the last one dropped.
        let frames = padded_len / HOP;
        let mels = self.bands.len();
        let mut values = vec![0.0f32; mels * frames];
        let mut buffer = vec![Complex::new(0.0f32, 0.0); N_FFT];
        let mut scratch = vec![Complex::new(0.0f32, 0.0); self.fft.get_inplace_scratch_len()];
        let mut power = [0.0f32; BINS];
        let half = (N_FFT / 2) as isize;
        for frame in 0..frames {
            let start = (frame * HOP) as isize - half;
            for (offset, (slot, weight)) in buffer.iter_mut().zip(&self.hann).enumerate() {
                *slot = Complex::new(sample_at(start + offset as isize) * weight, 0.0);
            }
            self.fft.process_with_scratch(&mut buffer, &mut scratch);
            for (bin, value) in power.iter_mut().zip(&buffer) {
                *bin = value.norm_sqr();
            }
            for (band, (first, weights)) in self.bands.iter().enumerate() {
                let energy: f32 = weights.iter().zip(&power[*first..]).map(|(w, p)| w * p).sum();
                values[band * frames + frame] = energy.max(1e-10).log10();
            }
        }
        let loudest = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for value in &mut values {
            *value = (value.max(loudest - 8.0) + 4.0) / 4.0;
        }
        LogMel { mels, frames, values }
    }
}

/// numpy's `reflect` padding index: `index` folded into `0..len` by mirroring at both ends
/// (the edge sample not repeated), as often as needed for a short signal.
fn reflect(index: isize, len: usize) -> usize {
    if len <= 1 {
        return 0;
    }
    let period = 2 * (len as isize - 1);
    let folded = index.rem_euclid(period);
    if folded < len as isize { folded as usize } else { (period - folded) as usize }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflection_mirrors_without_repeating_the_edge() {
        let len = 5;
        let mirrored: Vec<usize> = (-6..11).map(|index| reflect(index, len)).collect();
        assert_eq!(mirrored, [2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2]);
        assert_eq!(reflect(-3, 1), 0);
    }

    #[test]
    fn the_filters_are_slaney_triangles_of_unit_area_per_hertz() {
        let filters = MelFilters::new(80);
        assert_eq!(filters.bands.len(), 80);
        // librosa.filters.mel(sr=16000, n_fft=400, n_mels=80): band 0 weighs bin 1 only, with
        // 2 / (edge 2 - edge 0) Hz = 2 / 2 * 0.0248... = 0.024862...; the peaks rise in order.
        let (first, weights) = &filters.bands[0];
        assert_eq!(*first, 1);
        assert!((weights[0] - 0.024_862_59).abs() < 1e-7, "{weights:?}");
        // Every band's triangle integrates (sum of weights times the 40 Hz bin width) to about 1:
        // Slaney normalisation gives each band the same area.
        for (band, (_, weights)) in filters.bands.iter().enumerate() {
            let area: f32 = weights.iter().sum::<f32>() * 40.0;
            assert!((area - 1.0).abs() < 0.1, "band {band}: area {area}");
        }
    }

    #[test]
    fn a_tone_lights_the_band_of_its_frequency_and_silence_sits_at_the_floor() {
        let filters = MelFilters::new(80);
        // 1 s of a 1 kHz tone, then 1 s of silence.
        let mut samples: Vec<f32> = (0..SAMPLE_RATE as usize)
            .map(|index| (2.0 * std::f32::consts::PI * 1000.0 * index as f32 / SAMPLE_RATE as f32).sin() * 0.5)
            .collect();
        samples.extend(std::iter::repeat_n(0.0, SAMPLE_RATE as usize));
        let mel = filters.log_mel(&samples);
        // (32000 + 160) / 160 frames, one of them padding.
        assert_eq!(mel.frames, 201);
        assert_eq!(mel.content_frames(), 200);
        let column = |frame: usize| -> Vec<f32> { (0..80).map(|band| mel.values[band * mel.frames + frame]).collect() };
        let loud = column(50);
        let peak = (0..80).max_by(|&a, &b| loud[a].total_cmp(&loud[b])).unwrap();
        // 1 kHz is mel 15 (the linear region ends there): band edges are 0.5589 mel apart, so
        // the band centred nearest it is index 26 (centre at (26 + 1) * 0.5589 = 15.09).
        assert_eq!(peak, 26, "{loud:?}");
        // The global maximum maps to (max + 4) / 4 and silence to 8 below it: exactly 2 less.
        let top = mel.values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let quiet = column(180);
        for value in quiet {
            assert!((value - (top - 2.0)).abs() < 1e-6, "silence at {value}, top {top}");
        }
        // A window's frames past the audio are zero features, not silence.
        let window = mel.window(150, mel.content_frames() - 150);
        assert_eq!(window.len(), 80 * WINDOW_FRAMES);
        assert_eq!(window[0], mel.values[150]);
        assert_eq!(window[49], mel.values[199]);
        assert_eq!(window[50], 0.0);
        assert_eq!(window[WINDOW_FRAMES], mel.values[mel.frames + 150]);
    }

    /// Values computed by faster-whisper 1.2.1's `FeatureExtractor()(signal)` (numpy) for the
    /// same signals: a 1 kHz tone then silence, and a chirp. Equal to float32 rounding.
    #[test]
    fn the_spectrogram_equals_faster_whispers_value_for_value() {
        let filters = MelFilters::new(80);
        let mut tone: Vec<f32> = (0..16000)
            .map(|index| ((2.0 * std::f64::consts::PI * 1000.0 * f64::from(index) / 16000.0).sin() * 0.5) as f32)
            .collect();
        tone.extend(std::iter::repeat_n(0.0, 16000));
        let chirp: Vec<f32> = (0..8000).map(|index| ((f64::from(index).powi(2) * 2e-5).sin() * 0.3) as f32).collect();
        // (signal, frames, [(band, frame, value)])
        type Case<'a> = (&'a [f32], usize, &'a [(usize, usize, f32)]);
        let cases: [Case; 2] = [
            (
                &tone,
                201,
                &[
                    (26, 50, 1.439_651_7),
                    (26, 100, 1.295_114_8),
                    (10, 100, 0.688_864),
                    (60, 100, 0.135_939_9),
                    (0, 0, 0.799_747_94),
                    (79, 0, 0.098_885_36),
                    (26, 0, 1.127_864),
                    (0, 199, -0.560_348_3),
                ],
            ),
            (
                &chirp,
                51,
                &[
                    (1, 0, 0.825_647_7),
                    (4, 0, 0.011_964_917),
                    (4, 12, 1.308_942_6),
                    (7, 12, 0.600_261_8),
                    (10, 25, 1.318_049_5),
                    (13, 25, 0.406_791_45),
                    (15, 37, 1.331_424_7),
                    (18, 37, 0.584_084_87),
                    (21, 50, 1.169_845_3),
                    (24, 50, 0.884_872_14),
                    (20, 20, -0.652_949_3),
                ],
            ),
        ];
        for (signal, frames, expected) in cases {
            let mel = filters.log_mel(signal);
            assert_eq!(mel.frames, frames);
            for &(band, frame, value) in expected {
                let ours = mel.values[band * mel.frames + frame];
                assert!((ours - value).abs() < 2e-5, "band {band} frame {frame}: {ours}, faster-whisper {value}");
            }
        }
    }
}
