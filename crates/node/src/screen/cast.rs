//! Wayland `screen.record`: the desktop portal's ScreenCast hands us a PipeWire stream of the
//! screen, which GStreamer's `pipewiresrc` reads and turns into raw frames for the same ffmpeg
//! encoder the X11 path uses ([`super::record`]).
//!
//! The exchange (each step a portal Request, answered by its `Response`, through
//! [`portal::request`]): `CreateSession` gives the session's path; `SelectSources` asks for one
//! monitor (`types: 1`), the pointer drawn in when the portal can (`cursor_mode: 2`, else hidden);
//! `Start` answers the streams, `(PipeWire node id, {size, position, ...})`; and
//! `OpenPipeWireRemote` returns a descriptor of PipeWire connected for this session only. The
//! session is closed (`org.freedesktop.portal.Session.Close`) when the recording ends however it
//! ends; a dropped call drops the bus connection, and the portal closes the sessions of a peer
//! that left.
//!
//! The consumer is `gst-launch-1.0` rather than libpipewire linked in: it is the one process
//! that holds the PipeWire descriptor (as its stdin, so no descriptor number has to be set up
//! between fork and exec, which would take unsafe code), and killing it stops everything it
//! holds. Its pipeline: `pipewiresrc` (with `media.type=Video`, without which the session
//! manager does not link the stream to the cast; `keepalive-time` repeats the last frame while
//! the screen is static, since compositors send frames only on damage) ! `videorate` (the frame
//! rate asked for) ! `videoconvert` to I420 ! `y4menc` on stdout, piped into ffmpeg
//! (`-f yuv4mpegpipe`). y4m timestamps count frames, so ffmpeg's `-t` ends the clip after exactly
//! the duration's frames; the recorder then stops gst.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command as Process;
use tokio_util::sync::CancellationToken;
use zbus::{Address, OwnedObjectPath, OwnedVariant, Variant};

use super::portal::{self, PORTAL, PORTAL_PATH};
use super::record::RecordOptions;
use crate::availability::MissingBackend;

const SCREENCAST: &str = "org.freedesktop.portal.ScreenCast";
const SESSION: &str = "org.freedesktop.portal.Session";
/// ScreenCast's `types`: a monitor.
const MONITOR: u32 = 1;
/// ScreenCast's `cursor_mode` bits: hidden, embedded in the frames.
const CURSOR_HIDDEN: u32 = 1;
const CURSOR_EMBEDDED: u32 = 2;
/// How long the consumer may wait for the first frame. A compositor sends frames when the screen
/// repaints (xdg-desktop-portal-wlr 0.7 on a headless sway sends none at all until something
/// does); ten seconds without one means the stream was never linked, or nothing is painting.
pub const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(10);
/// The interval at which `pipewiresrc` repeats the last frame while none arrives (a static screen).
const KEEPALIVE_MS: u32 = 100;
/// The GStreamer program, and what the pipeline needs besides the core plugins.
pub const GST_LAUNCH: &str = "gst-launch-1.0";
const PLUGINS: [(&str, &str, &str); 2] = [
    ("libgstpipewire.so", "pipewiresrc, GStreamer's PipeWire source", "gstreamer1.0-pipewire"),
    ("libgsty4menc.so", "y4menc, GStreamer's YUV4MPEG encoder", "gstreamer1.0-plugins-good"),
];

/// `gst-launch-1.0` on the recorder's search path and the plugins the pipeline needs, or which
/// package to install.
pub fn gst_launch(options: &RecordOptions) -> Result<PathBuf, MissingBackend> {
    let program = options.program(GST_LAUNCH, "gstreamer1.0-tools")?;
    let dirs = plugin_dirs();
    for (file, what, package) in PLUGINS {
        if !dirs.iter().any(|dir| dir.join(file).is_file()) {
            return Err(MissingBackend::new(
                format!("{what} is not installed (no {file} in GStreamer's plugin directories)"),
                format!(
                    "install it: apt install {package} gstreamer1.0-plugins-base (and run wireplumber or another \
                     PipeWire session manager, which links the cast to the recorder)"
                ),
            ));
        }
    }
    Ok(program)
}

