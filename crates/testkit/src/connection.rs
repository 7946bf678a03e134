//! One fake-gateway WebSocket, from `connect.challenge` to close.
//!
//! Phase 1 (pre-auth): send the challenge, require `connect` as the first request (frames over
//! 64 KiB close with 1009, like the real gateway), run [`crate::handshake::admit`], answer
//! hello-ok or the refusal (then close with the refusal's code).
//!
//! Phase 2: requests go to the scripted handlers; events (from [`FakeGateway::emit`] and the
//! tick timer) carry a per-connection `seq` starting at 1; the test's fault controls arrive on
//! a channel. Delayed replies run in a `JoinSet` owned by this task, so they die with it.
//!
//! [`FakeGateway::emit`]: crate::FakeGateway::emit

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

use crate::gateway::{State, now_ms, random_hex};
use crate::handshake::{self, Admitted};
use crate::reply::{Reply, gateway_error};

/// `MAX_PREAUTH_PAYLOAD_BYTES`: the real gateway closes bigger pre-auth frames with 1009.
const MAX_PREAUTH_PAYLOAD: usize = 64 * 1024;

/// The WebSocket layer's own cap, above any `max_payload` a test sets, so that the fake (not
/// the library) decides about oversize frames and answers with a proper close code.
const SOCKET_FRAME_CAP: usize = 64 * 1024 * 1024;

/// A test's instruction to one connection.
#[derive(Debug)]
pub(crate) enum Control {
    Event { event: String, payload: Value },
    Raw(String),
    Close(u16, String),
    Drop,
}

/// What a [`Reply`] turns into on the wire.
enum Step {
    Send(String),
    /// Answer request `id` with the reply once the future resolves (a delay, a gate).
    Later(BoxFuture<'static, ()>, Value, Reply),
    Drop,
}

pub(crate) async fn run<S>(io: S, state: Arc<State>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let config =
        WebSocketConfig::default().max_message_size(Some(SOCKET_FRAME_CAP)).max_frame_size(Some(SOCKET_FRAME_CAP));
    let mut socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
    let conn = state.next_conn_id();
    let nonce = random_hex(16);
    if state.config.send_challenge {
        let challenge = json!({"type":"event","event":"connect.challenge",
                               "payload":{"nonce": nonce, "ts": now_ms(), "capabilities": []}});
        if socket.send(Message::text(challenge.to_string())).await.is_err() {
            return;
        }
    }
    let Some(admitted) = authenticate(&mut socket, &state, conn, &nonce).await else { return };
    let (control_tx, control) = mpsc::unbounded_channel();
    state.note_handshake(conn, control_tx);
    serve(&mut socket, &state, conn, control, &admitted).await;
    state.forget_connection(conn);
}

/// Phase 1. Returns `None` when the connection must end.
async fn authenticate<S>(socket: &mut WebSocketStream<S>, state: &State, conn: u64, nonce: &str) -> Option<Admitted>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        let text = match socket.next().await? {
            Ok(Message::Text(text)) => text,
            Ok(Message::Close(frame)) => {
                let (code, reason) = frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                state.record_client_close(conn, code, reason);
                return None;
            }
            Ok(_) => continue,
            Err(_) => return None,
        };
        state.record(conn, text.as_str());
        if text.len() > MAX_PREAUTH_PAYLOAD {
            close(socket, 1009, "payload too large").await;
            return None;
        }
        let frame: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
        let id = frame.get("id").cloned().unwrap_or(Value::Null);
        if frame["type"] != "req" || frame["method"] != "connect" {
            let error = gateway_error("INVALID_REQUEST", "invalid handshake: first request must be connect", None);
            refuse(socket, &id, error, 1008).await;
            return None;
        }
        state.note_connect_attempt();
        if let Some(error) = state.refusal() {
            refuse(socket, &id, error, 1008).await;
            return None;
        }
        let config = state.admission_config();
        match handshake::admit(
            &frame["params"],
            nonce,
            &config,
            now_ms(),
            |t| state.device_token_known(t),
            |t| state.spend_bootstrap(t),
        ) {
            Ok(admitted) => {
                let device_token = admitted.device_id.as_ref().map(|_| state.issue_device_token());
                let hello = handshake::hello_ok(&config, &admitted, conn, device_token.as_deref());
                let response = json!({"type":"res","id":id,"ok":true,"payload":hello});
                socket.send(Message::text(response.to_string())).await.ok()?;
                return Some(admitted);
            }
            Err(refusal) => {
                refuse(socket, &id, refusal.error, refusal.close_code).await;
                return None;
            }
        }
    }
}

