//! The capture pipeline with real ffmpeg, fed by lavfi graphs standing in for a camera (this
//! machine has no V4L2): a random solid colour must come back exactly (PNG) or nearly (JPEG), a
//! clip must have the asked duration and frame count (ffprobe) and show a colour change where
//! the graph made it, and a cancelled or stuck capture must leave no ffmpeg and no temp file.

use std::io::Cursor;
use std::path::Path;
use std::process::Command as Process;
use std::time::{Duration, Instant};

use clawmcp_mcp::tool::codes::UNAVAILABLE;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::capability::Caller;
use crate::test_support::{STARTUP_DEADLINE, require};

/// A random colour; `far` gives one at least 128 away from it on every channel.
fn random_colour() -> [u8; 3] {
    let mut bytes = [0u8; 3];
    getrandom::fill(&mut bytes).unwrap();
    bytes
}

fn far(colour: [u8; 3]) -> [u8; 3] {
    colour.map(|c| c.wrapping_add(128))
}

fn hex(colour: [u8; 3]) -> String {
    format!("0x{:02x}{:02x}{:02x}", colour[0], colour[1], colour[2])
}

/// A camera that shows `colour` in RGB, `size` (`320x240`) at 10 frames a second.
fn solid(colour: [u8; 3], size: &str) -> Source {
    Source::Lavfi { graph: format!("color=c={}:s={size}:r=10,format=rgb24", hex(colour)) }
}

/// A camera that never delivers a frame (every frame dropped, produced in real time so it
/// idles). `marker` makes its ffmpeg findable in /proc.
fn never_delivers(marker: [u8; 3]) -> Source {
    Source::Lavfi { graph: format!("color=c={}:s=32x32:r=5,realtime,select=0", hex(marker)) }
}

fn settings(dir: &Path, camera: bool) -> Arc<LiveSettings> {
    let path = dir.join("settings.json");
    std::fs::write(&path, format!("{{\"NodeCameraEnabled\": {camera}}}")).unwrap();
    Arc::new(LiveSettings::open(path).unwrap())
}

/// The capability with the switch on, reading `source` (or, for `None`, the devices under
/// `config.root`).
struct Fixture {
    capability: CameraCapability,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(source: Option<Source>, configure: impl FnOnce(&mut Config)) -> Fixture {
        require("ffmpeg", "ffmpeg");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        std::fs::create_dir(dir.path().join("dev")).unwrap();
        let mut config = Config {
            root: dir.path().join("dev"),
            limits: Limits { temp_root: dir.path().join("tmp"), ..Limits::default() },
            test_source: source,
            ..Config::default()
        };
        configure(&mut config);
        let capability = CameraCapability::with_config(settings(dir.path(), true), config);
        Fixture { capability, dir }
    }

    fn command(&self, name: &str) -> Command {
        self.capability.commands.iter().find(|command| command.name() == name).unwrap().clone()
    }

    async fn call(&self, name: &str, args: Value) -> ToolOutcome {
        self.call_with(name, args, CallContext::detached()).await
    }

    async fn call_with(&self, name: &str, args: Value, ctx: CallContext) -> ToolOutcome {
        self.command(name).call(request(name, args), ctx).await
    }

    fn temp_entries(&self) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(self.dir.path().join("tmp")).unwrap().map(|entry| entry.unwrap().path()).collect()
    }
}

fn request(name: &str, args: Value) -> InvokeRequest {
    InvokeRequest {
        id: "t".into(),
        command: name.into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: Caller::Mcp,
    }
}

/// The image block's bytes and mime type.
fn image_of(output: &ToolOutput) -> (Vec<u8>, String) {
    match output.blocks.as_slice() {
        [Content::Image { data, mime_type }] => (STANDARD.decode(data).unwrap(), mime_type.clone()),
        other => panic!("not one image block: {other:?}"),
    }
}

