//! From clone to daily use: `--version`, shell completions, the man page, logging flags and the
//! systemd user service, each driven through the real binary.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{BIN, Node, Sandbox, mode, stderr_of, stdout_of};

/// The top-level subcommands a user can type (clap's `help` included).
const SUBCOMMANDS: &[&str] =
    &["node", "call", "token", "approvals", "settings", "doctor", "serve", "tools", "completions", "man", "help"];

/// What `git` says HEAD is in this checkout, or `unknown` outside one (a packaged crate is built
/// from `.cargo_vcs_info.json`, never tested from here).
fn expected_commit() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8(output.stdout).unwrap().trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[test]
fn version_names_the_release_and_the_git_commit() {
    let sandbox = Sandbox::new();
    let expected = format!("clawmcp {} ({})\n", env!("CARGO_PKG_VERSION"), expected_commit());
    assert_eq!(stdout_of(&sandbox.clawmcp(["--version"]).assert().success()), expected);
    // Subcommands say the same (propagated), so a pasted `clawmcp node --version` is as useful.
    let node = stdout_of(&sandbox.clawmcp(["node", "--version"]).assert().success());
    assert_eq!(node, expected.replacen("clawmcp", "clawmcp-node", 1));
}

/// What bash's completion offers after `words` (the last one is the word being completed), from
/// the script `clawmcp completions bash` prints, loaded into a real bash.
fn bash_completes(sandbox: &Sandbox, words: &[&str]) -> Vec<String> {
    let script = sandbox.root().join("clawmcp.bash");
    fs::write(&script, stdout_of(&sandbox.clawmcp(["completions", "bash"]).assert().success())).unwrap();
    let line = words.join(" ");
    let program = format!(
        "source {script}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT={point}; \
         _clawmcp clawmcp '{current}' '{previous}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script = script.display(),
        words = words.iter().map(|word| format!("'{word}'")).collect::<Vec<_>>().join(" "),
        cword = words.len() - 1,
        point = line.len(),
        current = words[words.len() - 1],
        previous = words[words.len() - 2],
    );
    let output = Command::new("bash").arg("--norc").arg("-c").arg(&program).output().expect("bash runs");
    assert!(output.status.success(), "bash failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn bash_completion_offers_every_subcommand_and_the_service_actions() {
    let sandbox = Sandbox::new();
    let top = bash_completes(&sandbox, &["clawmcp", ""]);
    for name in SUBCOMMANDS {
        assert!(top.iter().any(|word| word == name), "`clawmcp <TAB>` lacks {name}: {top:?}");
    }
    let service = bash_completes(&sandbox, &["clawmcp", "node", "service", ""]);
    for name in ["install", "uninstall", "status"] {
        assert!(service.iter().any(|word| word == name), "`clawmcp node service <TAB>` lacks {name}: {service:?}");
    }
    let flags = bash_completes(&sandbox, &["clawmcp", "node", "--log-f"]);
    assert_eq!(flags, ["--log-format", "--log-file"], "global flags complete under a subcommand");
}

#[test]
fn every_shell_gets_a_completion_script_naming_the_subcommands() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&sandbox.clawmcp(["completions", shell]).assert().success());
        for name in ["node", "service", "completions", "log-format"] {
            assert!(script.contains(name), "the {shell} script does not mention {name}");
        }
    }
    let refused = sandbox.clawmcp(["completions", "tcsh"]).assert().code(2);
    assert!(stderr_of(&refused).contains("possible values: bash, elvish, fish, powershell, zsh"));
}

