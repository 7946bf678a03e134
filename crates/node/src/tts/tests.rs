//! tts.speak and tts.status with the real engines: speech returned as WAV (play:false) or
//! played through a private PulseAudio null sink and recorded from its monitor. Each test says
//! a sentence with a nonce drawn from a small word set; the audio must be loud enough and grow
//! with the text.

use std::path::Path;
use std::time::Duration;

use clawmcp_mcp::tool::codes::{INVALID_REQUEST, UNAVAILABLE};

use super::*;
use crate::audio::SoundServer;
use crate::test_support::{
    PulseServer, SpeechDispatcher, invoke_request, loudness, piper_voice_dir, processes_mentioning, require,
};

const WORDS: [&str; 12] = [
    "apple", "river", "purple", "seven", "window", "tiger", "garden", "copper", "winter", "pencil", "orange", "rocket",
];

/// Three words from [`WORDS`], different for every call.
fn nonce() -> String {
    let mut bytes = [0u8; 3];
    getrandom::fill(&mut bytes).unwrap();
    bytes.iter().map(|b| WORDS[*b as usize % WORDS.len()]).collect::<Vec<_>>().join(" ")
}

struct Fixture {
    capability: TtsCapability,
    dir: tempfile::TempDir,
}

impl Fixture {
    /// espeak-ng ready, piper without a voice, speech-dispatcher not running, and `server` (or
    /// nowhere) as the sound server.
    fn new(server: Option<&str>, settings_json: &str) -> Fixture {
        require("espeak-ng", "espeak-ng");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, settings_json).unwrap();
        let address = server.map_or_else(|| format!("unix:{}", dir.path().join("no-server").display()), str::to_owned);
        let config = Config {
            environment: Environment {
                voice_dirs: vec![dir.path().join("voices")],
                speechd_socket: Some(dir.path().join("no-speechd.sock")),
                max_voice_entries: 256,
                search_path: None,
            },
            playback: Playback::to(SoundServer { address: Some(address) }),
            temp_root: Some(dir.path().to_path_buf()),
            max_audio_bytes: MAX_AUDIO_BYTES,
        };
        let capability = TtsCapability::with_config(Arc::new(LiveSettings::open(path).unwrap()), config);
        Fixture { capability, dir }
    }

    fn with_speechd(server: &PulseServer, speechd: &SpeechDispatcher, settings_json: &str) -> Fixture {
        let mut fixture = Fixture::new(Some(&server.address), settings_json);
        let path = fixture.dir.path().join("settings.json");
        let config = Config {
            environment: Environment {
                voice_dirs: vec![fixture.dir.path().join("voices")],
                speechd_socket: Some(speechd.socket.clone()),
                max_voice_entries: 256,
                search_path: None,
            },
            playback: Playback::to(SoundServer { address: Some(server.address.clone()) }),
            temp_root: Some(fixture.dir.path().to_path_buf()),
            max_audio_bytes: MAX_AUDIO_BYTES,
        };
        fixture.capability = TtsCapability::with_config(Arc::new(LiveSettings::open(path).unwrap()), config);
        fixture
    }

    fn with_piper(server: Option<&str>) -> Fixture {
        let voices = piper_voice_dir();
        let fixture = Fixture::new(server, "{}");
        let link = fixture.dir.path().join("voices");
        std::fs::create_dir(&link).unwrap();
        for name in ["en_US-joe-medium.onnx", "en_US-joe-medium.onnx.json"] {
            std::os::unix::fs::symlink(voices.join(name), link.join(name)).unwrap();
        }
        fixture
    }

    async fn call(&self, name: &str, args: Value) -> ToolOutcome {
        self.call_with(name, args, CallContext::detached()).await
    }

    async fn call_with(&self, name: &str, args: Value, ctx: CallContext) -> ToolOutcome {
        self.capability.invoke(invoke_request(name, args), ctx).await
    }

    /// Nothing of a synthesis is left in the temp root (only settings.json and voices).
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("clawmcp-tts-"))
            .collect()
    }
}

