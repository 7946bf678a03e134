//! The node's audio I/O: playing a WAV to the default sink of the user's sound server, and
//! recording from a source, into a file ([`Capture::record`]) or as a stream of samples handed
//! to a listener as they arrive ([`Capture::listen`], `stt.listen`). Both go through PulseAudio's native
//! protocol, which PipeWire serves too (`pipewire-pulse`), so one client covers both servers.
//!
//! The client is pulseaudio-utils' `paplay` / `pactl` / `parecord`, one child per call run by
//! `clawmcp_process::run`, rather than a libpulse binding in-process: killing the child stops
//! its stream at once and releases everything it held (cancellation, `interrupt`, a time limit
//! are all "kill the tree"), a wedged server can never block a runtime thread, and the build
//! needs no libpulse headers. The cost is one process start (a few ms) per utterance.
//!
//! Every step is bounded in time: [`Playback`]'s check of the server and its default sink, and
//! the playback itself (the sound's length plus an allowance). A server that is not there, a
//! sink that is muted or missing, and a sink that never drains each give a clear error that says
//! what to do (see [`AudioError`]), never a hang.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clawmcp_process::{Launch, ProcessError};
use tokio_util::sync::CancellationToken;

use crate::availability::MissingBackend;

/// The Debian package of the sound server's command-line clients.
pub const CLIENT_PACKAGE: &str = "pulseaudio-utils";
/// How long the server check may take (a local socket round trip; a wedged server fails it).
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(5);
/// How much longer than the sound itself a playback may take (connecting, the sink's latency,
/// draining) before it is stopped as stalled.
pub const PLAYBACK_ALLOWANCE: Duration = Duration::from_secs(10);

/// A WAV file's facts, read from its header (hound), bounded in size.
#[derive(Debug, Clone, PartialEq)]
pub struct WavInfo {
    pub sample_rate: u32,
    pub channels: u16,
    pub frames: u32,
}

impl WavInfo {
    /// Reads the header of the WAV at `path`.
    pub fn read(path: &Path) -> Result<WavInfo, String> {
        let reader = hound::WavReader::open(path).map_err(|e| format!("not a WAV file ({e})"))?;
        let spec = reader.spec();
        Ok(WavInfo { sample_rate: spec.sample_rate, channels: spec.channels, frames: reader.duration() })
    }

    pub fn duration(&self) -> Duration {
        match self.sample_rate {
            0 => Duration::ZERO,
            rate => Duration::from_secs_f64(f64::from(self.frames) / f64::from(rate)),
        }
    }
}

/// Which sound server a client talks to: the node's environment (`PULSE_SERVER`, else the
/// user's runtime socket), or one named explicitly (a test's private server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SoundServer {
    /// A `PULSE_SERVER` value (`unix:/run/user/1000/pulse/native`); `None`: the environment's.
    pub address: Option<String>,
}

impl SoundServer {
    /// Where the clients will connect, in words for an error.
    pub fn describe(&self) -> String {
        if let Some(address) = self.address.clone().or_else(|| std::env::var("PULSE_SERVER").ok()) {
            return address;
        }
        match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(dir) => format!("unix:{}", Path::new(&dir).join("pulse/native").display()),
            None => "the default socket (XDG_RUNTIME_DIR is unset)".to_owned(),
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        self.address.iter().map(|address| ("PULSE_SERVER".to_owned(), address.clone())).collect()
    }
}

/// Why a playback or a recording did not happen (each message says what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudioError {
    /// The call's cancellation (or an interrupt) stopped it; nothing is playing.
    Cancelled,
    /// The client programs are not installed.
    Missing(MissingBackend),
    /// No server answers at that address.
    NoServer(String),
    /// The server has no default sink (or source).
    NoDevice(String),
    /// The default sink is muted: the sound would go nowhere.
    Muted,
    /// It did not finish in time and was stopped.
    Stalled(Duration),
    /// Anything else the client said.
    Failed(String),
}

