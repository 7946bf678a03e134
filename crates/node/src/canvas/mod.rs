//! `canvas.*`: a page the agent shows and reads, rendered by Debian's Chromium (category `canvas`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`a2ui`] | the A2UI renderer: where its bundle is, its host page, the JSONL's limits, the scripts that drive it |
//! | [`above`] | `alwaysOnTop`: the EWMH request to the window manager for the canvas window |
//! | [`browser`] | the one Chromium process tree (under a `clawmcp_process` reaper), its private profile, the DevTools connection (chromiumoxide) |
//! | [`devtools_pipe`] | Chromium's DevTools pipe (no port), relayed to chromiumoxide's WebSocket on a one-connection loopback listener with a secret path |
//! | this file | the commands: upstream's arguments, clamps, results and errors; the browser's lifetime |
//!
//! The canvas is Chromium of the requested size: an app-mode window at `x`/`y` titled as asked when
//! an X server answers on `DISPLAY` ([`Screen`]), else one the compositor places when a Wayland
//! compositor answers on `WAYLAND_DISPLAY`, headless otherwise (`x`/`y` then have no effect); `canvas.snapshot` shows the page either way and `canvas.caps` says which. The browser
//! is started by the first command that needs it, stopped when a window is hidden, a while after
//! a headless canvas is hidden ([`IDLE_AFTER_HIDE`]), and when the node stops ([`CanvasCapability::shutdown`],
//! and, as a backstop, when the capability is dropped). `navigate` and `present`'s `url` take
//! http and https only; `html` is shown from a `data:` URL (an opaque origin: the page reaches
//! no file and no other site's storage). `canvas.a2ui.*` render A2UI v0.8 with OpenClaw's own
//! renderer when it is installed ([`a2ui`]).
//!
//! Off until the owner turns on `NodeCanvasEnabled`, read live; without `chromium` on the node's
//! PATH the commands are not listed and a call says `apt install chromium`.

mod a2ui;
mod above;
mod browser;
mod devtools_pipe;

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Weak};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::NodeEvent;
use clawmcp_mcp::tool::codes::TIMEOUT;
use clawmcp_mcp::{CallContext, Content, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use crate::availability::{Gate, MissingBackend, Switch};
use crate::capability::args::whole_number;
use crate::capability::{Capability, Command, CommandSpec, InvokeResult};
use crate::events::NodeEvents;
use crate::imaging;
use crate::settings::LiveSettings;

use browser::{ActionCall, Browser, Evaluated};
pub use browser::{Geometry, LOAD_DEADLINE, START_DEADLINE, Window};
use chromiumoxide::cdp::js_protocol::runtime::ExecutionContextId;

/// How long the browser is kept after `canvas.hide`, so a `present` soon after is instant.
pub const IDLE_AFTER_HIDE: Duration = Duration::from_secs(60);
/// Upstream's clamps and defaults.
pub const MIN_SIDE: i64 = 100;
pub const MAX_SIDE: i64 = 7680;
pub const MAX_POSITION: i64 = 16384;
const DEFAULT_WIDTH: i64 = 800;
const DEFAULT_HEIGHT: i64 = 600;
const DEFAULT_TITLE: &str = "Canvas";
const SNAPSHOT_MIN_WIDTH: i64 = 32;
const SNAPSHOT_DEFAULT_WIDTH: i64 = 1200;
const DEFAULT_QUALITY: u8 = 80;
/// `canvas.eval`'s bound: default, and the range `timeoutMs` is clamped to.
pub const EVAL_DEFAULT_MS: i64 = 10_000;
pub const EVAL_MIN_MS: i64 = 100;
pub const EVAL_MAX_MS: i64 = 60_000;
/// The most `html` `canvas.present` shows (it travels as a `data:` URL, which Chromium caps at 2 MB).
pub const MAX_HTML_BYTES: usize = 1024 * 1024;
/// The most JSON `canvas.eval` answers.
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;
/// The code of a call that needs a presented canvas when none is.
pub const NOT_OPEN: &str = "CANVAS_NOT_OPEN";
/// The code of a `canvas.a2ui.dump` the renderer could not answer.
pub const DUMP_FAILED: &str = "CANVAS_DUMP_FAILED";
/// How long the renderer may take to apply, clear or dump surfaces.
const A2UI_BOUND: Duration = Duration::from_secs(15);

/// How the canvas runs (tests change the defaults).
#[derive(Debug, Clone)]
pub struct CanvasOptions {
    /// How long the browser outlives a `canvas.hide` ([`IDLE_AFTER_HIDE`]); zero stops it at once.
    pub idle_after_hide: Duration,
    /// The search path for `chromium`; `None` is the node's `PATH`.
    pub path: Option<OsString>,
    /// Where the canvas shows.
    pub screen: Screen,
    /// Where the A2UI renderer may be, first found wins ([`a2ui::bundle_candidates`]).
    pub a2ui: Vec<PathBuf>,
    /// Where a user's A2UI actions go (the gateway link, when the node has joined one).
    pub events: Arc<NodeEvents>,
}

/// Where the canvas shows, decided when its browser starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// A window on the node's X display (`DISPLAY`) when it answers, else on its Wayland
    /// compositor (`WAYLAND_DISPLAY`) when that answers, else headless.
    Env,
    /// Headless whatever the environment.
    Headless,
    /// A window on this X display (`:99`).
    X11(String),
    /// A window on the Wayland compositor at this socket (an absolute path).
    Wayland(String),
}

impl Screen {
    /// The window the next browser opens: `DISPLAY` only when an X server answers on it, since a
    /// stale `DISPLAY` (an ssh session's, a stopped Xvfb's) would make Chromium exit at start;
    /// X first (Xwayland included, where windows can be placed), then Wayland, then headless.
    async fn resolve(&self) -> Window {
        match self {
            Screen::Headless => Window::Headless,
            Screen::X11(display) => Window::X11(display.clone()),
            Screen::Wayland(socket) => Window::Wayland(socket.clone()),
            Screen::Env => match window_on(std::env::var("DISPLAY").ok()).await {
                Window::Headless => wayland_window(
                    std::env::var_os("WAYLAND_DISPLAY").map(PathBuf::from),
                    std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
                ),
                window => window,
            },
        }
    }
}

