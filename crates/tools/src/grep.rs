//! `grep`: regex search over file contents with ripgrep's library crates.
//!
//! OpenClaw has no grep tool (`docs/tools-bridge.md` §2). The upstream bridge shelled out to
//! `grep -rn -E`, swallowed every error as "(no matches)" and cut at 500 lines. We keep
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

use clawmcp_fs::{Symlinks, not_regular_kind, open_regular};
use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolAnnotations, ToolResult};
use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::args::{Args, Param};
use crate::fs_error;
use crate::text::{display_line, format_size, strip_line_terminator};
use crate::walk::{self, ALWAYS_SKIPPED_DIRS, Problems};
use crate::workspace::{TargetPath, Workspace};
use crate::{BridgeTool, ToolContext};

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
    /// Bytes the compiled regex (its NFA, each direction) may take; a bigger one is refused
    /// with an error. Without it a 20-character pattern such as `[\p{L}\p{N}]{5000}` compiles
    /// for seconds into ~170 MB.
    pub regex_size_limit: usize,
    /// Bytes of the lazy DFA's cache (each direction); past it the search falls back to
    /// slower engines instead of growing.
    pub regex_dfa_size_limit: usize,
}

impl GrepLimits {
    pub(crate) const DEFAULT: GrepLimits = GrepLimits {
        default_head_limit: 500,
        max_head_limit: 10_000,
        max_bytes: 50 * 1024,
        max_line_bytes: 500,
        max_context: 100,
        heap_limit: 16 * 1024 * 1024,
        regex_size_limit: 8 * 1024 * 1024,
        regex_dfa_size_limit: 8 * 1024 * 1024,
    };

    /// What one search can hold at most, roughly: the line (or multiline file) buffer, the
    /// regex in both directions with its DFA caches, and 16 MiB for the one-pass DFA, the
    /// literal prefilter and the rest grep-regex builds (its own fixed limits: 10 MiB and 1 MiB).
    #[cfg(test)]
    pub(crate) const fn memory_bound(&self) -> usize {
        self.heap_limit + 2 * (self.regex_size_limit + self.regex_dfa_size_limit) + 16 * 1024 * 1024
    }
}

/// Searches that run at once, process-wide; more wait (cancellably) for a slot. With the MCP
/// in-flight cap alone (32) the regex and buffer limits above would still allow 32 times
/// [`GrepLimits::memory_bound`]; this keeps grep's memory at 4 times it, and on the small
/// machines clawmcp runs on more parallel searches would only share the same cores and disk.
pub(crate) const MAX_CONCURRENT_SEARCHES: usize = 4;

static SEARCH_SLOTS: Semaphore = Semaphore::const_new(MAX_CONCURRENT_SEARCHES);

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

