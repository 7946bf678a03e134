//! Playback and capture against a private PulseAudio server with a null sink: what is played
//! must be heard on the sink's monitor (RMS above a floor, about as long as the file), and a
//! missing server, a muted sink and a cancellation must each end the call with its error.

use std::process::Command as Process;
use std::time::Duration;

use super::*;
use crate::test_support::{NULL_SINK, PulseServer, loudness, require};

/// Speech in a WAV file (espeak-ng), `text` long.
fn speech(dir: &Path, name: &str, text: &str) -> PathBuf {
    require("espeak-ng", "espeak-ng");
    let path = dir.join(format!("{name}.wav"));
    let status = Process::new("espeak-ng").args(["-v", "en-us", "-w"]).arg(&path).arg(text).status().unwrap();
    assert!(status.success());
    path
}

fn playback(server: &PulseServer) -> Playback {
    Playback::to(SoundServer { address: Some(server.address.clone()) })
}

#[tokio::test]
async fn a_played_file_is_heard_on_the_default_sink() {
    let server = PulseServer::start();
    let wav = speech(server.dir.path(), "played", "the quick brown fox jumps over the lazy dog");
    let length = WavInfo::read(&wav).unwrap().duration();
    let recording = server.record_monitor("monitor");
    playback(&server).play(&wav, length, &CancellationToken::new()).await.unwrap();
    let heard = loudness(&recording.stop());
    assert!(heard.rms > 0.01, "the monitor heard silence: {heard:?}");
    assert!(heard.seconds >= length.as_secs_f64() * 0.9, "heard {heard:?} of {length:?}");
}

#[tokio::test]
async fn no_server_is_a_clear_error_naming_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let address = format!("unix:{}", dir.path().join("no-server").display());
    let wav = speech(dir.path(), "unheard", "nobody hears this");
    let player = Playback::to(SoundServer { address: Some(address.clone()) });
    let error = player.play(&wav, Duration::from_secs(1), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error, AudioError::NoServer(address.clone()));
    let message = error.to_string();
    assert!(message.starts_with(&format!("no PulseAudio/PipeWire server at {address}; start one")), "{message}");
    assert!(message.ends_with("or use play:false to get the audio back"), "{message}");
}

#[tokio::test]
async fn a_server_without_an_output_device_says_so() {
    let server = PulseServer::without_sinks();
    let wav = speech(server.dir.path(), "nowhere", "there is no device");
    let error = playback(&server).play(&wav, Duration::from_secs(1), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error, AudioError::NoDevice("the sound server has no default sink".to_owned()));
    let message = error.to_string();
    assert!(message.ends_with("add an output device (or a null sink) or use play:false"), "{message}");
}

#[tokio::test]
async fn a_muted_sink_is_refused_before_anything_plays() {
    let server = PulseServer::start();
    server.pactl(&["set-sink-mute", NULL_SINK, "1"]);
    let wav = speech(server.dir.path(), "muted", "this would go nowhere");
    let error = playback(&server).play(&wav, Duration::from_secs(1), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error, AudioError::Muted);
    assert!(error.to_string().contains("pactl set-sink-mute @DEFAULT_SINK@ 0"), "{error}");
    server.pactl(&["set-sink-mute", NULL_SINK, "0"]);
    playback(&server).check(&CancellationToken::new()).await.unwrap();
}

#[tokio::test]
async fn a_sink_that_never_plays_is_stopped_after_the_sound_and_its_allowance() {
    let server = PulseServer::start();
    server.pactl(&["suspend-sink", NULL_SINK, "1"]);
    let wav = speech(server.dir.path(), "stuck", "hello there");
    let length = WavInfo::read(&wav).unwrap().duration();
    let player = Playback { allowance: Duration::from_millis(500), ..playback(&server) };
    let error = player.play(&wav, length, &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error, AudioError::Stalled(length + Duration::from_millis(500)));
    assert!(error.to_string().contains("suspend-sink @DEFAULT_SINK@ 0"), "{error}");
}

#[tokio::test]
async fn a_cancel_stops_the_sound_at_once() {
    let server = PulseServer::start();
    let text = "this sentence is long enough to play for several seconds if nobody stops it, and it goes on and on";
    let wav = speech(server.dir.path(), "long", &format!("{text}; {text}"));
    let length = WavInfo::read(&wav).unwrap().duration();
    assert!(length > Duration::from_secs(8), "{length:?}");
    let recording = server.record_monitor("monitor");
    let cancel = CancellationToken::new();
    let player = playback(&server);
    let playing = player.play(&wav, length, &cancel);
    let stopper = async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(playing, stopper);
    assert_eq!(result, Err(AudioError::Cancelled));
    // Record a little longer: nothing more may arrive after the stop.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let heard = loudness(&recording.stop());
    assert!(heard.rms > 0.01, "something played before the cancel: {heard:?}");
    let loud = crate::test_support::loud_seconds(&server.dir.path().join("monitor.wav"));
    assert!(loud < length.as_secs_f64() / 2.0, "{loud} s of sound reached the sink of a {length:?} file");
}

/// A 440 Hz tone of exactly `tone` seconds after `pre_roll` seconds of silence, with 0.5 s of
/// silence after it, as a 16 kHz mono WAV.
fn tone_after_silence(dir: &Path, tone: f64, pre_roll: f64) -> PathBuf {
    require("ffmpeg", "ffmpeg");
    let path = dir.join("tone.wav");
    let status = Process::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i"])
        .arg(format!("sine=frequency=440:sample_rate=16000:duration={tone}"))
        .args(["-af", &format!("adelay={}:all=1,apad=pad_dur=0.5", (pre_roll * 1000.0) as u64), "-ac", "1"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "ffmpeg failed to make the tone");
    path
}

/// The whole sound reaches the file, its first and its last second included: with parecord's
/// default latency the server dropped the first 1.7 s of a new playback stream (the 1.5 s
/// pre-roll and the start of what followed) and kept back the last block when the time ran out.
#[tokio::test]
async fn a_capture_records_what_the_sink_plays_from_its_first_sample_to_its_last() {
    let server = PulseServer::start();
    let wav = tone_after_silence(server.dir.path(), 2.0, 1.5);
    let length = WavInfo::read(&wav).unwrap().duration();
    let into = server.dir.path().join("capture.wav");
    let capture = Capture {
        server: SoundServer { address: Some(server.address.clone()) },
        source: Some(format!("{NULL_SINK}.monitor")),
    };
    let cancel = CancellationToken::new();
    // The time limit ends the recording 1 s after the sound: how stt.transcribe's ends.
    let recording = capture.record(&into, length + Duration::from_millis(1500), &cancel);
    let playing = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        playback(&server).play(&wav, length, &cancel).await
    };
    let (recorded, played) = tokio::join!(recording, playing);
    played.unwrap();
    recorded.unwrap();
    let heard = loudness(&into);
    let loud = crate::test_support::loud_seconds(&into);
    assert!((1.9..=2.1).contains(&loud), "{loud} s of a 2 s tone reached the file: {heard:?}");
    let onset = heard.onset.expect("the tone reached the file");
    assert!(onset >= 1.4, "the tone starts {onset} s into the file: the 1.5 s pre-roll was cut ({heard:?})");
}