/// Whether the running portal on `bus` offers ScreenCast (its `version` property answers): the
/// frontend exports it only when some backend implements it. A portal the bus would start on
/// demand is not started by a probe; a call then says what is missing.
pub fn screencast_offered(bus: &portal::Bus) -> Result<(), MissingBackend> {
    let address = bus.address()?;
    let asked = crate::dbus::block_on_bounded(portal::PROBE_TIMEOUT, async {
        let connection = zbus::connection::Builder::address(address.clone()).build().await?;
        let dbus = zbus::fdo::DBusProxy::new(&connection).await?;
        if !dbus.name_has_owner(zbus::names::BusName::try_from(PORTAL)?).await? {
            return Ok(true);
        }
        let get = ("org.freedesktop.DBus.Properties", "Get");
        let reply =
            connection.call_method(Some(PORTAL), PORTAL_PATH, Some(get.0), get.1, &(SCREENCAST, "version")).await;
        match reply {
            Ok(_) => Ok(true),
            // A refusal of the call (UnknownInterface, InvalidArgs, ...), however zbus maps it.
            Err(zbus::Error::MethodError(..) | zbus::Error::FDO(_) | zbus::Error::DBus(_)) => Ok(false),
            Err(error) => Err(error),
        }
    });
    match asked {
        Some(Ok(true)) => Ok(()),
        Some(Ok(false)) => Err(MissingBackend::new(
            format!("the desktop portal on the session D-Bus at {address} does not offer {SCREENCAST}"),
            "install the portal backend for your desktop that casts the screen: xdg-desktop-portal-wlr (sway \
             and other wlroots compositors; it needs pipewire running), xdg-desktop-portal-gnome (GNOME) or \
             xdg-desktop-portal-kde (KDE Plasma), then restart xdg-desktop-portal",
        )),
        Some(Err(error)) => Err(MissingBackend::new(
            format!("cannot ask the desktop portal at {address} about {SCREENCAST} ({error})"),
            "check that DBUS_SESSION_BUS_ADDRESS names your session's bus",
        )),
        None => Err(MissingBackend::new(
            format!(
                "the desktop portal at {address} did not say within {} ms whether it offers {SCREENCAST}",
                portal::PROBE_TIMEOUT.as_millis()
            ),
            "the portal or its backend is hung: restart xdg-desktop-portal (systemctl --user restart xdg-desktop-portal)",
        )),
    }
}

/// Where GStreamer looks for plugins: the directories its environment names, else the
/// distributions' system directories (`/usr/lib/<multiarch>/gstreamer-1.0` on Debian).
fn plugin_dirs() -> Vec<PathBuf> {
    let named: Vec<PathBuf> =
        ["GST_PLUGIN_SYSTEM_PATH_1_0", "GST_PLUGIN_SYSTEM_PATH", "GST_PLUGIN_PATH_1_0", "GST_PLUGIN_PATH"]
            .iter()
            .filter_map(std::env::var_os)
            .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
            .collect();
    let multiarch =
        std::fs::read_dir("/usr/lib").into_iter().flatten().flatten().map(|entry| entry.path().join("gstreamer-1.0"));
    let usual =
        ["/usr/lib/gstreamer-1.0", "/usr/lib64/gstreamer-1.0", "/usr/local/lib/gstreamer-1.0"].map(PathBuf::from);
    named.into_iter().chain(multiarch).chain(usual).collect()
}

/// A started screen cast: the portal session, and the PipeWire stream to read.
pub struct Cast {
    connection: zbus::Connection,
    session: OwnedObjectPath,
    /// The stream's PipeWire node.
    pub node: u32,
    /// PipeWire, connected for this session.
    pub remote: OwnedFd,
    /// The monitor's size, when the portal says it.
    pub size: Option<(u32, u32)>,
    /// Whether the pointer is drawn into the frames.
    pub pointer: bool,
}

