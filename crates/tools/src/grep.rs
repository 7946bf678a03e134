//! `grep`: regex search over file contents with ripgrep's library crates.
//!
//! OpenClaw has no grep tool (tools-bridge.md §13.1). The upstream bridge shelled out to
//! `grep -rn -E`, swallowed every error as "(no matches)" and cut at 500 lines (§4.6). We keep
//! its `pattern`/`path`/`include` (now `glob`, `include` still accepted) and its 500-entry
//! default, and take the rest of the schema from Claude Code's Grep, which MCP clients already
//! know: `output_mode`, `-i`, `-n`, `-A`/`-B`/`-C`, `type`, `multiline`, `head_limit`.
//!
//! Regexes are Rust regex syntax (grep-regex); a bad one returns the parser's own message with
//! its caret. Files come from the shared gitignore-aware walk, filtered by ripgrep's glob
//! overrides and file types; each is searched by grep-searcher in a bounded buffer (never read
//! whole, except in multiline mode, which is capped by [`GrepLimits::heap_limit`]). Binary
//! files (a NUL byte) are skipped and counted. Output stops at `head_limit` entries or the byte
//! cap, whichever comes first, and says so.
//!
//! Output format, like ripgrep with `--no-heading`: `path:line:text` for matches,
//! `path-line-text` for context lines, `--` between non-adjacent groups; `path` is relative to
//! the workspace root when inside it.

use std::fs;
use std::io;

use clawmcp_mcp::{CallContext, Tool, ToolAnnotations, ToolResult};
use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{Args, Param};
use crate::fs_error;
use crate::text::{display_line, format_size, strip_line_terminator};
use crate::walk::{self, ALWAYS_SKIPPED_DIRS, Problems};
use crate::workspace::{TargetPath, Workspace};

pub(crate) const NAME: &str = "grep";

const PATTERN: Param = Param::new(&["pattern"]);
const PATH: Param = Param::new(&["path"]);
const GLOB: Param = Param::with_legacy(&["glob", "include"], 1);
const FILE_TYPE: Param = Param::new(&["type"]);
const OUTPUT_MODE: Param = Param::new(&["output_mode"]);
const IGNORE_CASE: Param = Param::with_legacy(&["-i", "ignore_case"], 1);
const LINE_NUMBERS: Param = Param::new(&["-n"]);
const AFTER: Param = Param::new(&["-A"]);
const BEFORE: Param = Param::new(&["-B"]);
const CONTEXT: Param = Param::with_legacy(&["-C", "context"], 1);
const MULTILINE: Param = Param::new(&["multiline"]);
const HEAD_LIMIT: Param = Param::new(&["head_limit"]);

/// The caps of one call. Unit tests shrink them to probe each edge cheaply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GrepLimits {
    /// Entries (lines, or files) returned when `head_limit` is not given (the bridge's 500).
    pub default_head_limit: u64,
    /// The largest `head_limit` accepted.
    pub max_head_limit: u64,
    /// Bytes of output text, whatever `head_limit` says.
    pub max_bytes: usize,
    /// Bytes shown of one line (minified files have megabyte lines).
    pub max_line_bytes: usize,
    /// The largest `-A`/`-B`/`-C`.
    pub max_context: u64,
    /// Memory one file's search may use: its longest line, or the whole file in multiline
    /// mode. A file over it is reported as not searched.
    pub heap_limit: usize,
}

