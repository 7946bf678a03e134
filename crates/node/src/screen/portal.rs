//! Wayland: `screen.snapshot` through the desktop portal (`org.freedesktop.portal.Screenshot` on
//! the session bus), which is how a Wayland program that is not the compositor may see the screen.
//!
//! The exchange: subscribe to `Response` on the Request object the call will create (its path is
//! known in advance from our unique name and a random `handle_token`, so the answer cannot slip
//! past between the call and the subscription), call `Screenshot("", {handle_token, interactive:
//! false})`, and wait for `Response(u response, a{sv} results)` whose `uri` names a PNG file. The
//! wait is bounded ([`DEFAULT_TIMEOUT`]: GNOME and KDE may show a permission dialog nobody
//! answers); on time-out or cancel the Request is closed (`org.freedesktop.portal.Request.Close`).
//!
//! The portal writes a file for us: it is read bounded (size, then pixels through
//! [`imaging::decode_png`]) without following a symlink, and removed when it is plainly ours to
//! remove: a regular file owned by this user, under the runtime, temporary or pictures directory,
//! in a directory reached without symlinks, and written since the call began. Anything else is
//! left where it is (and the answer says so).
//!
//! What `screenIndex` means here: portal screenshots cover every output, and the portal does not
//! say where the monitors are (only compositor-specific protocols do), so screenIndex 0 is the whole
//! desktop and any other index is refused. The pointer is not drawn: the portal has no option for it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;
use zbus::Address;
use zbus::message::Type as MessageType;
use zbus::{ObjectPath, OwnedObjectPath, OwnedVariant, Variant};

use crate::availability::MissingBackend;
use crate::imaging::{self, Pixels};

/// The portal frontend's well-known name.
pub const PORTAL: &str = "org.freedesktop.portal.Desktop";
pub(super) const PORTAL_PATH: &str = "/org/freedesktop/portal/desktop";
const SCREENSHOT: &str = "org.freedesktop.portal.Screenshot";
const REQUEST: &str = "org.freedesktop.portal.Request";
/// How long a screenshot may take, permission dialog included, before the call fails.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long closing an abandoned Request may take (best effort).
pub(super) const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the availability probe waits for the bus, and how long its answer is reused.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
pub const PROBE_CACHE: Duration = Duration::from_secs(2);
/// The portal's file is read up to this size (an uncompressed 8K RGBA PNG is about 133 MB).
pub const MAX_FILE_BYTES: u64 = 192 * 1024 * 1024;
/// Pixels decoded at most: two 8K monitors side by side.
pub const MAX_PIXELS: u64 = 2 * 7680 * 4320;
/// The file's modification time may be this much older than the call and still count as made
/// for it (file systems with coarse timestamps).
const MTIME_SLACK: Duration = Duration::from_secs(2);

/// What a Wayland session needs for screen capture, said when the portal is missing.
pub(super) const PORTAL_PACKAGES: &str = "install xdg-desktop-portal and the backend for your desktop: xdg-desktop-portal-wlr \
     (sway and other wlroots compositors; it takes the shot with grim, needs pipewire running, and \
     xdg-desktop-portal 1.15+ also wants an Access backend such as xdg-desktop-portal-gtk), \
     xdg-desktop-portal-gnome (GNOME) or xdg-desktop-portal-kde (KDE Plasma)";

/// Where the session bus is: named (tests, a node told its bus) or found in the environment.
#[derive(Debug, Clone)]
pub enum Bus {
    Env,
    At(String),
}

impl Bus {
    pub fn address(&self) -> Result<Address, MissingBackend> {
        let text = match self {
            Bus::At(address) => address.clone(),
            Bus::Env => {
                let resolved = crate::system::session_bus_address(
                    std::env::var_os("DBUS_SESSION_BUS_ADDRESS"),
                    std::env::var_os("XDG_RUNTIME_DIR"),
                );
                return resolved.map_err(|error| {
                    MissingBackend::new(
                        format!("no session D-Bus for the desktop portal ({error})"),
                        "run the node inside your desktop session, where DBUS_SESSION_BUS_ADDRESS is set",
                    )
                });
            }
        };
        Address::from_str(&text).map_err(|error| {
            MissingBackend::new(format!("`{text}` is not a D-Bus address ({error})"), "name the session bus's address")
        })
    }
}

