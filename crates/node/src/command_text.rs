//! The text a person reads for an argv, and the rule that a caller's `rawCommand` must describe
//! the argv that will actually run.
//!
//! `rawCommand` is display text: approval prompts and transcripts show it. If it could say one
//! thing while argv does another, a reviewer could be shown `ls` and approve `rm -rf ~`. So a
//! `rawCommand` is accepted only when it is one of the renderings of argv that real callers send
//! (compared exactly):
//!
//! 1. [`display_command`]: POSIX shell quoting, this node's own rendering (what
//!    `system.run.prepare` returns as `cmdText`), so the text pastes into a shell as the same argv.
//! 2. [`gateway_command`]: the OpenClaw gateway's `formatExecCommand`, which quotes only on
//!    whitespace, `"`, or an empty argument. The gateway rewrites `rawCommand` to this form
//!    before forwarding an approved run, so rejecting it would break gateway traffic.
//! 3. For a POSIX shell carrier (`sh -c SCRIPT`, `bash -lc SCRIPT`, ...), the script itself,
//!    trimmed: the gateway shows the script rather than the wrapper.
//!
//! Deviations from upstream, both stricter and both only where the display would mislead:
//! a carrier whose script is followed by positional arguments (`sh -c 'rm "$1"' x victim`) must
//! be described by the full argv, as the gateway itself requires; and the option scan stops at
//! the first operand, so in `bash evil.sh -c 'echo hi'` the `-c` belongs to `evil.sh` and `echo hi`
//! is not accepted as its description (upstream and the gateway scan past operands).

/// Shells whose `-c SCRIPT` form carries the command as text (the gateway's POSIX list).
const POSIX_SHELLS: &[&str] = &["ash", "bash", "dash", "fish", "ksh", "sh", "zsh"];

/// `argv` quoted for a POSIX shell: arguments without special characters stay bare, the rest
/// are quoted so `sh -c "<result>"` would run exactly `argv`.
pub fn display_command(argv: &[String]) -> String {
    // Quoting fails only on a NUL byte, which validation rejects (no argv can carry one).
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| gateway_command(argv))
}

/// The gateway's rendering: an argument is wrapped in `"` (inner `"` escaped as `\"`) when it is
/// empty or contains whitespace or `"`; nothing else is quoted or escaped.
pub fn gateway_command(argv: &[String]) -> String {
    let rendered: Vec<String> = argv
        .iter()
        .map(|arg| {
            if arg.is_empty() || arg.chars().any(|c| is_js_whitespace(c) || c == '"') {
                format!("\"{}\"", arg.replace('"', "\\\""))
            } else {
                arg.clone()
            }
        })
        .collect();
    rendered.join(" ")
}

/// JavaScript's `\s` (what the gateway's regex tests): Rust's `char::is_whitespace` less U+0085
/// and plus U+FEFF.
fn is_js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// The script of a POSIX shell carrier (`sh -c SCRIPT` with nothing after SCRIPT), if `argv` is
/// one.
fn shell_carrier_script(argv: &[String]) -> Option<&str> {
    let shell = argv.first()?.rsplit('/').next()?;
    if !POSIX_SHELLS.contains(&shell) {
        return None;
    }
    let mut index = 1;
    while let Some(token) = argv.get(index) {
        let is_option = token.len() > 1 && (token.starts_with('-') || token.starts_with('+'));
        if !is_option || token == "--" {
            return None; // an operand (a script file) or the end of options: no -c
        }
        if token.starts_with("--") {
            index += 1; // a long option such as bash's --norc
            continue;
        }
        if token == "-o" || token == "+o" {
            index += 2; // `-o pipefail`: the option name is the next token
            continue;
        }
        if token.starts_with('-') && token[1..].contains('c') {
            let script = argv.get(index + 1)?;
            return (index + 2 == argv.len()).then_some(script.as_str());
        }
        index += 1;
    }
    None
}

/// True when `raw` is an accepted description of `argv` (see the module doc).
pub fn raw_command_matches(raw: &str, argv: &[String]) -> bool {
    if argv.is_empty() {
        return false;
    }
    raw == display_command(argv)
        || raw == gateway_command(argv)
        || shell_carrier_script(argv).map(str::trim).is_some_and(|script| !script.is_empty() && raw == script)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn display_quoting_round_trips_through_a_shell_parser() {
        let original = argv(&["printf", "%s|", "a b", "it's", "", "$HOME", "semi;colon", "\"q\""]);
        let text = display_command(&original);
        assert_eq!(shlex::split(&text), Some(original));
        assert_eq!(display_command(&argv(&["ls", "-la", "/tmp"])), "ls -la /tmp");
    }

    #[test]
    fn gateway_quoting_quotes_only_whitespace_quotes_and_empties() {
        assert_eq!(
            gateway_command(&argv(&["echo", "a b", "", "say \"hi\"", "$x;y'z"])),
            r#"echo "a b" "" "say \"hi\"" $x;y'z"#
        );
        assert_eq!(gateway_command(&argv(&["/usr/bin/echo", "approved-run"])), "/usr/bin/echo approved-run");
        assert_eq!(gateway_command(&argv(&["a\u{feff}b", "c\u{85}d"])), "\"a\u{feff}b\" c\u{85}d");
    }

    #[test]
    fn both_renderings_are_accepted_and_other_text_is_not() {
        let command = argv(&["echo", "a b", "it's"]);
        assert!(raw_command_matches(&display_command(&command), &command));
        assert!(raw_command_matches(r#"echo "a b" it's"#, &command));
        assert!(!raw_command_matches("echo a b it's", &command));
        assert!(!raw_command_matches("ls", &command));
        assert!(!raw_command_matches(" echo \"a b\" it's", &command), "comparison is exact");
        assert!(!raw_command_matches("", &[]));
    }

    #[test]
    fn a_shell_carrier_may_be_described_by_its_script() {
        assert!(raw_command_matches("echo hi && ls", &argv(&["sh", "-c", "echo hi && ls"])));
        assert!(raw_command_matches("echo hi", &argv(&["/bin/bash", "-lc", "  echo hi\n"])));
        assert!(raw_command_matches("echo hi", &argv(&["bash", "--norc", "-o", "pipefail", "-e", "-c", "echo hi"])));
        assert!(raw_command_matches("bash -c \"echo hi\"", &argv(&["bash", "-c", "echo hi"])), "full form too");
    }

    #[test]
    fn a_carrier_script_does_not_describe_what_it_does_not_run() {
        // Positional arguments change what the script does: the full argv must be shown.
        assert!(!raw_command_matches("rm \"$1\"", &argv(&["sh", "-c", "rm \"$1\"", "x", "victim"])));
        // `-c` after an operand is the script file's argument, not the shell's.
        assert!(!raw_command_matches("echo hi", &argv(&["bash", "evil.sh", "-c", "echo hi"])));
        assert!(!raw_command_matches("echo hi", &argv(&["python3", "-c", "echo hi"])));
        assert!(!raw_command_matches("", &argv(&["sh", "-c", "  "])));
        assert!(!raw_command_matches("echo hi", &argv(&["sh", "--", "-c", "echo hi"])));
        assert!(!raw_command_matches("echo hi", &argv(&["sh", "-c"])));
    }
}