impl GrepLimits {
    pub(crate) const DEFAULT: GrepLimits = GrepLimits {
        default_head_limit: 500,
        max_head_limit: 10_000,
        max_bytes: 50 * 1024,
        max_line_bytes: 500,
        max_context: 100,
        heap_limit: 16 * 1024 * 1024,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutputMode {
    Content,
    FilesWithMatches,
    Count,
}

impl OutputMode {
    const NAMES: [&'static str; 3] = ["content", "files_with_matches", "count"];

    fn parse(name: &str) -> Option<OutputMode> {
        match name {
            "content" => Some(OutputMode::Content),
            "files_with_matches" => Some(OutputMode::FilesWithMatches),
            "count" => Some(OutputMode::Count),
            _ => None,
        }
    }

    /// What one output entry is, for the truncation note.
    fn unit(self) -> &'static str {
        match self {
            OutputMode::Content => "lines",
            OutputMode::FilesWithMatches | OutputMode::Count => "files",
        }
    }
}

pub(crate) fn descriptor() -> Tool {
    let limits = GrepLimits::DEFAULT;
    let context = |what: &str| json!({"type": "number", "description": format!("Lines to show {what} each match (output_mode \"content\" only)")});
    Tool {
        name: NAME.into(),
        description: format!(
            "Search file contents with a regular expression (Rust regex syntax, as ripgrep: e.g. \"fn\\s+\\w+\", \
             \"log.*Error\"; escape literal braces). Searches `path` (a file or directory, default the workspace \
             root), honouring .gitignore and .ignore, skipping binary files and {}. Filter files with `glob` \
             (e.g. \"*.{{ts,tsx}}\") or `type` (ripgrep type names: rust, py, js, ts, go, java, ...). \
             output_mode \"content\" (default) prints path:line:text, with context lines as path-line-text; \
             \"files_with_matches\" prints matching paths; \"count\" prints path:count. Output is limited to \
             head_limit entries (default {}, at most {}) and {}.",
            ALWAYS_SKIPPED_DIRS.join(", "),
            limits.default_head_limit,
            limits.max_head_limit,
            format_size(limits.max_bytes as u64),
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression to search for in file contents"},
                "path": {
                    "type": "string",
                    "description": "File or directory to search in (relative or absolute); defaults to the workspace root",
                },
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.js\" or \"*.{ts,tsx}\""},
                "type": {"type": "string", "description": "Only search files of this ripgrep type, e.g. \"rust\", \"py\", \"js\""},
                "output_mode": {
                    "type": "string",
                    "enum": OutputMode::NAMES,
                    "description": "\"content\" (matching lines, default), \"files_with_matches\" (paths) or \"count\" (matches per file)",
                },
                "-i": {"type": "boolean", "description": "Case-insensitive search"},
                "-n": {"type": "boolean", "description": "Show line numbers in content output (default true)"},
                "-A": context("after"),
                "-B": context("before"),
                "-C": context("before and after"),
                "multiline": {
                    "type": "boolean",
                    "description": "Let the pattern span lines; . also matches newlines (default false)",
                },
                "head_limit": {
                    "type": "number",
                    "description": format!("Return at most this many lines/files (default {}, at most {})", limits.default_head_limit, limits.max_head_limit),
                },
            },
            "required": ["pattern"],
        }).into(),
        annotations: Some(ToolAnnotations::READ_ONLY),
    }
}

struct GrepRequest {
    pattern: String,
    base: TargetPath,
    glob: Option<String>,
    file_type: Option<String>,
    mode: OutputMode,
    ignore_case: bool,
    line_numbers: bool,
    before: usize,
    after: usize,
    multiline: bool,
    head_limit: u64,
}

pub(crate) async fn run(workspace: &Workspace, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
    let limits = GrepLimits::DEFAULT;
    let request = match parse(workspace, args, &limits) {
        Ok(request) => request,
        Err(message) => return ToolResult::error(message),
    };
    let workspace = workspace.clone();
    let cancel = ctx.cancel.clone();
    crate::blocking(NAME, move || search(&request, &workspace, &limits, &cancel).unwrap_or_else(ToolResult::error))
        .await
}

fn parse(workspace: &Workspace, args: &Map<String, Value>, limits: &GrepLimits) -> Result<GrepRequest, String> {
    let args = Args::new(args);
    let text = |e: crate::args::ArgError| e.to_string();
    let pattern = args.required_string(PATTERN, false).map_err(text)?;
    let base = match args.string(PATH).map_err(text)? {
        Some(path) if !path.trim().is_empty() => workspace.resolve(&path)?,
        _ => workspace.root_target(),
    };
    let mode = match args.string(OUTPUT_MODE).map_err(text)? {
        None => OutputMode::Content,
        Some(name) => OutputMode::parse(&name).ok_or_else(|| {
            format!("Parameter `output_mode` must be one of {}, got {name:?}", OutputMode::NAMES.join(", "))
        })?,
    };
    let context = |param| args.integer(param, 0, limits.max_context).map_err(text);
    let around = context(CONTEXT)?.unwrap_or(0);
    // As in ripgrep, -A and -B override -C for their side.
    let after = context(AFTER)?.unwrap_or(around) as usize;
    let before = context(BEFORE)?.unwrap_or(around) as usize;
    Ok(GrepRequest {
        pattern,
        base,
        glob: args.string(GLOB).map_err(text)?.filter(|g| !g.trim().is_empty()),
        file_type: args.string(FILE_TYPE).map_err(text)?.filter(|t| !t.trim().is_empty()),
        mode,
        ignore_case: args.bool(IGNORE_CASE).map_err(text)?.unwrap_or(false),
        line_numbers: args.bool(LINE_NUMBERS).map_err(text)?.unwrap_or(true),
        before,
        after,
        multiline: args.bool(MULTILINE).map_err(text)?.unwrap_or(false),
        head_limit: args
            .integer(HEAD_LIMIT, 1, limits.max_head_limit)
            .map_err(text)?
            .unwrap_or(limits.default_head_limit),
    })
}

