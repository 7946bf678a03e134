//! `read`: a slice of a text file with line numbers, or an image as image content.
//!
//! Schema and limits follow OpenClaw's core `read` (pi-coding-agent + the OpenClaw wrapper,
//! `docs/tools-bridge.md` §2): `path` (alias `file_path`), 1-based `offset`, `limit` in lines, at
//! most 2000 lines or 50KB per call with the same continuation hints (`[Showing lines a-b of N.
//! Use offset=K to continue.]`), "Offset X is beyond end of file". OpenClaw returns raw text;
//! we prefix each line with its number in `cat -n` form (six columns, a tab), which the
//! continuation hints and `grep` line numbers refer to.
//!
//! Unlike the upstream bridge (which read the whole file) the file is streamed: lines
//! before `offset` are skipped by counting newlines, at most one line-cap of each line is kept,
//! and after the slice the remaining lines are only counted, up to a scan budget. A file of
//! any size therefore costs at most the output cap in memory.
//!
//! Clients of MCP 2025-06-18 and later also get what was read as `structuredContent` (the
//! published `outputSchema`): `kind` "text" with the absolute path, the lines shown, the file's
//! line count (exact or a lower bound), the next offset, cut lines and lossy decoding; or `kind`
//! "image" with its MIME type and size. The text block stays what every client reads.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};

use base64::Engine as _;
use clawmcp_fs::{FileKind, Symlinks, not_regular_kind, open_regular};
use clawmcp_mcp::{CANCELLED, CallContext, Checking, Content, Tool, ToolAnnotations, ToolResult};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{Args, Param};
use crate::fs_error;
use crate::text::{decode_lossy, format_size, truncation_marker};
use crate::workspace::{TargetPath, Workspace};
use crate::{BridgeTool, ToolContext};

pub(crate) const NAME: &str = "read";

const PATH: Param = Param::new(&["path", "file_path"]);
const OFFSET: Param = Param::new(&["offset"]);
const LIMIT: Param = Param::new(&["limit"]);

/// How much of the file start is inspected for image magic and NUL bytes (git's heuristic
/// looks at 8000 bytes). A NUL byte further in does not make the file binary: it is shown.
const SNIFF_BYTES: usize = 8 * 1024;
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// The caps of one call. Unit tests shrink them to probe each edge cheaply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadLimits {
    /// Lines per call (OpenClaw: 2000).
    pub max_lines: usize,
    /// Bytes of returned text per call, line-number prefixes included (OpenClaw: 50KB).
    pub max_bytes: usize,
    /// Bytes kept of one line; the rest is replaced by a marker.
    pub max_line_bytes: usize,
    /// Largest image returned as image content (base64 grows it by a third on the wire).
    pub max_image_bytes: u64,
    /// Bytes scanned after the slice to count the file's total lines for the hint.
    pub count_budget: u64,
}

impl ReadLimits {
    pub(crate) const DEFAULT: ReadLimits = ReadLimits {
        max_lines: 2000,
        max_bytes: 50 * 1024,
        max_line_bytes: 2000,
        max_image_bytes: 5 * 1024 * 1024,
        count_budget: 256 * 1024 * 1024,
    };
}

/// The `read` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Numbers and booleans may come as strings; the parser reads them (see the crate docs).
    crate::local_tool(descriptor(), Checking::StringifiedScalars, context, |context, arguments, ctx| async move {
        run(&context.workspace, &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    let limits = ReadLimits::DEFAULT;
    let path = json!({"type": "string", "description": "Path to the file to read (relative or absolute)"});
    Tool {
        title: None,
        output_schema: Some(output_schema()),
        name: NAME.into(),
        description: format!(
            "Read a file. Text is returned with line numbers (`cat -n` style: number, tab, line) and is \
             truncated to {} lines or {} per call, whichever comes first; use offset/limit for large files \
             and follow the `Use offset=N to continue` hint until complete. Lines longer than {} bytes are cut. \
             Images (PNG, JPEG, GIF, WebP; up to {}) are returned as image content; other binary files are \
             refused. Relative paths resolve against the workspace root; `~` is the home directory.",
            limits.max_lines,
            format_size(limits.max_bytes as u64),
            limits.max_line_bytes,
            format_size(limits.max_image_bytes),
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": path,
                "file_path": path,
                "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"},
            },
            "required": [],
        })
        .into(),
        annotations: Some(ToolAnnotations::READ_ONLY),
    }
}

