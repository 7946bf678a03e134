//! Whether a command can be served right now, and in words why not.
//!
//! Two things decide it: the owner's switch (the sensitive capabilities, screen, camera and
//! clipboard reading, are off until the owner turns each on) and the backend the command needs
//! on this machine (an X display, ffmpeg, a camera). A [`Gate`] holds both, and that one check
//! decides what `tools/list` shows (through [`clawmcp_mcp::ToolDef::available_while`]), what a
//! call that reaches a hidden command answers ([`Gate::admit`]), and what `clawmcp node status`
//! and `clawmcp doctor` report ([`crate::Registry::unavailable`]). The switch is read live:
//! turning it off applies to the next list and the next call. The backend's answer is kept for
//! [`BACKEND_RECHECK`]: a program installed or removed, or a display gone, shows within that.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use clawmcp_mcp::ToolFailure;
use clawmcp_mcp::tool::Availability;
use clawmcp_mcp::tool::codes::UNAVAILABLE;

use crate::capability::Command;
use crate::settings::{LiveSettings, Settings};

/// An owner's switch in `settings.json` for a sensitive capability.
#[derive(Debug)]
pub struct Switch {
    /// The setting's name (upstream's where one exists).
    pub setting: &'static str,
    /// What an agent could learn or do with it on, said to a caller while it is off.
    pub why: &'static str,
    is_on: fn(&Settings) -> bool,
}

impl Switch {
    pub const SCREEN: Switch = Switch {
        setting: "NodeScreenEnabled",
        why: "a capture shows whatever is on the screen",
        is_on: |settings| settings.node_screen_enabled,
    };
    pub const CAMERA: Switch = Switch {
        setting: "NodeCameraEnabled",
        why: "the camera sees the room in front of this machine",
        is_on: |settings| settings.node_camera_enabled,
    };
    pub const CLIPBOARD_READ: Switch = Switch {
        setting: "NodeClipboardReadEnabled",
        why: "the clipboard may hold passwords and anything else you copied",
        is_on: |settings| settings.node_clipboard_read_enabled,
    };
    pub const LOCATION: Switch = Switch {
        setting: "NodeLocationEnabled",
        why: "a fix says where this machine, and likely you, are",
        is_on: |settings| settings.node_location_enabled,
    };
    pub const MICROPHONE: Switch = Switch {
        setting: "NodeSttEnabled",
        why: "the microphone hears the room around this machine",
        is_on: |settings| settings.node_stt_enabled,
    };
    pub const CANVAS: Switch = Switch {
        setting: "NodeCanvasEnabled",
        why: "the canvas shows any page an agent chooses and runs its JavaScript in a browser on this machine",
        is_on: |settings| settings.node_canvas_enabled,
    };

    pub const APP_CONNECTION_CHANGES: Switch = Switch {
        setting: "AppConnectionChangesEnabled",
        why: "it points this node at the gateway a local client names, and that gateway's operators then reach every \
              command this node serves",
        is_on: |settings| settings.app_connection_changes_enabled,
    };

    pub fn is_on(&self, settings: &Settings) -> bool {
        (self.is_on)(settings)
    }

    /// What a call of `command` answers while the switch is off (what, why, what to do).
    pub fn refusal(&self, command: &str) -> ToolFailure {
        ToolFailure::new(format!(
            "{command} is disabled by user setting: {}, so it is off until you turn it on (clawmcp settings set {} \
             true); it applies at once.",
            self.why, self.setting
        ))
        .with_code(UNAVAILABLE)
    }

    /// The status line of a command behind this switch while it is off.
    fn status(&self) -> String {
        format!(
            "off: {} is false; turn it on with `clawmcp settings set {} true` (applies at once)",
            self.setting, self.setting
        )
    }
}

/// A backend this machine lacks: what is missing, and what would provide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingBackend {
    /// `ffmpeg is not installed`, `no X display: DISPLAY is unset`.
    pub what: String,
    /// `install it: apt install ffmpeg`.
    pub fix: String,
}

impl MissingBackend {
    pub fn new(what: impl Into<String>, fix: impl Into<String>) -> Self {
        MissingBackend { what: what.into(), fix: fix.into() }
    }

    /// `program` on the node's `PATH` (absolute entries only), or which Debian `package` has it.
    pub fn program(program: &str, package: &str) -> Result<PathBuf, MissingBackend> {
        MissingBackend::program_in(program, package, std::env::var_os("PATH").as_deref())
    }

    /// [`MissingBackend::program`] on the search path `path` (a `PATH` value), so a caller or a
    /// test can name one other than the process environment's.
    pub fn program_in(program: &str, package: &str, path: Option<&OsStr>) -> Result<PathBuf, MissingBackend> {
        let absolute = path
            .into_iter()
            .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .filter(|dir| dir.is_absolute());
        let found = std::env::join_paths(absolute)
            .ok()
            .and_then(|path| which::which_in_global(program, Some(path)).ok())
            .and_then(|mut hits| hits.next());
        found.ok_or_else(|| {
            MissingBackend::new(
                format!("{program} is not installed (not on the node's PATH)"),
                format!("install it: apt install {package}"),
            )
        })
    }
}

