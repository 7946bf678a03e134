//! Exit statuses, decided in one place: 0 success, 1 failure (tool error, transport error),
//! 2 usage error (bad flags or arguments; clap uses 2 for its own usage errors too).

use std::process::ExitCode;

/// A mistake in how the command was invoked: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Maps a command's outcome to the process exit status, printing the error chain.
pub fn report(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(error) => {
            let usage = error.downcast_ref::<UsageError>().is_some();
            crate::output::error(&format!("{error:#}"));
            if usage { ExitCode::from(2) } else { ExitCode::FAILURE }
        }
    }
}