/// A window on `display` (a `DISPLAY` value) when an X server answers there, else headless.
async fn window_on(display: Option<String>) -> Window {
    let Some(name) = display.filter(|name| !name.is_empty()) else { return Window::Headless };
    let probe = name.clone();
    let answers = tokio::task::spawn_blocking(move || x11rb::connect(Some(&probe)).is_ok());
    match answers.await {
        Ok(true) => Window::X11(name),
        _ => {
            tracing::info!(display = %name, "no X server answers on DISPLAY; the canvas is headless");
            Window::Headless
        }
    }
}

/// A window on the compositor `WAYLAND_DISPLAY` names (a socket name in `XDG_RUNTIME_DIR`, or an
/// absolute path, as libwayland reads it) when it accepts a connection, else headless.
fn wayland_window(display: Option<PathBuf>, runtime: Option<PathBuf>) -> Window {
    let Some(display) = display.filter(|name| !name.as_os_str().is_empty()) else { return Window::Headless };
    let socket = match (display.is_absolute(), runtime) {
        (true, _) => display,
        (false, Some(runtime)) => runtime.join(display),
        (false, None) => return Window::Headless,
    };
    match std::os::unix::net::UnixStream::connect(&socket) {
        Ok(_) => Window::Wayland(socket.to_string_lossy().into_owned()),
        Err(error) => {
            tracing::info!(socket = %socket.display(), %error, "no Wayland compositor answers; the canvas is headless");
            Window::Headless
        }
    }
}

impl Default for CanvasOptions {
    fn default() -> Self {
        CanvasOptions {
            idle_after_hide: IDLE_AFTER_HIDE,
            path: None,
            screen: Screen::Env,
            a2ui: a2ui::bundle_candidates(),
            events: NodeEvents::new(),
        }
    }
}

/// The `canvas` capability.
#[derive(Clone)]
pub struct CanvasCapability {
    commands: Vec<Command>,
    canvas: Arc<Canvas>,
}

/// The browser and what the canvas shows.
struct Canvas {
    options: CanvasOptions,
    settings: Arc<LiveSettings>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    browser: Option<Browser>,
    /// Presented and not hidden since.
    visible: bool,
    /// Counts presents and hides, so a stop scheduled by a hide knows whether it still applies.
    generation: u64,
    /// The page shown is the A2UI renderer's.
    a2ui: bool,
    /// The document that may hand the node A2UI actions: the node's own renderer page, or a page
    /// of a trusted origin ([`Canvas::bridge_if_trusted`]); no other.
    bridge: Option<Bridged>,
}

/// A document given the action bridge: its execution context and the token its bridge sends
/// (see [`a2ui::bridge_script`]: context ids alone can repeat across renderer processes).
struct Bridged {
    context: ExecutionContextId,
    token: String,
}

impl CanvasCapability {
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        CanvasCapability::with_options(settings, CanvasOptions::default())
    }

    pub fn with_options(settings: Arc<LiveSettings>, options: CanvasOptions) -> Self {
        let state = tokio::sync::Mutex::new(State::default());
        let canvas = Arc::new(Canvas { options, settings: settings.clone(), state });
        let gate = {
            let path = canvas.options.path.clone();
            Gate::new(settings.clone(), Some(&Switch::CANVAS), move || program(path.as_deref()).map(drop))
        };
        let a2ui_gate = {
            let (path, candidates) = (canvas.options.path.clone(), canvas.options.a2ui.clone());
            Gate::new(settings, Some(&Switch::CANVAS), move || {
                program(path.as_deref())?;
                a2ui::find_bundle(&candidates).map(drop)
            })
        };
        let commands = vec![
            command(&gate, &canvas, present_spec(), |canvas, args| async move { canvas.present(&args).await }),
            command(&gate, &canvas, hide_spec(), |canvas, _| async move { canvas.hide().await }),
            command(&gate, &canvas, navigate_spec(), |canvas, args| async move { canvas.navigate(&args).await }),
            command(&gate, &canvas, eval_spec(), |canvas, args| async move { canvas.eval(&args).await }),
            output_command(&gate, &canvas, snapshot_spec(), |canvas, args| async move { canvas.snapshot(&args).await }),
            command(&gate, &canvas, caps_spec(), |canvas, _| async move { canvas.caps().await }),
            command(&a2ui_gate, &canvas, a2ui_push_spec("canvas.a2ui.push"), |canvas, args| async move {
                canvas.a2ui_push(&args).await
            }),
            command(&a2ui_gate, &canvas, a2ui_push_spec("canvas.a2ui.pushJSONL"), |canvas, args| async move {
                canvas.a2ui_push(&args).await
            }),
            command(&a2ui_gate, &canvas, a2ui_reset_spec(), |canvas, _| async move { canvas.a2ui_reset().await }),
            command(&a2ui_gate, &canvas, a2ui_dump_spec(), |canvas, _| async move { canvas.a2ui_dump().await }),
        ];
        CanvasCapability { commands, canvas }
    }

    /// Stops the browser, if one runs, and waits until its whole tree is gone and its profile
    /// removed: the node calls this when it stops.
    pub async fn shutdown(&self) {
        let browser = self.canvas.state.lock().await.browser.take();
        if let Some(browser) = browser {
            browser.stop().await;
        }
    }

    /// The main Chromium process and its profile directory, while a browser runs.
    pub async fn browser(&self) -> Option<(u32, Option<PathBuf>)> {
        let state = self.canvas.state.lock().await;
        state.browser.as_ref().map(|browser| (browser.pid(), browser.profile()))
    }
}

impl Capability for CanvasCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

