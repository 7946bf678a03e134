//! Turning file bytes into text lines for a model: lossy UTF-8, long-line truncation, sizes.
//!
//! `read` and `grep` both show lines from arbitrary files; they share these rules so a line
//! looks the same in both (same replacement character, same truncation marker).

/// The marker appended to a line cut at the per-line cap.
pub(crate) fn truncation_marker(full_len: u64) -> String {
    format!(" … [line truncated, {full_len} bytes in total]")
}

/// Decodes `bytes` as UTF-8, replacing invalid sequences with U+FFFD. Returns whether any
/// replacement happened. When `cut` is set the bytes are a prefix of a longer line, so an
/// incomplete sequence at the very end is a character we split, not bad data: it is dropped.
pub(crate) fn decode_lossy(bytes: &[u8], cut: bool) -> (String, bool) {
    let mut text = String::with_capacity(bytes.len());
    let mut lossy = false;
    let mut chunks = bytes.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            if cut && chunks.peek().is_none() {
                break;
            }
            text.push(char::REPLACEMENT_CHARACTER);
            lossy = true;
        }
    }
    (text, lossy)
}

/// A whole line shown with at most `max_bytes` of its content, plus the marker if cut.
/// Returns the text and whether decoding was lossy.
pub(crate) fn display_line(line: &[u8], max_bytes: usize) -> (String, bool) {
    if line.len() <= max_bytes {
        return decode_lossy(line, false);
    }
    let (mut text, lossy) = decode_lossy(&line[..max_bytes], true);
    text.push_str(&truncation_marker(line.len() as u64));
    (text, lossy)
}

/// Strips one trailing `\n` or `\r\n`.
pub(crate) fn strip_line_terminator(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `50KB`, `5MB`, `1.5KB`, `312B`: binary units, one decimal only when needed.
pub(crate) fn format_size(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * KB;
    let (unit, name) = match bytes {
        b if b >= MB => (MB, "MB"),
        b if b >= KB => (KB, "KB"),
        _ => return format!("{bytes}B"),
    };
    if bytes.is_multiple_of(unit) {
        format!("{}{name}", bytes / unit)
    } else {
        format!("{:.1}{name}", bytes as f64 / unit as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_decoding_replaces_invalid_bytes_and_reports_it() {
        assert_eq!(decode_lossy(b"plain", false), ("plain".to_string(), false));
        assert_eq!(decode_lossy(b"caf\xe9 ok", false), ("caf\u{FFFD} ok".to_string(), true));
    }

    #[test]
    fn a_character_split_by_the_cut_is_dropped_not_reported() {
        let euro = "€".as_bytes(); // 3 bytes
        let mut cut = b"ab".to_vec();
        cut.extend_from_slice(&euro[..2]);
        assert_eq!(decode_lossy(&cut, true), ("ab".to_string(), false));
        assert_eq!(decode_lossy(&cut, false), ("ab\u{FFFD}".to_string(), true));
    }

    #[test]
    fn display_line_cuts_at_the_cap_exactly() {
        assert_eq!(display_line(b"abcd", 4), ("abcd".to_string(), false));
        let (text, _) = display_line(b"abcde", 4);
        assert_eq!(text, format!("abcd{}", truncation_marker(5)));
    }

    #[test]
    fn terminators_are_stripped_once() {
        assert_eq!(strip_line_terminator(b"a\r\n"), b"a");
        assert_eq!(strip_line_terminator(b"a\n"), b"a");
        assert_eq!(strip_line_terminator(b"a\r\r\n"), b"a\r");
        assert_eq!(strip_line_terminator(b"a"), b"a");
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(format_size(312), "312B");
        assert_eq!(format_size(50 * 1024), "50KB");
        assert_eq!(format_size(1536), "1.5KB");
        assert_eq!(format_size(5 * 1024 * 1024), "5MB");
    }
}
