//! Pictures in and out, shared by the commands that return images (`screen.snapshot`,
//! `clipboard.read`) and take them (`clipboard.write`): the default size budget, scaling, PNG and
//! JPEG encoding, and bounded PNG decoding. One implementation, so a screenshot and a pasted image
//! are scaled, encoded and capped alike.

use std::borrow::Cow;
use std::io::Cursor;

use fast_image_resize::PixelType;

/// What an image answer holds at most when the caller names no `maxWidth`: about 1.15
/// megapixels, what vision models read without tiling.
pub const DEFAULT_MAX_PIXELS: u64 = 1_150_000;
/// What an image answer's encoding holds at most when the caller names no `maxWidth`: about 1 MB,
/// so a photo-like screen in PNG (1.8 MB at 1.15 megapixels) does not fill a model's request.
pub const DEFAULT_MAX_BYTES: usize = 1_000_000;
/// How many times an over-budget encoding is scaled down and encoded again before the last one is
/// returned as it is (each try aims under the budget, so one is nearly always enough).
const MAX_REFITS: usize = 3;
/// The `maxWidth` clamps (upstream's, for screen.snapshot).
pub const MIN_WIDTH: u32 = 16;
pub const MAX_WIDTH: u32 = 7680;

/// How 8-bit pixels are laid out, rows top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Rgb,
    Rgba,
}

impl Layout {
    #[cfg(test)]
    pub fn channels(self) -> usize {
        match self {
            Layout::Rgb => 3,
            Layout::Rgba => 4,
        }
    }

    fn pixel_type(self) -> PixelType {
        match self {
            Layout::Rgb => PixelType::U8x3,
            Layout::Rgba => PixelType::U8x4,
        }
    }

    fn png_color(self) -> png::ColorType {
        match self {
            Layout::Rgb => png::ColorType::Rgb,
            Layout::Rgba => png::ColorType::Rgba,
        }
    }
}

/// An image in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pixels {
    pub data: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub layout: Layout,
}

/// The size to return for a `width` x `height` image: `max_width` wide at most, else within
/// [`DEFAULT_MAX_PIXELS`]; never larger than the source, aspect kept.
pub fn target_size(width: u32, height: u32, max_width: Option<u32>) -> (u32, u32) {
    match max_width {
        Some(max) => {
            let scale = (f64::from(max) / f64::from(width)).min(1.0);
            let scaled = |side: u32| ((f64::from(side) * scale).round() as u32).max(1);
            (scaled(width), scaled(height))
        }
        None => {
            let scale = (DEFAULT_MAX_PIXELS as f64 / (f64::from(width) * f64::from(height))).sqrt().min(1.0);
            let side = |side: u32, round: fn(f64) -> f64| (round(f64::from(side) * scale) as u32).max(1);
            let nearest = (side(width, f64::round), side(height, f64::round));
            // Rounding both sides to nearest can overshoot the budget (1600x1200 became 1238x929,
            // 102 pixels too many); rounding down never does.
            match u64::from(nearest.0) * u64::from(nearest.1) <= DEFAULT_MAX_PIXELS {
                true => nearest,
                false => (side(width, f64::floor), side(height, f64::floor)),
            }
        }
    }
}

/// `pixels` scaled to [`target_size`] (bilinear), or as they are (borrowed, not copied) when
/// they already fit.
pub fn fit(pixels: &Pixels, max_width: Option<u32>) -> Result<Cow<'_, Pixels>, String> {
    let (width, height) = target_size(pixels.width, pixels.height, max_width);
    if (width, height) == (pixels.width, pixels.height) {
        return Ok(Cow::Borrowed(pixels));
    }
    resize(pixels, width, height).map(Cow::Owned)
}

/// `pixels` fitted as [`fit`] does and encoded by `encode`. Without `max_width` the encoding is
/// also kept within [`DEFAULT_MAX_BYTES`]: one over it is scaled down from the source by the
/// square root of how far over it was (bytes follow the pixel count), with a margin, and encoded
/// again, at most [`MAX_REFITS`] times. A caller that names `maxWidth` gets exactly that.
/// The source is only read (a full screen is 6 MB: a copy of it was a tenth of a snapshot's time).
pub fn fit_encoded(
    source: &Pixels,
    max_width: Option<u32>,
    encode: impl Fn(&Pixels) -> Result<Vec<u8>, String>,
) -> Result<(u32, u32, Vec<u8>), String> {
    let fitted = fit(source, max_width)?;
    let mut answer = (fitted.width, fitted.height, encode(&fitted)?);
    drop(fitted);
    if max_width.is_some() {
        return Ok(answer);
    }
    for _ in 0..MAX_REFITS {
        let (width, height, ref bytes) = answer;
        if bytes.len() <= DEFAULT_MAX_BYTES {
            break;
        }
        let shrink = (DEFAULT_MAX_BYTES as f64 / bytes.len() as f64).sqrt() * 0.95;
        let side = |side: u32| ((f64::from(side) * shrink).floor() as u32).max(1);
        let (to_width, to_height) = (side(width), side(height));
        if (to_width, to_height) == (width, height) {
            break;
        }
        let smaller = resize(source, to_width, to_height)?;
        answer = (to_width, to_height, encode(&smaller)?);
    }
    Ok(answer)
}

