//! The live event queue behind `events_poll` and `events_wait`.
//!
//! # Model (`docs/serve.md` §5, `src/mcp/channel-bridge.ts` of openclaw 2026.9.6)
//!
//! - Live only: it starts empty when the bridge starts and dies with it. Durable history is
//!   read with `messages_read`.
//! - Every event gets the next cursor of a process-local counter, so the first is 1.
//! - Bounded: at most [`QUEUE_LIMIT`] events (and [`QUEUE_BYTE_LIMIT`] bytes of them, a bound
//!   upstream lacks), oldest dropped first.
//! - A reader that asks for events after a cursor older than what is retained gets a *gap*
//!   `{requested_after_cursor, oldest_available_cursor}`: it should read durable history, then
//!   resume with `after_cursor = oldest_available_cursor - 1`.
//!
//! # Holes: events the gateway never delivered
//!
//! Upstream only knows gaps from overflow. When our gateway link drops and comes back (or our
//! own subscriber falls behind), events may have been lost *between* two retained events, and a
//! reader would never know. We record that as a hole: a cursor number is burned (assigned to no
//! event), and the continuous history a reader can trust starts after the newest hole. The gap
//! rule is then upstream's with `oldest_available_cursor = max(oldest retained, newest hole + 1)`,
//! so a reader behind a hole gets exactly the gap it would get after an overflow, and waiters
//! behind it are released at once with that gap instead of waiting for a later event.
//!
//! # Waiting
//!
//! `wait` returns at once when a matching event is retained or there is a gap; otherwise it
//! sleeps until an event is pushed, a hole is recorded, the timeout passes, the caller's call is
//! cancelled (`notifications/cancelled`) or the queue is closed, whichever is first. Nothing is
//! left behind when it returns: the wait is a future, and dropping it drops everything.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Events retained (upstream's `QUEUE_LIMIT`).
pub const QUEUE_LIMIT: usize = 1000;

/// Serialized bytes retained. Upstream has no such bound; a gateway may send 25 MiB events, and
/// a thousand of those must not exhaust memory. Big enough that ordinary traffic never hits it.
pub const QUEUE_BYTE_LIMIT: usize = 64 * 1024 * 1024;

/// Largest `limit` of `events_poll` (upstream's `EVENTS_POLL_LIMIT`).
pub const EVENTS_POLL_LIMIT: u64 = 200;

/// Longest `timeout_ms` of `events_wait` (upstream's `EVENTS_WAIT_TIMEOUT_LIMIT_MS`).
pub const EVENTS_WAIT_TIMEOUT_LIMIT: Duration = Duration::from_millis(300_000);

/// How much the queue retains; tests shrink the byte bound to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    pub events: usize,
    pub bytes: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits { events: QUEUE_LIMIT, bytes: QUEUE_BYTE_LIMIT }
    }
}

/// Which events a reader wants: those after `after_cursor`, optionally of one session. Events
/// without a session (approvals, Claude permission requests) never match a session filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Filter {
    pub(crate) after_cursor: u64,
    pub(crate) session_key: Option<String>,
}

/// Retained history does not reach back to what the reader asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gap {
    pub(crate) requested_after_cursor: u64,
    pub(crate) oldest_available_cursor: u64,
}

impl Gap {
    pub(crate) fn to_value(self) -> Value {
        json!({
            "requested_after_cursor": self.requested_after_cursor,
            "oldest_available_cursor": self.oldest_available_cursor,
        })
    }
}

/// The answer to a poll.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Polled {
    pub(crate) events: Vec<Value>,
    pub(crate) next_cursor: u64,
    pub(crate) gap: Option<Gap>,
}

/// The answer to a wait: the first matching event, or `None` (timeout, cancellation, close, or
/// a gap with nothing matching).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Waited {
    pub(crate) event: Option<Value>,
    pub(crate) gap: Option<Gap>,
}

pub(crate) struct EventQueue {
    state: Mutex<State>,
    /// Bumped on every push, hole and close; waiters watch it.
    changed: watch::Sender<u64>,
    limits: QueueLimits,
}

struct State {
    events: VecDeque<Queued>,
    /// The last cursor handed out (to an event or a hole).
    cursor: u64,
    newest_hole: Option<u64>,
    bytes: usize,
    closed: bool,
}

struct Queued {
    cursor: u64,
    session_key: Option<String>,
    /// The event as compact JSON text. A parsed `Value` costs about ten times its text in
    /// allocations (every key and string its own heap block); events are written once and read
    /// rarely, so they are kept as text and parsed when read.
    body: Box<RawValue>,
}