/// RGB8 pixels, width, height.
fn decode_png(bytes: &[u8]) -> (Vec<u8>, u32, u32) {
    let mut reader = png::Decoder::new(Cursor::new(bytes)).read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
    buffer.truncate(info.buffer_size());
    (buffer, info.width, info.height)
}

fn decode_jpeg(bytes: &[u8]) -> (Vec<u8>, u32, u32) {
    let mut decoder = jpeg_decoder::Decoder::new(Cursor::new(bytes));
    let pixels = decoder.decode().unwrap();
    let info = decoder.info().unwrap();
    assert_eq!(info.pixel_format, jpeg_decoder::PixelFormat::RGB24);
    (pixels, u32::from(info.width), u32::from(info.height))
}

fn close(a: &[u8], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

#[tokio::test]
async fn a_png_snap_holds_exactly_the_cameras_colour() {
    let colour = random_colour();
    let fixture = Fixture::new(Some(solid(colour, "320x240")), |_| {});
    let output = fixture.call("camera.snap", json!({"format": "png"})).await.unwrap();
    let (bytes, mime) = image_of(&output);
    assert_eq!(mime, "image/png");
    let (rgb, width, height) = decode_png(&bytes);
    assert_eq!((width, height), (320, 240), "under the default maxWidth 1280: not scaled");
    let wrong = rgb.chunks_exact(3).filter(|pixel| *pixel != colour).count();
    assert_eq!(wrong, 0, "every pixel is {colour:?}");
    let meta = output.payload.clone().unwrap();
    assert_eq!(meta, json!({"format": "png", "width": 320, "height": 240, "bytes": bytes.len(), "deviceId": "lavfi"}));
    let gateway = output.gateway_payload();
    assert_eq!(
        (&gateway["format"], &gateway["width"], &gateway["height"]),
        (&json!("png"), &json!(320), &json!(240)),
        "upstream's payload"
    );
    assert_eq!(STANDARD.decode(gateway["base64"].as_str().unwrap()).unwrap(), bytes);
    assert!(!meta.to_string().contains(gateway["base64"].as_str().unwrap()), "never base64 in the text");
}

#[tokio::test]
async fn a_jpeg_snap_is_the_default_and_close_to_the_cameras_colour() {
    let colour = random_colour();
    let fixture = Fixture::new(Some(solid(colour, "320x240")), |_| {});
    let output = fixture.call("camera.snap", json!({"quality": 95})).await.unwrap();
    let (bytes, mime) = image_of(&output);
    assert_eq!(mime, "image/jpeg");
    let (rgb, width, height) = decode_jpeg(&bytes);
    assert_eq!((width, height), (320, 240));
    let off = rgb.chunks_exact(3).filter(|pixel| !close(pixel, colour, 6)).count();
    assert_eq!(off, 0, "every pixel within 6 of {colour:?}; e.g. {:?}", &rgb[..3]);
    assert_eq!(output.payload.as_ref().unwrap()["format"], "jpeg");
    assert_eq!(
        (output.gateway_payload()["width"].clone(), output.gateway_payload()["height"].clone()),
        (json!(320), json!(240))
    );
    // quality reaches the encoder: a detailed picture at the worst quality is a smaller file.
    let detailed = Fixture::new(Some(Source::Lavfi { graph: "testsrc2=s=320x240:r=10".into() }), |_| {});
    let size = |quality: u8| {
        let detailed = &detailed;
        async move {
            let output = detailed.call("camera.snap", json!({"quality": quality, "format": "JPG"})).await.unwrap();
            image_of(&output).0.len()
        }
    };
    let (best, worst) = (size(100).await, size(1).await);
    assert!(worst * 3 < best, "quality 1: {worst} bytes, quality 100: {best} bytes");
}

/// The (width, height) the PNG of a snap of a `size` camera at `max_width` has.
async fn snapped_size(size: &str, max_width: Value) -> (u32, u32) {
    let fixture = Fixture::new(Some(solid([10, 20, 30], size)), |_| {});
    let output = fixture.call("camera.snap", json!({"format": "png", "maxWidth": max_width})).await.unwrap();
    let (_, width, height) = decode_png(&image_of(&output).0);
    let meta = output.payload.unwrap();
    assert_eq!((meta["width"].clone(), meta["height"].clone()), (json!(width), json!(height)), "metadata = image");
    (width, height)
}

#[tokio::test]
async fn max_width_scales_down_to_exact_sizes_and_is_clamped_at_both_ends() {
    assert_eq!(snapped_size("320x240", json!(160)).await, (160, 120));
    assert_eq!(snapped_size("320x240", json!(100)).await, (100, 76), "height kept even (75 -> 76)");
    assert_eq!(snapped_size("320x240", json!(1000)).await, (320, 240), "never scaled up");
    assert_eq!(snapped_size("320x240", json!(16)).await, (16, 12), "the smallest width");
    assert_eq!(snapped_size("320x240", json!(15)).await, (16, 12), "below it: clamped up to 16");
    assert_eq!(snapped_size("320x240", json!(-5)).await, (16, 12));
    assert_eq!(snapped_size("4200x20", json!(4096)).await, (4096, 20), "the largest width");
    assert_eq!(snapped_size("4200x20", json!(4097)).await, (4096, 20), "above it: clamped down to 4096");
    assert_eq!(snapped_size("4200x20", Value::Null).await, (1280, 6), "the default maxWidth is 1280");
}

#[test]
fn arguments_follow_upstreams_defaults_clamps_and_errors() {
    let snap = |value: Value| SnapArgs::parse(value.as_object().unwrap());
    assert_eq!(
        snap(json!({})).unwrap(),
        SnapArgs { device_id: None, format: ImageFormat::Jpeg, max_width: 1280, quality: 80 }
    );
    let edges = |quality: i64| snap(json!({"quality": quality})).unwrap().quality;
    assert_eq!([edges(0), edges(1), edges(100), edges(101)], [1, 1, 100, 100]);
    let width = |width: i64| snap(json!({"maxWidth": width})).unwrap().max_width;
    assert_eq!([width(15), width(16), width(4096), width(4097)], [16, 16, 4096, 4096]);
    assert_eq!(snap(json!({"format": " PNG "})).unwrap().format, ImageFormat::Png);
    assert_eq!(snap(json!({"format": ""})).unwrap().format, ImageFormat::Jpeg, "blank is the default");
    assert_eq!(
        snap(json!({"format": "gif"})).unwrap_err().message,
        "Unsupported camera snap format `gif`. Supported formats: jpeg, png."
    );
    assert_eq!(snap(json!({"maxWidth": "wide"})).unwrap_err().message, "maxWidth must be a whole number");
    // Both scales: the Windows node's 1..100 and the gateway CLI's and agent tool's 0..1.
    let quality = |value: Value| snap(json!({"quality": value})).unwrap().quality;
    assert_eq!(
        [quality(json!(0.95)), quality(json!(0.5)), quality(json!(1.0)), quality(json!(1)), quality(json!(0))],
        [95, 50, 100, 1, 1]
    );
    assert_eq!([quality(json!(1.5)), quality(json!(80)), quality(json!(500))], [2, 80, 100]);
    assert_eq!(snap(json!({"quality": "high"})).unwrap_err().code, Some(INVALID_REQUEST));
    assert_eq!(snap(json!({"deviceId": " /dev/video2 "})).unwrap().device_id.as_deref(), Some("/dev/video2"));
    assert_eq!(snap(json!({"deviceId": ""})).unwrap().device_id, None, "blank is the default camera");
    assert!(snap(json!({"deviceId": 0})).unwrap_err().message.starts_with("deviceId must be a string"));

    let clip = |value: Value| ClipArgs::parse(value.as_object().unwrap());
    assert_eq!(clip(json!({})).unwrap(), ClipArgs { device_id: None, duration_ms: 3000, include_audio: true });
    let duration = |ms: i64| clip(json!({"durationMs": ms})).unwrap().duration_ms;
    assert_eq!([duration(99), duration(100), duration(60_000), duration(60_001)], [100, 100, 60_000, 60_000]);
    assert!(!clip(json!({"includeAudio": false})).unwrap().include_audio);
    assert_eq!(clip(json!({"includeAudio": "no"})).unwrap_err().message, "includeAudio must be true or false");
    assert_eq!(clip(json!({"format": "MP4"})).unwrap().duration_ms, 3000);
    assert_eq!(
        clip(json!({"format": "webm"})).unwrap_err().message,
        "Unsupported camera clip format `webm`. Supported formats: mp4."
    );
}

#[test]
fn jpeg_quality_maps_onto_ffmpegs_scale_at_its_ends() {
    assert_eq!([1, 80, 100].map(ffmpeg::jpeg_qscale), [31, 7, 2]);
}

/// ffmpeg processes whose command line contains `marker`'s hex.
fn ffmpegs_with(marker: [u8; 3]) -> Vec<u32> {
    let needle = hex(marker);
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline).contains(&needle).then_some(pid)
        })
        .collect()
}

