//! The OpenClaw file channel (docs/node-http.md §12, "openclaw/file-channel"): moving a file's bytes over the
//! node's authenticated loopback HTTP listener, with no second port and no event stream.
//!
//! A client opens a channel (`openclaw/files/open`), gets an unpredictable lease, attaches it
//! once to the real `tools/call` (`params._meta["openclaw/file-channel"] = {v:1, lease}`, the
//! same JSON-RPC id and command as the open), and while that call runs moves wire frames
//! ([`frame`]) both ways: it polls the command's output (`openclaw/files/poll`, a cursor that
//! acknowledges what it consumed) and sends input (`openclaw/files/input`, numbered). The
//! command's side is a [`Duplex`]: logical messages in and out. `openclaw/files/close`, the
//! timeout, a protocol violation, a token rotation and the node's shutdown end a channel; the
//! command then sees [`ChannelClosed`] and stops (a `file.create` removes its temp file).
//!
//! Every limit is a constant here or in [`frame`], each from docs/node-http.md §12. Every violation is a
//! JSON-RPC error naming it, and closes that channel only.
//!
//! **Authentication generation.** The HTTP transport numbers the bearer token in force
//! (`clawmcp_http::token::LiveToken::admit`: the token and its number change together under one
//! lock) and each request carries the number of the token that admitted it, checked in the same
//! step. A channel belongs to the generation that opened it. How docs/node-http.md §12's "requests holding an
//! older snapshot cannot open or attach channels in the new generation, including requests
//! concurrent with rotation" holds: a channel is only ever reached by a request of its own
//! generation (open, attach, poll, input, close all compare), so a channel opened by a request
//! admitted before a rotation is unreachable for every request admitted after it; the first
//! request of a newer generation that reaches the table closes every older channel (freeing their
//! leases; the gateway's channels, which no HTTP request reaches, do not depend on the token and
//! stay) before it is served; and from then on an open of an older generation is refused. No
//! request of the new generation can ever see an old channel, and no old-generation request can
//! create one the new generation can use. What is not done: the rotation is noticed by the next
//! request (the token file's one `fstat` per request), so an old channel whose client is idle
//! lives until some request arrives or its timeout, unreachable meanwhile.

pub mod client;
pub mod frame;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clawmcp_mcp::jsonrpc::{IdKey, RequestId, id_key_of};
use clawmcp_mcp::server::decode_params;
use clawmcp_mcp::{ErrorCode, RequestFacts, RpcError};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use frame::{Outgoing, Reassembler};

/// The `_meta` key of the attach and the `experimental` capability's name.
pub const EXTENSION: &str = clawmcp_mcp::FILE_CHANNEL_EXTENSION;
/// The methods.
pub const OPEN: &str = "openclaw/files/open";
pub const POLL: &str = "openclaw/files/poll";
pub const INPUT: &str = "openclaw/files/input";
pub const CLOSE: &str = "openclaw/files/close";

/// Channels open at once (docs/node-http.md §12: "four leases/streaming handlers"); the fifth open is refused.
pub const MAX_LEASES: usize = 4;
/// Wire frames an output queue retains unacknowledged; the command waits beyond that until a
/// poll acknowledges some (docs/node-http.md §12: "Each output queue retains at most sixteen wire frames and
/// backpressures producers").
pub const OUTPUT_QUEUE_FRAMES: usize = 16;
/// Input buffered before the command listens: messages (an unfinished one counts) and bytes
/// (docs/node-http.md §12: "Pre-listener buffering caps at eight messages and 1 MiB including unfinished
/// messages").
pub const PRE_LISTENER_MESSAGES: usize = 8;
pub const PRE_LISTENER_BYTES: usize = 1024 * 1024;
/// Input delivered to a listening command but not yet taken (docs/node-http.md §12: "active asynchronous
/// delivery caps at eight messages and 2 MiB").
pub const ACTIVE_MESSAGES: usize = 8;
pub const ACTIVE_BYTES: usize = 2 * 1024 * 1024;
/// The longest a channel may live (docs/node-http.md §12: "Timeout (at most ten minutes)"); longer asked is
/// clamped. The default is the spec's example open (`timeoutMs: 60000`).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Random bytes in a lease (256 bits, from the OS random source, as the bearer token).
pub const LEASE_BYTES: usize = 32;
/// The commands that use a channel.
pub const COMMANDS: [&str; 2] = ["file.fetch", "file.create"];

