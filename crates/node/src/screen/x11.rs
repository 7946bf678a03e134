//! One X11 capture: the monitors (RandR), the pixels of one (MIT-SHM where the server offers
//! it, else core `GetImage`; Z-pixmap either way), and the pointer drawn on top (XFixes
//! `GetCursorImage`); or just one monitor's rectangle, for `screen.record`. Blocking: run it on
//! the blocking pool.
//!
//! Shared memory matters for size: a 1920x1080 screen is 8 MB of pixels, which core `GetImage`
//! copies through the X socket and into a buffer; with MIT-SHM 1.2 the server writes them into a
//! segment it created and passed us as a file descriptor, and we read them in place. A server
//! that cannot (a remote display over ssh, an old server) gets the core request.
//!
//! The node keeps its connection and its segment between captures (one [`Session`], released
//! after [`IDLE_RELEASE`] without a capture): a one-shot screenshot process pays for connecting,
//! for the server creating 8 MB of fresh shared memory and for faulting every page of it in on
//! both sides, each time; a second capture on a kept session pays for the copy alone.
#![allow(unsafe_code)] // One `mmap` of the segment the X server gives us (see `Segment::create`).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use x11rb::connection::{Connection, RequestConnection as _};
use x11rb::protocol::randr::ConnectionExt as _;
use x11rb::protocol::shm::ConnectionExt as _;
use x11rb::protocol::xfixes::ConnectionExt as _;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, ImageFormat, ImageOrder};

/// One monitor of the display, in root-window pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Monitor {
    /// RandR's name (`DP-1`, `HDMI-A-0`; Xvfb's whole screen is `screen`).
    pub name: String,
    pub x: i16,
    pub y: i16,
    pub width: u16,
    pub height: u16,
    /// The physical size RandR reports (0 when the server does not know it).
    pub width_mm: u32,
    pub height_mm: u32,
    pub primary: bool,
}

/// A monitor's pixels, RGB8 rows top to bottom.
#[derive(Debug)]
pub struct Captured {
    pub rgb: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub monitors: Vec<Monitor>,
    pub index: usize,
    /// The desktop's scale factor: `Xft.dpi` / 96, as toolkits read it (X11 has one for the
    /// whole display, not one per monitor); 1 when unset.
    pub scale_factor: f64,
    /// Whether the pixels came through shared memory.
    pub shared_memory: bool,
}

/// Why a capture failed, in words for the caller.
pub type CaptureError = String;

/// How long the node keeps its X connection and shared segment after the last capture: long
/// enough for an agent's run of screenshots, short enough that an idle node holds neither.
pub const IDLE_RELEASE: Duration = Duration::from_secs(30);

/// The kept session, if any (one display at a time: the node captures the display it runs on).
static SESSION: Mutex<Option<Session>> = Mutex::new(None);

/// A connection to one display and the MIT-SHM segment captures of it reuse.
struct Session {
    display: Option<String>,
    conn: x11rb::rust_connection::RustConnection,
    screen_number: usize,
    /// `None` until the first capture that can use shared memory; stays `None` on a server
    /// without MIT-SHM 1.2.
    segment: Option<Segment>,
    shm_usable: bool,
    last_used: Instant,
    /// The RGB buffer of an earlier capture, handed back by [`recycle`] once its answer was
    /// encoded. A fresh 6 MB buffer costs its page faults on every capture (about 3 ms for a
    /// 1080p screen here, a third of a snapshot); a reused one is already mapped.
    spare: Vec<u8>,
}

/// A server-created shared segment, attached on the server and mapped read-only here.
struct Segment {
    id: u32,
    map: memmap2::Mmap,
}

/// The monitors of `display`, then the pixels of monitor `index`, with the pointer if asked.
/// Captures on the kept session; one that fails on it (the server restarted, the connection
/// broke) is tried once more on a fresh connection before the error is the caller's.
pub fn capture(display: Option<&str>, index: usize, include_pointer: bool) -> Result<Captured, CaptureError> {
    let mut kept = lock_session();
    let reused = kept.as_ref().is_some_and(|session| session.display.as_deref() == display);
    if !reused {
        *kept = Some(Session::open(display)?);
        release_when_idle();
    }
    let session = kept.as_mut().expect("a session was just opened");
    match session.capture(index, include_pointer) {
        Ok(captured) => Ok(captured),
        Err(Failure::Request(_)) if reused => {
            *kept = Some(Session::open(display)?);
            kept.as_mut()
                .expect("a session was just opened")
                .capture(index, include_pointer)
                .map_err(Failure::into_message)
        }
        Err(error) => {
            if matches!(error, Failure::Request(_)) {
                *kept = None;
            }
            Err(error.into_message())
        }
    }
}