fn build_matcher(request: &GrepRequest) -> Result<RegexMatcher, String> {
    let mut builder = RegexMatcherBuilder::new();
    // CRLF mode makes `$` match before "\r\n", so Windows files search like Unix ones.
    builder.case_insensitive(request.ignore_case).crlf(true).ban_byte(Some(0));
    if request.multiline {
        builder.line_terminator(None).multi_line(true).dot_matches_new_line(true);
    }
    builder.build(&request.pattern).map_err(|e| {
        let hint = match e.kind() {
            grep_regex::ErrorKind::NotAllowed(_) => " Set multiline to true to match across lines.",
            _ => " Fix the pattern (Rust regex syntax; escape literal ( ) [ ] { } . * + ? | \\ ^ $ with \\).",
        };
        format!("Invalid regex {:?}: {e}{hint}", request.pattern)
    })
}

fn build_searcher(request: &GrepRequest, limits: &GrepLimits) -> Searcher {
    let show_context = request.mode == OutputMode::Content;
    SearcherBuilder::new()
        .line_terminator(LineTerminator::crlf())
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(if show_context { request.before } else { 0 })
        .after_context(if show_context { request.after } else { 0 })
        .multi_line(request.multiline)
        .heap_limit(Some(limits.heap_limit))
        .build()
}

fn search(
    request: &GrepRequest,
    workspace: &Workspace,
    limits: &GrepLimits,
    cancel: &CancellationToken,
) -> Result<ToolResult, String> {
    let base = &request.base;
    let base_is_dir = match fs::metadata(&base.abs) {
        Ok(meta) => meta.is_dir(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("Path not found: {}. {}", base.describe(), base.lookup_hint()));
        }
        Err(e) => return Err(fs_error::describe("search", base, &e)),
    };
    let matcher = build_matcher(request)?;
    let mut searcher = build_searcher(request, limits);
    let mut walker = walk::builder(&base.abs);
    if let Some(glob) = &request.glob {
        let root = if base_is_dir { base.abs.as_path() } else { base.abs.parent().unwrap_or(&base.abs) };
        let overrides = OverrideBuilder::new(root)
            .add(glob)
            .and_then(|builder| builder.build())
            .map_err(|e| format!("Invalid glob filter {glob:?}: {e}"))?;
        walker.overrides(overrides);
    }
    if let Some(name) = &request.file_type {
        let types = TypesBuilder::new().add_defaults().select(name).build().map_err(|e| {
            format!("Invalid file type {name:?}: {e}. Use a ripgrep type name (rust, py, js, ts, go, java, c, cpp, md, json, ...) or a glob.")
        })?;
        walker.types(types);
    }

    let mut output = Output::new(request, limits);
    let mut problems = Problems::default();
    let mut binary_files = 0usize;
    let mut files = walker.build();
    while let Some(entry) = walk::next_file(&mut files, cancel, &mut problems)? {
        let shown = workspace.display(entry.path());
        let mut sink = FileSink::new(request.mode, output.entries_wanted(), limits.max_line_bytes);
        if let Err(err) = searcher.search_path(&matcher, entry.path(), &mut sink) {
            problems.record(format!("{shown}: {err}"));
            continue;
        }
        if sink.binary {
            binary_files += 1;
            continue;
        }
        if !output.add_file(&shown, sink) {
            break;
        }
    }
    Ok(ToolResult::text(output.finish(request, &problems, binary_files)))
}

/// One output line of one file, before the path is prefixed.
enum Entry {
    Match { line: u64, text: String },
    Context { line: u64, text: String },
    Break,
}

/// Collects one file's results, so a file found to be binary midway is dropped as a whole.
struct FileSink {
    mode: OutputMode,
    /// Entries worth collecting: one more than the output can still take proves "more exist".
    wanted: usize,
    max_line_bytes: usize,
    entries: Vec<Entry>,
    counted: usize,
    matching_lines: u64,
    binary: bool,
}

impl FileSink {
    fn new(mode: OutputMode, wanted: usize, max_line_bytes: usize) -> Self {
        FileSink { mode, wanted, max_line_bytes, entries: Vec::new(), counted: 0, matching_lines: 0, binary: false }
    }

    fn push(&mut self, entry: Entry) -> bool {
        if !matches!(entry, Entry::Break) {
            self.counted += 1;
        }
        self.entries.push(entry);
        self.counted < self.wanted
    }