/// The audio block's WAV, written to `dir` for measuring.
fn audio_of(output: &ToolOutput, dir: &Path, name: &str) -> PathBuf {
    let [Content::Audio { data, mime_type }] = output.blocks.as_slice() else {
        panic!("not one audio block: {:?}", output.blocks)
    };
    assert_eq!(mime_type, "audio/wav");
    let bytes = STANDARD.decode(data).unwrap();
    assert_eq!(output.gateway.as_ref().unwrap()["audioBase64"], json!(data), "the gateway gets the same audio");
    let path = dir.join(format!("{name}.wav"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn arguments_are_checked_as_upstream_does_with_the_limit_at_its_edge() {
    let parse = |args: Value| SpeakArgs::parse(args.as_object().unwrap());
    assert_eq!(parse(json!({})).unwrap_err().message, "Missing required text");
    assert_eq!(parse(json!({"text": "   "})).unwrap_err().message, "Missing required text");
    let at_limit = "é".repeat(MAX_TEXT_CHARS);
    assert_eq!(parse(json!({"text": format!("  {at_limit}  ")})).unwrap().text, at_limit, "5000 characters, trimmed");
    let over = parse(json!({"text": "a".repeat(MAX_TEXT_CHARS + 1)})).unwrap_err();
    assert_eq!((over.message.as_str(), over.code), ("TTS text exceeds 5000 characters.", Some(INVALID_REQUEST)));
    let args = parse(json!({"text": "hi", "provider": " ESPEAK-NG ", "interrupt": true, "play": false})).unwrap();
    assert_eq!(
        (args.provider, args.requested.as_deref(), args.interrupt, args.play),
        (Some(Provider::EspeakNg), Some("espeak-ng"), true, false)
    );
    let unknown = parse(json!({"text": "hi", "provider": "windows"})).unwrap_err().message;
    assert_eq!(
        unknown,
        "Unknown TTS provider `windows`. Known providers on Linux: piper, espeak-ng, speech-dispatcher."
    );
    let voice = parse(json!({"text": "hi", "voiceId": "../../etc/passwd"})).unwrap_err().message;
    assert!(voice.starts_with("voiceId `../../etc/passwd` is not a voice name"), "{voice}");
}

#[tokio::test]
async fn status_reports_each_providers_readiness_and_why() {
    let fixture = Fixture::new(None, "{}");
    let answer = fixture.call("tts.status", json!({})).await.unwrap().payload.unwrap();
    assert_eq!(answer["configuredProvider"], Value::Null);
    assert_eq!(answer["effectiveProvider"], "espeak-ng");
    assert_eq!(answer["willFallBack"], false);
    assert_eq!(answer["speaking"], false);
    let by_id =
        |id: &str| answer["providers"].as_array().unwrap().iter().find(|p| p["provider"] == id).unwrap().clone();
    assert_eq!(
        (by_id("espeak-ng")["readiness"].clone(), by_id("espeak-ng")["isReady"].clone()),
        (json!("ready"), json!(true))
    );
    let piper = by_id("piper");
    let reason = piper["reason"].as_str().unwrap();
    match MissingBackend::program("piper", "piper-tts") {
        Ok(_) => {
            assert_eq!(piper["readiness"], "needs-voice");
            assert!(reason.contains("no voice model") && reason.contains("voices"), "{reason}");
        }
        Err(_) => assert!(reason.contains("pip install piper-tts"), "{reason}"),
    }
    let speechd = by_id("speech-dispatcher");
    assert_eq!(speechd["readiness"], "unavailable");
    assert!(speechd["reason"].as_str().unwrap().contains("no-speechd.sock"), "{speechd}");

    let configured = Fixture::new(None, r#"{"NodeTtsProvider": "piper"}"#);
    let answer = configured.call("tts.status", json!({})).await.unwrap().payload.unwrap();
    assert_eq!(
        (answer["configuredProvider"].clone(), answer["effectiveProvider"].clone(), answer["willFallBack"].clone()),
        (json!("piper"), json!("espeak-ng"), json!(true))
    );
}

#[tokio::test]
async fn an_explicit_provider_is_strict_and_a_configured_one_falls_back() {
    let fixture = Fixture::new(None, r#"{"NodeTtsProvider": "speech-dispatcher"}"#);
    let strict =
        fixture.call("tts.speak", json!({"text": "hello", "provider": "speech-dispatcher"})).await.unwrap_err();
    assert_eq!(strict.code, Some(UNAVAILABLE));
    assert!(
        strict.message.starts_with("TTS speak not available: speech-dispatcher is not ready: "),
        "{}",
        strict.message
    );
    let output = fixture.call("tts.speak", json!({"text": nonce(), "play": false})).await.unwrap();
    let answer = output.payload.clone().unwrap();
    assert_eq!((answer["provider"].clone(), answer["fellBack"].clone()), (json!("espeak-ng"), json!(true)));
    assert_eq!(answer["requestedProvider"], Value::Null);
    let no_audio = fixture
        .call("tts.speak", json!({"text": "hello", "provider": "speech-dispatcher", "play": false}))
        .await
        .unwrap_err();
    assert!(no_audio.message.contains("cannot return audio"), "{}", no_audio.message);
}

#[tokio::test]
async fn play_false_returns_wav_that_is_loud_and_grows_with_the_text() {
    let fixture = Fixture::new(None, "{}");
    let short = fixture.call("tts.speak", json!({"text": nonce(), "play": false})).await.unwrap();
    let long_text = format!("{} and then {} and finally {}", nonce(), nonce(), nonce());
    let long = fixture.call("tts.speak", json!({"text": long_text, "play": false, "voiceId": "en-us"})).await.unwrap();
    let (short_wav, long_wav) =
        (audio_of(&short, fixture.dir.path(), "short"), audio_of(&long, fixture.dir.path(), "long"));
    let (short_heard, long_heard) = (loudness(&short_wav), loudness(&long_wav));
    assert!(short_heard.rms > 0.01 && long_heard.rms > 0.01, "{short_heard:?} {long_heard:?}");
    assert!(long_heard.seconds > short_heard.seconds * 2.0, "{short_heard:?} vs {long_heard:?}");
    let answer = short.payload.unwrap();
    assert_eq!((answer["spoken"].clone(), answer["played"].clone()), (json!(false), json!(false)));
    assert_eq!(answer["contentType"], "audio/wav");
    assert_eq!(answer["durationMs"], json!((short_heard.seconds * 1000.0) as u64));
    assert!(fixture.leftovers().is_empty(), "{:?}", fixture.leftovers());
    let unknown =
        fixture.call("tts.speak", json!({"text": "hi", "voiceId": "zz-none", "play": false})).await.unwrap_err();
    assert_eq!(unknown.code, Some(INVALID_REQUEST));
    assert!(unknown.message.starts_with("espeak-ng has no voice `zz-none`"), "{}", unknown.message);
}

#[tokio::test]
async fn speech_is_heard_on_the_default_sink() {
    let server = PulseServer::start();
    let fixture = Fixture::new(Some(&server.address), "{}");
    let recording = server.record_monitor("monitor");
    let output = fixture.call("tts.speak", json!({"text": format!("the words are {}", nonce())})).await.unwrap();
    let heard = loudness(&recording.stop());
    let answer = output.payload.unwrap();
    assert_eq!((answer["spoken"].clone(), answer["played"].clone()), (json!(true), json!(true)));
    assert!(output.blocks.is_empty(), "played speech is not returned");
    assert!(heard.rms > 0.01, "the sink's monitor heard silence: {heard:?}");
    let spoken = answer["durationMs"].as_u64().unwrap() as f64 / 1000.0;
    assert!(heard.seconds >= spoken, "recorded {heard:?}, the speech is {spoken} s");
}

#[tokio::test]
async fn without_a_sound_server_speaking_says_so_and_play_false_still_works() {
    let fixture = Fixture::new(None, "{}");
    let error = fixture.call("tts.speak", json!({"text": "hello"})).await.unwrap_err();
    assert_eq!(error.code, Some(UNAVAILABLE));
    assert!(error.message.starts_with("Speak failed: no PulseAudio/PipeWire server at unix:"), "{}", error.message);
    assert!(error.message.contains("or use play:false"), "{}", error.message);
    fixture.call("tts.speak", json!({"text": "hello", "play": false})).await.unwrap();
}

#[tokio::test]
async fn interrupt_stops_the_previous_utterance_and_speaks_next() {
    let server = PulseServer::start();
    let fixture = Arc::new(Fixture::new(Some(&server.address), "{}"));
    let long_text = format!("{} ", nonce()).repeat(20);
    let first = tokio::spawn({
        let fixture = fixture.clone();
        async move { fixture.call("tts.speak", json!({"text": long_text})).await }
    });
    loop {
        let status = fixture.call("tts.status", json!({})).await.unwrap().payload.unwrap();
        if status["speaking"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let recording = server.record_monitor("after");
    let second = fixture.call("tts.speak", json!({"text": nonce(), "interrupt": true})).await.unwrap();
    let first = first.await.unwrap().unwrap_err();
    assert_eq!(first.message, "Speak canceled: interrupted by a later tts.speak with interrupt:true");
    let left = processes_mentioning(&fixture.dir.path().to_string_lossy());
    assert!(left.is_empty(), "the interrupted call left {left:?} running");
    let heard = loudness(&recording.stop());
    let spoken = second.payload.unwrap()["durationMs"].as_u64().unwrap() as f64 / 1000.0;
    assert!(heard.rms > 0.01, "{heard:?}");
    let loud = crate::test_support::loud_seconds(&server.dir.path().join("after.wav"));
    assert!(
        loud <= spoken + 0.5,
        "only the second utterance plays after the interrupt: {loud} s loud, it is {spoken} s"
    );
    let status = fixture.call("tts.status", json!({})).await.unwrap().payload.unwrap();
    assert_eq!((status["speaking"].clone(), status["queued"].clone()), (json!(false), json!(0)));
}

#[tokio::test]
async fn cancelling_the_call_stops_its_audio() {
    let server = PulseServer::start();
    let fixture = Fixture::new(Some(&server.address), "{}");
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let speaking = fixture.call_with("tts.speak", json!({"text": format!("{} ", nonce()).repeat(20)}), ctx);
    let stopper = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(speaking, stopper);
    assert_eq!(result.unwrap_err().message, clawmcp_mcp::CANCELLED);
    assert!(fixture.leftovers().is_empty(), "{:?}", fixture.leftovers());
    let left = processes_mentioning(&fixture.dir.path().to_string_lossy());
    assert!(left.is_empty(), "the cancelled call left {left:?} running");
}

#[tokio::test]
async fn piper_speaks_with_an_installed_voice() {
    let fixture = Fixture::with_piper(None);
    let status = fixture.call("tts.status", json!({})).await.unwrap().payload.unwrap();
    assert_eq!(status["effectiveProvider"], "piper", "{status}");
    let output = fixture.call("tts.speak", json!({"text": nonce(), "play": false})).await.unwrap();
    assert_eq!(output.payload.as_ref().unwrap()["provider"], "piper");
    let heard = loudness(&audio_of(&output, fixture.dir.path(), "piper"));
    assert!(heard.rms > 0.01 && heard.seconds > 0.5, "{heard:?}");
    let named = fixture
        .call("tts.speak", json!({"text": "hi", "provider": "piper", "voiceId": "en_US-joe-medium", "play": false}))
        .await;
    named.unwrap();
    let missing =
        fixture.call("tts.speak", json!({"text": "hi", "provider": "piper", "voiceId": "de_DE-x"})).await.unwrap_err();
    assert_eq!(missing.message, "piper has no voice `de_DE-x`; installed voices: en_US-joe-medium");
}

#[tokio::test]
async fn speech_dispatcher_speaks_on_the_sink_when_it_runs() {
    require("spd-say", "speech-dispatcher");
    let server = PulseServer::start();
    let speechd = SpeechDispatcher::start(&server);
    let fixture = Fixture::with_speechd(&server, &speechd, r#"{"NodeTtsProvider": "speech-dispatcher"}"#);
    let status = fixture.call("tts.status", json!({})).await.unwrap().payload.unwrap();
    assert_eq!(
        (status["effectiveProvider"].clone(), status["willFallBack"].clone()),
        (json!("speech-dispatcher"), json!(false))
    );
    let recording = server.record_monitor("speechd");
    let output = fixture.call("tts.speak", json!({"text": format!("the words are {}", nonce())})).await.unwrap();
    let heard = loudness(&recording.stop());
    let answer = output.payload.unwrap();
    assert_eq!((answer["provider"].clone(), answer["fellBack"].clone()), (json!("speech-dispatcher"), json!(false)));
    assert!(heard.rms > 0.01 && heard.seconds > 0.5, "the sink heard {heard:?}");
    // play:false cannot use it: the configured service is passed over for one that returns audio.
    let returned = fixture.call("tts.speak", json!({"text": "hello", "play": false})).await.unwrap();
    assert_eq!(returned.payload.unwrap()["provider"], "espeak-ng");
}

#[tokio::test]
async fn without_an_engine_the_commands_are_unlisted_and_say_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Arc::new(LiveSettings::open(dir.path().join("settings.json")).unwrap());
    let environment = Environment { search_path: Some(dir.path().as_os_str().to_owned()), ..Environment::default() };
    let capability = TtsCapability::with_config(settings, Config { environment, ..Config::default() });
    for command in capability.commands() {
        let reason = command.unavailable_reason().unwrap_or_else(|| panic!("{} is listed", command.name()));
        assert!(reason.starts_with("unavailable: no speech engine is ready"), "{reason}");
        assert!(reason.ends_with("install it: apt install espeak-ng"), "{reason}");
    }
    let error = capability
        .invoke(invoke_request("tts.speak", json!({"text": "hi"})), CallContext::detached())
        .await
        .unwrap_err();
    assert!(
        error.message.starts_with("tts.speak is not available on this machine: no speech engine"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn returned_audio_is_bounded_at_its_edge() {
    let mut fixture = Fixture::new(None, "{}");
    let text = "the same sentence every time";
    let size = fixture.call("tts.speak", json!({"text": text, "play": false})).await.unwrap().payload.unwrap()["bytes"]
        .as_u64()
        .unwrap();
    let settings = Arc::new(LiveSettings::open(fixture.dir.path().join("settings.json")).unwrap());
    let at = |limit: u64, dir: &Path| Config {
        environment: Environment {
            voice_dirs: vec![],
            speechd_socket: Some(dir.join("none")),
            ..Environment::default()
        },
        temp_root: Some(dir.to_path_buf()),
        max_audio_bytes: limit,
        ..Config::default()
    };
    fixture.capability = TtsCapability::with_config(settings.clone(), at(size, fixture.dir.path()));
    fixture.call("tts.speak", json!({"text": text, "play": false})).await.expect("exactly at the limit");
    fixture.capability = TtsCapability::with_config(settings, at(size - 1, fixture.dir.path()));
    let over = fixture.call("tts.speak", json!({"text": text, "play": false})).await.unwrap_err();
    assert_eq!(
        over.message,
        format!(
            "Speak failed: the speech is {size} bytes of WAV, over the {}-byte limit of returned audio; say less at \
             once, or play it (play:true)",
            size - 1
        )
    );
    assert!(fixture.leftovers().is_empty(), "{:?}", fixture.leftovers());
}

#[tokio::test]
async fn over_mcp_returned_speech_is_an_audio_block_after_its_json() {
    use clawmcp_mcp::McpService;
    let fixture = Fixture::new(None, "{}");
    let registry = crate::Registry::new();
    registry.register(&fixture.capability);
    let service = crate::NodeMcpService::new(Arc::new(registry));
    let arguments = json!({"text": nonce(), "play": false}).as_object().unwrap().clone();
    let result = service.call_tool("tts.speak", arguments, CallContext::detached()).await;
    assert!(!result.is_error, "{:?}", result.first_text());
    let answer: Value = serde_json::from_str(result.first_text().unwrap()).unwrap();
    assert_eq!(answer["provider"], "espeak-ng");
    match &result.content[..] {
        [Content::Text { text }, Content::Audio { data, mime_type }] => {
            assert!(!text.contains(data.as_str()), "no base64 in the text block");
            assert_eq!(mime_type, "audio/wav");
            assert_eq!(STANDARD.decode(data).unwrap().len() as u64, answer["bytes"].as_u64().unwrap());
        }
        other => panic!("expected the JSON text then one audio block: {other:?}"),
    }
}

#[tokio::test]
async fn an_interrupt_silences_speech_dispatcher_too() {
    require("spd-say", "speech-dispatcher");
    let server = PulseServer::start();
    let speechd = SpeechDispatcher::start(&server);
    let fixture = Arc::new(Fixture::with_speechd(&server, &speechd, "{}"));
    let long_text = format!("{} ", nonce()).repeat(20);
    let first = tokio::spawn({
        let (fixture, text) = (fixture.clone(), long_text.clone());
        async move { fixture.call("tts.speak", json!({"text": text, "provider": "speech-dispatcher"})).await }
    });
    loop {
        let status = fixture.call("tts.status", json!({})).await.unwrap().payload.unwrap();
        if status["speaking"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the service start speaking, then interrupt with an engine the node plays itself.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let recording = server.record_monitor("after");
    let second = fixture.call("tts.speak", json!({"text": nonce(), "interrupt": true})).await.unwrap();
    let first = first.await.unwrap().unwrap_err();
    assert_eq!(first.message, "Speak canceled: interrupted by a later tts.speak with interrupt:true");
    // A service that went on speaking is loud through the whole window (the new speech and the
    // three seconds after it); one that stopped is loud for the new speech and what the sound
    // server had buffered of the old, which on a loaded machine took up to a second (2.08 s loud
    // for 1.46 s of speech, once in CI), so the margin is a second and the window three.
    tokio::time::sleep(Duration::from_secs(3)).await;
    recording.stop();
    let spoken = second.payload.unwrap()["durationMs"].as_u64().unwrap() as f64 / 1000.0;
    let loud = crate::test_support::loud_seconds(&server.dir.path().join("after.wav"));
    assert!(
        loud <= spoken + 1.0,
        "the service went on speaking: {loud} s loud after the interrupt, the new speech is {spoken} s"
    );
    let left = processes_mentioning(long_text.trim());
    assert!(left.is_empty(), "spd-say outlived its call: {left:?}");
}
