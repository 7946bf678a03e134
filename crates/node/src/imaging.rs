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
/// How many times a size judged over the byte budget (by a probe, then by a full encoding) is
/// scaled down and judged again before the last one is taken as it is (each try aims under the
/// budget, so one is nearly always enough).
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
/// also kept within [`DEFAULT_MAX_BYTES`]: a size that would pass it is scaled down from the
/// source by the square root of how far over it was (bytes follow the pixel count), with a
/// margin. Which size that is, is first judged from a cheap [`probe`] of a few bands of rows, so
/// a photo-like screen is encoded in full once, at the size it is returned at, not once too large
/// and again; a full encoding still over the budget (a probe that guessed low) is scaled and
/// encoded again, at most [`MAX_REFITS`] times. A caller that names `maxWidth` gets exactly that.
/// The source is only read (a full screen is 6 MB: a copy of it was a tenth of a snapshot's time).
pub fn fit_encoded(
    source: &Pixels,
    max_width: Option<u32>,
    encode: impl Fn(&Pixels) -> Result<Vec<u8>, String>,
) -> Result<(u32, u32, Vec<u8>), String> {
    let mut fitted = fit(source, max_width)?;
    if max_width.is_some() {
        return Ok((fitted.width, fitted.height, encode(&fitted)?));
    }
    for _ in 0..MAX_REFITS {
        let Some(estimate) = probe(&fitted, &encode)? else { break };
        match shrunk(fitted.width, fitted.height, estimate) {
            Some((width, height)) => fitted = Cow::Owned(resize(source, width, height)?),
            None => break,
        }
    }
    let mut answer = (fitted.width, fitted.height, encode(&fitted)?);
    drop(fitted);
    for _ in 0..MAX_REFITS {
        let (width, height, ref bytes) = answer;
        let Some((to_width, to_height)) = shrunk(width, height, bytes.len()) else { break };
        let smaller = resize(source, to_width, to_height)?;
        answer = (to_width, to_height, encode(&smaller)?);
    }
    Ok(answer)
}

/// The smaller size for a `width` x `height` image whose encoding is (or is judged to be)
/// `bytes` long, or `None` when that is within [`DEFAULT_MAX_BYTES`] (or it cannot shrink).
fn shrunk(width: u32, height: u32, bytes: usize) -> Option<(u32, u32)> {
    if bytes <= DEFAULT_MAX_BYTES {
        return None;
    }
    let shrink = (DEFAULT_MAX_BYTES as f64 / bytes as f64).sqrt() * 0.95;
    let side = |side: u32| ((f64::from(side) * shrink).floor() as u32).max(1);
    Some((side(width), side(height))).filter(|&smaller| smaller != (width, height))
}

/// How many bands of rows a [`probe`] encodes, and how many rows each has: 1/8 of a 1080-row
/// screen's rows (bands long enough that PNG's row filters and deflate's window see what they
/// see in the whole image), spread over its height so a photo in one corner is sampled as often
/// as it covers rows.
const PROBE_BANDS: u32 = 8;
const PROBE_BAND_ROWS: u32 = 17;

/// How long `encode` makes `pixels`, judged from encoding [`PROBE_BANDS`] bands of their rows
/// stacked into one image and scaled by how many rows they stand for; `None` for an image too
/// short for that to save anything (encoding it whole is the answer).
fn probe(pixels: &Pixels, encode: impl Fn(&Pixels) -> Result<Vec<u8>, String>) -> Result<Option<usize>, String> {
    let sampled = PROBE_BANDS * PROBE_BAND_ROWS;
    if pixels.height < sampled * 4 {
        return Ok(None);
    }
    let row = pixels.data.len() / pixels.height as usize;
    let mut data = Vec::with_capacity(row * sampled as usize);
    for band in 0..PROBE_BANDS {
        // Each band sits in the middle of its eighth of the image.
        let share = pixels.height / PROBE_BANDS;
        let first = (band * share + (share - PROBE_BAND_ROWS) / 2) as usize;
        data.extend_from_slice(&pixels.data[first * row..(first + PROBE_BAND_ROWS as usize) * row]);
    }
    let bands = Pixels { data, width: pixels.width, height: sampled, layout: pixels.layout };
    let bytes = encode(&bands)?.len();
    Ok(Some((bytes as u64 * u64::from(pixels.height) / u64::from(sampled)) as usize))
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

/// JPEG bytes of `pixels` at `quality` (1..=100), encoded in horizontal strips on as many
/// threads as the machine has (at most [`MAX_JPEG_STRIPS`]): one 1080p frame is 13 ms of one
/// core in jpeg-encoder, libjpeg-turbo is no faster here, and the strips join into one baseline
/// JPEG byte for byte the same as a single encoding with the same restart interval.
pub fn encode_jpeg(pixels: &Pixels, quality: u8) -> Result<Vec<u8>, String> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    encode_jpeg_in_strips(pixels, quality, threads.min(MAX_JPEG_STRIPS))
}

