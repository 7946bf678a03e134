//! The opening handshake of one socket: WebSocket upgrade (no `Origin` header), wait for
//! `connect.challenge`, send `connect` (signing the device proof over the challenge), read
//! `hello-ok`. Each step is bounded; any failure is a [`GatewayError`] that says which step and,
//! for a refusal, carries the gateway's own error object.
//!
//! Frames that arrive before the one a step waits for are skipped, as are malformed ones: the
//! gateway may add pre-auth events, and one bad frame is not a reason to fail the connect.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tracing::{debug, warn};

use crate::client::ClientOptions;
use crate::error::GatewayError;
use crate::frames::{
    ConnectChallenge, ConnectParams, ErrorShape, Frame, HelloOk, PROTOCOL_VERSION, RequestFrame, random_id,
};
use crate::identity::DeviceAuthPayload;
use crate::tls_pin::pinned_client_config;

pub(crate) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A socket that completed the handshake.
pub(crate) struct Established {
    pub(crate) socket: Socket,
    pub(crate) hello: HelloOk,
}

/// Upgrade, challenge, `connect`, `hello-ok`.
pub(crate) async fn handshake(options: &ClientOptions) -> Result<Established, GatewayError> {
    let url = options.url.as_str();
    // `into_client_request` adds Host, Upgrade, Connection, Sec-WebSocket-Key/Version and
    // nothing else: no Origin, which would make the gateway treat us as a browser.
    let mut request = url
        .into_client_request()
        .map_err(|error| GatewayError::InvalidUrl { url: url.to_owned(), reason: error.to_string() })?;
    for header in &options.headers {
        header.append_to(request.headers_mut());
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(options.max_inbound_frame_bytes))
        .max_frame_size(Some(options.max_inbound_frame_bytes));
    let connector = match &options.tls_fingerprint {
        None => None,
        Some(_) if !url.starts_with("wss://") => {
            return Err(GatewayError::InvalidUrl {
                url: url.to_owned(),
                reason: "a TLS fingerprint pins a wss:// gateway; this URL is not wss://".to_owned(),
            });
        }
        Some(pin) => Some(tokio_tungstenite::Connector::Rustls(pinned_client_config(pin).map_err(|error| {
            GatewayError::Connect {
                url: url.to_owned(),
                source: Arc::new(tungstenite::Error::Tls(tungstenite::error::TlsError::Rustls(Box::new(error)))),
            }
        })?)),
    };
    // Nagle off: the protocol is small request/response frames, and latency is what matters.
    let upgrade = tokio_tungstenite::connect_async_tls_with_config(request, Some(config), true, connector);
    let (mut socket, _response) = tokio::time::timeout(options.handshake_timeout, upgrade)
        .await
        .map_err(|_| timed_out(url, "WebSocket upgrade", options.handshake_timeout))?
        .map_err(|error| match error {
            tungstenite::Error::Url(reason) => {
                GatewayError::InvalidUrl { url: url.to_owned(), reason: reason.to_string() }
            }
            other => GatewayError::Connect { url: url.to_owned(), source: Arc::new(other) },
        })?;

    let challenge = tokio::time::timeout(options.handshake_timeout, read_challenge(&mut socket, url))
        .await
        .map_err(|_| timed_out(url, "connect.challenge", options.handshake_timeout))??;

    let id = random_id();
    let params = serde_json::to_value(connect_params(options, &challenge))
        .map_err(|e| GatewayError::InvalidParams { method: "connect".to_owned(), reason: e.to_string() })?;
    let frame = Frame::Req(RequestFrame { id: id.clone(), method: "connect".to_owned(), params: Some(params) });
    socket
        .send(Message::text(frame.to_text()))
        .await
        .map_err(|error| GatewayError::Connect { url: url.to_owned(), source: Arc::new(error) })?;

    let payload = tokio::time::timeout(options.request_timeout, read_connect_response(&mut socket, url, &id))
        .await
        .map_err(|_| timed_out(url, "connect response", options.request_timeout))??;
    let hello = HelloOk::parse(payload).map_err(|reason| GatewayError::BadHandshake { url: url.to_owned(), reason })?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(GatewayError::ProtocolMismatch {
            url: url.to_owned(),
            server: hello.protocol,
            client: PROTOCOL_VERSION,
        });
    }
    debug!(%url, server = %hello.server.version, scopes = ?hello.auth.scopes, "gateway handshake complete");
    Ok(Established { socket, hello })
}

