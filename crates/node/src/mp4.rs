//! The one MP4 reader: what `screen.record` and `camera.clip` check before they return a clip
//! ffmpeg wrote. Only the top-level box structure and `moov/mvhd` are read (a player needs the
//! index; ffmpeg writes it last, so a killed ffmpeg leaves a file without one), never the media.

/// What the checks of an mp4 found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mp4Facts {
    /// The movie's duration (`mvhd`), in milliseconds.
    pub duration_ms: u64,
    /// Where the index (`moov`) starts: ffmpeg writes it after the frames, so this is the size
    /// the file had when the last frame was written.
    pub index_offset: u64,
}

/// The top-level boxes must tile the file, with one `mdat` (the frames) and one `moov` holding
/// an `mvhd` (what a player needs; ffmpeg writes it last, so a killed ffmpeg leaves none).
pub(crate) fn inspect_mp4(bytes: &[u8]) -> Result<Mp4Facts, String> {
    let (mut at, mut media, mut found) = (0usize, false, None);
    while at < bytes.len() {
        let (kind, start, end) = next_box(bytes, at)?;
        match kind {
            b"mdat" => media = true,
            b"moov" => found = Some((at, movie_duration_ms(&bytes[start..end])?)),
            _ => {}
        }
        at = end;
    }
    match (media, found) {
        (true, Some((offset, duration_ms))) => Ok(Mp4Facts { duration_ms, index_offset: offset as u64 }),
        (false, _) => Err("no mdat box (no frames)".into()),
        (true, None) => Err("no moov box (the index is missing: ffmpeg did not finish)".into()),
    }
}

/// The box at `at`: its type and where its body starts and ends.
fn next_box(bytes: &[u8], at: usize) -> Result<(&[u8; 4], usize, usize), String> {
    let header = bytes.get(at..at + 8).ok_or_else(|| format!("a box header is cut off at byte {at}"))?;
    let size = u64::from(u32::from_be_bytes(header[..4].try_into().unwrap()));
    let kind: &[u8; 4] = header[4..8].try_into().unwrap();
    let (size, body) = match size {
        0 => ((bytes.len() - at) as u64, 8),
        1 => {
            let large = bytes.get(at + 8..at + 16).ok_or("a large box header is cut off")?;
            (u64::from_be_bytes(large.try_into().unwrap()), 16)
        }
        size => (size, 8),
    };
    let end = usize::try_from(size).ok().and_then(|size| at.checked_add(size)).filter(|&end| end <= bytes.len());
    match end {
        Some(end) if size >= body as u64 => Ok((kind, at + body, end)),
        _ => Err(format!("the {} box at byte {at} claims {size} bytes", String::from_utf8_lossy(kind))),
    }
}

/// `mvhd`'s duration over its timescale, in milliseconds, from a `moov` body.
fn movie_duration_ms(moov: &[u8]) -> Result<u64, String> {
    let mut at = 0;
    while at < moov.len() {
        let (kind, start, end) = next_box(moov, at)?;
        if kind == b"mvhd" {
            let body = &moov[start..end];
            let field = |from: usize, len: usize| -> Result<u64, String> {
                let bytes = body.get(from..from + len).ok_or("mvhd is cut off")?;
                Ok(bytes.iter().fold(0u64, |value, &byte| value << 8 | u64::from(byte)))
            };
            // version 1 has 64-bit times and duration, version 0 32-bit ones.
            let (timescale, duration) = match body.first() {
                Some(1) => (field(20, 4)?, field(24, 8)?),
                _ => (field(12, 4)?, field(16, 4)?),
            };
            if timescale == 0 {
                return Err("mvhd has a zero timescale".into());
            }
            return Ok(duration.saturating_mul(1000) / timescale);
        }
        at = end;
    }
    Err("moov has no mvhd".into())
}
