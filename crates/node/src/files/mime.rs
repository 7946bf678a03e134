//! MIME types: of fetched bytes (`file.fetch`: the content's signature, else the name's extension,
//! else text or binary by upstream's sniff), and of listed names (`dir.list`: the extension, else
//! `application/octet-stream`, as upstream's `mimeFromExtension`).

use std::path::Path;

/// Extensions this node names (lower case), the common ones an agent fetches.
const BY_EXTENSION: &[(&str, &str)] = &[
    ("txt", "text/plain"),
    ("md", "text/markdown"),
    ("csv", "text/csv"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("css", "text/css"),
    ("js", "text/javascript"),
    ("mjs", "text/javascript"),
    ("json", "application/json"),
    ("xml", "application/xml"),
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("tgz", "application/gzip"),
    ("tar", "application/x-tar"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("svg", "image/svg+xml"),
    ("bmp", "image/bmp"),
    ("ico", "image/vnd.microsoft.icon"),
    ("mp3", "audio/mpeg"),
    ("wav", "audio/wav"),
    ("ogg", "audio/ogg"),
    ("flac", "audio/flac"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mov", "video/quicktime"),
    ("mkv", "video/x-matroska"),
];

/// Content signatures (offset 0) that decide the type whatever the name says.
const BY_SIGNATURE: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
];

/// How much of the content the text sniff looks at (upstream's 8 KiB).
const TEXT_SNIFF_BYTES: usize = 8192;

/// The type of a name by its extension, `None` when this node does not know it.
pub fn of_name(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    BY_EXTENSION.iter().find(|(known, _)| *known == extension).map(|(_, mime)| *mime)
}

/// The type of a listed name: by extension, else `application/octet-stream`.
pub fn of_listed(path: &Path) -> &'static str {
    of_name(path).unwrap_or("application/octet-stream")
}

/// The type of fetched `bytes` named `path`.
pub fn of_content(bytes: &[u8], path: &Path) -> &'static str {
    if let Some((_, mime)) = BY_SIGNATURE.iter().find(|(signature, _)| bytes.starts_with(signature)) {
        return mime;
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return "image/webp";
    }
    if bytes.len() >= 8 && &bytes[4..8] == b"ftyp" {
        return "video/mp4";
    }
    of_name(path).unwrap_or_else(|| if looks_like_text(bytes) { "text/plain" } else { "application/octet-stream" })
}

/// Upstream's sniff: empty, or UTF-8 without NUL and with under 1% control bytes (tab, CR and LF
/// aside) in the first 8 KiB. A multi-byte character cut at the sample's end still counts as text.
fn looks_like_text(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(TEXT_SNIFF_BYTES)];
    if sample.is_empty() {
        return true;
    }
    if sample.contains(&0) {
        return false;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => {}
        Err(error) if error.error_len().is_none() && sample.len() == TEXT_SNIFF_BYTES => {}
        Err(_) => return false,
    }
    let control = sample.iter().filter(|&&byte| byte < 32 && !matches!(byte, b'\t' | b'\n' | b'\r')).count();
    (control as f64) / (sample.len() as f64) < 0.01
}