/// `chromium` on `path` (the node's `PATH` when `None`), or which package provides it.
fn program(path: Option<&std::ffi::OsStr>) -> Result<PathBuf, MissingBackend> {
    match path {
        Some(path) => MissingBackend::program_in("chromium", "chromium", Some(path)),
        None => MissingBackend::program("chromium", "chromium"),
    }
}

fn command<F, Fut>(gate: &Gate, canvas: &Arc<Canvas>, spec: CommandSpec, run: F) -> Command
where
    F: Fn(Arc<Canvas>, Map<String, Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = InvokeResult> + Send + 'static,
{
    output_command(gate, canvas, spec, move |canvas, args| {
        let work = run(canvas, args);
        async move { work.await.map(ToolOutput::from) }
    })
}

/// A command behind the gate whose work stops waiting when the call is cancelled.
fn output_command<F, Fut>(gate: &Gate, canvas: &Arc<Canvas>, spec: CommandSpec, run: F) -> Command
where
    F: Fn(Arc<Canvas>, Map<String, Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutcome> + Send + 'static,
{
    let name = spec.name;
    let (admit, canvas, run) = (gate.clone(), canvas.clone(), Arc::new(run));
    gate.apply(spec.with_output_handler(move |request, ctx: CallContext| {
        let (admit, canvas, run) = (admit.clone(), canvas.clone(), run.clone());
        async move {
            admit.admit(name)?;
            tokio::select! {
                () = ctx.cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.into()),
                done = run(canvas, request.args) => done,
            }
        }
    }))
}

impl Canvas {
    /// The running browser, started if there is none or it died.
    async fn browser<'a>(
        self: &Arc<Self>,
        state: &'a mut State,
        geometry: &Geometry,
    ) -> Result<&'a Browser, ToolFailure> {
        if let Some(browser) = state.browser.take_if(|browser| !browser.alive()) {
            tracing::warn!(pid = browser.pid(), "the canvas browser died; starting a new one");
            browser.stop().await;
        }
        if state.browser.is_none() {
            let program = program(self.options.path.as_deref()).map_err(|missing| {
                ToolFailure::new(format!("CANVAS_NOT_AVAILABLE: {missing}")).with_code("CANVAS_NOT_AVAILABLE")
            })?;
            let started = Instant::now();
            let window = self.options.screen.resolve().await;
            let (browser, calls) = Browser::start(&program, geometry, &window).await.map_err(|error| {
                ToolFailure::new(format!("CANVAS_NOT_AVAILABLE: the canvas browser did not start: {error}"))
                    .with_code("CANVAS_NOT_AVAILABLE")
            })?;
            tracing::info!(ms = started.elapsed().as_millis() as u64, ?window, "canvas browser ready");
            // Execution context ids are the browser's own: none of the last one's is trusted here.
            state.bridge = None;
            // Ends when the browser stops (its listener, the queue's sender, is aborted).
            tokio::spawn(forward_actions(Arc::downgrade(self), calls));
            state.browser = Some(browser);
        }
        Ok(state.browser.as_ref().expect("set above"))
    }

    async fn present(self: &Arc<Self>, args: &Map<String, Value>) -> InvokeResult {
        let present = PresentArgs::parse(args)?;
        let mut state = self.state.lock().await;
        let browser = self.browser(&mut state, &present.geometry).await?;
        let failed = |error: String| ToolFailure::new(format!("Present failed: {error}"));
        browser
            .set_geometry(&present.geometry)
            .await
            .map_err(|error| failed(format!("cannot size the canvas: {error}")))?;
        browser.load(&present.url).await.map_err(|error| failed(format!("the page did not load: {error}")))?;
        // The window's title is the page's: a page without one is titled as asked.
        let title = format!("if (!document.title) document.title = {};", Value::from(present.title.as_str()));
        browser.evaluate(&title, Duration::from_secs(5)).await.map_err(failed)?;
        // Above other windows where the window manager allows (else nothing to ask: caps says so).
        if let Window::X11(display) = browser.window() {
            let (display, pid, on_top) = (display.clone(), browser.pid(), present.always_on_top);
            let asked = tokio::task::spawn_blocking(move || above::keep_above(&display, pid, on_top));
            match asked.await {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => tracing::debug!("the window manager offers no always-on-top"),
                Ok(Err(error)) => return Err(failed(format!("cannot set alwaysOnTop: {error}"))),
                Err(error) => return Err(failed(error.to_string())),
            }
        }
        let bridged = self.bridge_if_trusted(browser).await;
        state.visible = true;
        state.a2ui = false;
        state.bridge = bridged;
        state.generation += 1;
        Ok(json!({"presented": true}))
    }

    async fn hide(self: &Arc<Self>) -> InvokeResult {
        let mut state = self.state.lock().await;
        state.visible = false;
        state.a2ui = false;
        state.bridge = None;
        state.generation += 1;
        let Some(browser) = state.browser.as_ref() else { return Ok(json!({"hidden": true})) };
        // A window is hidden by closing it: a window manager may not honour a minimise, and a
        // blank window left on the screen is not hidden.
        if browser.window() != &Window::Headless {
            if let Some(browser) = state.browser.take() {
                browser.stop().await;
            }
            return Ok(json!({"hidden": true}));
        }
        // What it showed is gone at once; the process a while later.
        if let Err(error) = browser.load("about:blank").await {
            tracing::warn!(%error, "the canvas could not be cleared; stopping its browser");
            if let Some(browser) = state.browser.take() {
                browser.stop().await;
            }
            return Ok(json!({"hidden": true}));
        }
        let idle = self.options.idle_after_hide;
        if idle.is_zero() {
            if let Some(browser) = state.browser.take() {
                browser.stop().await;
            }
        } else {
            let (canvas, generation) = (Arc::downgrade(self), state.generation);
            tokio::spawn(stop_when_idle(canvas, generation, idle));
        }
        Ok(json!({"hidden": true}))
    }

    async fn navigate(self: &Arc<Self>, args: &Map<String, Value>) -> InvokeResult {
        let url = match args.get("url").and_then(Value::as_str).map(str::trim) {
            None | Some("") => return Err(ToolFailure::invalid_request("Missing url parameter")),
            Some(url) => web_url(url)?,
        };
        let mut state = self.state.lock().await;
        let geometry = Geometry { width: DEFAULT_WIDTH as u32, height: DEFAULT_HEIGHT as u32, x: None, y: None };
        let fresh = state.browser.is_none();
        let browser = self.browser(&mut state, &geometry).await?;
        if fresh {
            browser
                .set_geometry(&geometry)
                .await
                .map_err(|error| ToolFailure::new(format!("Navigate failed: {error}")))?;
        }
        browser.load(&url).await.map_err(|error| ToolFailure::new(format!("Navigate failed: {error}")))?;
        let bridged = self.bridge_if_trusted(browser).await;
        state.visible = true;
        state.a2ui = false;
        state.bridge = bridged;
        state.generation += 1;
        Ok(json!({"navigated": true, "opener": "canvas", "url": url}))
    }

    async fn eval(self: &Arc<Self>, args: &Map<String, Value>) -> InvokeResult {
        let script = ["script", "javaScript", "javascript"]
            .iter()
            .find_map(|key| args.get(*key).and_then(Value::as_str).filter(|script| !script.trim().is_empty()));
        let Some(script) = script else {
            return Err(ToolFailure::invalid_request(
                "Missing script parameter: pass the JavaScript to run as script (its value, or its promise's, is \
                 the result)",
            ));
        };
        let bound = whole_number(args, "timeoutMs")?.unwrap_or(EVAL_DEFAULT_MS).clamp(EVAL_MIN_MS, EVAL_MAX_MS);
        let state = self.state.lock().await;
        let browser = open(&state)?;
        let evaluated = browser
            .evaluate(script, Duration::from_millis(bound as u64))
            .await
            .map_err(|error| ToolFailure::new(format!("Eval failed: {error}")))?;
        match evaluated {
            Evaluated::Value(result) => {
                let size = serde_json::to_vec(&result).map_or(0, |bytes| bytes.len());
                if size > MAX_RESULT_BYTES {
                    return Err(ToolFailure::new(format!(
                        "Eval failed: the result is {size} bytes of JSON, more than the {MAX_RESULT_BYTES} this node \
                         answers; return less (a slice, a summary)"
                    )));
                }
                Ok(json!({"result": result}))
            }
            Evaluated::Threw(exception) => {
                let exception: String = exception.chars().take(2000).collect();
                Err(ToolFailure::new(format!("Eval failed: the script threw {exception}")))
            }
            Evaluated::TimedOut => Err(ToolFailure::new(format!(
                "Eval failed: the script was still running after {bound} ms and was stopped; make it finish sooner \
                 or pass a larger timeoutMs (at most {EVAL_MAX_MS})"
            ))
            .with_code(TIMEOUT)),
        }
    }

    async fn snapshot(self: &Arc<Self>, args: &Map<String, Value>) -> ToolOutcome {
        let snapshot = SnapshotArgs::parse(args)?;
        let png = {
            let state = self.state.lock().await;
            open(&state)?.screenshot().await.map_err(|error| ToolFailure::new(format!("Snapshot failed: {error}")))?
        };
        let work = tokio::task::spawn_blocking(move || encode(&png, &snapshot));
        work.await.map_err(|error| ToolFailure::new(format!("Snapshot failed: {error}")))?
    }

    async fn caps(self: &Arc<Self>) -> InvokeResult {
        let state = self.state.lock().await;
        let running = state.browser.as_ref().filter(|browser| browser.alive());
        let version = match running {
            Some(browser) => browser.version().await.ok(),
            None => None,
        };
        // The running browser's mode, else the one the next start would choose.
        let window = match running {
            Some(browser) => browser.window().clone(),
            None => self.options.screen.resolve().await,
        };
        let windowed = window != Window::Headless;
        let a2ui_ready = a2ui::find_bundle(&self.options.a2ui).is_ok();
        let on_top = match &window {
            Window::X11(display) => {
                let display = display.clone();
                tokio::task::spawn_blocking(move || above::supported(&display)).await.unwrap_or(false)
            }
            Window::Wayland(_) | Window::Headless => false,
        };
        // A Wayland client cannot place its window (the compositor does); it can size it.
        let placed = matches!(window, Window::X11(_));
        Ok(json!({
            "renderer": "chromium",
            "eval": true,
            "snapshot": true,
            "navigate": true,
            "a2ui": {"version": "0.8", "introspect": a2ui_ready, "supported": a2ui_ready},
            "window": match window {
                Window::Headless => "headless",
                Window::X11(_) => "x11",
                Window::Wayland(_) => "wayland",
            },
            "headless": !windowed,
            "running": running.is_some(),
            "visible": running.is_some() && state.visible,
            "browserVersion": version,
            "present": {"url": true, "html": true, "maxHtmlBytes": MAX_HTML_BYTES, "position": placed,
                        "title": true, "alwaysOnTop": on_top},
            "navigateSchemes": ["http", "https"],
            "snapshotFormats": ["png", "jpeg"],
        }))
    }
}