fn resize(pixels: &Pixels, to_width: u32, to_height: u32) -> Result<Pixels, String> {
    use fast_image_resize::images::{Image, ImageRef};
    use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions, Resizer};
    let failed = |error: &dyn std::fmt::Display| format!("cannot scale: {error}");
    let layout = pixels.layout;
    let source =
        ImageRef::new(pixels.width, pixels.height, &pixels.data, layout.pixel_type()).map_err(|e| failed(&e))?;
    let mut target = Image::new(to_width, to_height, layout.pixel_type());
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    Resizer::new().resize(&source, &mut target, &options).map_err(|e| failed(&e))?;
    Ok(Pixels { data: target.into_vec(), width: to_width, height: to_height, layout })
}

/// `pixels` without an alpha channel (a screenshot is opaque; what it held is dropped).
pub fn opaque(pixels: Pixels) -> Pixels {
    match pixels.layout {
        Layout::Rgb => pixels,
        Layout::Rgba => {
            let data = pixels.data.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
            Pixels { data, layout: Layout::Rgb, ..pixels }
        }
    }
}

/// PNG bytes of `pixels` (fast compression: these answers are read once).
pub fn encode_png(pixels: &Pixels) -> Result<Vec<u8>, String> {
    let failed = |error: &dyn std::fmt::Display| format!("cannot encode: {error}");
    let mut out = Vec::with_capacity(pixels.data.len() / 4);
    let mut encoder = png::Encoder::new(Cursor::new(&mut out), pixels.width, pixels.height);
    encoder.set_color(pixels.layout.png_color());
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(|e| failed(&e))?;
    writer.write_image_data(&pixels.data).map_err(|e| failed(&e))?;
    writer.finish().map_err(|e| failed(&e))?;
    Ok(out)
}

/// JPEG bytes of RGB `pixels` at `quality` (1..=100).
pub fn encode_jpeg(pixels: &Pixels, quality: u8) -> Result<Vec<u8>, String> {
    let failed = |error: &dyn std::fmt::Display| format!("cannot encode: {error}");
    let color = match pixels.layout {
        Layout::Rgb => jpeg_encoder::ColorType::Rgb,
        Layout::Rgba => jpeg_encoder::ColorType::Rgba,
    };
    let (w, h) =
        (u16::try_from(pixels.width).map_err(|e| failed(&e))?, u16::try_from(pixels.height).map_err(|e| failed(&e))?);
    let mut out = Vec::with_capacity(pixels.data.len() / 8);
    jpeg_encoder::Encoder::new(&mut out, quality).encode(&pixels.data, w, h, color).map_err(|e| failed(&e))?;
    Ok(out)
}

