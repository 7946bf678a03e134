//! The Wayland clipboard through wl-clipboard's programs (`wl-paste`, `wl-copy`), for a Wayland
//! session without Xwayland: the compositor hands the clipboard only to a client with a data
//! device (or the wlr data-control protocol), which these programs already speak.
//!
//! As on X11 the data lives in its source client, so a write keeps one `wl-copy --foreground`
//! running as the node's source until another program copies (it then exits by itself), the
//! next write replaces it, or the capability drops (`kill_on_drop`). Every other child lives
//! only for its call: bounded in time, killed and reaped on timeout and on cancel.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::selection::{self, Content, Found, MAX_COUNTED_BYTES, MAX_OFFERED, ReadLimits, Reading, Transfer, Want};

/// The stderr kept of a wl-clipboard program (its error message).
const MAX_STDERR_BYTES: u64 = 16 * 1024;

/// One Wayland session's clipboard.
pub struct Wayland {
    /// `WAYLAND_DISPLAY` for the programs (a name in `XDG_RUNTIME_DIR` or an absolute socket
    /// path); `None` inherits the node's.
    socket: Option<String>,
    /// The `wl-copy` serving what the node wrote last.
    source: Mutex<Option<Child>>,
}

/// What one wl-paste run printed.
struct Pasted {
    transfer: Transfer,
    success: bool,
    stderr: String,
}

impl Wayland {
    pub fn new(socket: Option<String>) -> Self {
        Wayland { socket, source: Mutex::new(None) }
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        if let Some(socket) = &self.socket {
            command.env("WAYLAND_DISPLAY", socket);
        }
        command.kill_on_drop(true);
        command
    }

    /// What the clipboard holds; every wl-paste run ends by `limits.timeout` from now.
    pub async fn read(&self, want: Want, limits: ReadLimits, cancel: &CancellationToken) -> Result<Reading, String> {
        let deadline = Instant::now() + limits.timeout;
        let Some(offered) = self.offered(deadline, cancel).await? else {
            return Ok(Reading { offered: None, found: Found::Empty });
        };
        for target in want.choose(&offered) {
            let args = ["--no-newline", "--type", target];
            let mut pasted = self.paste(&args, limits.cap(target), deadline, cancel).await?;
            if !pasted.success {
                // The source changed under us (another copy): that target is gone.
                if pasted.stderr.contains("No suitable type") {
                    continue;
                }
                return Err(format!("wl-paste failed: {}", pasted.stderr.trim()));
            }
            pasted.transfer.latin1 = selection::is_latin1(target);
            let found =
                if target == selection::IMAGE_PNG { Found::Png(pasted.transfer) } else { Found::Text(pasted.transfer) };
            return Ok(Reading { offered: Some(shown(offered)), found });
        }
        Ok(Reading { offered: Some(shown(offered)), found: Found::Nothing })
    }

    /// The types the clipboard offers, or `None` when it is empty.
    async fn offered(&self, deadline: Instant, cancel: &CancellationToken) -> Result<Option<Vec<String>>, String> {
        let pasted = self.paste(&["--list-types"], 64 * 1024, deadline, cancel).await?;
        if !pasted.success {
            // wl-paste 2.x says "No selection"; older ones "Nothing is copied".
            if pasted.stderr.contains("No selection") || pasted.stderr.contains("Nothing is copied") {
                return Ok(None);
            }
            return Err(format!("wl-paste --list-types failed: {}", pasted.stderr.trim()));
        }
        let text = String::from_utf8_lossy(&pasted.transfer.bytes);
        Ok(Some(text.lines().map(str::trim).filter(|line| !line.is_empty()).map(str::to_owned).collect()))
    }

