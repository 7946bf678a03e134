//! `edit`: replace an exact, unique piece of text in a file.
//!
//! Schema and messages follow OpenClaw/pi (`docs/tools-bridge.md` §2): `path`, `oldText`,
//! `newText` with the Claude Code aliases `file_path`/`old_string`/`new_string`; the text must
//! occur exactly once ("Found N occurrences … must be unique"); "Could not find the exact
//! text"; "No changes made". We add `replace_all` (Claude Code's) and name the lines of every
//! occurrence so the model can widen the right one.
//!
//! Line endings: matching is exact, except that in a CRLF file an `oldText` written with LF
//! is also tried with CRLF, and `newText` is always converted to the file's line ending. Only
//! the matched region changes, so the rest of the file (its other endings, BOM, trailing
//! newline) is byte-for-byte preserved — unlike pi, which rewrites every line ending.
//! On any error the file is not touched; the replacement is written atomically.

use std::path::Path;
use std::time::Duration;

use clawmcp_fs::{Symlinks, open_regular, read_bounded};

use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolAnnotations, ToolResult};
use serde_json::{Map, Value, json};
use similar::TextDiff;
use tokio_util::sync::CancellationToken;

use crate::args::{Args, Param};
use crate::atomic::{self, Basis};
use crate::fs_error;
use crate::text::format_size;
use crate::workspace::{TargetPath, Workspace};
use crate::{BridgeTool, ToolContext};

pub(crate) const NAME: &str = "edit";

const PATH: Param = Param::new(&["path", "file_path"]);
// `oldString`/`newString`/`replaceAll` are the upstream bridge's spellings.
const OLD_TEXT: Param = Param::with_legacy(&["oldText", "old_string", "oldString"], 2);
const NEW_TEXT: Param = Param::with_legacy(&["newText", "new_string", "newString"], 2);
const REPLACE_ALL: Param = Param::with_legacy(&["replace_all", "replaceAll"], 1);

/// Edit reads the whole file into memory, so it refuses files beyond this.
pub(crate) const MAX_EDIT_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Lines of unified diff returned; the file itself is changed in full regardless.
const MAX_DIFF_LINES: usize = 200;
/// Occurrence line numbers listed in the non-unique error.
const MAX_LISTED_OCCURRENCES: usize = 20;
/// A safety valve for pathological diffs (huge replace_all): similar then returns a coarser
/// but still correct diff instead of taking quadratic time.
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);

/// Changes a file in place; repeating the same edit fails (the old text is gone).
const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations { read_only_hint: false, destructive_hint: true, idempotent_hint: false, open_world_hint: false };

/// The `edit` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Numbers and booleans may come as strings; the parser reads them (see the crate docs).
    crate::local_tool(descriptor(), Checking::StringifiedScalars, context, |context, arguments, ctx| async move {
        run(&context.workspace, &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    let path = json!({"type": "string", "description": "Path to the file to edit (relative or absolute)"});
    let old = json!({"type": "string", "description": "Exact text to find and replace (must match exactly)"});
    let new = json!({"type": "string", "description": "New text to replace the old text with"});
    Tool { title: None, output_schema: None,
        name: NAME.into(),
        description: "Edit a file by replacing exact text. oldText must match the file exactly, including all \
                      whitespace and newlines (do not include the line-number prefix that read shows), and must \
                      occur exactly once unless replace_all is true; otherwise the edit fails and the file is left \
                      unchanged. newText may be empty to delete. Line endings (CRLF stays CRLF) and the rest of the \
                      file are preserved. Returns a unified diff of the change."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": path,
                "file_path": path,
                "oldText": old,
                "old_string": old,
                "newText": new,
                "new_string": new,
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence of oldText instead of requiring exactly one (default false)",
                },
            },
            "required": [],
        }).into(),
        annotations: Some(ANNOTATIONS),
    }
}

struct EditRequest {
    target: TargetPath,
    old_text: String,
    new_text: String,
    replace_all: bool,
}

pub(crate) async fn run(workspace: &Workspace, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
    let request = match parse(workspace, args) {
        Ok(request) => request,
        Err(message) => return ToolResult::error(message),
    };
    let cancel = ctx.cancel.clone();
    let path = request.target.abs.clone();
    crate::blocking_locked(NAME, &path, &ctx.cancel, move |real| {
        real.map_err(|e| fs_error::describe(NAME, &request.target, &e))
            .and_then(|real| edit_file(&request, &real, &cancel))
            .unwrap_or_else(ToolResult::error)
    })
    .await
}