impl Canvas {
    async fn a2ui_push(self: &Arc<Self>, args: &Map<String, Value>) -> InvokeResult {
        let text = |key: &str| args.get(key).and_then(Value::as_str).filter(|text| !text.trim().is_empty());
        let jsonl = match (text("jsonl"), text("jsonlPath")) {
            (Some(_), Some(_)) => {
                return Err(ToolFailure::invalid_request(
                    "A2UI push takes jsonl or jsonlPath, not both: the messages themselves, or a file of them",
                ));
            }
            (Some(jsonl), None) => jsonl.to_owned(),
            (None, Some(path)) => {
                let (path, temp) = (path.to_owned(), std::env::temp_dir());
                let read = tokio::task::spawn_blocking(move || a2ui::read_jsonl_path(&path, &temp));
                read.await
                    .map_err(|error| ToolFailure::new(format!("A2UI push failed: {error}")))?
                    .map_err(|error| ToolFailure::invalid_request(format!("Invalid jsonlPath: {error}")))?
            }
            (None, None) => {
                return Err(ToolFailure::invalid_request(
                    "Missing jsonl parameter: pass A2UI v0.8 messages as jsonl (one JSON object a line) or a file \
                     of them in the temp directory as jsonlPath",
                ));
            }
        };
        match args.get("props") {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(_) => return Err(ToolFailure::invalid_request("props must be an object")),
        }
        let messages = a2ui::parse_jsonl(&jsonl)
            .map_err(|error| ToolFailure::invalid_request(format!("Invalid jsonl: {error}")))?;
        let failed = |error: String| ToolFailure::new(format!("A2UI push failed: {error}"));
        let mut state = self.state.lock().await;
        if !(state.a2ui && open(&state).is_ok()) {
            let bundle = a2ui::find_bundle(&self.options.a2ui).map_err(|missing| {
                ToolFailure::new(format!("CANVAS_NOT_AVAILABLE: {missing}")).with_code("CANVAS_NOT_AVAILABLE")
            })?;
            let geometry = Geometry { width: DEFAULT_WIDTH as u32, height: DEFAULT_HEIGHT as u32, x: None, y: None };
            let shown = state.visible && state.browser.as_ref().is_some_and(Browser::alive);
            let browser = self.browser(&mut state, &geometry).await?;
            let binding = browser.action_binding().to_owned();
            let token = a2ui::new_bridge_token().map_err(failed)?;
            let page = {
                let token = token.clone();
                tokio::task::spawn_blocking(move || a2ui::host_page(&bundle, &binding, &token))
            };
            let page = page.await.map_err(|error| failed(error.to_string()))?.map_err(failed)?;
            let url = format!("data:text/html;charset=utf-8;base64,{}", STANDARD.encode(page));
            // A canvas already shown keeps its size and place; otherwise it opens at the default.
            if !shown {
                browser.set_geometry(&geometry).await.map_err(failed)?;
            }
            browser.load(&url).await.map_err(|error| failed(format!("the renderer did not load: {error}")))?;
            let context = browser.main_context().await;
            state.visible = true;
            state.a2ui = true;
            state.bridge = context.map(|context| Bridged { context, token });
            state.generation += 1;
        }
        let browser = open(&state)?;
        match browser.evaluate(&a2ui::push_script(&messages), A2UI_BOUND).await.map_err(failed)? {
            Evaluated::Value(_) => Ok(json!({"pushed": true})),
            Evaluated::Threw(error) => Err(failed(format!("the renderer refused the messages: {error}"))),
            Evaluated::TimedOut => {
                Err(failed(format!("the renderer did not answer within {} s", A2UI_BOUND.as_secs())))
            }
        }
    }

