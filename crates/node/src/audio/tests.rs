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

#[tokio::test]
async fn a_capture_records_what_the_sink_plays() {
    let server = PulseServer::start();
    let wav = speech(server.dir.path(), "captured", "recorded through the capture interface");
    let length = WavInfo::read(&wav).unwrap().duration();
    let into = server.dir.path().join("capture.wav");
    let capture = Capture {
        server: SoundServer { address: Some(server.address.clone()) },
        source: Some(format!("{NULL_SINK}.monitor")),
    };
    let cancel = CancellationToken::new();
    let recording = capture.record(&into, length + Duration::from_secs(2), &cancel);
    let playing = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        playback(&server).play(&wav, length, &cancel).await
    };
    let (recorded, played) = tokio::join!(recording, playing);
    played.unwrap();
    recorded.unwrap();
    let heard = loudness(&into);
    assert!(heard.rms > 0.01, "{heard:?}");
}