    /// Runs `wl-paste args`, keeping `cap` bytes of its output and counting the rest.
    async fn paste(
        &self,
        args: &[&str],
        cap: usize,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Pasted, String> {
        let mut child = self
            .command("wl-paste")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot run wl-paste: {error}"))?;
        let (Some(mut stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            unreachable!("both are piped")
        };
        let work = async {
            let (mut err, mut stderr) = (Vec::new(), stderr.take(MAX_STDERR_BYTES));
            let (transfer, _) = tokio::join!(read_bounded(&mut stdout, cap), stderr.read_to_end(&mut err));
            let transfer = transfer.map_err(|error| format!("cannot read wl-paste's output: {error}"))?;
            // Counting stopped early: the rest is not wanted, so the program is stopped.
            if !transfer.exact {
                let _ = child.start_kill();
            }
            let status = child.wait().await.map_err(|error| format!("wl-paste: {error}"))?;
            let success = status.success() || !transfer.exact;
            Ok::<_, String>(Pasted { transfer, success, stderr: String::from_utf8_lossy(&err).into_owned() })
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let outcome = tokio::select! {
            () = cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.to_owned()),
            done = tokio::time::timeout(left, work) => done.unwrap_or_else(|_| Err(format!(
                "the program that owns the clipboard did not answer within {} s (wl-paste {}); it may be busy or \
                 hung. Copy something again, or close that program",
                left.as_secs_f32(),
                args.join(" ")
            ))),
        };
        if outcome.is_err() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        outcome
    }

    /// Makes `content` the clipboard's: a new `wl-copy` source replaces the node's previous one
    /// and is confirmed by the compositor listing its type, within `timeout`.
    pub async fn offer(&self, content: Content, timeout: Duration, cancel: &CancellationToken) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut source = self.source.lock().await;
        // The old source goes first, so what confirms the new one cannot be the old one's type.
        if let Some(mut old) = source.take() {
            let _ = old.start_kill();
            let _ = old.wait().await;
        }
        let (mime, bytes) = match content {
            Content::Text(text) => ("text/plain;charset=utf-8", text.into_bytes()),
            Content::Png(png) => (selection::IMAGE_PNG, png),
        };
        let mut child = self
            .command("wl-copy")
            .args(["--foreground", "--type", mime])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot run wl-copy: {error}"))?;
        let confirmed = async {
            let Some(mut stdin) = child.stdin.take() else { unreachable!("stdin is piped") };
            stdin.write_all(&bytes).await.map_err(|error| format!("cannot hand the data to wl-copy: {error}"))?;
            drop(stdin);
            loop {
                if let Some(status) = child.try_wait().map_err(|error| format!("wl-copy: {error}"))? {
                    let mut err = Vec::new();
                    if let Some(stderr) = child.stderr.take() {
                        let _ = stderr.take(MAX_STDERR_BYTES).read_to_end(&mut err).await;
                    }
                    return Err(format!("wl-copy exited ({status}): {}", String::from_utf8_lossy(&err).trim()));
                }
                if self.offered(deadline, cancel).await?.is_some_and(|types| types.iter().any(|t| t == mime)) {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let outcome = tokio::select! {
            () = cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.to_owned()),
            done = tokio::time::timeout(left, confirmed) => done.unwrap_or_else(|_| Err(format!(
                "the compositor did not list the new clipboard within {} s", timeout.as_secs_f32()
            ))),
        };
        match outcome {
            Ok(()) => {
                *source = Some(child);
                Ok(())
            }
            Err(error) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                Err(error)
            }
        }
    }

    /// The pid of the `wl-copy` serving the node's last write, to prove it is one.
    #[cfg(test)]
    pub async fn source_pid(&self) -> Option<u32> {
        self.source.lock().await.as_ref().and_then(Child::id)
    }
}

/// The offered types a person would recognise, at most [`MAX_OFFERED`].
fn shown(offered: Vec<String>) -> Vec<String> {
    offered.into_iter().filter(|target| selection::shown(target)).take(MAX_OFFERED).collect()
}

/// Reads `reader` to its end, keeping `cap` bytes and counting up to [`MAX_COUNTED_BYTES`].
async fn read_bounded(reader: &mut (impl AsyncRead + Unpin), cap: usize) -> std::io::Result<Transfer> {
    let (mut bytes, mut total) = (Vec::new(), 0u64);
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = reader.read(&mut buffer).await?;
        if read == 0 {
            return Ok(Transfer { bytes, total, exact: true, latin1: false });
        }
        total += read as u64;
        let room = cap.saturating_sub(bytes.len());
        bytes.extend_from_slice(&buffer[..read.min(room)]);
        if total > MAX_COUNTED_BYTES && bytes.len() >= cap {
            return Ok(Transfer { bytes, total, exact: false, latin1: false });
        }
    }
}