/// What `initialize` advertises under `capabilities.experimental["openclaw/file-channel"]`.
pub fn capability() -> Value {
    json!({
        "v": 1,
        "commands": COMMANDS,
        "methods": [OPEN, POLL, INPUT, CLOSE],
        "maxLeases": MAX_LEASES,
        "fragmentBytes": frame::FRAGMENT_BYTES,
        "maxFrameBytes": frame::MAX_WIRE_FRAME_BYTES,
        "maxMessageBytes": frame::MAX_MESSAGE_BYTES,
        "outputQueueFrames": OUTPUT_QUEUE_FRAMES,
        "maxTimeoutMs": MAX_TIMEOUT.as_millis() as u64,
    })
}

/// `name` as one of [`COMMANDS`].
fn channel_command(name: &str) -> Option<&'static str> {
    COMMANDS.into_iter().find(|known| *known == name)
}

/// Whether a call of `command` with `args` moves its bytes over a channel, so a transport that
/// carries channels itself (the gateway link, which the gateway does not tell) must give it one:
/// `file.create`, and `file.fetch` asking for `transport: "binary"`; never a `preflightOnly` call.
pub fn streams(command: &str, args: &Map<String, Value>) -> bool {
    if super::flag(args, "preflightOnly") {
        return false;
    }
    match command {
        "file.create" => true,
        "file.fetch" => super::fetch::wants_binary(args).unwrap_or(false),
        _ => false,
    }
}

/// Why a channel ended, as the command sees it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the file channel closed: {0}")]
pub struct ChannelClosed(pub String);

/// The open channels of one node.
#[derive(Default)]
pub struct FileChannels {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    channels: Vec<Arc<Channel>>,
    /// The newest authentication generation a request brought here.
    generation: u64,
}

struct Channel {
    lease: String,
    /// Who drives the other end: a loopback HTTP client (`openclaw/files/*`) or the gateway link
    /// (`node.invoke.progress` / `node.invoke.input`). Neither can reach the other's channels.
    origin: Origin,
    command: &'static str,
    request_id: IdKey,
    generation: u64,
    /// Fires when the channel ends, for whatever reason (the reason is in `state.closed`).
    ended: CancellationToken,
    state: Mutex<State>,
    /// Wakes the command: output room, input arrived, or the end.
    wake: Notify,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Http,
    Gateway,
}

#[derive(Default)]
struct State {
    attached: bool,
    /// The command registered its listener (and sent ready).
    listening: bool,
    /// The command is done: no more output will come.
    finished: bool,
    closed: Option<String>,
    /// Output: frames retained from sequence `acked` on, the next sequence to give, the next
    /// logical message number.
    out: VecDeque<Outgoing>,
    /// Frames of the message being sent that the queue has no room for yet (at most one
    /// message's, which its producer holds encoded anyway): each poll moves them in as far as the
    /// room it releases allows, so its answer carries them at once instead of the next poll's.
    backlog: VecDeque<Outgoing>,
    acked: u64,
    next_out: u64,
    out_message: u64,
    /// Input: the next sequence expected, the previous input (for the idempotent retry), the
    /// frames reassembled, the messages waiting for the command.
    next_in: u64,
    previous_input: Option<InputFrame<String>>,
    reassembler: Reassembler,
    inbox: VecDeque<Vec<u8>>,
    inbox_bytes: usize,
}

impl State {
    /// Moves backlog frames into the output queue while it has room, numbering them.
    fn admit_backlog(&mut self) {
        while self.out.len() < OUTPUT_QUEUE_FRAMES
            && let Some(frame) = self.backlog.pop_front()
        {
            self.out.push_back(frame);
            self.next_out += 1;
        }
    }
}

/// An input frame as its transport carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputFrame<S> {
    /// The frame's JSON text (a gateway `node.invoke.input`, or a `payloadJSON` already decoded).
    Text(S),
    /// `payloadJSON` as an HTTP input's params hold it: a JSON string literal, escapes and all,
    /// read where it lies ([`frame::parse_literal`]).
    Literal(S),
}

impl<S: AsRef<str>> InputFrame<S> {
    fn parse(&self) -> Result<frame::Frame, frame::FrameError> {
        match self {
            InputFrame::Text(text) => frame::parse(text.as_ref()),
            InputFrame::Literal(literal) => frame::parse_literal(literal.as_ref()),
        }
    }

    /// Whether `other` is this same input again: the same text, however either was spelt.
    fn same_as<T: AsRef<str>>(&self, other: &InputFrame<T>) -> bool {
        // Equal as sent (a retry resends the same bytes), else compared as texts: one frame may be
        // spelt with escapes the other has not.
        self.as_str() == other.as_str() || self.text().is_some_and(|text| Some(text) == other.text())
    }

