//! A node's connection: started in the background, kept through refusals an operator resolves,
//! and back in after a shared-token rotation with the device token the gateway issued.

use std::sync::Arc;

use clawmcp_gateway::{ClientOptions, DeviceIdentity, DeviceTokenStore, GatewayClient, LinkStatus, Role};
use clawmcp_testkit::{FakeGateway, gateway_error};
use serde_json::json;

use crate::support::{TOKEN, token_credentials, within};

fn node_options(fake: &FakeGateway, dir: &std::path::Path) -> ClientOptions {
    let identity = Arc::new(DeviceIdentity::load_or_create(dir).unwrap());
    let mut options = ClientOptions::node(fake.url(), &token_credentials(TOKEN), identity);
    options.persistent = true;
    options.device_tokens = Some(Arc::new(DeviceTokenStore::new(dir, &fake.url(), Role::Node)));
    options
}

/// Waits (bounded) until `done` holds, re-checking at every status change.
async fn until(client: &GatewayClient, done: impl Fn() -> bool) {
    let mut watch = client.watch_status();
    within(async {
        while !done() {
            if !watch.changed().await {
                // The client is gone; state is final, and `done` gets a last look.
                assert!(done(), "the client stopped first");
                return;
            }
        }
    })
    .await;
}

async fn until_connected(client: &GatewayClient) {
    until(client, || client.is_connected()).await;
}

#[tokio::test(start_paused = true)]
async fn a_background_start_waits_for_a_gateway_that_is_not_up_yet() {
    let fake = FakeGateway::start().await;
    fake.set_accepting(false);
    let dir = tempfile::tempdir().unwrap();
    let client = GatewayClient::start(node_options(&fake, dir.path()));
    // The refused upgrade is an error of the first attempt; the client keeps trying.
    until(&client, || matches!(client.status(), LinkStatus::Connecting { error: Some(_), .. })).await;
    fake.set_accepting(true);
    until_connected(&client).await;
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn pairing_required_is_retried_and_reported_with_the_request_id() {
    let fake = FakeGateway::start().await;
    let refusal = gateway_error(
        "NOT_PAIRED",
        "pairing required: device is not approved yet",
        Some(json!({"code":"PAIRING_REQUIRED","reason":"not-paired","requestId":"req-42"})),
    );
    fake.refuse_auth(Some(refusal));
    let dir = tempfile::tempdir().unwrap();
    let client = GatewayClient::start(node_options(&fake, dir.path()));
    until(&client, || matches!(client.status(), LinkStatus::Connecting { error: Some(_), .. })).await;
    let LinkStatus::Connecting { error: Some(error), .. } = client.status() else { unreachable!() };
    assert_eq!(error.detail_code(), Some("PAIRING_REQUIRED"));
    assert_eq!(error.error_shape().unwrap().details.as_ref().unwrap()["requestId"], "req-42");
    // Still trying: a second attempt arrives, and approval lets the next one in.
    until(&client, || fake.connect_attempts() >= 2).await;
    fake.refuse_auth(None);
    until_connected(&client).await;
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_rotated_shared_token_is_survived_with_the_saved_device_token() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let client = within(GatewayClient::connect(node_options(&fake, dir.path()))).await.unwrap();
    let issued = client.hello().unwrap().auth.device_token.clone().expect("the fake issues a device token");
    let store = DeviceTokenStore::new(dir.path(), &fake.url(), Role::Node);
    assert_eq!(store.load().unwrap(), issued, "the issued device token is saved");

    assert_eq!(fake.rotate_token("a-new-shared-token"), 1);
    until(&client, || fake.handshakes() >= 2 && client.is_connected()).await;
    assert_eq!(client.hello().unwrap().auth.method.as_deref(), Some("device-token"));
    let connects = fake.requests("connect");
    let retry = connects.last().unwrap();
    assert_eq!(retry["auth"]["token"], TOKEN, "the stale token is still sent, as the real node host does");
    assert_eq!(retry["auth"]["deviceToken"], issued.expose());
    assert_eq!(connects.len(), 3, "first connect, the refused stale one, the device-token retry");
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_non_persistent_client_still_stops_on_a_refusal() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = node_options(&fake, dir.path());
    options.persistent = false;
    let client = within(GatewayClient::connect(options)).await.unwrap();
    fake.refuse_auth(Some(gateway_error("NOT_PAIRED", "pairing required", None)));
    fake.restart();
    until(&client, || matches!(client.status(), LinkStatus::Stopped(_))).await;
}

#[tokio::test(start_paused = true)]
async fn extra_upgrade_headers_reach_the_gateway_on_every_connect() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = node_options(&fake, dir.path());
    options.headers = vec![
        clawmcp_gateway::UpgradeHeader::parse("CF-Access-Client-Id: abc.access").unwrap(),
        clawmcp_gateway::UpgradeHeader::parse("X-Proxy-Token:  s3cret ").unwrap(),
    ];
    assert_eq!(format!("{:?}", options.headers[1]), "UpgradeHeader(x-proxy-token: ***)", "the value never shows");
    let client = within(GatewayClient::connect(options)).await.unwrap();
    fake.restart();
    until(&client, || fake.handshakes() >= 2 && client.is_connected()).await;
    for headers in fake.upgrade_headers() {
        assert_eq!(headers.get("cf-access-client-id").unwrap(), "abc.access");
        assert_eq!(headers.get("x-proxy-token").unwrap(), "s3cret");
        assert!(headers.get("origin").is_none());
    }
    client.close().await;
}

