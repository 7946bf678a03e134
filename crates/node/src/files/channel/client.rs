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

use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::Answer;
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

    /// Sends `requests` (ids and params as JSON text this module wrote: a chunk's frames are
    /// escaped once, as they are made, and neither a serializer nor a parser goes over them again)
    /// of `method` in this order and returns their
    /// results in order, stopping at the first failure (the requests after it may or may not
    /// have been taken). This one waits for each answer before sending the next; a transport that
    /// keeps several in flight on one connection, taken in order, overrides it (the CLI pipelines
    /// a chunk's 128 inputs over HTTP/1.1).
    fn request_in_order<I>(
        &self,
        method: &'static str,
        requests: I,
    ) -> impl Future<Output = Result<Vec<Value>, RpcFailure>> + Send
    where
        I: Iterator<Item = (RequestId, String)> + Send,
    {
        async move {
            let mut results = Vec::new();
            for (id, params) in requests {
                results.push(self.request(id, method, params_value(&params)?).await?);
            }
            Ok(results)
        }
    }
}

/// Params made as JSON text, as a `Value` for [`ChannelRpc::request`].
pub fn params_value(params: &str) -> Result<Value, RpcFailure> {
    serde_json::from_str(params)
        .map_err(|error| RpcFailure { code: None, message: format!("request params are not JSON: {error}") })
}

/// A request that got no result: a JSON-RPC error (`code` set) or a transport failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RpcFailure {
    pub code: Option<i64>,
    pub message: String,
}

impl RpcFailure {
    /// What an MCP client's exchange gave, as a channel request's outcome: the result, the
    /// server's JSON-RPC error, or the transport's failure.
    pub fn outcome(exchange: Result<Answer, impl std::fmt::Display>) -> Result<Value, RpcFailure> {
        match exchange {
            Ok(Answer::Result(result)) => Ok(result),
            Ok(Answer::Error(error)) => Err(RpcFailure { code: Some(error.code), message: error.message }),
            Err(error) => Err(RpcFailure { code: None, message: error.to_string() }),
        }
    }