fn parse(workspace: &Workspace, args: &Map<String, Value>) -> Result<EditRequest, String> {
    let args = Args::new(args);
    let path = args.required_string(PATH, false).map_err(|e| e.to_string())?;
    let old_text = args.required_string(OLD_TEXT, true).map_err(|e| e.to_string())?;
    let new_text = args.required_string(NEW_TEXT, true).map_err(|e| e.to_string())?;
    let replace_all = args.bool(REPLACE_ALL).map_err(|e| e.to_string())?.unwrap_or(false);
    let target = workspace.resolve(&path)?;
    if old_text.is_empty() {
        return Err(format!(
            "oldText is empty, which would match everywhere in {}. Pass the exact text to replace; to create \
             or overwrite a whole file use write.",
            target.given
        ));
    }
    if old_text == new_text {
        return Err(format!("No changes made to {}: oldText and newText are identical.", target.given));
    }
    Ok(EditRequest { target, old_text, new_text, replace_all })
}

/// Edits `real` (the target's real path, whose lock the caller holds).
fn edit_file(request: &EditRequest, real: &Path, cancel: &CancellationToken) -> Result<ToolResult, String> {
    let planned = plan(request, real, MAX_EDIT_FILE_BYTES)?;
    if cancel.is_cancelled() {
        return Err(CANCELLED.into());
    }
    commit(request, real, planned)
}

/// An edit worked out against the content read, not yet written.
struct Planned {
    /// The target's `fstat` and content when read: what the rename may replace.
    meta: std::fs::Metadata,
    content: String,
    updated: String,
    occurrences: usize,
}

/// Reads `real` (at most `max_bytes`) and computes the edit; every refusal happens here, before
/// anything is written.
fn plan(request: &EditRequest, real: &Path, max_bytes: u64) -> Result<Planned, String> {
    let target = &request.target;
    let shown = &target.given;
    let too_big = |what: String| {
        format!(
            "{shown} {what}, over the {} edit limit (edit loads the whole file). Use write to replace it, or split \
             the file.",
            format_size(max_bytes)
        )
    };
    // Non-blocking and type-checked on the descriptor: a FIFO or a device is refused, not read.
    let (mut file, meta) = open_regular(real, Symlinks::Refuse).map_err(|e| fs_error::describe(NAME, target, &e))?;
    if meta.len() > max_bytes {
        return Err(too_big(format!("is {}", format_size(meta.len()))));
    }
    // Bounded by what is read, not by the reported size: a growing file, or a /proc file that
    // reports 0 bytes, cannot make edit hold more than the limit.
    let read = read_bounded(&mut file, max_bytes).map_err(|e| fs_error::describe("read", target, &e))?;
    if read.truncated {
        return Err(too_big(format!("yields more than that although it reports {}", format_size(meta.len()))));
    }
    let bytes = read.bytes;
    if let Some(at) = memchr::memchr(0, &bytes) {
        return Err(format!(
            "{shown} looks like a binary file (NUL byte at offset {at}); edit only changes text files."
        ));
    }
    let content = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{shown} is not valid UTF-8 (invalid byte at offset {}); editing it as text would corrupt it. \
             Use write to replace it entirely if that is intended.",
            e.utf8_error().valid_up_to()
        )
    })?;

    let ending = LineEnding::of(&content);
    let new_text = ending.apply(&request.new_text);
    let (old_text, offsets) = [request.old_text.clone(), ending.apply(&request.old_text)]
        .into_iter()
        .map(|candidate| {
            let offsets: Vec<usize> = content.match_indices(&candidate).map(|(at, _)| at).collect();
            (candidate, offsets)
        })
        .find(|(_, offsets)| !offsets.is_empty())
        .ok_or_else(|| not_found_message(shown, &content, &request.old_text))?;

    if offsets.len() > 1 && !request.replace_all {
        let lines = line_numbers(&content, &offsets);
        let listed: Vec<String> = lines.iter().take(MAX_LISTED_OCCURRENCES).map(u64::to_string).collect();
        let more = if lines.len() > MAX_LISTED_OCCURRENCES { ", …" } else { "" };
        return Err(format!(
            "Found {} occurrences of the text in {shown} (at lines {}{more}). The text must be unique. Please \
             provide more context to make it unique, or set replace_all to replace every occurrence.",
            offsets.len(),
            listed.join(", ")
        ));
    }
    let updated = if request.replace_all {
        content.replace(&old_text, &new_text)
    } else {
        let at = offsets[0];
        [&content[..at], &new_text, &content[at + old_text.len()..]].concat()
    };
    if updated == content {
        return Err(format!(
            "No changes made to {shown}: the replacement produced identical content (oldText and newText differ \
             only in line endings, which follow the file's)."
        ));
    }
    Ok(Planned { meta, content, updated, occurrences: offsets.len() })
}