    fn as_str(&self) -> InputFrame<&str> {
        match self {
            InputFrame::Text(text) => InputFrame::Text(text.as_ref()),
            InputFrame::Literal(literal) => InputFrame::Literal(literal.as_ref()),
        }
    }

    /// The frame's text, `None` for a literal that is not a JSON string.
    fn text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self.as_str() {
            InputFrame::Text(text) => Some(text.into()),
            InputFrame::Literal(literal) => serde_json::from_str::<String>(literal).ok().map(Into::into),
        }
    }

    fn owned(&self) -> InputFrame<String> {
        match self.as_str() {
            InputFrame::Text(text) => InputFrame::Text(text.to_owned()),
            InputFrame::Literal(literal) => InputFrame::Literal(literal.to_owned()),
        }
    }
}

impl Channel {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Input frame `seq` (`payload`, its JSON text), from either transport: the identical
    /// previous input again is a no-op; anything out of order, after the command finished, not a
    /// valid frame or over the buffering caps is the violation described by the error (the
    /// caller closes the channel).
    fn accept_input(&self, seq: u64, payload: InputFrame<&str>) -> Result<(), String> {
        let mut state = self.state();
        if seq + 1 == state.next_in && state.previous_input.as_ref().is_some_and(|previous| previous.same_as(&payload))
        {
            // The client retried the input just accepted (its answer was lost): nothing new.
            return Ok(());
        }
        if seq != state.next_in {
            return Err(format!(
                "seq {seq} is out of order or changed (expected {}; only the identical previous input may be sent \
                 again)",
                state.next_in
            ));
        }
        if state.finished {
            return Err("the command has finished and reads no more input".to_owned());
        }
        let message = payload.parse().and_then(|frame| state.reassembler.push(frame)).map_err(|e| e.to_string())?;
        let completed_message = message.is_some();
        if let Some(message) = message {
            state.inbox_bytes += message.len();
            state.inbox.push_back(message);
        }
        let (max_messages, max_bytes, when) = match state.listening {
            false => (PRE_LISTENER_MESSAGES, PRE_LISTENER_BYTES, "before the command listens"),
            true => (ACTIVE_MESSAGES, ACTIVE_BYTES, "waiting for the command"),
        };
        let messages = state.inbox.len() + usize::from(state.reassembler.in_progress());
        let bytes = state.inbox_bytes + state.reassembler.partial_bytes();
        if messages > max_messages || bytes > max_bytes {
            return Err(format!(
                "{messages} messages ({bytes} bytes) would be buffered {when}, more than the channel holds (at most \
                 {max_messages} messages and {max_bytes} bytes): wait for the command's ack before sending more"
            ));
        }
        state.next_in = seq + 1;
        state.previous_input = Some(payload.owned());
        drop(state);
        // Only a whole message is news to the command (`recv` hands out messages): waking it for
        // each of a message's 128 fragments cost a task switch per input request.
        if completed_message {
            self.wake.notify_waiters();
        }
        Ok(())
    }

    /// Ends the channel (first reason wins) and wakes the command.
    fn end(&self, reason: &str) {
        let mut state = self.state();
        if state.closed.is_none() {
            state.closed = Some(reason.to_owned());
        }
        drop(state);
        self.ended.cancel();
        self.wake.notify_waiters();
    }

    fn closed(state: &State) -> Result<(), ChannelClosed> {
        match &state.closed {
            Some(reason) => Err(ChannelClosed(reason.clone())),
            None => Ok(()),
        }
    }
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::new(ErrorCode::InvalidParams, message)
}

fn refused(message: impl Into<String>) -> RpcError {
    RpcError::new(ErrorCode::InvalidRequest, message)
}

/// `openclaw/files/input`'s params as every client writes them: each key once, the lease with no
/// escape, `payloadJSON` kept as the string literal it is ([`FileChannels::input`] reads the frame
/// from it). Params it does not fit are decoded and checked key by key, which names the fault.
#[derive(Deserialize)]
struct InputParams<'a> {
    v: u64,
    lease: &'a str,
    seq: u64,
    #[serde(rename = "payloadJSON", borrow)]
    payload: &'a RawValue,
}

impl InputParams<'_> {
    /// What the careful path would accept as these params: `v` 1, a safe-integer `seq`, a string.
    fn is_plain(&self) -> bool {
        self.v == 1 && self.seq <= frame::MAX_SAFE_INTEGER && self.payload.get().starts_with('"')
    }
}