impl Queued {
    fn bytes(&self) -> usize {
        self.body.get().len()
    }

    fn to_value(&self) -> Value {
        serde_json::from_str(self.body.get()).unwrap_or(Value::Null)
    }
}

impl Queued {
    fn matches(&self, filter: &Filter) -> bool {
        self.cursor > filter.after_cursor
            && filter.session_key.as_ref().is_none_or(|wanted| self.session_key.as_ref() == Some(wanted))
    }
}

impl State {
    /// The first cursor of the history a reader can trust to be complete.
    fn oldest_available(&self) -> Option<u64> {
        let oldest_retained = self.events.front().map(|event| event.cursor);
        let after_hole = self.newest_hole.map(|hole| hole + 1);
        oldest_retained.max(after_hole)
    }

    fn gap_for(&self, after_cursor: u64) -> Option<Gap> {
        let oldest = self.oldest_available()?;
        (after_cursor < oldest - 1)
            .then_some(Gap { requested_after_cursor: after_cursor, oldest_available_cursor: oldest })
    }

    fn next_cursor(&mut self) -> u64 {
        self.cursor += 1;
        self.cursor
    }
}

impl EventQueue {
    pub(crate) fn new(limits: QueueLimits) -> Self {
        EventQueue {
            state: Mutex::new(State { events: VecDeque::new(), cursor: 0, newest_hole: None, bytes: 0, closed: false }),
            changed: watch::Sender::new(0),
            limits,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent; a panic elsewhere cannot tear it.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn notify(&self) {
        self.changed.send_modify(|version| *version = version.wrapping_add(1));
    }

    /// Appends `{cursor, ...fields}` and returns its cursor (0 once the queue is closed).
    pub(crate) fn push(&self, session_key: Option<String>, fields: Map<String, Value>) -> u64 {
        let mut state = self.lock();
        if state.closed {
            return 0;
        }
        let cursor = state.next_cursor();
        let mut body = Map::with_capacity(fields.len() + 1);
        body.insert("cursor".into(), cursor.into());
        body.extend(fields);
        let body = serde_json::value::to_raw_value(&body).expect("a JSON map always serialises");
        let queued = Queued { cursor, session_key, body };
        state.bytes += queued.bytes();
        state.events.push_back(queued);
        while state.events.len() > self.limits.events || (state.bytes > self.limits.bytes && state.events.len() > 1) {
            if let Some(dropped) = state.events.pop_front() {
                state.bytes -= dropped.bytes();
            }
        }
        drop(state);
        self.notify();
        cursor
    }

    /// Records that events may have been lost at this point of the stream (see the module doc)
    /// and returns the burned cursor.
    pub(crate) fn mark_hole(&self) -> u64 {
        let mut state = self.lock();
        if state.closed {
            return 0;
        }
        let hole = state.next_cursor();
        state.newest_hole = Some(hole);
        drop(state);
        self.notify();
        hole
    }

    /// Up to `limit` matching events in cursor order, without consuming them.
    pub(crate) fn poll(&self, filter: &Filter, limit: usize) -> Polled {
        let state = self.lock();
        let matched: Vec<&Queued> = state.events.iter().filter(|event| event.matches(filter)).take(limit).collect();
        let gap = state.gap_for(filter.after_cursor);
        let next_cursor = match (matched.last(), gap) {
            (Some(last), _) => last.cursor,
            (None, Some(gap)) => gap.oldest_available_cursor - 1,
            (None, None) => filter.after_cursor,
        };
        Polled { events: matched.into_iter().map(Queued::to_value).collect(), next_cursor, gap }
    }

    /// Waits for the first matching event (see the module doc for every way this returns).
    pub(crate) async fn wait(&self, filter: &Filter, timeout: Duration, cancel: &CancellationToken) -> Waited {
        let deadline = Instant::now() + timeout;
        let mut changes = self.changed.subscribe();
        loop {
            changes.borrow_and_update();
            {
                let state = self.lock();
                let event = state.events.iter().find(|event| event.matches(filter)).map(Queued::to_value);
                let gap = state.gap_for(filter.after_cursor);
                if event.is_some() || gap.is_some() || state.closed {
                    return Waited { event, gap };
                }
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                () = tokio::time::sleep_until(deadline) => break,
                changed = changes.changed() => if changed.is_err() { break },
            }
        }
        Waited { event: None, gap: self.lock().gap_for(filter.after_cursor) }
    }

    /// Releases every waiter (with no event) and refuses further pushes.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(session: &str) -> (Option<String>, Map<String, Value>) {
        let mut fields = Map::new();
        fields.insert("type".into(), "message".into());
        fields.insert("sessionKey".into(), session.into());
        (Some(session.to_owned()), fields)
    }

    fn approval() -> (Option<String>, Map<String, Value>) {
        let mut fields = Map::new();
        fields.insert("type".into(), "exec_approval_requested".into());
        (None, fields)
    }

    fn push(queue: &EventQueue, (session, fields): (Option<String>, Map<String, Value>)) -> u64 {
        queue.push(session, fields)
    }

    fn filter(after_cursor: u64, session_key: Option<&str>) -> Filter {
        Filter { after_cursor, session_key: session_key.map(str::to_owned) }
    }

    fn cursors(polled: &Polled) -> Vec<u64> {
        polled.events.iter().map(|event| event["cursor"].as_u64().unwrap()).collect()
    }

    #[test]
    fn cursors_start_at_one_and_bodies_put_the_cursor_first() {
        let queue = EventQueue::new(QueueLimits::default());
        assert_eq!(push(&queue, message("a")), 1);
        assert_eq!(push(&queue, approval()), 2);
        let polled = queue.poll(&filter(0, None), 20);
        assert_eq!(
            serde_json::to_string(&polled.events[0]).unwrap(),
            r#"{"cursor":1,"type":"message","sessionKey":"a"}"#
        );
        assert_eq!((polled.next_cursor, polled.gap), (2, None));
    }

    #[test]
    fn poll_respects_cursor_limit_and_session_filter_which_never_matches_approvals() {
        let queue = EventQueue::new(QueueLimits::default());
        push(&queue, message("a"));
        push(&queue, approval());
        push(&queue, message("b"));
        push(&queue, message("a"));
        assert_eq!(cursors(&queue.poll(&filter(0, Some("a")), 20)), [1, 4]);
        assert_eq!(cursors(&queue.poll(&filter(1, None), 2)), [2, 3]);
        assert_eq!(queue.poll(&filter(1, None), 2).next_cursor, 3);
        let none = queue.poll(&filter(4, None), 20);
        assert_eq!((none.events.len(), none.next_cursor, none.gap), (0, 4, None));
        let beyond = queue.poll(&filter(99, None), 20);
        assert_eq!((beyond.next_cursor, beyond.gap), (99, None), "a cursor from the future is echoed");
    }

    #[test]
    fn capacity_edge_drops_the_oldest_and_reports_the_gap() {
        let queue = EventQueue::new(QueueLimits::default());
        for _ in 0..QUEUE_LIMIT {
            push(&queue, message("a"));
        }
        let full = queue.poll(&filter(0, None), 200);
        assert_eq!((full.events[0]["cursor"].as_u64(), full.gap), (Some(1), None), "exactly QUEUE_LIMIT fit");

        push(&queue, message("a"));
        let over = queue.poll(&filter(0, None), 200);
        assert_eq!(over.events[0]["cursor"], 2, "the oldest went first");
        assert_eq!(over.gap, Some(Gap { requested_after_cursor: 0, oldest_available_cursor: 2 }));
        assert_eq!(over.next_cursor, 201);
        // after_cursor = oldest - 1 is the documented way to resume: no gap.
        assert_eq!(queue.poll(&filter(1, None), 1).gap, None);
        let empty_filter = queue.poll(&filter(0, Some("nobody")), 200);
        assert_eq!(
            (empty_filter.events.len(), empty_filter.next_cursor),
            (0, 1),
            "gap without events resumes at oldest-1"
        );
    }

    #[test]
    fn byte_limit_edge() {
        let one = {
            let probe = EventQueue::new(QueueLimits::default());
            push(&probe, message("a"));
            probe.lock().bytes
        };
        let queue = EventQueue::new(QueueLimits { events: 100, bytes: one * 3 });
        for _ in 0..3 {
            push(&queue, message("a"));
        }
        assert_eq!(queue.poll(&filter(0, None), 200).events.len(), 3, "exactly the byte limit fits");
        push(&queue, message("a"));
        let polled = queue.poll(&filter(0, None), 200);
        assert_eq!(cursors(&polled), [2, 3, 4]);
        assert_eq!(polled.gap.unwrap().oldest_available_cursor, 2);
    }

    #[test]
    fn a_hole_burns_a_cursor_and_makes_readers_behind_it_see_a_gap() {
        let queue = EventQueue::new(QueueLimits::default());
        push(&queue, message("a"));
        push(&queue, message("a"));
        assert_eq!(queue.mark_hole(), 3);
        assert_eq!(push(&queue, message("a")), 4);
        let behind = queue.poll(&filter(1, None), 20);
        assert_eq!(cursors(&behind), [2, 4], "retained events are still returned");
        assert_eq!(behind.gap, Some(Gap { requested_after_cursor: 1, oldest_available_cursor: 4 }));
        assert_eq!(queue.poll(&filter(2, None), 20).gap.map(|g| g.oldest_available_cursor), Some(4));
        assert_eq!(queue.poll(&filter(3, None), 20).gap, None, "resuming at oldest-1 is clean");
    }

    #[test]
    fn a_hole_in_an_empty_queue_still_reports_a_gap() {
        let queue = EventQueue::new(QueueLimits::default());
        assert_eq!(queue.poll(&filter(0, None), 20).gap, None, "nothing was ever lost");
        queue.mark_hole();
        let polled = queue.poll(&filter(0, None), 20);
        assert_eq!(polled.gap, Some(Gap { requested_after_cursor: 0, oldest_available_cursor: 2 }));
        assert_eq!(polled.next_cursor, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn wait_returns_an_existing_match_or_a_known_gap_at_once() {
        let queue = EventQueue::new(QueueLimits { events: 2, bytes: QUEUE_BYTE_LIMIT });
        let never = CancellationToken::new();
        push(&queue, approval());
        push(&queue, message("a"));
        let found = queue.wait(&filter(0, Some("a")), Duration::from_secs(300), &never).await;
        assert_eq!(found.event.unwrap()["cursor"], 2);
        push(&queue, message("b"));
        // Cursor 1 was dropped: a gap, and nothing of session "zzz" retained.
        let gap = queue.wait(&filter(0, Some("zzz")), Duration::from_secs(300), &never).await;
        assert_eq!(
            gap,
            Waited { event: None, gap: Some(Gap { requested_after_cursor: 0, oldest_available_cursor: 2 }) }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn wait_times_out_with_no_event() {
        let queue = EventQueue::new(QueueLimits::default());
        let started = Instant::now();
        let waited = queue.wait(&filter(0, None), Duration::from_millis(1500), &CancellationToken::new()).await;
        assert_eq!(waited, Waited { event: None, gap: None });
        assert_eq!(started.elapsed(), Duration::from_millis(1500), "the virtual clock ran exactly to the timeout");
    }

    #[tokio::test(start_paused = true)]
    async fn wait_wakes_for_a_matching_push_only() {
        let queue = std::sync::Arc::new(EventQueue::new(QueueLimits::default()));
        let waiter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.wait(&filter(0, Some("a")), Duration::from_secs(300), &CancellationToken::new()).await }
        });
        tokio::task::yield_now().await;
        push(&queue, message("b"));
        push(&queue, approval());
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "non-matching events do not settle the wait");
        push(&queue, message("a"));
        assert_eq!(waiter.await.unwrap().event.unwrap()["cursor"], 3);
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_close_and_holes_release_waiters_at_once() {
        let queue = std::sync::Arc::new(EventQueue::new(QueueLimits::default()));
        let spawn_wait = |cancel: CancellationToken| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let waited = queue.wait(&filter(0, None), Duration::from_secs(300), &cancel).await;
                (waited, started.elapsed())
            })
        };
        let cancel = CancellationToken::new();
        let cancelled = spawn_wait(cancel.clone());
        tokio::task::yield_now().await;
        cancel.cancel();
        let (waited, took) = cancelled.await.unwrap();
        assert_eq!((waited.event, took), (None, Duration::ZERO));

        let holed = spawn_wait(CancellationToken::new());
        tokio::task::yield_now().await;
        queue.mark_hole();
        let (waited, took) = holed.await.unwrap();
        assert_eq!(waited.gap, Some(Gap { requested_after_cursor: 0, oldest_available_cursor: 2 }));
        assert_eq!(took, Duration::ZERO);

        let closed = {
            let queue = queue.clone();
            tokio::spawn(async move {
                queue.wait(&filter(1, None), Duration::from_secs(300), &CancellationToken::new()).await
            })
        };
        tokio::task::yield_now().await;
        queue.close();
        assert_eq!(closed.await.unwrap(), Waited { event: None, gap: None });
        assert_eq!(push(&queue, message("a")), 0, "a closed queue takes nothing");
    }
}
