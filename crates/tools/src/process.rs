//! `process`: manage the background sessions `exec` started.
//!
//! OpenClaw's actions and texts (`docs/tools-bridge.md` §2): `list`, `poll` (new output since the
//! last poll, waiting up to `timeout` ms, at most 30 s, and waking as soon as output or the end
//! arrives), `log` (the kept output by line, `offset`/`limit`, default the last 200 lines),
//! `write` (`data` to stdin, `eof` to close it), `kill`, `clear`, `remove`. The PTY actions
//! (`send-keys`, `submit`, `paste`) need a terminal, which these jobs do not have.
//!
//! The upstream bridge's defects are gone: `kill` ends the whole process tree and answers once it
//! is gone, output is stored once, `poll` drains instead of repeating everything, and its wait
//! wakes early. The bridge's `stop` is still accepted as `kill`.

use std::time::Duration;

use clawmcp_mcp::{CANCELLED, CallContext, Checking, Tool, ToolAnnotations, ToolResult};
use clawmcp_process::{JobEnding, JobExit, StdinError};
use serde_json::{Map, Value, json};

use crate::args::{ArgError, Args, Param};
use crate::exec::{non_negative_number, retention_note};
use crate::jobs::{JobEntry, JobLimits, JobRegistry, compact_duration, describe_exit, seconds};
use crate::text::format_size;
use crate::{BridgeTool, ToolContext};

pub(crate) const NAME: &str = "process";

const ACTION: Param = Param::new(&["action"]);
const SESSION_ID: Param = Param::new(&["sessionId"]);
const DATA: Param = Param::new(&["data"]);
const EOF: Param = Param::new(&["eof"]);
const OFFSET: Param = Param::new(&["offset"]);
const LIMIT: Param = Param::new(&["limit"]);
const TIMEOUT: &str = "timeout";

/// The longest a `poll` waits (OpenClaw's cap).
const MAX_POLL_WAIT: Duration = Duration::from_secs(30);
/// Lines `log` shows when neither `offset` nor `limit` is given.
const DEFAULT_LOG_LINES: usize = 200;
/// How long `write` waits for a job that does not read its stdin before giving up.
const STDIN_WRITE_LIMIT: Duration = Duration::from_secs(10);
/// Characters of a command shown by `list`.
const LIST_COMMAND_CHARS: usize = 120;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    List,
    Poll,
    Log,
    Write,
    Kill,
    Clear,
    Remove,
}

impl Action {
    const NAMES: [&'static str; 7] = ["list", "poll", "log", "write", "kill", "clear", "remove"];

    fn parse(name: &str) -> Option<Action> {
        Some(match name {
            "list" => Action::List,
            "poll" => Action::Poll,
            "log" => Action::Log,
            "write" => Action::Write,
            // `stop` is the upstream bridge's name for it.
            "kill" | "stop" => Action::Kill,
            "clear" => Action::Clear,
            "remove" => Action::Remove,
            _ => return None,
        })
    }
}

/// The `process` tool, bound to `context`.
pub(crate) fn tool(context: &ToolContext) -> BridgeTool {
    // Numbers and booleans may come as strings; the parser reads them (see the crate docs).
    crate::local_tool(descriptor(), Checking::StringifiedScalars, context, |context, arguments, ctx| async move {
        run(context.jobs.as_deref(), &arguments, &ctx).await
    })
}

pub(crate) fn descriptor() -> Tool {
    let limits = JobLimits::DEFAULT;
    Tool { title: None, output_schema: None,
        name: NAME.into(),
        description: format!(
            "Manage the background sessions exec started (ids bg-N). Actions: list (every kept session, running or \
             finished); poll (the output since the last poll and whether the process ended; timeout waits up to \
             that many ms, at most {}, returning as soon as output or the end arrives); log (the kept output by \
             line: offset is the first line, 0-based, limit the number of lines; default the last {} lines); write \
             (send data to stdin; eof: true closes it afterwards); kill (end the whole process tree: SIGTERM, then \
             SIGKILL); clear (forget a finished session); remove (kill if running, then forget). Each session keeps \
             the last {} of its output. At most {} sessions are kept; a finished one is forgotten {} minutes after \
             it ended, or sooner when its slot is needed.",
            MAX_POLL_WAIT.as_millis(),
            DEFAULT_LOG_LINES,
            format_size(limits.output_bytes as u64),
            limits.max_jobs,
            limits.finished_ttl.as_secs() / 60,
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": Action::NAMES, "description": "Process action"},
                "sessionId": {"type": "string", "description": "Session id (from exec) for actions other than list"},
                "timeout": {
                    "type": "number",
                    "minimum": 0,
                    "description": format!("For poll: wait up to this many milliseconds (at most {}) for new output or the end", MAX_POLL_WAIT.as_millis()),
                },
                "offset": {"type": "number", "minimum": 0, "description": "For log: the first line to show, 0-based"},
                "limit": {"type": "number", "minimum": 1, "description": "For log: how many lines to show (alone: the last N lines)"},
                "data": {"type": "string", "description": "Data to write for write"},
                "eof": {"type": "boolean", "description": "Close stdin after write"},
            },
            "required": ["action"],
        }).into(),
        annotations: Some(ToolAnnotations::DESTRUCTIVE),
    }
}