    async fn a2ui_reset(self: &Arc<Self>) -> InvokeResult {
        let state = self.state.lock().await;
        // Nothing A2UI shown: nothing to clear.
        let Some(browser) = open(&state).ok().filter(|_| state.a2ui) else { return Ok(json!({"reset": true})) };
        match browser.evaluate(&a2ui::reset_script(), A2UI_BOUND).await {
            Ok(Evaluated::Value(_)) => Ok(json!({"reset": true})),
            Ok(other) => Err(ToolFailure::new(format!("A2UI reset failed: {other:?}"))),
            Err(error) => Err(ToolFailure::new(format!("A2UI reset failed: {error}"))),
        }
    }

    async fn a2ui_dump(self: &Arc<Self>) -> InvokeResult {
        let state = self.state.lock().await;
        let browser = open(&state)?;
        if !state.a2ui {
            return Err(ToolFailure::new(format!(
                "{NOT_OPEN}: the canvas shows a page, not A2UI surfaces; push some with canvas.a2ui.push first"
            ))
            .with_code(NOT_OPEN));
        }
        let dump_failed = |why: String| {
            ToolFailure::new(format!("{DUMP_FAILED}: cannot read the surfaces from the renderer: {why}"))
                .with_code(DUMP_FAILED)
        };
        match browser.evaluate(&a2ui::dump_script(), A2UI_BOUND).await.map_err(dump_failed)? {
            Evaluated::Value(value) => Ok(value),
            Evaluated::Threw(error) => Err(dump_failed(error)),
            Evaluated::TimedOut => Err(dump_failed(format!("no answer within {} s", A2UI_BOUND.as_secs()))),
        }
    }
}

/// The session the gateway's agent gets A2UI actions in, as upstream's nodes send them.
const ACTION_SESSION: &str = "main";

/// Hands each user action of the renderer's page to the gateway's agent (`agent.request`), then
/// tells the page how that went. A call from any other document (a page the canvas navigated to
/// has the binding too) is ignored.
async fn forward_actions(canvas: Weak<Canvas>, mut calls: tokio::sync::mpsc::Receiver<ActionCall>) {
    while let Some(call) = calls.recv().await {
        let Some(canvas) = canvas.upgrade() else { return };
        canvas.forward_action(call).await;
    }
}