impl Cast {
    /// Closes the portal session (the compositor stops casting); best effort, bounded.
    pub async fn close(&self) {
        close_session(&self.connection, &self.session).await;
    }

    /// The consumer: `gst-launch-1.0` reading this cast at `fps` frames per second, with
    /// PipeWire as its stdin and y4m on its stdout. `name` names its PipeWire client.
    pub fn consumer(&self, gst: &Path, fps: u32, name: &str) -> std::io::Result<Process> {
        let mut command = Process::new(gst);
        command
            .args(["-q", "-e", "pipewiresrc", "fd=0"])
            .arg(format!("path={}", self.node))
            .arg(format!("client-name={name}"))
            .arg(format!("keepalive-time={KEEPALIVE_MS}"))
            .arg("do-timestamp=true")
            .arg("stream-properties=props,media.type=(string)Video,media.category=(string)Capture,media.role=(string)Screen")
            .args(["!", "videorate", "!"])
            .arg(format!("video/x-raw,framerate={fps}/1"))
            .args(["!", "videoconvert", "!", "video/x-raw,format=I420", "!", "y4menc", "!", "fdsink", "fd=1"])
            .stdin(Stdio::from(self.remote.try_clone()?))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Ok(command)
    }
}

/// Starts casting one monitor through the portal on the bus at `address`, every step within
/// `timeout` together, unless `cancel` fires first. A session opened before a failure is closed.
pub async fn start(address: &Address, timeout: Duration, cancel: &CancellationToken) -> Result<Cast, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    let connection = portal::connect(address, timeout, deadline, cancel).await?;
    let session_token = portal::handle_token();
    let token = portal::handle_token();
    let created = step(
        &connection,
        "CreateSession",
        &(options(&token, [("session_handle_token", &session_token)]),),
        &token,
        deadline,
        timeout,
        cancel,
    )
    .await?;
    let session = created
        .get("session_handle")
        .and_then(|value| <&str>::try_from(&**value).ok())
        .and_then(|path| OwnedObjectPath::try_from(path.to_owned()).ok())
        .ok_or("the desktop portal created a screen cast session without saying its path")?;
    match started(&connection, &session, deadline, timeout, cancel).await {
        Ok((node, size, pointer, remote)) => Ok(Cast { connection, session, node, remote, size, pointer }),
        Err(error) => {
            close_session(&connection, &session).await;
            Err(error)
        }
    }
}

/// Closes the portal session (the compositor stops casting); best effort, bounded.
async fn close_session(connection: &zbus::Connection, session: &OwnedObjectPath) {
    let closing = connection.call_method(Some(PORTAL), session, Some(SESSION), "Close", &());
    let _ = tokio::time::timeout(portal::CLOSE_TIMEOUT, closing).await;
}

/// What `Start` and `OpenPipeWireRemote` gave: the node, its size, whether the pointer is drawn,
/// and PipeWire.
type Started = (u32, Option<(u32, u32)>, bool, OwnedFd);