pub(crate) async fn run(jobs: Option<&JobRegistry>, args: &Map<String, Value>, ctx: &CallContext) -> ToolResult {
    let no_jobs;
    let jobs = match jobs {
        Some(jobs) => jobs,
        None => {
            no_jobs = JobRegistry::new();
            &no_jobs
        }
    };
    match dispatch(jobs, args, ctx).await {
        Ok(result) => result,
        Err(message) => ToolResult::error(message),
    }
}

async fn dispatch(jobs: &JobRegistry, map: &Map<String, Value>, ctx: &CallContext) -> Result<ToolResult, String> {
    let args = Args::new(map);
    let text = |error: ArgError| error.to_string();
    let name = args.required_string(ACTION, false).map_err(text)?;
    let Some(action) = Action::parse(name.trim()) else {
        return Err(format!("Invalid process action {name:?}. Expected one of: {}", Action::NAMES.join(", ")));
    };
    if ctx.cancel.is_cancelled() {
        return Err(CANCELLED.into());
    }
    if action == Action::List {
        return Ok(list(jobs));
    }
    let id = match args.string(SESSION_ID).map_err(text)? {
        Some(id) if !id.trim().is_empty() => id.trim().to_string(),
        _ => return Err("sessionId is required for this action.".into()),
    };
    let Some(entry) = jobs.get(&id) else {
        return Err(format!("No session found for {id}. Use action list to see the kept sessions."));
    };
    match action {
        Action::List => unreachable!("answered above"),
        Action::Poll => {
            // Like OpenClaw, a longer wait is cut to the cap rather than refused.
            let wait_ms = non_negative_number(map, TIMEOUT, None)?.unwrap_or(0.0);
            let wait = Duration::from_secs_f64(wait_ms.min(MAX_POLL_WAIT.as_millis() as f64) / 1000.0);
            poll(&entry, wait, ctx).await
        }
        Action::Log => {
            let offset = args.integer(OFFSET, 0, u64::MAX).map_err(text)?;
            let limit = args.integer(LIMIT, 1, u64::MAX).map_err(text)?;
            Ok(log(&entry, offset, limit))
        }
        Action::Write => {
            let data = args.string(DATA).map_err(text)?.unwrap_or_default();
            let eof = args.bool(EOF).map_err(text)?.unwrap_or(false);
            write(&entry, &data, eof, ctx).await
        }
        Action::Kill => Ok(kill(&entry).await),
        Action::Clear => clear(jobs, &entry),
        Action::Remove => Ok(remove(jobs, &entry).await),
    }
}

fn list(jobs: &JobRegistry) -> ToolResult {
    let lines: Vec<String> = jobs
        .list()
        .iter()
        .map(|entry| {
            let status = entry.job.exit().map_or_else(|| "running".to_string(), |exit| status_word(&exit));
            format!(
                "{} {status} {} pid {} :: {}",
                entry.id,
                compact_duration(entry.job.runtime()),
                entry.job.pid(),
                truncate_middle(&entry.meta.command, LIST_COMMAND_CHARS)
            )
        })
        .collect();
    if lines.is_empty() {
        return ToolResult::text("No running or recent sessions.");
    }
    ToolResult::text(lines.join("\n"))
}

/// One word (or two) for a finished job in `list`.
fn status_word(exit: &JobExit) -> String {
    match exit.ending {
        JobEnding::Exited => match exit.signal_name() {
            Some(signal) => signal.to_string(),
            None => format!("exit {}", exit.exit_code),
        },
        JobEnding::TimedOut => "timed-out".into(),
        JobEnding::Killed => "killed".into(),
    }
}

