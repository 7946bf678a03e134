//! Wayland recordings of the real thing: the desktop of the portal tests (sway headless,
//! PipeWire, xdg-desktop-portal with its wlr and gtk backends, on a private bus as the desktop
//! user) plus wireplumber, recorded by the node re-run as that user (the portal identifies its
//! caller by process), checked with ffprobe and by decoding the frames.
//!
//! Why a C file in the test tree: xdg-desktop-portal-wlr 0.7 refuses to cast unless the
//! compositor offers dma-buf (it compares the portal's interface version with screencopy's 3;
//! fixed upstream in 0.8), and a headless pixman sway has no dma-buf. `xdpw-shm-shim.c` (ours),
//! LD_PRELOADed into the wlr backend of this test desktop only, announces the shm format as a
//! dma-buf one so it proceeds with shm buffers. Real desktops (a GPU, or xdpw 0.8+) need nothing
//! of the kind, and the node never loads it.

use std::path::{Path, PathBuf};
use std::process::Command as Std;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::capability::{Caller, InvokeRequest};
use crate::screen::ScreenCapability;
use crate::screen::portal::tests::{CLIENT_REQUEST, as_desktop_user_in, portal_desktop_with, silent_portal_stand_in};
use crate::screen::record::tests::{pixel_per_frame, probe};
use crate::screen::record::{RecordOptions, TEMP_PREFIX};
use crate::screen::tests::{close, live_settings, random_colour};
use crate::test_support::{desktop_command, private_bus, processes_mentioning, require};

const REAL_CAST_TEST: &str =
    "screen::cast::tests::a_real_screen_cast_records_the_colours_in_order_and_a_cancel_stall_or_drop_leaves_nothing";

/// Compiles the shim (see the module doc) into a directory the desktop user can read.
fn shim(dir: &Path) -> PathBuf {
    require("gcc", "gcc");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/src/screen/cast/xdpw-shm-shim.c");
    let out = dir.join("xdpw-shm-shim.so");
    let status =
        Std::new("gcc").args(["-O2", "-shared", "-fPIC", "-o"]).arg(&out).arg(source).arg("-ldl").status().unwrap();
    assert!(status.success(), "gcc could not build {source}");
    out
}

/// `swaymsg` in the desktop's session, as its user.
fn swaymsg(runtime: &Path, command: &str) {
    let socket = std::fs::read_dir(runtime)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("sway-ipc.")))
        .expect("sway's IPC socket");
    let status = desktop_command("swaymsg", runtime).env("SWAYSOCK", socket).args(["-q", command]).status().unwrap();
    assert!(status.success(), "swaymsg {command}");
}

