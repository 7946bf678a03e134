//! The canvas's one Chromium: started under a `clawmcp_process` reaper (so its whole process tree
//! ends with it), driven over the DevTools protocol by chromiumoxide through a pipe only the node
//! holds ([`devtools_pipe`]), its profile in a private 0700 temp directory removed when it stops
//! (and, when a killed node could not, by the next browser start: [`sweep_stale_profiles`]).
//!
//! Headless, or an app-mode window (no tab strip, no address bar) on an X display: [`Window`].
//!
//! Chromium is started by us, not by chromiumoxide's `Browser::launch` (a plain tokio child,
//! outside any reaper, and a DevTools port): `--remote-debugging-pipe` with the pipes as its
//! descriptors 3 and 4, so it opens no port at all, and no other process of this machine (another
//! local user's included) nor a page in the canvas can drive it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chromiumoxide::cdp::browser_protocol::browser::{Bounds, GetWindowForTargetParams, SetWindowBoundsParams};
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::page::{CaptureScreenshotFormat, CaptureScreenshotParams};
use chromiumoxide::cdp::js_protocol::runtime::{
    AddBindingParams, EvaluateParams, EventBindingCalled, ExecutionContextId, TerminateExecutionParams, TimeDelta,
};
use chromiumoxide::handler::HandlerConfig;
use clawmcp_process::{Job, JobOptions, Launch, PassedFd};
use futures_util::StreamExt;
use serde_json::Value;
use std::os::fd::AsFd;

use super::devtools_pipe::{self, Bridge};

/// How long Chromium may take to start and answer its first DevTools command (0.3 s here; a
/// loaded CI machine is much slower).
pub const START_DEADLINE: Duration = Duration::from_secs(20);
/// How long one page load may take before `present`/`navigate` fail.
pub const LOAD_DEADLINE: Duration = Duration::from_secs(30);
/// How long one DevTools command may take (a screenshot, the window's bounds).
const COMMAND_DEADLINE: Duration = Duration::from_secs(15);
/// What is kept of Chromium's own output, for the error when it fails to start.
const OUTPUT_LIMIT: usize = 16 * 1024;
/// The longest A2UI action a page may hand the node (the gateway takes a message of at most 20,000
/// characters); a longer call is dropped.
pub const MAX_ACTION_BYTES: usize = 64 * 1024;
/// Action calls waiting for the node; a page that calls faster loses calls, never memory.
const ACTIONS_QUEUED: usize = 16;

/// A call of the page to the A2UI action binding: what it passed, and the execution context (the
/// document) it came from, which the node checks against the renderer's own before trusting it.
#[derive(Debug)]
pub struct ActionCall {
    pub payload: String,
    pub context: ExecutionContextId,
}

/// Where and how large the canvas is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub width: u32,
    pub height: u32,
    /// A window's left edge (`None`: centred); a headless canvas has no place.
    pub x: Option<i32>,
    /// Its top edge.
    pub y: Option<i32>,
}

/// Where the canvas is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    /// No display: Chromium `--headless`, seen only through snapshots.
    Headless,
    /// An app-mode window (no tab strip, no address bar) on this X display (`:0`).
    X11(String),
    /// An app-mode window on the Wayland compositor at this socket (an absolute path): sized as
    /// asked, placed by the compositor (a Wayland client cannot place itself).
    Wayland(String),
}

/// A running canvas browser: its process tree, the DevTools connection and the one page.
pub struct Browser {
    window: Window,
    job: Option<Job>,
    pid: u32,
    profile: Option<tempfile::TempDir>,
    /// The relay between chromiumoxide's WebSocket and the browser's DevTools pipe.
    bridge: Bridge,
    cdp: chromiumoxide::Browser,
    handler: tokio::task::JoinHandle<()>,
    page: chromiumoxide::Page,
    /// The A2UI action binding's name (random per browser); its calls go to whoever started it.
    action_binding: String,
    action_listener: tokio::task::JoinHandle<()>,
}

/// How an evaluation ended.
#[derive(Debug)]
pub enum Evaluated {
    Value(Value),
    /// The script threw (or its promise rejected): what the exception says.
    Threw(String),
    /// It ran past the bound and was stopped.
    TimedOut,
}