/// The JSON Schema of `read`'s `structuredContent` (see the module docs): one object schema
/// (MCP wants `"type": "object"` at the root, and clients' checks read its `required` and
/// `properties`), each kind's own fields required and only those allowed.
fn output_schema() -> clawmcp_mcp::Schema {
    const TEXT_FIELDS: [&str; 9] = [
        "kind",
        "path",
        "startLine",
        "endLine",
        "totalLines",
        "totalLinesExact",
        "nextOffset",
        "cutLines",
        "lossyUtf8",
    ];
    const IMAGE_FIELDS: [&str; 4] = ["kind", "path", "mimeType", "sizeBytes"];
    let count = json!({"type": "integer", "minimum": 0});
    let only = |kind: &str, fields: &[&str]| {
        json!({
            "if": {"properties": {"kind": {"const": kind}}},
            "then": {"required": fields, "propertyNames": {"enum": fields}}
        })
    };
    json!({
        "type": "object",
        "properties": {
            "kind": {"enum": ["text", "image"]},
            "path": {"type": "string"},
            "startLine": {"type": "integer", "minimum": 1},
            "endLine": count,
            "totalLines": count,
            "totalLinesExact": {"type": "boolean"},
            "nextOffset": {"type": ["integer", "null"], "minimum": 2},
            "cutLines": count,
            "lossyUtf8": {"type": "boolean"},
            "mimeType": {"enum": ["image/png", "image/jpeg", "image/gif", "image/webp"]},
            "sizeBytes": count
        },
        "required": ["kind", "path"],
        "additionalProperties": false,
        "allOf": [only("text", &TEXT_FIELDS), only("image", &IMAGE_FIELDS)]
    })
    .into()
}

/// What a text read showed, for `structuredContent`.
struct TextSlice<'a> {
    target: &'a TargetPath,
    start: u64,
    /// The last line shown; `start - 1` when none was (an empty file).
    end: u64,
    total: LineTotal,
    next_offset: Option<u64>,
    cut_lines: u64,
    lossy: bool,
}

impl TextSlice<'_> {
    fn metadata(&self) -> Value {
        json!({
            "kind": "text",
            "path": self.target.abs.display().to_string(),
            "startLine": self.start,
            "endLine": self.end,
            "totalLines": self.total.lines,
            "totalLinesExact": self.total.exact,
            "nextOffset": self.next_offset,
            "cutLines": self.cut_lines,
            "lossyUtf8": self.lossy,
        })
    }
}

/// A successful read: the text everyone reads and the metadata newer clients also get.
fn answered(text: String, metadata: Value) -> ToolResult {
    ToolResult { structured_content: Some(metadata), ..ToolResult::text(text) }
}

struct ReadRequest {
    target: TargetPath,
    /// 1-based first line; OpenClaw treats 0 as "from the start", and so do we.
    start: u64,
    limit: Option<u64>,
}

pub(crate) async fn run(workspace: &Workspace, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
    let request = match parse(workspace, args) {
        Ok(request) => request,
        Err(message) => return ToolResult::error(message),
    };
    let cancel = ctx.cancel.clone();
    crate::blocking(NAME, move || read_file(&request, &ReadLimits::DEFAULT, &cancel)).await
}