/// The availability check: the portal is running on the bus, or the bus can start it. One bus
/// round trip (measured at about a millisecond, see ARCHITECTURE.md), reused for [`PROBE_CACHE`]
/// so a burst of `tools/list` costs one.
#[derive(Clone)]
pub struct Probe {
    bus: Bus,
    last: Arc<Mutex<Option<Remembered>>>,
}

/// When the probe last asked, and what it learnt.
type Remembered = (Instant, Result<(), MissingBackend>);

impl Probe {
    pub fn new(bus: Bus) -> Self {
        Probe { bus, last: Arc::new(Mutex::new(None)) }
    }

    pub fn check(&self) -> Result<(), MissingBackend> {
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, answer)) = last.as_ref().filter(|(at, _)| at.elapsed() < PROBE_CACHE) {
            return answer.clone();
        }
        let answer = self.ask();
        *last = Some((Instant::now(), answer.clone()));
        answer
    }

    /// Bounded by [`PROBE_TIMEOUT`] (see [`crate::dbus::block_on_bounded`]).
    fn ask(&self) -> Result<(), MissingBackend> {
        let address = self.bus.address()?;
        let shown = address.to_string();
        let asked = crate::dbus::block_on_bounded(PROBE_TIMEOUT, crate::dbus::service_on_bus(&address, PORTAL));
        match asked {
            Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(MissingBackend::new(
                format!("no desktop portal: nothing on the session D-Bus at {shown} owns or can start {PORTAL}"),
                PORTAL_PACKAGES,
            )),
            Some(Err(error)) => Err(MissingBackend::new(
                format!("cannot reach the session D-Bus at {shown} ({error})"),
                "check that DBUS_SESSION_BUS_ADDRESS names your session's bus",
            )),
            None => Err(MissingBackend::new(
                format!("the session D-Bus at {shown} did not answer within {} ms", PROBE_TIMEOUT.as_millis()),
                "the bus is hung: restart your session's dbus",
            )),
        }
    }
}

/// One screenshot the portal took, decoded.
#[derive(Debug)]
pub struct Shot {
    pub pixels: Pixels,
    /// The portal's file, and whether it was removed after reading.
    pub file: PathBuf,
    pub removed: bool,
    /// From the call to the decoded pixels.
    pub took: Duration,
}

/// Takes a screenshot of the whole desktop through the portal on the bus at `address`.
pub async fn capture(address: &Address, timeout: Duration, cancel: &CancellationToken) -> Result<Shot, String> {
    let started = Instant::now();
    let since = SystemTime::now();
    // One deadline for the whole exchange, connecting included (a hung bus is bounded too).
    let deadline = tokio::time::Instant::now() + timeout;
    let connection = connect(address, timeout, deadline, cancel).await?;
    let token = handle_token();
    let options: HashMap<&str, Variant<'_>> =
        HashMap::from([("handle_token", Variant::from(token.as_str())), ("interactive", Variant::from(false))]);
    let body = ("", options);
    let asked = request(&connection, SCREENSHOT, "Screenshot", &body, &token, "screenshot");
    let (code, results) = tokio::select! {
        () = cancel.cancelled() => {
            close_request(&connection, &token).await;
            return Err(clawmcp_mcp::CANCELLED.into());
        }
        answered = tokio::time::timeout_at(deadline, asked) => match answered {
            Ok(answer) => answer?,
            Err(_) => {
                close_request(&connection, &token).await;
                return Err(format!(
                    "the desktop portal did not deliver the screenshot within {} (a permission dialog \
                     nobody answered, or a hung portal backend); the request was closed. Allow screenshots \
                     for this program in your desktop's settings, or check the portal's log \
                     (journalctl --user -u xdg-desktop-portal)",
                    shown_duration(timeout)
                ));
            }
        },
    };
    match code {
        0 => {}
        1 => {
            return Err("the screenshot was refused (or its dialog cancelled) on the desktop (portal response 1); \
                         allow screenshots for this program in your desktop's settings"
                .to_owned());
        }
        other => {
            return Err(format!(
                "the desktop portal could not take the screenshot (response {other}); its backend's log \
                 (journalctl --user -u xdg-desktop-portal) says why"
            ));
        }
    }
    let uri = results
        .get("uri")
        .and_then(|value| <&str>::try_from(&**value).ok())
        .ok_or("the desktop portal answered without the screenshot's uri")?
        .to_owned();
    let file = file_path(&uri)?;
    tokio::task::spawn_blocking(move || {
        let (pixels, removed) = read_and_remove(&file, since)?;
        Ok(Shot { pixels, file, removed, took: started.elapsed() })
    })
    .await
    .map_err(|error| format!("reading the screenshot failed: {error}"))?
}