const NO_DISPLAY_FIX: &str =
    "run the node inside your X session (DISPLAY=:0), or on a headless machine under Xvfb (apt install xvfb)";

impl MissingBackend {
    /// Whether there is an X display to talk to: `display` named, or in `DISPLAY`. (Whether it
    /// answers is learnt by using it, which says so.) `wayland_gap` says what this command lacks
    /// in a Wayland session without Xwayland.
    pub fn x11_display(display: Option<&str>, wayland_gap: &str) -> Result<(), MissingBackend> {
        let set = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
        if display.is_some() || set("DISPLAY") {
            return Ok(());
        }
        Err(match set("WAYLAND_DISPLAY") {
            true => MissingBackend::new(
                format!("no X display: this is a Wayland session without Xwayland's DISPLAY ({wayland_gap})"),
                NO_DISPLAY_FIX,
            ),
            false => MissingBackend::no_display(),
        })
    }

    /// Neither an X display nor anything else to show: `DISPLAY` is unset.
    pub fn no_display() -> MissingBackend {
        MissingBackend::new("no X display: DISPLAY is unset", NO_DISPLAY_FIX)
    }
}

impl std::fmt::Display for MissingBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.what, self.fix)
    }
}

/// How long a backend probe's answer is kept. Why keep it at all: every command behind a gate
/// asks on every `tools/list` and every call, and a probe is a `PATH` search (a failed `stat` per
/// directory) or a bus round trip; probed each time they were most of a `tools/list`'s cost
/// (bench/NODE_RESULTS.md). What a backend is rarely changes while the node runs, and two seconds
/// is sooner than anyone notices after an `apt install`. The owner's switch is never kept.
pub const BACKEND_RECHECK: Duration = Duration::from_secs(2);

/// The live check for one capability's commands: its switch (if any) and its backend probe.
#[derive(Clone)]
pub struct Gate {
    settings: Arc<LiveSettings>,
    switch: Option<&'static Switch>,
    backend: Arc<Backend>,
}

/// A backend probe and its last answer (see [`BACKEND_RECHECK`]).
struct Backend {
    probe: Box<dyn Fn() -> Result<(), MissingBackend> + Send + Sync>,
    last: Mutex<Option<(Instant, Result<(), MissingBackend>)>>,
}

impl Backend {
    fn answer(&self) -> Result<(), MissingBackend> {
        self.with_answer(Result::clone)
    }

    /// `read` applied to the current answer (re-probed when stale), without copying it.
    fn with_answer<R>(&self, read: impl FnOnce(&Result<(), MissingBackend>) -> R) -> R {
        // The clock is tokio's so a test can move it; outside a runtime it is the system's.
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match &*last {
            Some((at, answer)) if now.saturating_duration_since(*at) < BACKEND_RECHECK => read(answer),
            _ => {
                // Probed under the lock: callers racing a stale answer wait for one probe
                // instead of each running their own.
                let answer = (self.probe)();
                let read = read(&answer);
                *last = Some((now, answer));
                read
            }
        }
    }
}

impl Gate {
    /// `backend` is probed at most once per [`BACKEND_RECHECK`] for all the gate's lists and
    /// calls; still keep it cheap (an env var, a `PATH` lookup, a directory scan): a backend that
    /// can only be proven by using it fails the call.
    pub fn new(
        settings: Arc<LiveSettings>,
        switch: Option<&'static Switch>,
        backend: impl Fn() -> Result<(), MissingBackend> + Send + Sync + 'static,
    ) -> Self {
        Gate { settings, switch, backend: Arc::new(Backend { probe: Box::new(backend), last: Mutex::new(None) }) }
    }

    /// `Ok` while the command is served; else why not, in a status line. A switched-off command
    /// whose backend is missing too says both, so turning it on is not the owner's only surprise.
    pub fn check(&self) -> Result<(), String> {
        let off = self.switch.filter(|switch| !self.settings.read(|settings| switch.is_on(settings)));
        match (off, self.backend.answer()) {
            (None, Ok(())) => Ok(()),
            (None, Err(missing)) => Err(format!("unavailable: {missing}")),
            (Some(switch), Ok(())) => Err(switch.status()),
            (Some(switch), Err(missing)) => Err(format!("{}; once on, still unavailable: {missing}", switch.status())),
        }
    }

    /// Before a call of `command` runs: the switch's refusal, or the missing backend, as the
    /// call's error (code `UNAVAILABLE`).
    pub fn admit(&self, command: &str) -> Result<(), ToolFailure> {
        if let Some(switch) = self.switch.filter(|switch| !self.settings.read(|settings| switch.is_on(settings))) {
            return Err(switch.refusal(command));
        }
        self.backend.answer().map_err(|missing| {
            ToolFailure::new(format!("{command} is not available on this machine: {missing}")).with_code(UNAVAILABLE)
        })
    }

    /// `command`, listed only while this gate is open.
    pub fn apply(&self, command: Command) -> Command {
        command.available_while(self.clone())
    }
}