/// The `grep` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Numbers and booleans may come as strings; the parser reads them (see the crate docs).
    crate::local_tool(descriptor(), Checking::StringifiedScalars, context, |context, arguments, ctx| async move {
        run(&context.workspace, &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    let limits = GrepLimits::DEFAULT;
    let context = |what: &str| json!({"type": "number", "description": format!("Lines to show {what} each match (output_mode \"content\" only)")});
    Tool { title: None, output_schema: None,
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
    let slot = tokio::select! {
        slot = SEARCH_SLOTS.acquire() => slot.expect("the search slots are never closed"),
        () = ctx.cancel.cancelled() => return ToolResult::error(CANCELLED),
    };
    let workspace = workspace.clone();
    let cancel = ctx.cancel.clone();
    crate::blocking(NAME, move || {
        let _slot = slot;
        search(&request, &workspace, &limits, &cancel).unwrap_or_else(ToolResult::error)
    })
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
    let glob = args.string(GLOB).map_err(text)?.filter(|g| !g.trim().is_empty());
    if let Some(glob) = &glob {
        walk::check_glob_length("glob", glob)?;
    }
    Ok(GrepRequest {
        pattern,
        base,
        glob,
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

fn build_matcher(request: &GrepRequest, limits: &GrepLimits) -> Result<RegexMatcher, String> {
    let mut builder = RegexMatcherBuilder::new();
    // CRLF mode makes `$` match before "\r\n", so Windows files search like Unix ones.
    builder
        .case_insensitive(request.ignore_case)
        .crlf(true)
        .ban_byte(Some(0))
        .size_limit(limits.regex_size_limit)
        .dfa_size_limit(limits.regex_dfa_size_limit);
    if request.multiline {
        builder.line_terminator(None).multi_line(true).dot_matches_new_line(true);
    }
    builder.build(&request.pattern).map_err(|e| {
        if is_size_limit_error(&e) {
            return format!(
                "The regex {:?} is too big to compile: it needs more than the {} grep allows one pattern, so \
                 that no search can exhaust memory. Large counted repetitions are the usual cause, above all of \
                 Unicode classes (\\w, \\p{{L}}, [^...]), which expand to many states: use a smaller count (or \
                 + / *), an ASCII class such as [A-Za-z0-9_] or (?-u:\\w), or search for a literal part of the \
                 text.",
                request.pattern,
                format_size(limits.regex_size_limit as u64)
            );
        }
        let hint = match e.kind() {
            grep_regex::ErrorKind::NotAllowed(_) => " Set multiline to true to match across lines.",
            _ => " Fix the pattern (Rust regex syntax; escape literal ( ) [ ] { } . * + ? | \\ ^ $ with \\).",
        };
        format!("Invalid regex {:?}: {e}{hint}", request.pattern)
    })
}

/// grep-regex reports an exceeded size limit only as text (`ErrorKind::Regex`); a unit test
/// pins the wording, so an upgrade that changes it fails loudly instead of losing the hint.
fn is_size_limit_error(error: &grep_regex::Error) -> bool {
    matches!(error.kind(), grep_regex::ErrorKind::Regex(message) if message.contains("exceeds size limit"))
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
    // A path named directly is opened (non-blocking, type-checked) before anything else, so a
    // FIFO or a device is refused at once instead of read.
    let single_file = match base_is_dir {
        true => None,
        false => Some(open_regular(&base.abs, Symlinks::Follow).map_err(|e| fs_error::describe("search", base, &e))?),
    };
    let matcher = build_matcher(request, limits)?;
    let mut searcher = build_searcher(request, limits);
    let mut output = Output::new(request, limits);
    let mut problems = Problems::default();
    let mut binary_files = 0usize;
    let mut search_one = |shown: String, file: &fs::File, output: &mut Output, problems: &mut Problems| {
        let mut sink = FileSink::new(request.mode, output.entries_wanted(), limits.max_line_bytes);
        if let Err(err) = searcher.search_file(&matcher, file, &mut sink) {
            problems.record(format!("{shown}: {err}"));
            return true;
        }
        if sink.binary {
            binary_files += 1;
            return true;
        }
        output.add_file(&shown, sink)
    };
    if let Some((file, _)) = single_file {
        // As with ripgrep, `glob` and `type` filter what a directory walk finds, not a file
        // named directly.
        search_one(workspace.display(&base.abs), &file, &mut output, &mut problems);
    } else {
        let mut files = walk::files(&base.abs, filters(request)?);
        while let Some(entry) = files.next(cancel, &mut problems)? {
            let shown = workspace.display(entry.path());
            // The walk saw a regular file, but the name may have been swapped since: open it
            // non-blocking and check the descriptor, never a FIFO or a device.
            let file = match open_regular(entry.path(), Symlinks::Refuse) {
                Ok((file, _)) => file,
                Err(err) => {
                    let what = match not_regular_kind(&err) {
                        Some(kind) => format!("it is {kind}, not a regular file; not searched"),
                        None => err.to_string(),
                    };
                    problems.record(format!("{shown}: {what}"));
                    continue;
                }
            };
            if !search_one(shown, &file, &mut output, &mut problems) {
                break;
            }
        }
    }
    Ok(ToolResult::text(output.finish(request, &problems, binary_files)))
}

/// The walk's `glob` and `type` filters.
fn filters(request: &GrepRequest) -> Result<walk::Filters, String> {
    let overrides = match &request.glob {
        None => None,
        Some(glob) => Some(
            OverrideBuilder::new(&request.base.abs)
                .add(glob)
                .and_then(|builder| builder.build())
                .map_err(|e| format!("Invalid glob filter {glob:?}: {e}"))?,
        ),
    };
    let types = match &request.file_type {
        None => None,
        Some(name) => Some(TypesBuilder::new().add_defaults().select(name).build().map_err(|e| {
            format!("Invalid file type {name:?}: {e}. Use a ripgrep type name (rust, py, js, ts, go, java, c, cpp, md, json, ...) or a glob.")
        })?),
    };
    Ok(walk::Filters { overrides, types })
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
        regex_size_limit: 8 << 20,
        regex_dfa_size_limit: 8 << 20,
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

    #[test]
    fn a_pattern_over_the_size_limit_gets_the_size_error_and_a_fix() {
        let hostile = json!({"pattern": r"[\p{L}\p{N}]{5000}"});
        let result = grep(&[("a", "text\n")], hostile, &GrepLimits::DEFAULT);
        assert!(result.is_error);
        assert!(
            text(&result).starts_with(
                r#"The regex "[\\p{L}\\p{N}]{5000}" is too big to compile: it needs more than the 8MB grep allows"#
            ),
            "{}",
            text(&result)
        );
        // The same pattern class just under the limit compiles and searches.
        let fits = grep(&[("a", &format!("{}\n", "é".repeat(50)))], json!({"pattern": r"[\p{L}\p{N}]{50}"}), &SMALL);
        assert!(text(&fits).starts_with("a:1:"), "{}", text(&fits));
        let tiny = GrepLimits { regex_size_limit: 64 * 1024, ..SMALL };
        let over = grep(&[("a", "x\n")], json!({"pattern": r"[\p{L}\p{N}]{50}"}), &tiny);
        assert!(text(&over).contains("is too big to compile: it needs more than the 64KB"), "{}", text(&over));
    }

    #[test]
    fn the_glob_filter_is_limited_in_length() {
        let at_limit = grep(&[("a", "x\n")], json!({"pattern": "x", "glob": "?".repeat(walk::MAX_GLOB_BYTES)}), &SMALL);
        assert!(!at_limit.is_error, "{}", text(&at_limit));
        let over = grep(&[("a", "x\n")], json!({"pattern": "x", "glob": "?".repeat(walk::MAX_GLOB_BYTES + 1)}), &SMALL);
        assert!(
            text(&over).starts_with("The glob in `glob` is 4097 bytes, over the 4096-byte limit."),
            "{}",
            text(&over)
        );
    }

    /// Set in the child process of the memory test.
    const GREP_LOAD_CHILD: &str = "CLAWMCP_TEST_GREP_LOAD_CHILD";
    /// Prefixes the child's protocol lines (libtest writes to the same stdout).
    const CHILD_SAYS: &str = "grep-load-child:";
    const HOSTILE_PATTERN: &str = r"[\p{L}\p{N}]{5000}";
    const HOSTILE_GREPS: usize = 8;

    /// What the child does: one ordinary grep (so lazily built tables and threads are part of
    /// the baseline), then on "load" the hostile greps all at once, through the real `run`.
    fn grep_load_child() {
        use futures_util::future::join_all;
        use std::io::{BufRead, Write};

        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "some text in a file\n").unwrap();
        let workspace = Workspace::new(dir.path());
        let call = |pattern: &str| {
            let args = json!({"pattern": pattern}).as_object().cloned().unwrap();
            let workspace = workspace.clone();
            async move { run(&workspace, &args, &CallContext::detached()).await }
        };
        let warm = runtime.block_on(call("text"));
        assert!(!warm.is_error, "{warm:?}");
        // The protocol goes to stdout (piped to the parent), not through the test harness.
        let say = |what: String| writeln!(io::stdout().lock(), "{CHILD_SAYS} {what}").unwrap();
        say("ready".into());
        for line in io::stdin().lock().lines() {
            match line.unwrap().as_str() {
                "load" => {
                    let results = runtime.block_on(join_all((0..HOSTILE_GREPS).map(|_| call(HOSTILE_PATTERN))));
                    let refused = results
                        .iter()
                        .filter(|r| r.is_error && r.first_text().is_some_and(|t| t.contains("is too big to compile")))
                        .count();
                    say(format!("refused {refused}"));
                }
                _ => return,
            }
        }
    }

    /// A field of /proc/<pid>/status in bytes (VmRSS: resident now; VmHWM: the peak).
    #[cfg(target_os = "linux")]
    fn status_bytes(pid: u32, field: &str) -> usize {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find_map(|l| l.strip_prefix(field)).unwrap_or_else(|| panic!("no {field}"));
        let kib: usize = line.trim_start_matches(':').trim().trim_end_matches("kB").trim().parse().unwrap();
        kib * 1024
    }

    /// Eight concurrent greps of a 20-character pattern that compiles to ~170 MB each without
    /// limits (2.2 GB peak, 1.45 GB held after, when this was found): each is refused with the
    /// size error, and the process's peak and remaining memory over its baseline stay within
    /// what the limits allow: [`MAX_CONCURRENT_SEARCHES`] searches of at most
    /// [`GrepLimits::memory_bound`] each. Measured on a child process (this test binary run
    /// again), so other tests' allocations do not count.
    #[cfg(target_os = "linux")]
    #[test]
    fn hostile_patterns_are_refused_and_memory_stays_within_the_limits() {
        use std::io::{BufRead, BufReader, Write};
        use std::process::{Command, Stdio};

        if std::env::var_os(GREP_LOAD_CHILD).is_some() {
            grep_load_child();
            return;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "grep::tests::hostile_patterns_are_refused_and_memory_stays_within_the_limits"])
            .args(["--nocapture", "--test-threads=1"])
            .env(GREP_LOAD_CHILD, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut stdin = child.stdin.take().unwrap();
        let mut said = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map(|line| line.unwrap())
            .filter_map(|line| line.split_once(CHILD_SAYS).map(|(_, said)| said.trim().to_string()));
        assert_eq!(said.next().as_deref(), Some("ready"));
        let baseline = status_bytes(pid, "VmRSS");
        writeln!(stdin, "load").unwrap();
        assert_eq!(said.next(), Some(format!("refused {HOSTILE_GREPS}")), "every hostile grep gets the size error");
        let (after, peak) = (status_bytes(pid, "VmRSS"), status_bytes(pid, "VmHWM"));
        writeln!(stdin, "quit").unwrap();
        assert!(child.wait().unwrap().success());

        let bound = MAX_CONCURRENT_SEARCHES * GrepLimits::DEFAULT.memory_bound();
        let mib = |bytes: usize| bytes as f64 / (1 << 20) as f64;
        let measured = format!(
            "baseline {:.1} MiB, peak +{:.1} MiB, after +{:.1} MiB, bound {:.1} MiB",
            mib(baseline),
            mib(peak.saturating_sub(baseline)),
            mib(after.saturating_sub(baseline)),
            mib(bound)
        );
        assert!(peak.saturating_sub(baseline) <= bound, "the peak is over the bound: {measured}");
        assert!(after.saturating_sub(baseline) <= bound, "what stays held is over the bound: {measured}");
    }
}
