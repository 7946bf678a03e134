//! Recordings of a real X server (Xvfb) by the real ffmpeg, checked with ffprobe and by decoding
//! the frames: their number, size and duration, a colour change the test makes mid-clip, the
//! size bound at its byte edge, and that a cancelled or dropped call leaves no ffmpeg and no file.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command as Std;
use std::time::{Duration, Instant, SystemTime};

use clawmcp_mcp::tool::codes::{INVALID_REQUEST, UNAVAILABLE};
use clawmcp_mcp::{CallContext, Content, EmbeddedResource, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ChangeWindowAttributesAux, ConnectionExt as _, CreateGCAux, ImageFormat};
use x11rb::rust_connection::RustConnection;

use super::*;
use crate::capability::{Caller, InvokeRequest};
use crate::screen::ScreenCapability;
use crate::screen::tests::{close, live_settings, pixel_value, random_colour};
use crate::test_support::{Spawned, require, xvfb_sized};

/// A private X server whose root the test paints, and a private temp root for recordings.
struct Desktop {
    _server: Spawned,
    display: String,
    conn: RustConnection,
    root: u32,
    temp: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl Desktop {
    fn new(geometry: &str) -> Desktop {
        require("ffmpeg", "ffmpeg");
        require("ffprobe", "ffmpeg");
        let dir = tempfile::tempdir().unwrap();
        let (server, display) = xvfb_sized(dir.path(), geometry);
        let (conn, screen) = x11rb::connect(Some(&display)).unwrap();
        let root = conn.setup().roots[screen].root;
        Desktop { _server: server, display, conn, root, temp: tempfile::tempdir().unwrap(), _dir: dir }
    }

    fn paint(&self, rgb: [u8; 3]) {
        let aux = ChangeWindowAttributesAux::new().background_pixel(pixel_value(rgb));
        self.conn.change_window_attributes(self.root, &aux).unwrap();
        self.conn.clear_area(false, self.root, 0, 0, 0, 0).unwrap();
        self.conn.get_input_focus().unwrap().reply().unwrap(); // a round trip: painted
    }

    /// Random pixels over the whole root (incompressible: the first frame alone is large).
    fn paint_noise(&self) {
        let setup = self.conn.setup();
        let (width, height) = (setup.roots[0].width_in_pixels, setup.roots[0].height_in_pixels);
        let gc = self.conn.generate_id().unwrap();
        self.conn.create_gc(gc, self.root, &CreateGCAux::new()).unwrap();
        // Strips small enough for a core request without BIG-REQUESTS.
        let rows = 32u16;
        for top in (0..height).step_by(usize::from(rows)) {
            let rows = rows.min(height - top);
            let mut data = vec![0u8; usize::from(width) * usize::from(rows) * 4];
            getrandom::fill(&mut data).unwrap();
            self.conn
                .put_image(ImageFormat::Z_PIXMAP, self.root, gc, width, rows, 0, top as i16, 0, 24, &data)
                .unwrap();
        }
        self.conn.get_input_focus().unwrap().reply().unwrap();
    }

    fn capability(&self, size: SizeBound) -> ScreenCapability {
        let options = RecordOptions { size, temp_root: self.temp.path().to_owned(), search_path: None };
        ScreenCapability::with_recording(live_settings(self.temp.path(), true), Some(self.display.clone()), options)
    }

    /// Recording directories in the private temp root (`settings.json` lives there too).
    fn recordings(&self) -> Vec<String> {
        std::fs::read_dir(self.temp.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(TEMP_PREFIX))
            .collect()
    }

    /// Live processes (not zombies) whose command line names this desktop's temp root: its ffmpeg.
    fn ffmpegs(&self) -> Vec<u32> {
        let needle = self.temp.path().to_string_lossy().into_owned();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                String::from_utf8_lossy(&cmdline).contains(&needle)
            })
            .collect()
    }

    /// Waits for ffmpeg to have started recording into our temp root.
    async fn until_recording(&self) -> u32 {
        let started = Instant::now();
        loop {
            if let Some(pid) = self.ffmpegs().first() {
                return *pid;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "ffmpeg never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn record_command(capability: &ScreenCapability) -> Command {
    capability.commands.iter().find(|command| command.name() == "screen.record").unwrap().clone()
}

async fn call(capability: &ScreenCapability, args: Value, ctx: CallContext) -> ToolOutcome {
    let request = InvokeRequest {
        id: "t".into(),
        command: "screen.record".into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: Caller::Mcp,
    };
    record_command(capability).call(request, ctx).await
}

/// The mp4 of an answer, checking the block is the resource upstream's payload also carries.
pub(in crate::screen) fn video(output: &ToolOutput) -> Vec<u8> {
    let Some(Content::Resource { resource: EmbeddedResource::Blob { uri, mime_type, blob } }) = output.blocks.first()
    else {
        panic!("no resource block: {output:?}")
    };
    assert_eq!(mime_type.as_deref(), Some("video/mp4"));
    assert!(uri.starts_with("clawmcp://recording/") && uri.ends_with(".mp4"), "{uri}");
    assert_eq!(output.gateway_payload()["base64"].as_str(), Some(blob.as_str()), "the gateway gets the same file");
    assert!(!output.payload.as_ref().unwrap().to_string().contains(blob.as_str()), "never base64 in the text");
    STANDARD.decode(blob).unwrap()
}

/// What ffprobe says of an mp4: codec, width, height, frames decoded, duration in seconds.
pub(in crate::screen) fn probe(mp4: &[u8]) -> (String, u32, u32, u32, f64) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), mp4).unwrap();
    let output = Std::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0", "-of", "json"])
        .args(["-show_entries", "stream=codec_name,width,height,nb_read_frames:format=duration"])
        .arg(file.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "ffprobe: {}", String::from_utf8_lossy(&output.stderr));
    let facts: Value = serde_json::from_slice(&output.stdout).unwrap();
    let stream = &facts["streams"][0];
    (
        stream["codec_name"].as_str().unwrap().to_owned(),
        stream["width"].as_u64().unwrap() as u32,
        stream["height"].as_u64().unwrap() as u32,
        stream["nb_read_frames"].as_str().unwrap().parse().unwrap(),
        facts["format"]["duration"].as_str().unwrap().parse().unwrap(),
    )
}

