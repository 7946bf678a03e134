//! `tts.speak` and `tts.status`: speech output (category `tts`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`providers`] | the engines (piper, espeak-ng, speech-dispatcher), their readiness and one synthesis |
//! | [`queue`] | the one speaker: utterances in order, bounded, `interrupt` |
//! | this file | arguments (upstream's names and limits), provider choice, the answers |
//!
//! Provider choice is upstream's: the requested `provider`, else the configured one
//! (`NodeTtsProvider`), else the best ready one ([`providers::BEST_FIRST`]). A request is strict
//! (not ready: an error saying why); a configured provider that is not ready falls back to the
//! best ready one and the answer says `fellBack: true`.
//!
//! Speech is played to the default sink of the user's PulseAudio/PipeWire server
//! ([`crate::audio::Playback`]); `play: false` returns it instead, as an MCP `audio` block
//! (WAV) and, to the gateway, as `audioBase64` in the payload — for headless hosts and for
//! agents that pass the audio on. No switch: speaking discloses nothing about the machine (it is
//! not sensing), so the commands are served whenever an engine is installed; the gate only asks
//! for one.

pub mod providers;
mod queue;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::codes::UNAVAILABLE;
use clawmcp_mcp::{CallContext, Content, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use self::providers::{Environment, Provider, ProviderStatus, SpeakError, Utterance};
use self::queue::{Refused, Speaker};
use crate::audio::{AudioError, Playback, WavInfo};
use crate::availability::{Gate, MissingBackend};
use crate::capability::{Capability, Command, CommandSpec, InvokeRequest};
use crate::settings::LiveSettings;

/// Upstream's limit on `text`, in characters after trimming.
pub const MAX_TEXT_CHARS: usize = 5000;
/// The largest WAV `play:false` returns (5000 characters of espeak-ng are about 4.5 minutes of
/// 22 kHz mono speech, 11.7 MB), as camera clips: its base64 must fit an MCP answer and a
/// gateway frame. Played speech is not held in memory, so it has no such limit.
pub const MAX_AUDIO_BYTES: u64 = 16 << 20;
/// What every answer's audio is.
pub const CONTENT_TYPE: &str = "audio/wav";

/// The `tts` capability.
pub struct TtsCapability {
    commands: Vec<Command>,
}

/// Where the capability finds its engines and its sound server.
#[derive(Debug, Clone)]
pub struct Config {
    pub environment: Environment,
    pub playback: Playback,
    /// Where each synthesis's private directory is made (`None`: the system temp dir).
    pub temp_root: Option<PathBuf>,
    /// The largest WAV returned by `play:false` ([`MAX_AUDIO_BYTES`]; tests set their own edge).
    pub max_audio_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            environment: Environment::default(),
            playback: Playback::default(),
            temp_root: None,
            max_audio_bytes: MAX_AUDIO_BYTES,
        }
    }
}

struct State {
    settings: Arc<LiveSettings>,
    config: Config,
    speaker: Speaker,
}

impl TtsCapability {
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        TtsCapability::with_config(settings, Config::default())
    }

    pub fn with_config(settings: Arc<LiveSettings>, config: Config) -> Self {
        let environment = config.environment.clone();
        let gate = Gate::new(settings.clone(), None, move || any_ready(&environment));
        let state = Arc::new(State { settings, config, speaker: Speaker::default() });
        let speak = speak_spec().with_output_handler({
            let (gate, state) = (gate.clone(), state.clone());
            move |request, ctx| {
                let (gate, state) = (gate.clone(), state.clone());
                async move {
                    gate.admit("tts.speak")?;
                    speak(&state, request, ctx).await
                }
            }
        });
        let status = status_spec().with_handler({
            let (gate, state) = (gate.clone(), state);
            move |_request, _ctx| {
                let (gate, state) = (gate.clone(), state.clone());
                async move {
                    gate.admit("tts.status")?;
                    Ok(status(&state))
                }
            }
        });
        TtsCapability { commands: vec![gate.apply(speak), gate.apply(status)] }
    }
}

impl Capability for TtsCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

/// The gate's probe: some provider is ready. Missing, it names the one that is always possible.
fn any_ready(environment: &Environment) -> Result<(), MissingBackend> {
    let statuses = environment.statuses();
    match statuses.iter().any(ProviderStatus::is_ready) {
        true => Ok(()),
        false => Err(MissingBackend::new(
            "no speech engine is ready (espeak-ng is not installed; piper and speech-dispatcher are not ready either)",
            "install it: apt install espeak-ng",
        )),
    }
}