fn parse(workspace: &Workspace, args: &Map<String, Value>) -> Result<ReadRequest, String> {
    let args = Args::new(args);
    let path = args.required_string(PATH, false).map_err(|e| e.to_string())?;
    let offset = args.integer(OFFSET, 0, u64::MAX).map_err(|e| e.to_string())?;
    let limit = args.integer(LIMIT, 1, u64::MAX).map_err(|e| e.to_string())?;
    let target = workspace.resolve(&path)?;
    Ok(ReadRequest { target, start: offset.unwrap_or(1).max(1), limit })
}

fn read_file(request: &ReadRequest, limits: &ReadLimits, cancel: &CancellationToken) -> ToolResult {
    read_file_inner(request, limits, cancel).unwrap_or_else(ToolResult::error)
}

fn read_file_inner(
    request: &ReadRequest,
    limits: &ReadLimits,
    cancel: &CancellationToken,
) -> Result<ToolResult, String> {
    let target = &request.target;
    let io_error = |e: io::Error| fs_error::describe("read", target, &e);
    // Non-blocking and type-checked on the opened descriptor, so a FIFO is refused at once (a
    // plain open would wait for a writer) and nothing can be swapped in between check and read.
    let (mut file, meta) = open_regular(&target.abs, Symlinks::Follow).map_err(|e| match not_regular_kind(&e) {
        Some(FileKind::Directory) => format!(
            "{} is a directory, not a file. To list it use glob (e.g. pattern \"*\" with path {:?}).",
            target.describe(),
            target.given
        ),
        _ => io_error(e),
    })?;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head).map_err(io_error)?;

    if let Some(mime) = image_mime(&head) {
        return read_image(target, file, head, meta.len(), mime, limits);
    }
    if let Some(at) = memchr::memchr(0, &head) {
        return Err(format!(
            "{} looks like a binary file ({}, NUL byte at offset {at}); read returns text and images \
             (PNG, JPEG, GIF, WebP) only. Inspect it with a hex dump tool instead.",
            target.describe(),
            format_size(meta.len())
        ));
    }
    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, Cursor::new(head).chain(file));
    read_text(LineReader { inner: reader }, request, limits, cancel).map_err(|failure| match failure {
        Failure::Io(e) => io_error(e),
        Failure::Cancelled => CANCELLED.to_string(),
        Failure::Message(message) => message,
    })
}

/// The MIME type of a supported image, by magic bytes (the extension may lie either way).
fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn read_image(
    target: &TargetPath,
    file: File,
    head: Vec<u8>,
    size: u64,
    mime: &str,
    limits: &ReadLimits,
) -> Result<ToolResult, String> {
    let too_big = |size: u64| {
        format!(
            "Image {} is {}, over the {} limit for returning an image. Resize or crop it first.",
            target.describe(),
            format_size(size),
            format_size(limits.max_image_bytes)
        )
    };
    if size > limits.max_image_bytes {
        return Err(too_big(size));
    }
    let mut bytes = head;
    // Bounded even if the file grows between stat and read.
    file.take(limits.max_image_bytes + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| fs_error::describe("read", target, &e))?;
    if bytes.len() as u64 > limits.max_image_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolResult {
        content: vec![
            Content::Text { text: format!("Read image file [{mime}]") },
            Content::Image { data, mime_type: mime.to_string() },
        ],
        structured_content: Some(json!({
            "kind": "image",
            "path": target.abs.display().to_string(),
            "mimeType": mime,
            "sizeBytes": bytes.len(),
        })),
        is_error: false,
    })
}