fn hex([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[tokio::test]
async fn a_real_screen_cast_records_the_colours_in_order_and_a_cancel_stall_or_drop_leaves_nothing() {
    if let Some(request) = std::env::var_os(CLIENT_REQUEST) {
        return cast_client(request).await;
    }
    for (program, package) in [("gst-launch-1.0", "gstreamer1.0-tools"), ("ffprobe", "ffmpeg"), ("swaymsg", "sway")] {
        require(program, package);
    }
    let shim_dir = tempfile::tempdir().unwrap();
    let shim = shim(shim_dir.path());
    let desktop = portal_desktop_with(Some(&shim)).await;
    let runtime = desktop.sway.runtime.path().to_owned();
    let temp = runtime.join("recordings");
    std::fs::create_dir(&temp).unwrap();
    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(&temp, Some(crate::test_support::desktop_user()), None).unwrap();
    }
    let first = desktop.background;
    let second = std::iter::repeat_with(random_colour).find(|&c| !close(c, first, 48)).unwrap();
    let third = std::iter::repeat_with(random_colour).find(|&c| !close(c, first, 48) && !close(c, second, 48)).unwrap();
    let client = as_desktop_user_in(&desktop, REAL_CAST_TEST, json!({"temp": temp}));

    // The cast's consumer is named after its recording directory.
    let started = Instant::now();
    while processes_mentioning("client-name=clawmcp-record-").is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "the recording never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A static headless screen sends no frame: make sway repaint (a real desktop does by itself)
    // until ffmpeg has read the first frame (on a loaded machine linking the stream took over a
    // second, and a fixed wait let the first colour go unrecorded), then change the colour twice,
    // well inside the clip, which starts at its first frame.
    let linking = Instant::now();
    while bytes_read_by_the_recording_ffmpeg() < FRAME_BYTES {
        assert!(linking.elapsed() < Duration::from_secs(8), "no frame reached ffmpeg within 8 s of kicking sway");
        swaymsg(&runtime, "output * dpms on");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    swaymsg(&runtime, &format!("output HEADLESS-1 bg {} solid_color", hex(second)));
    tokio::time::sleep(Duration::from_millis(800)).await;
    swaymsg(&runtime, &format!("output HEADLESS-1 bg {} solid_color", hex(third)));
    let got = tokio::task::spawn_blocking(move || client.wait()).await.unwrap();

    assert_eq!(got["listed"], true, "portal, gst and ffmpeg present: listed; {}", got["reason"]);
    let recorded = &got["recorded"];
    let meta = &recorded["meta"];
    assert!(meta.is_object(), "{recorded}");
    assert_eq!(
        (&meta["format"], &meta["fps"], &meta["screenIndex"], &meta["backend"]),
        (&json!("mp4"), &json!(10), &json!(0), &json!("portal"))
    );
    assert_eq!((&meta["width"], &meta["height"]), (&json!(640), &json!(480)));
    use base64::Engine;
    let mp4 = base64::engine::general_purpose::STANDARD.decode(recorded["video"].as_str().unwrap()).unwrap();
    let (codec, width, height, frames, duration) = probe(&mp4);
    assert_eq!((codec.as_str(), width, height), ("h264", 640, 480));
    assert!(frames.abs_diff(25) <= 1, "{frames} frames for 2.5 s at 10 fps");
    assert!((duration - 2.5).abs() <= 0.15, "{duration} s");
    let pixels = pixel_per_frame(&mp4, 640, 480, 5, 5);
    let mut seen: Vec<[u8; 3]> = Vec::new();
    let mut between = 0;
    for pixel in &pixels {
        let Some(colour) = [first, second, third].into_iter().find(|&c| close(*pixel, c, 8)) else {
            // sway shows its own grey while it restarts swaybg with the new colour: a frame or
            // so at each change, never anything else.
            assert!(
                pixel[0] == pixel[1] && pixel[1] == pixel[2],
                "a frame of none of the colours: {pixel:?} in {pixels:?}"
            );
            between += 1;
            continue;
        };
        if seen.last() != Some(&colour) {
            seen.push(colour);
        }
    }
    // One or two frames per change on a quiet machine; swaybg restarts slower under load, and
    // the colours' order is what the test is about. Most of the clip must still be the colours.
    assert!(between <= 8, "{between} of {} frames were sway's own grey: {pixels:?}", pixels.len());
    assert_eq!(seen, vec![first, second, third], "the colours in the order painted: {pixels:?}");

    let cancelled = &got["cancelled"];
    assert_eq!(cancelled["error"], clawmcp_mcp::CANCELLED, "{cancelled}");
    assert_eq!(cancelled["left"], json!([]), "no gst or ffmpeg outlived the cancelled call: {cancelled}");
    assert_eq!(cancelled["dirs"], json!([]), "its directory is gone: {cancelled}");
    assert!(cancelled["ms"].as_f64().unwrap() < 30_000.0, "answered long before the minute: {cancelled}");

    let stalled = &got["stalled"];
    let error = stalled["error"].as_str().unwrap_or_else(|| panic!("a screen that never repaints recorded: {stalled}"));
    assert!(
        error.starts_with("Recording failed: no frame arrived from the screen cast within 10 s")
            && error.contains("wireplumber"),
        "{error}"
    );
    assert!(stalled["ms"].as_f64().unwrap() < 15_000.0, "bounded by the first-frame time-out: {stalled}");
    assert_eq!((&stalled["left"], &stalled["dirs"]), (&json!([]), &json!([])), "{stalled}");
    let dropped = &got["dropped"];
    assert_eq!((&dropped["left"], &dropped["dirs"]), (&json!([]), &json!([])), "a dropped call: {dropped}");
    assert!(processes_mentioning("client-name=clawmcp-record-").is_empty());
}

/// One 640x480 I420 frame, as y4m carries it.
const FRAME_BYTES: u64 = 640 * 480 * 3 / 2;

/// What the recording's ffmpeg (the one reading y4m into a `clawmcp-record-` directory) has read,
/// from its `/proc/PID/io` (`rchar` counts what it read from its stdin, the frames); 0 before it
/// runs.
fn bytes_read_by_the_recording_ffmpeg() -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(|name| name.parse::<u32>().is_ok()))
        .filter(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("yuv4mpegpipe") && cmdline.contains(TEMP_PREFIX)
        })
        .filter_map(|entry| {
            let io = std::fs::read_to_string(entry.path().join("io")).ok()?;
            io.lines().find_map(|line| line.strip_prefix("rchar:")).and_then(|n| n.trim().parse().ok())
        })
        .max()
        .unwrap_or(0)
}