async fn refuse<S>(socket: &mut WebSocketStream<S>, id: &Value, error: Value, code: u16)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let reason = error["message"].as_str().unwrap_or_default().to_owned();
    let response = json!({"type":"res","id":id,"ok":false,"error":error});
    let _ = socket.send(Message::text(response.to_string())).await;
    close(socket, code, &reason).await;
}

async fn close<S>(socket: &mut WebSocketStream<S>, code: u16, reason: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Close reasons are capped at 123 bytes by the protocol.
    let reason: String = reason.chars().take(120).collect();
    let _ = socket.close(Some(CloseFrame { code: code.into(), reason: reason.into() })).await;
}

/// Phase 2.
async fn serve<S>(
    socket: &mut WebSocketStream<S>,
    state: &State,
    conn: u64,
    mut control: mpsc::UnboundedReceiver<Control>,
    admitted: &Admitted,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let period = state.config.tick_interval.max(Duration::from_millis(1));
    let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
    let mut delayed: JoinSet<(Value, Reply)> = JoinSet::new();
    let mut seq = 0u64;
    loop {
        let steps = tokio::select! {
            inbound = socket.next() => match inbound {
                Some(Ok(Message::Text(text))) => {
                    state.record(conn, text.as_str());
                    if text.len() > state.config.max_payload {
                        close(socket, 1009, "payload too large").await;
                        return;
                    }
                    let frame: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
                    if frame["type"] != "req" {
                        continue;
                    }
                    let method = frame["method"].as_str().unwrap_or_default();
                    let params = frame.get("params").cloned().unwrap_or(Value::Null);
                    plan(frame["id"].clone(), state.reply_for(method, &params, &admitted.scopes))
                }
                Some(Ok(Message::Close(frame))) => {
                    let (code, reason) = frame.map_or((1005, String::new()), |f| (f.code.into(), f.reason.to_string()));
                    state.record_client_close(conn, code, reason);
                    // tungstenite queued the close reply; flush it so the client's close completes.
                    let _ = socket.flush().await;
                    return;
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return,
            },
            Some(instruction) = control.recv() => match instruction {
                Control::Event { event, payload } => {
                    seq += 1;
                    vec![Step::Send(json!({"type":"event","event":event,"payload":payload,"seq":seq}).to_string())]
                }
                Control::Raw(text) => vec![Step::Send(text)],
                Control::Close(code, reason) => {
                    close(socket, code, &reason).await;
                    return;
                }
                Control::Drop => return,
            },
            _ = ticker.tick() => {
                if !state.ticks.load(Ordering::SeqCst) {
                    continue;
                }
                seq += 1;
                vec![Step::Send(json!({"type":"event","event":"tick","payload":{"ts":now_ms()},"seq":seq}).to_string())]
            },
            Some(Ok((id, reply))) = delayed.join_next(), if !delayed.is_empty() => plan(id, reply),
        };
        for step in steps {
            match step {
                Step::Send(text) => {
                    if socket.send(Message::text(text)).await.is_err() {
                        return;
                    }
                }
                Step::Later(ready, id, reply) => {
                    delayed.spawn(async move {
                        ready.await;
                        (id, reply)
                    });
                }
                Step::Drop => return,
            }
        }
    }
}

/// The wire steps for answering request `id` with `reply`.
fn plan(id: Value, reply: Reply) -> Vec<Step> {
    let response = |ok: bool, key: &str, value: Value| {
        let mut frame = json!({"type":"res","id":id,"ok":ok});
        frame[key] = value;
        Step::Send(frame.to_string())
    };
    match reply {
        Reply::Ok(payload) => vec![response(true, "payload", payload)],
        Reply::Error(error) => vec![response(false, "error", error)],
        Reply::Stall => Vec::new(),
        Reply::DropConnection => vec![Step::Drop],
        Reply::Delay(after, inner) => vec![Step::Later(tokio::time::sleep(after).boxed(), id, *inner)],
        Reply::Held(gate, inner) => vec![Step::Later(gate.opened().boxed(), id, *inner)],
        Reply::AcceptedThen(inner) => {
            let mut steps = vec![response(true, "payload", json!({"status": "accepted"}))];
            steps.extend(plan(id, *inner));
            steps
        }
        Reply::Raw(text) => vec![Step::Send(text)],
    }
}
