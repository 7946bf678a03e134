//! canvas.* against a real headless Chromium (Debian's `chromium`; without it these tests fail
//! saying `apt-get install chromium`): a page of random colours presented and its snapshot's
//! decoded pixels compared exactly; a loopback page's nonce title read back through eval; eval's
//! exceptions and time bound; non-http(s) URLs refused; the browser's whole process tree (found in
//! /proc) gone after hide, shutdown and drop, with its profile; the switch and the missing
//! program; DevTools on the node's pipe, no process of the browser's tree listening on any port;
//! a page that knows the endpoint cannot call the node's real MCP listener, even with its token;
//! under a private Xvfb, an app-mode window of
//! the asked geometry and title (xwininfo, and the X screen's own pixels). Every browser is the
//! test's own and at most two run at once.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use clawmcp_mcp::tool::codes::{INVALID_REQUEST, UNAVAILABLE};
use clawmcp_mcp::{CallContext, Content};
use serde_json::json;
use tokio::sync::Semaphore;

use super::*;
use crate::capability::{Caller, InvokeRequest};
use crate::test_support::require;

/// Chromium is heavy for a 2-core machine: at most two test browsers at once.
static BROWSERS: Semaphore = Semaphore::const_new(2);

fn settings(dir: &Path, on: bool) -> Arc<LiveSettings> {
    switch(dir, on);
    Arc::new(LiveSettings::open(dir.join("settings.json")).unwrap())
}

fn switch(dir: &Path, on: bool) {
    std::fs::write(dir.join("settings.json"), format!("{{\"NodeCanvasEnabled\": {on}}}")).unwrap();
}

/// A headless canvas, switch on, its browser stopped `idle` after a hide.
fn canvas(dir: &Path, idle: Duration) -> CanvasCapability {
    require("chromium", "chromium");
    let options = CanvasOptions {
        idle_after_hide: idle,
        path: None,
        screen: Screen::Headless,
        a2ui: vec![],
        ..CanvasOptions::default()
    };
    CanvasCapability::with_options(settings(dir, true), options)
}

fn find(canvas: &CanvasCapability, name: &str) -> Command {
    canvas.commands().into_iter().find(|command| command.name() == name).unwrap()
}

async fn call(canvas: &CanvasCapability, name: &str, args: Value) -> ToolOutcome {
    let request = InvokeRequest {
        id: "t".into(),
        command: name.into(),
        args: args.as_object().cloned().unwrap_or_default(),
        session_key: None,
        caller: Caller::Mcp,
    };
    find(canvas, name).call(request, CallContext::detached()).await
}

/// The JSON answer, or the failure.
async fn answer(canvas: &CanvasCapability, name: &str, args: Value) -> Result<Value, ToolFailure> {
    call(canvas, name, args).await.map(|output| output.payload.unwrap())
}

/// The JSON answer of a call that must succeed, checked against the command's published output
/// schema when it has one.
async fn ok(canvas: &CanvasCapability, name: &str, args: Value) -> Value {
    let answer =
        answer(canvas, name, args).await.unwrap_or_else(|failure| panic!("{name} failed: {}", failure.message));
    if let Some(schema) = find(canvas, name).tool().output_schema.as_ref() {
        let validator = jsonschema::validator_for(&schema.to_value()).unwrap();
        let problems: Vec<String> = validator.iter_errors(&answer).map(|error| error.to_string()).collect();
        assert!(problems.is_empty(), "{name}: {answer} does not match its output schema: {problems:?}");
    }
    answer
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).unwrap();
    bytes
}

fn nonce() -> String {
    random_bytes::<8>().iter().map(|b| format!("{b:02x}")).collect()
}

fn hex(rgb: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2])
}

/// A process and its start time (field 22 of /proc/PID/stat), so a reused pid is not mistaken for it.
fn start_time(pid: u32) -> Option<(u64, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields.get(19)?.parse().ok()?, fields.first()?.chars().next()?))
}

/// `pid` and every descendant, from /proc, with their start times.
fn tree(pid: u32) -> BTreeSet<(u32, u64)> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        if let Some(parent) = rest.split_whitespace().nth(1).and_then(|ppid| ppid.parse().ok()) {
            parents.push((child, parent));
        }
    }
    let mut found = BTreeSet::from([pid]);
    loop {
        let before = found.len();
        for &(child, parent) in &parents {
            if found.contains(&parent) {
                found.insert(child);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.into_iter().filter_map(|pid| start_time(pid).map(|(started, _)| (pid, started))).collect()
}

/// The processes of `tree` still running (a zombie has ended; a reused pid is another process).
fn still_running(tree: &BTreeSet<(u32, u64)>) -> Vec<u32> {
    tree.iter()
        .filter(|&&(pid, started)| start_time(pid).is_some_and(|(now, state)| now == started && state != 'Z'))
        .map(|&(pid, _)| pid)
        .collect()
}

/// The running browser's main pid, its process tree (at least the main process and one child),
/// and its profile directory.
async fn running(canvas: &CanvasCapability) -> (u32, BTreeSet<(u32, u64)>, std::path::PathBuf) {
    let (pid, profile) = canvas.browser().await.expect("a browser runs");
    let processes = tree(pid);
    assert!(processes.len() >= 2, "chromium runs as a main process and its children: {processes:?}");
    let profile = profile.expect("a profile");
    assert!(profile.join("Local State").is_file() || profile.join("Default").is_dir(), "the profile is the browser's");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&profile).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the profile is private");
    (pid, processes, profile)
}

async fn wait_gone(processes: &BTreeSet<(u32, u64)>, profile: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while (!still_running(processes).is_empty() || profile.exists()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(still_running(processes), Vec::<u32>::new(), "no browser process is left");
    assert!(!profile.exists(), "the profile {} is removed", profile.display());
}

fn decode_png(output: &ToolOutput) -> imaging::Pixels {
    let Some(Content::Image { data, mime_type }) = output.blocks.first() else { panic!("no image block") };
    assert_eq!(mime_type, "image/png");
    let bytes = STANDARD.decode(data).unwrap();
    imaging::opaque(imaging::decode_png(&bytes, 1 << 26).unwrap())
}

fn pixel(pixels: &imaging::Pixels, x: u32, y: u32) -> [u8; 3] {
    let at = ((y * pixels.width + x) * 3) as usize;
    [pixels.data[at], pixels.data[at + 1], pixels.data[at + 2]]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr)]
async fn a_presented_page_is_snapshotted_with_its_exact_pixels() {
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let canvas = canvas(dir.path(), Duration::ZERO);
    let [background, square] = [random_bytes::<3>(), random_bytes::<3>()];
    let html = format!(
        "<!doctype html><html><body style=\"margin:0;background:{}\"><div style=\"position:absolute;left:40px;\
         top:30px;width:50px;height:60px;background:{}\"></div></body></html>",
        hex(background),
        hex(square)
    );
    let started = Instant::now();
    assert_eq!(
        ok(&canvas, "canvas.present", json!({"html": html, "width": 320, "height": 200})).await,
        json!({"presented": true})
    );
    let presented = started.elapsed();
    let output = call(&canvas, "canvas.snapshot", json!({})).await.unwrap();
    eprintln!(
        "canvas: first present (browser start + load) {presented:?}, then snapshot {:?}",
        started.elapsed() - presented
    );
    let meta = output.payload.clone().unwrap();
    assert_eq!(
        (meta["format"].clone(), meta["width"].clone(), meta["height"].clone()),
        (json!("png"), json!(320), json!(200))
    );
    let gateway = output.gateway.clone().unwrap();
    let keys: Vec<&str> = gateway.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["format", "base64"], "upstream's payload");
    let pixels = decode_png(&output);
    assert_eq!((pixels.width, pixels.height), (320, 200));
    for y in 0..200 {
        for x in 0..320 {
            let inside = (40..90).contains(&x) && (30..90).contains(&y);
            let expected = if inside { square } else { background };
            assert_eq!(pixel(&pixels, x, y), expected, "pixel ({x}, {y})");
        }
    }
    // A page without a title is titled as asked (default Canvas).
    assert_eq!(ok(&canvas, "canvas.eval", json!({"script": "document.title"})).await, json!({"result": "Canvas"}));

    // Another size, scaled down and in JPEG: the background is the colour, within JPEG's error.
    let plain = format!("<body style=\"margin:0;background:{}\"></body>", hex(background));
    let title = nonce();
    let again = Instant::now();
    ok(&canvas, "canvas.present", json!({"html": plain, "width": 400, "height": 300, "title": title})).await;
    let output =
        call(&canvas, "canvas.snapshot", json!({"format": "jpeg", "maxWidth": 200, "quality": 95})).await.unwrap();
    eprintln!("canvas: present + snapshot on a running browser {:?}", again.elapsed());
    let meta = output.payload.clone().unwrap();
    assert_eq!(
        (meta["width"].clone(), meta["height"].clone(), meta["capturedWidth"].clone()),
        (json!(200), json!(150), json!(400))
    );
    let Some(Content::Image { data, mime_type }) = output.blocks.first() else { panic!("no image block") };
    assert_eq!(mime_type, "image/jpeg");
    let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(STANDARD.decode(data).unwrap()));
    let rgb = decoder.decode().unwrap();
    let info = decoder.info().unwrap();
    assert_eq!((info.width, info.height), (200, 150));
    let centre = ((75 * 200 + 100) * 3) as usize;
    for channel in 0..3 {
        let delta = i16::from(rgb[centre + channel]) - i16::from(background[channel]);
        assert!(delta.abs() <= 8, "jpeg centre {:?} vs {background:?}", &rgb[centre..centre + 3]);
    }
    assert_eq!(ok(&canvas, "canvas.eval", json!({"javaScript": "document.title"})).await, json!({"result": title}));
    canvas.shutdown().await;
}