#[tokio::test]
async fn an_image_over_the_size_limit_is_refused_at_its_edge() {
    let source = Source::Lavfi { graph: "testsrc2=s=320x240:r=10,format=rgb24".into() };
    let exact = Fixture::new(Some(source.clone()), |_| {});
    let size = image_of(&exact.call("camera.snap", json!({"format": "png"})).await.unwrap()).0.len();
    let at = Fixture::new(Some(source.clone()), |config| config.limits.max_image_bytes = size);
    assert_eq!(
        image_of(&at.call("camera.snap", json!({"format": "png"})).await.unwrap()).0.len(),
        size,
        "at the limit"
    );
    let over = Fixture::new(Some(source), |config| config.limits.max_image_bytes = size - 1);
    let error = over.call("camera.snap", json!({"format": "png"})).await.unwrap_err();
    assert_eq!(
        error.message,
        format!("Snap failed: the image is larger than {} bytes; ask for a smaller maxWidth or format jpeg", size - 1)
    );
}

#[tokio::test]
async fn a_camera_that_never_delivers_times_out_and_ffmpeg_is_killed() {
    let marker = random_colour();
    let fixture =
        Fixture::new(Some(never_delivers(marker)), |config| config.limits.snap_timeout = Duration::from_secs(1));
    let error = fixture.call("camera.snap", json!({})).await.unwrap_err();
    assert_eq!(error.message, "Snap failed: the camera delivered no frame within 1 s (ffmpeg stopped)");
    assert_eq!(error.code, Some(UNAVAILABLE));
    assert_eq!(ffmpegs_with(marker), Vec::<u32>::new(), "killed and reaped before the answer");

    let error =
        Fixture::new(Some(never_delivers(marker)), |config| config.limits.clip_allowance = Duration::from_secs(1))
            .call("camera.clip", json!({"durationMs": 100}))
            .await
            .unwrap_err();
    assert_eq!(error.message, "Clip failed: the camera did not deliver 0.1 s of video within 1.1 s (ffmpeg stopped)");
    assert_eq!(ffmpegs_with(marker), Vec::<u32>::new());
}