fn speak_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "tts.speak",
        title: Some("Speak text"),
        description: Some(
            "Speak text aloud on this machine's default audio output (PulseAudio or PipeWire). text (required, at most \
             5000 characters); provider piper, espeak-ng or speech-dispatcher (default: the configured \
             NodeTtsProvider, else the best ready one; tts.status says which are ready); voiceId (an espeak-ng voice \
             such as en-us, or a piper voice such as en_US-joe-medium); interrupt true stops what is speaking and \
             queued first (otherwise utterances queue, at most 8 waiting); play false returns the speech as a WAV \
             audio block instead of playing it (piper and espeak-ng only). Returns {spoken, played, provider, \
             requestedProvider, fellBack, contentType, durationMs} once the speech has finished.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "What to say (trimmed; 1..5000 characters)."},
                    "provider": {"type": "string", "description": "piper, espeak-ng or speech-dispatcher (any case)."},
                    "voiceId": {"type": "string", "description": "A voice of the provider (espeak-ng: en-us, de, ...; piper: a voice model's name)."},
                    "model": {"type": "string", "description": "Accepted for upstream compatibility; no Linux provider has models, so it is ignored."},
                    "interrupt": {"type": "boolean", "default": false, "description": "Stop the utterance in progress (and the queued ones) first."},
                    "play": {"type": "boolean", "default": true, "description": "false: return the audio (WAV) instead of playing it."}
                },
                "required": ["text"],
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: None,
        annotations: ToolAnnotations::ADDITIVE,
    }
    });
    SPEC.clone()
}

fn status_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| {
        CommandSpec {
        name: "tts.status",
        title: Some("Speech status"),
        description: Some(
            "Which text-to-speech providers this machine has and which tts.speak would use. Takes no arguments. \
             Returns {configuredProvider, effectiveProvider, willFallBack, speaking, queued, providers: [{provider, \
             readiness (ready, needs-voice or unavailable), isReady, reason}]}.",
        ),
        input_schema: Some(json!({"type": "object", "properties": {}, "additionalProperties": false}).into()),
        output_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "configuredProvider": {"type": ["string", "null"]},
                    "effectiveProvider": {"type": ["string", "null"], "enum": ["piper", "espeak-ng", "speech-dispatcher", null]},
                    "willFallBack": {"type": "boolean"},
                    "speaking": {"type": "boolean"},
                    "queued": {"type": "integer", "minimum": 0},
                    "providers": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "provider": {"type": "string", "enum": ["piper", "espeak-ng", "speech-dispatcher"]},
                                "readiness": {"type": "string", "enum": ["ready", "needs-voice", "unavailable"]},
                                "isReady": {"type": "boolean"},
                                "reason": {"type": "string"}
                            },
                            "required": ["provider", "readiness", "isReady", "reason"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["configuredProvider", "effectiveProvider", "willFallBack", "speaking", "queued", "providers"],
                "additionalProperties": false
            })
            .into(),
        ),
        annotations: ToolAnnotations::READ_ONLY,
    }
    });
    SPEC.clone()
}

fn unavailable(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(message).with_code(UNAVAILABLE)
}

/// `tts.speak`'s arguments, checked as upstream does.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SpeakArgs {
    text: String,
    provider: Option<Provider>,
    /// The `provider` as sent, lower-cased (upstream's `requestedProvider`).
    requested: Option<String>,
    voice: Option<String>,
    interrupt: bool,
    play: bool,
}

fn optional_string<'a>(args: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ToolFailure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim()).filter(|text| !text.is_empty())),
        Some(_) => Err(ToolFailure::invalid_request(format!("{key} must be a string"))),
    }
}

fn flag(args: &Map<String, Value>, key: &str, default: bool) -> Result<bool, ToolFailure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(ToolFailure::invalid_request(format!("{key} must be true or false"))),
    }
}

impl SpeakArgs {
    fn parse(args: &Map<String, Value>) -> Result<SpeakArgs, ToolFailure> {
        let text =
            optional_string(args, "text")?.ok_or_else(|| ToolFailure::invalid_request("Missing required text"))?;
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(ToolFailure::invalid_request(format!("TTS text exceeds {MAX_TEXT_CHARS} characters.")));
        }
        let requested = optional_string(args, "provider")?.map(str::to_ascii_lowercase);
        let provider = requested.as_deref().map(Provider::parse).transpose().map_err(ToolFailure::invalid_request)?;
        let voice = optional_string(args, "voiceId")?.map(str::to_owned);
        if let Some(voice) = &voice {
            providers::check_voice(voice).map_err(ToolFailure::invalid_request)?;
        }
        optional_string(args, "model")?;
        Ok(SpeakArgs {
            text: text.to_owned(),
            provider,
            requested,
            voice,
            interrupt: flag(args, "interrupt", false)?,
            play: flag(args, "play", true)?,
        })
    }
}

