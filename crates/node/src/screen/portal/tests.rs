//! The real thing: sway headless painted a random colour, PipeWire, xdg-desktop-portal with its
//! wlr backend (which shoots with grim) and the gtk backend (xdg-desktop-portal 1.15+ serves
//! Screenshot only when some backend implements Access), all on a private session bus and all
//! as the desktop user (nobody when the tests run as root: sway refuses root). The portal's
//! client must be that user too, so the capture runs in a child: this test binary re-run as
//! that user, executing the real-portal test alone (which is then [`portal_client`]), which
//! writes what it got to a file.
//!
//! The error paths need no desktop: a bus without a portal, and — only for the time-out and
//! cancel tests — a stand-in that owns the portal's name, accepts the call and never answers,
//! as a permission dialog nobody clicks would.

use std::path::Path;
use std::process::Command;
use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::CallContext;
use serde_json::{Value, json};

use super::*;
use crate::capability::{Caller, InvokeRequest};
use crate::screen::tests::{live_settings, random_colour};
use crate::screen::{Desktop, ScreenCapability, Session};
use crate::test_support::{Spawned, desktop_command, private_bus, require, sway_with, wait_for_name};

#[test]
fn only_local_file_uris_with_plain_components_are_accepted() {
    assert_eq!(file_path("file:///tmp/out.png").unwrap(), PathBuf::from("/tmp/out.png"));
    assert_eq!(
        file_path("file:///home/a/Pictures/Screenshot%20from%202026.png").unwrap(),
        PathBuf::from("/home/a/Pictures/Screenshot from 2026.png")
    );
    assert_eq!(file_path("file://localhost/tmp/x.png").unwrap(), PathBuf::from("/tmp/x.png"));
    for bad in ["http://host/x.png", "file://otherhost/x.png", "file:///tmp/../etc/x", "file:///tmp/%zz", "/tmp/x"] {
        let error = file_path(bad).unwrap_err();
        assert!(error.contains("not a local file:// path"), "{bad}: {error}");
    }
}

/// Where xdg-desktop-portal-wlr 0.7 always writes its shot (compiled in; it ignores TMPDIR).
const WLR_SHOT: &str = "/tmp/out.png";

/// sway, PipeWire and the portal with its two backends, on a private bus, as the desktop user.
/// Holds a machine-wide lock while it lives: every wlr portal writes the same [`WLR_SHOT`], so two
/// test runs at once (other checkouts on this machine) would read and remove each other's shots.
pub(in crate::screen) struct PortalDesktop {
    _one_at_a_time: std::fs::File,
    // Dropped in reverse: the portal before its backends, the compositor last.
    _portal: Spawned,
    _gtk: Spawned,
    _wlr: Spawned,
    _pipewire: Spawned,
    _bus: Spawned,
    _session_manager: Option<Spawned>,
    pub(in crate::screen) bus: String,
    pub(in crate::screen) background: [u8; 3],
    pub(in crate::screen) sway: crate::test_support::Sway,
}

async fn portal_desktop() -> PortalDesktop {
    portal_desktop_with(None).await
}