    fn line_text(&self, line: &[u8]) -> String {
        display_line(strip_line_terminator(line), self.max_line_bytes).0
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        match self.mode {
            OutputMode::FilesWithMatches => {
                self.matching_lines += 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.matching_lines += mat.lines().count() as u64;
                Ok(true)
            }
            OutputMode::Content => {
                for (offset, line) in mat.lines().enumerate() {
                    self.matching_lines += 1;
                    let text = self.line_text(line);
                    if !self.push(Entry::Match { line: first + offset as u64, text }) {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let text = self.line_text(context.bytes());
        Ok(self.push(Entry::Context { line: context.line_number().unwrap_or(0), text }))
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        self.entries.push(Entry::Break);
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// The text being built, with both caps.
struct Output {
    mode: OutputMode,
    line_numbers: bool,
    context: bool,
    head_limit: usize,
    max_bytes: usize,
    text: String,
    entries: usize,
    files: usize,
    truncated_by: Option<Cap>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    HeadLimit,
    Bytes,
}

impl Output {
    fn new(request: &GrepRequest, limits: &GrepLimits) -> Self {
        Output {
            mode: request.mode,
            line_numbers: request.line_numbers,
            context: request.before > 0 || request.after > 0,
            head_limit: request.head_limit as usize,
            max_bytes: limits.max_bytes,
            text: String::new(),
            entries: 0,
            files: 0,
            truncated_by: None,
        }
    }

    fn entries_wanted(&self) -> usize {
        self.head_limit - self.entries + 1
    }

    /// Appends one file's results; false once a cap is hit (stop searching).
    fn add_file(&mut self, path: &str, sink: FileSink) -> bool {
        if sink.matching_lines == 0 {
            return true;
        }
        let lines: Vec<(bool, String)> = match self.mode {
            OutputMode::FilesWithMatches => vec![(true, path.to_string())],
            OutputMode::Count => vec![(true, format!("{path}:{}", sink.matching_lines))],
            OutputMode::Content => {
                let mut lines = Vec::with_capacity(sink.entries.len() + 1);
                if self.context && self.files > 0 {
                    lines.push((false, "--".to_string()));
                }
                lines.extend(sink.entries.into_iter().map(|entry| self.render(path, entry)));
                lines
            }
        };
        self.files += 1;
        for (is_entry, line) in lines {
            if is_entry && self.entries == self.head_limit {
                self.truncated_by = Some(Cap::HeadLimit);
                return false;
            }
            let separator = usize::from(!self.text.is_empty());
            if self.text.len() + separator + line.len() > self.max_bytes {
                self.truncated_by = Some(Cap::Bytes);
                return false;
            }
            if separator == 1 {
                self.text.push('\n');
            }
            self.text.push_str(&line);
            self.entries += usize::from(is_entry);
        }
        true
    }

    fn render(&self, path: &str, entry: Entry) -> (bool, String) {
        match (entry, self.line_numbers) {
            (Entry::Match { line, text }, true) => (true, format!("{path}:{line}:{text}")),
            (Entry::Match { text, .. }, false) => (true, format!("{path}:{text}")),
            (Entry::Context { line, text }, true) => (true, format!("{path}-{line}-{text}")),
            (Entry::Context { text, .. }, false) => (true, format!("{path}-{text}")),
            (Entry::Break, _) => (false, "--".to_string()),
        }
    }

    fn finish(mut self, request: &GrepRequest, problems: &Problems, binary_files: usize) -> String {
        if self.text.is_empty() && self.truncated_by.is_none() {
            self.text = format!("No matches found for {:?} in {}.", request.pattern, request.base.describe());
        }
        let mut notes = Vec::new();
        match self.truncated_by {
            Some(Cap::HeadLimit) => notes.push(format!(
                "[Output limited to head_limit={} {}; more results exist. Narrow the pattern, path, glob or type, \
                 or raise head_limit.]",
                self.head_limit,
                self.mode.unit()
            )),
            Some(Cap::Bytes) => notes.push(format!(
                "[Output truncated at {}; more results exist. Narrow the pattern, path, glob or type, or use \
                 output_mode \"files_with_matches\".]",
                format_size(self.max_bytes as u64)
            )),
            None => {}
        }
        if binary_files > 0 {
            notes.push(format!("[Skipped {binary_files} binary file(s).]"));
        }
        notes.extend(problems.note());
        for note in notes {
            self.text.push_str("\n\n");
            self.text.push_str(&note);
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const SMALL: GrepLimits = GrepLimits {
        default_head_limit: 3,
        max_head_limit: 10,
        max_bytes: 60,
        max_line_bytes: 10,
        max_context: 2,
        heap_limit: 1 << 20,
    };

    fn grep(files: &[(&str, &str)], args: Value, limits: &GrepLimits) -> ToolResult {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            fs::write(dir.path().join(name), content).unwrap();
        }
        let workspace = Workspace::new(dir.path()).with_home(Some(PathBuf::from("/h")));
        match parse(&workspace, args.as_object().unwrap(), limits) {
            Ok(request) => {
                search(&request, &workspace, limits, &CancellationToken::new()).unwrap_or_else(ToolResult::error)
            }
            Err(message) => ToolResult::error(message),
        }
    }

    fn text(result: &ToolResult) -> &str {
        result.first_text().unwrap()
    }

    #[test]
    fn head_limit_edge_exactly_full_has_no_note_one_more_has_one() {
        let at_limit = grep(&[("a", "x1\nx2\nx3\n")], json!({"pattern": "x"}), &SMALL);
        assert_eq!(text(&at_limit), "a:1:x1\na:2:x2\na:3:x3");
        let over = grep(&[("a", "x1\nx2\nx3\nx4\n")], json!({"pattern": "x"}), &SMALL);
        assert_eq!(
            text(&over),
            "a:1:x1\na:2:x2\na:3:x3\n\n[Output limited to head_limit=3 lines; more results exist. Narrow the \
             pattern, path, glob or type, or raise head_limit.]"
        );
    }

    #[test]
    fn head_limit_counts_files_across_files_in_file_modes() {
        let files = [("a", "x\n"), ("b", "x\n"), ("c", "x\n"), ("d", "x\n")];
        let result =
            grep(&files, json!({"pattern": "x", "output_mode": "files_with_matches", "head_limit": 2}), &SMALL);
        assert!(text(&result).starts_with("a\nb\n\n[Output limited to head_limit=2 files;"), "{}", text(&result));
    }

    #[test]
    fn byte_cap_edge() {
        // Each line "a:N:xxxxxxxxxN" is 14 bytes; three with their two separators are 44.
        let content = "xxxxxxxxx1\nxxxxxxxxx2\nxxxxxxxxx3\n";
        let fits = GrepLimits { max_bytes: 3 * 14 + 2, ..SMALL };
        let result = grep(&[("a", content)], json!({"pattern": "x"}), &fits);
        assert_eq!(text(&result), "a:1:xxxxxxxxx1\na:2:xxxxxxxxx2\na:3:xxxxxxxxx3");
        let short = GrepLimits { max_bytes: 3 * 14 + 1, ..SMALL };
        let result = grep(&[("a", content)], json!({"pattern": "x"}), &short);
        assert!(
            text(&result).starts_with("a:1:xxxxxxxxx1\na:2:xxxxxxxxx2\n\n[Output truncated at 43B;"),
            "{}",
            text(&result)
        );
    }

    #[test]
    fn long_lines_are_cut_at_the_line_cap() {
        let result = grep(&[("a", "0123456789A\n")], json!({"pattern": "A"}), &SMALL);
        assert_eq!(text(&result), format!("a:1:0123456789{}", crate::text::truncation_marker(11)));
    }

    #[test]
    fn context_values_above_the_cap_are_rejected() {
        let ok = grep(&[("a", "x\n")], json!({"pattern": "x", "-C": 2}), &SMALL);
        assert!(!ok.is_error);
        let over = grep(&[("a", "x\n")], json!({"pattern": "x", "-C": 3}), &SMALL);
        assert_eq!(text(&over), "Parameter `-C` must be an integer from 0 to 2, got 3");
    }

    #[test]
    fn head_limit_above_the_max_is_rejected() {
        let over = grep(&[("a", "x\n")], json!({"pattern": "x", "head_limit": 11}), &SMALL);
        assert!(over.is_error);
        assert!(text(&over).contains("from 1 to 10"));
    }

    #[test]
    fn a_literal_newline_without_multiline_says_how_to_fix_it() {
        let result = grep(&[("a", "x\n")], json!({"pattern": "a\\nb"}), &SMALL);
        assert!(result.is_error);
        assert!(text(&result).contains("Set multiline to true"), "{}", text(&result));
    }

    #[test]
    fn a_file_over_the_heap_limit_is_reported_not_silently_missed() {
        let tiny = GrepLimits { heap_limit: 4096, ..SMALL };
        let big = format!("needle{}\n", "y".repeat(20_000));
        let result =
            grep(&[("big", &big), ("small", "needle\n")], json!({"pattern": "needle", "multiline": true}), &tiny);
        let text = text(&result);
        assert!(text.starts_with("small:1:needle"), "{text}");
        assert!(text.contains("[Note: 1 path(s) could not be read: big: "), "{text}");
    }
}
