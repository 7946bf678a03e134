//! What the tests that run the node's real capabilities through the link share: the built-in
//! registry over a private data dir, joined to a fake gateway.

use std::sync::Arc;

use clawmcp_gateway::{BackoffPolicy, Credentials, DeviceIdentity, Secret};
use clawmcp_mcp::ToolFilter;
use clawmcp_node::Registry;
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::settings::{DataDir, LiveSettings};
use clawmcp_node_gateway::{NodeLink, NodeLinkConfig};
use clawmcp_testkit::FakeGateway;

/// `Registry::builtin` reading `data`'s settings and exec approvals (write them first), linked
/// to `fake` as node `display_name`; returns once the handshake is done.
pub async fn builtin_node(fake: &FakeGateway, data: &DataDir, display_name: &str) -> (NodeLink, Arc<Registry>) {
    let settings = Arc::new(LiveSettings::open(data.settings_path()).unwrap());
    let approvals = Arc::new(ExecApprovals::open(data.exec_approvals_path()));
    let registry = Arc::new(Registry::builtin(settings, approvals));
    let config = NodeLinkConfig {
        url: fake.url(),
        credentials: Credentials { token: Some(Secret::new("fake-gateway-token")), ..Credentials::default() },
        tls_fingerprint: None,
        device: Arc::new(DeviceIdentity::load_or_create(data.root()).unwrap()),
        device_tokens: None,
        display_name: display_name.into(),
        filter: ToolFilter::all(),
        headers: Vec::new(),
        max_concurrent_invokes: 16,
        backoff: BackoffPolicy::default(),
    };
    let link = NodeLink::start(config, registry.clone());
    fake.wait_for_handshakes(1).await;
    (link, registry)
}