impl std::fmt::Display for AudioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AudioError::Cancelled => write!(f, "playback was stopped"),
            AudioError::Missing(missing) => write!(f, "playback needs pulseaudio-utils: {missing}"),
            AudioError::NoServer(at) => {
                write!(
                    f,
                    "no PulseAudio/PipeWire server at {at}; start one (your desktop session's, or `pulseaudio --start`) or use play:false to get the audio back"
                )
            }
            AudioError::NoDevice(what) => write!(f, "{what}; add an output device (or a null sink) or use play:false"),
            AudioError::Muted => write!(
                f,
                "the default audio sink is muted; unmute it (pactl set-sink-mute @DEFAULT_SINK@ 0) or use play:false"
            ),
            AudioError::Stalled(limit) => write!(
                f,
                "playback did not finish within {:.1} s (the default sink may be suspended or stuck: `pactl \
                 suspend-sink @DEFAULT_SINK@ 0` resumes it) and was stopped; or use play:false",
                limit.as_secs_f64()
            ),
            AudioError::Failed(message) => write!(f, "{message}"),
        }
    }
}

/// What the clients' stderr says, as an [`AudioError`].
fn client_error(server: &SoundServer, program: &str, stderr: &str) -> AudioError {
    let said = stderr.trim();
    if said.contains("Connection refused")
        || said.contains("No such file or directory")
        || said.contains("Connection failure")
        || said.contains("Connection terminated")
    {
        return AudioError::NoServer(server.describe());
    }
    if said.contains("No such entity") {
        return AudioError::NoDevice("the sound server has no default sink".to_owned());
    }
    let said = said.lines().last().unwrap_or("no message");
    AudioError::Failed(format!("{program} failed: {said}"))
}

