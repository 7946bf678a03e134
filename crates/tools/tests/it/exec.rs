//! `exec`: shell strings and argv, workdir and env, exit codes, the output cap at its edge,
//! timeouts and cancellation that end the whole process tree, and the hand-over to `process`.

use crate::jobs_support;

use clawmcp_mcp::{CANCELLED, CallContext};
use clawmcp_tools::{Workspace, call_local};
use jobs_support::{Bridge, err_text, ok_text, pid_is_dead, pids_in, running_session, wait_for_lines};
use serde_json::json;

/// The bytes of output each job keeps (the documented default).
const OUTPUT_CAP: usize = 256 * 1024;

#[tokio::test]
async fn a_shell_string_runs_in_the_shell_with_merged_output() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": "echo one; echo two >&2; echo $((6 * 7)) | tr 4 X"})).await;
    assert_eq!(ok_text(&result), "one\ntwo\nX2");
}

#[tokio::test]
async fn an_argv_runs_without_a_shell() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": ["printf", "%s|", "a b", "$HOME", "*"]})).await;
    assert_eq!(ok_text(&result), "a b|$HOME|*|");
}

#[tokio::test]
async fn no_output_says_so() {
    let bridge = Bridge::new();
    assert_eq!(ok_text(&bridge.call("exec", json!({"command": "true"})).await), "(no output)");
}

#[tokio::test]
async fn workdir_is_resolved_against_the_workspace_root() {
    let bridge = Bridge::new();
    std::fs::create_dir(bridge.dir.path().join("sub")).unwrap();
    let root = std::fs::canonicalize(bridge.dir.path()).unwrap();
    let default = bridge.call("exec", json!({"command": "pwd -P"})).await;
    assert_eq!(ok_text(&default), root.to_str().unwrap());
    let relative = bridge.call("exec", json!({"command": ["pwd", "-P"], "workdir": "sub"})).await;
    assert_eq!(ok_text(&relative), root.join("sub").to_str().unwrap());
    let alias = bridge.call("exec", json!({"command": "pwd -P", "cwd": "sub"})).await;
    assert_eq!(ok_text(&alias), root.join("sub").to_str().unwrap());
    let missing = bridge.call("exec", json!({"command": "pwd", "workdir": "nope"})).await;
    assert!(err_text(&missing).starts_with("Working directory nope (resolved to "), "{}", err_text(&missing));
}

#[tokio::test]
async fn env_adds_variables_to_the_inherited_environment() {
    let bridge = Bridge::new();
    let result = bridge
        .call(
            "exec",
            json!({"command": "printf '%s|%s' \"$GREETING\" \"${PATH:+inherited}\"", "env": {"GREETING": "hi there"}}),
        )
        .await;
    assert_eq!(ok_text(&result), "hi there|inherited");
}

#[tokio::test]
async fn a_nonzero_exit_is_an_error_that_keeps_the_output() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": "echo partial; echo oops >&2; exit 3"})).await;
    assert_eq!(err_text(&result), "partial\noops\n\n(Command exited with code 3)");
    let silent = bridge.call("exec", json!({"command": "exit 1"})).await;
    assert_eq!(err_text(&silent), "(no output)\n\n(Command exited with code 1)");
    let signal = bridge.call("exec", json!({"command": "kill -9 $$"})).await;
    assert_eq!(err_text(&signal), "(no output)\n\n(Command was killed by SIGKILL (exit code 137))");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_named() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": ["/nonexistent/program", "x"]})).await;
    let text = err_text(&result);
    assert!(text.starts_with("Execution failed: cannot start `/nonexistent/program`"), "{text}");
    assert!(text.contains("PATH"), "{text}");
}

#[tokio::test]
async fn a_timeout_kills_every_process_of_the_tree() {
    let bridge = Bridge::new();
    // The second sleeper escapes into a session (and process group) of its own.
    let script = "sleep 1000 & echo $!; setsid sh -c 'echo $$; exec sleep 1000' & echo $$; wait";
    let result = bridge.call("exec", json!({"command": script, "timeout": 0.3})).await;
    let text = err_text(&result);
    assert!(text.contains("(Command timed out after 0.3 s and was killed with everything it started)"), "{text}");
    let pids = pids_in(text.split("\n\n").next().unwrap());
    assert_eq!(pids.len(), 3, "{text}");
    for pid in pids {
        assert!(pid_is_dead(pid), "pid {pid} survived the timeout");
    }
}

