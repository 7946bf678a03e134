//! `process`: list, poll (incremental, waiting, cancellable), log paging at its default edge,
//! write and eof, kill that ends the whole tree, clear and remove, the job cap, and the
//! guarantee that dropping the tools kills every job.

use crate::jobs_support;

use clawmcp_mcp::{CANCELLED, CallContext};
use jobs_support::{Bridge, err_text, ok_text, pid_is_dead, pids_in, wait_until_dead};
use serde_json::json;

/// The documented defaults.
const MAX_JOBS: usize = 16;
const DEFAULT_LOG_LINES: usize = 200;

#[tokio::test]
async fn poll_returns_only_new_output_then_the_exit() {
    let bridge = Bridge::new();
    let (id, _) = bridge.start(json!("echo one; read _; echo two; read _; exit 4")).await;
    assert_eq!(bridge.poll_until(&id, |out| out.contains("one")).await, "one\n");
    let nothing = bridge.call("process", json!({"action": "poll", "sessionId": id})).await;
    assert_eq!(ok_text(&nothing), "(no new output)\n\nProcess still running.");
    bridge.call("process", json!({"action": "write", "sessionId": id, "data": "\n"})).await;
    assert_eq!(bridge.poll_until(&id, |out| out.contains("two")).await, "two\n");
    bridge.call("process", json!({"action": "write", "sessionId": id, "data": "\n"})).await;
    assert_eq!(bridge.poll_to_end(&id).await, (String::new(), "Process exited with code 4.".to_string()));
    let after = bridge.call("process", json!({"action": "poll", "sessionId": id})).await;
    assert_eq!(ok_text(&after), "(no new output)\n\nProcess exited with code 4.");
}

#[tokio::test(start_paused = true)]
async fn a_waiting_poll_is_cancelled_by_the_call() {
    let bridge = Bridge::new();
    let (id, _) = bridge.start(json!("sleep 1000")).await;
    let ctx = CallContext::detached();
    let poll = bridge.call_with("process", json!({"action": "poll", "sessionId": id, "timeout": 30000}), &ctx);
    // Paused time: the cancel comes one (virtual) second into the poll's 30 s wait.
    let cancel_later = async {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        ctx.cancel.cancel();
    };
    let (result, ()) = tokio::join!(poll, cancel_later);
    assert_eq!(err_text(&result), CANCELLED);
    let list = bridge.call("process", json!({"action": "list"})).await;
    assert!(ok_text(&list).contains(" running "), "cancelling a poll leaves the job alone");
}

#[tokio::test]
async fn write_with_eof_closes_stdin() {
    let bridge = Bridge::new();
    let (id, _) = bridge.start(json!(["sh", "-c", "wc -c"])).await;
    let write = bridge.call("process", json!({"action": "write", "sessionId": id, "data": "12345", "eof": true})).await;
    assert_eq!(ok_text(&write), format!("Wrote 5 bytes to session {id} (stdin closed)."));
    let (output, status) = bridge.poll_to_end(&id).await;
    assert_eq!((output.trim(), status.as_str()), ("5", "Process exited with code 0."));
    let late = bridge.call("process", json!({"action": "write", "sessionId": id, "data": "x"})).await;
    assert_eq!(err_text(&late), format!("Session {id} has ended (it exited with code 0); its stdin is gone."));
}

#[tokio::test]
async fn writing_twice_after_eof_is_refused() {
    let bridge = Bridge::new();
    let (id, _) = bridge.start(json!("sleep 1000")).await;
    bridge.call("process", json!({"action": "write", "sessionId": id, "eof": true})).await;
    let again = bridge.call("process", json!({"action": "write", "sessionId": id, "data": "x"})).await;
    assert!(err_text(&again).contains("stdin is closed"), "{}", err_text(&again));
}

#[tokio::test(start_paused = true)]
async fn a_job_that_does_not_read_its_stdin_fails_the_write_instead_of_hanging() {
    let bridge = Bridge::new();
    let (id, _) = bridge.start(json!("sleep 1000")).await;
    // Far more than a pipe buffer holds: the write blocks until the 10 s limit (paused time).
    let data = "x".repeat(4 * 1024 * 1024);
    let write = bridge.call("process", json!({"action": "write", "sessionId": id, "data": data})).await;
    assert!(err_text(&write).starts_with(&format!("Session {id} is not reading its stdin")), "{}", err_text(&write));
}