/// A loopback HTTP server answering every request with a page titled `title`, for `requests`
/// requests.
fn serve_title(title: &str, requests: usize) -> u16 {
    serve_page(format!("<!doctype html><title>{title}</title><body>hello</body>"), requests)
}

/// A loopback HTTP server answering every request, whatever its path, with the HTML `body`, for
/// `requests` requests.
fn serve_page(body: String, requests: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let response = Arc::new(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    std::thread::spawn(move || {
        // A connection each on its own thread, its read bounded: Chromium opens speculative
        // connections that may never send a request, and one of those read inline blocked every
        // later page load until the navigation timed out.
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let response = response.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut request = [0u8; 4096];
                if matches!(stream.read(&mut request), Ok(read) if read > 0) {
                    let _ = stream.write_all(response.as_bytes());
                }
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_loads_the_page_and_eval_reads_its_nonce_title() {
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let canvas = canvas(dir.path(), Duration::ZERO);
    let title = nonce();
    let port = serve_title(&title, 8);
    // navigate presents the canvas when it is not shown; the URL comes back canonical.
    let url = format!("HTTP://127.0.0.1:{port}/page?n={title}");
    let navigated = ok(&canvas, "canvas.navigate", json!({"url": url})).await;
    assert_eq!(
        navigated,
        json!({"navigated": true, "opener": "canvas", "url": format!("http://127.0.0.1:{port}/page?n={title}")})
    );
    assert_eq!(ok(&canvas, "canvas.eval", json!({"script": "document.title"})).await, json!({"result": title}));
    assert_eq!(
        ok(&canvas, "canvas.eval", json!({"javascript": "location.pathname"})).await,
        json!({"result": "/page"})
    );
    // Values as JSON: a promise's once settled, undefined as null, the unserializable as text.
    let cases = [
        ("Promise.resolve(6 * 7)", json!(42)),
        ("({a: [1, 'b', null], t: true})", json!({"a": [1, "b", null], "t": true})),
        ("undefined", json!(null)),
        ("0 / 0", json!("NaN")),
        ("2n ** 70n", json!("1180591620717411303424n")),
        ("new Promise(r => setTimeout(() => r('late'), 50))", json!("late")),
    ];
    for (script, expected) in cases {
        assert_eq!(
            ok(&canvas, "canvas.eval", json!({"script": script})).await,
            json!({"result": expected}),
            "{script}"
        );
    }
    // A page that cannot be reached says why.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let failed =
        answer(&canvas, "canvas.navigate", json!({"url": format!("http://127.0.0.1:{closed}/")})).await.unwrap_err();
    assert!(failed.message.starts_with("Navigate failed: net::ERR_CONNECTION_REFUSED"), "{}", failed.message);
    canvas.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_errors_are_clear_and_a_script_that_runs_on_is_stopped_in_time() {
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let canvas = canvas(dir.path(), Duration::ZERO);
    // Nothing presented: no browser is started for it.
    let closed = answer(&canvas, "canvas.eval", json!({"script": "1"})).await.unwrap_err();
    assert_eq!(closed.code, Some(NOT_OPEN));
    assert!(closed.message.contains("call canvas.present first"), "{}", closed.message);
    assert!(canvas.browser().await.is_none());
    let snapshot = call(&canvas, "canvas.snapshot", json!({})).await.unwrap_err();
    assert_eq!(snapshot.code, Some(NOT_OPEN));

    ok(&canvas, "canvas.present", json!({"html": "<p>x</p>"})).await;
    let missing = answer(&canvas, "canvas.eval", json!({"script": "  "})).await.unwrap_err();
    assert!(missing.message.starts_with("Missing script parameter"), "{}", missing.message);
    assert_eq!(missing.code, Some(INVALID_REQUEST));
    let word = nonce();
    let threw =
        answer(&canvas, "canvas.eval", json!({"script": format!("throw new Error('boom {word}')")})).await.unwrap_err();
    assert!(
        threw.message.starts_with(&format!("Eval failed: the script threw Error: boom {word}")),
        "{}",
        threw.message
    );
    let rejected =
        answer(&canvas, "canvas.eval", json!({"script": "Promise.reject(new TypeError('nope'))"})).await.unwrap_err();
    assert!(rejected.message.starts_with("Eval failed: the script threw TypeError: nope"), "{}", rejected.message);
    let syntax = answer(&canvas, "canvas.eval", json!({"script": "1 +"})).await.unwrap_err();
    assert!(syntax.message.starts_with("Eval failed: the script threw SyntaxError"), "{}", syntax.message);

    for script in ["while (true) {}", "new Promise(() => {})"] {
        let started = Instant::now();
        let stopped = answer(&canvas, "canvas.eval", json!({"script": script, "timeoutMs": 300})).await.unwrap_err();
        let took = started.elapsed();
        assert_eq!(stopped.code, Some(TIMEOUT), "{script}: {}", stopped.message);
        assert!(stopped.message.contains("still running after 300 ms"), "{}", stopped.message);
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{script} stopped after {took:?}");
        // The page still answers.
        assert_eq!(
            ok(&canvas, "canvas.eval", json!({"script": "1 + 1"})).await,
            json!({"result": 2}),
            "after {script}"
        );
    }
    canvas.shutdown().await;
}

#[tokio::test]
async fn urls_other_than_http_and_https_are_refused_before_any_browser_starts() {
    let dir = tempfile::tempdir().unwrap();
    let canvas = canvas(dir.path(), Duration::ZERO);
    for url in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,<p>x</p>",
        "about:blank",
        "chrome://settings",
        "ftp://example.com/",
        "view-source:https://example.com/",
    ] {
        let refused = answer(&canvas, "canvas.navigate", json!({"url": url})).await.unwrap_err();
        assert_eq!(refused.code, Some(INVALID_REQUEST), "{url}");
        assert!(
            refused.message.starts_with("Invalid url: the canvas opens only http and https URLs, not "),
            "{url}: {}",
            refused.message
        );
        let present = answer(&canvas, "canvas.present", json!({"url": url})).await.unwrap_err();
        assert_eq!(present.message, refused.message, "present's url is held to the same rule");
    }
    let relative = answer(&canvas, "canvas.navigate", json!({"url": "/etc/passwd"})).await.unwrap_err();
    assert!(relative.message.starts_with("Invalid url: relative URL without a base"), "{}", relative.message);
    let missing = answer(&canvas, "canvas.navigate", json!({})).await.unwrap_err();
    assert_eq!((missing.message.as_str(), missing.code), ("Missing url parameter", Some(INVALID_REQUEST)));
    let both =
        answer(&canvas, "canvas.present", json!({"url": "https://example.com", "html": "<p>"})).await.unwrap_err();
    assert!(both.message.starts_with("present takes url or html, not both"), "{}", both.message);
    let large = answer(&canvas, "canvas.present", json!({"html": "x".repeat(MAX_HTML_BYTES + 1)})).await.unwrap_err();
    assert!(large.message.contains("more than the 1048576"), "{}", large.message);
    let format = call(&canvas, "canvas.snapshot", json!({"format": "webp"})).await.unwrap_err();
    assert_eq!(format.message, "Unsupported canvas snapshot format. Supported formats: png, jpeg.");
    assert!(canvas.browser().await.is_none(), "no browser was started for a refused call");
    // The clamps, as upstream's.
    let parsed =
        PresentArgs::parse(json!({"width": 5, "height": 99999, "x": -1, "y": 99999}).as_object().unwrap()).unwrap();
    assert_eq!(parsed.geometry, Geometry { width: 100, height: 7680, x: None, y: Some(16384) });
    let snapshot = SnapshotArgs::parse(json!({"maxWidth": 1, "quality": 0.5}).as_object().unwrap()).unwrap();
    assert_eq!((snapshot.max_width, snapshot.quality), (32, 50));
    assert_eq!(web_url("https://Example.COM:443/a/../b").unwrap(), "https://example.com/b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hide_shutdown_and_drop_leave_no_browser_process_and_no_profile() {
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Hidden with no idle bound: stopped before hide answers.
    let canvas = canvas(dir.path(), Duration::ZERO);
    assert_eq!(ok(&canvas, "canvas.hide", json!({})).await, json!({"hidden": true}), "nothing shown: still hidden");
    ok(&canvas, "canvas.present", json!({"html": "<p>one</p>"})).await;
    let (_, processes, profile) = running(&canvas).await;
    assert_eq!(ok(&canvas, "canvas.hide", json!({})).await, json!({"hidden": true}));
    assert_eq!(still_running(&processes), Vec::<u32>::new(), "hide stopped the whole tree");
    assert!(!profile.exists(), "and removed the profile");
    assert!(canvas.browser().await.is_none());

    // The node's shutdown.
    ok(&canvas, "canvas.present", json!({"html": "<p>two</p>"})).await;
    let (_, processes, profile) = running(&canvas).await;
    canvas.shutdown().await;
    assert_eq!(still_running(&processes), Vec::<u32>::new(), "shutdown stopped the whole tree");
    assert!(!profile.exists());

    // Dropped without a shutdown (a node that exits otherwise): killed at once all the same.
    ok(&canvas, "canvas.present", json!({"html": "<p>three</p>"})).await;
    let (_, processes, profile) = running(&canvas).await;
    drop(canvas);
    wait_gone(&processes, &profile, Duration::from_secs(5)).await;

    // With an idle bound: kept while presented again within it, stopped once it passes.
    let canvas = canvas_with_idle(dir.path(), Duration::from_millis(600));
    ok(&canvas, "canvas.present", json!({"html": "<p>four</p>"})).await;
    let (pid, processes, profile) = running(&canvas).await;
    ok(&canvas, "canvas.hide", json!({})).await;
    let hidden = answer(&canvas, "canvas.snapshot", json!({})).await.unwrap_err();
    assert_eq!(hidden.code, Some(NOT_OPEN), "a hidden canvas is not snapshotted");
    ok(&canvas, "canvas.present", json!({"html": "<p>five</p>"})).await;
    assert_eq!(canvas.browser().await.map(|(again, _)| again), Some(pid), "the same browser, presented again");
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(still_running(&processes).contains(&pid), "a presented canvas is not stopped");
    ok(&canvas, "canvas.hide", json!({})).await;
    assert!(still_running(&processes).contains(&pid), "kept during the idle bound");
    wait_gone(&processes, &profile, Duration::from_secs(5)).await;
    assert!(canvas.browser().await.is_none());
}

fn canvas_with_idle(dir: &Path, idle: Duration) -> CanvasCapability {
    canvas(dir, idle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_hides_and_refuses_canvas_and_applies_live() {
    let _slot = BROWSERS.acquire().await.unwrap();
    require("chromium", "chromium");
    let dir = tempfile::tempdir().unwrap();
    let options = headless_with_renderer();
    let canvas = CanvasCapability::with_options(settings(dir.path(), false), options);
    let names: Vec<String> = canvas.commands().iter().map(|command| command.name().to_owned()).collect();
    assert_eq!(
        names,
        [
            "canvas.present",
            "canvas.hide",
            "canvas.navigate",
            "canvas.eval",
            "canvas.snapshot",
            "canvas.caps",
            "canvas.a2ui.push",
            "canvas.a2ui.pushJSONL",
            "canvas.a2ui.reset",
            "canvas.a2ui.dump"
        ]
    );
    let off = |canvas: &CanvasCapability| canvas.commands().iter().all(|command| !command.is_listed());
    assert!(off(&canvas), "off: nothing is listed");
    let reason = find(&canvas, "canvas.present").unavailable_reason().unwrap();
    assert!(reason.contains("NodeCanvasEnabled is false"), "{reason}");
    let refused = answer(&canvas, "canvas.present", json!({"html": "<p>x</p>"})).await.unwrap_err();
    assert_eq!(refused.code, Some(UNAVAILABLE));
    assert!(refused.message.contains("clawmcp settings set NodeCanvasEnabled true"), "{}", refused.message);
    assert!(canvas.browser().await.is_none());

    switch(dir.path(), true);
    let deadline = Instant::now() + Duration::from_secs(5);
    while off(&canvas) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(canvas.commands().iter().all(Command::is_listed), "on: every command is listed");
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!(
        (caps["renderer"].clone(), caps["running"].clone(), caps["window"].clone()),
        (json!("chromium"), json!(false), json!("headless"))
    );
    ok(&canvas, "canvas.present", json!({"html": "<title>on</title>"})).await;
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!((caps["running"].clone(), caps["visible"].clone()), (json!(true), json!(true)));
    assert!(caps["browserVersion"].as_str().unwrap().starts_with("Chrome/"), "{caps}");
    assert_eq!(ok(&canvas, "canvas.eval", json!({"script": "document.title"})).await, json!({"result": "on"}));

    switch(dir.path(), false);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !off(&canvas) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(off(&canvas), "off again: hidden at once");
    let refused = answer(&canvas, "canvas.eval", json!({"script": "1"})).await.unwrap_err();
    assert_eq!(refused.code, Some(UNAVAILABLE));
    canvas.shutdown().await;
}

#[tokio::test]
async fn without_chromium_the_canvas_is_not_listed_and_says_which_package_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let options = CanvasOptions {
        idle_after_hide: Duration::ZERO,
        path: Some(empty.path().into()),
        screen: Screen::Headless,
        a2ui: vec![],
        ..CanvasOptions::default()
    };
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    let present = find(&canvas, "canvas.present");
    assert!(!present.is_listed());
    let reason = present.unavailable_reason().unwrap();
    assert!(reason.contains("chromium is not installed") && reason.contains("apt install chromium"), "{reason}");
    let refused = answer(&canvas, "canvas.present", json!({})).await.unwrap_err();
    assert_eq!(refused.code, Some(UNAVAILABLE));
    assert!(refused.message.contains("apt install chromium"), "{}", refused.message);
}

/// The inodes of the TCP sockets in LISTEN state (`/proc/net/tcp` and `tcp6`).
fn listening_socket_inodes() -> BTreeSet<String> {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap_or_default().lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl, local_address, rem_address, st (0A = LISTEN), ..., inode (the tenth field)
            if fields.get(3) == Some(&"0A")
                && let Some(inode) = fields.get(9)
            {
                inodes.insert((*inode).to_owned());
            }
        }
    }
    inodes
}

/// What `pid`'s descriptors point at (`socket:[123]`, `pipe:[456]`, a path), by number.
fn descriptors(pid: u32) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return vec![] };
    entries
        .flatten()
        .filter_map(|entry| {
            let number = entry.file_name().to_str()?.parse().ok()?;
            Some((number, std::fs::read_link(entry.path()).ok()?.display().to_string()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_listens_on_no_port_so_no_other_process_can_drive_it() {
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let canvas = canvas(dir.path(), Duration::ZERO);
    ok(&canvas, "canvas.present", json!({"html": "<p>page</p>"})).await;
    let (pid, processes, profile) = running(&canvas).await;
    // DevTools runs on the pipe the node gave it: descriptors 3 and 4 of the main process.
    let main = descriptors(pid);
    for number in [3, 4] {
        let target = main.iter().find(|(at, _)| *at == number).map(|(_, target)| target.as_str());
        assert!(target.is_some_and(|target| target.starts_with("pipe:")), "fd {number} is {target:?}");
    }
    assert!(!profile.join("DevToolsActivePort").exists(), "chromium opened no DevTools port");
    // No process of the tree holds a listening TCP socket: nothing on this machine (another local
    // user included) can connect to the browser. (A page can still open its own connections.)
    let listening = listening_socket_inodes();
    for &(process, _) in &processes {
        for (number, target) in descriptors(process) {
            let inode = target.strip_prefix("socket:[").and_then(|rest| rest.strip_suffix(']'));
            assert!(
                !inode.is_some_and(|inode| listening.contains(inode)),
                "chromium process {process} listens on fd {number} ({target})"
            );
        }
    }
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert!(caps["browserVersion"].as_str().unwrap().starts_with("Chrome/"), "the node drives it over the pipe");
    canvas.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_in_the_canvas_cannot_reach_the_nodes_mcp_listener_even_with_its_token() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use clawmcp_http::client::McpClient;
    use clawmcp_http::{HttpConfig, Limits};
    use clawmcp_mcp::client::Answer;
    use clawmcp_mcp::{DuplicatePolicy, McpServer, RequestId, ServerInfo};

    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The node's real HTTP listener, serving one command that counts the calls reaching it.
    let touched = Arc::new(AtomicUsize::new(0));
    let registry = Arc::new(crate::Registry::new());
    let spec = CommandSpec {
        name: "probe.touch",
        title: None,
        description: Some("Counts its calls."),
        input_schema: Some(object_schema(json!({}))),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    };
    let count = touched.clone();
    registry.register_commands([spec.with_handler(move |_, _| {
        count.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!({"touched": true})) }
    })]);
    let service = crate::NodeMcpService::new(registry);
    let info = ServerInfo { name: "clawmcp-test".into(), version: "0".into() };
    let mcp = Arc::new(McpServer::new(info, Arc::new(service), DuplicatePolicy::Allow));
    let token_path = dir.path().join("token");
    let config = HttpConfig { port: 0, token_path: token_path.clone(), limits: Limits::default() };
    let server = clawmcp_http::bind(config).await.unwrap();
    let port = server.local_addr().port();
    let stop = tokio_util::sync::CancellationToken::new();
    let served = tokio::spawn(server.serve(mcp, stop.clone()));
    let token = clawmcp_http::token::read_token_file(&token_path).unwrap().unwrap();
    let client = McpClient::loopback(port).with_bearer(Some(token.clone()));
    let endpoint = client.endpoint();

    // A web page on a loopback origin that knows the endpoint and the token (the worst case).
    let canvas = canvas(dir.path(), Duration::ZERO);
    let page = serve_title("page", 4);
    ok(&canvas, "canvas.navigate", json!({"url": format!("http://127.0.0.1:{page}/")})).await;
    let script = format!(
        "(async () => {{ const url = {url}; const out = []; \
         const body = JSON.stringify({{jsonrpc: '2.0', id: 1, method: 'tools/call', params: {{name: 'probe.touch', arguments: {{}}}}}}); \
         try {{ const r = await fetch(url, {{method: 'POST', mode: 'no-cors', body, headers: {{'Content-Type': 'text/plain'}}}}); out.push('simple:' + r.type); }} catch (e) {{ out.push('simple:error'); }} \
         try {{ const r = await fetch(url, {{method: 'POST', body, headers: {{'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream', 'Authorization': 'Bearer ' + {token}}}}}); out.push('cors:' + r.status); }} catch (e) {{ out.push('cors:error'); }} \
         return out; }})()",
        url = Value::from(endpoint.as_str()),
        token = Value::from(token.as_str()),
    );
    let tried = ok(&canvas, "canvas.eval", json!({"script": script})).await;
    assert_eq!(tried, json!({"result": ["simple:opaque", "cors:error"]}), "what the page saw");
    // The canvas itself opened at the endpoint: the gate's refusal is what it shows.
    ok(&canvas, "canvas.navigate", json!({"url": endpoint})).await;
    let shown = ok(&canvas, "canvas.eval", json!({"script": "document.body.innerText"})).await;
    assert!(shown["result"].as_str().unwrap().contains("not allowed"), "{shown}");
    assert_eq!(touched.load(Ordering::SeqCst), 0, "no call from the canvas reached the command");

    // The control: the node's own client, with the token, does reach it.
    let mut client = client;
    let init =
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    client.initialize(&init).await.unwrap();
    let params = json!({"name": "probe.touch", "arguments": {}});
    let answer = client.request(&RequestId::number(2), "tools/call", Some(&params)).await.unwrap();
    assert!(matches!(answer, Answer::Result(_)), "{answer:?}");
    assert_eq!(touched.load(Ordering::SeqCst), 1);
    canvas.shutdown().await;
    stop.cancel();
    served.await.unwrap().unwrap();
}

/// The line `xwininfo -root -tree` prints for the window named `title`, once there is one
/// (waiting at most `within`), else the whole tree.
async fn window_line(display: &str, title: &str, within: Duration) -> Result<String, String> {
    let deadline = Instant::now() + within;
    loop {
        let output = std::process::Command::new("xwininfo")
            .args(["-display", display, "-root", "-tree"])
            .output()
            .expect("xwininfo runs (apt-get install x11-utils)");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if let Some(line) = text.lines().find(|line| line.contains(&format!("\"{title}\""))) {
            return Ok(line.trim().to_owned());
        }
        if Instant::now() >= deadline {
            return Err(text);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The colour the X server shows at (`x`, `y`) of the screen (Xvfb's 24-bit TrueColor: B, G, R, pad).
fn screen_pixel(display: &str, x: i16, y: i16) -> [u8; 3] {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{ConnectionExt, ImageFormat};
    let (conn, screen) = x11rb::connect(Some(display)).unwrap();
    let root = conn.setup().roots[screen].root;
    let image = conn.get_image(ImageFormat::Z_PIXMAP, root, x, y, 1, 1, !0).unwrap().reply().unwrap();
    [image.data[2], image.data[1], image.data[0]]
}

/// The X screen's pixel at (`x`, `y`) once it is `colour` (the window's compositor draws a frame
/// or two after the page has loaded), or what it is after a few seconds.
async fn wait_screen_pixel(display: &str, x: i16, y: i16, colour: [u8; 3]) -> [u8; 3] {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let seen = screen_pixel(display, x, y);
        if seen == colour || Instant::now() >= deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_display_the_canvas_is_an_app_window_of_the_asked_size_place_and_title() {
    let _slot = BROWSERS.acquire().await.unwrap();
    require("chromium", "chromium");
    require("xwininfo", "x11-utils");
    let dir = tempfile::tempdir().unwrap();
    let (_xvfb, display) = crate::test_support::xvfb_sized(dir.path(), "1024x768x24");
    let options = CanvasOptions {
        screen: Screen::X11(display.clone()),
        idle_after_hide: Duration::ZERO,
        path: None,
        a2ui: vec![],
        ..CanvasOptions::default()
    };
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!((caps["window"].clone(), caps["headless"].clone()), (json!("x11"), json!(false)), "{caps}");

    let title = nonce();
    let colour = random_bytes::<3>();
    let html = format!("<body style=\"margin:0;background:{}\"></body>", hex(colour));
    let args = json!({"html": html, "width": 400, "height": 300, "x": 50, "y": 60, "title": title});
    ok(&canvas, "canvas.present", args).await;
    let line = window_line(&display, &title, Duration::from_secs(10))
        .await
        .unwrap_or_else(|tree| panic!("no window titled {title}:\n{tree}"));
    assert!(line.contains(" 400x300+50+60 "), "the window's geometry: {line}");
    // App mode: the page begins at the window's top-left corner (no tab strip, address bar or
    // infobar above it) and fills it to the opposite corner.
    for (x, y) in [(51, 61), (250, 210), (448, 358)] {
        assert_eq!(wait_screen_pixel(&display, x, y, colour).await, colour, "the screen at ({x}, {y})");
    }
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!((caps["window"].clone(), caps["headless"].clone()), (json!("x11"), json!(false)), "{caps}");
    assert_eq!(caps["present"]["position"], json!(true));
    // The snapshot is the page's own pixels, exactly.
    let output = call(&canvas, "canvas.snapshot", json!({})).await.unwrap();
    let pixels = decode_png(&output);
    assert_eq!((pixels.width, pixels.height), (400, 300));
    for y in 0..300 {
        for x in 0..400 {
            assert_eq!(pixel(&pixels, x, y), colour, "pixel ({x}, {y})");
        }
    }

    // Presented again without x and y: moved, resized and centred on the 1024x768 screen.
    let title = nonce();
    ok(&canvas, "canvas.present", json!({"html": "<p>c</p>", "width": 200, "height": 100, "title": title})).await;
    let line = window_line(&display, &title, Duration::from_secs(10))
        .await
        .unwrap_or_else(|tree| panic!("no window titled {title}:\n{tree}"));
    assert!(line.contains(" 200x100+412+334 "), "centred on 1024x768: {line}");
    assert_eq!(ok(&canvas, "canvas.eval", json!({"script": "document.body.innerText"})).await, json!({"result": "c"}));

    // Hidden: the window goes at once, with the whole tree and the profile.
    let (_, processes, profile) = running(&canvas).await;
    ok(&canvas, "canvas.hide", json!({})).await;
    wait_gone(&processes, &profile, Duration::from_secs(5)).await;
    assert!(window_line(&display, &title, Duration::ZERO).await.is_err(), "no canvas window is left");
}

/// Where the tests find OpenClaw's A2UI renderer: where the node looks, then the e2e gateway's
/// install (`e2e/gateway/install.sh`); a test fails, naming the package, when it is nowhere.
fn a2ui_bundle() -> Vec<std::path::PathBuf> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from).unwrap_or_default();
    let cache = std::env::var_os("CLAWMCP_E2E_CACHE").map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("XDG_CACHE_HOME")
            .map_or_else(|| home.join(".cache"), std::path::PathBuf::from)
            .join("clawmcp-e2e")
    });
    let mut candidates = a2ui::bundle_candidates();
    candidates.push(cache.join("gateway/oc/node_modules/openclaw/dist/canvas-host/a2ui/a2ui.bundle.js"));
    let found = a2ui::find_bundle(&candidates).unwrap_or_else(|missing| {
        panic!(
            "{missing} (or run e2e/gateway/install.sh, which installs the openclaw npm package in {})",
            cache.display()
        )
    });
    vec![found]
}

/// A headless canvas that stops its browser at once on hide, with OpenClaw's A2UI renderer.
fn headless_with_renderer() -> CanvasOptions {
    CanvasOptions {
        idle_after_hide: Duration::ZERO,
        screen: Screen::Headless,
        a2ui: a2ui_bundle(),
        ..CanvasOptions::default()
    }
}

/// Every text the page shows, through open shadow roots (the renderer's components use them);
/// not scripts' and styles' text.
const PAGE_TEXT: &str = "(() => { const out = []; const walk = (node) => { if (node.shadowRoot) walk(node.shadowRoot); \
    for (const child of node.childNodes) { if (child.nodeType === 3 && child.textContent.trim()) out.push(child.textContent.trim()); \
    else if (child.nodeType === 1 && !['SCRIPT', 'STYLE'].includes(child.tagName)) walk(child); } }; \
    walk(document.body); return out; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2ui_messages_are_rendered_by_openclaws_renderer_dumped_and_reset() {
    let _slot = BROWSERS.acquire().await.unwrap();
    require("chromium", "chromium");
    let dir = tempfile::tempdir().unwrap();
    let options = headless_with_renderer();
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    assert!(canvas.commands().iter().all(Command::is_listed), "with the renderer every command is listed");
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!(caps["a2ui"], json!({"version": "0.8", "introspect": true, "supported": true}));
    let closed = answer(&canvas, "canvas.a2ui.dump", json!({})).await.unwrap_err();
    assert_eq!(closed.code, Some(NOT_OPEN), "{}", closed.message);

    let (heading, line) = (nonce(), nonce());
    let jsonl = [
        json!({"surfaceUpdate": {"surfaceId": "main", "components": [
            {"id": "root", "component": {"Column": {"children": {"explicitList": ["heading", "line"]}}}},
            {"id": "heading", "component": {"Text": {"text": {"literalString": heading}, "usageHint": "h1"}}},
            {"id": "line", "component": {"Text": {"text": {"path": "/line"}}}}
        ]}}),
        json!({"dataModelUpdate": {"surfaceId": "main", "contents": [{"key": "line", "valueString": line}]}}),
        json!({"beginRendering": {"surfaceId": "main", "root": "root"}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n");
    assert_eq!(
        ok(&canvas, "canvas.a2ui.push", json!({"jsonl": format!("{jsonl}\n\n")})).await,
        json!({"pushed": true})
    );
    let dump = ok(&canvas, "canvas.a2ui.dump", json!({})).await;
    let surfaces = dump["surfaces"].as_array().unwrap();
    assert_eq!(surfaces.len(), 1, "{dump}");
    assert_eq!((surfaces[0]["surfaceId"].clone(), surfaces[0]["root"].clone()), (json!("main"), json!("root")));
    let ids: Vec<&str> =
        surfaces[0]["components"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["root", "heading", "line"], "{dump}");
    assert_eq!(surfaces[0]["components"][1]["component"]["Text"]["text"]["literalString"], json!(heading));
    assert!(surfaces[0]["dataModel"].to_string().contains(&line), "the data model holds the bound value: {dump}");
    // Rendered: both texts are on the page (the bound one through the data model), and pixels
    // differ from the empty renderer's.
    let deadline = Instant::now() + Duration::from_secs(5);
    let shown = loop {
        let shown = ok(&canvas, "canvas.eval", json!({"script": PAGE_TEXT})).await["result"].clone();
        let texts: Vec<String> = serde_json::from_value(shown.clone()).unwrap();
        let has = |word: &str| texts.iter().any(|text| text.contains(word));
        if has(&heading) && has(&line) || Instant::now() >= deadline {
            break texts;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // (An h1 Text is markdown: the renderer shows it as "# heading".)
    let has = |word: &str| shown.iter().any(|text| text.contains(word));
    assert!(has(&heading) && has(&line), "the page shows {shown:?}");
    let rendered = decode_png(&call(&canvas, "canvas.snapshot", json!({})).await.unwrap());
    assert_eq!((rendered.width, rendered.height), (800, 600), "the default size");

    // A file of messages inside the temp directory: another surface.
    let other = nonce();
    let file = tempfile::NamedTempFile::new_in(std::env::temp_dir()).unwrap();
    let messages = [
        json!({"surfaceUpdate": {"surfaceId": "side", "components": [{"id": "t", "component": {"Text": {"text": {"literalString": other}}}}]}}),
        json!({"beginRendering": {"surfaceId": "side", "root": "t"}}),
    ];
    std::fs::write(file.path(), messages.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")).unwrap();
    let path = file.path().to_str().unwrap();
    ok(&canvas, "canvas.a2ui.pushJSONL", json!({"jsonlPath": path})).await;
    let dump = ok(&canvas, "canvas.a2ui.dump", json!({})).await;
    let ids: Vec<&str> = dump["surfaces"].as_array().unwrap().iter().filter_map(|s| s["surfaceId"].as_str()).collect();
    assert_eq!(ids, ["main", "side"], "{dump}");

    // Refused: a path out of the temp directory (through a link in it), both or neither source,
    // over upstream's limits, a line that is not a JSON object.
    let link = tempfile::Builder::new().tempdir_in(std::env::temp_dir()).unwrap();
    let outside = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
    std::fs::write(outside.path().join("m.jsonl"), "{}").unwrap();
    std::os::unix::fs::symlink(outside.path().join("m.jsonl"), link.path().join("m.jsonl")).unwrap();
    let escaped = link.path().join("m.jsonl");
    let refused = answer(&canvas, "canvas.a2ui.push", json!({"jsonlPath": escaped})).await.unwrap_err();
    assert!(refused.message.contains("must be inside the temp directory"), "{}", refused.message);
    assert_eq!(refused.code, Some(INVALID_REQUEST));
    let both = answer(&canvas, "canvas.a2ui.push", json!({"jsonl": "{}", "jsonlPath": path})).await.unwrap_err();
    assert!(both.message.contains("not both"), "{}", both.message);
    let neither = answer(&canvas, "canvas.a2ui.push", json!({})).await.unwrap_err();
    assert!(neither.message.starts_with("Missing jsonl parameter"), "{}", neither.message);
    let lines = answer(&canvas, "canvas.a2ui.push", json!({"jsonl": "{}\n".repeat(4097)})).await.unwrap_err();
    assert!(lines.message.contains("more than the 4096"), "{}", lines.message);
    let big = format!("{{\"x\": \"{}\"}}", "y".repeat(a2ui::MAX_JSONL_BYTES));
    let bytes = answer(&canvas, "canvas.a2ui.push", json!({"jsonl": big})).await.unwrap_err();
    assert!(bytes.message.contains("more than the 4194304"), "{}", bytes.message);
    let array = answer(&canvas, "canvas.a2ui.push", json!({"jsonl": "{}\n[1]"})).await.unwrap_err();
    assert!(array.message.contains("line 2 is not a JSON object"), "{}", array.message);

    // Reset clears every surface; the page shows none of the texts.
    assert_eq!(ok(&canvas, "canvas.a2ui.reset", json!({})).await, json!({"reset": true}));
    assert_eq!(ok(&canvas, "canvas.a2ui.dump", json!({})).await, json!({"surfaces": []}));
    let texts: Vec<String> =
        serde_json::from_value(ok(&canvas, "canvas.eval", json!({"script": PAGE_TEXT})).await["result"].clone())
            .unwrap();
    assert!(!texts.iter().any(|text| text.contains(&heading) || text.contains(&other)), "{texts:?}");
    let empty = decode_png(&call(&canvas, "canvas.snapshot", json!({})).await.unwrap());
    assert_ne!(empty.data, rendered.data, "the rendered surface was in the pixels");
    // Another page replaces the renderer: dump says so.
    ok(&canvas, "canvas.present", json!({"html": "<p>x</p>"})).await;
    let page = answer(&canvas, "canvas.a2ui.dump", json!({})).await.unwrap_err();
    assert_eq!(page.code, Some(NOT_OPEN), "{}", page.message);
    canvas.shutdown().await;
}

#[tokio::test]
async fn without_the_a2ui_renderer_its_commands_are_not_listed_and_say_how_to_install_it() {
    require("chromium", "chromium");
    let dir = tempfile::tempdir().unwrap();
    let missing = vec![dir.path().join("none").join("a2ui.bundle.js")];
    let options = CanvasOptions {
        idle_after_hide: Duration::ZERO,
        path: None,
        screen: Screen::Headless,
        a2ui: missing,
        ..CanvasOptions::default()
    };
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    assert!(find(&canvas, "canvas.present").is_listed(), "the rest of the canvas works");
    let push = find(&canvas, "canvas.a2ui.push");
    assert!(!push.is_listed());
    let reason = push.unavailable_reason().unwrap();
    assert!(reason.contains("npm install -g openclaw"), "{reason}");
    let refused = answer(&canvas, "canvas.a2ui.dump", json!({})).await.unwrap_err();
    assert_eq!(refused.code, Some(UNAVAILABLE));
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!(caps["a2ui"]["supported"], json!(false));
}

#[tokio::test]
async fn the_node_s_display_makes_a_window_only_when_an_x_server_answers_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let (xvfb, display) = crate::test_support::xvfb(dir.path());
    assert_eq!(window_on(Some(display.clone())).await, Window::X11(display.clone()));
    assert_eq!(window_on(None).await, Window::Headless, "DISPLAY unset");
    assert_eq!(window_on(Some(String::new())).await, Window::Headless, "DISPLAY empty");
    // A stale DISPLAY (its server gone) would make a windowed Chromium exit: headless instead.
    drop(xvfb);
    assert_eq!(window_on(Some(display)).await, Window::Headless, "no server answers");
}

/// `xprop`'s `_NET_WM_STATE` of the window titled `title` (found in `xwininfo`'s tree: under a
/// reparenting window manager it is a frame's child, which `xprop -name` does not search).
async fn wm_state(display: &str, title: &str) -> String {
    let line =
        window_line(display, title, Duration::from_secs(10)).await.unwrap_or_else(|tree| panic!("no {title}:\n{tree}"));
    let id = line.split_whitespace().next().unwrap().to_owned();
    let output = std::process::Command::new("xprop")
        .args(["-display", display, "-id", &id, "_NET_WM_STATE"])
        .output()
        .expect("xprop runs (apt-get install x11-utils)");
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_window_manager_always_on_top_keeps_the_canvas_window_above() {
    let _slot = BROWSERS.acquire().await.unwrap();
    require("chromium", "chromium");
    require("xprop", "x11-utils");
    let dir = tempfile::tempdir().unwrap();
    let (_xvfb, display) = crate::test_support::xvfb_sized(dir.path(), "1024x768x24");
    let mut command = std::process::Command::new("openbox");
    command.args(["--sm-disable", "--config-file", "/dev/null"]).env("DISPLAY", &display);
    let _wm = crate::test_support::Spawned::start("openbox", "openbox", &mut command, dir.path());
    // Ready once it advertises what it supports.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !above::supported(&display) {
        assert!(Instant::now() < deadline, "openbox did not start on {display}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let options = CanvasOptions {
        screen: Screen::X11(display.clone()),
        idle_after_hide: Duration::ZERO,
        path: None,
        a2ui: vec![],
        ..CanvasOptions::default()
    };
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!(caps["present"]["alwaysOnTop"], json!(true), "{caps}");
    let title = nonce();
    let args = json!({"html": "<p>top</p>", "width": 300, "height": 200, "title": title, "alwaysOnTop": true});
    ok(&canvas, "canvas.present", args).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !wm_state(&display, &title).await.contains("_NET_WM_STATE_ABOVE") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And it stays so (Chromium's own state updates do not take it back).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let state = wm_state(&display, &title).await;
    assert!(state.contains("_NET_WM_STATE_ABOVE"), "{state}");
    // Presented again without it: no longer above.
    let args = json!({"html": "<p>top</p>", "width": 300, "height": 200, "title": title, "alwaysOnTop": false});
    ok(&canvas, "canvas.present", args).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while wm_state(&display, &title).await.contains("_NET_WM_STATE_ABOVE") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = wm_state(&display, &title).await;
    assert!(!state.contains("_NET_WM_STATE_ABOVE") && state.contains("_NET_WM_STATE"), "{state}");
    canvas.shutdown().await;
}

/// Clicks the renderer's first `<button>`, found through its shadow roots: `true` once clicked.
const CLICK_BUTTON: &str = "(() => { const find = (root) => { for (const el of root.querySelectorAll('*')) { \
    if (el.tagName === 'BUTTON') return el; if (el.shadowRoot) { const found = find(el.shadowRoot); \
    if (found) return found; } } return null; }; const button = find(document); \
    if (!button) return false; button.click(); return true; })()";

/// The renderer's pending action as it shows it: `{id, name, phase, error}`.
const PENDING_ACTION: &str = "(() => { const action = document.querySelector('openclaw-a2ui-host')?.pendingAction; \
    return action ? { id: action.id, name: action.name, phase: action.phase, error: action.error ?? null } : null; })()";

/// Pushes a surface whose one button's action is `Get Weather` with `{city: Vienna}`.
async fn push_weather_button(canvas: &CanvasCapability) {
    let jsonl = [
        json!({"surfaceUpdate": {"surfaceId": "main", "components": [
            {"id": "btnWeather", "component": {"Button": {"child": "label", "action": {"name": "Get Weather",
                "context": [{"key": "city", "value": {"literalString": "Vienna"}}]}}}},
            {"id": "label", "component": {"Text": {"text": {"literalString": "Weather"}}}}
        ]}}),
        json!({"beginRendering": {"surfaceId": "main", "root": "btnWeather"}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n");
    ok(canvas, "canvas.a2ui.push", json!({"jsonl": jsonl})).await;
}

/// Clicks the button (once the renderer shows it) and waits until the page's pending action
/// reaches a settled phase (`sent` or `error`).
async fn click_and_settle(canvas: &CanvasCapability) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    while ok(canvas, "canvas.eval", json!({"script": CLICK_BUTTON})).await["result"] != json!(true) {
        assert!(Instant::now() < deadline, "the renderer shows no button");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    loop {
        let pending = ok(canvas, "canvas.eval", json!({"script": PENDING_ACTION})).await["result"].clone();
        if pending["phase"] == "sent" || pending["phase"] == "error" {
            return pending;
        }
        assert!(Instant::now() < deadline, "the action never settled: {pending}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_in_an_a2ui_surface_reaches_the_gateways_agent_and_only_from_the_renderer() {
    use crate::events::EventRoute;
    use crate::events::tests::Recorder;
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let events = NodeEvents::new();
    let options = CanvasOptions { events: events.clone(), ..headless_with_renderer() };
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);

    // Not joined to a gateway: the page is told why, and shows it.
    push_weather_button(&canvas).await;
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["phase"], "error", "{pending}");
    assert!(pending["error"].as_str().unwrap().contains("not connected to a gateway"), "{pending}");

    // Joined: the renderer's own click becomes upstream's agent.request, and the page shows it sent.
    let gateway = Recorder::new();
    let route: Arc<dyn EventRoute> = gateway.clone();
    events.route_through(route.clone());
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["phase"], "sent", "{pending}");
    let sent = gateway.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].event, "agent.request");
    let host: String = sysinfo::System::host_name()
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "_-.:".contains(c) { c } else { '_' })
        .collect();
    assert_eq!(
        sent[0].payload,
        json!({"message": format!("CANVAS_A2UI action=Get_Weather session=main surface=main component=btnWeather \
                                   host={host} instance=node-1 default=update_canvas ctx={{\"city\":\"Vienna\"}}"),
               "sessionKey": "main", "deliver": false, "key": pending["id"]})
    );

    // The gateway refuses: the page shows its reason.
    *gateway.answer.lock().unwrap() = Err("the gateway said no".into());
    let pending = click_and_settle(&canvas).await;
    assert_eq!((pending["phase"].as_str(), pending["error"].as_str()), (Some("error"), Some("the gateway said no")));
    *gateway.answer.lock().unwrap() = Ok(());

    // Every other document has the binding too (CDP adds it to each document of the page): a
    // frame inside the renderer's page and a page the canvas navigated to. Knowing its name here
    // (the worst case), their calls are ignored. Forwarding is one queue in order, so had one been
    // sent it would come before the renderer's next click.
    let binding = canvas.canvas.state.lock().await.browser.as_ref().unwrap().action_binding().to_owned();
    let forge =
        |id: &str| format!("JSON.stringify({{eventType: 'a2ui.action', action: {{id: '{id}', name: 'evil'}}}})");
    let name = Value::from(binding.as_str());
    let from_frame = format!(
        "(() => {{ const frame = document.createElement('iframe'); document.body.appendChild(frame); \
         frame.contentWindow[{name}]({}); return true; }})()",
        forge("forged-in-frame")
    );
    assert_eq!(ok(&canvas, "canvas.eval", json!({"script": from_frame})).await, json!({"result": true}));
    let port = serve_title("elsewhere", 1);
    ok(&canvas, "canvas.navigate", json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    let from_page = format!("globalThis[{name}]({}); true", forge("forged-in-page"));
    assert_eq!(ok(&canvas, "canvas.eval", json!({"script": from_page})).await, json!({"result": true}));
    push_weather_button(&canvas).await;
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["phase"], "sent", "{pending}");
    let keys: Vec<Value> = gateway.sent().iter().map(|event| event.payload["key"].clone()).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(keys[2], pending["id"], "no forged call was sent: {keys:?}");

    // The binding's bound, from the renderer's own document through its bridge: a call of exactly
    // MAX_ACTION_BYTES (the bridge's envelope included) is taken (and refused as a message longer
    // than the gateway takes, which the page hears), one byte more is dropped unheard. In order:
    // had the longer one been taken, its status would come first.
    let sized = |id: &str, total: usize| {
        let with = |fill: usize| {
            json!({"eventType": "a2ui.action", "action": {"id": id, "name": "big", "context": {"v": "x".repeat(fill)}}})
                .to_string()
        };
        let event = with(total - a2ui::BRIDGE_ENVELOPE_BYTES - with(0).len());
        assert_eq!(event.len() + a2ui::BRIDGE_ENVELOPE_BYTES, total);
        event
    };
    let listen = "globalThis.__statuses = []; globalThis.addEventListener('openclaw:a2ui-action-status', \
                  (e) => __statuses.push(e.detail.id + ':' + e.detail.ok)); true";
    ok(&canvas, "canvas.eval", json!({"script": listen})).await;
    for (id, total) in [("over-bound", browser::MAX_ACTION_BYTES + 1), ("at-bound", browser::MAX_ACTION_BYTES)] {
        let script = format!("openclaw.state.emit({}).catch(() => {{}}); true", sized(id, total));
        ok(&canvas, "canvas.eval", json!({"script": script})).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let statuses = loop {
        let statuses = ok(&canvas, "canvas.eval", json!({"script": "__statuses"})).await["result"].clone();
        if statuses.as_array().is_some_and(|seen| !seen.is_empty()) || Instant::now() >= deadline {
            break statuses;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(statuses, json!(["at-bound:false"]), "the call over the bound was dropped");
    assert_eq!(gateway.sent().len(), 3, "a message over the gateway's bound is not sent");

    // The link closes: refused again.
    events.unroute(&route);
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["phase"], "error", "{pending}");
    canvas.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_a_trusted_origin_gets_the_action_bridge_and_no_other_page_does() {
    use crate::events::EventRoute;
    use crate::events::tests::Recorder;
    let _slot = BROWSERS.acquire().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let events = NodeEvents::new();
    let gateway = Recorder::new();
    let route: Arc<dyn EventRoute> = gateway.clone();
    events.route_through(route);
    let options = CanvasOptions { events: events.clone(), ..headless_with_renderer() };
    let bundle = options.a2ui.clone();
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    // A board page of a web origin: the same renderer, served over http, with no bridge of its own.
    let renderer = std::fs::read_to_string(a2ui::find_bundle(&bundle).unwrap()).unwrap();
    let port = serve_page(
        format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Board</title></head><body>\
             <openclaw-a2ui-host></openclaw-a2ui-host><script type=\"module\">{}</script></body></html>",
            renderer.replace("</script", "<\\/script")
        ),
        64,
    );
    let weather = [
        json!({"surfaceUpdate": {"surfaceId": "main", "components": [
            {"id": "btnWeather", "component": {"Button": {"child": "label", "action": {"name": "Get Weather"}}}},
            {"id": "label", "component": {"Text": {"text": {"literalString": "Weather"}}}}
        ]}}),
        json!({"beginRendering": {"surfaceId": "main", "root": "btnWeather"}}),
    ];
    let show_board = |url: String| {
        let canvas = canvas.clone();
        let push = a2ui::push_script(&weather);
        async move {
            ok(&canvas, "canvas.navigate", json!({"url": url})).await;
            ok(&canvas, "canvas.eval", json!({"script": push})).await;
        }
    };
    let trust = |origins: &[String]| {
        let settings = json!({"NodeCanvasEnabled": true, "NodeCanvasTrustedOrigins": origins});
        std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
    };

    // Not trusted (the default): the renderer finds no bridge, and nothing is sent.
    let local = format!("http://127.0.0.1:{port}");
    show_board(format!("{local}/board")).await;
    let pending = click_and_settle(&canvas).await;
    assert_eq!(
        (pending["phase"].as_str(), pending["error"].as_str()),
        (Some("error"), Some("missing board action bridge"))
    );
    assert!(gateway.sent().is_empty());

    // The owner trusts the origin: the next page loaded from it has the bridge.
    trust(std::slice::from_ref(&local));
    show_board(format!("{local}/board")).await;
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["phase"], "sent", "{pending}");
    let sent = gateway.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].payload["key"], pending["id"]);
    assert!(sent[0].payload["message"].as_str().unwrap().starts_with("CANVAS_A2UI action=Get_Weather "), "{sent:?}");

    // The same server under another origin (another host name) is not trusted.
    show_board(format!("http://localhost:{port}/board")).await;
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["error"], "missing board action bridge", "{pending}");
    assert_eq!(gateway.sent().len(), 1);

    // The connected gateway's origin is trusted without a setting (ws:// serves http:// pages).
    trust(&[]);
    *gateway.gateway_url.lock().unwrap() = format!("ws://127.0.0.1:{port}");
    show_board(format!("{local}/board")).await;
    let pending = click_and_settle(&canvas).await;
    assert_eq!(pending["phase"], "sent", "{pending}");
    assert_eq!(gateway.sent().len(), 2);
    canvas.shutdown().await;
}

/// The window views of the sway whose runtime directory is `runtime` (`swaymsg -t get_tree`
/// through its IPC socket there): every node with a `pid`, as JSON.
fn sway_views(runtime: &Path) -> Vec<Value> {
    let socket = std::fs::read_dir(runtime)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("sway-ipc.")))
        .expect("sway's IPC socket");
    let tree =
        std::process::Command::new("swaymsg").args(["-t", "get_tree"]).env("SWAYSOCK", &socket).output().unwrap();
    assert!(tree.status.success(), "swaymsg: {}", String::from_utf8_lossy(&tree.stderr));
    let mut views = Vec::new();
    let mut stack = vec![serde_json::from_slice::<Value>(&tree.stdout).unwrap()];
    while let Some(node) = stack.pop() {
        for key in ["nodes", "floating_nodes"] {
            stack.extend(node[key].as_array().into_iter().flatten().cloned());
        }
        if node.get("pid").is_some() {
            views.push(node);
        }
    }
    views
}

/// The pixel at (`x`, `y`) of the compositor at `socket`, shot by grim.
fn wayland_pixel(socket: &str, x: i64, y: i64) -> [u8; 3] {
    let shot = std::process::Command::new("grim")
        .args(["-g", &format!("{x},{y} 1x1"), "-t", "ppm", "-"])
        .env("WAYLAND_DISPLAY", socket)
        .output()
        .unwrap();
    assert!(shot.status.success(), "grim: {}", String::from_utf8_lossy(&shot.stderr));
    let rgb = &shot.stdout[shot.stdout.len() - 3..];
    [rgb[0], rgb[1], rgb[2]]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_wayland_compositor_the_canvas_is_an_app_window_of_the_asked_size_and_title() {
    let _slot = BROWSERS.acquire().await.unwrap();
    require("chromium", "chromium");
    require("swaymsg", "sway");
    require("grim", "grim");
    let dir = tempfile::tempdir().unwrap();
    let title = nonce();
    // Floating, so the compositor keeps the size the client asks for (sway tiles by default);
    // matched by Chromium's app window id when the window appears (its title comes later).
    let sway = crate::test_support::sway_with(
        "output HEADLESS-1 resolution 1024x768\nfor_window [app_id=\"^chrome-\"] floating enable\n",
    );
    let options = CanvasOptions {
        screen: Screen::Wayland(sway.socket.clone()),
        idle_after_hide: Duration::ZERO,
        ..CanvasOptions::default()
    };
    let canvas = CanvasCapability::with_options(settings(dir.path(), true), options);
    let caps = ok(&canvas, "canvas.caps", json!({})).await;
    assert_eq!((caps["window"].clone(), caps["headless"].clone()), (json!("wayland"), json!(false)), "{caps}");
    assert_eq!(caps["present"]["position"], json!(false), "the compositor places windows: {caps}");

    let colour = random_bytes::<3>();
    let html = format!("<body style=\"margin:0;background:{}\"></body>", hex(colour));
    ok(&canvas, "canvas.present", json!({"html": html, "width": 500, "height": 300, "title": title})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let view = loop {
        let views = sway_views(sway.runtime.path());
        if let Some(view) = views.iter().find(|view| view["name"] == title.as_str()) {
            break view.clone();
        }
        assert!(Instant::now() < deadline, "no window titled {title} on the compositor: {views:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!((view["window_rect"]["width"].clone(), view["window_rect"]["height"].clone()), (json!(500), json!(300)));
    let (pid, _, _) = running(&canvas).await;
    assert!(tree(pid).iter().any(|&(process, _)| i64::from(process) == view["pid"].as_i64().unwrap()), "our browser's");
    // The page is on the compositor's screen, in the window's middle.
    let (x, y) = (view["rect"]["x"].as_i64().unwrap() + 250, view["rect"]["y"].as_i64().unwrap() + 150);
    let deadline = Instant::now() + Duration::from_secs(10);
    while wayland_pixel(&sway.socket, x, y) != colour {
        assert!(
            Instant::now() < deadline,
            "the screen at ({x}, {y}) is {:?}, not {colour:?}",
            wayland_pixel(&sway.socket, x, y)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Hidden: the window is closed.
    ok(&canvas, "canvas.hide", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while sway_views(sway.runtime.path()).iter().any(|view| view["name"] == title.as_str()) {
        assert!(Instant::now() < deadline, "the window is still on the compositor after hide");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    canvas.shutdown().await;
}

#[test]
fn the_nodes_wayland_display_makes_a_window_only_when_a_compositor_answers_on_it() {
    let runtime = tempfile::tempdir().unwrap();
    let _compositor = std::os::unix::net::UnixListener::bind(runtime.path().join("wayland-7")).unwrap();
    let socket = runtime.path().join("wayland-7").display().to_string();
    let window = |display: &str, runtime: Option<&Path>| {
        super::wayland_window(Some(display.into()), runtime.map(Path::to_path_buf))
    };
    // A name in XDG_RUNTIME_DIR, or an absolute path, as libwayland reads WAYLAND_DISPLAY.
    assert_eq!(window("wayland-7", Some(runtime.path())), Window::Wayland(socket.clone()));
    assert_eq!(window(&socket, None), Window::Wayland(socket.clone()));
    // Nobody listening, no runtime dir for a bare name, nothing set: headless.
    assert_eq!(window("wayland-8", Some(runtime.path())), Window::Headless);
    assert_eq!(window("wayland-7", None), Window::Headless);
    assert_eq!(super::wayland_window(None, Some(runtime.path().to_path_buf())), Window::Headless);
}