impl Browser {
    /// Starts `program` at `geometry`'s size, headless or as a window on `window`'s display. With
    /// it, the calls its pages make to [`Browser::action_binding`] (the queue ends with it).
    pub async fn start(
        program: &Path,
        geometry: &Geometry,
        window: &Window,
    ) -> Result<(Browser, tokio::sync::mpsc::Receiver<ActionCall>), String> {
        use std::os::unix::fs::PermissionsExt;
        let temp = std::env::temp_dir();
        let me = nix::unistd::geteuid().as_raw();
        tokio::task::spawn_blocking(move || sweep_stale_profiles(&temp, STALE_UNLOCKED_PROFILE, me)).await.ok();
        let profile = tempfile::Builder::new()
            .prefix(PROFILE_PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|error| format!("cannot create the browser's private profile directory: {error}"))?;
        let argv = arguments(program, profile.path(), geometry, window);
        let options = JobOptions { timeout: None, output_limit: OUTPUT_LIMIT, pipe_stdin: false };
        // The display is the one chosen, whatever the node's own environment says.
        let env = match window {
            Window::Headless => vec![],
            Window::X11(display) => vec![("DISPLAY".to_owned(), display.clone())],
            Window::Wayland(socket) => vec![("WAYLAND_DISPLAY".to_owned(), socket.clone())],
        };
        let cannot_pipe = |error: std::io::Error| format!("cannot make the browser's DevTools pipe: {error}");
        let (browser_ends, node_ends) = devtools_pipe::pipes().map_err(cannot_pipe)?;
        // Chromium reads the protocol from its descriptor 3 and writes to its descriptor 4.
        let passed = [
            PassedFd { fd: browser_ends.reads.as_fd(), number: 3 },
            PassedFd { fd: browser_ends.writes.as_fd(), number: 4 },
        ];
        let launch = Launch { argv: &argv, cwd: None, env_overrides: &env, passed_fds: &passed };
        let job = Job::start(launch, options).map_err(|error| format!("cannot start chromium: {error}"))?;
        // Only the browser holds these now: its end of the pipe closes when it exits.
        drop(browser_ends);
        let pid = job.pid();
        tracing::info!(pid, "canvas browser started");
        let bridge = match Bridge::open(node_ends).await {
            Ok(bridge) => bridge,
            Err(error) => {
                job.kill().await;
                return Err(format!("cannot open the DevTools bridge: {error}"));
            }
        };
        let config = HandlerConfig {
            // Certificate errors are errors: a canvas is not a place to click through them.
            ignore_https_errors: false,
            viewport: None,
            // A page load is one request (Page.navigate until loaded): bounded by the load's deadline.
            request_timeout: LOAD_DEADLINE,
            ..HandlerConfig::default()
        };
        let connected = tokio::time::timeout(
            devtools_pipe::CONNECT_DEADLINE,
            chromiumoxide::Browser::connect_with_config(bridge.url(), config),
        );
        let (cdp, mut handler) = match connected.await {
            Ok(Ok(connected)) => connected,
            failed => {
                job.kill().await;
                let why = match failed {
                    Ok(Err(error)) => error.to_string(),
                    _ => "no answer in time".to_owned(),
                };
                return Err(format!("cannot connect to chromium's DevTools bridge: {why}"));
            }
        };
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(error) = event {
                    tracing::debug!(%error, "canvas DevTools connection ended");
                    break;
                }
            }
        });
        let ready = async {
            let started = std::time::Instant::now();
            let ms = |since: std::time::Instant| since.elapsed().as_millis() as u64;
            wait_until_ready(&cdp, &job).await?;
            tracing::debug!(ms = ms(started), "the canvas browser answers on its DevTools pipe");
            let page = first_page(&cdp, window).await?;
            tracing::debug!(ms = ms(started), "the canvas page is open");
            let actions = bind_actions(&page).await?;
            tracing::debug!(ms = ms(started), "the A2UI action binding is set");
            Ok::<_, String>((page, actions))
        };
        let (page, (action_binding, action_calls, action_listener)) = match ready.await {
            Ok(ready) => ready,
            Err(error) => {
                handler.abort();
                job.kill().await;
                return Err(error);
            }
        };
        let browser = Browser {
            window: window.clone(),
            job: Some(job),
            pid,
            profile: Some(profile),
            bridge,
            cdp,
            handler,
            page,
            action_binding,
            action_listener,
        };
        Ok((browser, action_calls))
    }

    /// The name of the function through which the A2UI renderer's page hands the node a user's
    /// action (a CDP binding: every document of the page has it, so the node trusts a call only
    /// from the renderer's own document, [`Browser::main_context`] when it was loaded).
    pub fn action_binding(&self) -> &str {
        &self.action_binding
    }

    /// The URL of the page's current document.
    pub async fn url(&self) -> Option<String> {
        tokio::time::timeout(COMMAND_DEADLINE, self.page.url()).await.ok()?.ok()?
    }

    /// The execution context of the page's current document (its main world).
    pub async fn main_context(&self) -> Option<ExecutionContextId> {
        tokio::time::timeout(COMMAND_DEADLINE, self.page.execution_context()).await.ok()?.ok()?
    }

    /// Where it shows.
    pub fn window(&self) -> &Window {
        &self.window
    }

    /// The main Chromium process (its reaper is its parent).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The private profile directory, removed when the browser stops.
    pub fn profile(&self) -> Option<PathBuf> {
        self.profile.as_ref().map(|dir| dir.path().to_owned())
    }

    /// Whether the process runs and the DevTools connection is up.
    pub fn alive(&self) -> bool {
        self.job.as_ref().is_some_and(|job| job.exit().is_none())
            && !self.handler.is_finished()
            && self.bridge.running()
    }

    /// Sizes the canvas (its viewport, exactly), and places and sizes its window if it has one.
    pub async fn set_geometry(&self, geometry: &Geometry) -> Result<(), String> {
        match self.window {
            Window::X11(_) => self.place_window(geometry).await?,
            Window::Wayland(_) => self.size_window(geometry).await?,
            Window::Headless => {}
        }
        let (width, height) = (i64::from(geometry.width), i64::from(geometry.height));
        let metrics = SetDeviceMetricsOverrideParams::new(width, height, 1.0, false);
        self.command(self.page.execute(metrics)).await.map(drop)
    }

    /// Sizes the window (a Wayland compositor places it; a tiling one may also size it).
    async fn size_window(&self, geometry: &Geometry) -> Result<(), String> {
        let target = GetWindowForTargetParams::builder().target_id(self.page.target_id().clone()).build();
        let window = self.command(self.cdp.execute(target)).await?;
        let bounds = Bounds::builder().width(i64::from(geometry.width)).height(i64::from(geometry.height)).build();
        let params = SetWindowBoundsParams::new(window.result.window_id, bounds);
        self.command(self.cdp.execute(params)).await.map(drop)
    }

    /// Moves and sizes the window: at `x`/`y`, or centred on the screen on an axis without one.
    async fn place_window(&self, geometry: &Geometry) -> Result<(), String> {
        let (width, height) = (i64::from(geometry.width), i64::from(geometry.height));
        let screen = match (geometry.x, geometry.y) {
            (Some(_), Some(_)) => None,
            _ => match self.evaluate("[screen.width, screen.height]", Duration::from_secs(5)).await? {
                Evaluated::Value(Value::Array(sides)) => {
                    let side = |at: usize| sides.get(at).and_then(Value::as_i64).unwrap_or(0);
                    Some((side(0), side(1)))
                }
                other => return Err(format!("cannot read the screen's size: {other:?}")),
            },
        };
        let centre = |screen: i64, side: i64| ((screen - side) / 2).max(0);
        let left = geometry.x.map_or_else(|| centre(screen.map_or(0, |s| s.0), width), i64::from);
        let top = geometry.y.map_or_else(|| centre(screen.map_or(0, |s| s.1), height), i64::from);
        let target = GetWindowForTargetParams::builder().target_id(self.page.target_id().clone()).build();
        let window = self.command(self.cdp.execute(target)).await?;
        let bounds = Bounds::builder().left(left).top(top).width(width).height(height).build();
        let params = SetWindowBoundsParams::new(window.result.window_id, bounds);
        self.command(self.cdp.execute(params)).await.map(drop)
    }

    /// Loads `url` and waits for it (bounded by [`LOAD_DEADLINE`]).
    pub async fn load(&self, url: &str) -> Result<(), String> {
        match tokio::time::timeout(LOAD_DEADLINE, self.page.goto(url)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("the page did not load within {} s", LOAD_DEADLINE.as_secs())),
        }
    }

    /// Runs `script` in the page: its value (a promise's, once settled) as JSON.
    pub async fn evaluate(&self, script: &str, bound: Duration) -> Result<Evaluated, String> {
        let params = EvaluateParams::builder()
            .expression(script)
            .return_by_value(true)
            .await_promise(true)
            .user_gesture(true)
            .timeout(TimeDelta::new(bound.as_millis() as f64))
            .build()
            .map_err(|error| format!("cannot build the evaluation: {error}"))?;
        let started = std::time::Instant::now();
        let answer = match tokio::time::timeout(bound + Duration::from_millis(250), self.page.execute(params)).await {
            // Chromium answers a script its own bound stopped with an internal error.
            Ok(Err(_)) if started.elapsed() >= bound => return Ok(Evaluated::TimedOut),
            Ok(answer) => answer.map_err(|error| error.to_string())?,
            Err(_) => {
                // A promise that never settles, or a loop the renderer's own bound missed.
                let _ = tokio::time::timeout(COMMAND_DEADLINE, self.page.execute(TerminateExecutionParams::default()))
                    .await;
                return Ok(Evaluated::TimedOut);
            }
        };
        let result = answer.result;
        if let Some(exception) = result.exception_details {
            let description = exception.exception.as_ref().and_then(|e| e.description.clone());
            let what = description.unwrap_or(exception.text);
            // Chromium's own words when its bound stopped the script.
            if what.contains("Execution was terminated") {
                return Ok(Evaluated::TimedOut);
            }
            return Ok(Evaluated::Threw(what));
        }
        let object = result.result;
        Ok(Evaluated::Value(match (object.value, object.unserializable_value) {
            (Some(value), _) => value,
            // NaN, Infinity, -0, a BigInt: their JavaScript spelling.
            (None, Some(unserializable)) => Value::String(unserializable.inner().clone()),
            (None, None) => Value::Null,
        }))
    }

    /// The page as PNG bytes, exactly the canvas's size.
    pub async fn screenshot(&self) -> Result<Vec<u8>, String> {
        let params = CaptureScreenshotParams::builder().format(CaptureScreenshotFormat::Png).from_surface(true).build();
        let shot = self.command(self.page.execute(params)).await?;
        let text: &str = shot.result.data.as_ref();
        STANDARD.decode(text).map_err(|error| format!("chromium sent a screenshot that is not base64: {error}"))
    }

    /// `version` of the running Chromium (`Chrome/156.0...`).
    pub async fn version(&self) -> Result<String, String> {
        self.command(self.cdp.version()).await.map(|version| version.product.clone())
    }

    /// Stops the whole tree (SIGTERM, a short grace, SIGKILL), waits until it is gone, then
    /// removes the profile.
    pub async fn stop(mut self) {
        self.handler.abort();
        self.action_listener.abort();
        if let Some(job) = self.job.take() {
            job.kill().await;
        }
        if let Some(profile) = self.profile.take()
            && let Err(error) = profile.close()
        {
            tracing::warn!(%error, "cannot remove the canvas browser's profile");
        }
        tracing::info!(pid = self.pid, "canvas browser stopped");
    }

    async fn command<T>(&self, future: impl Future<Output = chromiumoxide::Result<T>>) -> Result<T, String> {
        match tokio::time::timeout(COMMAND_DEADLINE, future).await {
            Ok(answer) => answer.map_err(|error| error.to_string()),
            Err(_) => Err(format!("chromium did not answer within {} s", COMMAND_DEADLINE.as_secs())),
        }
    }
}