/// The clip of an answer: the embedded resource's bytes, written to `dir` for ffprobe.
fn clip_file(output: &ToolOutput, dir: &Path) -> std::path::PathBuf {
    let [Content::Resource { resource: EmbeddedResource::Blob { uri, mime_type, blob } }] = output.blocks.as_slice()
    else {
        panic!("not one embedded resource: {:?}", output.blocks)
    };
    assert_eq!(mime_type.as_deref(), Some("video/mp4"));
    assert!(uri.starts_with("clawmcp://camera.clip/") && uri.ends_with(".mp4"), "{uri}");
    let path = dir.join("received.mp4");
    std::fs::write(&path, STANDARD.decode(blob).unwrap()).unwrap();
    path
}

/// ffprobe's (duration in s, frames read) of the video stream.
fn probe(path: &Path) -> (f64, u64) {
    require("ffprobe", "ffmpeg");
    let out = Process::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-count_frames"])
        .args(["-show_entries", "stream=codec_name,nb_read_frames:format=duration", "-of", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["streams"][0]["codec_name"], "h264");
    let duration = info["format"]["duration"].as_str().unwrap().parse().unwrap();
    (duration, info["streams"][0]["nb_read_frames"].as_str().unwrap().parse().unwrap())
}

/// Every frame of `path` decoded to RGB8 at `width` x `height`.
fn frames(path: &Path, width: usize, height: usize) -> Vec<Vec<u8>> {
    let out = Process::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout.chunks_exact(width * height * 3).map(<[u8]>::to_vec).collect()
}

#[tokio::test]
async fn a_clip_has_the_asked_duration_and_frame_count() {
    let fixture = Fixture::new(Some(solid(random_colour(), "160x120")), |_| {});
    let output = fixture.call("camera.clip", json!({"durationMs": 2000})).await.unwrap();
    let (duration, frames) = probe(&clip_file(&output, fixture.dir.path()));
    assert!((duration - 2.0).abs() <= 0.1, "ffprobe says {duration} s");
    assert!(frames.abs_diff(20) <= 1, "{frames} frames at 10 fps");
    let meta = output.payload.clone().unwrap();
    assert_eq!(meta["durationMs"], json!((duration * 1000.0).round() as u64), "read from the MP4 itself");
    assert_eq!(meta["frames"], json!(frames));
    assert_eq!(
        (&meta["format"], &meta["requestedDurationMs"], &meta["hasAudio"], &meta["truncated"], &meta["deviceId"]),
        (&json!("mp4"), &json!(2000), &json!(false), &json!(false), &json!("lavfi"))
    );
    assert!(meta["audio"].as_str().unwrap().starts_with("not recorded"), "includeAudio defaults to true: {meta}");
    let gateway = output.gateway_payload();
    assert_eq!(
        (&gateway["format"], &gateway["hasAudio"], &gateway["durationMs"]),
        (&json!("mp4"), &json!(false), &meta["durationMs"])
    );
    assert_eq!(
        STANDARD.decode(gateway["base64"].as_str().unwrap()).unwrap().len() as u64,
        meta["bytes"].as_u64().unwrap()
    );
    assert_eq!(fixture.temp_entries(), Vec::<std::path::PathBuf>::new(), "the temp dir is gone");

    let quiet = fixture.call("camera.clip", json!({"durationMs": 50, "includeAudio": false})).await.unwrap();
    let meta = quiet.payload.clone().unwrap();
    assert_eq!(meta["requestedDurationMs"], 100, "clamped up to the shortest clip");
    assert!(meta.get("audio").is_none());
    let (duration, frames) = probe(&clip_file(&quiet, fixture.dir.path()));
    assert!((duration - 0.1).abs() <= 0.05 && frames == 1, "{duration} s, {frames} frames");
}

#[tokio::test]
async fn a_colour_change_at_one_second_shows_in_the_decoded_frames() {
    let (first, second) = {
        let colour = random_colour();
        (colour, far(colour))
    };
    let graph = format!(
        "color=c={}:s=160x120:r=10[a];color=c={}:s=160x120:r=10[b];[a][b]overlay=enable='gte(t,1)',format=rgb24",
        hex(first),
        hex(second)
    );
    let fixture = Fixture::new(Some(Source::Lavfi { graph }), |_| {});
    let output = fixture.call("camera.clip", json!({"durationMs": 2000})).await.unwrap();
    let decoded = frames(&clip_file(&output, fixture.dir.path()), 160, 120);
    assert_eq!(decoded.len(), 20);
    let centre = |frame: &Vec<u8>| {
        let at = (60 * 160 + 80) * 3;
        [frame[at], frame[at + 1], frame[at + 2]]
    };
    // H.264 at 4:2:0 is lossy: near, not equal; the two colours are 128 apart per channel.
    for (index, frame) in decoded.iter().enumerate() {
        let expected = if index < 10 { first } else { second };
        assert!(close(&centre(frame), expected, 24), "frame {index}: {:?}, expected {expected:?}", centre(frame));
    }
}

#[tokio::test]
async fn the_clip_size_limit_stops_a_clip_early() {
    let limit = 200_000;
    let noise = Source::Lavfi { graph: "testsrc2=s=320x240:r=30,noise=alls=100:allf=t".into() };
    let fixture = Fixture::new(Some(noise), |config| config.limits.max_clip_bytes = limit);
    let output = fixture.call("camera.clip", json!({"durationMs": 10_000})).await.unwrap();
    let meta = output.payload.clone().unwrap();
    let bytes = meta["bytes"].as_u64().unwrap();
    assert_eq!(meta["truncated"], true, "{meta}");
    assert!(bytes >= limit && bytes <= ffmpeg::clip_read_limit(limit), "{bytes} bytes");
    let (duration, frames) = probe(&clip_file(&output, fixture.dir.path()));
    assert!(duration < 10.0 && frames < 300, "stopped early: {duration} s, {frames} frames");
    assert_eq!(meta["frames"], json!(frames), "and says how much it holds");
    assert_eq!(fixture.temp_entries(), Vec::<std::path::PathBuf>::new());
}

#[tokio::test]
async fn cancelling_a_clip_stops_ffmpeg_and_removes_its_temp_dir() {
    let marker = random_colour();
    // Real time, as a camera: a 30 s clip takes 30 s unless stopped.
    let graph = format!("color=c={}:s=160x120:r=10,realtime,format=rgb24", hex(marker));
    let fixture = Arc::new(Fixture::new(Some(Source::Lavfi { graph }), |_| {}));
    let cancel = CancellationToken::new();
    let ctx = CallContext { cancel: cancel.clone(), progress: None, meta: None, request: None };
    let call = tokio::spawn({
        let fixture = fixture.clone();
        async move { fixture.call_with("camera.clip", json!({"durationMs": 30_000}), ctx).await }
    });
    // Mid-clip: ffmpeg runs and has its output file open in the private temp dir.
    let started = Instant::now();
    let pid = loop {
        let writing = fixture.temp_entries().iter().any(|dir| dir.join("clip.mp4").exists());
        if let ([pid], true) = (ffmpegs_with(marker).as_slice(), writing) {
            break *pid;
        }
        assert!(started.elapsed() < STARTUP_DEADLINE, "ffmpeg never started writing the clip");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.message, clawmcp_mcp::CANCELLED);
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "ffmpeg {pid} was killed and reaped");
    assert_eq!(fixture.temp_entries(), Vec::<std::path::PathBuf>::new(), "no temp file left");
}