/// [`portal_desktop`], ready to cast the screen when `cast` names the LD_PRELOAD shim
/// xdg-desktop-portal-wlr needs here (see `screen/cast/tests.rs`): wireplumber links the cast
/// to its consumer, and the wlr backend casts HEADLESS-1 without asking.
pub(in crate::screen) async fn portal_desktop_with(cast: Option<&Path>) -> PortalDesktop {
    // Opened read-only when it exists (flock needs no write access), so any user can share it.
    let lock_path = std::env::temp_dir().join("clawmcp-test-wlr-portal.lock");
    let lock = std::fs::File::open(&lock_path).or_else(|_| std::fs::File::create(&lock_path)).unwrap();
    lock.lock().unwrap();
    if let Ok(stale) = std::fs::symlink_metadata(WLR_SHOT) {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            stale.uid(),
            crate::test_support::desktop_user().as_raw(),
            "{WLR_SHOT} belongs to uid {}: xdg-desktop-portal-wlr, run here as uid {}, cannot overwrite it; remove it",
            stale.uid(),
            crate::test_support::desktop_user()
        );
    }
    let background = random_colour();
    let [r, g, b] = background;
    let sway = sway_with(&format!("output HEADLESS-1 resolution 640x480 bg #{r:02x}{g:02x}{b:02x} solid_color\n"));
    let runtime = sway.runtime.path();
    let (bus_process, bus) = private_bus(runtime, None, desktop_command("dbus-daemon", runtime));
    let session = |program: &str| {
        let mut command = desktop_command(program, runtime);
        command
            .env("DBUS_SESSION_BUS_ADDRESS", &bus)
            .env("WAYLAND_DISPLAY", &sway.socket)
            .env("XDG_CURRENT_DESKTOP", "sway");
        command
    };
    require("grim", "grim");
    let pipewire = Spawned::start("pipewire", "pipewire", &mut session("pipewire"), runtime);
    let socket = runtime.join("pipewire-0");
    let started = std::time::Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < STARTUP_DEADLINE, "pipewire did not open its socket: {}", pipewire.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    let daemon = |name: &'static str, package: &str| {
        Spawned::start(name, package, &mut session(&format!("/usr/libexec/{name}")), runtime)
    };
    let session_manager = cast.map(|_| {
        require("wireplumber", "wireplumber");
        Spawned::start("wireplumber", "wireplumber", &mut session("wireplumber"), runtime)
    });
    // The portal picks its backends when it starts, so they must own their names first.
    let mut wlr = match cast {
        None => daemon("xdg-desktop-portal-wlr", "xdg-desktop-portal-wlr"),
        Some(shim) => {
            let config = runtime.join("config/xdg-desktop-portal-wlr");
            std::fs::create_dir_all(&config).unwrap();
            std::fs::write(
                config.join("config"),
                "[screencast]\nchooser_type=none\noutput_name=HEADLESS-1\nmax_fps=30\n",
            )
            .unwrap();
            if nix::unistd::geteuid().is_root() {
                for dir in [runtime.join("config"), config.clone(), config.join("config")] {
                    nix::unistd::chown(&dir, Some(crate::test_support::desktop_user()), None).unwrap();
                }
            }
            let mut command = session("/usr/libexec/xdg-desktop-portal-wlr");
            command.env("XDG_CONFIG_HOME", runtime.join("config")).env("LD_PRELOAD", shim);
            Spawned::start("xdg-desktop-portal-wlr", "xdg-desktop-portal-wlr", &mut command, runtime)
        }
    };
    wait_for_name(&bus, "org.freedesktop.impl.portal.desktop.wlr", &mut wlr).await;
    let mut gtk = daemon("xdg-desktop-portal-gtk", "xdg-desktop-portal-gtk");
    wait_for_name(&bus, "org.freedesktop.impl.portal.desktop.gtk", &mut gtk).await;
    let mut portal = daemon("xdg-desktop-portal", "xdg-desktop-portal");
    wait_for_name(&bus, PORTAL, &mut portal).await;
    PortalDesktop {
        _one_at_a_time: lock,
        _portal: portal,
        _gtk: gtk,
        _wlr: wlr,
        _pipewire: pipewire,
        _bus: bus_process,
        _session_manager: session_manager,
        bus,
        background,
        sway,
    }
}

use crate::test_support::STARTUP_DEADLINE;

/// What the child is asked, and where it writes the answers.
pub(in crate::screen) const CLIENT_REQUEST: &str = "CLAWMCP_TEST_PORTAL_CLIENT";
/// The test the child runs: the real-portal test, which is the client when [`CLIENT_REQUEST`] is set.
const REAL_PORTAL_TEST: &str =
    "screen::portal::tests::a_real_portal_shoots_the_whole_wayland_desktop_and_its_file_is_removed";

/// Runs `calls` (screen.snapshot arguments) through [`portal_client`] as the desktop user against
/// `desktop`, and returns `{listed, answers: [...]}`.
fn as_desktop_user(desktop: &PortalDesktop, calls: Value) -> Value {
    as_desktop_user_in(desktop, REAL_PORTAL_TEST, json!({"calls": calls})).wait()
}

/// A test re-run as the desktop user (see [`as_desktop_user`]), running.
pub(in crate::screen) struct DesktopClient {
    child: std::process::Child,
    answers: std::path::PathBuf,
}

