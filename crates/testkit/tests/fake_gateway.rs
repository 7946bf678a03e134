//! The fake gateway's own contract, checked with raw sockets (no clawmcp client involved):
//! the real HTTP shapes of `/tools/invoke`, handshake refusals and close codes, the pre-auth
//! frame cap at its edge, per-connection `seq`, restart, and stop-on-drop.

use std::time::Duration;

use clawmcp_testkit::{FakeConfig, FakeGateway, ToolReply};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Sends a raw HTTP/1.1 request and returns (status, headers+body text).
async fn http(fake: &FakeGateway, method: &str, headers: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(fake.addr()).await.unwrap();
    let request = format!(
        "{method} /tools/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n{headers}\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    (status, response)
}

fn body_of(response: &str) -> Value {
    serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap()).unwrap()
}

#[tokio::test]
async fn tools_invoke_speaks_the_real_http_shapes() {
    let fake = FakeGateway::start().await;
    fake.on_tool("sessions_list", |call| ToolReply::ok(json!({"seen": call.body["args"]})));
    let auth = "Authorization: Bearer fake-gateway-token\r\n";

    let (status, response) = http(&fake, "GET", auth, "").await;
    assert_eq!(status, 405);
    assert!(response.contains("allow: POST") || response.contains("Allow: POST"), "{response}");

    let (status, response) = http(&fake, "POST", "", r#"{"tool":"sessions_list"}"#).await;
    assert_eq!((status, body_of(&response)), (401, json!({"error":{"message":"Unauthorized","type":"unauthorized"}})));

    let (status, response) = http(&fake, "POST", auth, r#"{"tool":"#).await;
    assert_eq!(status, 400);
    assert_eq!(body_of(&response)["error"]["type"], "invalid_request_error");

    let (status, response) = http(&fake, "POST", auth, r#"{"args":{}}"#).await;
    assert_eq!(
        (status, body_of(&response)),
        (400, json!({"ok":false,"error":{"type":"invalid_request","message":"tools.invoke requires name"}}))
    );

    let (status, response) = http(&fake, "POST", auth, r#"{"tool":"nope","args":{}}"#).await;
    assert_eq!(
        (status, body_of(&response)),
        (404, json!({"ok":false,"error":{"type":"not_found","message":"Tool not available: nope"}}))
    );

    let (status, response) =
        http(&fake, "POST", auth, r#"{"tool":"nope","name":"sessions_list","args":{"a":1}}"#).await;
    assert_eq!(
        (status, body_of(&response)),
        (200, json!({"ok":true,"result":{"seen":{"a":1}}})),
        "name wins over tool"
    );
    assert_eq!(fake.tool_calls().len(), 2, "only authenticated, well-formed calls are recorded");
}

async fn open(fake: &FakeGateway) -> (Socket, Value) {
    let (mut socket, _) = tokio_tungstenite::connect_async(fake.url()).await.unwrap();
    let challenge = next_json(&mut socket).await;
    assert_eq!(challenge["event"], "connect.challenge");
    (socket, challenge["payload"].clone())
}

async fn next_json(socket: &mut Socket) -> Value {
    loop {
        match socket.next().await.expect("socket open").expect("frame") {
            Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
            Message::Close(frame) => panic!("closed: {frame:?}"),
            _ => {}
        }
    }
}

async fn close_code(socket: &mut Socket) -> u16 {
    loop {
        match socket.next().await {
            Some(Ok(Message::Close(Some(frame)))) => return frame.code.into(),
            Some(Ok(_)) => {}
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

async fn hello(fake: &FakeGateway) -> Socket {
    let (mut socket, _) = open(fake).await;
    let connect = json!({"type":"req","id":"c","method":"connect","params":{"minProtocol":4,"maxProtocol":4,
        "client":{"id":"cli","mode":"cli","version":"1","platform":"linux"},"scopes":[],"auth":{"token":"fake-gateway-token"}}});
    socket.send(Message::text(connect.to_string())).await.unwrap();
    assert_eq!(next_json(&mut socket).await["payload"]["type"], "hello-ok");
    socket
}

#[tokio::test]
async fn the_first_request_must_be_connect() {
    let fake = FakeGateway::start().await;
    let (mut socket, _) = open(&fake).await;
    socket.send(Message::text(r#"{"type":"req","id":"h1","method":"health"}"#)).await.unwrap();
    let response = next_json(&mut socket).await;
    assert_eq!(response["id"], "h1");
    assert_eq!(response["error"]["message"], "invalid handshake: first request must be connect");
    assert_eq!(close_code(&mut socket).await, 1008);
}

#[tokio::test]
async fn pre_auth_frames_are_capped_at_64_kib() {
    let fake = FakeGateway::start().await;
    let frame_of = |len: usize| {
        let empty = r#"{"type":"req","id":"x","method":"health","params":""}"#;
        format!(r#"{{"type":"req","id":"x","method":"health","params":"{}"}}"#, "p".repeat(len - empty.len()))
    };
    let (mut socket, _) = open(&fake).await;
    socket.send(Message::text(frame_of(64 * 1024))).await.unwrap();
    assert!(
        next_json(&mut socket).await["error"]["message"].as_str().unwrap().contains("first request must be connect")
    );
    assert_eq!(close_code(&mut socket).await, 1008, "a frame of exactly 64 KiB is read");

    let (mut socket, _) = open(&fake).await;
    socket.send(Message::text(frame_of(64 * 1024 + 1))).await.unwrap();
    assert_eq!(close_code(&mut socket).await, 1009);
}

#[tokio::test(start_paused = true)]
async fn events_and_ticks_share_a_per_connection_seq() {
    let fake =
        FakeGateway::start_with(FakeConfig { tick_interval: Duration::from_secs(1), ..FakeConfig::default() }).await;
    let mut first = hello(&fake).await;
    let tick = next_json(&mut first).await;
    assert_eq!((tick["event"].as_str(), tick["seq"].as_u64()), (Some("tick"), Some(1)));
    fake.set_ticks(false);
    let mut second = hello(&fake).await;
    assert_eq!(fake.emit("session.message", json!({"k": 1})), 2);
    assert_eq!(next_json(&mut first).await["seq"], 2);
    let event = next_json(&mut second).await;
    assert_eq!((event["event"].as_str(), event["seq"].as_u64()), (Some("session.message"), Some(1)));
}

#[tokio::test]
async fn restart_closes_with_1012_and_keeps_accepting() {
    let fake = FakeGateway::start().await;
    let mut socket = hello(&fake).await;
    assert_eq!(fake.restart(), 1);
    assert_eq!(close_code(&mut socket).await, 1012);
    let _again = hello(&fake).await;
    assert_eq!(fake.handshakes(), 2);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_fake_ends_its_connections() {
    let fake = FakeGateway::start().await;
    let mut socket = hello(&fake).await;
    drop(fake);
    // A hang guard on the paused clock, not a timing assertion.
    let end = tokio::time::timeout(Duration::from_secs(3600), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Text(_) | Message::Ping(_) | Message::Pong(_))) => {}
                other => return other,
            }
        }
    })
    .await
    .expect("the connection outlived the fake");
    assert!(!matches!(end, Some(Ok(Message::Text(_)))));
}