/// `30 s`, or `250 ms` when not whole seconds.
pub(super) fn shown_duration(duration: Duration) -> String {
    match duration.subsec_millis() {
        0 => format!("{} s", duration.as_secs()),
        _ => format!("{} ms", duration.as_millis()),
    }
}

/// A connection to the session bus at `address`, made by `deadline` (a hung bus is bounded too:
/// `timeout` is what the error says) unless `cancel` fires first.
pub(super) async fn connect(
    address: &Address,
    timeout: Duration,
    deadline: tokio::time::Instant,
    cancel: &CancellationToken,
) -> Result<zbus::Connection, String> {
    let shown = address.to_string();
    let connecting = zbus::connection::Builder::address(address.clone()).build();
    tokio::select! {
        () = cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.into()),
        done = tokio::time::timeout_at(deadline, connecting) => match done {
            Ok(connected) => connected.map_err(|error| format!("cannot reach the session D-Bus at {shown}: {error}")),
            Err(_) => Err(format!("the session D-Bus at {shown} did not answer within {}", shown_duration(timeout))),
        },
    }
}

/// One portal Request: calls `method` of `interface` with `body` (whose options carry
/// `handle_token: token`) and waits, unbounded (the caller bounds it and, when it gives up,
/// calls [`close_request`]), for the Request's `Response (u code, a{sv} results)`.
///
/// The subscription to `Response` on the Request's path (known in advance from our unique name
/// and `token`) is made before the call, so the answer cannot slip past. Only the portal that
/// answered the call may answer the Request: any other peer on the bus can emit a signal on
/// that path (the bus stamps the true sender on every message). `what` names the request in
/// errors ("screenshot").
pub(super) async fn request<B>(
    connection: &zbus::Connection,
    interface: &str,
    method: &str,
    body: &B,
    token: &str,
    what: &str,
) -> Result<(u32, HashMap<String, OwnedVariant>), String>
where
    B: serde::Serialize + zbus::DynamicType,
{
    let unreachable =
        |error: zbus::Error| format!("cannot subscribe to the portal's answer on the session D-Bus: {error}");
    let request_path = request_path(connection, token).map_err(unreachable)?;
    let rule = zbus::MatchRule::builder()
        .msg_type(MessageType::Signal)
        .interface(REQUEST)
        .member("Response")
        .path(request_path.clone())
        .build()
        .map_err(unreachable)?;
    let mut responses = zbus::MessageStream::for_match_rule(rule, connection, None).await.map_err(unreachable)?;
    let reply = connection
        .call_method(Some(PORTAL), PORTAL_PATH, Some(interface), method, body)
        .await
        .map_err(|error| format!("the desktop portal refused the {what}: {error}"))?;
    let handle: OwnedObjectPath =
        reply.body().deserialize().map_err(|error| format!("the desktop portal answered oddly: {error}"))?;
    if handle.as_str() != request_path.as_str() {
        // A portal that ignores handle_token (very old ones) answers elsewhere: we listen on
        // the wrong path, so stop rather than wait out the deadline.
        close(connection, &handle).await;
        return Err(format!("the desktop portal answered on {handle}, not on {request_path}: it is too old"));
    }
    let portal = reply.header().sender().map(|sender| sender.to_owned());
    let response = loop {
        match responses.next().await {
            Some(Ok(message)) if message.header().sender().map(|s| s.to_owned()) == portal => break message,
            Some(_) => continue,
            None => return Err("the session D-Bus closed the connection".to_owned()),
        }
    };
    response.body().deserialize().map_err(|error| format!("the desktop portal answered oddly: {error}"))
}

/// Closes the Request of `token` (abandoned: timed out or cancelled) so the portal drops it and
/// its dialog; best effort, bounded.
pub(super) async fn close_request(connection: &zbus::Connection, token: &str) {
    if let Ok(path) = request_path(connection, token) {
        close(connection, &path).await;
    }
}