/// `page` rendered by groff as a terminal would show it (plain text, no hyphenation breaks).
fn rendered(sandbox: &Sandbox, page: &Path) -> String {
    let output = sandbox
        .command_for("groff")
        .args(["-man", "-Tutf8", "-P-cbou", "-rHY=0"])
        .arg(page)
        .output()
        .expect("groff runs (Debian package groff-base)");
    assert!(output.status.success(), "groff: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_man_page_renders_the_version_and_every_subcommand() {
    let sandbox = Sandbox::new();
    let page = sandbox.root().join("clawmcp.1");
    fs::write(&page, stdout_of(&sandbox.clawmcp(["man"]).assert().success())).unwrap();
    let text = rendered(&sandbox, &page);
    assert!(text.contains(&format!("v{} ({})", env!("CARGO_PKG_VERSION"), expected_commit())), "{text}");
    for name in SUBCOMMANDS.iter().filter(|name| **name != "help") {
        assert!(text.contains(&format!("clawmcp-{name}(1)")), "the man page lacks clawmcp-{name}(1):\n{text}");
    }
    assert!(!text.contains("clawmcp-help(1)"), "no page is pointed at that --out-dir does not write");
}

#[test]
fn man_out_dir_writes_one_page_per_subcommand() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root().join("man1");
    let assert = sandbox.clawmcp(["man", "--out-dir"]).arg(&dir).assert().success();
    let mut written: Vec<String> = stdout_of(&assert).lines().map(str::to_owned).collect();
    written.sort();
    let mut listed: Vec<String> =
        fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path().display().to_string()).collect();
    listed.sort();
    assert_eq!(written, listed, "it prints what it wrote");
    for page in ["clawmcp.1", "clawmcp-node.1", "clawmcp-node-service-install.1", "clawmcp-approvals-allow-once.1"] {
        assert!(dir.join(page).is_file(), "no {page} in {listed:?}");
    }
    let install = rendered(&sandbox, &dir.join("clawmcp-node-service-install.1"));
    assert!(install.contains("clawmcp-node-service-install"), "{install}");
    assert!(install.contains("--no-enable"), "{install}");
    assert!(!dir.join("clawmcp-help.1").exists());
}