impl DesktopClient {
    /// Its answers, once it has ended well.
    pub(in crate::screen) fn wait(self) -> Value {
        let output = self.child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "the portal client failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&std::fs::read(&self.answers).unwrap()).unwrap()
    }
}

/// Starts `test` (its full name) of this binary as the desktop user in `desktop`'s session,
/// with [`CLIENT_REQUEST`] naming a file holding `request` plus `out`, where it writes its answers.
pub(in crate::screen) fn as_desktop_user_in(
    desktop: &PortalDesktop,
    test: &str,
    mut request_body: Value,
) -> DesktopClient {
    let runtime = desktop.sway.runtime.path();
    let request = runtime.join("client-request.json");
    let answers = runtime.join("client-answers.json");
    request_body["out"] = json!(answers);
    std::fs::write(&request, request_body.to_string()).unwrap();
    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(&request, Some(crate::test_support::desktop_user()), None).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let child = desktop_command(exe.to_str().unwrap(), runtime)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CLIENT_REQUEST, &request)
        // The session as a node started in it sees it: no DISPLAY (the environment is cleared).
        .env("WAYLAND_DISPLAY", &desktop.sway.socket)
        .env("DBUS_SESSION_BUS_ADDRESS", &desktop.bus)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    DesktopClient { child, answers }
}

/// The child's side (the real-portal test, re-run by [`as_desktop_user`] with [`CLIENT_REQUEST`]
/// set): the node's screen capability as the registry builds it, finding the session in its
/// environment, called as an MCP client would.
async fn portal_client(request: std::ffi::OsString) {
    let request: Value = serde_json::from_slice(&std::fs::read(request).unwrap()).unwrap();
    let settings_dir = tempfile::tempdir().unwrap();
    let capability = ScreenCapability::new(live_settings(settings_dir.path(), true));
    let command = capability.commands.first().unwrap().clone();
    let listed = command.is_listed();
    let mut answers = Vec::new();
    for call in request["calls"].as_array().unwrap() {
        let started = Instant::now();
        let outcome = command
            .call(
                InvokeRequest {
                    id: "t".into(),
                    command: "screen.snapshot".into(),
                    args: call.as_object().unwrap().clone(),
                    session_key: None,
                    caller: Caller::Mcp,
                },
                CallContext::detached(),
            )
            .await;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        answers.push(match outcome {
            Ok(output) => {
                let Some(clawmcp_mcp::Content::Image { data, mime_type }) = output.blocks.first() else {
                    panic!("no image block: {output:?}")
                };
                json!({"meta": output.payload, "image": data, "mime": mime_type, "gateway": output.gateway_payload(), "ms": ms})
            }
            Err(error) => json!({"error": error.message, "code": error.code, "ms": ms}),
        });
    }
    let out = request["out"].as_str().unwrap();
    std::fs::write(out, json!({"listed": listed, "answers": answers}).to_string()).unwrap();
}

fn png_pixels(answer: &Value) -> Pixels {
    assert_eq!(answer["mime"], "image/png", "{answer}");
    let bytes = STANDARD.decode(answer["image"].as_str().unwrap()).unwrap();
    imaging::decode_png(&bytes, MAX_PIXELS).unwrap()
}

