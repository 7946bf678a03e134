//! The client's side of the file channel (docs/node-http.md §12): open a lease, attach it to the
//! `tools/call`, then poll the command's frames and send ours until the command completes.
//! `clawmcp call file.fetch --output-file` and `clawmcp call file.create --input-file` drive it,
//! and so do the channel's integration tests: one implementation of the client protocol.
//!
//! It does not own a connection: every request goes through [`ChannelRpc`], so the CLI's HTTP
//! client (with its token and endpoint rules) and a test's client both fit. The `tools/call`
//! itself is the caller's (it carries [`ChannelClient::attachment`] in its `_meta`), because the
//! caller decides how it is sent, shows its progress and cancels it; the caller runs it beside
//! [`ChannelClient::receive_file`] / [`ChannelClient::send_file`].

use std::future::Future;
use std::time::Duration;

use clawmcp_mcp::RequestId;
use serde_json::{Value, json};

use super::frame::{self, Frame, FrameError, Reassembler};
use super::{CLOSE, EXTENSION, INPUT, OPEN, POLL};

/// One JSON-RPC request on the node's connection.
pub trait ChannelRpc: Sync {
    /// Sends `method` with `params` under `id`: the result, or why there is none.
    fn request(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
    ) -> impl Future<Output = Result<Value, RpcFailure>> + Send;
}

/// A request that got no result: a JSON-RPC error (`code` set) or a transport failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RpcFailure {
    pub code: Option<i64>,
    pub message: String,
}

impl RpcFailure {
    /// The node does not serve the channel's methods (an older node, or not the node's HTTP
    /// service): the caller falls back to the unary command.
    pub fn is_method_not_found(&self) -> bool {
        self.code == Some(-32601)
    }
}

