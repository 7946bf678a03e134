//! The capture floor `bench/screen.sh` measures `screen.snapshot` against: one process that
//! connects to the X display, fetches the root window's pixels once and exits, with no
//! encoding, no scaling and no transport. It is the least any screenshot tool must do.
//!
//! Usage: `clawmcp-bench-x11grab core|shm` (the display from `DISPLAY`). `core` is the core
//! `GetImage` (pixels through the X socket); `shm` is MIT-SHM 1.2 (the server writes them into a
//! segment it passes us, no socket copy). Prints `WIDTHxHEIGHT BYTES` of what it fetched.
#![allow(unsafe_code)] // One `mmap` of the server's segment, as the product does.

use x11rb::connection::Connection;
use x11rb::protocol::shm::ConnectionExt as _;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let (conn, screen) = x11rb::connect(None)?;
    let root = &conn.setup().roots[screen];
    let (width, height) = (root.width_in_pixels, root.height_in_pixels);
    let bytes = match mode.as_str() {
        "core" => {
            let image = conn.get_image(ImageFormat::Z_PIXMAP, root.root, 0, 0, width, height, !0)?.reply()?;
            // Touch every byte, as an encoder would read them.
            image.data.iter().fold(0u8, |sum, byte| sum.wrapping_add(*byte));
            image.data.len()
        }
        "shm" => {
            let size = u32::from(width) * u32::from(height) * 4;
            let segment = conn.generate_id()?;
            let created = conn.shm_create_segment(segment, size, false)?.reply()?;
            let file = std::fs::File::from(created.shm_fd);
            conn.shm_get_image(root.root, 0, 0, width, height, !0, ImageFormat::Z_PIXMAP.into(), segment, 0)?
                .reply()?;
            conn.shm_detach(segment)?;
            // SAFETY: a read-only map of the memfd the server created for this request; its
            // reply arrived, so the server is done writing.
            let map = unsafe { memmap2::MmapOptions::new().len(size as usize).map(&file)? };
            map.iter().fold(0u8, |sum, byte| sum.wrapping_add(*byte));
            map.len()
        }
        _ => return Err("usage: clawmcp-bench-x11grab core|shm".into()),
    };
    #[allow(clippy::print_stdout)] // The benchmark reads this line.
    {
        println!("{width}x{height} {bytes}");
    }
    Ok(())
}
