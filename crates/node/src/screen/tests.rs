//! Captures of a real X server (Xvfb) showing content the test drew at known places in random
//! colours: the returned image must hold exactly those pixels (PNG), or nearly (JPEG).

use std::io::Cursor;
use std::path::Path;

use clawmcp_mcp::CallContext;
use clawmcp_mcp::tool::codes::UNAVAILABLE;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ChangeWindowAttributesAux, ConnectionExt as _, CreateWindowAux, WindowClass};

use super::*;
use crate::capability::{Caller, InvokeRequest};
use crate::test_support::{Spawned, xvfb_with};

/// A random 24-bit colour, never black (the server's own background) and never white.
pub(super) fn random_colour() -> [u8; 3] {
    let mut bytes = [0u8; 3];
    getrandom::fill(&mut bytes).unwrap();
    bytes[0] |= 0x20;
    bytes[2] &= 0xdf;
    bytes
}

pub(super) fn pixel_value(rgb: [u8; 3]) -> u32 {
    u32::from(rgb[0]) << 16 | u32::from(rgb[1]) << 8 | u32::from(rgb[2])
}

/// An X server with the root painted `background` and a `window` colour at 100,50 (80x60).
struct Scene {
    _server: Spawned,
    display: String,
    background: [u8; 3],
    window: [u8; 3],
    _dir: tempfile::TempDir,
}

fn scene_sized(geometry: &str) -> Scene {
    scene_with(geometry, &[])
}

fn scene_with(geometry: &str, server_args: &[&str]) -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let (server, display) = xvfb_with(dir.path(), geometry, server_args);
    let (background, window) = (random_colour(), random_colour());
    let (conn, screen) = x11rb::connect(Some(&display)).unwrap();
    let root = conn.setup().roots[screen].root;
    conn.change_window_attributes(root, &ChangeWindowAttributesAux::new().background_pixel(pixel_value(background)))
        .unwrap();
    conn.clear_area(false, root, 0, 0, 0, 0).unwrap();
    paint(&conn, root, (100, 50, 80, 60), window);
    // The window must outlive the connection: keep the client alive by leaking it to the test.
    std::mem::forget(conn);
    Scene { _server: server, display, background, window, _dir: dir }
}

/// A borderless window of `colour` at `(x, y, width, height)`, mapped and drawn when this returns.
fn paint(conn: &impl Connection, root: u32, (x, y, width, height): (i16, i16, u16, u16), colour: [u8; 3]) {
    let id = conn.generate_id().unwrap();
    let aux = CreateWindowAux::new().background_pixel(pixel_value(colour)).override_redirect(1);
    conn.create_window(24, id, root, x, y, width, height, 0, WindowClass::INPUT_OUTPUT, 0, &aux).unwrap();
    conn.map_window(id).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap(); // a round trip: everything above is done
}

/// Runs `program args` against `display`, failing the test (with the package to install) if it
/// is missing or fails.
fn run_x_tool(display: &str, program: &str, package: &str, args: &[&str], stdin: &str) {
    use std::io::Write;
    crate::test_support::require(program, package);
    let mut child = std::process::Command::new(program)
        .args(args)
        .env("DISPLAY", display)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{program} {args:?} failed: {status}");
}