fn timed_out(url: &str, stage: &'static str, waited: Duration) -> GatewayError {
    GatewayError::HandshakeTimeout { url: url.to_owned(), stage, waited }
}

fn connect_params(options: &ClientOptions, challenge: &ConnectChallenge) -> ConnectParams {
    let device = options.device.as_ref().map(|identity| {
        identity.proof(&DeviceAuthPayload {
            device_id: identity.device_id(),
            client_id: &options.client.id,
            client_mode: &options.client.mode,
            role: options.role.as_str(),
            scopes: &options.scopes,
            signed_at_ms: challenge.ts,
            token: options.auth.signature_token(),
            nonce: &challenge.nonce,
            platform: Some(&options.client.platform),
            device_family: options.client.device_family.as_deref(),
        })
    });
    ConnectParams {
        min_protocol: PROTOCOL_VERSION,
        max_protocol: PROTOCOL_VERSION,
        client: options.client.clone(),
        caps: options.caps.clone(),
        commands: options.commands.clone(),
        path_env: options.path_env.clone(),
        role: options.role,
        scopes: options.scopes.clone(),
        device,
        auth: options.auth.clone(),
    }
}

/// Reads until `connect.challenge`; other frames before it are ignored.
async fn read_challenge(socket: &mut Socket, url: &str) -> Result<ConnectChallenge, GatewayError> {
    loop {
        if let Frame::Event(event) = next_handshake_frame(socket, url).await?
            && event.event == "connect.challenge"
        {
            let payload = event.payload.unwrap_or(Value::Null);
            return serde_json::from_value(payload).map_err(|e| GatewayError::BadHandshake {
                url: url.to_owned(),
                reason: format!("connect.challenge payload: {e}"),
            });
        }
    }
}

/// Reads until the response to the `connect` request `id`.
async fn read_connect_response(socket: &mut Socket, url: &str, id: &str) -> Result<Value, GatewayError> {
    loop {
        if let Frame::Res(response) = next_handshake_frame(socket, url).await?
            && response.id == id
        {
            if response.ok {
                return Ok(response.payload.unwrap_or(Value::Null));
            }
            let error = response
                .error
                .unwrap_or_else(|| ErrorShape::new("UNKNOWN", "the gateway refused connect without an error object"));
            return Err(GatewayError::ConnectRejected { url: url.to_owned(), error: Box::new(error) });
        }
    }
}

/// The next parseable text frame during the handshake; malformed ones are skipped.
async fn next_handshake_frame(socket: &mut Socket, url: &str) -> Result<Frame, GatewayError> {
    loop {
        match socket.next().await {
            None => {
                return Err(GatewayError::HandshakeClosed { url: url.to_owned(), code: None, reason: String::new() });
            }
            Some(Err(error)) => return Err(GatewayError::Connect { url: url.to_owned(), source: Arc::new(error) }),
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) =
                    frame.map_or((None, String::new()), |f| (Some(f.code.into()), f.reason.to_string()));
                return Err(GatewayError::HandshakeClosed { url: url.to_owned(), code, reason });
            }
            Some(Ok(Message::Text(text))) => match Frame::parse(text.as_str()) {
                Ok(frame) => return Ok(frame),
                Err(error) => warn!(%error, "skipping a malformed frame during the handshake"),
            },
            Some(Ok(_)) => {}
        }
    }
}