#[tokio::test]
async fn kill_ends_the_whole_tree() {
    let bridge = Bridge::new();
    // The second sleeper escapes into a session (and process group) of its own, then says so.
    let (id, leader) =
        bridge.start(json!("sleep 1000 & echo $!; setsid sh -c 'echo $$; exec sleep 1000' & wait")).await;
    let mut pids = pids_in(&bridge.poll_until(&id, |out| pids_in(out).len() == 2).await);
    pids.push(leader);
    assert!(pids.iter().all(|&pid| !pid_is_dead(pid)), "running before the kill");
    let kill = bridge.call("process", json!({"action": "kill", "sessionId": id})).await;
    assert_eq!(ok_text(&kill), format!("Killed session {id}: it and everything it started are gone."));
    for pid in pids {
        assert!(pid_is_dead(pid), "pid {pid} survived the kill");
    }
    let poll = bridge.call("process", json!({"action": "poll", "sessionId": id})).await;
    assert!(ok_text(&poll).ends_with("Process was killed with everything it started."), "{}", ok_text(&poll));
    let again = bridge.call("process", json!({"action": "kill", "sessionId": id})).await;
    assert!(ok_text(&again).contains("already ended"));
    let stop = bridge.start(json!("sleep 1000")).await.0;
    let stopped = bridge.call("process", json!({"action": "stop", "sessionId": stop})).await;
    assert!(ok_text(&stopped).starts_with(&format!("Killed session {stop}")), "the bridge's name for kill");
}

#[tokio::test]
async fn list_shows_running_and_finished_sessions() {
    let bridge = Bridge::new();
    let empty = bridge.call("process", json!({"action": "list"})).await;
    assert_eq!(ok_text(&empty), "No running or recent sessions.");
    let (done, _) = bridge.start(json!("exit 2")).await;
    bridge.poll_to_end(&done).await;
    let (running, pid) = bridge.start(json!(["sleep", "1000"])).await;
    let list = bridge.call("process", json!({"action": "list"})).await;
    let lines: Vec<&str> = ok_text(&list).lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with(&format!("{done} exit 2 ")) && lines[0].ends_with(":: exit 2"), "{}", lines[0]);
    assert!(lines[1].starts_with(&format!("{running} running ")), "{}", lines[1]);
    assert!(lines[1].ends_with(&format!("pid {pid} :: sleep 1000")), "{}", lines[1]);
}

#[tokio::test]
async fn log_pages_the_kept_output_by_line() {
    let bridge = Bridge::new();
    let (id, _) = bridge.start(json!(format!("seq 1 {DEFAULT_LOG_LINES}"))).await;
    bridge.poll_to_end(&id).await;
    let log = |args: serde_json::Value| {
        let mut args = args;
        args["action"] = json!("log");
        args["sessionId"] = json!(id);
        bridge.call("process", args)
    };
    let all = log(json!({})).await;
    let expected: Vec<String> = (1..=DEFAULT_LOG_LINES).map(|n| n.to_string()).collect();
    assert_eq!(ok_text(&all), expected.join("\n"), "exactly the default: no paging note");
    assert_eq!(ok_text(&log(json!({"offset": 3, "limit": 2})).await), "4\n5");
    assert_eq!(ok_text(&log(json!({"limit": 2})).await), "199\n200");
    assert_eq!(ok_text(&log(json!({"offset": 198})).await), "199\n200");
    assert_eq!(
        ok_text(&log(json!({"offset": 500})).await),
        "(no lines from offset 200: the kept output has 200 lines)"
    );
    assert_eq!(err_text(&log(json!({"limit": 0})).await), "Parameter `limit` must be an integer >= 1, got 0");
}

#[tokio::test]
async fn log_past_the_default_shows_the_tail_and_says_how_to_page() {
    let bridge = Bridge::new();
    let lines = DEFAULT_LOG_LINES + 1;
    let (id, _) = bridge.start(json!(format!("seq 1 {lines}"))).await;
    bridge.poll_to_end(&id).await;
    let log = bridge.call("process", json!({"action": "log", "sessionId": id})).await;
    let text = ok_text(&log);
    let (shown, note) = text.rsplit_once("\n\n").unwrap();
    assert_eq!(shown.lines().next(), Some("2"));
    assert_eq!(shown.lines().count(), DEFAULT_LOG_LINES);
    assert_eq!(note, format!("[showing last {DEFAULT_LOG_LINES} of {lines} lines; pass offset/limit to page]"));
}