/// Which provider speaks, and whether that is a fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Choice {
    status: ProviderStatus,
    fell_back: bool,
}

/// Upstream's resolution: requested (strict), else configured (falls back when not ready), else
/// the best ready one. `needs_audio`: only providers that return audio qualify (`play:false`).
fn choose(
    statuses: &[ProviderStatus],
    requested: Option<Provider>,
    configured: Option<&str>,
    needs_audio: bool,
) -> Result<Choice, ToolFailure> {
    let status_of = |provider: Provider| statuses.iter().find(|status| status.provider == provider).cloned();
    if let Some(provider) = requested {
        let status = status_of(provider).expect("every provider has a status");
        if needs_audio && !provider.returns_audio() {
            return Err(ToolFailure::invalid_request(format!(
                "{} plays on its own audio output and cannot return audio; use play:true, or provider espeak-ng or piper \
                 for play:false",
                provider.id()
            )));
        }
        if !status.is_ready() {
            return Err(unavailable(format!(
                "TTS speak not available: {} is not ready: {}",
                provider.id(),
                status.reason
            )));
        }
        return Ok(Choice { status, fell_back: false });
    }
    let usable = |status: &&ProviderStatus| status.is_ready() && (!needs_audio || status.provider.returns_audio());
    let configured_name = configured.is_some();
    let configured = configured.and_then(|name| Provider::parse(name).ok()).and_then(status_of);
    if let Some(status) = configured.as_ref().filter(|status| usable(status)) {
        return Ok(Choice { status: status.clone(), fell_back: false });
    }
    let best = statuses.iter().filter(|status| status.provider != Provider::SpeechDispatcher).find(usable).ok_or_else(
        || {
            let reasons: Vec<String> =
                statuses.iter().map(|status| format!("{}: {}", status.provider.id(), status.reason)).collect();
            unavailable(format!("TTS speak not available: no provider is ready ({})", reasons.join("; ")))
        },
    )?;
    // A configured provider not used (not ready, or a name that is no provider) is a fallback.
    Ok(Choice { status: best.clone(), fell_back: configured_name })
}

fn configured_provider(state: &State) -> Option<String> {
    state.settings.current().node_tts_provider.filter(|name| !name.trim().is_empty())
}

fn status(state: &State) -> Value {
    let statuses = state.config.environment.statuses();
    let configured = configured_provider(state);
    let choice = choose(&statuses, None, configured.as_deref(), false).ok();
    let providers: Vec<Value> = statuses
        .iter()
        .map(|status| {
            json!({
                "provider": status.provider.id(),
                "readiness": status.readiness,
                "isReady": status.is_ready(),
                "reason": status.reason,
            })
        })
        .collect();
    json!({
        "configuredProvider": configured,
        "effectiveProvider": choice.as_ref().map(|choice| choice.status.provider.id()),
        "willFallBack": choice.as_ref().is_some_and(|choice| choice.fell_back),
        "speaking": state.speaker.is_speaking(),
        "queued": state.speaker.waiting(),
        "providers": providers,
    })
}

fn spoke_failed(error: SpeakError, ctx: &CallContext) -> ToolFailure {
    match error {
        SpeakError::Cancelled if ctx.cancel.is_cancelled() => clawmcp_mcp::CANCELLED.into(),
        SpeakError::Cancelled => unavailable("Speak canceled: interrupted by a later tts.speak with interrupt:true"),
        SpeakError::Invalid(message) => ToolFailure::invalid_request(message),
        SpeakError::Failed(message) => ToolFailure::new(format!("Speak failed: {message}")),
    }
}

fn played_failed(error: AudioError, ctx: &CallContext) -> ToolFailure {
    match error {
        AudioError::Cancelled => spoke_failed(SpeakError::Cancelled, ctx),
        other => unavailable(format!("Speak failed: {other}")),
    }
}