/// Every frame's pixel at (`x`, `y`), decoded by ffmpeg.
pub(in crate::screen) fn pixel_per_frame(mp4: &[u8], width: u32, height: u32, x: u32, y: u32) -> Vec<[u8; 3]> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), mp4).unwrap();
    let output = Std::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(file.path())
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .unwrap();
    assert!(output.status.success(), "ffmpeg decode: {}", String::from_utf8_lossy(&output.stderr));
    let frame = (width * height * 3) as usize;
    assert_eq!(output.stdout.len() % frame, 0);
    output
        .stdout
        .chunks_exact(frame)
        .map(|pixels| {
            let at = ((y * width + x) * 3) as usize;
            [pixels[at], pixels[at + 1], pixels[at + 2]]
        })
        .collect()
}

#[tokio::test]
async fn a_recording_has_the_frames_duration_and_size_asked() {
    // Odd sides: H.264 in yuv420p needs even ones, so the last column and row are left out.
    let desktop = Desktop::new("321x241x24");
    desktop.paint(random_colour());
    let capability = desktop.capability(SizeBound::default());
    let output =
        call(&capability, json!({"durationMs": 1500, "fps": 10, "includeAudio": true}), CallContext::detached())
            .await
            .unwrap();
    let mp4 = video(&output);
    let (codec, width, height, frames, duration) = probe(&mp4);
    assert_eq!((codec.as_str(), width, height), ("h264", 320, 240));
    assert!(frames.abs_diff(15) <= 1, "{frames} frames for 1.5 s at 10 fps");
    assert!((duration - 1.5).abs() <= 0.1, "{duration} s");
    let meta = output.payload.as_ref().unwrap();
    assert_eq!(
        (&meta["format"], &meta["fps"], &meta["screenIndex"], &meta["hasAudio"], &meta["truncated"]),
        (&json!("mp4"), &json!(10), &json!(0), &json!(false), &json!(false))
    );
    assert!(meta["audio"].as_str().is_some_and(|note| note.starts_with("not recorded")), "asked for audio: {meta}");
    assert_eq!((&meta["width"], &meta["height"], &meta["bytes"]), (&json!(320), &json!(240), &json!(mp4.len())));
    assert_eq!(meta["durationMs"], json!(inspect_mp4(&mp4).unwrap().duration_ms), "the file's own duration");
    assert!(meta["durationMs"].as_u64().unwrap().abs_diff(1500) <= 100, "{meta}");
    let gateway = output.gateway_payload();
    assert_eq!(
        (&gateway["format"], &gateway["durationMs"], &gateway["fps"], &gateway["hasAudio"]),
        (&json!("mp4"), &meta["durationMs"], &json!(10), &json!(false)),
        "upstream's payload"
    );
    assert!(desktop.recordings().is_empty(), "the recording directory is gone: {:?}", desktop.recordings());
}