enum Failure {
    Io(io::Error),
    Cancelled,
    Message(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// Why the slice ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    EndOfFile,
    UserLimit,
    LineCap,
    ByteCap,
}

fn read_text<R: BufRead>(
    mut lines: LineReader<R>,
    request: &ReadRequest,
    limits: &ReadLimits,
    cancel: &CancellationToken,
) -> Result<ToolResult, Failure> {
    let start = request.start;
    let skipped = lines.advance(start - 1, u64::MAX, cancel)?;
    if skipped.cancelled {
        return Err(Failure::Cancelled);
    }
    let mut number = skipped.lines;

    let line_cap = limits.max_lines as u64;
    let take = request.limit.map_or(line_cap, |limit| limit.min(line_cap));
    let mut out = String::new();
    let mut shown: u64 = 0;
    let mut lossy = false;
    let mut cut_lines = 0u64;
    let stop = loop {
        if shown == take {
            break if request.limit.is_some_and(|limit| limit <= line_cap) { Stop::UserLimit } else { Stop::LineCap };
        }
        if number % 1024 == 0 && cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        let Some(line) = lines.next_line(limits.max_line_bytes)? else { break Stop::EndOfFile };
        number += 1;
        let (text, bad) = decode_lossy(&line.kept, line.truncated());
        let mut rendered = format!("{number:>6}\t{text}");
        if line.truncated() {
            rendered.push_str(&truncation_marker(line.full_len));
        }
        let separator = usize::from(shown > 0);
        // The first line is always shown: the per-line cap keeps it far below the byte cap.
        if shown > 0 && out.len() + separator + rendered.len() > limits.max_bytes {
            break Stop::ByteCap;
        }
        if separator == 1 {
            out.push('\n');
        }
        out.push_str(&rendered);
        shown += 1;
        lossy |= bad;
        cut_lines += u64::from(line.truncated());
    };

    if shown == 0 {
        if start == 1 {
            let empty = TextSlice {
                target: &request.target,
                start,
                end: 0,
                total: LineTotal { lines: 0, exact: true },
                next_offset: None,
                cut_lines: 0,
                lossy: false,
            };
            return Ok(answered(format!("[{} is empty.]", request.target.given), empty.metadata()));
        }
        return Err(Failure::Message(format!("Offset {start} is beyond end of file ({number} lines total)")));
    }
    let last_shown = start + shown - 1;
    let total = match stop {
        Stop::EndOfFile => LineTotal { lines: number, exact: true },
        _ => {
            let rest = lines.advance(u64::MAX, limits.count_budget, cancel)?;
            if rest.cancelled {
                return Err(Failure::Cancelled);
            }
            LineTotal { lines: number + rest.lines, exact: rest.reached_eof }
        }
    };

    if lossy {
        out.push_str("\n\n[Note: the file is not valid UTF-8; undecodable bytes are shown as U+FFFD (\u{FFFD}).]");
    }
    if cut_lines > 0 {
        out.push_str(&format!(
            "\n\n[Note: {cut_lines} line(s) longer than {} bytes were cut; use grep to find text inside them.]",
            limits.max_line_bytes
        ));
    }
    let more = total.lines > last_shown || !total.exact;
    if more {
        let next = last_shown + 1;
        let hint = match stop {
            Stop::UserLimit => match total.exact {
                true => format!("[{} more lines in file. Use offset={next} to continue.]", total.lines - last_shown),
                false => format!(
                    "[At least {} more lines in file. Use offset={next} to continue.]",
                    total.lines - last_shown
                ),
            },
            Stop::ByteCap => format!(
                "[Showing lines {start}-{last_shown} of {} ({} limit). Use offset={next} to continue.]",
                total.describe(),
                format_size(limits.max_bytes as u64)
            ),
            Stop::LineCap | Stop::EndOfFile => {
                format!("[Showing lines {start}-{last_shown} of {}. Use offset={next} to continue.]", total.describe())
            }
        };
        out.push_str("\n\n");
        out.push_str(&hint);
    }
    let slice = TextSlice {
        target: &request.target,
        start,
        end: last_shown,
        total,
        next_offset: more.then_some(last_shown + 1),
        cut_lines,
        lossy,
    };
    Ok(answered(out, slice.metadata()))
}

/// The file's line count as far as we counted it.
struct LineTotal {
    lines: u64,
    /// False when counting stopped at the scan budget: `lines` is then a lower bound.
    exact: bool,
}

impl LineTotal {
    fn describe(&self) -> String {
        match self.exact {
            true => self.lines.to_string(),
            false => format!("at least {}", self.lines),
        }
    }
}

/// One line as read: at most the cap of its bytes, and its real length. `\r` before the `\n`
/// is not part of either, so CRLF files read like LF files.
struct CappedLine {
    kept: Vec<u8>,
    full_len: u64,
}

impl CappedLine {
    fn truncated(&self) -> bool {
        self.full_len > self.kept.len() as u64
    }
}

struct Advanced {
    lines: u64,
    reached_eof: bool,
    cancelled: bool,
}

/// Line-oriented reading that never holds more than one buffer plus one capped line.
/// A line ends at `\n`; a final line without `\n` counts, so "a\nb" and "a\nb\n" both have 2.
struct LineReader<R> {
    inner: R,
}

impl<R: BufRead> LineReader<R> {
    /// The next line with at most `cap` of its bytes kept, or `None` at end of file.
    fn next_line(&mut self, cap: usize) -> io::Result<Option<CappedLine>> {
        let mut kept = Vec::new();
        let mut full_len: u64 = 0;
        let mut last_byte = None;
        let mut saw_any = false;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            saw_any = true;
            let newline = memchr::memchr(b'\n', buf);
            let content = &buf[..newline.unwrap_or(buf.len())];
            let room = cap.saturating_sub(kept.len());
            kept.extend_from_slice(&content[..content.len().min(room)]);
            full_len += content.len() as u64;
            if let Some(&byte) = content.last() {
                last_byte = Some(byte);
            }
            let used = content.len() + usize::from(newline.is_some());
            self.inner.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if !saw_any {
            return Ok(None);
        }
        if last_byte == Some(b'\r') {
            full_len -= 1;
            kept.truncate(full_len.min(kept.len() as u64) as usize);
        }
        Ok(Some(CappedLine { kept, full_len }))
    }