/// Why a transfer stopped.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("the file channel's {method} failed: {failure}")]
    Rpc { method: &'static str, failure: RpcFailure },
    #[error("the node sent a frame this client refuses: {0}")]
    Frame(#[from] FrameError),
    #[error("the command ended before {0}")]
    EndedEarly(&'static str),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Empty polls are paced from this up to [`MAX_POLL_PAUSE`], doubling: polls answer at once,
/// so a client that finds nothing waits a little instead of spinning on the node. A poll that
/// acknowledged frames is not paced even when it brought none: the command was waiting for that
/// room and is refilling its queue now (the next poll finds the frames, instead of sleeping
/// through every other round trip of a transfer).
const FIRST_POLL_PAUSE: Duration = Duration::from_millis(1);
const MAX_POLL_PAUSE: Duration = Duration::from_millis(25);

/// One open channel, from the client's side: its lease, the output cursor (`ack`), the input
/// sequence, and the messages put back together from the node's frames.
pub struct ChannelClient<'r, R: ChannelRpc> {
    rpc: &'r R,
    lease: String,
    /// Distinguishes this channel's own requests' ids from the call's and from another channel's.
    id_prefix: String,
    requests: u64,
    ack: u64,
    /// The `ack` the previous poll sent: a poll sending a later one releases frames.
    acked: u64,
    seq: u64,
    message: u64,
    reassembler: Reassembler,
    pending: std::collections::VecDeque<Vec<u8>>,
    ready: bool,
    completed: bool,
    pause: Duration,
}

impl<'r, R: ChannelRpc> ChannelClient<'r, R> {
    /// Opens a channel for `command` (`file.fetch` or `file.create`) that the `tools/call` with
    /// JSON-RPC id `request_id` will attach to.
    pub async fn open(rpc: &'r R, command: &str, request_id: &str, timeout: Duration) -> Result<Self, RpcFailure> {
        let id_prefix = format!("{request_id}/channel/");
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let params = json!({"v": 1, "command": command, "requestId": request_id, "timeoutMs": timeout_ms});
        let opened = rpc.request(RequestId::string(&format!("{id_prefix}open")), OPEN, params).await?;
        let lease = opened.get("lease").and_then(Value::as_str).ok_or_else(|| RpcFailure {
            code: None,
            message: format!("the node's answer to {OPEN} has no lease: {opened}"),
        })?;
        Ok(ChannelClient {
            rpc,
            lease: lease.to_owned(),
            id_prefix,
            requests: 0,
            ack: 0,
            acked: 0,
            seq: 0,
            message: 0,
            reassembler: Reassembler::default(),
            pending: Default::default(),
            ready: false,
            completed: false,
            pause: FIRST_POLL_PAUSE,
        })
    }

    /// What the `tools/call` carries to attach: `params._meta` gets this under its key.
    pub fn attachment(&self) -> (&'static str, Value) {
        (EXTENSION, json!({"v": 1, "lease": self.lease}))
    }

    pub fn lease(&self) -> &str {
        &self.lease
    }

    /// True once the command sent its ready frame (it listens for input).
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// True once the command finished and every frame it produced was polled.
    pub fn is_completed(&self) -> bool {
        self.completed
    }

    async fn request(&mut self, method: &'static str, params: Value) -> Result<Value, TransferError> {
        self.requests += 1;
        let id = RequestId::string(&format!("{}{}", self.id_prefix, self.requests));
        self.rpc.request(id, method, params).await.map_err(|failure| TransferError::Rpc { method, failure })
    }

    /// One poll: acknowledges the frames consumed so far, takes the next ones, and queues the
    /// messages they complete. Returns how many frames came.
    pub async fn poll(&mut self) -> Result<usize, TransferError> {
        let answer = self.request(POLL, json!({"v": 1, "lease": self.lease, "ack": self.ack})).await?;
        self.acked = self.ack;
        let frames = answer.get("frames").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for wire in frames {
            let payload = wire
                .get("payloadJSON")
                .and_then(Value::as_str)
                .ok_or_else(|| FrameError(format!("a polled frame has no payloadJSON string: {wire}")))?;
            if wire.get("seq").and_then(Value::as_u64) != Some(self.ack) {
                return Err(FrameError(format!("expected frame seq {}, got {wire}", self.ack)).into());
            }
            self.ack += 1;
            let parsed = frame::parse(payload)?;
            if parsed == Frame::Ready {
                self.ready = true;
            }
            if let Some(message) = self.reassembler.push(parsed)? {
                self.pending.push_back(message);
            }
        }
        self.completed = answer.get("completed").and_then(Value::as_bool) == Some(true);
        Ok(frames.len())
    }

    /// Polls, paced, until `done` holds or the command completed. Returns whether `done` holds.
    async fn poll_until(&mut self, done: impl Fn(&Self) -> bool) -> Result<bool, TransferError> {
        loop {
            if done(self) {
                return Ok(true);
            }
            if self.completed {
                return Ok(false);
            }
            let releases = self.ack > self.acked;
            if self.poll().await? > 0 || releases {
                self.pause = FIRST_POLL_PAUSE;
            } else if !done(self) && !self.completed {
                tokio::time::sleep(self.pause).await;
                self.pause = (self.pause * 2).min(MAX_POLL_PAUSE);
            }
        }
    }

    /// Waits for the ready frame; `false` when the command completed without one (it answered
    /// at once, e.g. `file.create`'s `exists` or a refused path: the call's result says).
    pub async fn until_ready(&mut self) -> Result<bool, TransferError> {
        self.poll_until(|channel| channel.ready).await
    }

    /// The next logical message, or `None` when the command completed without sending another.
    pub async fn next_message(&mut self) -> Result<Option<Vec<u8>>, TransferError> {
        self.poll_until(|channel| !channel.pending.is_empty()).await?;
        Ok(self.pending.pop_front())
    }

    /// Sends one logical message (an empty one is the create protocol's EOF).
    pub async fn send(&mut self, message: &[u8]) -> Result<(), TransferError> {
        for payload in frame::fragments(self.message, message) {
            let params = json!({"v": 1, "lease": self.lease, "seq": self.seq, "payloadJSON": payload});
            self.request(INPUT, params).await?;
            self.seq += 1;
        }
        self.message += 1;
        Ok(())
    }

    /// Ends the channel on the node (done, or given up: the command then stops).
    pub async fn close(mut self) -> Result<(), TransferError> {
        let lease = std::mem::take(&mut self.lease);
        self.request(CLOSE, json!({"v": 1, "lease": lease})).await.map(drop)
    }

    /// The fetch protocol: waits for ready, sends the start message, then hands each chunk to
    /// `sink` and acknowledges it, until the command completes. Returns the bytes received
    /// (`Ok(None)` when the command completed without ready: its result says why).
    pub async fn receive_file(
        &mut self,
        mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<Option<u64>, TransferError> {
        if !self.until_ready().await? {
            return Ok(None);
        }
        self.send(b"start").await?;
        let mut received = 0u64;
        while let Some(chunk) = self.next_message().await? {
            // Acknowledged as soon as it has arrived, before it is written: the node reads and
            // encodes the next chunk while this one goes to disk (a write that fails ends the
            // transfer all the same).
            self.send(b"ack").await?;
            sink(&chunk)?;
            received += chunk.len() as u64;
        }
        Ok(Some(received))
    }

    /// The create protocol: waits for ready, sends what `source` reads in messages of at most
    /// 1 MiB, each acknowledged before the next, then the empty EOF message. `on_sent` hears the
    /// bytes acknowledged so far. Returns the bytes sent (`Ok(None)` when the command completed
    /// without ready, as for an existing target).
    pub async fn send_file(
        &mut self,
        mut source: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
        mut on_sent: impl FnMut(u64),
    ) -> Result<Option<u64>, TransferError> {
        if !self.until_ready().await? {
            return Ok(None);
        }
        let mut buffer = vec![0u8; frame::MAX_MESSAGE_BYTES];
        let mut sent = 0u64;
        loop {
            let filled = fill(&mut source, &mut buffer)?;
            if filled == 0 {
                break;
            }
            self.send(&buffer[..filled]).await?;
            if self.next_message().await?.is_none() {
                return Err(TransferError::EndedEarly("acknowledging every chunk"));
            }
            sent += filled as u64;
            on_sent(sent);
        }
        self.send(b"").await?;
        Ok(Some(sent))
    }
}

/// Reads until `buffer` is full or the source ends (a short read is not the end).
fn fill(source: &mut impl FnMut(&mut [u8]) -> std::io::Result<usize>, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match source(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use tokio::time::Instant;

    use super::*;

    /// Answers each poll with the next scripted frames (by sequence range), recording its `ack`.
    struct Scripted {
        frames: Vec<String>,
        polls: Mutex<VecDeque<std::ops::Range<usize>>>,
        acks: Mutex<Vec<u64>>,
    }

    impl ChannelRpc for Scripted {
        async fn request(&self, _id: RequestId, method: &str, params: Value) -> Result<Value, RpcFailure> {
            if method == OPEN {
                return Ok(json!({"v": 1, "lease": "l", "timeoutMs": 1000}));
            }
            assert_eq!(method, POLL);
            self.acks.lock().unwrap().push(params["ack"].as_u64().unwrap());
            let range = self.polls.lock().unwrap().pop_front().expect("a scripted poll");
            let frames: Vec<Value> = range.map(|seq| json!({"seq": seq, "payloadJSON": self.frames[seq]})).collect();
            Ok(json!({"v": 1, "frames": frames, "completed": false}))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_poll_that_released_frames_is_not_paced_an_empty_one_that_released_none_is() {
        let message = vec![7u8; frame::FRAGMENT_BYTES * 20];
        // 16 frames, then the poll acknowledging them finds none yet (the command refills), the
        // next finds none either, then the rest.
        let rpc = Scripted {
            frames: frame::fragments(0, &message),
            polls: Mutex::new(VecDeque::from([0..16, 16..16, 16..16, 16..20])),
            acks: Mutex::default(),
        };
        let mut channel = ChannelClient::open(&rpc, "file.fetch", "call", Duration::from_secs(1)).await.unwrap();
        let started = Instant::now();
        assert_eq!(channel.next_message().await.unwrap(), Some(message));
        assert_eq!(*rpc.acks.lock().unwrap(), [0, 16, 16, 16]);
        // The paused clock only moves by the pauses slept: one, the first, after the poll that
        // released nothing and brought nothing.
        assert_eq!(started.elapsed(), FIRST_POLL_PAUSE);
    }

    #[tokio::test(start_paused = true)]
    async fn empty_polls_double_their_pause_up_to_the_cap() {
        let message = b"ack".to_vec();
        let mut polls = VecDeque::from(vec![0..0; 8]);
        polls.push_back(0..1);
        let rpc = Scripted { frames: frame::fragments(0, &message), polls: Mutex::new(polls), acks: Mutex::default() };
        let mut channel = ChannelClient::open(&rpc, "file.create", "call", Duration::from_secs(1)).await.unwrap();
        let started = Instant::now();
        assert_eq!(channel.next_message().await.unwrap(), Some(message));
        // 1, 2, 4, 8, 16, then 25 three times.
        assert_eq!(started.elapsed(), Duration::from_millis(1 + 2 + 4 + 8 + 16 + 25 * 3));
    }
}