#[tokio::test]
async fn the_switch_is_off_by_default_and_applies_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(dir.path(), false);
    let capability = CameraCapability::with_config(settings.clone(), Config::default());
    assert!(!crate::settings::Settings::default().node_camera_enabled, "off unless the owner turns it on");
    for command in &capability.commands {
        assert!(!command.is_listed(), "{} is listed while off", command.name());
        assert!(
            command.unavailable_reason().is_some_and(|reason| reason.starts_with("off: NodeCameraEnabled is false"))
        );
        let error = command.call(request(command.name(), json!({})), CallContext::detached()).await.unwrap_err();
        assert_eq!(error.code, Some(UNAVAILABLE));
        assert!(
            error.message.starts_with(&format!(
                "{} is disabled by user setting: the camera sees the room in front of this machine",
                command.name()
            )) && error.message.contains("clawmcp settings set NodeCameraEnabled true"),
            "{}",
            error.message
        );
    }
    std::fs::write(settings.path(), "{\"NodeCameraEnabled\": true}").unwrap();
    assert!(capability.commands.iter().all(Command::is_listed), "on: listed at once");
}

#[tokio::test]
async fn without_ffmpeg_only_the_list_is_served() {
    let fixture = Fixture::new(Some(solid([1, 2, 3], "32x32")), |config| config.ffmpeg = "clawmcp-no-such-ffmpeg");
    assert!(fixture.command("camera.list").is_listed(), "listing needs no ffmpeg");
    for name in ["camera.snap", "camera.clip"] {
        let command = fixture.command(name);
        assert!(!command.is_listed(), "{name}");
        assert_eq!(
            command.unavailable_reason().unwrap(),
            "unavailable: clawmcp-no-such-ffmpeg is not installed (not on the node's PATH); install it: apt install \
             ffmpeg"
        );
        let error = fixture.call(name, json!({})).await.unwrap_err();
        assert_eq!(error.code, Some(UNAVAILABLE));
        assert!(
            error.message.starts_with(&format!("{name} is not available on this machine: clawmcp-no-such-ffmpeg")),
            "{}",
            error.message
        );
    }
}