impl Drop for Browser {
    /// Dropped without [`Browser::stop`] (the node exits): the tree is SIGKILLed at once (the
    /// job's drop), and the profile removed once the main process is gone (bounded, off the
    /// async threads).
    fn drop(&mut self) {
        self.handler.abort();
        self.action_listener.abort();
        let Some(job) = self.job.take() else { return };
        drop(job);
        if let Some(profile) = self.profile.take() {
            let proc = PathBuf::from(format!("/proc/{}", self.pid));
            let remove = move || {
                let deadline = std::time::Instant::now() + Duration::from_secs(3);
                while alive(&proc) && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = profile.close();
            };
            if std::thread::Builder::new().name("canvas-profile".into()).spawn(remove).is_err() {
                tracing::warn!("cannot remove the canvas browser's profile");
            }
        }
    }
}

/// Whether the process at `/proc/PID` runs (a zombie has ended).
fn alive(proc: &Path) -> bool {
    match std::fs::read_to_string(proc.join("stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The name every canvas profile directory starts with (in the system temp dir).
const PROFILE_PREFIX: &str = "clawmcp-canvas-";

/// How old a canvas profile without Chromium's `SingletonLock` must be to count as left behind:
/// Chromium writes the lock within its first moments, so only a node killed before that leaves
/// one without it; far more than [`START_DEADLINE`], so a start in progress is never touched.
const STALE_UNLOCKED_PROFILE: Duration = Duration::from_secs(600);

/// Removes the canvas profiles (and their Chromium socket dirs) that a killed node left in
/// `temp`: a node that is SIGKILLed takes its browser tree with it (the reaper), but not the
/// directory its profile's `TempDir` would have removed. A profile is left behind when it is
/// owned by `me` (this node's user: never another user's) and Chromium's `SingletonLock` (`<host>-<pid>`) names a process
/// of this host that is gone, or when it has no lock and is older than `unlocked_after`. A
/// running canvas, this node's or another's, always holds a live lock. Best effort.
fn sweep_stale_profiles(temp: &Path, unlocked_after: Duration, me: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_owned();
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(|name| name.starts_with(PROFILE_PREFIX)) {
            continue;
        }
        let dir = entry.path();
        // Not followed: a symlink named like a profile is nobody's profile.
        let Ok(meta) = std::fs::symlink_metadata(&dir) else { continue };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        let stale = match std::fs::read_link(dir.join("SingletonLock")) {
            Ok(lock) => lock
                .to_str()
                .and_then(|lock| lock.rsplit_once('-'))
                .filter(|(lock_host, _)| *lock_host == host)
                .and_then(|(_, pid)| pid.parse::<i32>().ok())
                .is_some_and(|pid| pid > 0 && !clawmcp_fs::pid_is_alive(pid)),
            Err(_) => meta.modified().ok().and_then(|at| at.elapsed().ok()).is_some_and(|age| age > unlocked_after),
        };
        if !stale {
            continue;
        }
        // Chromium's socket lives in a directory of its own beside the profile.
        if let Ok(socket) = std::fs::read_link(dir.join("SingletonSocket"))
            && let Some(socket_dir) = socket.parent().filter(|parent| parent.parent() == Some(temp))
            && socket_dir
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("org.chromium.Chromium."))
            && std::fs::symlink_metadata(socket_dir).is_ok_and(|meta| meta.is_dir() && meta.uid() == me)
        {
            let _ = std::fs::remove_dir_all(socket_dir);
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(path = %dir.display(), "removed a canvas profile a killed node left behind"),
            Err(error) => tracing::debug!(path = %dir.display(), %error, "cannot remove a stale canvas profile"),
        }
    }
}

/// Chromium's command line. `--no-sandbox` only as root, where Chromium refuses to start
/// without it; `--test-type` keeps the "unsupported command-line flag" infobar off the page;
/// the background-networking flags keep Chromium from calling Google's services.
fn arguments(program: &Path, profile: &Path, geometry: &Geometry, window: &Window) -> Vec<String> {
    let mut argv = vec![
        program.display().to_string(),
        format!("--user-data-dir={}", profile.display()),
        // The protocol on descriptors 3 and 4, no port (see the module doc).
        "--remote-debugging-pipe".to_owned(),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--test-type".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-default-apps".to_owned(),
        "--disable-quic".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-features=Translate,MediaRouter,OptimizationHints".to_owned(),
        "--metrics-recording-only".to_owned(),
        "--password-store=basic".to_owned(),
        "--hide-scrollbars".to_owned(),
        "--mute-audio".to_owned(),
        format!("--window-size={},{}", geometry.width, geometry.height),
    ];
    if nix::unistd::geteuid().is_root() {
        argv.push("--no-sandbox".to_owned());
    }
    match window {
        Window::Headless => {
            argv.extend(["--headless".to_owned(), "--disable-gpu".to_owned(), "about:blank".to_owned()]);
        }
        Window::Wayland(_) => {
            argv.push("--ozone-platform=wayland".to_owned());
            argv.push("--app=data:text/html,".to_owned());
        }
        Window::X11(_) => {
            argv.push("--ozone-platform=x11".to_owned());
            if let (Some(x), Some(y)) = (geometry.x, geometry.y) {
                argv.push(format!("--window-position={x},{y}"));
            }
            // An app window (no tab strip, no address bar) needs a real page: about:blank opens a
            // plain browser window instead.
            argv.push("--app=data:text/html,".to_owned());
        }
    }
    argv
}

/// Waits until Chromium answers its first DevTools command (it reads its pipe once it has
/// started), or says why it will not: it exited (with what it printed), or the deadline passed.
async fn wait_until_ready(cdp: &chromiumoxide::Browser, job: &Job) -> Result<(), String> {
    let output = || {
        let text = job.output_since(0).text;
        let tail: Vec<&str> = text.lines().rev().take(12).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    };
    let exited = |code: i32| format!("chromium exited (code {code}) before it was ready; it said:\n{}", output());
    tokio::select! {
        answer = tokio::time::timeout(START_DEADLINE, cdp.version()) => match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => {
                // The pipe ended: most likely the browser exited, whose status comes a moment later.
                let _ = tokio::time::timeout(Duration::from_secs(2), job.finished()).await;
                match job.exit() {
                    Some(exit) => Err(exited(exit.exit_code)),
                    None => Err(format!("chromium's DevTools connection failed: {error}; it said:\n{}", output())),
                }
            }
            Err(_) => Err(format!(
                "chromium did not answer on its DevTools pipe within {} s; it said:\n{}",
                START_DEADLINE.as_secs(),
                output()
            )),
        },
        () = job.finished() => Err(exited(job.exit().map_or(-1, |exit| exit.exit_code))),
    }
}