/// Writes a planned edit, unless the file no longer holds what the plan was made from.
fn commit(request: &EditRequest, real: &Path, planned: Planned) -> Result<ToolResult, String> {
    let (target, shown) = (&request.target, &request.target.given);
    let Planned { meta, content, updated, occurrences } = planned;
    atomic::replace(real, Basis::Read(&meta, content.as_bytes()), updated.as_bytes()).map_err(|e| {
        fs_error::replace_failure(
            NAME,
            target,
            &e,
            "Read the file again and redo the edit against its current content.",
        )
    })?;

    let summary = match occurrences {
        1 => format!("Successfully replaced text in {shown}."),
        n => format!("Successfully replaced {n} occurrences of the text in {shown}."),
    };
    Ok(ToolResult::text(format!("{summary}\n\n{}", unified_diff(shown, &content, &updated))))
}

/// The file's line ending, judged by its first line break (as pi does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineEnding {
    Lf,
    Crlf,
}

impl LineEnding {
    fn of(content: &str) -> LineEnding {
        match content.find('\n') {
            Some(at) if content[..at].ends_with('\r') => LineEnding::Crlf,
            _ => LineEnding::Lf,
        }
    }

    /// `text` with every line break in this ending.
    fn apply(self, text: &str) -> String {
        let lf = text.replace("\r\n", "\n");
        match self {
            LineEnding::Lf => lf,
            LineEnding::Crlf => lf.replace('\n', "\r\n"),
        }
    }
}

/// 1-based line of each byte offset (offsets ascending).
fn line_numbers(content: &str, offsets: &[usize]) -> Vec<u64> {
    let mut line = 1;
    let mut counted_to = 0;
    offsets
        .iter()
        .map(|&at| {
            line += memchr::memchr_iter(b'\n', &content.as_bytes()[counted_to..at]).count() as u64;
            counted_to = at;
            line
        })
        .collect()
}

/// pi's message plus whatever we can tell about why it did not match.
fn not_found_message(shown: &str, content: &str, old_text: &str) -> String {
    let mut message = format!(
        "Could not find the exact text in {shown}. The old text must match exactly including all whitespace and \
         newlines. The file was not changed."
    );
    if looks_line_numbered(old_text) {
        message.push_str(
            " oldText seems to start its lines with read's line-number prefix (spaces, number, tab): remove it.",
        );
    } else if squash_whitespace(content).contains(&squash_whitespace(old_text)) {
        message.push_str(
            " The text does occur if whitespace is ignored: check indentation (tabs vs spaces), trailing spaces \
             and line breaks, and copy it exactly from read output.",
        );
    } else {
        message.push_str(" Re-read the file to get its current content.");
    }
    message
}