#[test]
fn upgrade_headers_the_handshake_owns_or_malformed_ones_are_refused_with_the_reason() {
    use clawmcp_gateway::UpgradeHeader;
    for owned in ["Origin: https://x", "host: h", "Sec-WebSocket-Key: k", "Upgrade: h2c", "connection: close"] {
        let error = UpgradeHeader::parse(owned).unwrap_err();
        assert!(error.contains("the WebSocket handshake owns it"), "{owned}: {error}");
    }
    assert!(UpgradeHeader::parse("no colon here").unwrap_err().contains("'Name: value'"));
    assert!(UpgradeHeader::parse("bad name: v").unwrap_err().contains("not a valid header name"));
    assert!(UpgradeHeader::parse("X-A: line\nbreak").unwrap_err().contains("cannot carry"));
    let long = format!("{}: v", "n".repeat(100));
    assert!(UpgradeHeader::parse(&long).is_ok());
    let secret = "token-that-is-secret-and-long-enough-to-cut";
    let error = UpgradeHeader::parse(secret).unwrap_err();
    assert!(!error.contains(secret), "a malformed header that may be a secret is not echoed whole: {error}");
}

/// A persistent node's options holding only a setup code's bootstrap token (fresh from `fake`),
/// its device key and tokens in `dir`: the bootstrap token, the credentials and the options.
fn setup_code_node(fake: &FakeGateway, dir: &std::path::Path) -> (String, clawmcp_gateway::Credentials, ClientOptions) {
    let bootstrap = fake.issue_bootstrap_token();
    let credentials =
        clawmcp_gateway::Credentials { bootstrap_token: Some(bootstrap.as_str().into()), ..Default::default() };
    let identity = Arc::new(DeviceIdentity::load_or_create(dir).unwrap());
    let mut options = ClientOptions::node(fake.url(), &credentials, identity);
    options.persistent = true;
    options.device_tokens = Some(Arc::new(DeviceTokenStore::new(dir, &fake.url(), Role::Node)));
    (bootstrap, credentials, options)
}

#[tokio::test(start_paused = true)]
async fn a_setup_codes_bootstrap_token_admits_once_then_the_device_token_takes_over() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (bootstrap, credentials, options) = setup_code_node(&fake, dir.path());
    let client = within(GatewayClient::connect(options.clone())).await.unwrap();
    assert_eq!(client.hello().unwrap().auth.method.as_deref(), Some("bootstrap-token"));
    let first = fake.requests("connect").remove(0);
    assert_eq!(first["auth"], json!({"bootstrapToken": bootstrap}), "no shared secret, only the code's token");

    // The token is spent; every later connect (a gateway restart here) presents the device token.
    fake.restart();
    until(&client, || fake.handshakes() >= 2 && client.is_connected()).await;
    assert_eq!(client.hello().unwrap().auth.method.as_deref(), Some("device-token"));
    let again = fake.requests("connect").pop().unwrap();
    assert!(again["auth"].get("bootstrapToken").is_none(), "a spent bootstrap token is not sent again: {again}");
    assert!(again["auth"]["deviceToken"].is_string());
    client.close().await;

    // A second device with the same (spent) code is refused, and says why.
    let other = tempfile::tempdir().unwrap();
    let identity = Arc::new(DeviceIdentity::load_or_create(other.path()).unwrap());
    let mut options = ClientOptions::node(fake.url(), &credentials, identity);
    options.device_tokens = Some(Arc::new(DeviceTokenStore::new(other.path(), &fake.url(), Role::Node)));
    let error = within(GatewayClient::connect(options.clone())).await.unwrap_err();
    assert!(error.to_string().contains("setup code invalid, expired, revoked, or already used"), "{error}");

    // A persistent node given the spent code stops instead of retrying it forever (as the real
    // node host exits): no operator approval makes the code valid again.
    options.persistent = true;
    let attempts = fake.connect_attempts();
    let client = GatewayClient::start(options);
    until(&client, || matches!(client.status(), LinkStatus::Stopped(_))).await;
    let LinkStatus::Stopped(reason) = client.status() else { unreachable!() };
    assert!(reason.is_spent_setup_code(), "{reason}");
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
    assert_eq!(fake.connect_attempts(), attempts + 1, "one refused attempt, no retries");
}

#[tokio::test(start_paused = true)]
async fn a_setup_code_is_retried_while_the_gateway_is_down() {
    let fake = FakeGateway::start().await;
    fake.set_accepting(false);
    let dir = tempfile::tempdir().unwrap();
    let (_, _, options) = setup_code_node(&fake, dir.path());
    let client = GatewayClient::start(options);
    // A gateway that is down is transient: the code is kept and offered again.
    until(&client, || matches!(client.status(), LinkStatus::Connecting { error: Some(_), .. })).await;
    fake.set_accepting(true);
    until_connected(&client).await;
    assert_eq!(client.hello().unwrap().auth.method.as_deref(), Some("bootstrap-token"));
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_tls_pin_on_a_plaintext_url_fails_the_connect_saying_so() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = node_options(&fake, dir.path());
    options.persistent = false;
    options.tls_fingerprint = Some(clawmcp_gateway::TlsFingerprint::parse(&"ab".repeat(32)).unwrap());
    let error = within(GatewayClient::connect(options)).await.unwrap_err();
    assert!(error.to_string().contains("pins a wss:// gateway"), "{error}");
    assert_eq!(fake.connect_attempts(), 0, "nothing is sent in plaintext");
}