/// Runs one client program to its end, bounded by `timeout` and `cancel`.
async fn run_client(
    server: &SoundServer,
    argv: Vec<String>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<String, AudioError> {
    let env = server.env();
    let launch = Launch { argv: &argv, cwd: None, env_overrides: &env, passed_fds: &[] };
    let outcome = match clawmcp_process::run(launch, timeout, cancel).await {
        Ok(outcome) => outcome,
        Err(ProcessError::Cancelled) => return Err(AudioError::Cancelled),
        Err(e) => return Err(AudioError::Failed(e.to_string())),
    };
    if outcome.timed_out {
        return Err(AudioError::Stalled(timeout));
    }
    if outcome.exit_code != 0 {
        return Err(client_error(server, &argv[0], &outcome.stderr.text));
    }
    Ok(outcome.stdout.text)
}

/// Plays WAV files to the default sink of one sound server.
#[derive(Debug, Clone)]
pub struct Playback {
    pub server: SoundServer,
    /// How much longer than the sound a playback may take ([`PLAYBACK_ALLOWANCE`]).
    pub allowance: Duration,
}

impl Default for Playback {
    fn default() -> Self {
        Playback { server: SoundServer::default(), allowance: PLAYBACK_ALLOWANCE }
    }
}

impl Playback {
    pub fn to(server: SoundServer) -> Playback {
        Playback { server, ..Playback::default() }
    }
}

impl Playback {
    /// Whether the client programs are installed (a `PATH` lookup; the server is learnt by use).
    pub fn installed() -> Result<(PathBuf, PathBuf), MissingBackend> {
        Ok((MissingBackend::program("paplay", CLIENT_PACKAGE)?, MissingBackend::program("pactl", CLIENT_PACKAGE)?))
    }

    /// The server answers, has a default sink, and the sink is not muted.
    pub async fn check(&self, cancel: &CancellationToken) -> Result<(), AudioError> {
        let (_, pactl) = Playback::installed().map_err(AudioError::Missing)?;
        let argv = vec![pactl.to_string_lossy().into_owned(), "get-sink-mute".to_owned(), "@DEFAULT_SINK@".to_owned()];
        let answer = run_client(&self.server, argv, PREFLIGHT_TIMEOUT, cancel).await.map_err(|e| match e {
            AudioError::Stalled(_) => AudioError::NoServer(format!("{} (it did not answer)", self.server.describe())),
            other => other,
        })?;
        match answer.trim() {
            "Mute: yes" => Err(AudioError::Muted),
            _ => Ok(()),
        }
    }

    /// Plays `wav` (of `length`) to the default sink and returns once it has drained. Stopped at
    /// once by `cancel`; stopped as stalled after `length` + [`Playback::allowance`] (a sink
    /// suspended by the user, say, takes the stream and never plays it).
    pub async fn play(&self, wav: &Path, length: Duration, cancel: &CancellationToken) -> Result<(), AudioError> {
        self.check(cancel).await?;
        self.play_checked(wav, length, cancel).await
    }

    /// [`Playback::play`] after the caller ran [`Playback::check`] itself (`tts.speak` runs it
    /// while the speech is synthesised, so the check adds nothing to the time to first sound).
    pub async fn play_checked(
        &self,
        wav: &Path,
        length: Duration,
        cancel: &CancellationToken,
    ) -> Result<(), AudioError> {
        let (paplay, _) = Playback::installed().map_err(AudioError::Missing)?;
        let argv = vec![paplay.to_string_lossy().into_owned(), wav.to_string_lossy().into_owned()];
        run_client(&self.server, argv, length + self.allowance, cancel).await.map(drop)
    }
}

/// The latency every recording asks the server for. parecord's default (about 2 s) loses sound
/// at both ends: the server hands samples over in 2 s blocks, so the block not yet handed over
/// when the recorder is stopped is gone; and a monitor that starts with a new playback stream
/// dropped that stream's first 1.7 s (measured on a null sink: a 1.5 s pre-roll and the
/// sentence's first word missing from the file, complete with this setting).
const RECORD_LATENCY: &str = "--latency-msec=30";

/// Records from a source of one sound server. A recording is `parecord --file-format=wav` into a
/// private file for at most `duration`, stopped early by `cancel`; or, for [`Capture::listen`],
/// raw 16 kHz mono samples read as they arrive. The same errors as [`Playback`] (no server, no
/// default source).
#[derive(Debug, Clone, Default)]
pub struct Capture {
    pub server: SoundServer,
    /// A source name (`nullsink.monitor`); `None`: the server's default source.
    pub source: Option<String>,
}

impl Capture {
    /// Records `duration` of sound into `into` (a WAV file). The recording ends when the time
    /// is up (parecord is stopped and closes the file); cancelling stops it with no result. The
    /// answer is the recording's header (how much was heard: a silent monitor sends nothing).
    pub async fn record(
        &self,
        into: &Path,
        duration: Duration,
        cancel: &CancellationToken,
    ) -> Result<WavInfo, AudioError> {
        let parecord = MissingBackend::program("parecord", CLIENT_PACKAGE).map_err(AudioError::Missing)?;
        let mut argv =
            vec![parecord.to_string_lossy().into_owned(), "--file-format=wav".to_owned(), RECORD_LATENCY.to_owned()];
        if let Some(source) = &self.source {
            argv.push(format!("--device={source}"));
        }
        argv.push(into.to_string_lossy().into_owned());
        match run_client(&self.server, argv, duration, cancel).await {
            // The time limit is how a recording ends: parecord closes the file on SIGTERM.
            Ok(_) | Err(AudioError::Stalled(_)) => {}
            Err(e) => return Err(e),
        }
        WavInfo::read(into).map_err(|e| AudioError::Failed(format!("the recording is unreadable: {e}")))
    }
}

/// The sample rate [`Capture::listen`] asks the server for (Whisper's and the VAD's).
pub const LISTEN_RATE: u32 = 16_000;
/// How often [`Capture::listen`] looks for new samples and asks its listener whether to stop.
pub const LISTEN_POLL: Duration = Duration::from_millis(20);

/// What a [`Capture::listen`] listener answers after each look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// Keep recording.
    More,
    /// Enough: stop the recorder now.
    Enough,
}

