//! The exec policy edited from the command line: `clawmcp approvals allow PROGRAM
//! [--args-pattern RE]` lets a program run without a prompt on a running node (any arguments,
//! or only matching ones, which `allow-always` cannot say), `remove` takes that back, `policy`
//! shows it, `set-default` changes the defaults; bad input is refused with what to do.

use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use serde_json::{Value, json};

use crate::support::{Background, Node, Sandbox, WAIT_LIMIT, json_of, stdout_of, wait_for};

/// `clawmcp call system.run` of `argv` on `node`, which must finish without a prompt: the run's
/// stdout. A run that waits for approval fails the test once the prompt shows up (instead of
/// hanging until the approval timeout).
fn run_unprompted(sandbox: &Sandbox, node: &Node, argv: &[&str]) -> String {
    let params = json!({"command": argv}).to_string();
    let mut call = node.spawn(sandbox, "call", &["system.run", "--params", &params]);
    let done = wait_for(
        WAIT_LIMIT,
        &format!("{argv:?} to run without a prompt"),
        || {
            if let Some(status) = call.try_status() {
                return Some(status);
            }
            let pending = stdout_of(&node.run(sandbox, "approvals", &["list"]).assert().success());
            assert!(pending.is_empty(), "{argv:?} waits for approval: {pending}");
            None
        },
        || node.stderr(),
    );
    assert!(done.success(), "{argv:?}: {}", call.stderr());
    let result: Value = serde_json::from_str(&call.stdout()).expect("the run result as JSON");
    assert_eq!(result["exitCode"], 0, "{result}");
    result["stdout"].as_str().expect("stdout").to_owned()
}

/// Starts `system.run` of `argv` and waits until it is pending approval; returns the caller and
/// the request id.
fn run_prompted(sandbox: &Sandbox, node: &Node, argv: &[&str]) -> (Background, String) {
    let params = json!({"command": argv}).to_string();
    let mut call = node.spawn(sandbox, "call", &["system.run", "--params", &params]);
    let needle = argv.join(" ");
    let id = wait_for(
        WAIT_LIMIT,
        &format!("{argv:?} to wait for approval"),
        || {
            let listing = stdout_of(&node.run(sandbox, "approvals", &["list"]).assert().success());
            let line = listing.lines().find(|line| line.ends_with(&format!("command: {needle}")))?;
            Some(line.split_whitespace().next()?.to_owned())
        },
        || format!("{:?} {}", call.try_status(), call.stderr()),
    );
    (call, id)
}

/// The output of `argv` run here, for comparison with the node's run.
fn local(argv: &[&str]) -> String {
    let output = std::process::Command::new(argv[0]).args(&argv[1..]).output().expect("runs locally");
    String::from_utf8(output.stdout).unwrap()
}

fn policy(sandbox: &Sandbox, node: &Node) -> Value {
    json_of(&node.run(sandbox, "approvals", &["policy", "--json"]).assert().success())
}

#[test]
fn approvals_allow_lets_a_program_run_with_any_arguments_until_it_is_removed() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let allowed = node.run(&sandbox, "approvals", &["allow", "/usr/bin/id"]).assert().success();
    let id = stdout_of(&allowed).trim().to_owned();
    assert_eq!(id.len(), 36, "the rule id on stdout: {id}");
    assert!(
        String::from_utf8_lossy(&allowed.get_output().stderr)
            .contains("allowed /usr/bin/id (any arguments) for every agent"),
        "{allowed:?}"
    );

    assert_eq!(run_unprompted(&sandbox, &node, &["id", "-g"]), local(&["id", "-g"]));
    assert_eq!(run_unprompted(&sandbox, &node, &["id", "-u"]), local(&["id", "-u"]));

    let shown = policy(&sandbox, &node);
    let rules = shown["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{shown}");
    assert_eq!(rules[0]["id"], id.as_str());
    assert_eq!(rules[0]["agent"], "*");
    assert_eq!(rules[0]["pattern"], "/usr/bin/id");
    assert_eq!(rules[0]["allows"], "any arguments");
    assert!(rules[0]["lastUsedAt"].is_i64(), "the node stamped the rule it used: {shown}");
    assert_eq!(shown["effective"]["main"], json!({"security": "allowlist", "ask": "on-miss", "askFallback": "deny"}));
    let text = stdout_of(&node.run(&sandbox, "approvals", &["policy"]).assert().success());
    assert!(text.contains(&format!("  {id}  agent=* (every agent)  /usr/bin/id  any arguments")), "{text}");

    // Allowing it again changes nothing.
    node.run(&sandbox, "approvals", &["allow", "id"])
        .assert()
        .success()
        .stderr(contains(format!("already allowed: rule {id}")));
    assert_eq!(policy(&sandbox, &node)["rules"].as_array().unwrap().len(), 1);

    // Removed by program: the next run asks again.
    node.run(&sandbox, "approvals", &["remove", "id"])
        .assert()
        .success()
        .stderr(contains(format!("removed rule {id} (agent *): /usr/bin/id any arguments")));
    let (mut call, pending) = run_prompted(&sandbox, &node, &["id", "-g"]);
    node.run(&sandbox, "approvals", &["deny", &pending]).assert().success();
    assert_eq!(call.wait("the denied run").code(), Some(1));
    assert!(policy(&sandbox, &node)["rules"].as_array().unwrap().is_empty());
}

