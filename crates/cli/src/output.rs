//! The only place that writes to stdout and stderr directly. Data goes to stdout, everything
//! else (errors, notes) to stderr; logs go through `tracing` to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

/// Prints data (a result) to stdout. A closed stdout (`| head`) is not an error.
pub fn data(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Prints an error to stderr as `error: ...`.
pub fn error(text: &str) {
    eprintln!("error: {text}");
}

/// Prints a note for the human to stderr.
pub fn note(text: &str) {
    eprintln!("{text}");
}

/// Prints generated text (a completion script, a man page) to stdout as it is. A closed stdout
/// is not an error, as for [`data`].
pub fn raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// Prints what a running call says about itself (an MCP progress message) to stderr as
/// `progress: ...`, one line each.
pub fn progress(text: &str) {
    // One line per message whatever the node sent: a message is the node's, not ours to lay out.
    eprintln!("progress: {}", text.replace(['\n', '\r'], " "));
}