/// Recording directories in `temp`.
fn recordings(temp: &Path) -> Vec<String> {
    std::fs::read_dir(temp)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(TEMP_PREFIX))
        .collect()
}

fn record_request(args: Value) -> InvokeRequest {
    InvokeRequest {
        id: "t".into(),
        command: "screen.record".into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: Caller::Mcp,
    }
}

/// The child's side: the node's screen capability finding the session in its environment,
/// recording 2.5 s, then a minute it cancels after a second, then a second of a screen nobody
/// repaints, then a minute whose call it drops once recording.
async fn cast_client(request: std::ffi::OsString) {
    let request: Value = serde_json::from_slice(&std::fs::read(request).unwrap()).unwrap();
    let temp = PathBuf::from(request["temp"].as_str().unwrap());
    let settings_dir = tempfile::tempdir_in(&temp).unwrap();
    let options = RecordOptions { temp_root: temp.clone(), ..RecordOptions::default() };
    let capability = ScreenCapability::with_recording(live_settings(settings_dir.path(), true), None, options);
    let command = capability.commands.iter().find(|c| c.name() == "screen.record").unwrap().clone();
    let listed = command.is_listed();
    // Why not, naming the package, when the parent's assertion fails.
    let reason = command.unavailable_reason();
    let outcome = command
        .call(record_request(json!({"durationMs": 2500, "fps": 10})), clawmcp_mcp::CallContext::detached())
        .await;
    let recorded = match outcome {
        Ok(output) => {
            let Some(clawmcp_mcp::Content::Resource { resource: clawmcp_mcp::EmbeddedResource::Blob { blob, .. } }) =
                output.blocks.first()
            else {
                panic!("no video: {output:?}")
            };
            json!({"meta": output.payload, "video": blob})
        }
        Err(error) => json!({"error": error.message}),
    };

    let ctx = clawmcp_mcp::CallContext::detached();
    let cancel = ctx.cancel.clone();
    let started = Instant::now();
    let call = command.call(record_request(json!({"durationMs": 60000})), ctx);
    let canceller = async {
        let name = loop {
            if let Some(name) = recordings(&temp).first().filter(|name| processes_mentioning(name).len() >= 2) {
                break name.clone();
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the recording never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        tokio::time::sleep(Duration::from_millis(1000)).await;
        cancel.cancel();
        name
    };
    let (outcome, name) = tokio::join!(call, canceller);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let cancelled = json!({
        "error": outcome.err().map(|error| error.message),
        "left": processes_mentioning(&name),
        "dirs": recordings(&temp),
        "ms": ms,
    });

    // Nothing repaints now (the parent no longer kicks sway), so no frame comes: the call must
    // fail saying why, not hang, and leave nothing behind.
    let started = Instant::now();
    let outcome = command.call(record_request(json!({"durationMs": 1000})), clawmcp_mcp::CallContext::detached()).await;
    let mut left = processes_mentioning("client-name=clawmcp-record-");
    left.extend(processes_mentioning(&temp.to_string_lossy()));
    let stalled = json!({
        "error": outcome.err().map(|error| error.message),
        "left": left,
        "dirs": recordings(&temp),
        "ms": started.elapsed().as_secs_f64() * 1e3,
    });

    // A call whose future is dropped (its client went away): kill_on_drop ends gst and ffmpeg,
    // TempDir's drop the directory, at once.
    let started = Instant::now();
    let name = tokio::select! {
        _ = command.call(record_request(json!({"durationMs": 60000})), clawmcp_mcp::CallContext::detached()) => {
            panic!("a minute's recording ended early")
        }
        name = async {
            loop {
                if let Some(name) = recordings(&temp).first().filter(|name| processes_mentioning(name).len() >= 2) {
                    break name.clone();
                }
                assert!(started.elapsed() < Duration::from_secs(30), "the recording never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } => name,
    };
    let dropped = Instant::now();
    while !processes_mentioning(&name).is_empty() && dropped.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dropped = json!({"left": processes_mentioning(&name), "dirs": recordings(&temp)});

    let out = request["out"].as_str().unwrap();
    let answers = json!({"listed": listed, "reason": reason, "recorded": recorded, "cancelled": cancelled, "stalled": stalled, "dropped": dropped});
    std::fs::write(out, answers.to_string()).unwrap();
}

// Two workers: the availability probe blocks the thread asking (it is synchronous) while the
// stand-in portal, a task of this runtime, must answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_portal_or_gstreamer_recording_is_unlisted_and_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let (_bus, address) = private_bus(dir.path(), None, Std::new("dbus-daemon"));
    let record = |capability: &ScreenCapability| {
        capability.commands.iter().find(|c| c.name() == "screen.record").unwrap().clone()
    };
    let timeout = Duration::from_secs(5);
    let no_portal = ScreenCapability::for_portal(live_settings(dir.path(), true), address.clone(), timeout);
    assert!(!record(&no_portal).is_listed());
    let reason = record(&no_portal).unavailable_reason().unwrap();
    assert!(reason.contains("no desktop portal") && reason.contains("xdg-desktop-portal-wlr"), "{reason}");

    // The portal is there, gst-launch-1.0 is not on the node's PATH (ffmpeg is).
    let _stand_in = silent_portal_stand_in(&address).await;
    let path = tempfile::tempdir().unwrap();
    let ffmpeg = crate::availability::MissingBackend::program("ffmpeg", "ffmpeg").unwrap();
    std::os::unix::fs::symlink(ffmpeg, path.path().join("ffmpeg")).unwrap();
    let options = RecordOptions { search_path: Some(path.path().as_os_str().to_owned()), ..RecordOptions::default() };
    let no_gst =
        ScreenCapability::for_portal_recording(live_settings(dir.path(), true), address.clone(), timeout, options);
    assert!(!record(&no_gst).is_listed());
    assert_eq!(
        record(&no_gst).unavailable_reason().unwrap(),
        "unavailable: gst-launch-1.0 is not installed (not on the node's PATH); install it: apt install gstreamer1.0-tools"
    );

    // Everything installed, but the portal does not offer ScreenCast (no backend implements it).
    let no_screencast = ScreenCapability::for_portal(live_settings(dir.path(), true), address.clone(), timeout);
    assert!(!record(&no_screencast).is_listed());
    let reason = record(&no_screencast).unavailable_reason().unwrap();
    assert!(
        reason.starts_with(&format!(
            "unavailable: the desktop portal on the session D-Bus at {address} does not offer org.freedesktop.portal.ScreenCast"
        )) && reason.contains("xdg-desktop-portal-wlr"),
        "{reason}"
    );
}
