//! Node events a capability sends the gateway on its own, outside any call: a click on an A2UI
//! button in the canvas becomes an `agent.request` for the gateway's agent, as the upstream
//! nodes send it. They go through the node's gateway link while one is joined ([`EventRoute`],
//! set by the link), and are refused with the reason otherwise; nothing is queued for later, since
//! a click answered minutes afterwards would surprise the person who clicked.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clawmcp_mcp::tool::NodeEvent;
use futures_util::future::BoxFuture;

/// How long one event may wait for the gateway's answer.
pub const SEND_DEADLINE: Duration = Duration::from_secs(15);

/// What a capability is told when no gateway link is there to carry its event.
pub const NOT_JOINED: &str = "this node is not connected to a gateway (A2UI actions go to the gateway's agent: join one \
                              with clawmcp node --gateway-url or --pair)";

/// Where node events go: the gateway link (`node.event`).
pub trait EventRoute: Send + Sync {
    /// Sends `event` and waits for the gateway's answer.
    fn send(&self, event: NodeEvent) -> BoxFuture<'static, Result<(), String>>;
    /// This node's id on the gateway (its device id): the `instance` upstream's messages name.
    fn node_id(&self) -> String;
    /// The gateway's URL (`ws://` or `wss://`): its origin's pages may use the canvas's bridge.
    fn gateway_url(&self) -> String;
}

/// The node's one outlet for events, shared by the registry's capabilities and the link.
#[derive(Default)]
pub struct NodeEvents {
    route: Mutex<Option<Arc<dyn EventRoute>>>,
}

impl std::fmt::Debug for NodeEvents {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("NodeEvents").field("routed", &self.current().is_some()).finish()
    }
}

impl NodeEvents {
    pub fn new() -> Arc<NodeEvents> {
        Arc::new(NodeEvents::default())
    }

    /// From now on events go through `route` (a link that joined a gateway).
    pub fn route_through(&self, route: Arc<dyn EventRoute>) {
        *self.route.lock().unwrap_or_else(PoisonError::into_inner) = Some(route);
    }

    /// `route` is gone (its link closed): events are refused again, unless another link has
    /// taken over meanwhile.
    pub fn unroute(&self, route: &Arc<dyn EventRoute>) {
        let mut current = self.route.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|now| std::ptr::addr_eq(Arc::as_ptr(now), Arc::as_ptr(route))) {
            *current = None;
        }
    }

    fn current(&self) -> Option<Arc<dyn EventRoute>> {
        self.route.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The node's id on the gateway it is joined to, if it is.
    pub fn node_id(&self) -> Option<String> {
        self.current().map(|route| route.node_id())
    }

    /// The web origin of the gateway the node is joined to (`wss://gw:18789` serves its pages at
    /// `https://gw:18789`), if it is.
    pub fn gateway_origin(&self) -> Option<String> {
        let url = url::Url::parse(&self.current()?.gateway_url()).ok()?;
        let scheme = match url.scheme() {
            "wss" | "https" => "https",
            "ws" | "http" => "http",
            _ => return None,
        };
        let host = url.host_str()?;
        let origin = url::Url::parse(&format!("{scheme}://{host}:{}", url.port_or_known_default()?)).ok()?;
        Some(origin.origin().ascii_serialization())
    }

    /// Sends `event` to the gateway and waits for its answer (at most [`SEND_DEADLINE`]).
    pub async fn send(&self, event: NodeEvent) -> Result<(), String> {
        let route = self.current().ok_or_else(|| NOT_JOINED.to_owned())?;
        match tokio::time::timeout(SEND_DEADLINE, route.send(event)).await {
            Ok(sent) => sent,
            Err(_) => Err(format!("the gateway did not answer within {} s", SEND_DEADLINE.as_secs())),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A route that keeps what it is sent and answers `answer`.
    pub(crate) struct Recorder {
        pub sent: Mutex<Vec<NodeEvent>>,
        pub answer: Mutex<Result<(), String>>,
        pub gateway_url: Mutex<String>,
    }

    impl Recorder {
        pub(crate) fn new() -> Arc<Recorder> {
            Arc::new(Recorder {
                sent: Mutex::default(),
                answer: Mutex::new(Ok(())),
                gateway_url: Mutex::new("wss://gateway.example:18789".into()),
            })
        }

        pub(crate) fn sent(&self) -> Vec<NodeEvent> {
            self.sent.lock().unwrap().clone()
        }
    }

    impl EventRoute for Recorder {
        fn send(&self, event: NodeEvent) -> BoxFuture<'static, Result<(), String>> {
            self.sent.lock().unwrap().push(event);
            let answer = self.answer.lock().unwrap().clone();
            Box::pin(async move { answer })
        }

        fn node_id(&self) -> String {
            "node-1".to_owned()
        }

        fn gateway_url(&self) -> String {
            self.gateway_url.lock().unwrap().clone()
        }
    }

    fn event() -> NodeEvent {
        NodeEvent { event: "agent.request", payload: serde_json::json!({"message": "hi"}) }
    }

    #[tokio::test]
    async fn events_go_through_the_route_in_force_and_are_refused_without_one() {
        let events = NodeEvents::new();
        assert_eq!(events.send(event()).await.unwrap_err(), NOT_JOINED);
        assert_eq!(events.node_id(), None);
        let first = Recorder::new();
        let first_route: Arc<dyn EventRoute> = first.clone();
        events.route_through(first_route.clone());
        events.send(event()).await.unwrap();
        assert_eq!(first.sent(), [event()]);
        assert_eq!(events.node_id().as_deref(), Some("node-1"));
        assert_eq!(events.gateway_origin().as_deref(), Some("https://gateway.example:18789"));
        for (url, origin) in
            [("ws://127.0.0.1:18789/", "http://127.0.0.1:18789"), ("wss://GW.example", "https://gw.example")]
        {
            *first.gateway_url.lock().unwrap() = url.into();
            assert_eq!(events.gateway_origin().as_deref(), Some(origin), "{url}");
        }
        *first.answer.lock().unwrap() = Err("refused".into());
        assert_eq!(events.send(event()).await.unwrap_err(), "refused", "the gateway's answer is the result");

        // A second link takes over; the first one closing later does not unroute it.
        let second: Arc<dyn EventRoute> = Recorder::new();
        events.route_through(second.clone());
        events.unroute(&first_route);
        assert!(events.send(event()).await.is_ok(), "the second route is still in force");
        events.unroute(&second);
        assert_eq!(events.send(event()).await.unwrap_err(), NOT_JOINED);
    }
}