/// Every `tools/list` asks each gated command whether it is open: answered without building the
/// status line [`Gate::check`] gives (most sensitive commands are off by default, so that was a
/// message formatted per command per list).
impl Availability for Gate {
    fn is_available(&self) -> bool {
        self.switch.is_none_or(|switch| self.settings.read(|settings| switch.is_on(settings)))
            && self.backend.with_answer(Result::is_ok)
    }

    fn unavailable_reason(&self) -> Option<String> {
        self.check().err()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(settings: &Arc<LiveSettings>, backend: Result<(), MissingBackend>) -> Gate {
        Gate::new(settings.clone(), Some(&Switch::CAMERA), move || backend.clone())
    }

    #[test]
    fn the_switch_decides_first_then_the_backend() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Arc::new(LiveSettings::open(dir.path().join("settings.json")).unwrap());
        let missing = MissingBackend::new("no camera", "plug one in");
        let (off, absent) = (gate(&settings, Ok(())), gate(&settings, Err(missing.clone())));
        let status = off.check().unwrap_err();
        assert!(status.contains("clawmcp settings set NodeCameraEnabled true"), "{status}");
        assert!(!status.contains("unavailable"), "{status}");
        let both = absent.check().unwrap_err();
        assert!(
            both.starts_with("off: NodeCameraEnabled is false")
                && both.ends_with("once on, still unavailable: no camera; plug one in"),
            "off and missing a backend: both are said ({both})"
        );
        let refusal = off.admit("camera.snap").unwrap_err();
        assert!(refusal.message.starts_with("camera.snap is disabled by user setting"), "{}", refusal.message);
        assert_eq!(refusal.code, Some(UNAVAILABLE));

        let mut on = Settings::default();
        on.node_camera_enabled = true;
        on.save(&dir.path().join("settings.json")).unwrap();
        assert_eq!(off.check(), Ok(()), "the switch applies at once");
        assert_eq!(absent.check(), Err("unavailable: no camera; plug one in".to_owned()));
        let error = absent.admit("camera.snap").unwrap_err();
        assert_eq!(error.message, "camera.snap is not available on this machine: no camera; plug one in");
    }

    /// The yes/no a `tools/list` asks and the status line a report asks must never disagree.
    #[test]
    fn the_quick_answer_and_the_reason_agree_in_every_state() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Arc::new(LiveSettings::open(dir.path().join("settings.json")).unwrap());
        let missing = MissingBackend::new("no camera", "plug one in");
        let gates =
            [gate(&settings, Ok(())), gate(&settings, Err(missing)), Gate::new(settings.clone(), None, || Ok(()))];
        let agree = |expected: [bool; 3]| {
            for (gate, expected) in gates.iter().zip(expected) {
                assert_eq!(gate.is_available(), expected);
                assert_eq!(gate.unavailable_reason().is_none(), expected, "{:?}", gate.unavailable_reason());
                assert_eq!(gate.check().is_ok(), expected);
            }
        };
        agree([false, false, true]);
        let mut on = Settings::default();
        on.node_camera_enabled = true;
        on.save(&dir.path().join("settings.json")).unwrap();
        agree([true, false, true]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_backend_is_probed_once_per_recheck_period_and_the_switch_every_time() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let settings = Arc::new(LiveSettings::open(dir.path().join("settings.json")).unwrap());
        let probes = Arc::new(AtomicUsize::new(0));
        let gate = Gate::new(settings, Some(&Switch::CAMERA), {
            let probes = probes.clone();
            move || {
                probes.fetch_add(1, Ordering::SeqCst);
                Err(MissingBackend::new("no camera", "plug one in"))
            }
        });
        for _ in 0..50 {
            assert!(gate.check().unwrap_err().contains("once on, still unavailable: no camera"));
        }
        assert_eq!(probes.load(Ordering::SeqCst), 1, "fifty checks inside the period, one probe");
        tokio::time::advance(BACKEND_RECHECK - Duration::from_millis(1)).await;
        gate.check().unwrap_err();
        assert_eq!(probes.load(Ordering::SeqCst), 1, "still inside the period");
        tokio::time::advance(Duration::from_millis(1)).await;
        gate.check().unwrap_err();
        assert_eq!(probes.load(Ordering::SeqCst), 2, "the period is over at its edge: probed again");

        let mut on = Settings::default();
        on.node_camera_enabled = true;
        on.save(&dir.path().join("settings.json")).unwrap();
        assert_eq!(gate.check(), Err("unavailable: no camera; plug one in".to_owned()), "the switch is read live");
        assert_eq!(probes.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_program_is_found_on_path_or_named_with_its_package() {
        assert!(MissingBackend::program("sh", "dash").is_ok_and(|path| path.is_absolute()));
        let missing = MissingBackend::program("clawmcp-no-such-program", "clawmcp-pkg").unwrap_err();
        assert_eq!(missing.fix, "install it: apt install clawmcp-pkg");
        assert!(missing.what.starts_with("clawmcp-no-such-program is not installed"), "{}", missing.what);
    }
}
