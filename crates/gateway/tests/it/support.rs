//! Shared helpers: client options for a fake, bounded waits, event matching.

use std::future::Future;
use std::time::Duration;

use clawmcp_gateway::{ClientOptions, Credentials, EventSubscription, GatewayEvent, Secret};
use clawmcp_testkit::FakeGateway;

/// The fake's default token.
pub const TOKEN: &str = "fake-gateway-token";

pub fn token_credentials(token: &str) -> Credentials {
    Credentials { token: Some(Secret::new(token)), ..Credentials::default() }
}

/// `cli`/`cli` operator options for `fake` with the right token.
pub fn operator(fake: &FakeGateway) -> ClientOptions {
    ClientOptions::operator(fake.url(), &token_credentials(TOKEN), &["operator.read", "operator.write"])
}

/// Awaits `future`, failing the test if it takes more than an hour of (virtual) time.
pub async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(3600), future).await.expect("the test waited an hour of virtual time")
}

/// The next item of `subscription` (gateway event or marker).
pub async fn next(subscription: &mut EventSubscription) -> GatewayEvent {
    within(subscription.recv()).await.expect("the event stream ended")
}

/// The next gateway event's name, payload and seq (panics on a marker).
pub async fn next_event(subscription: &mut EventSubscription) -> (String, serde_json::Value, Option<u64>) {
    match next(subscription).await {
        GatewayEvent::Event(frame) => (frame.event.clone(), frame.payload.clone().unwrap_or_default(), frame.seq),
        other => panic!("expected a gateway event, got {other:?}"),
    }
}