/// Adds the A2UI action binding to `page` (a random name, so a page cannot count on it) and
/// forwards its calls, at most [`MAX_ACTION_BYTES`] each, to a bounded queue.
async fn bind_actions(
    page: &chromiumoxide::Page,
) -> Result<(String, tokio::sync::mpsc::Receiver<ActionCall>, tokio::task::JoinHandle<()>), String> {
    let mut secret = [0u8; 16];
    getrandom::fill(&mut secret).map_err(|error| format!("no randomness for the action binding: {error}"))?;
    let name = format!("__clawmcpA2UIAction_{}", secret.iter().map(|byte| format!("{byte:02x}")).collect::<String>());
    let cannot = |error: String| format!("cannot set up the A2UI action binding: {error}");
    let mut calls = tokio::time::timeout(COMMAND_DEADLINE, page.event_listener::<EventBindingCalled>())
        .await
        .map_err(|_| cannot("no answer in time".into()))?
        .map_err(|error| cannot(error.to_string()))?;
    tokio::time::timeout(COMMAND_DEADLINE, page.execute(AddBindingParams::new(name.clone())))
        .await
        .map_err(|_| cannot("no answer in time".into()))?
        .map_err(|error| cannot(error.to_string()))?;
    let (queue, taken) = tokio::sync::mpsc::channel(ACTIONS_QUEUED);
    let wanted = name.clone();
    let listener = tokio::spawn(async move {
        while let Some(call) = calls.next().await {
            if call.name != wanted || call.payload.len() > MAX_ACTION_BYTES {
                continue;
            }
            let call = ActionCall { payload: call.payload.clone(), context: call.execution_context_id };
            if queue.try_send(call).is_err() {
                tracing::warn!("A2UI actions come faster than the node forwards them; one was dropped");
            }
        }
    });
    Ok((name, taken, listener))
}