#[tokio::test]
async fn a_colour_change_mid_clip_is_in_the_video() {
    let desktop = Desktop::new("320x240x24");
    let (before, after) = (random_colour(), random_colour());
    desktop.paint(before);
    let capability = desktop.capability(SizeBound::default());
    let recording = call(&capability, json!({"durationMs": 2000, "fps": 10}), CallContext::detached());
    let switch = async {
        desktop.until_recording().await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        desktop.paint(after);
    };
    let (output, ()) = tokio::join!(recording, switch);
    let mp4 = video(&output.unwrap());
    // (5, 5): away from the pointer, which Xvfb puts in the middle.
    let pixels = pixel_per_frame(&mp4, 320, 240, 5, 5);
    assert!(pixels.len() >= 19, "{} frames", pixels.len());
    assert!(close(pixels[0], before, 8), "first frame {:?}, painted {before:?}", pixels[0]);
    assert!(close(*pixels.last().unwrap(), after, 8), "last frame {:?}, painted {after:?}", pixels.last());
    let changes = pixels.windows(2).filter(|pair| !close(pair[0], pair[1], 8)).count();
    assert_eq!(changes, 1, "one change, from one colour to the other: {pixels:?}");
}

#[tokio::test]
async fn a_cancelled_recording_stops_ffmpeg_and_leaves_nothing() {
    let desktop = Desktop::new("320x240x24");
    let capability = desktop.capability(SizeBound::default());
    let cancel = CancellationToken::new();
    let ctx = CallContext { cancel: cancel.clone(), progress: None, meta: None, request: None };
    let started = Instant::now();
    let recording = call(&capability, json!({"durationMs": 60000}), ctx);
    let canceller = async {
        let pid = desktop.until_recording().await;
        let dirs = desktop.recordings();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let mode = std::fs::metadata(desktop.temp.path().join(&dirs[0])).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "private to the node's user");
        tokio::time::sleep(Duration::from_millis(1000)).await;
        cancel.cancel();
        pid
    };
    let (outcome, pid) = tokio::join!(recording, canceller);
    let error = outcome.unwrap_err();
    assert_eq!(error.message, clawmcp_mcp::CANCELLED);
    assert!(started.elapsed() < Duration::from_secs(60), "answered before the clip would have ended");
    assert!(desktop.ffmpegs().is_empty(), "ffmpeg is gone when the call answers");
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "and reaped (no zombie)");
    assert!(desktop.recordings().is_empty(), "the directory is gone: {:?}", desktop.recordings());
}