/// Hands the buffer of a capture's pixels back to the kept session, for the next capture to
/// fill. Dropped when there is no session (it was released, or replaced by another display's).
pub fn recycle(buffer: Vec<u8>) {
    if let Some(session) = lock_session().as_mut()
        && session.spare.capacity() < buffer.capacity()
    {
        session.spare = buffer;
    }
}

/// Why a capture on a session failed: a request on a broken connection (worth one retry on a
/// fresh one), or an answer the caller must hear (no such monitor, an unsupported depth).
enum Failure {
    Request(String),
    Refused(String),
}

impl Failure {
    fn into_message(self) -> CaptureError {
        match self {
            Failure::Request(message) | Failure::Refused(message) => message,
        }
    }
}

fn lock_session() -> MutexGuard<'static, Option<Session>> {
    // A capture that panicked left nothing half-written that the next one reads: the session
    // is replaced or reused whole.
    SESSION.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drops the kept session once it has gone [`IDLE_RELEASE`] without a capture (one watcher
/// thread per opened session; it ends with the session it watches).
fn release_when_idle() {
    let spawned = std::thread::Builder::new().name("x11-session-idle".into()).spawn(|| {
        loop {
            std::thread::sleep(IDLE_RELEASE / 3);
            if release_if_idle(&mut lock_session(), Instant::now()) {
                return;
            }
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the X session's idle watcher; the session is kept until the next capture");
    }
}

/// Drops `kept` if it is idle at `now`; whether there is no session left to watch.
fn release_if_idle(kept: &mut Option<Session>, now: Instant) -> bool {
    match kept.as_ref() {
        Some(session) if now.saturating_duration_since(session.last_used) < IDLE_RELEASE => false,
        // Gone, or idle: released (a session opened later has a watcher of its own).
        _ => {
            *kept = None;
            true
        }
    }
}

impl Session {
    fn open(display: Option<&str>) -> Result<Session, CaptureError> {
        let (conn, screen_number) = connect(display)?;
        let shm_usable = conn.extension_information(x11rb::protocol::shm::X11_EXTENSION_NAME).ok().flatten().is_some()
            && conn
                .shm_query_version()
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .is_some_and(|v| (v.major_version, v.minor_version) >= (1, 2));
        Ok(Session {
            display: display.map(str::to_owned),
            conn,
            screen_number,
            segment: None,
            shm_usable,
            last_used: Instant::now(),
            spare: Vec::new(),
        })
    }

    fn capture(&mut self, index: usize, include_pointer: bool) -> Result<Captured, Failure> {
        self.last_used = Instant::now();
        let conn = &self.conn;
        let root = conn.setup().roots[self.screen_number].root;
        let (monitor, monitors) = pick(conn, self.screen_number, index).map_err(Failure::Refused)?;
        let (width, height) = (u32::from(monitor.width), u32::from(monitor.height));
        let expected = (width * height * 4) as usize;
        let failed = |error: &dyn std::fmt::Display| Failure::Request(format!("Capture failed: {error}"));
        let shared = match self.shm_usable {
            true => shm_capture(conn, &mut self.segment, root, &monitor),
            false => None,
        };
        let copied;
        let (depth, pixels, shared_memory): (u8, &[u8], bool) = match shared {
            Some(depth) => (depth, &self.segment.as_ref().expect("shm_capture keeps its segment").map, true),
            None => {
                self.shm_usable = false;
                let image = conn
                    .get_image(ImageFormat::Z_PIXMAP, root, monitor.x, monitor.y, monitor.width, monitor.height, !0)
                    .map_err(|e| failed(&e))?
                    .reply()
                    .map_err(|e| failed(&e))?;
                copied = image.data;
                (image.depth, &copied, false)
            }
        };
        let mut rgb = std::mem::take(&mut self.spare);
        to_rgb(conn, depth, pixels, expected, &mut rgb).map_err(Failure::Refused)?;
        if include_pointer {
            draw_pointer(conn, &monitor, &mut rgb, width, height);
        }
        let scale_factor = xft_dpi(conn, root).map_or(1.0, |dpi| dpi / 96.0);
        Ok(Captured { rgb, width, height, monitors, index, scale_factor, shared_memory })
    }
}

/// RGB8 into `rgb` (resized; its allocation is reused) from the first `expected` bytes of a
/// Z-pixmap of `depth`, or why that depth is not one we read.
fn to_rgb(
    conn: &impl Connection,
    depth: u8,
    pixels: &[u8],
    expected: usize,
    rgb: &mut Vec<u8>,
) -> Result<(), CaptureError> {
    let bits_per_pixel = conn
        .setup()
        .pixmap_formats
        .iter()
        .find(|format| format.depth == depth)
        .map(|format| format.bits_per_pixel)
        .unwrap_or(32);
    if depth < 24 || bits_per_pixel != 32 {
        return Err(format!(
            "Capture failed: the display uses depth {depth} at {bits_per_pixel} bits per pixel; only 24/32-bit true \
             colour is supported"
        ));
    }
    if pixels.len() < expected {
        return Err(format!("Capture failed: the server sent {} bytes where {expected} were due", pixels.len()));
    }
    // Every byte is written below: the fill only happens when the size changed.
    rgb.resize(expected / 4 * 3, 0);
    // The byte order is chosen once, outside the loop: with the word reader picked at run time
    // as a function pointer, each pixel was an indirect call and the loop did not vectorise
    // (4-6 ms at 1080p, against 0.8 ms now).
    match conn.setup().image_byte_order == ImageOrder::LSB_FIRST {
        true => bgrx_to_rgb(&pixels[..expected], rgb, u32::from_le_bytes),
        false => bgrx_to_rgb(&pixels[..expected], rgb, u32::from_be_bytes),
    }
    Ok(())
}

/// One 32-bit word per pixel, 0x00RRGGBB once read by `word` (the server's byte order), into
/// RGB8. Generic over `word` so each byte order is its own inlined, vectorised loop.
#[inline(always)]
fn bgrx_to_rgb(pixels: &[u8], rgb: &mut [u8], word: impl Fn([u8; 4]) -> u32) {
    for (out, pixel) in rgb.chunks_exact_mut(3).zip(pixels.chunks_exact(4)) {
        let value = word([pixel[0], pixel[1], pixel[2], pixel[3]]);
        out.copy_from_slice(&[(value >> 16) as u8, (value >> 8) as u8, value as u8]);
    }
}

/// Monitor `index` of `display` and all its monitors, without capturing: what `screen.record`
/// hands to ffmpeg's x11grab.
pub fn monitor(display: Option<&str>, index: usize) -> Result<(Monitor, Vec<Monitor>), CaptureError> {
    let (conn, screen_number) = connect(display)?;
    pick(&conn, screen_number, index)
}

fn connect(display: Option<&str>) -> Result<(x11rb::rust_connection::RustConnection, usize), CaptureError> {
    x11rb::connect(display).map_err(|error| {
        format!(
            "Screen capture not available: cannot open the X display {} ({error})",
            display.map_or_else(|| "named by DISPLAY".to_owned(), |d| format!("`{d}`"))
        )
    })
}

/// Monitor `index` of the screen, or why there is no such monitor.
fn pick(conn: &impl Connection, screen_number: usize, index: usize) -> Result<(Monitor, Vec<Monitor>), CaptureError> {
    let screen = &conn.setup().roots[screen_number];
    let monitors = monitors(conn, screen.root, screen.width_in_pixels, screen.height_in_pixels);
    match monitors.get(index).cloned() {
        Some(monitor) => Ok((monitor, monitors)),
        None => Err(format!(
            "screenIndex {index} does not exist: this display has {} monitor(s), 0..{}",
            monitors.len(),
            monitors.len() - 1
        )),
    }
}

/// `monitor`'s pixels into the kept segment (created, or re-created at a new size, when it does
/// not fit), and their depth; `None` when the server cannot (then the core request serves).
fn shm_capture(conn: &impl Connection, kept: &mut Option<Segment>, root: u32, monitor: &Monitor) -> Option<u8> {
    let size = u32::from(monitor.width).checked_mul(u32::from(monitor.height))?.checked_mul(4)?;
    if kept.as_ref().is_none_or(|segment| segment.map.len() != size as usize) {
        if let Some(old) = kept.take() {
            let _ = conn.shm_detach(old.id).map(|cookie| cookie.ignore_error());
        }
        *kept = Some(Segment::create(conn, size)?);
    }
    let segment = kept.as_ref()?;
    let image = conn
        .shm_get_image(
            root,
            monitor.x,
            monitor.y,
            monitor.width,
            monitor.height,
            !0,
            ImageFormat::Z_PIXMAP.into(),
            segment.id,
            0,
        )
        .ok()
        .and_then(|cookie| cookie.reply().ok());
    match image {
        Some(image) if image.size as usize <= segment.map.len() => Some(image.depth),
        _ => {
            // A segment the server no longer takes is no use to the next capture either.
            if let Some(old) = kept.take() {
                let _ = conn.shm_detach(old.id).map(|cookie| cookie.ignore_error());
            }
            None
        }
    }
}

impl Segment {
    /// A fresh MIT-SHM 1.2 segment of `size` bytes (the server allocates it and passes its
    /// descriptor), mapped read-only.
    fn create(conn: &impl Connection, size: u32) -> Option<Segment> {
        let id = conn.generate_id().ok()?;
        let created = conn.shm_create_segment(id, size, false).ok()?.reply().ok()?;
        let file = std::fs::File::from(created.shm_fd);
        // SAFETY: the mapping is read-only and private to the node's one kept session, whose
        // mutex serialises every use. The server writes into the segment only while it answers
        // a `ShmGetImage` of ours, and we read it only after that reply arrived and before the
        // next request, under the same lock; nobody else holds the segment (the server created
        // it for this connection).
        let mapped = unsafe { memmap2::MmapOptions::new().len(size as usize).map(&file) };
        match mapped {
            Ok(map) => Some(Segment { id, map }),
            Err(_) => {
                let _ = conn.shm_detach(id).map(|cookie| cookie.ignore_error());
                None
            }
        }
    }
}

/// The `Xft.dpi` resource of the root window's `RESOURCE_MANAGER` (what `xrdb` sets and GTK and
/// Qt read as the desktop's scale), if set.
fn xft_dpi(conn: &impl Connection, root: u32) -> Option<f64> {
    let reply = conn
        .get_property(false, root, AtomEnum::RESOURCE_MANAGER, AtomEnum::STRING, 0, 64 * 1024)
        .ok()?
        .reply()
        .ok()?;
    let text = String::from_utf8_lossy(&reply.value);
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| key.trim() == "Xft.dpi")
        .and_then(|(_, value)| value.trim().parse::<f64>().ok())
        .filter(|dpi| dpi.is_finite() && *dpi > 0.0)
}

/// RandR's monitors (primary first, then left to right); the whole root when RandR has none.
fn monitors(conn: &impl Connection, root: u32, width: u16, height: u16) -> Vec<Monitor> {
    let whole =
        vec![Monitor { name: "screen".into(), x: 0, y: 0, width, height, width_mm: 0, height_mm: 0, primary: true }];
    let Ok(reply) = conn.randr_get_monitors(root, true).map(|cookie| cookie.reply()) else { return whole };
    let Ok(reply) = reply else { return whole };
    let mut found: Vec<Monitor> = reply
        .monitors
        .iter()
        .filter(|m| m.width > 0 && m.height > 0)
        .map(|m| Monitor {
            name: conn
                .get_atom_name(m.name)
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .map(|reply| String::from_utf8_lossy(&reply.name).into_owned())
                .unwrap_or_default(),
            x: m.x,
            y: m.y,
            width: m.width,
            height: m.height,
            width_mm: m.width_in_millimeters,
            height_mm: m.height_in_millimeters,
            primary: m.primary,
        })
        .collect();
    if found.is_empty() {
        return whole;
    }
    found.sort_by_key(|m| (!m.primary, m.x, m.y, m.name.clone()));
    found
}

/// Composites the cursor image (premultiplied ARGB) over the capture, if the server can say
/// where and what it is. A server without XFixes leaves the capture as it is.
fn draw_pointer(conn: &impl Connection, monitor: &Monitor, rgb: &mut [u8], width: u32, height: u32) {
    if conn.xfixes_query_version(4, 0).ok().and_then(|cookie| cookie.reply().ok()).is_none() {
        return;
    }
    let Some(cursor) = conn.xfixes_get_cursor_image().ok().and_then(|cookie| cookie.reply().ok()) else { return };
    let left = i32::from(cursor.x) - i32::from(cursor.xhot) - i32::from(monitor.x);
    let top = i32::from(cursor.y) - i32::from(cursor.yhot) - i32::from(monitor.y);
    for row in 0..i32::from(cursor.height) {
        for column in 0..i32::from(cursor.width) {
            let (x, y) = (left + column, top + row);
            if x < 0 || y < 0 || x >= width as i32 || y >= height as i32 {
                continue;
            }
            let argb = cursor.cursor_image[(row * i32::from(cursor.width) + column) as usize];
            let alpha = argb >> 24;
            if alpha == 0 {
                continue;
            }
            let at = ((y as u32 * width + x as u32) * 3) as usize;
            for (channel, shift) in [16u32, 8, 0].into_iter().enumerate() {
                let source = (argb >> shift) & 0xff;
                let below = u32::from(rgb[at + channel]);
                // Premultiplied: out = src + dst * (1 - a).
                rgb[at + channel] = (source + below * (255 - alpha) / 255).min(255) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::xvfb;

    #[test]
    fn a_kept_session_is_released_once_idle_for_the_whole_bound_and_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let (_server, display) = xvfb(dir.path());
        let mut kept = Some(Session::open(Some(&display)).unwrap());
        let used = kept.as_ref().unwrap().last_used;
        assert!(!release_if_idle(&mut kept, used + IDLE_RELEASE - Duration::from_millis(1)));
        assert!(kept.is_some(), "just under the bound: kept");
        assert!(release_if_idle(&mut kept, used + IDLE_RELEASE));
        assert!(kept.is_none(), "at the bound: released");
        assert!(release_if_idle(&mut kept, used), "nothing left to watch");
    }
}