#[test]
fn every_monitor_is_captured_with_its_geometry_and_the_desktop_scale() {
    let scene = scene_sized("1280x720x24");
    // Two RandR monitors of different sizes over the one Xvfb screen, the left one primary.
    run_x_tool(
        &scene.display,
        "xrandr",
        "x11-xserver-utils",
        &["--setmonitor", "*left", "800/200x720/150+0+0", "none"],
        "",
    );
    run_x_tool(
        &scene.display,
        "xrandr",
        "x11-xserver-utils",
        &["--setmonitor", "right", "480/100x400/100+800+0", "none"],
        "",
    );
    run_x_tool(&scene.display, "xrdb", "x11-xserver-utils", &["-nocpp", "-merge"], "Xft.dpi: 144\n");
    let (left, right) = (random_colour(), random_colour());
    let (conn, screen) = x11rb::connect(Some(&scene.display)).unwrap();
    let root = conn.setup().roots[screen].root;
    paint(&conn, root, (0, 0, 800, 720), left);
    paint(&conn, root, (800, 0, 480, 400), right);

    let shot = |index: u64| {
        let output =
            snapshot(Some(&scene.display), &args(json!({"screenIndex": index, "includePointer": false}))).unwrap();
        let (rgb, width, height, _) = decoded(&output);
        (rgb, width, height, output.payload.unwrap())
    };
    let (rgb, width, height, meta) = shot(0);
    assert_eq!((width, height), (800, 720), "the primary monitor comes first");
    for (x, y) in [(0, 0), (799, 0), (0, 719), (799, 719)] {
        assert_eq!(at(&rgb, width, x, y), left, "({x},{y}) of the left monitor");
    }
    let names: Vec<&str> = meta["monitors"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["left", "screen", "right"], "primary first, then left to right");
    assert_eq!(
        meta["monitors"][2],
        json!({"index": 2, "name": "right", "x": 800, "y": 0, "width": 480, "height": 400, "widthMm": 100,
               "heightMm": 100, "primary": false, "scaleFactor": 1.5}),
        "geometry, physical size, and Xft.dpi 144 / 96"
    );
    assert_eq!(meta["monitors"][0]["primary"], true);

    let (rgb, width, height, meta) = shot(2);
    assert_eq!((width, height, meta["screenIndex"].clone()), (480, 400, json!(2)));
    for (x, y) in [(0, 0), (479, 0), (0, 399), (479, 399)] {
        assert_eq!(at(&rgb, width, x, y), right, "({x},{y}) of the right monitor");
    }
    let (rgb, width, height, _) = shot(1);
    assert_eq!((width, height), (1280, 720), "the whole screen is a monitor too");
    assert_eq!(at(&rgb, width, 1000, 600), scene.background, "below the right monitor: the root");
    assert_eq!(at(&rgb, width, 900, 100), right);
}

#[test]
fn shared_memory_where_the_server_has_it_and_the_core_request_where_not_see_the_same_pixels() {
    let with_shm = scene();
    let shared = x11::capture(Some(&with_shm.display), 0, false).unwrap();
    assert!(shared.shared_memory, "Xvfb offers MIT-SHM 1.2");
    let without_shm = scene_with("640x480x24", &["-extension", "MIT-SHM"]);
    let core = x11::capture(Some(&without_shm.display), 0, false).unwrap();
    assert!(!core.shared_memory, "no MIT-SHM: the core request");
    for (scene, captured) in [(&with_shm, &shared), (&without_shm, &core)] {
        assert_eq!((captured.width, captured.height), (640, 480));
        assert_eq!(at(&captured.rgb, 640, 5, 5), scene.background);
        assert_eq!(at(&captured.rgb, 640, 100, 50), scene.window);
        assert_eq!(at(&captured.rgb, 640, 179, 109), scene.window);
        assert_eq!(at(&captured.rgb, 640, 180, 110), scene.background);
        let painted = captured.rgb.chunks_exact(3).filter(|p| *p == scene.window).count();
        assert_eq!(painted, 80 * 60, "exactly the window's pixels");
    }
}