impl Canvas {
    /// Gives the page `browser` just loaded the A2UI action bridge when its origin is trusted:
    /// the connected gateway's (its canvas host serves A2UI pages) or one of the owner's
    /// `NodeCanvasTrustedOrigins`. The document that got it, or `None` (any other page: no bridge).
    async fn bridge_if_trusted(&self, browser: &Browser) -> Option<Bridged> {
        let mut trusted = self.settings.read(|settings| settings.node_canvas_trusted_origins.clone());
        trusted.extend(self.options.events.gateway_origin());
        // Nothing trusted (the default, MCP only): no need to ask the page where it is.
        if trusted.is_empty() {
            return None;
        }
        let origin = url::Url::parse(&browser.url().await?).ok()?.origin().ascii_serialization();
        if !trusted.contains(&origin) {
            return None;
        }
        let document = browser.main_context().await?;
        let token = match a2ui::new_bridge_token() {
            Ok(token) => token,
            Err(error) => {
                tracing::warn!(%error, %origin, "cannot give a trusted page the A2UI action bridge");
                return None;
            }
        };
        match browser.evaluate(&a2ui::bridge_script(browser.action_binding(), &token), Duration::from_secs(5)).await {
            Ok(Evaluated::Value(_)) => {}
            other => {
                tracing::warn!(?other, %origin, "cannot give a trusted page the A2UI action bridge");
                return None;
            }
        }
        // The same document still (the page did not move on meanwhile).
        (browser.main_context().await == Some(document)).then_some(Bridged { context: document, token })
    }

    async fn forward_action(&self, call: ActionCall) {
        let (event, token) = {
            let state = self.state.lock().await;
            let bridged = state.bridge.as_ref().filter(|bridged| bridged.context == call.context);
            let event = bridged.and_then(|bridged| a2ui::unwrap_bridged(&call.payload, &bridged.token));
            match (bridged, event) {
                (Some(bridged), Some(event)) => (event, bridged.token.clone()),
                _ => {
                    tracing::warn!(
                        "ignored an A2UI action from a document that may not send them (not the node's renderer nor a \
                         trusted origin, or without the bridge the node gave it)"
                    );
                    return;
                }
            }
        };
        let action = match a2ui::Action::from_event(&event) {
            Ok(action) => action,
            Err(error) => {
                tracing::warn!(%error, "ignored an A2UI action the renderer's page sent");
                return;
            }
        };
        let sent = self.send_action(&action).await;
        match &sent {
            Ok(()) => tracing::info!(action = %action.name, "A2UI action sent to the gateway's agent"),
            Err(error) => tracing::warn!(action = %action.name, %error, "A2UI action not sent"),
        }
        let state = self.state.lock().await;
        // Only to the document that sent it, if it is still shown.
        if let Ok(browser) = open(&state)
            && state.bridge.as_ref().is_some_and(|bridged| bridged.context == call.context && bridged.token == token)
            && browser.main_context().await == Some(call.context)
        {
            let _ = browser.evaluate(&a2ui::action_status_script(&action.id, &sent), Duration::from_secs(5)).await;
        }
    }

    async fn send_action(&self, action: &a2ui::Action) -> Result<(), String> {
        let events = &self.options.events;
        let instance = events.node_id().ok_or_else(|| crate::events::NOT_JOINED.to_owned())?;
        let host = sysinfo::System::host_name().unwrap_or_default();
        let payload = action.agent_request(ACTION_SESSION, &host, &instance)?;
        events.send(NodeEvent { event: "agent.request", payload }).await
    }
}

/// The browser of a presented canvas, or why there is none.
fn open(state: &State) -> Result<&Browser, ToolFailure> {
    match state.browser.as_ref() {
        Some(browser) if state.visible && browser.alive() => Ok(browser),
        _ => Err(ToolFailure::new(format!(
            "{NOT_OPEN}: no canvas is presented (never presented, hidden, or its browser stopped); call \
             canvas.present first"
        ))
        .with_code(NOT_OPEN)),
    }
}

/// Stops the browser `idle` after a hide, unless the canvas was presented (or hidden) since.
async fn stop_when_idle(canvas: Weak<Canvas>, generation: u64, idle: Duration) {
    tokio::time::sleep(idle).await;
    let Some(canvas) = canvas.upgrade() else { return };
    let browser = {
        let mut state = canvas.state.lock().await;
        match state.generation == generation && !state.visible {
            true => state.browser.take(),
            false => None,
        }
    };
    if let Some(browser) = browser {
        browser.stop().await;
    }
}

/// `url` when it is an http or https URL, canonicalised; else upstream's refusal and why.
fn web_url(url: &str) -> Result<String, ToolFailure> {
    let parsed = url::Url::parse(url).map_err(|error| {
        ToolFailure::invalid_request(format!(
            "Invalid url: {error}; give an absolute http or https URL (https://example.com/page)"
        ))
    })?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some_and(|host| !host.is_empty()) => Ok(parsed.to_string()),
        "http" | "https" => Err(ToolFailure::invalid_request("Invalid url: it names no host")),
        scheme => Err(ToolFailure::invalid_request(format!(
            "Invalid url: the canvas opens only http and https URLs, not {scheme}: (show your own content with \
             canvas.present's html instead)"
        ))),
    }
}

/// `canvas.present`'s arguments, with upstream's defaults and clamps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PresentArgs {
    /// What to load: the http(s) URL, or the html as a `data:` URL, or a blank page.
    url: String,
    geometry: Geometry,
    title: String,
    always_on_top: bool,
}

impl PresentArgs {
    fn parse(args: &Map<String, Value>) -> Result<PresentArgs, ToolFailure> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).filter(|text| !text.trim().is_empty());
        let url = match (text("url"), args.get("html").and_then(Value::as_str)) {
            (Some(_), Some(_)) => {
                return Err(ToolFailure::invalid_request(
                    "present takes url or html, not both: a URL to load, or the page's HTML itself",
                ));
            }
            (Some(url), None) => web_url(url.trim())?,
            (None, Some(html)) if html.len() > MAX_HTML_BYTES => {
                return Err(ToolFailure::invalid_request(format!(
                    "html is {} bytes, more than the {MAX_HTML_BYTES} the canvas shows; serve a larger page over \
                     http and pass its url",
                    html.len()
                )));
            }
            (None, Some(html)) => format!("data:text/html;charset=utf-8;base64,{}", STANDARD.encode(html)),
            (None, None) => "about:blank".to_owned(),
        };
        let side = |key: &str, default: i64| -> Result<u32, ToolFailure> {
            Ok(whole_number(args, key)?.unwrap_or(default).clamp(MIN_SIDE, MAX_SIDE) as u32)
        };
        let place = |key: &str| -> Result<Option<i32>, ToolFailure> {
            Ok(match whole_number(args, key)?.unwrap_or(-1) {
                -1 => None,
                at => Some(at.clamp(-MAX_POSITION, MAX_POSITION) as i32),
            })
        };
        let geometry = Geometry {
            width: side("width", DEFAULT_WIDTH)?,
            height: side("height", DEFAULT_HEIGHT)?,
            x: place("x")?,
            y: place("y")?,
        };
        let title = text("title").map_or(DEFAULT_TITLE, str::trim).to_owned();
        let always_on_top = match args.get("alwaysOnTop") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(on)) => *on,
            Some(_) => return Err(ToolFailure::invalid_request("alwaysOnTop must be true or false")),
        };
        Ok(PresentArgs { url, geometry, title, always_on_top })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Png,
    Jpeg,
}

