//! One X11 capture: the monitors (RandR), the pixels of one (MIT-SHM where the server offers
//! it, else core `GetImage`; Z-pixmap either way), and the pointer drawn on top (XFixes
//! `GetCursorImage`); or just one monitor's rectangle, for `screen.record`. Blocking: run it on
//! the blocking pool.
//!
//! Shared memory matters for size: a 1920x1080 screen is 8 MB of pixels, which core `GetImage`
//! copies through the X socket and into a buffer; with MIT-SHM 1.2 the server writes them into a
//! segment it created and passed us as a file descriptor, and we read them in place. A server
//! that cannot (a remote display over ssh, an old server) gets the core request.
#![allow(unsafe_code)] // One `mmap` of the segment the X server gives us (see `shm_pixels`).

use std::ops::Deref;

use x11rb::connection::Connection;
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

/// The monitors of `display`, then the pixels of monitor `index`, with the pointer if asked.
pub fn capture(display: Option<&str>, index: usize, include_pointer: bool) -> Result<Captured, CaptureError> {
    let (conn, screen_number) = connect(display)?;
    let root = conn.setup().roots[screen_number].root;
    let (monitor, monitors) = pick(&conn, screen_number, index)?;
    let (width, height) = (u32::from(monitor.width), u32::from(monitor.height));
    let (depth, pixels, shared_memory) = match shm_pixels(&conn, root, &monitor) {
        Some((depth, map)) => (depth, Pixels::Shared(map), true),
        None => {
            let failed = |error: &dyn std::fmt::Display| format!("Capture failed: {error}");
            let image = conn
                .get_image(ImageFormat::Z_PIXMAP, root, monitor.x, monitor.y, monitor.width, monitor.height, !0)
                .map_err(|e| failed(&e))?
                .reply()
                .map_err(|e| failed(&e))?;
            (image.depth, Pixels::Copied(image.data), false)
        }
    };
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
    let expected = (width * height * 4) as usize;
    if pixels.len() < expected {
        return Err(format!("Capture failed: the server sent {} bytes for {width}x{height}", pixels.len()));
    }
    let lsb_first = conn.setup().image_byte_order == ImageOrder::LSB_FIRST;
    let mut rgb = vec![0u8; (width * height * 3) as usize];
    // One 32-bit word per pixel, 0x00RRGGBB in the server's byte order (read as a word rather
    // than byte by byte: the loop then vectorises, about 3x faster on a 1080p screen).
    let word = if lsb_first { u32::from_le_bytes } else { u32::from_be_bytes };
    for (out, pixel) in rgb.chunks_exact_mut(3).zip(pixels[..expected].chunks_exact(4)) {
        let value = word([pixel[0], pixel[1], pixel[2], pixel[3]]);
        out.copy_from_slice(&[(value >> 16) as u8, (value >> 8) as u8, value as u8]);
    }
    drop(pixels);
    if include_pointer {
        draw_pointer(&conn, &monitor, &mut rgb, width, height);
    }
    let scale_factor = xft_dpi(&conn, root).map_or(1.0, |dpi| dpi / 96.0);
    Ok(Captured { rgb, width, height, monitors, index, scale_factor, shared_memory })
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

/// A capture's raw Z-pixmap bytes: mapped from the server's segment, or read off the socket.
enum Pixels {
    Shared(memmap2::Mmap),
    Copied(Vec<u8>),
}

impl Deref for Pixels {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Pixels::Shared(map) => map,
            Pixels::Copied(data) => data,
        }
    }
}

/// `monitor`'s pixels through a fresh MIT-SHM 1.2 segment (the server allocates it and passes
/// its descriptor), or `None` when the server cannot (then the core request serves).
fn shm_pixels(conn: &impl Connection, root: u32, monitor: &Monitor) -> Option<(u8, memmap2::Mmap)> {
    conn.extension_information(x11rb::protocol::shm::X11_EXTENSION_NAME).ok()??;
    let version = conn.shm_query_version().ok()?.reply().ok()?;
    if (version.major_version, version.minor_version) < (1, 2) {
        return None;
    }
    let size = u32::from(monitor.width).checked_mul(u32::from(monitor.height))?.checked_mul(4)?;
    let segment = conn.generate_id().ok()?;
    let created = conn.shm_create_segment(segment, size, false).ok()?.reply().ok()?;
    let file = std::fs::File::from(created.shm_fd);
    // From here on the server holds the segment: detach it on every path.
    let image = conn
        .shm_get_image(
            root,
            monitor.x,
            monitor.y,
            monitor.width,
            monitor.height,
            !0,
            ImageFormat::Z_PIXMAP.into(),
            segment,
            0,
        )
        .ok()
        .and_then(|cookie| cookie.reply().ok());
    let _ = conn.shm_detach(segment).map(|cookie| cookie.ignore_error());
    let image = image?;
    // SAFETY: the mapping is read-only and private to this capture. The segment is a memfd the
    // server created for this one request and has finished writing (its reply arrived); it is
    // detached, so nothing writes to it while we read, and nobody else holds it.
    let map = unsafe { memmap2::MmapOptions::new().len(size as usize).map(&file) }.ok()?;
    (image.size as usize <= map.len()).then_some((image.depth, map))
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