async fn poll(entry: &JobEntry, wait: Duration, ctx: &CallContext) -> Result<ToolResult, String> {
    let cursor = entry.poll_cursor();
    if !wait.is_zero() && entry.job.exit().is_none() {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(CANCELLED.into()),
            () = entry.job.wait_for_output(cursor) => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
    // The end is read before the output: once it is recorded, the output is complete.
    let exit = entry.job.exit();
    let chunk = entry.job.output_since(cursor);
    entry.advance_poll_cursor(chunk.end);
    let mut text = retention_note(chunk.discarded, chunk.total_bytes);
    let shown = chunk.text.trim_end();
    text.push_str(if shown.is_empty() { "(no new output)" } else { shown });
    match exit {
        None => text.push_str("\n\nProcess still running."),
        Some(exit) => text.push_str(&format!("\n\nProcess {}.", describe_exit(&exit, entry.meta.timeout))),
    }
    Ok(ToolResult::text(text))
}

fn log(entry: &JobEntry, offset: Option<u64>, limit: Option<u64>) -> ToolResult {
    let output = entry.job.output_since(0);
    let lines: Vec<&str> = output.text.lines().collect();
    let total = lines.len();
    let as_index = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let (start, end) = match (offset.map(as_index), limit.map(as_index)) {
        (None, None) => (total.saturating_sub(DEFAULT_LOG_LINES), total),
        (None, Some(limit)) => (total.saturating_sub(limit), total),
        (Some(offset), limit) => {
            (offset.min(total), limit.map_or(total, |limit| offset.saturating_add(limit).min(total)))
        }
    };
    let mut text = retention_note(output.discarded, output.total_bytes);
    if start < end {
        text.push_str(&lines[start..end].join("\n"));
    } else if total > 0 {
        text.push_str(&format!("(no lines from offset {start}: the kept output has {total} lines)"));
    } else if entry.job.exit().is_none() {
        text.push_str("(no output yet)");
    } else {
        text.push_str("(no output recorded)");
    }
    if offset.is_none() && limit.is_none() && total > DEFAULT_LOG_LINES {
        text.push_str(&format!("\n\n[showing last {DEFAULT_LOG_LINES} of {total} lines; pass offset/limit to page]"));
    }
    ToolResult::text(text)
}

async fn write(entry: &JobEntry, data: &str, eof: bool, ctx: &CallContext) -> Result<ToolResult, String> {
    let id = &entry.id;
    if let Some(exit) = entry.job.exit() {
        return Err(format!(
            "Session {id} has ended (it {}); its stdin is gone.",
            describe_exit(&exit, entry.meta.timeout)
        ));
    }
    let delivery = async {
        entry.job.write_stdin(data.as_bytes()).await?;
        if eof {
            entry.job.close_stdin().await?;
        }
        Ok::<(), StdinError>(())
    };
    let delivered = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => return Err(CANCELLED.into()),
        delivered = delivery => delivered,
        () = tokio::time::sleep(STDIN_WRITE_LIMIT) => {
            return Err(format!(
                "Session {id} is not reading its stdin: the data could not be delivered within {}, and part of it \
                 may have been written. Poll the session to see what it is doing.",
                seconds(STDIN_WRITE_LIMIT)
            ));
        }
    };
    match delivered {
        Ok(()) => {
            let closed = if eof { " (stdin closed)" } else { "" };
            Ok(ToolResult::text(format!("Wrote {} bytes to session {id}{closed}.", data.len())))
        }
        Err(StdinError::Closed) => {
            Err(format!("Session {id} stdin is closed (eof was sent earlier), so nothing more can be written."))
        }
        Err(StdinError::Io(error)) => Err(format!(
            "Cannot write to session {id} stdin: {error}. The process has closed its stdin or is exiting; poll it to see."
        )),
    }
}

async fn kill(entry: &JobEntry) -> ToolResult {
    let id = &entry.id;
    if let Some(exit) = entry.job.exit() {
        return ToolResult::text(format!(
            "Session {id} already ended: it {}. Nothing to kill; use clear to forget it.",
            describe_exit(&exit, entry.meta.timeout)
        ));
    }
    entry.job.kill().await;
    match entry.job.exit() {
        Some(exit) if exit.ending != JobEnding::Killed => ToolResult::text(format!(
            "Session {id} ended before it could be killed: it {}.",
            describe_exit(&exit, entry.meta.timeout)
        )),
        _ => ToolResult::text(format!("Killed session {id}: it and everything it started are gone.")),
    }
}

fn clear(jobs: &JobRegistry, entry: &JobEntry) -> Result<ToolResult, String> {
    let id = &entry.id;
    if entry.job.exit().is_none() {
        return Err(format!(
            "Session {id} is still running; kill it first (action kill), or use action remove to kill and forget it."
        ));
    }
    jobs.remove(id);
    Ok(ToolResult::text(format!("Cleared session {id}.")))
}

async fn remove(jobs: &JobRegistry, entry: &JobEntry) -> ToolResult {
    let id = &entry.id;
    let was_running = entry.job.exit().is_none();
    if was_running {
        entry.job.kill().await;
    }
    jobs.remove(id);
    ToolResult::text(if was_running {
        format!("Removed session {id} (it and everything it started were killed).")
    } else {
        format!("Removed session {id}.")
    })
}

/// `npm run build -- --watch … tail` : keeps both ends of a long command.
fn truncate_middle(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let head: String = text.chars().take(max_chars / 2).collect();
    let tail: String = text.chars().skip(count - (max_chars - max_chars / 2 - 1)).collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_with_the_bridge_alias() {
        for name in Action::NAMES {
            assert!(Action::parse(name).is_some(), "{name}");
        }
        assert_eq!(Action::parse("stop"), Some(Action::Kill));
        assert_eq!(Action::parse("start"), None);
    }

    #[test]
    fn long_commands_keep_both_ends() {
        assert_eq!(truncate_middle("short", 10), "short");
        assert_eq!(truncate_middle("0123456789", 10), "0123456789");
        let cut = truncate_middle("0123456789a", 10);
        assert_eq!(cut, "01234…789a");
        assert_eq!(cut.chars().count(), 10);
    }
}