/// `canvas.snapshot`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SnapshotArgs {
    format: Format,
    max_width: u32,
    quality: u8,
}

impl SnapshotArgs {
    fn parse(args: &Map<String, Value>) -> Result<SnapshotArgs, ToolFailure> {
        let format = match args.get("format").and_then(Value::as_str).map(|f| f.trim().to_ascii_lowercase()) {
            None => Format::Png,
            Some(name) if name.is_empty() || name == "png" => Format::Png,
            Some(name) if name == "jpeg" || name == "jpg" => Format::Jpeg,
            Some(_) => {
                return Err(ToolFailure::invalid_request(
                    "Unsupported canvas snapshot format. Supported formats: png, jpeg.",
                ));
            }
        };
        let max_width = whole_number(args, "maxWidth")?
            .unwrap_or(SNAPSHOT_DEFAULT_WIDTH)
            .clamp(SNAPSHOT_MIN_WIDTH, i64::from(imaging::MAX_WIDTH)) as u32;
        let quality = crate::capability::args::quality(args, DEFAULT_QUALITY)?;
        Ok(SnapshotArgs { format, max_width, quality })
    }
}

/// Chromium's PNG, scaled to `maxWidth` and encoded as asked, by the shared image code; or
/// Chromium's PNG itself when that is already what was asked (PNG, no wider than `maxWidth`):
/// decoding and encoding it again cost most of a warm snapshot, and Chromium compresses better.
fn encode(png: &[u8], args: &SnapshotArgs) -> ToolOutcome {
    let failed = |error: String| ToolFailure::new(format!("Snapshot failed: {error}"));
    let (captured_width, captured_height) = imaging::png_size(png).map_err(failed)?;
    let (width, height, bytes) = if args.format == Format::Png && captured_width <= args.max_width {
        (captured_width, captured_height, png.to_vec())
    } else {
        let pixels = imaging::decode_png(png, u64::from(imaging::MAX_WIDTH) * u64::from(imaging::MAX_WIDTH))
            .map(imaging::opaque)
            .map_err(failed)?;
        imaging::fit_encoded(&pixels, Some(args.max_width), |pixels| match args.format {
            Format::Png => imaging::encode_png(pixels),
            Format::Jpeg => imaging::encode_jpeg(pixels, args.quality),
        })
        .map_err(failed)?
    };
    let (name, mime_type) = match args.format {
        Format::Png => ("png", "image/png"),
        Format::Jpeg => ("jpeg", "image/jpeg"),
    };
    let base64 = STANDARD.encode(&bytes);
    let scale = f64::from(width) / f64::from(captured_width);
    let meta = json!({
        "format": name,
        "width": width,
        "height": height,
        "bytes": bytes.len(),
        "capturedWidth": captured_width,
        "capturedHeight": captured_height,
        "scale": (scale * 1e6).round() / 1e6,
    });
    Ok(ToolOutput::from(meta)
        .with_block(Content::Image { data: base64.clone(), mime_type: mime_type.into() })
        .with_gateway_payload(json!({"format": name, "base64": base64})))
}

fn object_schema(properties: Value) -> clawmcp_mcp::Schema {
    json!({"type": "object", "properties": properties, "additionalProperties": false}).into()
}

/// An answer's schema: exactly these keys, all present.
fn answer_schema(properties: Value) -> clawmcp_mcp::Schema {
    let required: Vec<String> = properties.as_object().map(|keys| keys.keys().cloned().collect()).unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false}).into()
}

fn present_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "canvas.present",
        title: Some("Show the canvas"),
        description: Some(
            "Show a page in the canvas (Chromium on this machine: an app window on the X display when there \
             is one, else headless; read it with canvas.snapshot and canvas.eval). url (http or https) or html \
             (the page itself, at most 1 MiB); width and height 100..7680 (default 800x600); x and y (the \
             window's position, -1 centred; no effect while the canvas is headless); title (default Canvas) for a page without its own; alwaysOnTop keeps the window above others where the window manager allows (canvas.caps present.alwaysOnTop). Returns \
             {presented: true} once the page has loaded.",
        ),
        input_schema: Some(object_schema(json!({
            "url": {"type": "string", "description": "An http or https URL to load."},
            "html": {"type": "string", "description": "The HTML of the page to show (instead of url)."},
            "width": {"type": "integer", "minimum": MIN_SIDE, "maximum": MAX_SIDE, "default": DEFAULT_WIDTH},
            "height": {"type": "integer", "minimum": MIN_SIDE, "maximum": MAX_SIDE, "default": DEFAULT_HEIGHT},
            "x": {"type": "integer", "default": -1},
            "y": {"type": "integer", "default": -1},
            "title": {"type": "string", "default": DEFAULT_TITLE},
            "alwaysOnTop": {"type": "boolean", "default": false}
        }))),
        output_schema: Some(answer_schema(json!({"presented": {"type": "boolean"}}))),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: true,
        },
    });
    SPEC.clone()
}

