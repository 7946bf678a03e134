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

/// The bar of a file moving over the node's file channel, on stderr: bytes, rate and ETA (a
/// spinner with bytes and rate when the size is unknown). Hidden when stderr is not a terminal,
/// so scripts and logs see only the result and the notes.
pub fn transfer_bar(verb: &str, total: Option<u64>) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let template = match total {
        Some(_) => format!("{verb} {{bar:30}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}} ETA {{eta}}"),
        None => format!("{verb} {{spinner}} {{bytes}} {{bytes_per_sec}}"),
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}