/// A node with `extra` flags before `node`'s own, started and stopped; the log file's lines.
fn node_log(sandbox: &Sandbox, global: &[&str]) -> Vec<String> {
    let log = sandbox.root().join("node.log");
    let _ = fs::remove_file(&log);
    let data = sandbox.data();
    let node = Node::start_with(sandbox, |command, port| {
        // The global flags go after the subcommand here, as a user often types them.
        command.args(["--port", &port.to_string(), "--data-dir"]).arg(&data).args(global).arg("--log-file").arg(&log);
    });
    assert!(!node.stderr().contains("MCP HTTP server listening"), "the log goes to the file, not stderr");
    drop(node);
    assert_eq!(mode(&log), 0o600);
    fs::read_to_string(&log).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn the_node_logs_json_lines_to_a_private_file_and_quiet_keeps_only_warnings() {
    let sandbox = Sandbox::new();
    let lines = node_log(&sandbox, &["--log-format", "json"]);
    let events: Vec<Value> =
        lines.iter().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect();
    let listening = events
        .iter()
        .find(|event| event["fields"]["message"] == "MCP HTTP server listening")
        .unwrap_or_else(|| panic!("no listening event in {lines:?}"));
    assert_eq!(listening["level"], "INFO");
    assert!(listening["fields"]["endpoint"].as_str().unwrap().starts_with("http://127.0.0.1:"));
    assert!(listening["timestamp"].is_string());

    let text = node_log(&sandbox, &[]);
    assert!(text.iter().any(|line| line.contains("INFO") && line.contains("MCP HTTP server listening")), "{text:?}");
    assert!(!text.iter().any(|line| line.contains('\u{1b}')), "no colour codes in a file");

    let quiet = node_log(&sandbox, &["--quiet"]);
    assert!(quiet.iter().all(|line| line.contains("WARN") || line.contains("ERROR")), "{quiet:?}");
}

#[test]
fn a_log_file_that_is_a_symlink_or_fifo_is_refused_before_anything_runs() {
    let sandbox = Sandbox::new();
    let target = sandbox.root().join("target");
    fs::write(&target, "kept").unwrap();
    let link = sandbox.root().join("link.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let refused = sandbox.clawmcp(["token", "--log-file"]).arg(&link).assert().failure();
    assert!(stderr_of(&refused).contains("is a symbolic link"), "{}", stderr_of(&refused));
    assert_eq!(stdout_of(&refused), "", "the command did not run");
    assert_eq!(fs::read_to_string(&target).unwrap(), "kept");

    let fifo = sandbox.root().join("fifo.log");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let refused = sandbox.clawmcp(["token", "--log-file"]).arg(&fifo).assert().failure();
    assert!(stderr_of(&refused).contains("FIFO"), "{}", stderr_of(&refused));

    let both = sandbox.clawmcp(["-q", "-v", "token"]).assert().code(2);
    assert!(stderr_of(&both).contains("'--quiet' cannot be used with '--verbose"));
}

/// The sandbox's private `XDG_CONFIG_HOME`, and a runtime dir with no user systemd in it: the
/// tests never reach the real user manager of the machine they run on.
struct ServiceEnv {
    config: PathBuf,
    runtime: PathBuf,
}

impl ServiceEnv {
    fn new(sandbox: &Sandbox) -> Self {
        let env = ServiceEnv { config: sandbox.root().join("config"), runtime: sandbox.root().join("runtime") };
        fs::create_dir_all(&env.runtime).unwrap();
        env
    }

    fn unit(&self) -> PathBuf {
        self.config.join("systemd/user/clawmcp-node.service")
    }

    fn clawmcp(&self, sandbox: &Sandbox, args: &[&str]) -> assert_cmd::Command {
        let mut command = sandbox.clawmcp(args);
        command
            .env("XDG_CONFIG_HOME", &self.config)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .current_dir(sandbox.root());
        command
    }
}

fn exec_start(unit: &str) -> &str {
    unit.lines().find_map(|line| line.strip_prefix("ExecStart=")).expect("an ExecStart line")
}

/// `systemd-analyze verify` on a unit file: its own parser and checks (the binary exists and is
/// executable, every key is known), offline.
fn systemd_verify(sandbox: &Sandbox, unit: &Path) -> Result<(), String> {
    let output = sandbox
        .command_for("systemd-analyze")
        .arg("verify")
        .arg(unit)
        .output()
        .expect("systemd-analyze runs (Debian package systemd)");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    match output.status.success() && !stderr.contains(&unit.display().to_string()) {
        true => Ok(()),
        false => Err(stderr),
    }
}

#[test]
fn service_install_writes_a_unit_that_runs_this_binary_with_the_flags_given() {
    let sandbox = Sandbox::new();
    let env = ServiceEnv::new(&sandbox);
    fs::write(sandbox.root().join("gateway.token"), "secret").unwrap();
    // Relative paths are made absolute (the service starts elsewhere); a value from the
    // environment is written out (the service manager does not have this shell's); defaults
    // (the approval timeout, the log format) are not.
    let assert = env
        .clawmcp(&sandbox, &["node", "--data-dir", "data", "--tools", "system.which,device.*"])
        .args(["--gateway-token-file", "gateway.token", "-v", "service", "install", "--no-enable"])
        .env("OPENCLAW_MCP_PORT", "9123")
        .assert()
        .success();
    let unit = fs::read_to_string(env.unit()).expect("the unit file");
    let root = sandbox.root().display();
    let bin = Path::new(BIN).canonicalize().unwrap();
    assert_eq!(
        exec_start(&unit),
        format!(
            "{} node --data-dir={root}/data --port=9123 \"--tools=system.which,device.*\" \
             --gateway-token-file={root}/gateway.token --verbose",
            bin.display()
        )
    );
    for line in ["Restart=on-failure", "RestartPreventExitStatus=2", "StandardError=journal", "WantedBy=default.target"]
    {
        assert!(unit.lines().any(|l| l == line), "no {line} in\n{unit}");
    }
    let stderr = stderr_of(&assert);
    assert!(stderr.contains("systemctl --user daemon-reload\n  systemctl --user enable --now clawmcp-node.service"));
    systemd_verify(&sandbox, &env.unit()).expect("systemd accepts the unit");

    let status = stdout_of(&env.clawmcp(&sandbox, &["node", "service", "status"]).assert().success());
    assert!(status.contains("(written by clawmcp)") && status.contains(exec_start(&unit)), "{status}");
}

#[test]
fn systemd_verify_fails_a_unit_whose_program_is_missing() {
    // The check above can fail: the same unit pointing at a program that is not there.
    let sandbox = Sandbox::new();
    let env = ServiceEnv::new(&sandbox);
    env.clawmcp(&sandbox, &["node", "--data-dir", "data", "service", "install", "--no-enable"]).assert().success();
    let unit = fs::read_to_string(env.unit()).unwrap();
    let broken = sandbox.root().join("clawmcp-node.service");
    fs::write(&broken, unit.replace(exec_start(&unit), "/nonexistent/clawmcp node")).unwrap();
    let why = systemd_verify(&sandbox, &broken).expect_err("a missing program is an error");
    assert!(why.contains("/nonexistent/clawmcp"), "{why}");
}

#[test]
fn service_install_without_a_user_systemd_writes_the_unit_and_says_what_to_run() {
    let sandbox = Sandbox::new();
    let env = ServiceEnv::new(&sandbox);
    let assert = env.clawmcp(&sandbox, &["node", "--data-dir", "data", "service", "install"]).assert().success();
    let stderr = stderr_of(&assert);
    assert!(stderr.contains("the systemd user instance cannot be reached here"), "{stderr}");
    assert!(stderr.contains("  systemctl --user daemon-reload\n  systemctl --user enable --now clawmcp-node.service"));
    assert!(stderr.contains("sudo loginctl enable-linger $USER"), "{stderr}");
    assert!(env.unit().is_file());
}

#[test]
fn service_install_refuses_inline_secrets_and_setup_codes() {
    let sandbox = Sandbox::new();
    let env = ServiceEnv::new(&sandbox);
    for (flag, hint) in [
        ("--gateway-token", "--gateway-token-file"),
        ("--gateway-password", "--gateway-password-file"),
        ("--pair", "single-use"),
    ] {
        let refused = env.clawmcp(&sandbox, &["node", flag, "value", "service", "install"]).assert().code(2);
        let stderr = stderr_of(&refused);
        assert!(stderr.contains(&format!("{flag} cannot be used with `service install`")) && stderr.contains(hint));
        assert!(!stderr.contains("value"), "the secret is not echoed: {stderr}");
        assert!(!env.unit().exists(), "nothing written for {flag}");
    }
}

#[test]
fn service_uninstall_removes_our_unit_and_its_link_and_leaves_a_foreign_one() {
    let sandbox = Sandbox::new();
    let env = ServiceEnv::new(&sandbox);
    env.clawmcp(&sandbox, &["node", "--data-dir", "data", "service", "install", "--no-enable"]).assert().success();
    // What `systemctl --user enable` would have linked, left behind without systemd.
    let wants = env.unit().with_file_name("default.target.wants");
    fs::create_dir_all(&wants).unwrap();
    std::os::unix::fs::symlink(env.unit(), wants.join("clawmcp-node.service")).unwrap();
    let removed = env.clawmcp(&sandbox, &["node", "service", "uninstall"]).assert().success();
    assert!(stderr_of(&removed).contains("removed"), "{}", stderr_of(&removed));
    assert!(!env.unit().exists());
    assert!(fs::symlink_metadata(wants.join("clawmcp-node.service")).is_err(), "the dangling link is gone");
    let again = env.clawmcp(&sandbox, &["node", "service", "uninstall"]).assert().success();
    assert!(stderr_of(&again).contains("not installed"));
    assert!(
        stdout_of(&env.clawmcp(&sandbox, &["node", "service", "status"]).assert().success()).contains("not installed")
    );

    let foreign = "[Service]\nExecStart=/usr/bin/true\n";
    fs::write(env.unit(), foreign).unwrap();
    for action in ["install", "uninstall"] {
        let refused = env.clawmcp(&sandbox, &["node", "service", action]).assert().failure();
        assert!(stderr_of(&refused).contains("was not written by clawmcp"), "{}", stderr_of(&refused));
        assert_eq!(fs::read_to_string(env.unit()).unwrap(), foreign);
    }
}