async fn speak(state: &State, request: InvokeRequest, ctx: CallContext) -> ToolOutcome {
    let args = SpeakArgs::parse(&request.args)?;
    let statuses = state.config.environment.statuses();
    let configured = configured_provider(state);
    let choice = choose(&statuses, args.provider, configured.as_deref(), !args.play)?;
    let provider = choice.status.provider;
    let round = state.speaker.join(args.interrupt);
    let stop = queue::either(&ctx.cancel, &round);
    let utterance = Utterance { text: &args.text, voice: args.voice.as_deref() };
    let mut answer = json!({
        "spoken": true,
        "played": args.play,
        "provider": provider.id(),
        "requestedProvider": args.requested,
        "fellBack": choice.fell_back,
        "contentType": CONTENT_TYPE,
    });

    if !provider.returns_audio() {
        let _turn = take_turn(state, &stop.token, &ctx).await?;
        // The service reports no length: the time it took to speak is the nearest there is.
        let started = Instant::now();
        choice.status.speak_through_service(&utterance, &stop.token).await.map_err(|e| spoke_failed(e, &ctx))?;
        answer["durationMs"] = json!(started.elapsed().as_millis() as u64);
        tracing::info!(provider = provider.id(), chars = args.text.chars().count(), "tts spoke");
        return Ok(ToolOutput::from(answer));
    }

    let temp_root = state.config.temp_root.clone().unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix("clawmcp-tts-")
        .tempdir_in(&temp_root)
        .map_err(|e| ToolFailure::new(format!("Speak failed: cannot make a private directory: {e}")))?;
    let wav = dir.path().join("speech.wav");
    let synthesis = choice.status.synthesize(&utterance, dir.path(), &wav, &stop.token);
    let (synthesised, checked) = match args.play {
        // The sound server is checked while the engine runs: a missing server or a muted sink
        // fails the call as early, and costs no time when all is well.
        true => {
            let (synthesised, checked) = tokio::join!(synthesis, state.config.playback.check(&stop.token));
            (synthesised, Some(checked))
        }
        false => (synthesis.await, None),
    };
    // The text's own problems (an unknown voice) come first: they are the caller's to fix.
    synthesised.map_err(|e| spoke_failed(e, &ctx))?;
    if let Some(Err(error)) = checked {
        return Err(played_failed(error, &ctx));
    }
    let info =
        WavInfo::read(&wav).map_err(|e| ToolFailure::new(format!("Speak failed: {} wrote {e}", provider.id())))?;
    answer["durationMs"] = json!(info.duration().as_millis() as u64);

    if !args.play {
        let size = std::fs::metadata(&wav).map(|meta| meta.len()).unwrap_or(0);
        if size > state.config.max_audio_bytes {
            return Err(ToolFailure::new(format!(
                "Speak failed: the speech is {size} bytes of WAV, over the {}-byte limit of returned audio; say less \
                 at once, or play it (play:true)",
                state.config.max_audio_bytes
            )));
        }
        let bytes = std::fs::read(&wav).map_err(|e| ToolFailure::new(format!("Speak failed: {e}")))?;
        answer["spoken"] = json!(false);
        answer["bytes"] = json!(bytes.len());
        let base64 = STANDARD.encode(&bytes);
        let mut gateway = answer.clone();
        gateway["audioBase64"] = json!(base64);
        tracing::info!(provider = provider.id(), bytes = bytes.len(), "tts synthesised (returned, not played)");
        return Ok(ToolOutput::from(answer)
            .with_block(Content::Audio { data: base64, mime_type: CONTENT_TYPE.into() })
            .with_gateway_payload(gateway));
    }

    let _turn = take_turn(state, &stop.token, &ctx).await?;
    state.config.playback.play_checked(&wav, info.duration(), &stop.token).await.map_err(|e| played_failed(e, &ctx))?;
    tracing::info!(provider = provider.id(), duration_ms = info.duration().as_millis() as u64, "tts spoke");
    Ok(ToolOutput::from(answer))
}

async fn take_turn<'a>(
    state: &'a State,
    stop: &CancellationToken,
    ctx: &CallContext,
) -> Result<queue::Turn<'a>, ToolFailure> {
    state.speaker.take_turn(stop).await.map_err(|refused| match refused {
        Refused::Full => unavailable(format!(
            "TTS speak not available: {} utterances are already waiting; wait for them, or pass interrupt:true",
            queue::MAX_WAITING
        )),
        Refused::Stopped => spoke_failed(SpeakError::Cancelled, ctx),
    })
}

#[cfg(test)]
mod tests;
