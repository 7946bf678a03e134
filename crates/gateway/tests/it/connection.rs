//! Handshake and authentication: what the client sends, what it makes of hello-ok, and how
//! refusals surface (once, without a reconnect loop).

use std::sync::Arc;
use std::time::Duration;

use clawmcp_gateway::identity::DeviceAuthPayload;
use clawmcp_gateway::{ClientOptions, Credentials, DeviceIdentity, GatewayClient, GatewayError, GatewayEvent, Secret};
use clawmcp_testkit::{FakeAuth, FakeConfig, FakeGateway, gateway_error};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{TOKEN, next, operator, token_credentials, within};

#[tokio::test(start_paused = true)]
async fn device_less_handshake_sends_a_closed_cli_connect_without_origin() {
    let fake = FakeGateway::start().await;
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();

    let hello = client.hello().expect("connected");
    assert_eq!(hello.protocol, 4);
    assert_eq!(hello.server.version, "2026.9.6-fake");
    assert!(hello.advertises_method("sessions.list"));
    assert_eq!(hello.auth.scopes, ["operator.read", "operator.write"]);
    assert_eq!(hello.auth.method.as_deref(), Some("token"));
    assert_eq!(hello.policy.max_payload, 26_214_400);
    assert_eq!(hello.policy.tick_interval_ms, 30_000);
    assert!(hello.auth.device_token.is_none());

    let connect = fake.requests("connect").remove(0);
    let client_info = &connect["client"];
    assert_eq!(client_info["id"], "cli");
    assert_eq!(client_info["mode"], "cli");
    assert_eq!(client_info["platform"], std::env::consts::OS);
    assert_eq!(connect["minProtocol"], 4);
    assert_eq!(connect["maxProtocol"], 4);
    assert_eq!(connect["role"], "operator");
    assert_eq!(connect["scopes"], json!(["operator.read", "operator.write"]));
    assert_eq!(connect["auth"], json!({"token": TOKEN}));
    assert!(connect.get("device").is_none());
    assert!(connect.get("caps").is_none(), "empty caps are omitted");

    let upgrades = fake.upgrade_headers();
    assert_eq!(upgrades.len(), 1);
    assert!(upgrades[0].get("origin").is_none(), "an Origin header makes the gateway treat us as a browser");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn device_handshake_is_signed_and_verified() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let identity = Arc::new(DeviceIdentity::load_or_create(dir.path()).unwrap());
    let mut options = operator(&fake);
    options.device = Some(identity.clone());
    options.caps = vec!["approvals".to_owned()];

    let client = within(GatewayClient::connect(options)).await.unwrap();
    let hello = client.hello().unwrap();
    assert!(hello.auth.device_token.is_some(), "the fake issues a device token only after verifying the proof");

    let connect = fake.requests("connect").remove(0);
    assert_eq!(connect["device"]["id"], identity.device_id());
    assert_eq!(connect["device"]["publicKey"], identity.public_key());
    assert_eq!(connect["caps"], json!(["approvals"]));
    let challenge_nonce = connect["device"]["nonce"].as_str().unwrap();
    assert_eq!(challenge_nonce.len(), 32);
    client.close().await;
}

/// Guards the fake itself: a proof over different data must be refused, or the test above
/// would prove nothing.
#[tokio::test]
async fn the_fake_rejects_a_proof_that_does_not_match_the_params() {
    let fake = FakeGateway::start().await;
    let (mut socket, _) = tokio_tungstenite::connect_async(fake.url()).await.unwrap();
    let Some(Ok(Message::Text(text))) = socket.next().await else { panic!("no challenge") };
    let challenge: Value = serde_json::from_str(text.as_str()).unwrap();
    let nonce = challenge["payload"]["nonce"].as_str().unwrap();
    let ts = challenge["payload"]["ts"].as_u64().unwrap();

    let identity = DeviceIdentity::from_seed([3u8; 32]);
    let signed_scopes = vec!["operator.admin".to_owned()];
    let proof = identity.proof(&DeviceAuthPayload {
        device_id: identity.device_id(),
        client_id: "cli",
        client_mode: "cli",
        role: "operator",
        scopes: &signed_scopes,
        signed_at_ms: ts,
        token: TOKEN,
        nonce,
        platform: Some("linux"),
        device_family: None,
    });
    let connect = json!({"type":"req","id":"c1","method":"connect","params":{
        "minProtocol":4,"maxProtocol":4,
        "client":{"id":"cli","mode":"cli","version":"1","platform":"linux"},
        "role":"operator","scopes":["operator.read"],
        "device": serde_json::to_value(&proof).unwrap(),
        "auth":{"token":TOKEN}}});
    socket.send(Message::text(connect.to_string())).await.unwrap();
    let Some(Ok(Message::Text(text))) = socket.next().await else { panic!("no response") };
    let response: Value = serde_json::from_str(text.as_str()).unwrap();
    assert_eq!(response["ok"], false);
    assert_eq!(response["error"]["details"]["code"], "DEVICE_AUTH_SIGNATURE_INVALID");
}