#[test]
fn captures_on_the_kept_session_see_every_change_and_a_restarted_server() {
    let scene = scene();
    let first = x11::capture(Some(&scene.display), 0, false).unwrap();
    assert_eq!(at(&first.rgb, 640, 100, 50), scene.window);
    // A window of a new colour over the old one: the reused segment holds the new pixels.
    let newer = loop {
        let colour = random_colour();
        if colour != scene.window && colour != scene.background {
            break colour;
        }
    };
    let (conn, screen) = x11rb::connect(Some(&scene.display)).unwrap();
    paint(&conn, conn.setup().roots[screen].root, (100, 50, 80, 60), newer);
    // The next capture fills a handed-back buffer: a larger one, full of stale bytes (what a
    // capture of a larger monitor leaves). Nothing of it may show.
    x11::recycle(first.rgb);
    x11::recycle(vec![0xAB; 640 * 480 * 3 * 2]);
    let second = x11::capture(Some(&scene.display), 0, false).unwrap();
    assert!(second.shared_memory);
    assert_eq!(second.rgb.len(), 640 * 480 * 3, "exactly the screen's pixels, whatever buffer held them");
    assert_eq!(at(&second.rgb, 640, 100, 50), newer, "the repainted window, not the first capture's pixels");
    assert_eq!(at(&second.rgb, 640, 5, 5), scene.background);
    assert_eq!(at(&second.rgb, 640, 639, 479), scene.background, "the last pixel, not a stale byte");
    drop(conn);

    // The server goes away and another, of another size, takes its display: the next capture
    // finds the kept connection broken and captures the new server.
    let Scene { _server: server, display, _dir: dir, .. } = scene;
    drop(server);
    let (restarted, _) = xvfb_with(dir.path(), "320x200x24", &[&display]);
    let third = x11::capture(Some(&display), 0, false).unwrap();
    assert_eq!((third.width, third.height), (320, 200), "the new server's screen");
    drop(restarted);
    let gone = x11::capture(Some(&display), 0, false).unwrap_err();
    assert!(gone.contains("cannot open the X display"), "{gone}");
}

fn scene() -> Scene {
    scene_sized("640x480x24")
}

fn args(value: Value) -> SnapshotArgs {
    SnapshotArgs::parse(value.as_object().unwrap()).unwrap()
}

/// The image block of an answer, decoded to RGB8 with its size.
fn decoded(output: &ToolOutput) -> (Vec<u8>, u32, u32, String) {
    let Some(Content::Image { data, mime_type }) = output.blocks.first() else { panic!("no image block: {output:?}") };
    let bytes = STANDARD.decode(data).unwrap();
    match mime_type.as_str() {
        "image/png" => {
            let decoder = png::Decoder::new(Cursor::new(bytes));
            let mut reader = decoder.read_info().unwrap();
            let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
            let info = reader.next_frame(&mut buffer).unwrap();
            assert_eq!(info.color_type, png::ColorType::Rgb);
            buffer.truncate(info.buffer_size());
            (buffer, info.width, info.height, mime_type.clone())
        }
        "image/jpeg" => {
            let mut decoder = jpeg_decoder::Decoder::new(Cursor::new(bytes));
            let pixels = decoder.decode().unwrap();
            let info = decoder.info().unwrap();
            (pixels, u32::from(info.width), u32::from(info.height), mime_type.clone())
        }
        other => panic!("unexpected mime type {other}"),
    }
}

fn at(rgb: &[u8], width: u32, x: u32, y: u32) -> [u8; 3] {
    let i = ((y * width + x) * 3) as usize;
    [rgb[i], rgb[i + 1], rgb[i + 2]]
}

