//! `clawmcp node service install|uninstall|status`: the node as a systemd user service.
//!
//! The unit runs this very binary (its absolute path) with `node` and the node flags the user
//! gave before `service`, read from clap's matches so that defaults stay defaults (a later
//! release's default is not frozen into the unit) while values from the environment
//! (`OPENCLAW_MCP_PORT=9000`) are written out: the service manager does not have the shell's
//! environment. The data directory is always written, resolved, so the service and the shell's
//! `clawmcp call` use the same token and settings. Secrets given inline and the single-use
//! `--pair` code are refused: a unit file is no place for a secret, and pairing is done once, in
//! a terminal, before the service is installed.
//!
//! systemd is driven through `systemctl --user` (each call bounded by systemctl's own D-Bus
//! timeout). When the user's systemd cannot be reached (a container, a shell without a login
//! session), the unit is still written and the exact commands to run are printed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, CommandFactory, ValueHint};
use clawmcp_node::settings::DataDir;

use crate::args::{Cli, ServiceAction, VERSION};
use crate::exit::UsageError;
use crate::output;

/// The unit's name, as `systemctl --user` and `journalctl --user -u` take it.
pub const UNIT: &str = "clawmcp-node.service";

/// The first line of every unit we write: what we may replace or remove. A unit of the same
/// name without it is the user's own and is left alone.
const MARKER: &str = "# Written by `clawmcp node service install`";

/// Node flags that must not reach a unit file, and what to use instead.
const REFUSED: &[(&str, &str)] = &[
    ("gateway_token", "it would write the secret into the unit file; use --gateway-token-file FILE instead"),
    ("gateway_password", "it would write the secret into the unit file; use --gateway-password-file FILE instead"),
    (
        "pair",
        "a setup code is single-use; pair once in a terminal (`clawmcp node --pair CODE`, Ctrl-C once it is \
         paired), then install the service without --pair: it reconnects with the saved gateway and device token",
    ),
];

pub fn run(action: ServiceAction, node_matches: &ArgMatches, data: &DataDir) -> anyhow::Result<ExitCode> {
    let unit_path = unit_path()?;
    match action {
        ServiceAction::Install { no_enable } => install(&unit_path, node_matches, data, no_enable),
        ServiceAction::Uninstall => uninstall(&unit_path),
        ServiceAction::Status => status(&unit_path),
    }
}

/// `$XDG_CONFIG_HOME/systemd/user/clawmcp-node.service` (`~/.config/...` by default): the
/// directory systemd's user instance reads units from.
pub fn unit_path() -> anyhow::Result<PathBuf> {
    let config = dirs::config_dir().context("no config directory is known for this user (set HOME)")?;
    Ok(config.join("systemd/user").join(UNIT))
}