#[tokio::test]
async fn with_no_camera_the_list_is_empty_and_a_capture_says_why() {
    let fixture = Fixture::new(None, |_| {});
    let dev = fixture.dir.path().join("dev");
    std::fs::write(dev.join("video0"), b"").unwrap();
    let list = fixture.call("camera.list", json!({})).await.unwrap().payload.unwrap();
    assert_eq!(list, json!({"devices": [], "cameras": []}));
    let schema = list_spec().output_schema.unwrap().to_value();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&list));
    let windows_only = json!({"cameras": [{"deviceId": "/dev/video0", "name": "C920", "isDefault": true}]});
    assert!(!validator.is_valid(&windows_only), "both shapes, always");
    assert!(!validator.is_valid(
        &json!({"devices": [], "cameras": [{"DeviceId": "/dev/video0", "Name": "C920", "IsDefault": true}]})
    ));

    for name in ["camera.snap", "camera.clip"] {
        let error = fixture.call(name, json!({})).await.unwrap_err();
        assert_eq!(error.code, Some(UNAVAILABLE));
        assert_eq!(
            error.message,
            format!(
                "no camera found: {} has no video capture device (V4L2 /dev/videoN) (seen: {}: it is a regular file, \
                 not a device); plug a camera in (it appears as /dev/videoN), or check that the node's user may open \
                 it (the `video` group)",
                dev.display(),
                dev.join("video0").display()
            )
        );
        let unknown = fixture.call(name, json!({"deviceId": "/dev/video7"})).await.unwrap_err();
        assert!(unknown.message.starts_with("unknown deviceId `/dev/video7`: no camera found"), "{}", unknown.message);
    }
}