/// The most strips (threads) one JPEG encoding uses.
const MAX_JPEG_STRIPS: usize = 4;

/// [`encode_jpeg`] in at most `strips` strips. Every MCU row is its own restart interval, so
/// its entropy-coded data depends on nothing above it (the DC predictions restart at each RST
/// marker, and 4:2:0's chroma is averaged within one MCU): a strip that starts on an MCU row
/// whose number is a multiple of 8 (the RST markers count modulo 8) is encoded as an image of
/// its own, and its scan is appended to the first strip's after the RST marker a single pass
/// would have written there. The first strip's headers serve, with the whole image's height.
fn encode_jpeg_in_strips(pixels: &Pixels, quality: u8, strips: usize) -> Result<Vec<u8>, String> {
    let failed = |error: &dyn std::fmt::Display| format!("cannot encode: {error}");
    let color = match pixels.layout {
        Layout::Rgb => jpeg_encoder::ColorType::Rgb,
        Layout::Rgba => jpeg_encoder::ColorType::Rgba,
    };
    let width = u16::try_from(pixels.width).map_err(|e| failed(&e))?;
    let height = u16::try_from(pixels.height).map_err(|e| failed(&e))?;
    // Named rather than left to the encoder's default (the same rule), because the MCU's size
    // follows from it: 4:2:0 below quality 90, full chroma from 90.
    let (sampling, mcu) = match quality < 90 {
        true => (jpeg_encoder::SamplingFactor::F_2_2, 16u16),
        false => (jpeg_encoder::SamplingFactor::F_1_1, 8u16),
    };
    if height == 0 {
        return Err(failed(&"the image has no rows"));
    }
    // Whole groups of 8 MCU rows per strip (the last takes what is left).
    let groups = u32::from(height.div_ceil(mcu)).div_ceil(8);
    let per_strip = groups.div_ceil((strips as u32).clamp(1, groups)) * 8 * u32::from(mcu);
    let per_strip = u16::try_from(per_strip).unwrap_or(u16::MAX);
    let row = pixels.data.len() / usize::from(height);
    let encode_strip = |first: u16| -> Result<Vec<u8>, String> {
        let rows = per_strip.min(height - first);
        let data = &pixels.data[usize::from(first) * row..(usize::from(first) + usize::from(rows)) * row];
        let mut out = Vec::with_capacity(data.len() / 8);
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, quality);
        encoder.set_sampling_factor(sampling);
        encoder.set_restart_interval(width.div_ceil(mcu));
        encoder.encode(data, width, rows, color).map_err(|e| failed(&e))?;
        Ok(out)
    };
    let firsts: Vec<u16> = (0..height).step_by(usize::from(per_strip)).collect();
    let mut encoded: Vec<Result<Vec<u8>, String>> = std::thread::scope(|scope| {
        let others: Vec<_> = firsts[1..].iter().map(|&first| scope.spawn(move || encode_strip(first))).collect();
        let mut all = vec![encode_strip(0)];
        all.extend(others.into_iter().map(|thread| thread.join().unwrap_or_else(|_| Err(failed(&"a strip panicked")))));
        all
    });
    let mut out = encoded.remove(0)?;
    // The frame header's height (after its marker, length and precision) is the whole image's.
    let frame = segment(&out, 0xC0).ok_or_else(|| failed(&"the encoder wrote no frame header"))?;
    out[frame.start + 5..frame.start + 7].copy_from_slice(&height.to_be_bytes());
    out.truncate(out.len() - 2); // its EOI
    for strip in encoded {
        let strip = strip?;
        let scan = segment(&strip, 0xDA).ok_or_else(|| failed(&"the encoder wrote no scan"))?.end;
        // A strip starts on an MCU row that is a multiple of 8: the marker before it is RST7.
        out.extend_from_slice(&[0xFF, 0xD7]);
        out.extend_from_slice(&strip[scan..strip.len() - 2]);
    }
    out.extend_from_slice(&[0xFF, 0xD9]);
    Ok(out)
}

/// Where the segment with `marker` (SOF0 `0xC0`, SOS `0xDA`) of a JPEG that jpeg-encoder wrote
/// is: each segment after SOI says how long it is, up to the start of scan, after which the
/// entropy-coded data begins.
fn segment(jpeg: &[u8], marker: u8) -> Option<std::ops::Range<usize>> {
    let mut at = 2; // SOI
    loop {
        let (found, length) = (*jpeg.get(at + 1)?, jpeg.get(at + 2..at + 4)?);
        let next = at + 2 + usize::from(u16::from_be_bytes([length[0], length[1]]));
        if found == marker {
            return Some(at..next);
        }
        if found == 0xDA {
            return None;
        }
        at = next;
    }
}