fn hide_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "canvas.hide",
        title: Some("Hide the canvas"),
        description: Some(
            "Hide the canvas: a window is closed at once; a headless canvas is cleared at once and its \
             browser stopped a minute later unless it is presented again. Takes no arguments; returns {hidden: true}, also when nothing was shown.",
        ),
        input_schema: Some(object_schema(json!({}))),
        output_schema: Some(answer_schema(json!({"hidden": {"type": "boolean"}}))),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        },
    });
    SPEC.clone()
}

fn navigate_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "canvas.navigate",
        title: Some("Open a URL in the canvas"),
        description: Some(
            "Load url (http or https only; anything else is refused) in the canvas, presenting it (800x600) if it \
             is not shown. Returns {navigated, opener, url} with the canonical URL once the page has loaded; a \
             page that cannot be reached is an error saying why (net::ERR_...).",
        ),
        input_schema: Some(
            json!({"type": "object", "properties": {"url": {"type": "string", "description": "An http or https URL."}},
                   "required": ["url"], "additionalProperties": false})
            .into(),
        ),
        output_schema: Some(answer_schema(json!({
            "navigated": {"type": "boolean"}, "opener": {"type": "string"}, "url": {"type": "string"}
        }))),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: true,
        },
    });
    SPEC.clone()
}

fn eval_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "canvas.eval",
        title: Some("Run JavaScript in the canvas"),
        description: Some(
            "Run script (alias javaScript, javascript) in the presented canvas page and return {result}: its \
             value as JSON (a promise's once it settles; undefined is null; NaN, Infinity and BigInt as strings). \
             A script that throws is an error with the exception; one still running after timeoutMs (default \
             10000, 100..60000) is stopped and answered with a TIMEOUT error.",
        ),
        input_schema: Some(object_schema(json!({
            "script": {"type": "string", "description": "JavaScript, evaluated as an expression in the page."},
            "javaScript": {"type": "string", "description": "Alias of script."},
            "javascript": {"type": "string", "description": "Alias of script."},
            "timeoutMs": {"type": "integer", "minimum": EVAL_MIN_MS, "maximum": EVAL_MAX_MS, "default": EVAL_DEFAULT_MS}
        }))),
        output_schema: Some(answer_schema(json!({"result": {}}))),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        },
    });
    SPEC.clone()
}

fn snapshot_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "canvas.snapshot",
        title: Some("Canvas screenshot"),
        description: Some(
            "The presented canvas page as an image: format png (default) or jpeg, maxWidth 32..7680 (default \
             1200; never scaled up), quality 1..100 for jpeg (default 80). Returns the image and {format, width, \
             height, bytes, capturedWidth, capturedHeight, scale}.",
        ),
        input_schema: Some(object_schema(json!({
            "format": {"type": "string", "enum": ["png", "jpeg", "jpg"], "default": "png"},
            "maxWidth": {"type": "integer", "minimum": SNAPSHOT_MIN_WIDTH, "maximum": imaging::MAX_WIDTH, "default": SNAPSHOT_DEFAULT_WIDTH},
            "quality": {"type": "number", "minimum": 0, "maximum": 100, "default": DEFAULT_QUALITY, "description": "JPEG quality 1..100, or a fraction 0..1 (0.72 is 72)."}
        }))),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

fn caps_spec() -> CommandSpec {
    static SPEC: LazyLock<CommandSpec> = LazyLock::new(|| CommandSpec {
        name: "canvas.caps",
        title: Some("Canvas capabilities"),
        description: Some(
            "What this node's canvas renderer supports: {renderer: chromium, eval, snapshot, navigate, a2ui \
             {version, supported: whether the A2UI renderer is installed}, window (x11 or headless), headless, running, visible, browserVersion, present, \
             navigateSchemes, snapshotFormats}. Takes no arguments and starts nothing.",
        ),
        input_schema: Some(object_schema(json!({}))),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    });
    SPEC.clone()
}

fn a2ui_push_spec(name: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        title: Some("Push A2UI messages to the canvas"),
        description: Some(
            "Render A2UI v0.8 messages (surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface) in the \
             canvas with OpenClaw's A2UI renderer, showing it (800x600) if the canvas shows something else. jsonl: \
             one JSON message a line (at most 4 MiB and 4096 lines), or jsonlPath: a file of them inside the temp \
             directory; props is accepted and unused. Returns {pushed: true} once the renderer has applied them; \
             read the result with canvas.a2ui.dump or canvas.snapshot.",
        ),
        input_schema: Some(object_schema(json!({
            "jsonl": {"type": "string", "description": "A2UI v0.8 messages, one JSON object a line."},
            "jsonlPath": {"type": "string", "description": "A file of them, inside the temp directory."},
            "props": {"type": "object"}
        }))),
        output_schema: Some(answer_schema(json!({"pushed": {"type": "boolean"}}))),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: false,
            open_world_hint: false,
        },
    }
}

fn a2ui_reset_spec() -> CommandSpec {
    CommandSpec {
        name: "canvas.a2ui.reset",
        title: Some("Clear the A2UI surfaces"),
        description: Some("Remove every A2UI surface from the canvas. Takes no arguments; returns {reset: true}."),
        input_schema: Some(object_schema(json!({}))),
        output_schema: Some(answer_schema(json!({"reset": {"type": "boolean"}}))),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: true,
            open_world_hint: false,
        },
    }
}

fn a2ui_dump_spec() -> CommandSpec {
    CommandSpec {
        name: "canvas.a2ui.dump",
        title: Some("Read the A2UI surfaces"),
        description: Some(
            "The canvas's A2UI surfaces as the renderer holds them: {surfaces: [{surfaceId, root, components, \
             dataModel, styles}]}. CANVAS_NOT_OPEN when the canvas shows no A2UI.",
        ),
        input_schema: Some(object_schema(json!({}))),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
}

#[cfg(test)]
mod tests;