/// `params` as an object with `v: 1`.
fn versioned(params: Option<Value>, method: &str) -> Result<Map<String, Value>, RpcError> {
    let Some(Value::Object(params)) = params else {
        return Err(invalid(format!("{method} takes an object of params ({{v:1, ...}})")));
    };
    if params.get("v") != Some(&Value::from(1)) {
        return Err(invalid(format!("{method}: v must be 1 (the file channel's only version)")));
    }
    Ok(params)
}

fn lease_of<'a>(params: &'a Map<String, Value>, method: &str) -> Result<&'a str, RpcError> {
    params
        .get("lease")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{method}: lease (a string) is required")))
}

fn counter(params: &Map<String, Value>, key: &str, method: &str) -> Result<u64, RpcError> {
    params
        .get(key)
        .and_then(Value::as_u64)
        .filter(|n| *n <= frame::MAX_SAFE_INTEGER)
        .ok_or_else(|| invalid(format!("{method}: {key} must be an integer from 0 to {}", frame::MAX_SAFE_INTEGER)))
}

/// The generation a request brings, refused where the transport has none.
fn generation_of(auth_generation: Option<u64>) -> Result<u64, RpcError> {
    auth_generation
        .ok_or_else(|| refused("the file channel is served only on the node's authenticated loopback HTTP listener"))
}

const UNKNOWN_LEASE: &str = "no open file channel has this lease (it was closed, timed out, was ended by a token \
                             rotation, or never opened): open a new one with openclaw/files/open";

impl FileChannels {
    pub fn new() -> Arc<Self> {
        Arc::new(FileChannels::default())
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Channels open now.
    pub fn open_count(&self) -> usize {
        self.table().channels.len()
    }

    /// The table seen by a request of `generation`: a newer one ends every older channel first;
    /// an older one is refused (it holds a snapshot from before a rotation).
    fn observe(&self, generation: u64) -> Result<MutexGuard<'_, Table>, RpcError> {
        let mut table = self.table();
        if generation < table.generation {
            return Err(refused(
                "this request was authenticated with a bearer token that has since been replaced: retry with the \
                 current token",
            ));
        }
        if generation > table.generation {
            table.generation = generation;
            // The gateway's transfers do not depend on the MCP bearer token.
            table.channels.retain(|channel| {
                let http = channel.origin == Origin::Http;
                if http {
                    channel.end("the MCP bearer token was rotated");
                }
                !http
            });
        }
        Ok(table)
    }

    /// The channel holding `lease` in `generation` (compared in constant time against every
    /// open lease).
    fn find(&self, lease: &str, generation: u64) -> Result<Arc<Channel>, RpcError> {
        let table = self.observe(generation)?;
        let found = Self::by_lease(&table, lease);
        drop(table);
        let channel = found
            .filter(|channel| channel.origin == Origin::Http && channel.generation == generation)
            .ok_or_else(|| refused(UNKNOWN_LEASE))?;
        // Ended from the command's side (it found the client's messages wrong): say why, once,
        // and free the lease.
        let ended = channel.state().closed.clone();
        if let Some(reason) = ended {
            self.remove(&channel, &reason);
            return Err(refused(format!("the file channel is closed: {reason}")));
        }
        Ok(channel)
    }

    /// The channel holding `lease`, compared in constant time against every open lease.
    fn by_lease(table: &Table, lease: &str) -> Option<Arc<Channel>> {
        let mut found = None;
        for channel in &table.channels {
            if constant_time_eq::constant_time_eq(channel.lease.as_bytes(), lease.as_bytes()) {
                found = Some(channel.clone());
            }
        }
        found
    }

    /// Ends `channel` with `reason` and forgets its lease.
    fn remove(&self, channel: &Arc<Channel>, reason: &str) {
        channel.end(reason);
        self.table().channels.retain(|open| !Arc::ptr_eq(open, channel));
    }

    /// A violation: ends that channel only, and is the error to answer.
    fn violation(&self, channel: &Arc<Channel>, message: String) -> RpcError {
        self.remove(channel, &message);
        invalid(format!("{message}; the transfer is closed"))
    }

    /// Ends every channel (the node's shutdown).
    pub fn close_all(&self, reason: &str) {
        for channel in self.table().channels.drain(..) {
            channel.end(reason);
        }
    }

