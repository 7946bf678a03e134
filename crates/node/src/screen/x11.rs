//! One X11 capture: the monitors (RandR), the pixels of one (core `GetImage`, Z-pixmap), and the
//! pointer drawn on top (XFixes `GetCursorImage`); or just one monitor's rectangle, for
//! `screen.record`. Blocking: run it on the blocking pool.

use x11rb::connection::Connection;
use x11rb::protocol::randr::ConnectionExt as _;
use x11rb::protocol::xfixes::ConnectionExt as _;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder};

/// One monitor of the display, in root-window pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Monitor {
    pub x: i16,
    pub y: i16,
    pub width: u16,
    pub height: u16,
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
}

/// Why a capture failed, in words for the caller.
pub type CaptureError = String;

/// The monitors of `display`, then the pixels of monitor `index`, with the pointer if asked.
pub fn capture(display: Option<&str>, index: usize, include_pointer: bool) -> Result<Captured, CaptureError> {
    let (conn, screen_number) = connect(display)?;
    let root = conn.setup().roots[screen_number].root;
    let (monitor, monitors) = pick(&conn, screen_number, index)?;
    let failed = |error: &dyn std::fmt::Display| format!("Capture failed: {error}");
    let image = conn
        .get_image(ImageFormat::Z_PIXMAP, root, monitor.x, monitor.y, monitor.width, monitor.height, !0)
        .map_err(|e| failed(&e))?
        .reply()
        .map_err(|e| failed(&e))?;
    let bits_per_pixel = conn
        .setup()
        .pixmap_formats
        .iter()
        .find(|format| format.depth == image.depth)
        .map(|format| format.bits_per_pixel)
        .unwrap_or(32);
    if image.depth < 24 || bits_per_pixel != 32 {
        return Err(format!(
            "Capture failed: the display uses depth {} at {bits_per_pixel} bits per pixel; only 24/32-bit true colour \
             is supported",
            image.depth
        ));
    }
    let lsb_first = conn.setup().image_byte_order == ImageOrder::LSB_FIRST;
    let (width, height) = (u32::from(monitor.width), u32::from(monitor.height));
    let mut rgb = Vec::with_capacity(image.data.len() / 4 * 3);
    for pixel in image.data.chunks_exact(4) {
        match lsb_first {
            // B, G, R, X in memory.
            true => rgb.extend_from_slice(&[pixel[2], pixel[1], pixel[0]]),
            false => rgb.extend_from_slice(&[pixel[1], pixel[2], pixel[3]]),
        }
    }
    if rgb.len() != (width * height * 3) as usize {
        return Err(format!("Capture failed: the server sent {} bytes for {width}x{height}", image.data.len()));
    }
    if include_pointer {
        draw_pointer(&conn, &monitor, &mut rgb, width, height);
    }
    Ok(Captured { rgb, width, height, monitors, index })
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
    match monitors.get(index).copied() {
        Some(monitor) => Ok((monitor, monitors)),
        None => Err(format!(
            "screenIndex {index} does not exist: this display has {} monitor(s), 0..{}",
            monitors.len(),
            monitors.len() - 1
        )),
    }
}

/// RandR's monitors (primary first, then left to right); the whole root when RandR has none.
fn monitors(conn: &impl Connection, root: u32, width: u16, height: u16) -> Vec<Monitor> {
    let whole = vec![Monitor { x: 0, y: 0, width, height, primary: true }];
    let Ok(reply) = conn.randr_get_monitors(root, true).map(|cookie| cookie.reply()) else { return whole };
    let Ok(reply) = reply else { return whole };
    let mut found: Vec<Monitor> = reply
        .monitors
        .iter()
        .filter(|m| m.width > 0 && m.height > 0)
        .map(|m| Monitor { x: m.x, y: m.y, width: m.width, height: m.height, primary: m.primary })
        .collect();
    if found.is_empty() {
        return whole;
    }
    found.sort_by_key(|m| (!m.primary, m.x, m.y));
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