#[tokio::test]
async fn cancellation_kills_the_tree_and_says_cancelled() {
    let bridge = Bridge::new();
    let pid_file = bridge.dir.path().join("pids");
    // The sleeper escapes into a session (and process group) of its own, then says so.
    let script = format!("setsid sh -c 'echo $$ >> {0}; exec sleep 1000' & echo $$ >> {0}; wait", pid_file.display());
    let ctx = CallContext::detached();
    let trigger = async {
        wait_for_lines(&pid_file, 2).await;
        ctx.cancel.cancel();
    };
    let (result, ()) = tokio::join!(bridge.call_with("exec", json!({"command": script}), &ctx), trigger);
    assert_eq!(err_text(&result), CANCELLED);
    for pid in pids_in(&std::fs::read_to_string(&pid_file).unwrap()) {
        assert!(pid_is_dead(pid), "pid {pid} survived cancellation");
    }
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_runs_nothing() {
    let bridge = Bridge::new();
    let ctx = CallContext::detached();
    ctx.cancel.cancel();
    let result = bridge.call_with("exec", json!({"command": "touch ran"}), &ctx).await;
    assert_eq!(err_text(&result), CANCELLED);
    assert!(!bridge.dir.path().join("ran").exists());
}

#[tokio::test]
async fn output_exactly_at_the_cap_is_whole() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": format!("head -c {OUTPUT_CAP} /dev/zero | tr '\\0' a")})).await;
    let text = ok_text(&result);
    assert_eq!(text.len(), OUTPUT_CAP);
    assert!(text.bytes().all(|b| b == b'a'));
}

#[tokio::test]
async fn output_past_the_cap_keeps_the_end_and_says_what_was_cut() {
    let bridge = Bridge::new();
    let total = OUTPUT_CAP + 1;
    let command = format!("printf b; head -c {} /dev/zero | tr '\\0' a; printf END", total - 4);
    let result = bridge.call("exec", json!({"command": command})).await;
    let text = ok_text(&result);
    let (note, output) = text.split_once("\n\n").unwrap();
    assert_eq!(
        note,
        format!(
            "[1 earlier bytes of output were discarded at the retention cap ({total} in total were written); \
             redirect large output to a file and read it in parts]"
        )
    );
    assert_eq!(output.len(), OUTPUT_CAP);
    assert!(output.starts_with('a') && output.ends_with("END"), "the first byte, b, was the one cut");
}

#[tokio::test]
async fn background_hands_the_command_to_process() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": "read name; echo hello $name", "background": true})).await;
    let (id, pid) = running_session(&result);
    assert_eq!(
        ok_text(&result),
        format!(
            "Command still running (session {id}, pid {pid}). Use process (list/poll/log/write/kill/clear/remove) for follow-up."
        )
    );
    let write = bridge.call("process", json!({"action": "write", "sessionId": id, "data": "ada\n"})).await;
    assert_eq!(ok_text(&write), format!("Wrote 4 bytes to session {id}."));
    let output = bridge.poll_until(&id, |out| out.contains("hello")).await;
    assert_eq!(output, "hello ada\n");
}

#[tokio::test]
async fn a_foreground_command_still_running_after_yield_ms_continues_in_the_background() {
    let bridge = Bridge::new();
    let result = bridge.call("exec", json!({"command": "echo started; read _; echo finished", "yieldMs": 50})).await;
    let (id, _) = running_session(&result);
    assert_eq!(bridge.poll_until(&id, |out| out.contains("started")).await, "started\n");
    bridge.call("process", json!({"action": "write", "sessionId": id, "data": "\n"})).await;
    let (output, status) = bridge.poll_to_end(&id).await;
    assert_eq!((output.as_str(), status.as_str()), ("finished\n", "Process exited with code 0."));
}

#[tokio::test]
async fn without_a_registry_exec_stays_in_the_foreground_with_stdin_closed() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path());
    let ctx = CallContext::detached();
    let call = |args: serde_json::Value| {
        let args = args.as_object().cloned().unwrap();
        let (ctx, workspace) = (&ctx, &workspace);
        async move { call_local("exec", &args, ctx, workspace).await.unwrap() }
    };
    // stdin is /dev/null, so `cat` ends at once instead of waiting for a write that cannot come.
    assert_eq!(ok_text(&call(json!({"command": "cat; echo done", "yieldMs": 0})).await), "done");
    let background = call(json!({"command": "sleep 1000", "background": true})).await;
    assert!(err_text(&background).starts_with("Background jobs are not available to this caller"));
}