#[tokio::test]
async fn a_dropped_call_leaves_no_ffmpeg_and_no_file() {
    let desktop = Desktop::new("320x240x24");
    let capability = desktop.capability(SizeBound::default());
    let recording = call(&capability, json!({"durationMs": 60000}), CallContext::detached());
    tokio::select! {
        _ = recording => panic!("the recording cannot end in a minute"),
        _ = desktop.until_recording() => {}
    }
    // The future is dropped: kill_on_drop has sent SIGKILL, TempDir's drop removed the files.
    assert!(desktop.recordings().is_empty(), "{:?}", desktop.recordings());
    let dropped = Instant::now();
    while !desktop.ffmpegs().is_empty() {
        assert!(dropped.elapsed() < Duration::from_secs(10), "ffmpeg outlived its dropped call");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn one_recording_at_a_time() {
    let desktop = Desktop::new("320x240x24");
    let capability = desktop.capability(SizeBound::default());
    let first = call(&capability, json!({"durationMs": 1500}), CallContext::detached());
    let second = async {
        desktop.until_recording().await;
        call(&capability, json!({"durationMs": 100}), CallContext::detached()).await
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.unwrap().payload.unwrap()["truncated"], json!(false));
    let refused = second.unwrap_err();
    assert_eq!(refused.code, Some(UNAVAILABLE));
    assert!(refused.message.contains("a recording is already running"), "{}", refused.message);
    let third = call(&capability, json!({"durationMs": 100}), CallContext::detached()).await.unwrap();
    let (_, _, _, frames, _) = probe(&video(&third));
    assert!((1..=2).contains(&frames), "100 ms at 10 fps (one frame, +1 for jitter), once the first has ended");
}

#[tokio::test]
async fn the_size_bound_cuts_the_clip_at_its_byte_edge_and_says_so() {
    let desktop = Desktop::new("320x240x24");
    desktop.paint_noise();
    let record = |stop_at: u64, max: u64| {
        let capability = desktop.capability(SizeBound { stop_at, max });
        async move { call(&capability, json!({"durationMs": 2000, "fps": 10}), CallContext::detached()).await }
    };
    // Stop at the first byte: ffmpeg writes the first frame, then the index.
    let one = record(1, MAX_RECORDING_BYTES).await.unwrap();
    let one_mp4 = video(&one);
    let facts = inspect_mp4(&one_mp4).unwrap();
    assert_eq!(probe(&one_mp4).3, 1);
    let meta = one.payload.as_ref().unwrap();
    assert_eq!((&meta["truncated"], &meta["durationMs"]), (&json!(true), &json!(100)), "{meta}");
    // The file held `index_offset` bytes after the first frame: a bound there still stops after
    // it, one byte more lets the second frame in.
    let at_edge = record(facts.index_offset, MAX_RECORDING_BYTES).await.unwrap();
    assert_eq!(probe(&video(&at_edge)).3, 1);
    let over_edge = record(facts.index_offset + 1, MAX_RECORDING_BYTES).await.unwrap();
    assert_eq!(probe(&video(&over_edge)).3, 2);
    assert_eq!(over_edge.payload.unwrap()["truncated"], json!(true));
    // The hard bound: the one-frame file is returned at exactly its size, refused one byte below.
    let exact = record(1, one_mp4.len() as u64).await.unwrap();
    assert_eq!(video(&exact).len(), one_mp4.len());
    let error = record(1, one_mp4.len() as u64 - 1).await.unwrap_err();
    assert!(error.message.contains(&format!("over the {}-byte bound", one_mp4.len() - 1)), "{}", error.message);
    // Unbounded, the same screen records in full.
    let full = record(STOP_AT_BYTES, MAX_RECORDING_BYTES).await.unwrap();
    assert_eq!(full.payload.as_ref().unwrap()["truncated"], json!(false));
    assert!(probe(&video(&full)).3.abs_diff(20) <= 1);
    assert!(desktop.recordings().is_empty());
}

#[test]
fn arguments_follow_upstreams_clamps_and_errors() {
    let parse = |value: Value| RecordArgs::parse(value.as_object().unwrap());
    assert_eq!(
        parse(json!({})).unwrap(),
        RecordArgs { duration_ms: 10_000, fps: 10, screen_index: 0, include_audio: false }
    );
    for (given, used) in [(99, 100), (100, 100), (101, 101), (300_000, 300_000), (300_001, 300_000), (-5, 100)] {
        assert_eq!(parse(json!({"durationMs": given})).unwrap().duration_ms, used, "durationMs {given}");
    }
    for (given, used) in
        [(json!(0), 1), (json!(1), 1), (json!(60), 60), (json!(61), 60), (json!(7.4), 7), (json!(0.4), 1)]
    {
        assert_eq!(parse(json!({"fps": given})).unwrap().fps, used, "fps {given}");
    }
    assert_eq!(parse(json!({"screenIndex": 32})).unwrap().screen_index, 32);
    assert_eq!(parse(json!({"screenIndex": 33})).unwrap().screen_index, 32);
    for format in ["mp4", " MP4 ", ""] {
        assert!(parse(json!({"format": format})).is_ok(), "{format:?}");
    }
    let error = parse(json!({"format": "webm"})).unwrap_err();
    assert_eq!(error.message, "Unsupported screen recording format. Only mp4 is supported.");
    assert_eq!(error.code, Some(INVALID_REQUEST));
    assert!(!parse(json!({"includeAudio": false})).unwrap().include_audio);
    assert!(!parse(json!({})).unwrap().include_audio);
    // What the gateway's CLI and agent tool send by default: accepted, answered with hasAudio false.
    assert!(parse(json!({"includeAudio": true})).unwrap().include_audio);
    assert_eq!(parse(json!({"includeAudio": "yes"})).unwrap_err().message, "includeAudio must be true or false");
    assert!(parse(json!({"durationMs": 1.5})).unwrap_err().message.contains("durationMs"));
    assert!(parse(json!({"fps": "fast"})).unwrap_err().message.contains("fps"));
}

#[tokio::test]
async fn the_switch_ffmpeg_and_the_display_decide_whether_it_is_served() {
    let desktop = Desktop::new("320x240x24");
    let settings = live_settings(desktop.temp.path(), false);
    let ffmpeg = MissingBackend::program("ffmpeg", "ffmpeg").unwrap();
    let with_path = |path: &Path| {
        let options = RecordOptions {
            search_path: Some(path.as_os_str().to_owned()),
            temp_root: desktop.temp.path().to_owned(),
            ..RecordOptions::default()
        };
        ScreenCapability::with_recording(settings.clone(), Some(desktop.display.clone()), options)
    };
    let (without, with) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::os::unix::fs::symlink(&ffmpeg, with.path().join("ffmpeg")).unwrap();

    let off = with_path(with.path());
    assert!(!record_command(&off).is_listed(), "off by default: not listed");
    let error = call(&off, json!({"durationMs": 100}), CallContext::detached()).await.unwrap_err();
    assert!(error.message.starts_with("screen.record is disabled by user setting"), "{}", error.message);

    std::fs::write(settings.path(), "{\"NodeScreenEnabled\": true}").unwrap();
    let missing = with_path(without.path());
    assert!(!record_command(&missing).is_listed(), "no ffmpeg: not listed");
    let reason = record_command(&missing).unavailable_reason().unwrap();
    assert_eq!(reason, "unavailable: ffmpeg is not installed (not on the node's PATH); install it: apt install ffmpeg");
    let error = call(&missing, json!({"durationMs": 100}), CallContext::detached()).await.unwrap_err();
    assert_eq!(error.code, Some(UNAVAILABLE));
    assert_eq!(
        error.message,
        "screen.record is not available on this machine: ffmpeg is not installed (not on the node's PATH); install \
         it: apt install ffmpeg"
    );

    let served = with_path(with.path());
    assert!(record_command(&served).is_listed());
    let output = call(&served, json!({"durationMs": 100}), CallContext::detached()).await.unwrap();
    // 100 ms at 10 fps: one frame, two when the grab's timestamps jitter under load.
    assert!((1..=2).contains(&probe(&video(&output)).3), "recorded by the ffmpeg found on that PATH");
    let error = call(&served, json!({"durationMs": 100, "screenIndex": 1}), CallContext::detached()).await.unwrap_err();
    assert_eq!(error.message, "screenIndex 1 does not exist: this display has 1 monitor(s), 0..0");
}

#[test]
fn an_mp4_without_its_index_or_cut_short_is_refused() {
    let desktop = Desktop::new("320x240x24");
    let out = desktop.temp.path().join("killed.mp4");
    // A real ffmpeg killed mid-recording (SIGKILL) leaves the file's head, maybe frames, and no
    // index.
    let mut ffmpeg = Std::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-f", "x11grab", "-framerate", "10", "-video_size", "320x240", "-i"])
        .arg(&desktop.display)
        .args(["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-y"])
        .arg(&out)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::metadata(&out).map_or(0, |meta| meta.len()) == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "ffmpeg wrote nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1000)); // frames are being recorded
    ffmpeg.kill().unwrap();
    ffmpeg.wait().unwrap();
    let killed = std::fs::read(&out).unwrap();
    assert!(inspect_mp4(&killed).unwrap_err().starts_with("no moov box"), "{:?}", inspect_mp4(&killed));

    let file = desktop.temp.path().join("whole.mp4");
    // A finished one (lavfi's test source, not real time), then the same cut short.
    let status = Std::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-t", "1"])
        .args(["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-y"])
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    let whole = std::fs::read(&file).unwrap();
    assert_eq!(inspect_mp4(&whole).unwrap().duration_ms, 1000);
    let cut = &whole[..whole.len() - 10];
    assert!(inspect_mp4(cut).unwrap_err().contains("box at byte"), "{:?}", inspect_mp4(cut));
    assert!(inspect_mp4(&[]).is_err());
}

#[test]
fn the_file_bound_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.mp4");
    std::fs::write(&path, vec![7u8; 1000]).unwrap();
    assert_eq!(read_bounded(&path, 1000).unwrap().len(), 1000);
    assert!(read_bounded(&path, 999).unwrap_err().contains("over the 999-byte bound"));
}

#[test]
fn recordings_left_by_a_dead_node_are_removed_after_an_hour() {
    let root = tempfile::tempdir().unwrap();
    let make = |name: &str| {
        let path = root.path().join(name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("recording.mp4"), b"x").unwrap();
        path
    };
    let (ours, old, other) = (make("clawmcp-record-ours"), make("clawmcp-record-old"), make("other-old"));
    let target = make("target");
    std::os::unix::fs::symlink(&target, root.path().join("clawmcp-record-link")).unwrap();
    let written = SystemTime::now() - Duration::from_secs(10);
    for path in [&ours, &old, &other] {
        std::fs::File::open(path).unwrap().set_modified(written).unwrap();
    }
    let exists = |name: &str| root.path().join(name).symlink_metadata().is_ok();
    remove_stale(root.path(), &ours, written + STALE_AFTER);
    assert!(exists("clawmcp-record-old"), "exactly an hour old: kept");
    remove_stale(root.path(), &ours, written + STALE_AFTER + Duration::from_secs(1));
    assert!(!exists("clawmcp-record-old"), "older: removed");
    assert!(exists("clawmcp-record-ours"), "never the recording that is starting");
    assert!(exists("other-old"), "only our prefix");
    assert!(exists("clawmcp-record-link") && target.join("recording.mp4").exists(), "a symlink is not followed");
}

#[tokio::test]
async fn a_monitor_right_of_the_first_is_recorded_at_its_offset() {
    let desktop = Desktop::new("640x240x24");
    // A second RandR monitor over the right half (Xvfb has one until told otherwise).
    require("xrandr", "x11-xserver-utils");
    let status = Std::new("xrandr")
        .args(["--display", &desktop.display, "--setmonitor", "right", "320/0x240/0+320+0", "none"])
        .status()
        .unwrap();
    assert!(status.success());
    let left = random_colour();
    let right = std::iter::repeat_with(random_colour).find(|&c| !close(c, left, 24)).unwrap();
    desktop.paint(left);
    let window = desktop.conn.generate_id().unwrap();
    let aux = x11rb::protocol::xproto::CreateWindowAux::new().background_pixel(pixel_value(right)).override_redirect(1);
    let class = x11rb::protocol::xproto::WindowClass::INPUT_OUTPUT;
    desktop.conn.create_window(24, window, desktop.root, 320, 0, 320, 240, 0, class, 0, &aux).unwrap();
    desktop.conn.map_window(window).unwrap();
    desktop.conn.get_input_focus().unwrap().reply().unwrap();
    let (_, monitors) = x11::monitor(Some(&desktop.display), 0).unwrap();
    let index = monitors.iter().position(|m| (m.x, m.width) == (320, 320)).expect("the right monitor");

    let capability = desktop.capability(SizeBound::default());
    let output = call(&capability, json!({"durationMs": 300, "screenIndex": index}), CallContext::detached()).await;
    let output = output.unwrap();
    assert_eq!(output.payload.as_ref().unwrap()["screenIndex"], json!(index));
    let mp4 = video(&output);
    assert_eq!(probe(&mp4).1, 320);
    // Away from the pointer (in the middle of the whole screen, on the seam); recorded at offset
    // 0 instead, these would be the left monitor's colour.
    for (x, y) in [(300, 5), (300, 235)] {
        let pixels = pixel_per_frame(&mp4, 320, 240, x, y);
        assert!(pixels.iter().all(|&p| close(p, right, 8)), "({x},{y}) {:?}, the right monitor is {right:?}", pixels);
    }
}