#[tokio::test]
async fn clear_forgets_only_finished_sessions_and_remove_kills_first() {
    let bridge = Bridge::new();
    let (running, pid) = bridge.start(json!("sleep 1000")).await;
    let refused = bridge.call("process", json!({"action": "clear", "sessionId": running})).await;
    assert!(err_text(&refused).contains("is still running"));
    let removed = bridge.call("process", json!({"action": "remove", "sessionId": running})).await;
    assert_eq!(ok_text(&removed), format!("Removed session {running} (it and everything it started were killed)."));
    assert!(pid_is_dead(pid));
    let gone = bridge.call("process", json!({"action": "poll", "sessionId": running})).await;
    assert!(err_text(&gone).starts_with(&format!("No session found for {running}")));

    let (done, _) = bridge.start(json!("true")).await;
    bridge.poll_to_end(&done).await;
    let cleared = bridge.call("process", json!({"action": "clear", "sessionId": done})).await;
    assert_eq!(ok_text(&cleared), format!("Cleared session {done}."));
    assert_eq!(ok_text(&bridge.call("process", json!({"action": "list"})).await), "No running or recent sessions.");
}

#[tokio::test]
async fn bad_requests_say_what_to_send() {
    let bridge = Bridge::new();
    let invalid = bridge.call("process", json!({"action": "send-keys", "sessionId": "bg-1"})).await;
    assert_eq!(
        err_text(&invalid),
        "Invalid process action \"send-keys\". Expected one of: list, poll, log, write, kill, clear, remove"
    );
    let missing = bridge.call("process", json!({"action": "poll"})).await;
    assert_eq!(err_text(&missing), "sessionId is required for this action.");
    let unknown = bridge.call("process", json!({"action": "log", "sessionId": "bg-99"})).await;
    assert_eq!(err_text(&unknown), "No session found for bg-99. Use action list to see the kept sessions.");
    let no_action = bridge.call("process", json!({})).await;
    assert!(
        err_text(&no_action).starts_with("Invalid arguments for process: `action` is required (Process action)"),
        "{}",
        err_text(&no_action)
    );
}

#[tokio::test]
async fn the_job_cap_refuses_a_new_job_until_one_has_finished() {
    let bridge = Bridge::new();
    let mut ids = Vec::new();
    for _ in 0..MAX_JOBS {
        ids.push(bridge.start(json!("sleep 1000")).await.0);
    }
    let refused = bridge.call("exec", json!({"command": "touch refused", "background": true})).await;
    assert!(
        err_text(&refused)
            .starts_with(&format!("Cannot start a background job: {MAX_JOBS} background jobs are running")),
        "{}",
        err_text(&refused)
    );
    assert!(!bridge.dir.path().join("refused").exists(), "a refused job never starts");
    // With no room to hand over, a command outliving yieldMs simply stays in the foreground.
    let foreground = bridge.call("exec", json!({"command": "sleep 0.2; echo stayed", "yieldMs": 1})).await;
    assert_eq!(ok_text(&foreground), "stayed");

    bridge.call("process", json!({"action": "kill", "sessionId": ids[3]})).await;
    let admitted = bridge.start(json!("sleep 1000")).await.0;
    let list = bridge.call("process", json!({"action": "list"})).await;
    let listed: Vec<&str> = ok_text(&list).lines().map(|line| line.split(' ').next().unwrap()).collect();
    assert_eq!(listed.len(), MAX_JOBS);
    assert!(!listed.contains(&ids[3].as_str()), "the finished job made room: {listed:?}");
    assert!(listed.contains(&admitted.as_str()));
}

#[tokio::test]
async fn dropping_the_tools_kills_every_running_job() {
    let bridge = Bridge::new();
    let mut pids = Vec::new();
    for _ in 0..3 {
        let (id, leader) = bridge.start(json!("sleep 1000 & echo $!; wait")).await;
        pids.extend(pids_in(&bridge.poll_until(&id, |out| !pids_in(out).is_empty()).await));
        pids.push(leader);
    }
    assert!(pids.iter().all(|&pid| !pid_is_dead(pid)));
    drop(bridge);
    for pid in pids {
        wait_until_dead(pid).await;
    }
}

#[tokio::test]
async fn shutdown_stops_every_job_before_returning() {
    let bridge = Bridge::new();
    let (id, leader) = bridge.start(json!("trap '' TERM; sleep 1000 & echo $!; wait")).await;
    let mut pids = pids_in(&bridge.poll_until(&id, |out| !pids_in(out).is_empty()).await);
    pids.push(leader);
    bridge.tools.shutdown().await;
    for pid in pids {
        assert!(pid_is_dead(pid), "pid {pid} survived shutdown");
    }
}