    /// `openclaw/files/open {v:1, command, requestId, timeoutMs?}` -> `{v:1, lease, timeoutMs}`.
    pub fn open(self: &Arc<Self>, params: Option<Value>, auth_generation: Option<u64>) -> Result<Value, RpcError> {
        let generation = generation_of(auth_generation)?;
        let params = versioned(params, OPEN)?;
        let command = params
            .get("command")
            .and_then(Value::as_str)
            .and_then(channel_command)
            .ok_or_else(|| invalid(format!("{OPEN}: command must be one of {}", COMMANDS.join(", "))))?;
        let request_id = params.get("requestId").and_then(id_key_of).ok_or_else(|| {
            invalid(format!(
                "{OPEN}: requestId must be the JSON-RPC id (a string or a number) of the tools/call it will attach to"
            ))
        })?;
        let timeout = match params.get("timeoutMs") {
            None => DEFAULT_TIMEOUT,
            Some(value) => match value.as_u64() {
                Some(ms) if ms > 0 => Duration::from_millis(ms).min(MAX_TIMEOUT),
                _ => {
                    return Err(invalid(format!(
                        "{OPEN}: timeoutMs must be a positive integer (at most {})",
                        MAX_TIMEOUT.as_millis()
                    )));
                }
            },
        };
        let table = self.observe(generation)?;
        let channel = self.create(table, Origin::Http, command, request_id, generation, timeout).map_err(refused)?;
        Ok(json!({"v": 1, "lease": channel.lease, "timeoutMs": timeout.as_millis() as u64}))
    }

    /// A new channel in `table` (under its lock, so the lease count holds), ended at `timeout`.
    fn create(
        self: &Arc<Self>,
        mut table: MutexGuard<'_, Table>,
        origin: Origin,
        command: &'static str,
        request_id: IdKey,
        generation: u64,
        timeout: Duration,
    ) -> Result<Arc<Channel>, String> {
        let mut bytes = [0u8; LEASE_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| format!("the OS random source failed: {error}"))?;
        if table.channels.len() >= MAX_LEASES {
            return Err(format!(
                "{MAX_LEASES} file channels are open already (loopback and gateway transfers together), the most \
                 this node serves at once: close one (openclaw/files/close) or wait for a transfer to finish"
            ));
        }
        let channel = Arc::new(Channel {
            lease: URL_SAFE_NO_PAD.encode(bytes),
            origin,
            command,
            request_id,
            generation,
            ended: CancellationToken::new(),
            state: Mutex::new(State::default()),
            wake: Notify::new(),
        });
        table.channels.push(channel.clone());
        drop(table);
        // The timeout: a client that stops polling loses the channel, and its command stops.
        let deadline = Instant::now() + timeout;
        tokio::spawn(expire(Arc::downgrade(self), channel.clone(), deadline, timeout));
        Ok(channel)
    }

    /// A channel for the gateway's duplex invoke `invoke_id` of `command`, which the command
    /// attaches as an HTTP call does (through [`GatewayChannel::meta`] and
    /// [`GatewayChannel::request`]) and the gateway link drives (see [`GatewayChannel`]).
    pub fn open_for_gateway(
        self: &Arc<Self>,
        command: &str,
        invoke_id: &str,
        timeout: Duration,
    ) -> Result<GatewayChannel, String> {
        let command = channel_command(command).ok_or_else(|| format!("{command} has no duplex transport"))?;
        let request_id = RequestId::string(invoke_id);
        let table = self.table();
        let generation = table.generation;
        let channel = self.create(table, Origin::Gateway, command, request_id.key().clone(), generation, timeout)?;
        Ok(GatewayChannel { channels: Arc::downgrade(self), channel, request_id })
    }