/// The PNG signature every PNG file starts with.
pub const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// `bytes` decoded to 8-bit RGB or RGBA (palettes expanded, 16-bit cut to 8, grey made colour;
/// an animated PNG's first frame), refusing images of more than `max_pixels` before anything
/// is allocated for them. The error says what is wrong with the bytes.
pub fn decode_png(bytes: &[u8], max_pixels: u64) -> Result<Pixels, String> {
    if !bytes.starts_with(PNG_SIGNATURE) {
        return Err("not a PNG image (it does not start with the PNG signature)".into());
    }
    let failed = |error: &dyn std::fmt::Display| format!("not a valid PNG image: {error}");
    // The size from IHDR (always the first chunk) before the decoder reads further: a bomb is
    // refused from its first 24 bytes.
    let (width, height) = match bytes.get(12..24) {
        Some(ihdr) if &ihdr[..4] == b"IHDR" => (
            u32::from_be_bytes([ihdr[4], ihdr[5], ihdr[6], ihdr[7]]),
            u32::from_be_bytes([ihdr[8], ihdr[9], ihdr[10], ihdr[11]]),
        ),
        _ => return Err(failed(&"it does not start with an IHDR chunk")),
    };
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(format!("the PNG image is {width}x{height}, more than the {max_pixels} pixels this node decodes"));
    }
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| failed(&e))?;
    let size = reader.output_buffer_size().ok_or_else(|| failed(&"its size overflows"))?;
    let mut buffer = vec![0; size];
    let info = reader.next_frame(&mut buffer).map_err(|e| failed(&e))?;
    buffer.truncate(info.buffer_size());
    let (data, layout) = match info.color_type {
        png::ColorType::Rgb => (buffer, Layout::Rgb),
        png::ColorType::Rgba => (buffer, Layout::Rgba),
        png::ColorType::Grayscale => (buffer.iter().flat_map(|&g| [g, g, g]).collect(), Layout::Rgb),
        png::ColorType::GrayscaleAlpha => {
            (buffer.chunks_exact(2).flat_map(|ga| [ga[0], ga[0], ga[0], ga[1]]).collect(), Layout::Rgba)
        }
        png::ColorType::Indexed => return Err(failed(&"a palette the decoder did not expand")),
    };
    Ok(Pixels { data, width: info.width, height: info.height, layout })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(width: u32, height: u32) -> Pixels {
        let mut data = vec![0u8; (width * height * 3) as usize];
        getrandom::fill(&mut data).unwrap();
        Pixels { data, width, height, layout: Layout::Rgb }
    }

    #[test]
    fn without_max_width_an_encoding_is_kept_within_the_byte_budget_and_with_it_as_asked() {
        // Noise is PNG's worst case: 1920x1080 of it is about 6 MB, 1430x804 still 3.4 MB.
        let screen = noise(1920, 1080);
        let (width, height, bytes) = fit_encoded(&screen, None, encode_png).unwrap();
        assert!(bytes.len() <= DEFAULT_MAX_BYTES, "{} bytes at {width}x{height}", bytes.len());
        assert!(width < 1430 && height < 804 && width > 300, "scaled further than the pixel budget: {width}x{height}");
        assert!((f64::from(width) / f64::from(height) - 16.0 / 9.0).abs() < 0.01, "16:9 kept: {width}x{height}");
        assert_eq!(decode_png(&bytes, u64::MAX).unwrap().width, width, "the bytes are the image said");

        let (width, height, bytes) = fit_encoded(&screen, Some(1920), encode_png).unwrap();
        assert_eq!((width, height), (1920, 1080), "maxWidth named: exactly that, whatever its size");
        assert!(bytes.len() > DEFAULT_MAX_BYTES);

        // An image that fits both budgets is left alone.
        let flat = Pixels { data: vec![90; 640 * 480 * 3], width: 640, height: 480, layout: Layout::Rgb };
        let (width, height, bytes) = fit_encoded(&flat, None, encode_png).unwrap();
        assert_eq!((width, height, decode_png(&bytes, u64::MAX).unwrap()), (640, 480, flat));
    }

    #[test]
    fn the_default_budget_keeps_the_aspect_and_never_enlarges() {
        assert_eq!(target_size(640, 480, None), (640, 480));
        assert_eq!(target_size(1920, 1080, None), (1430, 804));
        assert_eq!(target_size(1600, 1200, None), (1238, 928), "never over the budget");
        for (w, h) in [(1600, 1200), (1921, 1081), (3840, 2160), (5000, 7), (1073, 1072)] {
            let (tw, th) = target_size(w, h, None);
            assert!(u64::from(tw) * u64::from(th) <= DEFAULT_MAX_PIXELS, "{w}x{h} -> {tw}x{th}");
        }
        assert_eq!(target_size(640, 480, Some(320)), (320, 240));
        assert_eq!(target_size(100, 100, Some(7680)), (100, 100));
    }

    #[test]
    fn png_round_trips_every_layout_exactly() {
        for layout in [Layout::Rgb, Layout::Rgba] {
            let data: Vec<u8> = (0..(5 * 3 * layout.channels())).map(|i| (i * 37 % 251) as u8).collect();
            let pixels = Pixels { data, width: 5, height: 3, layout };
            let bytes = encode_png(&pixels).unwrap();
            assert_eq!(decode_png(&bytes, 15).unwrap(), pixels);
            let error = decode_png(&bytes, 14).unwrap_err();
            assert_eq!(error, "the PNG image is 5x3, more than the 14 pixels this node decodes");
        }
    }

    #[test]
    fn grey_becomes_colour_and_garbage_is_named() {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(Cursor::new(&mut out), 2, 1);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.write_header().unwrap().write_image_data(&[7, 200]).unwrap();
        let pixels = decode_png(&out, 100).unwrap();
        assert_eq!((pixels.layout, pixels.data), (Layout::Rgb, vec![7, 7, 7, 200, 200, 200]));
        assert!(decode_png(b"GIF89a", 100).unwrap_err().starts_with("not a PNG image"));
        let cut = &out[..out.len() - 20];
        assert!(decode_png(cut, 100).unwrap_err().starts_with("not a valid PNG image"), "a truncated PNG");
    }
}