#[tokio::test(start_paused = true)]
async fn missing_challenge_times_out_with_a_clear_error() {
    let fake = FakeGateway::start_with(FakeConfig { send_challenge: false, ..FakeConfig::default() }).await;
    let error = within(GatewayClient::connect(operator(&fake))).await.unwrap_err();
    assert!(
        matches!(error, GatewayError::HandshakeTimeout { stage: "connect.challenge", waited, .. } if waited == Duration::from_secs(15)),
        "{error}"
    );
    assert!(error.to_string().contains("connect.challenge"));
}

#[tokio::test(start_paused = true)]
async fn bad_token_surfaces_the_gateway_refusal_once() {
    let fake = FakeGateway::start().await;
    let options = ClientOptions::operator(fake.url(), &token_credentials("wrong"), &["operator.read"]);
    let error = within(GatewayClient::connect(options)).await.unwrap_err();

    assert_eq!(error.code(), Some("INVALID_REQUEST"));
    assert_eq!(error.detail_code(), Some("AUTH_TOKEN_MISMATCH"));
    assert!(error.to_string().contains("unauthorized: gateway token mismatch"), "{error}");
    assert!(error.is_terminal());
    tokio::time::sleep(Duration::from_secs(300)).await;
    assert_eq!(fake.connect_attempts(), 1, "a refused connect is not retried");
}

#[tokio::test(start_paused = true)]
async fn protocol_mismatch_is_terminal() {
    let fake = FakeGateway::start_with(FakeConfig { protocol: 5, ..FakeConfig::default() }).await;
    let error = within(GatewayClient::connect(operator(&fake))).await.unwrap_err();
    assert_eq!(error.detail_code(), Some("PROTOCOL_MISMATCH"));
    assert!(error.is_terminal());
}

#[tokio::test(start_paused = true)]
async fn password_auth_connects() {
    let fake =
        FakeGateway::start_with(FakeConfig { auth: FakeAuth::Password("pw-1".into()), ..FakeConfig::default() }).await;
    let credentials = Credentials { password: Some(Secret::new("pw-1")), ..Credentials::default() };
    let client = within(GatewayClient::connect(ClientOptions::operator(fake.url(), &credentials, &["operator.read"])))
        .await
        .unwrap();
    assert_eq!(client.hello().unwrap().auth.method.as_deref(), Some("password"));
    assert_eq!(fake.requests("connect")[0]["auth"], json!({"password": "pw-1"}));
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn refusal_on_reconnect_stops_the_client_and_ends_the_event_stream() {
    let fake = FakeGateway::start().await;
    let client = within(GatewayClient::connect(operator(&fake))).await.unwrap();
    let mut events = client.subscribe();

    let pairing = gateway_error(
        "NOT_PAIRED",
        "pairing required: device is not paired",
        Some(json!({"code": "PAIRING_REQUIRED", "reason": "not-paired", "requestId": "r1"})),
    );
    fake.refuse_auth(Some(pairing));
    fake.restart();

    assert!(matches!(next(&mut events).await, GatewayEvent::Disconnected { .. }));
    assert!(within(events.recv()).await.is_none(), "the stream ends when the client stops");
    let reason = client.stop_reason().expect("stopped");
    assert!(matches!(reason, GatewayError::Stopped(_)));
    assert_eq!(reason.detail_code(), Some("PAIRING_REQUIRED"));

    let error = client.request("health", ()).await.unwrap_err();
    assert_eq!(error.detail_code(), Some("PAIRING_REQUIRED"));
    assert!(error.to_string().contains("pairing required"), "{error}");
    tokio::time::sleep(Duration::from_secs(300)).await;
    assert_eq!(fake.connect_attempts(), 2, "no reconnect loop after a terminal refusal");
}

#[tokio::test(start_paused = true)]
async fn node_connect_proves_its_device_and_claims_its_commands() {
    let fake = FakeGateway::start().await;
    let identity = Arc::new(DeviceIdentity::from_seed([9u8; 32]));
    let mut options = ClientOptions::node(fake.url(), &token_credentials(TOKEN), identity.clone());
    options.commands = Some(vec!["system.which".to_owned()]);
    let client = within(GatewayClient::connect(options)).await.unwrap();
    assert_eq!(client.hello().unwrap().auth.role.as_deref(), Some("node"));

    let connect = fake.requests("connect").remove(0);
    assert_eq!(connect["role"], "node");
    assert_eq!(connect["scopes"], json!([]), "nodes send an empty scope list, and sign it");
    assert_eq!(
        (connect["client"]["id"].as_str(), connect["client"]["mode"].as_str()),
        (Some("node-host"), Some("node"))
    );
    assert_eq!(connect["device"]["id"], identity.device_id());
    assert_eq!(connect["commands"], json!(["system.which"]));
    client.close().await;

    let mut deviceless = ClientOptions::node(fake.url(), &token_credentials(TOKEN), identity);
    deviceless.device = None;
    let error = within(GatewayClient::connect(deviceless)).await.unwrap_err();
    assert_eq!((error.code(), error.detail_code()), (Some("NOT_PAIRED"), Some("DEVICE_IDENTITY_REQUIRED")));
}