/// A fresh `handle_token` (letters, digits and `_` only, as the portal requires).
pub(super) fn handle_token() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    format!("clawmcp_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Where the portal puts the Request: `/org/freedesktop/portal/desktop/request/SENDER/TOKEN`, SENDER
/// our unique name without the `:` and with `.` as `_`.
fn request_path(connection: &zbus::Connection, token: &str) -> zbus::Result<OwnedObjectPath> {
    let unique = connection.unique_name().ok_or(zbus::Error::Failure("no unique name on the bus".into()))?;
    let sender = unique.as_str().trim_start_matches(':').replace('.', "_");
    OwnedObjectPath::try_from(format!("{PORTAL_PATH}/request/{sender}/{token}"))
}

/// Closes an abandoned Request so the portal drops it (and its dialog); best effort, bounded.
async fn close(connection: &zbus::Connection, path: &ObjectPath<'_>) {
    let closing = connection.call_method(Some(PORTAL), path, Some(REQUEST), "Close", &());
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, closing).await;
}

/// The local path of a `file://` uri (percent-escapes decoded); anything else is refused.
fn file_path(uri: &str) -> Result<PathBuf, String> {
    use std::os::unix::ffi::OsStringExt;
    let refused = || format!("the desktop portal returned `{uri}`, not a local file:// path");
    let rest = uri.strip_prefix("file://").ok_or_else(refused)?;
    // `file://localhost/p` and `file:///p` are both local.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err(refused());
    }
    let bytes = rest.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(refused)?;
            decoded.push(byte);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    let path = PathBuf::from(OsString::from_vec(decoded));
    // Plain components only, so the path says where the file is without resolving anything.
    match path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))) {
        true => Ok(path),
        false => Err(refused()),
    }
}

/// Reads the PNG at `path` (not through a symlink, [`MAX_FILE_BYTES`] and [`MAX_PIXELS`] at most)
/// and removes it when [`ours_to_remove`] says so. Returns the pixels and whether it was removed.
fn read_and_remove(path: &Path, since: SystemTime) -> Result<(Pixels, bool), String> {
    let failed =
        |error: &dyn std::fmt::Display| format!("cannot read the portal's screenshot {}: {error}", path.display());
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| failed(&e))?;
    let opened = file.metadata().map_err(|e| failed(&e))?;
    if !opened.file_type().is_file() {
        return Err(failed(&"it is not a regular file"));
    }
    if opened.len() > MAX_FILE_BYTES {
        return Err(failed(&format_args!(
            "it is {} bytes, more than the {MAX_FILE_BYTES} this node reads",
            opened.len()
        )));
    }
    let mut bytes = Vec::with_capacity(opened.len() as usize);
    // One byte past the limit tells a file that grew since the check.
    file.by_ref().take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| failed(&e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(failed(&format_args!("it grew past the {MAX_FILE_BYTES} bytes this node reads")));
    }
    let removed = ours_to_remove(path, &opened, since) && std::fs::remove_file(path).is_ok();
    let pixels = imaging::decode_png(&bytes, MAX_PIXELS).map_err(|e| failed(&e))?;
    Ok((pixels, removed))
}

/// Whether the portal's file is plainly one it made for this call, so removing it loses nothing
/// of the user's: a regular file owned by us, written since the call began, still the file we
/// opened, in a directory reached without symlinks under the runtime, temporary or pictures
/// directory.
fn ours_to_remove(path: &Path, opened: &std::fs::Metadata, since: SystemTime) -> bool {
    let owned = opened.uid() == nix::unistd::geteuid().as_raw();
    let fresh = opened.modified().is_ok_and(|written| written + MTIME_SLACK >= since);
    let same = std::fs::symlink_metadata(path)
        .is_ok_and(|now| now.file_type().is_file() && now.dev() == opened.dev() && now.ino() == opened.ino());
    let Some(parent) = path.parent() else { return false };
    let plain_parent = std::fs::canonicalize(parent).is_ok_and(|real| real == parent);
    let roots =
        [std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from), Some(std::env::temp_dir()), dirs::picture_dir()];
    let under_a_root = roots
        .into_iter()
        .flatten()
        .filter(|root| root.is_absolute() && root.parent().is_some())
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .any(|root| parent.starts_with(root));
    owned && fresh && same && plain_parent && under_a_root
}

#[cfg(test)]
pub(super) mod tests;