#[tokio::test]
async fn a_real_portal_shoots_the_whole_wayland_desktop_and_its_file_is_removed() {
    if let Some(request) = std::env::var_os(CLIENT_REQUEST) {
        return portal_client(request).await;
    }
    let desktop = portal_desktop().await;
    let got = as_desktop_user(
        &desktop,
        json!([{}, {"maxWidth": 320, "includePointer": true}, {"screenIndex": 1}, {"format": "jpeg", "maxWidth": 64}]),
    );
    assert_eq!(got["listed"], true, "the portal is on the bus: listed");
    let answers = got["answers"].as_array().unwrap();

    let full = &answers[0];
    let pixels = png_pixels(full);
    assert_eq!((pixels.width, pixels.height, pixels.layout), (640, 480, imaging::Layout::Rgb));
    let painted = pixels.data.chunks_exact(3).filter(|p| *p == desktop.background).count();
    assert_eq!(painted, 640 * 480, "every pixel is sway's background {:?}", desktop.background);
    let meta = &full["meta"];
    assert_eq!(
        (&meta["width"], &meta["height"], &meta["capturedWidth"], &meta["screenIndex"], &meta["scale"]),
        (&json!(640), &json!(480), &json!(640), &json!(0), &json!(1.0))
    );
    assert_eq!(meta["pointer"], "not available on Wayland");
    assert_eq!(meta["backend"], "portal");
    assert_eq!(meta["monitors"], json!([{"index": 0, "name": "desktop", "x": 0, "y": 0, "width": 640, "height": 480}]));
    let file = meta["portalFile"]["path"].as_str().unwrap();
    assert_eq!(file, WLR_SHOT);
    assert_eq!(meta["portalFile"]["removed"], true, "{meta}");
    assert!(!Path::new(file).exists(), "the portal's file {file} was removed");
    let gateway = &full["gateway"];
    assert_eq!(
        (&gateway["format"], &gateway["width"], &gateway["screenIndex"]),
        (&json!("png"), &json!(640), &json!(0))
    );
    assert_eq!(gateway["base64"], full["image"]);

    let scaled = &answers[1];
    let pixels = png_pixels(scaled);
    assert_eq!((pixels.width, pixels.height), (320, 240));
    assert!(pixels.data.chunks_exact(3).all(|p| p == desktop.background), "scaled, still the background");
    assert_eq!(scaled["meta"]["scale"], 0.5);
    assert_eq!(scaled["meta"]["pointer"], "not available on Wayland", "asked for, not failed");

    let refused = &answers[2];
    assert_eq!(refused["code"], clawmcp_mcp::tool::codes::INVALID_REQUEST);
    assert!(
        refused["error"].as_str().unwrap().starts_with("screenIndex 1 does not exist: on Wayland the desktop portal"),
        "{refused}"
    );

    let jpeg = &answers[3];
    assert_eq!(
        (&jpeg["mime"], &jpeg["meta"]["width"], &jpeg["meta"]["height"]),
        (&json!("image/jpeg"), &json!(64), &json!(48))
    );
}

#[tokio::test]
async fn without_a_portal_on_the_bus_the_command_is_unlisted_and_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let (_bus, address) = private_bus(dir.path(), None, Command::new("dbus-daemon"));
    let capability = ScreenCapability::for_portal(live_settings(dir.path(), true), address.clone(), DEFAULT_TIMEOUT);
    let command = capability.commands.first().unwrap().clone();
    assert!(!command.is_listed());
    let reason = command.unavailable_reason().unwrap();
    assert!(
        reason.starts_with(&format!(
            "unavailable: no desktop portal: nothing on the session D-Bus at {address} owns or can start {PORTAL}"
        )),
        "{reason}"
    );
    for package in ["xdg-desktop-portal-wlr", "xdg-desktop-portal-gnome", "xdg-desktop-portal-kde", "grim", "pipewire"]
    {
        assert!(reason.contains(package), "{package}: {reason}");
    }
    let unreachable = Probe::new(Bus::At(format!("unix:path={}/no-bus", dir.path().display()))).check().unwrap_err();
    assert!(unreachable.what.starts_with("cannot reach the session D-Bus at unix:path="), "{unreachable}");
}

/// STAND-IN FOR THE ERROR PATHS ONLY: owns the portal's name on a private bus, answers
/// `Screenshot` with the Request path as the real portal does, and then never sends `Response`
/// (a permission dialog nobody answers). Reports every Request it was asked to close.
pub(in crate::screen) struct SilentPortalStandIn {
    _task: tokio::task::JoinHandle<()>,
    asked: tokio::sync::mpsc::UnboundedReceiver<String>,
    closed: tokio::sync::mpsc::UnboundedReceiver<String>,
}