pub(super) fn close(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

#[test]
fn a_png_holds_exactly_the_pixels_on_the_screen() {
    let scene = scene();
    let output = snapshot(Some(&scene.display), &args(json!({"includePointer": false}))).unwrap();
    let (rgb, width, height, mime) = decoded(&output);
    assert_eq!((width, height, mime.as_str()), (640, 480, "image/png"), "640x480 is under the default cap");
    assert_eq!(at(&rgb, width, 5, 5), scene.background);
    assert_eq!(at(&rgb, width, 639, 479), scene.background);
    assert_eq!(at(&rgb, width, 100, 50), scene.window, "the window's first pixel");
    assert_eq!(at(&rgb, width, 179, 109), scene.window, "and its last");
    assert_eq!(at(&rgb, width, 180, 110), scene.background, "and nothing beyond");
    let meta = output.payload.as_ref().unwrap();
    assert_eq!(
        (meta["width"].clone(), meta["height"].clone(), meta["scale"].clone()),
        (json!(640), json!(480), json!(1.0))
    );
    assert_eq!(
        meta["monitors"],
        json!([{
            "index": 0, "name": "screen", "x": 0, "y": 0, "width": 640, "height": 480,
            "widthMm": meta["monitors"][0]["widthMm"], "heightMm": meta["monitors"][0]["heightMm"],
            "primary": false, "scaleFactor": 1.0,
        }]),
        "as RandR reports Xvfb's one monitor (none marked primary), with no Xft.dpi set"
    );
    assert!(meta["monitors"][0]["widthMm"].as_u64().is_some_and(|mm| mm > 0), "Xvfb reports a physical size");
    assert!(!meta.to_string().contains(&output_base64(&output)), "never base64 in the text");
    let gateway = output.gateway_payload();
    assert_eq!(gateway["format"], "png");
    assert_eq!(gateway["base64"].as_str().unwrap(), output_base64(&output), "the gateway gets upstream's payload");
    assert_eq!((gateway["width"].clone(), gateway["screenIndex"].clone()), (json!(640), json!(0)));
}

fn output_base64(output: &ToolOutput) -> String {
    match output.blocks.first() {
        Some(Content::Image { data, .. }) => data.clone(),
        _ => panic!("no image"),
    }
}

#[test]
fn max_width_scales_and_says_by_how_much() {
    let scene = scene();
    let output = snapshot(Some(&scene.display), &args(json!({"maxWidth": 320, "includePointer": false}))).unwrap();
    let (rgb, width, height, _) = decoded(&output);
    assert_eq!((width, height), (320, 240));
    assert_eq!(output.payload.as_ref().unwrap()["scale"], json!(0.5));
    assert_eq!(at(&rgb, width, 70, 40), scene.window, "the window's middle, at half the coordinates");
    assert_eq!(at(&rgb, width, 10, 200), scene.background);
}

#[test]
fn a_large_screen_is_kept_under_the_default_pixel_budget() {
    let scene = scene_sized("1920x1080x24");
    let output = snapshot(Some(&scene.display), &args(json!({"includePointer": false}))).unwrap();
    let (rgb, width, height, _) = decoded(&output);
    assert!(u64::from(width) * u64::from(height) <= DEFAULT_MAX_PIXELS, "{width}x{height}");
    assert_eq!((width, height), (1430, 804), "16:9 kept");
    let meta = output.payload.as_ref().unwrap();
    assert_eq!((meta["capturedWidth"].clone(), meta["capturedHeight"].clone()), (json!(1920), json!(1080)));
    assert!(close(at(&rgb, width, 5, 5), scene.background, 0));
}

#[test]
fn jpeg_is_close_to_the_screen() {
    let scene = scene();
    let output =
        snapshot(Some(&scene.display), &args(json!({"format": "jpg", "quality": 95, "includePointer": false})))
            .unwrap();
    let (rgb, width, height, mime) = decoded(&output);
    assert_eq!((width, height, mime.as_str()), (640, 480, "image/jpeg"));
    assert!(
        close(at(&rgb, width, 20, 20), scene.background, 12),
        "{:?} vs {:?}",
        at(&rgb, width, 20, 20),
        scene.background
    );
    assert!(close(at(&rgb, width, 140, 80), scene.window, 12), "{:?} vs {:?}", at(&rgb, width, 140, 80), scene.window);
    assert_eq!(output.gateway_payload()["format"], "jpeg");
}

#[test]
fn the_pointer_is_drawn_where_it_is() {
    let scene = scene();
    let (conn, screen) = x11rb::connect(Some(&scene.display)).unwrap();
    let root = conn.setup().roots[screen].root;
    conn.warp_pointer(x11rb::NONE, root, 0, 0, 0, 0, 400, 300).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    let with = decoded(&snapshot(Some(&scene.display), &args(json!({}))).unwrap());
    let without = decoded(&snapshot(Some(&scene.display), &args(json!({"includePointer": false}))).unwrap());
    let changed = |rgb: &[u8]| {
        (380..420)
            .flat_map(|x| (280..320).map(move |y| (x, y)))
            .filter(|&(x, y)| at(rgb, 640, x, y) != scene.background)
            .count()
    };
    assert!(changed(&with.0) > 20, "the cursor shows around (400,300)");
    assert_eq!(changed(&without.0), 0, "and not when left out");
    assert_eq!(at(&with.0, 640, 5, 5), scene.background, "elsewhere the screen is untouched");
}

#[test]
fn arguments_follow_upstreams_clamps_and_errors() {
    let parse = |value: Value| SnapshotArgs::parse(value.as_object().unwrap());
    assert_eq!(
        parse(json!({"format": "gif"})).unwrap_err().message,
        "Unsupported screen snapshot format. Supported formats: png, jpeg."
    );
    assert_eq!(parse(json!({"quality": 0.72})).unwrap().quality, 72, "macOS's 0..1 scale");
    let clamped = parse(json!({"maxWidth": 1, "quality": 500, "screenIndex": 99})).unwrap();
    assert_eq!((clamped.max_width, clamped.quality, clamped.screen_index), (Some(MIN_WIDTH), 100, 32));
    assert_eq!(parse(json!({"monitor": 2})).unwrap().screen_index, 2, "monitor is screenIndex's alias");
    assert_eq!(parse(json!({"monitor": 2, "screenIndex": 1})).unwrap().screen_index, 1);
    assert!(parse(json!({"includePointer": "yes"})).is_err());
    assert!(parse(json!({"maxWidth": "wide"})).unwrap_err().message.contains("maxWidth"));
    let defaults = parse(json!({})).unwrap();
    assert_eq!(
        defaults,
        SnapshotArgs { format: Format::Png, max_width: None, quality: 80, screen_index: 0, include_pointer: true }
    );
}

#[test]
fn a_monitor_that_does_not_exist_and_a_missing_display_are_explained() {
    let scene = scene();
    let error = snapshot(Some(&scene.display), &args(json!({"screenIndex": 3}))).unwrap_err();
    assert_eq!(error.message, "screenIndex 3 does not exist: this display has 1 monitor(s), 0..0");
    let error = snapshot(Some(":4242"), &args(json!({}))).unwrap_err();
    assert!(
        error.message.starts_with("Screen capture not available: cannot open the X display `:4242`"),
        "{}",
        error.message
    );
}

async fn call(capability: &ScreenCapability, value: Value) -> ToolOutcome {
    let command = capability.commands.first().unwrap().clone();
    let request = InvokeRequest {
        id: "t".into(),
        command: "screen.snapshot".into(),
        args: value.as_object().unwrap().clone(),
        session_key: None,
        caller: Caller::Mcp,
    };
    command.call(request, CallContext::detached()).await
}

pub(super) fn live_settings(dir: &Path, screen: bool) -> Arc<LiveSettings> {
    let path = dir.join("settings.json");
    std::fs::write(&path, format!("{{\"NodeScreenEnabled\": {screen}}}")).unwrap();
    Arc::new(LiveSettings::open(path).unwrap())
}

#[tokio::test]
async fn the_switch_is_off_by_default_and_applies_at_once() {
    let scene = scene();
    let dir = tempfile::tempdir().unwrap();
    let settings = live_settings(dir.path(), false);
    let capability = ScreenCapability::for_display(settings.clone(), Some(scene.display.clone()));
    let command = capability.commands.first().unwrap().clone();
    assert!(!command.is_listed(), "off: not listed");
    let error = call(&capability, json!({})).await.unwrap_err();
    assert_eq!(error.code, Some(UNAVAILABLE));
    assert!(
        error
            .message
            .starts_with("screen.snapshot is disabled by user setting: a capture shows whatever is on the screen")
            && error.message.contains("clawmcp settings set NodeScreenEnabled true"),
        "{}",
        error.message
    );
    assert!(command.unavailable_reason().is_some_and(|reason| reason.starts_with("off: NodeScreenEnabled is false")));
    assert!(!crate::settings::Settings::default().node_screen_enabled, "off unless the user turns it on");

    std::fs::write(settings.path(), "{\"NodeScreenEnabled\": true}").unwrap();
    assert!(command.is_listed(), "on: listed at once");
    let output = call(&capability, json!({"includePointer": false})).await.unwrap();
    let (rgb, width, _, _) = decoded(&output);
    assert_eq!(at(&rgb, width, 5, 5), scene.background);
}