    /// Passes over up to `max_lines` lines, reading at most about `budget` bytes, keeping none.
    fn advance(&mut self, max_lines: u64, budget: u64, cancel: &CancellationToken) -> io::Result<Advanced> {
        let mut lines = 0;
        let mut scanned: u64 = 0;
        // Bytes seen since the last newline: they form one more line if the file ends here.
        let mut partial = false;
        while lines < max_lines {
            if cancel.is_cancelled() {
                return Ok(Advanced { lines, reached_eof: false, cancelled: true });
            }
            if scanned >= budget {
                return Ok(Advanced { lines, reached_eof: false, cancelled: false });
            }
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(Advanced { lines: lines + u64::from(partial), reached_eof: true, cancelled: false });
            }
            let wanted = max_lines - lines;
            let mut used = buf.len();
            let mut found = 0;
            for at in memchr::memchr_iter(b'\n', buf) {
                found += 1;
                if found == wanted {
                    used = at + 1;
                    break;
                }
            }
            lines += found;
            partial = buf[used - 1] != b'\n';
            self.inner.consume(used);
            scanned += used as u64;
        }
        Ok(Advanced { lines, reached_eof: false, cancelled: false })
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};

    use super::*;

    const SMALL: ReadLimits =
        ReadLimits { max_lines: 5, max_bytes: 200, max_line_bytes: 20, max_image_bytes: 64, count_budget: 1 << 20 };

