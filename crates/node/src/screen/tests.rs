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
use crate::test_support::{Spawned, xvfb_sized};

/// A random 24-bit colour, never black (the server's own background) and never white.
fn random_colour() -> [u8; 3] {
    let mut bytes = [0u8; 3];
    getrandom::fill(&mut bytes).unwrap();
    bytes[0] |= 0x20;
    bytes[2] &= 0xdf;
    bytes
}

fn pixel_value(rgb: [u8; 3]) -> u32 {
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
    let dir = tempfile::tempdir().unwrap();
    let (server, display) = xvfb_sized(dir.path(), geometry);
    let (background, window) = (random_colour(), random_colour());
    let (conn, screen) = x11rb::connect(Some(&display)).unwrap();
    let root = conn.setup().roots[screen].root;
    conn.change_window_attributes(root, &ChangeWindowAttributesAux::new().background_pixel(pixel_value(background)))
        .unwrap();
    conn.clear_area(false, root, 0, 0, 0, 0).unwrap();
    let id = conn.generate_id().unwrap();
    let aux = CreateWindowAux::new().background_pixel(pixel_value(window)).override_redirect(1);
    conn.create_window(24, id, root, 100, 50, 80, 60, 0, WindowClass::INPUT_OUTPUT, 0, &aux).unwrap();
    conn.map_window(id).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap(); // a round trip: everything above is done
    // The window must outlive the connection: keep the client alive by leaking it to the test.
    std::mem::forget(conn);
    Scene { _server: server, display, background, window, _dir: dir }
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

fn close(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
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
        json!([{"index": 0, "x": 0, "y": 0, "width": 640, "height": 480, "primary": false}]),
        "as RandR reports Xvfb's one monitor (none marked primary)"
    );
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

fn live_settings(dir: &Path, screen: bool) -> Arc<LiveSettings> {
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