/// The canvas's page: headless, a new one (the browser's first, about:blank, stays unused); in
/// a window, the app window's own page (a new target would open a plain browser window).
async fn first_page(cdp: &chromiumoxide::Browser, window: &Window) -> Result<chromiumoxide::Page, String> {
    if window != &Window::Headless {
        return window_page(cdp).await;
    }
    match tokio::time::timeout(COMMAND_DEADLINE, cdp.new_page("about:blank")).await {
        Ok(page) => page.map_err(|error| format!("cannot open the canvas page: {error}")),
        Err(_) => Err("cannot open the canvas page: chromium did not answer in time".to_owned()),
    }
}

/// The app window's page, once chromiumoxide tracks its main frame. Found among the targets the
/// connection discovered and attached by itself, not through `fetch_targets`: that attaches every
/// target a second time, and the page's commands then go to a session Chromium may have dropped
/// ("Session with given id not found") or its navigations wait on events of the other one.
async fn window_page(cdp: &chromiumoxide::Browser) -> Result<chromiumoxide::Page, String> {
    let deadline = tokio::time::Instant::now() + START_DEADLINE;
    loop {
        let pages = tokio::time::timeout(COMMAND_DEADLINE, cdp.pages())
            .await
            .map_err(|_| "cannot find the canvas window's page: chromium did not answer in time".to_owned())?
            .map_err(|error| format!("cannot find the canvas window's page: {error}"))?;
        for page in pages {
            if let Ok(Ok(Some(_))) = tokio::time::timeout(COMMAND_DEADLINE, page.mainframe()).await {
                return Ok(page);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("chromium opened no canvas window within {} s", START_DEADLINE.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A pid that no process has now: a child that has been waited for.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn only_profiles_a_dead_node_left_are_swept() {
        let temp = tempfile::tempdir().unwrap();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
        let profile = |name: &str, lock: Option<String>| {
            let dir = temp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("Local State"), "{}").unwrap();
            if let Some(lock) = lock {
                symlink(lock, dir.join("SingletonLock")).unwrap();
            }
            dir
        };
        let socket_dir = temp.path().join("org.chromium.Chromium.abc123");
        std::fs::create_dir(&socket_dir).unwrap();
        let dead = profile("clawmcp-canvas-dead", Some(format!("{host}-{}", dead_pid())));
        symlink(socket_dir.join("SingletonSocket"), dead.join("SingletonSocket")).unwrap();
        let live = profile("clawmcp-canvas-live", Some(format!("{host}-{}", std::process::id())));
        let elsewhere = profile("clawmcp-canvas-other-host", Some(format!("not-{host}-{}", dead_pid())));
        let starting = profile("clawmcp-canvas-starting", None);
        let unrelated = profile("someone-elses-dir", Some(format!("{host}-{}", dead_pid())));
        let link = temp.path().join("clawmcp-canvas-link");
        symlink(&dead, &link).unwrap();

        let me = nix::unistd::geteuid().as_raw();
        sweep_stale_profiles(temp.path(), Duration::from_secs(600), me);
        assert!(!dead.exists() && !socket_dir.exists(), "a dead Chromium's profile and socket dir are removed");
        for kept in [&live, &elsewhere, &starting, &unrelated] {
            assert!(kept.join("Local State").exists(), "{} was removed", kept.display());
        }
        assert!(std::fs::symlink_metadata(&link).is_ok(), "a symlink is never followed nor removed");

        // Without a lock, only once it is older than the bound.
        sweep_stale_profiles(temp.path(), Duration::ZERO, me);
        assert!(!starting.exists(), "an unlocked profile past the bound is removed");
        assert!(live.exists(), "a live lock keeps its profile whatever its age");
    }

    #[test]
    fn another_users_profile_is_never_touched() {
        // The same stale profile, judged by a node of another user: not its to remove.
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("clawmcp-canvas-theirs");
        std::fs::create_dir(&dir).unwrap();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
        symlink(format!("{host}-{}", dead_pid()), dir.join("SingletonLock")).unwrap();
        let owner = nix::unistd::geteuid().as_raw();
        sweep_stale_profiles(temp.path(), Duration::ZERO, owner.wrapping_add(1));
        assert!(dir.exists(), "another user's profile was removed");
        sweep_stale_profiles(temp.path(), Duration::ZERO, owner);
        assert!(!dir.exists(), "its owner's node removes it");
    }
}