/// The PNG signature every PNG file starts with.
pub const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A PNG's width and height, from its IHDR chunk (always the first), without decoding it.
pub fn png_size(bytes: &[u8]) -> Result<(u32, u32), String> {
    if !bytes.starts_with(PNG_SIGNATURE) {
        return Err("not a PNG image (it does not start with the PNG signature)".into());
    }
    match bytes.get(12..24) {
        Some(ihdr) if &ihdr[..4] == b"IHDR" => Ok((
            u32::from_be_bytes([ihdr[4], ihdr[5], ihdr[6], ihdr[7]]),
            u32::from_be_bytes([ihdr[8], ihdr[9], ihdr[10], ihdr[11]]),
        )),
        _ => Err("not a valid PNG image: it does not start with an IHDR chunk".into()),
    }
}

/// `bytes` decoded to 8-bit RGB or RGBA (palettes expanded, 16-bit cut to 8, grey made colour;
/// an animated PNG's first frame), refusing images of more than `max_pixels` before anything
/// is allocated for them. The error says what is wrong with the bytes.
pub fn decode_png(bytes: &[u8], max_pixels: u64) -> Result<Pixels, String> {
    let failed = |error: &dyn std::fmt::Display| format!("not a valid PNG image: {error}");
    // The signature and the size from IHDR before the decoder reads further: a bomb is refused
    // from its first 24 bytes.
    let (width, height) = png_size(bytes)?;
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

    /// `encode` that also counts the encodings it did, by height (probes are
    /// `PROBE_BANDS * PROBE_BAND_ROWS` rows).
    fn counted<'a>(
        heights: &'a std::cell::RefCell<Vec<u32>>,
        encode: impl Fn(&Pixels) -> Result<Vec<u8>, String> + 'a,
    ) -> impl Fn(&Pixels) -> Result<Vec<u8>, String> + 'a {
        move |pixels| {
            heights.borrow_mut().push(pixels.height);
            encode(pixels)
        }
    }

    const PROBE_ROWS: u32 = PROBE_BANDS * PROBE_BAND_ROWS;

    #[test]
    fn a_photo_like_screen_is_encoded_in_full_once_at_the_size_it_is_returned_at() {
        let heights = std::cell::RefCell::new(Vec::new());
        let (width, height, bytes) = fit_encoded(&noise(1920, 1080), None, counted(&heights, encode_png)).unwrap();
        assert!(bytes.len() <= DEFAULT_MAX_BYTES, "{} bytes at {width}x{height}", bytes.len());
        let full: Vec<u32> = heights.borrow().iter().copied().filter(|&h| h != PROBE_ROWS).collect();
        assert_eq!(full, vec![height], "one full encoding, at {width}x{height}; all: {:?}", heights.borrow());
    }

    #[test]
    fn a_probe_that_guesses_low_still_ends_within_the_byte_budget() {
        // Flat where the probe's bands are, noise everywhere else: the bands say "small".
        let (width, height) = (1430, 804);
        let mut screen = noise(width, height);
        let share = height / PROBE_BANDS;
        for band in 0..PROBE_BANDS {
            let first = band * share + (share - PROBE_BAND_ROWS) / 2;
            let rows = (first * width * 3) as usize..((first + PROBE_BAND_ROWS) * width * 3) as usize;
            screen.data[rows].fill(128);
        }
        let heights = std::cell::RefCell::new(Vec::new());
        let (_, _, bytes) = fit_encoded(&screen, None, counted(&heights, encode_png)).unwrap();
        assert!(bytes.len() <= DEFAULT_MAX_BYTES, "{} bytes", bytes.len());
        let heights = heights.borrow();
        assert_eq!(heights[..2], [PROBE_ROWS, height], "probed low, encoded in full at once: {heights:?}");
        assert!(heights.len() > 2, "then scaled and encoded again: {heights:?}");
    }

    #[test]
    fn the_byte_budget_holds_exactly_at_its_edge_for_probe_and_encoding_alike() {
        // One byte per pixel: 1000x1000 is exactly the budget (and within the pixel budget).
        let per_pixel = |pixels: &Pixels| Ok(vec![0; (pixels.width * pixels.height) as usize]);
        let flat = |width: u32, height: u32| Pixels {
            data: vec![0; (width * height * 3) as usize],
            width,
            height,
            layout: Layout::Rgb,
        };
        let heights = std::cell::RefCell::new(Vec::new());
        let (width, height, bytes) = fit_encoded(&flat(1000, 1000), None, counted(&heights, per_pixel)).unwrap();
        assert_eq!((width, height, bytes.len()), (1000, 1000, DEFAULT_MAX_BYTES), "at the budget: kept");
        assert_eq!(*heights.borrow(), vec![PROBE_ROWS, 1000], "one probe, one encoding");
        heights.borrow_mut().clear();
        let (width, height, bytes) = fit_encoded(&flat(1000, 1001), None, counted(&heights, per_pixel)).unwrap();
        assert!(width < 1000 && bytes.len() <= DEFAULT_MAX_BYTES, "one byte row over: scaled to {width}x{height}");
        let full: Vec<u32> = heights.borrow().iter().copied().filter(|&h| h != PROBE_ROWS).collect();
        assert_eq!(full, vec![height], "scaled on the probes' word, then encoded once: {:?}", heights.borrow());
        // Too short for a probe to save anything: encoded whole.
        for (rows, probed) in [(PROBE_ROWS * 4 - 1, false), (PROBE_ROWS * 4, true)] {
            heights.borrow_mut().clear();
            fit_encoded(&flat(600, rows), None, counted(&heights, per_pixel)).unwrap();
            assert_eq!(heights.borrow().contains(&PROBE_ROWS), probed, "{rows} rows: {:?}", heights.borrow());
        }
    }

    /// A smooth picture (JPEG's kind) with some noise on top.
    fn picture(width: u32, height: u32, layout: Layout) -> Pixels {
        let mut grain = vec![0u8; (width * height) as usize];
        getrandom::fill(&mut grain).unwrap();
        let channels = layout.channels();
        let mut data = Vec::with_capacity((width * height) as usize * channels);
        for y in 0..height {
            for x in 0..width {
                let g = grain[(y * width + x) as usize] / 16;
                let pixel = [(x * 255 / width) as u8 ^ g, (y * 255 / height) as u8, ((x + y) % 256) as u8, 255];
                data.extend_from_slice(&pixel[..channels]);
            }
        }
        Pixels { data, width, height, layout }
    }

    #[test]
    fn jpeg_strips_join_into_the_bytes_of_one_pass() {
        for (width, height, layout) in
            [(1920, 1080, Layout::Rgb), (333, 517, Layout::Rgba), (64, 16, Layout::Rgb), (17, 1, Layout::Rgb)]
        {
            let pixels = picture(width, height, layout);
            for quality in [80, 95] {
                // One pass of the library itself, with the strips' settings.
                let mut one_pass = Vec::new();
                let mut encoder = jpeg_encoder::Encoder::new(&mut one_pass, quality);
                let (sampling, mcu) = match quality < 90 {
                    true => (jpeg_encoder::SamplingFactor::F_2_2, 16),
                    false => (jpeg_encoder::SamplingFactor::F_1_1, 8),
                };
                encoder.set_sampling_factor(sampling);
                encoder.set_restart_interval((width as u16).div_ceil(mcu));
                let color = match layout {
                    Layout::Rgb => jpeg_encoder::ColorType::Rgb,
                    Layout::Rgba => jpeg_encoder::ColorType::Rgba,
                };
                encoder.encode(&pixels.data, width as u16, height as u16, color).unwrap();
                for strips in 1..=4 {
                    let joined = encode_jpeg_in_strips(&pixels, quality, strips).unwrap();
                    assert!(joined == one_pass, "{width}x{height} q{quality} in {strips} strips");
                }
                // And it is the picture: decoded, close to the source.
                let mut decoder = jpeg_decoder::Decoder::new(Cursor::new(&one_pass));
                let decoded = decoder.decode().unwrap();
                let info = decoder.info().unwrap();
                assert_eq!((u32::from(info.width), u32::from(info.height)), (width, height));
                let source = opaque(pixels.clone()).data;
                let error: u64 = source.iter().zip(&decoded).map(|(a, b)| u64::from(a.abs_diff(*b))).sum();
                assert!(error / source.len() as u64 <= 6, "mean error {} at q{quality}", error / source.len() as u64);
            }
        }
        // 1080 rows are 68 MCU rows: 2 strips of 40 and 28 really are two (the first ends
        // with an MCU row that is a multiple of 8).
        let strips = encode_jpeg_in_strips(&picture(1920, 1080, Layout::Rgb), 80, 2).unwrap();
        let scan = &strips[segment(&strips, 0xDA).unwrap().end..];
        let markers = scan.windows(2).filter(|pair| pair[0] == 0xFF && (0xD0..=0xD7).contains(&pair[1])).count();
        assert_eq!(markers, 67, "one RST marker between each two of the 68 MCU rows");
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