#[test]
fn approvals_allow_with_an_args_pattern_allows_only_matching_arguments_and_remove_takes_an_id() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let allowed = node
        .run(&sandbox, "approvals", &["allow", "id", "--args-pattern", "^-g$", "--agent", "main"])
        .assert()
        .success();
    let id = stdout_of(&allowed).trim().to_owned();
    assert_eq!(run_unprompted(&sandbox, &node, &["id", "-g"]), local(&["id", "-g"]));

    let (mut call, pending) = run_prompted(&sandbox, &node, &["id", "-u"]);
    node.run(&sandbox, "approvals", &["deny", &pending]).assert().success();
    assert_eq!(call.wait("the denied run").code(), Some(1));

    let rule = policy(&sandbox, &node)["rules"][0].clone();
    assert_eq!((rule["agent"].as_str(), rule["argPattern"].as_str()), (Some("main"), Some("^-g$")), "{rule}");
    assert_eq!(rule["allows"], "arguments matching /^-g$/");

    node.run(&sandbox, "approvals", &["remove", &id])
        .assert()
        .success()
        .stderr(contains(format!("removed rule {id} (agent main)")));
    let (mut call, pending) = run_prompted(&sandbox, &node, &["id", "-g"]);
    node.run(&sandbox, "approvals", &["deny", &pending]).assert().success();
    assert_eq!(call.wait("the denied run").code(), Some(1));
}

#[test]
fn approvals_allow_refuses_a_bad_regex_and_an_unknown_program_with_a_hint_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    let approvals = |args: &[&str]| {
        let mut command = sandbox.clawmcp(["approvals"]);
        command.args(args).arg("--data-dir").arg(&data);
        command
    };
    approvals(&["allow", "/usr/bin/id", "--args-pattern", "(-g"])
        .assert()
        .code(2)
        .stderr(contains("error: --args-pattern `(-g` is not a usable regex"))
        .stderr(contains("unclosed group"))
        .stderr(contains("hint: a regex over the arguments joined by single spaces"));
    approvals(&["allow", "no-such-program-here"])
        .assert()
        .code(2)
        .stderr(contains("error: cannot allow `no-such-program-here`"))
        .stderr(contains("hint: give the program's absolute path"));
    approvals(&["remove", "/usr/bin/id"])
        .assert()
        .code(1)
        .stderr(contains("error: no allow rule has the id or names the program `/usr/bin/id`"))
        .stderr(contains("hint: `clawmcp approvals policy` lists the rules"));
    approvals(&["set-default"]).assert().code(2).stderr(contains("hint: pass --security, --ask or --ask-fallback"));
    assert!(!sandbox.approvals_path().exists(), "nothing was written");

    // An unusable file is reported with the way out, and never overwritten.
    sandbox.write_data_file("exec-approvals.json", "{ not json");
    approvals(&["allow", "/usr/bin/id"]).assert().code(1).stderr(contains("is unusable")).stderr(contains(format!(
        "hint: fix it, or move it away to start from the defaults: `mv {0} {0}.bak`",
        sandbox.approvals_path().display()
    )));
    assert_eq!(std::fs::read_to_string(sandbox.approvals_path()).unwrap(), "{ not json");
}

#[test]
fn approvals_set_default_changes_the_defaults_and_says_when_it_loosens() {
    let sandbox = Sandbox::new();
    let data = sandbox.data();
    let approvals = |args: &[&str]| {
        let mut command = sandbox.clawmcp(["approvals"]);
        command.args(args).arg("--data-dir").arg(&data);
        command
    };
    approvals(&["set-default", "--ask", "always"])
        .assert()
        .success()
        .stderr(contains("defaults: security=allowlist ask=always askFallback=deny"))
        .stderr(contains("loosens").not());
    approvals(&["allow", "/usr/bin/id"])
        .assert()
        .success()
        .stderr(contains("note: for agent main the rule changes nothing yet (ask=always"));
    approvals(&["set-default", "--security", "full", "--ask", "off"])
        .assert()
        .success()
        .stderr(contains("defaults: security=full ask=off askFallback=deny"))
        .stderr(contains("note: this loosens the policy"));
    approvals(&["set-default", "--ask", "off"]).assert().success().stderr(contains("defaults unchanged"));
    let shown = json_of(&approvals(&["policy", "--json"]).assert().success());
    assert_eq!(
        shown["file"]["defaults"],
        json!({"security": "full", "ask": "off", "askFallback": "deny", "autoAllowSkills": false})
    );
    assert_eq!(shown["exists"], true);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(sandbox.approvals_path()).unwrap()).unwrap();
    assert_eq!(written["defaults"]["security"], "full");
    assert_eq!(crate::support::mode(&sandbox.approvals_path()), 0o600);
}