    /// [`Self::outcome`] of each answer of a burst, stopping at the first that failed.
    pub fn outcomes(exchange: Result<Vec<Answer>, impl std::fmt::Display>) -> Result<Vec<Value>, RpcFailure> {
        match exchange {
            Ok(answers) => answers.into_iter().map(|answer| Self::outcome(Ok::<_, String>(answer))).collect(),
            Err(error) => Err(RpcFailure { code: None, message: error.to_string() }),
        }
    }

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

/// Empty polls sent without a pause after each message this client sends: a poll is a loopback
/// round trip of some tens of microseconds, the node's next chunk is ready in a few hundred, and
/// the shortest pause the timer can sleep is a millisecond (fifty of them were a fifth of a 50 MiB
/// fetch).
const EAGER_POLLS: u32 = 8;

/// Chunks a create sends before waiting for the oldest one's ack: the node buffers at most 2 MiB
/// (a 1 MiB chunk it has not taken yet and the next) for a listening command.
const UNACKNOWLEDGED_CHUNKS: usize = 2;

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
    /// Frames polled (so acknowledged by the next poll) and not yet parsed: their payloads.
    unparsed: Vec<String>,
    pending: std::collections::VecDeque<Vec<u8>>,
    ready: bool,
    completed: bool,
    pause: Duration,
    /// Empty polls still sent without a pause: the command was just given what it waited for
    /// (the start or an ack) and is reading its next chunk.
    eager_polls: u32,
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
            unparsed: Vec::new(),
            pending: Default::default(),
            ready: false,
            completed: false,
            pause: FIRST_POLL_PAUSE,
            eager_polls: 0,
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
        let id = self.next_id();
        self.rpc.request(id, method, params).await.map_err(|failure| TransferError::Rpc { method, failure })
    }

    fn next_id(&mut self) -> RequestId {
        self.requests += 1;
        RequestId::string(&format!("{}{}", self.id_prefix, self.requests))
    }

    /// One poll: acknowledges the frames consumed so far, takes the next ones, and queues the
    /// messages they complete. Returns how many frames came.
    pub async fn poll(&mut self) -> Result<usize, TransferError> {
        let answer = self.poll_request().await;
        let came = self.take_polled(answer)?;
        self.parse_polled()?;
        Ok(came)
    }

    /// A poll acknowledging every frame taken so far (parsed or not: they are in memory), as a
    /// future that borrows only the connection, so the frames of the previous poll can be parsed
    /// while it is answered.
    fn poll_request(&mut self) -> impl Future<Output = Result<Value, TransferError>> + use<'r, R> {
        let (rpc, id) = (self.rpc, self.next_id());
        let params = json!({"v": 1, "lease": self.lease, "ack": self.ack});
        async move { rpc.request(id, POLL, params).await.map_err(|failure| TransferError::Rpc { method: POLL, failure }) }
    }

    /// Takes a poll's frames (checking their sequence) for [`Self::parse_polled`]; returns how many.
    fn take_polled(&mut self, answer: Result<Value, TransferError>) -> Result<usize, TransferError> {
        let mut answer = answer?;
        self.acked = self.ack;
        let frames = match answer.get_mut("frames") {
            Some(Value::Array(frames)) => std::mem::take(frames),
            _ => Vec::new(),
        };
        let came = frames.len();
        for mut wire in frames {
            if wire.get("seq").and_then(Value::as_u64) != Some(self.ack) {
                return Err(FrameError(format!("expected frame seq {}, got {wire}", self.ack)).into());
            }
            let Some(Value::String(payload)) = wire.get_mut("payloadJSON").map(Value::take) else {
                return Err(FrameError(format!("a polled frame has no payloadJSON string: {wire}")).into());
            };
            self.ack += 1;
            self.unparsed.push(payload);
        }
        self.completed = answer.get("completed").and_then(Value::as_bool) == Some(true);
        Ok(came)
    }

    /// Parses the frames taken, queueing the messages they complete.
    fn parse_polled(&mut self) -> Result<(), TransferError> {
        for payload in std::mem::take(&mut self.unparsed) {
            let parsed = frame::parse(&payload)?;
            if parsed == Frame::Ready {
                self.ready = true;
            }
            if let Some(message) = self.reassembler.push(parsed)? {
                self.pending.push_back(message);
            }
        }
        Ok(())
    }

    /// Polls, paced, until `done` holds or the command completed. Returns whether `done` holds.
    ///
    /// Each poll is made, acknowledging the frames of the one before, before those are parsed: a
    /// transport on a multi-threaded runtime sends it meanwhile; the CLI's single-threaded one
    /// writes it when this task next waits, after the parse. (Parsing on a blocking thread so the
    /// poll travels meanwhile, and writing a fetch's file from a thread of its own, were measured:
    /// on two cores the threads' scheduling cost more than the overlap gave.) An empty poll is
    /// followed by a pause unless it released frames (the command was waiting for that room and
    /// refills its queue now) or it is one of the [`EAGER_POLLS`] after an input the command
    /// waited for.
    async fn poll_until(&mut self, done: impl Fn(&Self) -> bool) -> Result<bool, TransferError> {
        loop {
            if done(self) {
                return Ok(true);
            }
            if self.completed {
                self.parse_polled()?;
                return Ok(done(self));
            }
            let releases = self.ack > self.acked;
            let had_frames = !self.unparsed.is_empty();
            let poll = self.poll_request();
            let (answer, parsed) = tokio::join!(poll, async { self.parse_polled() });
            parsed?;
            let came = self.take_polled(answer)?;
            if came > 0 || releases || had_frames {
                self.pause = FIRST_POLL_PAUSE;
            } else if self.eager_polls > 0 {
                self.eager_polls -= 1;
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
        // Each input is made as the transport takes it (a pipelining one writes the first while
        // the rest are still bytes).
        let count = message.len().div_ceil(frame::FRAGMENT_BYTES).max(1) as u64;
        let lease = Value::from(self.lease.as_str()).to_string();
        let (prefix, first_request, first_seq) = (&self.id_prefix, self.requests + 1, self.seq);
        let number = self.message;
        let inputs = frame::fragment_chunks(message).zip(0..).map(move |((index, last, chunk), offset)| {
            let seq = first_seq + offset;
            // The params in one buffer, the frame written straight into it as a JSON string.
            let mut params = String::with_capacity(lease.len() + 2 * frame::FRAGMENT_BYTES);
            let _ = write!(params, r#"{{"v":1,"lease":{lease},"seq":{seq},"payloadJSON":"#); // to a String: cannot fail
            frame::push_data_literal(&mut params, number, index, last, chunk);
            params.push('}');
            // Not parsed again on the way out (11 KB a request); every test run checks each one.
            debug_assert!(serde_json::from_str::<serde::de::IgnoredAny>(&params).is_ok(), "input params are JSON");
            (RequestId::string(&format!("{prefix}{}", first_request + offset)), params)
        });
        let sent = self.rpc.request_in_order(INPUT, inputs).await;
        self.requests += count;
        self.seq += count;
        sent.map_err(|failure| TransferError::Rpc { method: INPUT, failure })?;
        self.message += 1;
        // The command was waiting for this message (fetch's start and acks; a create chunk): it
        // answers within a fraction of a millisecond, which a paced poll would sleep through.
        self.eager_polls = EAGER_POLLS;
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
        mut sink: impl FnMut(Vec<u8>) -> std::io::Result<()>,
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
            received += chunk.len() as u64;
            sink(chunk)?;
        }
        Ok(Some(received))
    }

    /// The create protocol: waits for ready, sends what `source` reads in messages of at most
    /// 1 MiB, then the empty EOF message once every chunk is acknowledged. One chunk travels
    /// while the node acknowledges the one before (two unacknowledged chunks are at most the
    /// 2 MiB the node buffers for a listening command, docs/node-http.md §12), so neither side
    /// waits for the other's round trip. `on_sent` hears the bytes acknowledged so far. Returns
    /// the bytes sent (`Ok(None)` when the command completed without ready, as for an existing
    /// target).
    pub async fn send_file(
        &mut self,
        mut source: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
        mut on_sent: impl FnMut(u64),
    ) -> Result<Option<u64>, TransferError> {
        if !self.until_ready().await? {
            return Ok(None);
        }
        let mut buffer = vec![0u8; frame::MAX_MESSAGE_BYTES];
        let mut unacknowledged = std::collections::VecDeque::new();
        let mut acknowledged = 0u64;
        loop {
            let filled = fill(&mut source, &mut buffer)?;
            if filled > 0 {
                self.send(&buffer[..filled]).await?;
                unacknowledged.push_back(filled as u64);
            }
            // Wait for the oldest ack when two chunks are out, and for every ack at the end.
            while unacknowledged.len() >= UNACKNOWLEDGED_CHUNKS || (filled == 0 && !unacknowledged.is_empty()) {
                if self.next_message().await?.is_none() {
                    return Err(TransferError::EndedEarly("acknowledging every chunk"));
                }
                acknowledged += unacknowledged.pop_front().unwrap_or_default();
                on_sent(acknowledged);
            }
            if filled == 0 {
                break;
            }
        }
        self.send(b"").await?;
        Ok(Some(acknowledged))
    }
}

/// Reads until `buffer` is full or the source ends (a short read is not the end).
pub fn fill(source: &mut impl FnMut(&mut [u8]) -> std::io::Result<usize>, buffer: &mut [u8]) -> std::io::Result<usize> {
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

    /// Answers each poll with the next scripted frames (by sequence range), recording its `ack`;
    /// takes every input.
    struct Scripted {
        frames: Vec<String>,
        polls: Mutex<VecDeque<std::ops::Range<usize>>>,
        acks: Mutex<Vec<u64>>,
    }

    impl Scripted {
        fn new(frames: Vec<String>, polls: impl IntoIterator<Item = std::ops::Range<usize>>) -> Self {
            Scripted { frames, polls: Mutex::new(polls.into_iter().collect()), acks: Mutex::default() }
        }
    }

    impl ChannelRpc for Scripted {
        async fn request(&self, _id: RequestId, method: &str, params: Value) -> Result<Value, RpcFailure> {
            match method {
                OPEN => return Ok(json!({"v": 1, "lease": "l", "timeoutMs": 1000})),
                INPUT => return Ok(json!({"v": 1, "seq": params["seq"]})),
                _ => assert_eq!(method, POLL),
            }
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
        // next finds none either, then the rest; the poll sent while the last four are parsed
        // finds nothing.
        let rpc = Scripted::new(frame::fragments(0, &message), [0..16, 16..16, 16..16, 16..20, 20..20]);
        let mut channel = ChannelClient::open(&rpc, "file.fetch", "call", Duration::from_secs(1)).await.unwrap();
        let started = Instant::now();
        assert_eq!(channel.next_message().await.unwrap(), Some(message));
        assert_eq!(*rpc.acks.lock().unwrap(), [0, 16, 16, 16, 20]);
        // The paused clock only moves by the pauses slept: one, the first, after the poll that
        // released nothing and brought nothing.
        assert_eq!(started.elapsed(), FIRST_POLL_PAUSE);
    }

    #[tokio::test(start_paused = true)]
    async fn each_poll_acknowledges_the_frames_of_the_one_before_before_they_are_parsed() {
        let message = vec![9u8; frame::FRAGMENT_BYTES * 40];
        let rpc = Scripted::new(frame::fragments(0, &message), [0..16, 16..32, 32..40, 40..40]);
        let mut channel = ChannelClient::open(&rpc, "file.fetch", "call", Duration::from_secs(1)).await.unwrap();
        assert_eq!(channel.next_message().await.unwrap(), Some(message));
        // Every poll acknowledged the frames of the poll before it, before they were parsed: the
        // message completed only when the fourth poll was already out.
        assert_eq!(*rpc.acks.lock().unwrap(), [0, 16, 32, 40]);
        assert!(rpc.polls.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn empty_polls_double_their_pause_up_to_the_cap() {
        let message = b"ack".to_vec();
        let mut polls = VecDeque::from(vec![0..0; 8]);
        polls.extend([0..1, 1..1]);
        let rpc = Scripted::new(frame::fragments(0, &message), polls);
        let mut channel = ChannelClient::open(&rpc, "file.create", "call", Duration::from_secs(1)).await.unwrap();
        let started = Instant::now();
        assert_eq!(channel.next_message().await.unwrap(), Some(message));
        // 1, 2, 4, 8, 16, then 25 three times.
        assert_eq!(started.elapsed(), Duration::from_millis(1 + 2 + 4 + 8 + 16 + 25 * 3));
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_message_is_sent_the_first_empty_polls_are_not_paced() {
        let message = b"ack".to_vec();
        for (empty, paused) in
            [(EAGER_POLLS as usize, Duration::ZERO), (EAGER_POLLS as usize + 2, Duration::from_millis(1 + 2))]
        {
            let mut polls = VecDeque::from(vec![0..0; empty]);
            polls.extend([0..1, 1..1]);
            let rpc = Scripted::new(frame::fragments(0, &message), polls);
            let mut channel = ChannelClient::open(&rpc, "file.fetch", "call", Duration::from_secs(1)).await.unwrap();
            channel.send(b"start").await.unwrap();
            let started = Instant::now();
            assert_eq!(channel.next_message().await.unwrap(), Some(message.clone()));
            assert_eq!(started.elapsed(), paused, "{empty} empty polls");
        }
    }
}