#[tokio::test]
async fn this_machines_dev_lists_its_cameras_through_the_command() {
    let fixture = Fixture::new(None, |config| config.root = "/dev".into());
    let list = fixture.call("camera.list", json!({})).await.unwrap().payload.unwrap();
    let expected: Vec<Value> = v4l2::scan(Path::new("/dev"))
        .cameras
        .iter()
        .enumerate()
        .map(|(index, camera)| json!({"deviceId": camera.id, "name": camera.name, "isDefault": index == 0}))
        .collect();
    let devices: Vec<Value> = expected
        .iter()
        .map(|camera| json!({"id": camera["deviceId"], "name": camera["name"], "position": "unknown", "deviceType": "v4l2"}))
        .collect();
    assert_eq!(list, json!({"devices": devices, "cameras": expected}), "here: no V4L2, empty lists");
}

#[test]
fn the_list_speaks_both_upstream_shapes_and_the_first_camera_is_the_default() {
    let camera = |id: &str, name: &str| v4l2::Camera { id: id.into(), node: id.into(), name: name.into() };
    let scan = v4l2::Scan {
        root: "/dev".into(),
        cameras: vec![
            camera("/dev/v4l/by-id/usb-C920-video-index0", "HD Pro Webcam C920"),
            camera("/dev/video2", "Integrated"),
        ],
        skipped: Vec::new(),
    };
    let list = list_answer(&scan);
    assert_eq!(
        list,
        json!({
            // What `openclaw nodes camera list` and the gateway's agent tool read.
            "devices": [
                {"id": "/dev/v4l/by-id/usb-C920-video-index0", "name": "HD Pro Webcam C920", "position": "unknown", "deviceType": "v4l2"},
                {"id": "/dev/video2", "name": "Integrated", "position": "unknown", "deviceType": "v4l2"},
            ],
            // The Windows node's.
            "cameras": [
                {"deviceId": "/dev/v4l/by-id/usb-C920-video-index0", "name": "HD Pro Webcam C920", "isDefault": true},
                {"deviceId": "/dev/video2", "name": "Integrated", "isDefault": false},
            ],
        })
    );
    let validator = jsonschema::validator_for(&list_spec().output_schema.unwrap().to_value()).unwrap();
    assert!(validator.is_valid(&list));
}