/// How a [`Capture::listen`] ended (a cancel is [`AudioError::Cancelled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenEnd {
    /// The listener said [`Heard::Enough`].
    Enough,
    /// The time limit passed first.
    TimedOut,
}

impl Capture {
    /// Records until `listener` says [`Heard::Enough`] or `limit` has passed (wall-clock: a
    /// silent monitor sends no data at all, and the call still ends on time), whichever first;
    /// `cancel` stops it with no result. Every [`LISTEN_POLL`] the listener gets the samples
    /// (16 kHz mono, 16-bit) that arrived since the last look (often none) and the time since
    /// the start. However it ends, the recorder's whole tree is gone when this returns.
    ///
    /// parecord writes raw samples into `raw` (a file in a private directory), which is read
    /// as it grows: [`clawmcp_process::run`] owns the child (a time limit and a kill that stop
    /// its tree), and a file needs no second pipe reader beside it. [`RECORD_LATENCY`] makes
    /// the server hand over samples every few tens of ms instead of its default of about 2 s.
    pub async fn listen(
        &self,
        raw: &Path,
        limit: Duration,
        cancel: &CancellationToken,
        mut listener: impl FnMut(&[i16], Duration) -> Heard,
    ) -> Result<ListenEnd, AudioError> {
        use std::io::Read;
        let parecord = MissingBackend::program("parecord", CLIENT_PACKAGE).map_err(AudioError::Missing)?;
        let mut argv = vec![parecord.to_string_lossy().into_owned()];
        argv.extend(
            ["--raw", "--format=s16le", "--channels=1", RECORD_LATENCY]
                .map(String::from)
                .into_iter()
                .chain([format!("--rate={LISTEN_RATE}")]),
        );
        if let Some(source) = &self.source {
            argv.push(format!("--device={source}"));
        }
        argv.push(raw.to_string_lossy().into_owned());
        // Created (empty) before parecord starts, so the reader can open it at once.
        std::fs::File::create(raw).map_err(|e| AudioError::Failed(format!("cannot create {}: {e}", raw.display())))?;
        let mut file =
            std::fs::File::open(raw).map_err(|e| AudioError::Failed(format!("cannot read {}: {e}", raw.display())))?;
        // Stopping the recorder ourselves (the listener had enough, the time is up) is the
        // child's cancellation; the caller's cancel reaches it through the parent token.
        let stop = cancel.child_token();
        let recorder = run_client(&self.server, argv, limit + PREFLIGHT_TIMEOUT, &stop);
        tokio::pin!(recorder);
        let started = tokio::time::Instant::now();
        let mut ticks = tokio::time::interval(LISTEN_POLL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut bytes, mut samples, mut chunk) = (Vec::new(), Vec::new(), vec![0u8; 64 << 10]);
        let mut ended = None;
        loop {
            tokio::select! {
                outcome = &mut recorder => {
                    return match (outcome, ended) {
                        _ if cancel.is_cancelled() => Err(AudioError::Cancelled),
                        (Err(AudioError::Cancelled), Some(end)) => Ok(end),
                        (Err(e), _) => Err(e),
                        (Ok(_), _) => Err(AudioError::Failed("parecord stopped recording by itself".to_owned())),
                    };
                }
                _ = ticks.tick(), if ended.is_none() => {
                    loop {
                        match file.read(&mut chunk) {
                            Ok(0) => break,
                            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(AudioError::Failed(format!("cannot read the recording: {e}"))),
                        }
                    }
                    let whole = bytes.len() / 2 * 2;
                    samples.clear();
                    samples.extend(bytes[..whole].chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])));
                    bytes.drain(..whole);
                    let elapsed = started.elapsed();
                    if listener(&samples, elapsed) == Heard::Enough {
                        ended = Some(ListenEnd::Enough);
                    } else if elapsed >= limit {
                        ended = Some(ListenEnd::TimedOut);
                    }
                    if ended.is_some() {
                        stop.cancel();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