    struct Fixture {
        dir: tempfile::TempDir,
        workspace: Workspace,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).with_home(Some(PathBuf::from("/nonexistent-home")));
        Fixture { dir, workspace }
    }

    impl Fixture {
        fn read(&self, name: &str, content: &[u8], args: Value, limits: &ReadLimits) -> ToolResult {
            fs::write(self.dir.path().join(name), content).unwrap();
            let mut map = args.as_object().cloned().unwrap_or_default();
            map.insert("path".into(), json!(name));
            let request = parse(&self.workspace, &map).unwrap();
            let result = read_file(&request, limits, &CancellationToken::new());
            if !result.is_error {
                assert_fits_published_schema(&result);
            }
            result
        }
    }

    /// A successful read carries `structuredContent` that its published `outputSchema` accepts.
    fn assert_fits_published_schema(result: &ToolResult) {
        let schema = output_schema().to_value();
        let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
        let metadata = result.structured_content.as_ref().expect("a successful read has structuredContent");
        let errors: Vec<String> = validator.iter_errors(metadata).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{metadata} does not fit read's outputSchema: {errors:?}");
    }

    fn metadata(result: &ToolResult) -> Value {
        let mut metadata = result.structured_content.clone().expect("structuredContent");
        let path = metadata.as_object_mut().unwrap().remove("path").unwrap();
        assert!(Path::new(path.as_str().unwrap()).is_absolute(), "{path}");
        metadata
    }

    #[test]
    fn structured_metadata_says_which_lines_were_shown_and_where_to_continue() {
        let f = fixture();
        let slice = f.read("a", &lines(10), json!({"offset": 3, "limit": 2}), &SMALL);
        assert_eq!(
            metadata(&slice),
            json!({"kind": "text", "startLine": 3, "endLine": 4, "totalLines": 10, "totalLinesExact": true,
                "nextOffset": 5, "cutLines": 0, "lossyUtf8": false})
        );
        let whole = f.read("b", b"caf\xe9\nok\n", json!({}), &SMALL);
        assert_eq!(
            metadata(&whole),
            json!({"kind": "text", "startLine": 1, "endLine": 2, "totalLines": 2, "totalLinesExact": true,
                "nextOffset": null, "cutLines": 0, "lossyUtf8": true})
        );
        let long = f.read("c", format!("{}\nnext\n", "y".repeat(21)).as_bytes(), json!({}), &SMALL);
        assert_eq!(metadata(&long)["cutLines"], 1);
        let budget = ReadLimits { count_budget: 64, ..SMALL };
        let counted = f.read("d", &lines(100), json!({}), &budget);
        let counted = metadata(&counted);
        assert_eq!((&counted["totalLinesExact"], &counted["nextOffset"]), (&json!(false), &json!(6)));
        let empty = f.read("e", b"", json!({}), &SMALL);
        assert_eq!(
            metadata(&empty),
            json!({"kind": "text", "startLine": 1, "endLine": 0, "totalLines": 0, "totalLinesExact": true,
                "nextOffset": null, "cutLines": 0, "lossyUtf8": false})
        );
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.resize(64, 7);
        let image = f.read("pic.dat", &png, json!({}), &SMALL);
        assert_eq!(metadata(&image), json!({"kind": "image", "mimeType": "image/png", "sizeBytes": 64}));
    }

    #[test]
    fn the_metadata_schema_rejects_a_wrong_shape() {
        assert_eq!(output_schema().to_value()["type"], "object", "MCP wants an object schema at the root");
        let validator = jsonschema::validator_for(&output_schema().to_value()).unwrap();
        let mut text = json!({"kind": "text", "path": "/a", "startLine": 1, "endLine": 1, "totalLines": 1,
            "totalLinesExact": true, "nextOffset": null, "cutLines": 0, "lossyUtf8": false});
        assert!(validator.is_valid(&text));
        text["kind"] = json!("image");
        assert!(!validator.is_valid(&text), "an image has no line fields");
        let mut image = json!({"kind": "image", "path": "/a", "mimeType": "image/png", "sizeBytes": 1});
        assert!(validator.is_valid(&image));
        image["startLine"] = json!(1);
        assert!(!validator.is_valid(&image), "nor does it take them");
        assert!(
            !validator.is_valid(&json!({"path": "/a", "mimeType": "image/png", "sizeBytes": 1})),
            "kind is required"
        );
        assert!(!validator.is_valid(&json!({"kind": "image", "path": "/a", "mimeType": "image/bmp", "sizeBytes": 1})));
    }

    fn lines(n: usize) -> Vec<u8> {
        (1..=n).map(|i| format!("l{i}\n")).collect::<String>().into_bytes()
    }

    fn text(result: &ToolResult) -> &str {
        result.first_text().unwrap()
    }

    #[test]
    fn line_cap_edge_exactly_at_the_cap_has_no_hint_one_more_has_one() {
        let f = fixture();
        let at_cap = f.read("a", &lines(5), json!({}), &SMALL);
        assert!(!at_cap.is_error);
        assert_eq!(text(&at_cap), "     1\tl1\n     2\tl2\n     3\tl3\n     4\tl4\n     5\tl5");
        let over = f.read("b", &lines(6), json!({}), &SMALL);
        assert!(
            text(&over).ends_with("     5\tl5\n\n[Showing lines 1-5 of 6. Use offset=6 to continue.]"),
            "{}",
            text(&over)
        );
    }

    #[test]
    fn byte_cap_edge_counts_prefixes_and_separators() {
        // Each rendered line is 6 + 1 + 3 = 10 bytes ("     1\tl01"), joined by '\n'.
        let content: String = (1..=30).map(|i| format!("l{i:02}\n")).collect();
        let exactly = ReadLimits { max_lines: 100, max_bytes: 10 * 5 + 4, ..SMALL };
        let result = f_read(&content, &exactly);
        assert!(
            text(&result).contains("     5\tl05\n\n[Showing lines 1-5 of 30 (54B limit). Use offset=6"),
            "{}",
            text(&result)
        );
        let one_less = ReadLimits { max_bytes: 10 * 5 + 3, ..exactly };
        let result = f_read(&content, &one_less);
        assert!(
            text(&result).contains("     4\tl04\n\n[Showing lines 1-4 of 30 (53B limit). Use offset=5"),
            "{}",
            text(&result)
        );
    }

    fn f_read(content: &str, limits: &ReadLimits) -> ToolResult {
        fixture().read("f", content.as_bytes(), json!({}), limits)
    }

    #[test]
    fn offset_and_limit_select_lines_and_hint_the_rest() {
        let f = fixture();
        let result = f.read("a", &lines(10), json!({"offset": 3, "limit": 2}), &SMALL);
        assert_eq!(text(&result), "     3\tl3\n     4\tl4\n\n[6 more lines in file. Use offset=5 to continue.]");
        let tail = f.read("b", &lines(10), json!({"offset": 9, "limit": 2}), &SMALL);
        assert_eq!(text(&tail), "     9\tl9\n    10\tl10");
        let zero = f.read("c", &lines(2), json!({"offset": 0}), &SMALL);
        assert!(text(&zero).starts_with("     1\tl1"));
    }

    #[test]
    fn a_limit_above_the_line_cap_is_capped_with_the_cap_hint() {
        let result = fixture().read("a", &lines(10), json!({"limit": 8}), &SMALL);
        assert!(text(&result).ends_with("[Showing lines 1-5 of 10. Use offset=6 to continue.]"), "{}", text(&result));
    }

    #[test]
    fn offset_past_the_end_is_an_error_with_the_line_count() {
        let f = fixture();
        let result = f.read("a", &lines(3), json!({"offset": 4}), &SMALL);
        assert!(result.is_error);
        assert_eq!(text(&result), "Offset 4 is beyond end of file (3 lines total)");
        let last = f.read("b", b"a\nb", json!({"offset": 2}), &SMALL);
        assert_eq!(text(&last), "     2\tb");
    }

    #[test]
    fn empty_file_is_reported_not_an_error() {
        let result = fixture().read("empty.txt", b"", json!({}), &SMALL);
        assert!(!result.is_error);
        assert_eq!(text(&result), "[empty.txt is empty.]");
    }

    #[test]
    fn long_lines_are_cut_at_the_cap_with_a_marker_and_a_note() {
        let f = fixture();
        let exactly = f.read("a", format!("{}\n", "x".repeat(20)).as_bytes(), json!({}), &SMALL);
        assert_eq!(text(&exactly), format!("     1\t{}", "x".repeat(20)));
        let over = f.read("b", format!("{}\r\nnext\n", "y".repeat(21)).as_bytes(), json!({}), &SMALL);
        let expected = format!("     1\t{}{}\n     2\tnext", "y".repeat(20), truncation_marker(21));
        assert!(text(&over).starts_with(&expected), "{}", text(&over));
        assert!(text(&over).contains("1 line(s) longer than 20 bytes were cut"));
    }

    #[test]
    fn crlf_is_not_shown_and_a_line_of_cap_plus_cr_is_not_cut() {
        let content = format!("{}\r\nb\r\n", "z".repeat(20));
        let result = fixture().read("a", content.as_bytes(), json!({}), &SMALL);
        assert_eq!(text(&result), format!("     1\t{}\n     2\tb", "z".repeat(20)));
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily_with_a_note() {
        let result = fixture().read("latin1.txt", b"caf\xe9\nok\n", json!({}), &SMALL);
        assert!(!result.is_error);
        assert!(text(&result).starts_with("     1\tcaf\u{FFFD}\n     2\tok\n\n[Note: the file is not valid UTF-8"));
    }

    #[test]
    fn binary_is_refused_with_the_offset_of_the_nul() {
        let result = fixture().read("bin", b"ELF\x00\x01\x02", json!({}), &SMALL);
        assert!(result.is_error);
        assert!(text(&result).contains("looks like a binary file (6B, NUL byte at offset 3)"), "{}", text(&result));
    }

    #[test]
    fn images_by_magic_bytes_up_to_the_cap() {
        let f = fixture();
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.resize(64, 7);
        let result = f.read("pic.dat", &png, json!({}), &SMALL);
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.content[0], Content::Text { text: "Read image file [image/png]".into() });
        let Content::Image { data, mime_type } = &result.content[1] else { panic!("no image block") };
        assert_eq!(mime_type, "image/png");
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap(), png);

        png.push(0);
        let over = f.read("big.png", &png, json!({}), &SMALL);
        assert!(over.is_error);
        assert!(text(&over).contains("is 65B, over the 64B limit"), "{}", text(&over));
    }

    #[test]
    fn every_supported_image_type_is_recognised() {
        assert_eq!(image_mime(b"\xff\xd8\xff\xe0rest"), Some("image/jpeg"));
        assert_eq!(image_mime(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_mime(b"GIF87a..."), Some("image/gif"));
        assert_eq!(image_mime(b"RIFF\x10\x00\x00\x00WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime(b"RIFF\x10\x00\x00\x00WAVEfmt "), None);
        assert_eq!(image_mime(b"plain text"), None);
    }

    #[test]
    fn counting_stops_at_the_budget_and_says_at_least() {
        let budget = ReadLimits { count_budget: 64, ..SMALL };
        let result = fixture().read("a", &lines(100), json!({}), &budget);
        let text = text(&result);
        assert!(text.contains("[Showing lines 1-5 of at least "), "{text}");
        assert!(text.ends_with("Use offset=6 to continue.]"), "{text}");
    }

    #[test]
    fn advance_counts_a_final_line_without_newline() {
        let cancel = CancellationToken::new();
        for (content, expected) in [(&b"a\nb"[..], 2), (b"a\nb\n", 2), (b"", 0), (b"\n", 1), (b"\n\n", 2)] {
            let mut reader = LineReader { inner: BufReader::with_capacity(2, content) };
            let advanced = reader.advance(u64::MAX, u64::MAX, &cancel).unwrap();
            assert_eq!((advanced.lines, advanced.reached_eof), (expected, true), "{content:?}");
        }
    }

    #[test]
    fn a_cancelled_read_stops() {
        let f = fixture();
        fs::write(f.dir.path().join("a"), lines(10)).unwrap();
        let map = json!({"path": "a"}).as_object().cloned().unwrap();
        let request = parse(&f.workspace, &map).unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = read_file(&request, &SMALL, &cancel);
        assert!(result.is_error);
        assert_eq!(text(&result), CANCELLED);
    }
}