#[test]
fn a_busy_device_names_the_process_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let device = dir.path().join("video0");
    std::fs::write(&device, b"").unwrap();
    let mut holder =
        std::process::Command::new("sleep").arg("30").stdin(std::fs::File::open(&device).unwrap()).spawn().unwrap();
    let stderr = format!(
        "[video4linux2,v4l2 @ 0x55] ioctl(VIDIOC_STREAMON): Device or resource busy\n{}: Device or resource busy\n",
        device.display()
    );
    let message = ffmpeg::failure_message("Snap failed", Some(&device), "exit status: 251", &stderr);
    let _ = holder.kill();
    let _ = holder.wait();
    // Another test's child, forked but not yet exec'd, may hold a copy of the descriptor for
    // an instant (close-on-exec closes it only at the exec): it would be named too.
    let (prefix, suffix) =
        (format!("Snap failed: {} is busy: it is in use by ", device.display()), "; close that program and try again");
    assert!(message.starts_with(&prefix) && message.ends_with(suffix), "{message}");
    assert!(message.contains(&format!("sleep (pid {})", holder.id())), "{message}");
    let other = ffmpeg::failure_message("Clip failed", None, "exit status: 1", "x\nsomething broke\n\n");
    assert_eq!(other, "Clip failed: ffmpeg exit status: 1: something broke");
}

/// The real `/dev` of the machine running the tests: with a camera, a photo and a clip from it
/// (the V4L2 path end to end); without one (this project's CI: no V4L2 in its kernel), what the
/// user gets there: empty lists and a capture that says no camera was found.
#[tokio::test]
async fn this_machines_cameras_take_a_photo_and_a_clip_or_say_there_is_none() {
    let fixture = Fixture::new(None, |config| config.root = "/dev".into());
    let list = fixture.call("camera.list", json!({})).await.unwrap().payload.unwrap();
    if list["cameras"].as_array().unwrap().is_empty() {
        assert_eq!(list["devices"], json!([]), "{list}");
        for name in ["camera.snap", "camera.clip"] {
            let error = fixture.call(name, json!({"durationMs": 1000})).await.unwrap_err();
            assert_eq!(error.code, Some(UNAVAILABLE));
            assert!(
                error.message.starts_with("no camera found: /dev has no video capture device"),
                "{}",
                error.message
            );
        }
        return;
    }
    let photo = fixture.call("camera.snap", json!({"format": "png", "maxWidth": 640})).await.unwrap();
    let (_, width, _) = decode_png(&image_of(&photo).0);
    assert!(width <= 640);
    let clip = fixture.call("camera.clip", json!({"durationMs": 1000})).await.unwrap();
    let (duration, frames) = probe(&clip_file(&clip, fixture.dir.path()));
    assert!(duration > 0.5 && frames > 0, "{duration} s, {frames} frames");
}