fn looks_line_numbered(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some()
        && lines.all(|line| {
            line.trim_start()
                .split_once('\t')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn squash_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A unified diff with 3 lines of context, CRs dropped for display, capped in length.
fn unified_diff(shown: &str, before: &str, after: &str) -> String {
    let diff = TextDiff::configure().timeout(DIFF_TIMEOUT).diff_lines(before, after);
    let text = diff.unified_diff().context_radius(3).header(shown, shown).to_string().replace("\r\n", "\n");
    let total = text.lines().count();
    if total <= MAX_DIFF_LINES {
        return text.trim_end().to_string();
    }
    let kept: Vec<&str> = text.lines().take(MAX_DIFF_LINES).collect();
    format!("{}\n[diff truncated: {} more lines]", kept.join("\n"), total - MAX_DIFF_LINES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ending_follows_the_first_break() {
        assert_eq!(LineEnding::of("a\r\nb\n"), LineEnding::Crlf);
        assert_eq!(LineEnding::of("a\nb\r\n"), LineEnding::Lf);
        assert_eq!(LineEnding::of("no break"), LineEnding::Lf);
        assert_eq!(LineEnding::Crlf.apply("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(LineEnding::Lf.apply("a\r\nb"), "a\nb");
    }

    #[test]
    fn occurrence_lines_are_one_based() {
        let content = "x\nx x\nz\nx";
        let offsets: Vec<usize> = content.match_indices('x').map(|(at, _)| at).collect();
        assert_eq!(line_numbers(content, &offsets), [1, 2, 2, 4]);
    }

    #[test]
    fn line_number_prefixes_are_recognised() {
        assert!(looks_line_numbered("     3\tfn main() {\n     4\t}"));
        assert!(!looks_line_numbered("fn main() {\n}"));
        assert!(!looks_line_numbered("\tindented"));
    }

    #[test]
    fn not_found_hints_at_whitespace_differences() {
        let message = not_found_message("a.rs", "fn main() {\n\tlet x = 1;\n}", "fn main() {\n    let x = 1;");
        assert!(message.contains("does occur if whitespace is ignored"), "{message}");
        let message = not_found_message("a.rs", "fn main() {}", "something else");
        assert!(message.contains("Re-read the file"), "{message}");
    }

    #[test]
    fn long_diffs_are_capped() {
        let before: String = (0..500).map(|i| format!("{i}\n")).collect();
        let after: String = (0..500).map(|i| format!("{}\n", i * 2)).collect();
        let diff = unified_diff("f", &before, &after);
        assert_eq!(diff.lines().count(), MAX_DIFF_LINES + 1);
        assert!(diff.lines().last().unwrap().starts_with("[diff truncated: "));
    }

    #[test]
    fn another_program_writing_between_read_and_rename_is_a_conflict_not_a_lost_update() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "alpha beta\n").unwrap();
        let workspace = Workspace::new(dir.path());
        let args = json!({"path": "a.txt", "oldText": "alpha", "newText": "ALPHA"});
        let request = parse(&workspace, args.as_object().unwrap()).unwrap();
        let real = atomic::real_path(&request.target.abs).unwrap();
        let planned = plan(&request, &real, MAX_EDIT_FILE_BYTES).unwrap();
        // Another process (an editor, a formatter) saves the file after our read.
        std::fs::write(&path, "alpha beta gamma\n").unwrap();
        let message = commit(&request, &real, planned).unwrap_err();
        assert_eq!(
            message,
            format!(
                "Conflict: a.txt (resolved to {}) was modified or replaced by another program while this edit was in \
                 progress. Nothing was written, so that change is not lost. Read the file again and redo the edit \
                 against its current content.",
                request.target.abs.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha beta gamma\n");

        // Redone against the current content, it applies.
        let planned = plan(&request, &real, MAX_EDIT_FILE_BYTES).unwrap();
        assert!(commit(&request, &real, planned).is_ok());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "ALPHA beta gamma\n");
    }

    /// A /proc file reports 0 bytes and yields more: the limit applies to what is read. At
    /// exactly the limit the size checks pass (and the NUL bytes of cmdline are what refuse it);
    /// one byte under its length, the size is the refusal.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_limit_is_on_bytes_read_not_on_the_size_reported() {
        let cmdline = Path::new("/proc/self/cmdline");
        let length = std::fs::read(cmdline).unwrap().len() as u64;
        assert_eq!(std::fs::metadata(cmdline).unwrap().len(), 0);
        let workspace = Workspace::new("/");
        let args = json!({"path": "/proc/self/cmdline", "oldText": "a", "newText": "b"});
        let request = parse(&workspace, args.as_object().unwrap()).unwrap();
        let at_limit = plan(&request, cmdline, length).err().unwrap();
        assert!(at_limit.contains("looks like a binary file"), "{at_limit}");
        let under = plan(&request, cmdline, length - 1).err().unwrap();
        assert_eq!(
            under,
            format!(
                "/proc/self/cmdline yields more than that although it reports 0B, over the {} edit limit (edit loads \
                 the whole file). Use write to replace it, or split the file.",
                format_size(length - 1)
            )
        );
    }
}