pub(in crate::screen) async fn silent_portal_stand_in(address: &str) -> SilentPortalStandIn {
    let connection = zbus::connection::Builder::address(Address::from_str(address).unwrap()).build().await.unwrap();
    connection.request_name(PORTAL).await.unwrap();
    let (asked_tx, asked) = tokio::sync::mpsc::unbounded_channel();
    let (closed_tx, closed) = tokio::sync::mpsc::unbounded_channel();
    let mut calls = zbus::MessageStream::from(&connection);
    let task = tokio::spawn(async move {
        while let Some(Ok(message)) = calls.next().await {
            let header = message.header();
            if header.message_type() != MessageType::MethodCall {
                continue;
            }
            let member = header.member().map(|m| m.to_string()).unwrap_or_default();
            let path = header.path().map(|p| p.to_string()).unwrap_or_default();
            match member.as_str() {
                "Screenshot" => {
                    let (_, options): (String, HashMap<String, OwnedVariant>) = message.body().deserialize().unwrap();
                    let token = <&str>::try_from(&*options["handle_token"]).unwrap().to_owned();
                    let sender = header.sender().unwrap().as_str().trim_start_matches(':').replace('.', "_");
                    let request = OwnedObjectPath::try_from(format!("{PORTAL_PATH}/request/{sender}/{token}")).unwrap();
                    connection.reply(&header, &(request.clone(),)).await.unwrap();
                    let _ = asked_tx.send(request.to_string());
                }
                "Close" => {
                    connection.reply(&header, &()).await.unwrap();
                    let _ = closed_tx.send(path);
                }
                // Serves no other interface (the recording probe asks for ScreenCast's version).
                _ => {
                    let error = "org.freedesktop.DBus.Error.UnknownInterface";
                    connection.reply_error(&header, error, &"not served by this stand-in").await.unwrap();
                }
            }
        }
    });
    SilentPortalStandIn { _task: task, asked, closed }
}

#[tokio::test]
async fn a_portal_that_never_answers_fails_the_call_at_the_time_out_and_closes_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let (_bus, address) = private_bus(dir.path(), None, Command::new("dbus-daemon"));
    let mut stand_in = silent_portal_stand_in(&address).await;
    let timeout = Duration::from_secs(1);
    let capability = ScreenCapability::for_portal(live_settings(dir.path(), true), address.clone(), timeout);
    let command = capability.commands.first().unwrap().clone();
    assert!(command.is_listed(), "something owns the portal's name");
    let request = InvokeRequest {
        id: "t".into(),
        command: "screen.snapshot".into(),
        args: serde_json::Map::new(),
        session_key: None,
        caller: Caller::Mcp,
    };
    let call = tokio::spawn(async move { command.call(request, CallContext::detached()).await });
    let asked = stand_in.asked.recv().await.unwrap();
    // Another peer answers the Request in the portal's place, pointing at a file: not taken.
    let impostor = zbus::connection::Builder::address(Address::from_str(&address).unwrap()).build().await.unwrap();
    let dir_png = dir.path().join("impostor.png");
    std::fs::write(
        &dir_png,
        imaging::encode_png(&Pixels { data: vec![1; 3], width: 1, height: 1, layout: imaging::Layout::Rgb }).unwrap(),
    )
    .unwrap();
    let results = HashMap::from([("uri", Variant::from(format!("file://{}", dir_png.display())))]);
    impostor.emit_signal(None::<&str>, asked.as_str(), REQUEST, "Response", &(0u32, results)).await.unwrap();

    let error = call.await.unwrap().unwrap_err();
    assert!(
        error.message.starts_with("Capture failed: the desktop portal did not deliver the screenshot within 1 s"),
        "{}",
        error.message
    );
    assert!(error.message.contains("the request was closed"), "{}", error.message);
    assert_eq!(stand_in.closed.recv().await.unwrap(), asked, "the Request we abandoned was closed");
    assert!(dir_png.exists(), "the impostor's file was neither taken nor removed");
}

#[tokio::test]
async fn a_cancelled_call_stops_waiting_for_the_portal_and_closes_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let (_bus, address) = private_bus(dir.path(), None, Command::new("dbus-daemon"));
    let mut stand_in = silent_portal_stand_in(&address).await;
    let capability = ScreenCapability::for_portal(live_settings(dir.path(), true), address, DEFAULT_TIMEOUT);
    let command = capability.commands.first().unwrap().clone();
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let request = InvokeRequest {
        id: "t".into(),
        command: "screen.snapshot".into(),
        args: serde_json::Map::new(),
        session_key: None,
        caller: Caller::Mcp,
    };
    let call = tokio::spawn(async move { command.call(request, ctx).await });
    let asked = stand_in.asked.recv().await.unwrap();
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.message, clawmcp_mcp::CANCELLED);
    assert_eq!(stand_in.closed.recv().await.unwrap(), asked, "the cancelled Request was closed");
}