    /// `openclaw/files/poll {v:1, lease, ack}` -> `{v:1, frames:[{seq, payloadJSON}], completed}`.
    ///
    /// `ack` is the next sequence after what the client consumed: frames before it are released
    /// (and the command may produce more), frames from it on are answered again, so a lost poll
    /// retried with the same `ack` gets the same frames. `completed`: the command has finished
    /// and every frame it produced is in this answer.
    pub fn poll(&self, params: Option<Value>, auth_generation: Option<u64>) -> Result<Box<RawValue>, RpcError> {
        let generation = generation_of(auth_generation)?;
        let params = versioned(params, POLL)?;
        let channel = self.find(lease_of(&params, POLL)?, generation)?;
        let ack = counter(&params, "ack", POLL)?;
        let mut state = channel.state();
        if ack < state.acked || ack > state.next_out {
            let (acked, next) = (state.acked, state.next_out);
            drop(state);
            return Err(self.violation(
                &channel,
                format!(
                    "{POLL}: ack {ack} is outside the frames this channel holds ({acked} to {next}): ack is the next \
                     sequence after the frames consumed, never behind the previous ack"
                ),
            ));
        }
        let released = (ack - state.acked) as usize;
        state.out.drain(..released);
        state.acked = ack;
        state.admit_backlog();
        let frames: Vec<Arc<str>> = state.out.iter().map(|frame| frame.literal.clone()).collect();
        let completed = state.finished;
        drop(state);
        if released > 0 {
            channel.wake.notify_waiters();
        }
        // Written around each frame's ready-made literal: `{v:1, frames:[{seq, payloadJSON}], completed}`.
        let mut answer = String::with_capacity(48 + frames.iter().map(|literal| literal.len() + 40).sum::<usize>());
        answer.push_str(r#"{"v":1,"frames":["#);
        for (offset, literal) in frames.iter().enumerate() {
            let comma = if offset == 0 { "" } else { "," };
            answer.push_str(&format!(r#"{comma}{{"seq":{},"payloadJSON":{literal}}}"#, ack + offset as u64));
        }
        answer.push_str(&format!(r#"],"completed":{completed}}}"#));
        RawValue::from_string(answer).map_err(|_| RpcError::internal())
    }

    /// `openclaw/files/input {v:1, lease, seq, payloadJSON}` -> `{v:1, seq}`, from the request's
    /// params as JSON text: the frame is read from `payloadJSON` where it lies in them
    /// ([`InputParams`]), or, for params spelt any other way, from their decoded `Value`.
    pub fn input(&self, params: Option<&RawValue>, auth_generation: Option<u64>) -> Result<Value, RpcError> {
        let generation = generation_of(auth_generation)?;
        let plain = params.and_then(|raw| serde_json::from_str::<InputParams<'_>>(raw.get()).ok());
        if let Some(params) = plain.filter(InputParams::is_plain) {
            let channel = self.find(params.lease, generation)?;
            return self.accept(&channel, params.seq, InputFrame::Literal(params.payload.get()));
        }
        let params = versioned(decode_params(params)?, INPUT)?;
        let channel = self.find(lease_of(&params, INPUT)?, generation)?;
        let seq = counter(&params, "seq", INPUT)?;
        let Some(payload) = params.get("payloadJSON").and_then(Value::as_str) else {
            return Err(invalid(format!("{INPUT}: payloadJSON (a frame as a JSON string) is required")));
        };
        self.accept(&channel, seq, InputFrame::Text(payload))
    }

    fn accept(&self, channel: &Arc<Channel>, seq: u64, payload: InputFrame<&str>) -> Result<Value, RpcError> {
        match channel.accept_input(seq, payload) {
            Ok(()) => Ok(json!({"v": 1, "seq": seq})),
            Err(message) => Err(self.violation(channel, format!("{INPUT}: {message}"))),
        }
    }

    /// `openclaw/files/close {v:1, lease}` -> `{v:1, closed:true}`: the command is told and stops.
    pub fn close(&self, params: Option<Value>, auth_generation: Option<u64>) -> Result<Value, RpcError> {
        let generation = generation_of(auth_generation)?;
        let params = versioned(params, CLOSE)?;
        let channel = self.find(lease_of(&params, CLOSE)?, generation)?;
        self.remove(&channel, "the client closed it");
        Ok(json!({"v": 1, "closed": true}))
    }

    /// The channel a `tools/call` of `command` attaches through `meta["openclaw/file-channel"]`:
    /// `Ok(None)` when it names none; refused (and that channel closed) when the lease is unknown,
    /// of another generation, attached already, or opened for another request id or command.
    pub fn attach(
        &self,
        meta: Option<&Value>,
        request: Option<&RequestFacts>,
        command: &str,
    ) -> Result<Option<Duplex>, String> {
        let Some(attach) = meta.and_then(|meta| meta.get(EXTENSION)) else { return Ok(None) };
        let lease = match attach.as_object() {
            Some(object) if object.get("v") == Some(&Value::from(1)) => object.get("lease").and_then(Value::as_str),
            _ => None,
        }
        .ok_or_else(|| {
            format!("_meta[\"{EXTENSION}\"] must be {{v:1, lease}} with the lease openclaw/files/open gave")
        })?;
        let Some(request) = request else {
            return Err("a file channel attaches only to a tools/call request (one with an id)".into());
        };
        let channel = match request.auth_generation {
            Some(generation) => self.find(lease, generation).map_err(|error| error.message)?,
            // No HTTP generation: the gateway link's own call (see `open_for_gateway`), which
            // reaches only the gateway's channels; their leases never leave the process.
            None => Self::by_lease(&self.table(), lease)
                .filter(|channel| channel.origin == Origin::Gateway)
                .ok_or_else(|| UNKNOWN_LEASE.to_owned())?,
        };
        let mut state = channel.state();
        let mismatch = if state.attached {
            Some("the channel is attached already (a lease attaches to one tools/call, once)".to_owned())
        } else if &channel.request_id != request.id.key() {
            Some("the tools/call's JSON-RPC id is not the requestId the channel was opened for".to_owned())
        } else if channel.command != command {
            Some(format!("the channel was opened for {}, not {command}", channel.command))
        } else {
            None
        };
        if let Some(mismatch) = mismatch {
            drop(state);
            self.remove(&channel, &mismatch);
            return Err(format!("{mismatch}; that channel is closed"));
        }
        state.attached = true;
        drop(state);
        Ok(Some(Duplex { channel, cancel: CancellationToken::new() }))
    }
}

/// The gateway link's end of a channel opened by [`FileChannels::open_for_gateway`]: the command
/// attaches it like an HTTP call; the link sends what [`GatewayChannel::take_output`] gives as
/// `node.invoke.progress` chunks (wire frames, each acknowledged by the progress response, so
/// taking is consuming) and feeds each `node.invoke.input` frame to [`GatewayChannel::input`].
/// Dropping it ends the channel and frees its lease.
pub struct GatewayChannel {
    channels: Weak<FileChannels>,
    channel: Arc<Channel>,
    request_id: RequestId,
}

/// What [`GatewayChannel::take_output`] found.
#[derive(Debug, Default)]
pub struct GatewayOutput {
    /// Wire frames in order, each a progress chunk.
    pub frames: Vec<Arc<str>>,
    /// No more frames will come: the command finished (or the channel ended) and every frame it
    /// produced has been taken.
    pub done: bool,
}

impl GatewayChannel {
    /// The `_meta` that attaches this channel to the command's call.
    pub fn meta(&self) -> Value {
        json!({EXTENSION: {"v": 1, "lease": self.channel.lease}})
    }

    /// The call's request facts: the invoke id, and no HTTP authentication generation.
    pub fn request(&self) -> RequestFacts {
        RequestFacts { id: self.request_id.clone(), auth_generation: None }
    }

    /// Up to `max` wire frames the command queued, consumed (the caller sends them before taking
    /// more), and whether that was the last; room freed wakes the command.
    pub fn take_output(&self, max: usize) -> GatewayOutput {
        let mut state = self.channel.state();
        let taken = state.out.len().min(max);
        let frames: Vec<Arc<str>> = state.out.drain(..taken).map(|frame| frame.text).collect();
        state.acked += taken as u64;
        state.admit_backlog();
        let done = state.closed.is_some() || (state.finished && state.out.is_empty() && state.backlog.is_empty());
        drop(state);
        if taken > 0 {
            self.channel.wake.notify_waiters();
        }
        GatewayOutput { frames, done }
    }

    /// Waits until output is queued, the command finished, or the channel ended.
    pub async fn output_ready(&self) {
        loop {
            let woken = self.channel.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            {
                let state = self.channel.state();
                if !state.out.is_empty() || state.finished || state.closed.is_some() {
                    return;
                }
            }
            woken.await;
        }
    }

    /// Marks the command finished even if it never attached (it answered before ready, e.g. an
    /// existing target or bad params): the output then ends once what is queued is taken.
    pub fn command_finished(&self) {
        self.channel.state().finished = true;
        self.channel.wake.notify_waiters();
    }

    /// `node.invoke.input` frame `seq`: a violation ends the transfer (the command sees the
    /// channel closed, with the reason).
    pub fn input(&self, seq: u64, payload: &str) -> Result<(), String> {
        self.channel.accept_input(seq, InputFrame::Text(payload)).inspect_err(|message| self.end(message))
    }

    /// Ends the transfer (the gateway connection is gone, a progress was refused, a cancel).
    pub fn end(&self, reason: &str) {
        match self.channels.upgrade() {
            Some(channels) => channels.remove(&self.channel, reason),
            None => self.channel.end(reason),
        }
    }
}

impl Drop for GatewayChannel {
    fn drop(&mut self) {
        self.end("the gateway invoke ended");
    }
}

/// Ends `channel` at `deadline` unless it ended before.
async fn expire(table: Weak<FileChannels>, channel: Arc<Channel>, deadline: Instant, timeout: Duration) {
    tokio::select! {
        () = channel.ended.cancelled() => {}
        () = tokio::time::sleep_until(deadline) => {
            let reason = format!("its timeout of {} ms passed", timeout.as_millis());
            match table.upgrade() {
                Some(table) => table.remove(&channel, &reason),
                None => channel.end(&reason),
            }
        }
    }
}

/// A command's end of an attached channel: logical messages in and out. Dropping it marks the
/// command finished (polls then report `completed`).
pub struct Duplex {
    channel: Arc<Channel>,
    /// The call's own cancellation: every wait ends on it too.
    cancel: CancellationToken,
}

/// What a cancelled call's waits answer.
const CALL_CANCELLED: &str = "the tools/call was cancelled";

impl Duplex {
    /// Ends every wait of this end when `cancel` fires (the call's cancellation).
    pub fn cancelled_by(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Fires when the channel ends (closed, timed out, a violation, a rotation).
    pub fn ended(&self) -> &CancellationToken {
        &self.channel.ended
    }

    /// Registers the command's listener and sends the ready frame: input from now on is
    /// delivered under the active caps (docs/node-http.md §12: "Readiness is sent only after the worker
    /// registers its listener").
    pub async fn ready(&self) -> Result<(), ChannelClosed> {
        self.channel.state().listening = true;
        self.send_frames(std::iter::once(Outgoing::ready())).await
    }

    /// Sends one logical message (at most [`frame::MAX_MESSAGE_BYTES`]); returns once every
    /// frame of it is in the output queue, which polls drain as they acknowledge frames.
    pub async fn send(&self, message: &[u8]) -> Result<(), ChannelClosed> {
        debug_assert!(message.len() <= frame::MAX_MESSAGE_BYTES);
        let number = {
            let mut state = self.channel.state();
            Channel::closed(&state)?;
            state.out_message += 1;
            state.out_message - 1
        };
        self.send_frames(frame::outgoing_fragments(number, message)).await
    }

    /// Queues `frames` in order: as many as the queue has room for at once, the rest as polls
    /// release room; waits until the last is in. They are encoded a queue's worth at a time, each
    /// group queued before the next is encoded: a poll (served on another worker) takes the first
    /// frames of a 1 MiB message while the rest are encoded, instead of after all 128 are.
    async fn send_frames(&self, mut frames: impl Iterator<Item = Outgoing>) -> Result<(), ChannelClosed> {
        loop {
            let group: Vec<Outgoing> = frames.by_ref().take(OUTPUT_QUEUE_FRAMES).collect();
            if group.is_empty() {
                break;
            }
            {
                let mut state = self.channel.state();
                Channel::closed(&state)?;
                state.backlog.extend(group);
                state.admit_backlog();
            }
            // Output is news to a transport that waits for it (the gateway link's pump; an HTTP
            // client polls instead).
            self.channel.wake.notify_waiters();
        }
        loop {
            let woken = self.channel.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            {
                let state = self.channel.state();
                Channel::closed(&state)?;
                if state.backlog.is_empty() {
                    return Ok(());
                }
            }
            self.wait(woken).await?;
        }
    }

    /// The next logical message from the client.
    pub async fn recv(&self) -> Result<Vec<u8>, ChannelClosed> {
        loop {
            let woken = self.channel.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            {
                let mut state = self.channel.state();
                if let Some(message) = state.inbox.pop_front() {
                    state.inbox_bytes -= message.len();
                    return Ok(message);
                }
                Channel::closed(&state)?;
            }
            self.wait(woken).await?;
        }
    }

    async fn wait(&self, woken: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>) -> Result<(), ChannelClosed> {
        tokio::select! {
            () = woken => Ok(()),
            () = self.cancel.cancelled() => Err(ChannelClosed(CALL_CANCELLED.to_owned())),
        }
    }

    /// The next message, which must be UTF-8 (the protocols' start and ack messages).
    pub async fn recv_text(&self, what: &str) -> Result<String, ChannelClosed> {
        let message = self.recv().await?;
        String::from_utf8(message).map_err(|_| {
            let reason = format!("the {what} message is not UTF-8");
            self.channel.end(&reason);
            ChannelClosed(reason)
        })
    }

    /// Ends the channel from the command's side (a protocol breach it found).
    pub fn abort(&self, reason: &str) {
        self.channel.end(reason);
    }
}

impl Drop for Duplex {
    fn drop(&mut self) {
        self.channel.state().finished = true;
        self.channel.wake.notify_waiters();
    }
}
