//! What an event subscriber receives: gateway events plus the markers a consumer needs to keep
//! an honest record (a link dropped, a new link is up, this subscriber fell behind).
//!
//! Delivery is a bounded `tokio::sync::broadcast` channel shared by all subscribers. The
//! connection never waits for a subscriber: one that falls more than the buffer behind loses
//! the oldest events and is told how many with [`GatewayEvent::Lagged`], so a queue can record a
//! gap instead of silently missing messages. The stream ends (`None`) when the client stops.
//!
//! `connect.challenge` and `tick` are transport frames consumed by the client, never delivered.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::frames::{EventFrame, HelloOk};

/// One item of the event stream.
#[derive(Debug, Clone)]
pub enum GatewayEvent {
    /// A gateway event (`session.message`, `exec.approval.requested`, ...).
    Event(Arc<EventFrame>),
    /// The link dropped; events may be missed until [`GatewayEvent::Reconnected`].
    Disconnected { reason: String },
    /// A new link completed its handshake. Server-side subscriptions (`sessions.subscribe`) do
    /// not survive a reconnect: re-issue them, and treat the interval as a gap.
    Reconnected { hello: Arc<HelloOk> },
    /// This subscriber was too slow and `missed` events were dropped for it.
    Lagged { missed: u64 },
}

/// A subscriber's end of the event stream.
#[derive(Debug)]
pub struct EventSubscription {
    receiver: broadcast::Receiver<GatewayEvent>,
}

impl EventSubscription {
    pub(crate) fn new(receiver: broadcast::Receiver<GatewayEvent>) -> Self {
        EventSubscription { receiver }
    }

    /// The next item, or `None` once the client has stopped and everything buffered was read.
    pub async fn recv(&mut self) -> Option<GatewayEvent> {
        match self.receiver.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(GatewayEvent::Lagged { missed }),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> GatewayEvent {
        GatewayEvent::Event(Arc::new(EventFrame { event: name.into(), payload: None, seq: None, state_version: None }))
    }

    #[tokio::test]
    async fn a_slow_subscriber_is_told_how_many_it_missed() {
        let (sender, receiver) = broadcast::channel(2);
        let mut subscription = EventSubscription::new(receiver);
        for name in ["a", "b", "c", "d"] {
            sender.send(event(name)).unwrap();
        }
        assert!(matches!(subscription.recv().await, Some(GatewayEvent::Lagged { missed: 2 })));
        let Some(GatewayEvent::Event(frame)) = subscription.recv().await else { panic!("expected an event") };
        assert_eq!(frame.event, "c");
        drop(sender);
        assert!(matches!(subscription.recv().await, Some(GatewayEvent::Event(_))));
        assert!(subscription.recv().await.is_none());
    }
}
