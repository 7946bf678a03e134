//! Duplex invokes over the gateway: a file command's channel (the same [`GatewayChannel`] frames
//! and message protocols as the loopback `openclaw/files/*` transport) carried by the gateway's
//! own frames, as the real node host does (docs/node-http.md §12, "Gateway transport"):
//!
//! - out: each wire frame is the `chunk` of a `node.invoke.progress {invokeId, nodeId, seq,
//!   chunk}` request; `seq` counts from 0 with no gaps per invoke, heartbeats included. At most
//!   [`SEND_GATE`] frames are in flight; the next batch waits until every response of the last
//!   one came (the response is the frame's acknowledgement; `ignored: true` means the gateway no
//!   longer waits for this invoke, which ends the transfer).
//! - heartbeats: an empty chunk after [`HEARTBEAT`] without output (the gateway fails a duplex
//!   invoke that sends nothing for 30 s with `IDLE_TIMEOUT`).
//! - in: each `node.invoke.input {id, nodeId, seq, payloadJSON}` event goes to
//!   [`GatewayChannel::input`] in arrival order, from the link's event loop (a violation ends that
//!   transfer only).
//! - the end: the command's result (`node.invoke.result`) is sent only after every frame it
//!   produced was acknowledged, so the gateway never sees a result before its last frame.
//!
//! Which invokes are duplex is [`crate::invoke::wants_duplex`]: the gateway does not mark them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clawmcp_node::files::channel::GatewayChannel;
use futures_util::future::join_all;
use serde_json::Value;
use tokio::time::Instant;

/// Progress frames in flight before waiting for their responses (the spec's gateway send gate).
pub const SEND_GATE: usize = 16;
/// Quiet time after which an empty progress chunk tells the gateway the invoke is alive (the real
/// node host's interval; the gateway's idle limit is 30 s).
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// Sends `channel`'s output through `send(seq, chunk)` (one `node.invoke.progress` each, its
/// response awaited) until the command finished and all it queued went out, or the channel
/// ended. A refused send ends the channel (the command sees it closed, with the reason).
pub async fn pump<F, Fut>(channel: &GatewayChannel, mut send: F)
where
    F: FnMut(u64, Arc<str>) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut seq = 0u64;
    let mut quiet_until = Instant::now() + HEARTBEAT;
    loop {
        tokio::select! {
            () = channel.output_ready() => {
                let output = channel.take_output(SEND_GATE);
                if !output.frames.is_empty() {
                    let first = seq;
                    seq += output.frames.len() as u64;
                    let sends: Vec<Fut> =
                        (first..).zip(output.frames).map(|(number, frame)| send(number, frame)).collect();
                    if let Some(Err(reason)) = join_all(sends).await.into_iter().find(Result::is_err) {
                        channel.end(&format!("the gateway did not take a progress frame: {reason}"));
                        return;
                    }
                    quiet_until = Instant::now() + HEARTBEAT;
                }
                if output.done {
                    return;
                }
            }
            () = tokio::time::sleep_until(quiet_until) => {
                if let Err(reason) = send(seq, Arc::from("")).await {
                    channel.end(&format!("the gateway did not take a heartbeat: {reason}"));
                    return;
                }
                seq += 1;
                quiet_until = Instant::now() + HEARTBEAT;
            }
        }
    }
}

/// What a `node.invoke.progress` response means for the transfer: `{ok:true}` took the frame;
/// `ignored: true` (the invoke timed out, was cancelled, or is unknown) or anything else ends it.
pub fn progress_taken(response: &Value) -> Result<(), String> {
    match (response.get("ok").and_then(Value::as_bool), response.get("ignored").and_then(Value::as_bool)) {
        (Some(true), None | Some(false)) => Ok(()),
        (Some(true), Some(true)) => Err("the gateway ignored it (the invoke is no longer pending there)".into()),
        _ => Err(format!("unexpected response {response}")),
    }
}

/// A `node.invoke.input` event's fields, or why it is unusable.
pub fn parse_input(payload: &Value) -> Result<(&str, u64, &str), &'static str> {
    let id = payload.get("id").and_then(Value::as_str).ok_or("no id")?;
    let seq = payload.get("seq").and_then(Value::as_u64).ok_or("no seq")?;
    let frame = payload.get("payloadJSON").and_then(Value::as_str).ok_or("no payloadJSON")?;
    Ok((id, seq, frame))
}

#[cfg(test)]
mod tests;