/// The steps after the session exists: sources, start, the PipeWire remote.
async fn started(
    connection: &zbus::Connection,
    session: &OwnedObjectPath,
    deadline: tokio::time::Instant,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Started, String> {
    let cursors = connection
        .call_method(
            Some(PORTAL),
            PORTAL_PATH,
            Some("org.freedesktop.DBus.Properties"),
            "Get",
            &(SCREENCAST, "AvailableCursorModes"),
        )
        .await
        .ok()
        .and_then(|reply| reply.body().deserialize::<OwnedVariant>().ok())
        .and_then(|value| u32::try_from(&*value).ok())
        .unwrap_or(0);
    let pointer = cursors & CURSOR_EMBEDDED != 0;
    let token = portal::handle_token();
    let mut select: HashMap<&str, Variant<'_>> = options(&token, []);
    select.insert("types", Variant::from(MONITOR));
    select.insert("multiple", Variant::from(false));
    select.insert("cursor_mode", Variant::from(if pointer { CURSOR_EMBEDDED } else { CURSOR_HIDDEN }));
    step(connection, "SelectSources", &(session, select), &token, deadline, timeout, cancel).await?;
    let token = portal::handle_token();
    let results =
        step(connection, "Start", &(session, "", options(&token, [])), &token, deadline, timeout, cancel).await?;
    let streams = results
        .get("streams")
        .and_then(|value| value.try_clone().ok())
        .and_then(|value| Vec::<(u32, HashMap<String, OwnedVariant>)>::try_from(value).ok())
        .ok_or("the desktop portal started the screen cast without any stream")?;
    let (node, properties) =
        streams.into_iter().next().ok_or("the desktop portal started the screen cast without any stream")?;
    let size = properties
        .get("size")
        .and_then(|value| value.try_clone().ok())
        .and_then(|value| <(i32, i32)>::try_from(value).ok())
        .and_then(|(width, height)| Some((u32::try_from(width).ok()?, u32::try_from(height).ok()?)));
    let remote = async {
        let reply = connection
            .call_method(Some(PORTAL), PORTAL_PATH, Some(SCREENCAST), "OpenPipeWireRemote", &(session, options("", [])))
            .await
            .map_err(|error| format!("the desktop portal did not open PipeWire for the screen cast: {error}"))?;
        let fd: zbus::OwnedFd =
            reply.body().deserialize().map_err(|error| format!("the desktop portal answered oddly: {error}"))?;
        Ok::<_, String>(OwnedFd::from(fd))
    };
    let remote = tokio::select! {
        () = cancel.cancelled() => return Err(clawmcp_mcp::CANCELLED.into()),
        done = tokio::time::timeout_at(deadline, remote) => done.map_err(|_| late(timeout))??,
    };
    Ok((node, size, pointer, remote))
}

/// `a{sv}` options with `handle_token` (unless empty) and `extra` strings.
fn options<'a, const N: usize>(token: &'a str, extra: [(&'a str, &'a str); N]) -> HashMap<&'a str, Variant<'a>> {
    let mut options: HashMap<&str, Variant<'_>> =
        extra.into_iter().map(|(key, value)| (key, Variant::from(value))).collect();
    if !token.is_empty() {
        options.insert("handle_token", Variant::from(token));
    }
    options
}

/// One ScreenCast Request by `deadline`, unless cancelled (either closes the Request); a
/// response other than 0 is an error saying what the desktop did.
async fn step<B>(
    connection: &zbus::Connection,
    method: &str,
    body: &B,
    token: &str,
    deadline: tokio::time::Instant,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<HashMap<String, OwnedVariant>, String>
where
    B: serde::Serialize + zbus::DynamicType,
{
    let asked = portal::request(connection, SCREENCAST, method, body, token, "screen cast");
    let (code, results) = tokio::select! {
        () = cancel.cancelled() => {
            portal::close_request(connection, token).await;
            return Err(clawmcp_mcp::CANCELLED.into());
        }
        answered = tokio::time::timeout_at(deadline, asked) => match answered {
            Ok(answer) => answer?,
            Err(_) => {
                portal::close_request(connection, token).await;
                return Err(late(timeout));
            }
        },
    };
    match code {
        0 => Ok(results),
        1 => Err(format!(
            "the screen cast was refused (or its dialog cancelled) on the desktop at {method} (portal response 1); \
             allow screen sharing for this program in your desktop's settings"
        )),
        other => Err(format!(
            "the desktop portal could not start the screen cast at {method} (response {other}); its backend's log \
             (journalctl --user -u xdg-desktop-portal) says why"
        )),
    }
}

fn late(timeout: Duration) -> String {
    format!(
        "the desktop portal did not start the screen cast within {} (a screen-sharing dialog nobody answered, \
         or a hung portal backend); the request was closed. Allow screen sharing for this program in your \
         desktop's settings, or check the portal's log (journalctl --user -u xdg-desktop-portal)",
        portal::shown_duration(timeout)
    )
}

#[cfg(test)]
mod tests;