#[test]
fn x11_wins_when_both_are_set_and_wayland_alone_goes_through_the_portal() {
    let session = |vars: &'static [&'static str]| Desktop::session_of(move |name| vars.contains(&name));
    assert!(matches!(session(&["DISPLAY", "WAYLAND_DISPLAY"]), Ok(Session::X11(None))), "Xwayland: X11");
    assert!(matches!(session(&["DISPLAY"]), Ok(Session::X11(None))));
    assert!(matches!(session(&["WAYLAND_DISPLAY"]), Ok(Session::Portal(Bus::Env))));
    let Err(missing) = session(&[]) else { panic!("no session") };
    assert_eq!(missing.what, "no X display: DISPLAY is unset");
}

/// A PNG that is only its signature and an IHDR of `width` x `height` (no pixels follow).
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = imaging::PNG_SIGNATURE.to_vec();
    bytes.extend(13u32.to_be_bytes());
    bytes.extend(b"IHDR");
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

#[test]
fn the_portals_file_is_read_within_its_size_and_pixel_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let since = SystemTime::now();
    let path = dir.path().join("shot.png");
    // One byte over the size bound: refused from its metadata (a sparse file, nothing read).
    std::fs::File::create(&path).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
    let error = read_and_remove(&path, since).unwrap_err();
    assert!(
        error.ends_with(&format!("it is {} bytes, more than the {MAX_FILE_BYTES} this node reads", MAX_FILE_BYTES + 1)),
        "{error}"
    );
    // Exactly at the pixel bound the decoder starts (and finds no pixels); one more is refused.
    std::fs::write(&path, png_header(2 * 7680, 4320)).unwrap();
    let error = read_and_remove(&path, since).unwrap_err();
    assert!(error.contains("not a valid PNG image"), "{error}");
    std::fs::write(&path, png_header(2 * 7680 + 1, 4320)).unwrap();
    let error = read_and_remove(&path, since).unwrap_err();
    assert!(
        error.ends_with(&format!("the PNG image is 15361x4320, more than the {MAX_PIXELS} pixels this node decodes")),
        "{error}"
    );
}

#[test]
fn only_a_fresh_file_of_ours_reached_without_symlinks_is_removed() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let png =
        crate::imaging::encode_png(&Pixels { data: vec![9; 12], width: 2, height: 2, layout: imaging::Layout::Rgb })
            .unwrap();
    let since = SystemTime::now();
    let shot = dir.path().join("out.png");

    std::fs::write(&shot, &png).unwrap();
    let (pixels, removed) = read_and_remove(&shot, since).unwrap();
    assert_eq!((pixels.width, pixels.data[0], removed), (2, 9, true));
    assert!(!shot.exists(), "ours, fresh, under the temp dir: removed");

    std::fs::write(&shot, &png).unwrap();
    let (_, removed) = read_and_remove(&shot, since + Duration::from_secs(60)).unwrap();
    assert!(!removed && shot.exists(), "written before the call began: left alone");

    let link = dir.path().join("link.png");
    std::os::unix::fs::symlink(&shot, &link).unwrap();
    let error = read_and_remove(&link, since).unwrap_err();
    assert!(error.contains("link.png") && shot.exists(), "a symlink is not followed: {error}");

    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("out.png"), &png).unwrap();
    let linked_dir = dir.path().join("linked");
    std::os::unix::fs::symlink(&real, &linked_dir).unwrap();
    let (_, removed) = read_and_remove(&linked_dir.join("out.png"), since).unwrap();
    assert!(!removed && real.join("out.png").exists(), "reached through a symlinked directory: left alone");

    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(&shot, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let (_, removed) = read_and_remove(&shot, since).unwrap();
        assert!(!removed && shot.exists(), "another user's file: left alone");
    }
}

#[tokio::test]
async fn a_bus_that_accepts_but_never_speaks_fails_the_shot_at_the_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("silent-bus");
    // Accepts connections (the kernel queues them) but never speaks.
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let address = Address::from_str(&format!("unix:path={}", socket.display())).unwrap();
    let error = capture(&address, Duration::from_millis(1500), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error, format!("the session D-Bus at {address} did not answer within 1500 ms"));
}