fn install(unit_path: &Path, node_matches: &ArgMatches, data: &DataDir, no_enable: bool) -> anyhow::Result<ExitCode> {
    let program = std::env::current_exe().context("cannot find the path of this clawmcp binary")?;
    let mut argv = vec![program.into_os_string(), "node".into()];
    argv.extend(node_flags(node_matches, data)?);
    if node_matches.value_source("gateway_headers") == Some(ValueSource::CommandLine) {
        // No file form exists for a header, so it is written; say where it can be read.
        output::note(
            "note: the --gateway-header values are written into the unit (mode 0600) and, as for any start with them, \
             visible in the process list",
        );
    }
    let unit = unit_file(&argv)?;
    refuse_foreign(unit_path)?;
    let dir = unit_path.parent().expect("the unit path has a directory");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clawmcp_fs::write_private_atomic(unit_path, unit.as_bytes())
        .with_context(|| format!("cannot write {}", unit_path.display()))?;
    output::note(&format!("wrote {}", unit_path.display()));
    output::note(&format!("  ExecStart={}", exec_start(&argv)?));
    let enable = ["enable", "--now", UNIT];
    if no_enable {
        output::note(&format!(
            "not enabled (--no-enable); to start it now and at every login, run:\n{}",
            steps(&enable)
        ));
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(why) = systemctl(&["daemon-reload"]) {
        output::note(&format!(
            "the systemd user instance cannot be reached here ({why}), so nothing was started. In a login session \
             of this user, run:\n{}\nOn a machine nobody logs into, first let this user's services run without a \
             session: `sudo loginctl enable-linger $USER`.",
            steps(&enable)
        ));
        return Ok(ExitCode::SUCCESS);
    }
    systemctl(&enable).map_err(|why| anyhow::anyhow!("`systemctl --user enable --now {UNIT}` failed: {why}"))?;
    output::note(&format!(
        "enabled and started {UNIT}: it starts at every login and restarts if it fails.\n  status: clawmcp node \
         service status (or systemctl --user status {UNIT})\n  logs:   journalctl --user -u clawmcp-node -f"
    ));
    Ok(ExitCode::SUCCESS)
}

fn uninstall(unit_path: &Path) -> anyhow::Result<ExitCode> {
    if !exists(unit_path) {
        output::note(&format!("not installed: there is no {}", unit_path.display()));
        return Ok(ExitCode::SUCCESS);
    }
    refuse_foreign(unit_path)?;
    let reachable = match systemctl(&["disable", "--now", UNIT]) {
        Ok(()) => true,
        Err(why) => {
            output::note(&format!(
                "could not stop and disable {UNIT} through systemd ({why}); if it runs in another session of this \
                 user, run there: systemctl --user disable --now {UNIT}"
            ));
            false
        }
    };
    std::fs::remove_file(unit_path).with_context(|| format!("cannot remove {}", unit_path.display()))?;
    // `enable` links the unit from default.target.wants; without systemd that link is left
    // dangling, so it goes too (only a link to our unit file).
    let wants = unit_path.with_file_name("default.target.wants").join(UNIT);
    if std::fs::read_link(&wants).is_ok_and(|target| target == unit_path) {
        std::fs::remove_file(&wants).with_context(|| format!("cannot remove {}", wants.display()))?;
    }
    if reachable {
        let _ = systemctl(&["daemon-reload"]);
    }
    output::note(&format!("removed {}", unit_path.display()));
    Ok(ExitCode::SUCCESS)
}

fn status(unit_path: &Path) -> anyhow::Result<ExitCode> {
    if !exists(unit_path) {
        output::data(&format!(
            "not installed: there is no {}\n  install: clawmcp node [NODE FLAGS] service install",
            unit_path.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let text = std::fs::read_to_string(unit_path).with_context(|| format!("cannot read {}", unit_path.display()))?;
    let owner = if text.starts_with(MARKER) { "written by clawmcp" } else { "not written by clawmcp" };
    let exec = text.lines().find(|line| line.starts_with("ExecStart=")).unwrap_or("ExecStart= (none)");
    let mut report = format!("unit: {} ({owner})\n  {exec}", unit_path.display());
    for (what, verb) in [("active", "is-active"), ("enabled", "is-enabled")] {
        let answer = systemctl_answer(&[verb, UNIT]);
        report.push_str(&format!("\n  {what}: {answer}"));
    }
    report.push_str("\n  logs: journalctl --user -u clawmcp-node");
    output::data(&report);
    Ok(ExitCode::SUCCESS)
}

/// The node flags given on the command line or through their environment variables, as
/// `--flag=value` words, `--data-dir` first and always (resolved, absolute).
pub fn node_flags(node_matches: &ArgMatches, data: &DataDir) -> anyhow::Result<Vec<OsString>> {
    let mut command = Cli::command();
    command.build();
    let node = command.find_subcommand("node").expect("`clawmcp node` is defined");
    let mut flags = vec![OsString::from("--data-dir=")];
    flags[0].push(absolute(data.root())?);
    for arg in node.get_arguments() {
        let id = arg.get_id().as_str();
        let (Some(long), Some(source)) = (arg.get_long(), node_matches.value_source(id)) else { continue };
        if !matches!(source, ValueSource::CommandLine | ValueSource::EnvVariable) || id == "data_dir" {
            continue;
        }
        if let Some((_, instead)) = REFUSED.iter().find(|(refused, _)| *refused == id) {
            return Err(UsageError(format!("--{long} cannot be used with `service install`: {instead}")).into());
        }
        match arg.get_action() {
            ArgAction::SetTrue if node_matches.get_flag(id) => flags.push(format!("--{long}").into()),
            ArgAction::Count => {
                flags.extend((0..node_matches.get_count(id)).map(|_| OsString::from(format!("--{long}"))));
            }
            ArgAction::Set | ArgAction::Append => {
                let is_path =
                    matches!(arg.get_value_hint(), ValueHint::FilePath | ValueHint::DirPath | ValueHint::AnyPath);
                for value in node_matches.get_raw(id).into_iter().flatten() {
                    let value = match is_path {
                        // The service starts in another directory than this shell.
                        true => absolute(Path::new(value))?.into_os_string(),
                        false => value.to_owned(),
                    };
                    let mut word = OsString::from(format!("--{long}="));
                    word.push(value);
                    flags.push(word);
                }
            }
            _ => {}
        }
    }
    Ok(flags)
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot make {} absolute", path.display()))
}

/// The unit file that runs `argv`.
pub fn unit_file(argv: &[OsString]) -> anyhow::Result<String> {
    Ok(format!(
        "{MARKER} (clawmcp {VERSION}); `clawmcp node service uninstall` removes it.
[Unit]
Description=clawmcp node: this machine's capabilities as MCP tools and as an OpenClaw node
Documentation=https://github.com/clawmcp/clawmcp#run-as-a-service

[Service]
Type=exec
ExecStart={exec}
Restart=on-failure
RestartSec=2
# A usage error (exit status 2: a bad flag, an untrusted data directory) will not fix itself.
RestartPreventExitStatus=2
# The node logs to stderr: the journal (journalctl --user -u clawmcp-node).
StandardError=journal

[Install]
WantedBy=default.target
",
        exec = exec_start(argv)?
    ))
}

/// `argv` as one ExecStart line: each word quoted the way systemd unquotes it.
fn exec_start(argv: &[OsString]) -> anyhow::Result<String> {
    let words: Vec<String> = argv.iter().map(|word| systemd_word(word)).collect::<anyhow::Result<_>>()?;
    Ok(words.join(" "))
}

/// One ExecStart word: `%` (specifiers) and `$` (variable expansion) doubled so they stay
/// literal; a word with anything but plain characters double-quoted with `\` and `"` escaped.
/// A word systemd cannot carry (not UTF-8, a control character such as a newline) is refused.
fn systemd_word(word: &std::ffi::OsStr) -> anyhow::Result<String> {
    let text = word
        .to_str()
        .ok_or_else(|| UsageError(format!("{} is not UTF-8, which a unit file cannot hold", word.display())))?;
    if let Some(bad) = text.chars().find(|c| c.is_control()) {
        return Err(
            UsageError(format!("{text:?} holds the control character {bad:?}, which a unit file cannot hold")).into()
        );
    }
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    let escaped = text.replace('%', "%%").replace('$', "$$");
    Ok(match plain {
        true => escaped,
        false => format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\"")),
    })
}

/// A unit of our name that we did not write is the user's: never replaced or removed.
fn refuse_foreign(unit_path: &Path) -> anyhow::Result<()> {
    match std::fs::read_to_string(unit_path) {
        Ok(text) if !text.starts_with(MARKER) => anyhow::bail!(
            "{} exists and was not written by clawmcp; leaving it alone. Move it away (`mv {0} {0}.bak`) if \
             clawmcp should manage this service",
            unit_path.display()
        ),
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", unit_path.display())),
    }
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The commands that finish an install, for the user to run.
fn steps(enable: &[&str]) -> String {
    format!("  systemctl --user daemon-reload\n  systemctl --user {}", enable.join(" "))
}

/// Runs `systemctl --user ARGS`; the error is why it did not work (systemctl's own words).
fn systemctl(args: &[&str]) -> Result<(), String> {
    let output = Command::new("systemctl").arg("--user").args(args).output().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => "systemctl is not installed".to_owned(),
        _ => format!("cannot run systemctl: {error}"),
    })?;
    match output.status.success() {
        true => Ok(()),
        false => Err(first_line(&output.stderr).unwrap_or_else(|| format!("systemctl exited with {}", output.status))),
    }
}

/// What `systemctl --user is-active|is-enabled` prints (it exits non-zero for "inactive" too),
/// or why it could not say.
fn systemctl_answer(args: &[&str]) -> String {
    match Command::new("systemctl").arg("--user").args(args).output() {
        Ok(output) => first_line(&output.stdout)
            .or_else(|| first_line(&output.stderr).map(|why| format!("unknown ({why})")))
            .unwrap_or_else(|| "unknown".to_owned()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => "unknown (systemctl is not installed)".to_owned(),
        Err(error) => format!("unknown (cannot run systemctl: {error})"),
    }
}

fn first_line(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes).lines().map(str::trim).find(|line| !line.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_as_systemd_unquotes_them() {
        let word = |text: &str| systemd_word(std::ffi::OsStr::new(text)).unwrap();
        assert_eq!(word("/usr/bin/clawmcp"), "/usr/bin/clawmcp");
        assert_eq!(word("--port=9000"), "--port=9000");
        assert_eq!(word("--tools=system.which,device.*"), "\"--tools=system.which,device.*\"");
        assert_eq!(word("/home/a b/data"), "\"/home/a b/data\"");
        assert_eq!(word("100%"), "\"100%%\"");
        assert_eq!(word("$HOME"), "\"$$HOME\"");
        assert_eq!(word(r#"say "hi"\"#), r#""say \"hi\"\\""#);
        assert_eq!(word(""), "\"\"");
        assert!(systemd_word(std::ffi::OsStr::new("a\nb")).is_err());
    }
}
