//! The connection budget against a real server: per-phase deadlines (first byte, head,
//! keep-alive idle), the unauthenticated budget and the total cap at their edges, eviction of
//! the longest-idle connection, and an authenticated client served through a flood of silent
//! connections. Time is paused: a connection closed "at once" closed before the clock moved,
//! one closed at a deadline closed exactly then.

mod common;

use std::time::Duration;

use clawmcp_http::Limits;
use common::{Harness, call, ping, read_to_close, read_until};
use http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// A connection that never sends a byte.
async fn silent(h: &Harness) -> TcpStream {
    TcpStream::connect(h.addr()).await.unwrap()
}

fn probe_request(h: &Harness) -> String {
    format!("GET / HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n", h.addr(), h.client.token)
}

/// Sends the authenticated probe on `stream` and reads its whole answer.
async fn probe_on(h: &Harness, stream: &mut TcpStream) {
    stream.write_all(probe_request(h).as_bytes()).await.unwrap();
    let answer = read_until(stream, &format!("POST JSON-RPC to http://{}/", h.addr())).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
}

/// A keep-alive connection that passed the bearer check once and is now idle.
async fn authenticated(h: &Harness) -> TcpStream {
    let mut stream = TcpStream::connect(h.addr()).await.unwrap();
    probe_on(h, &mut stream).await;
    stream
}

/// When each connection was closed by the server (without sending anything more), measured from
/// `since` on the paused clock. Read in order: a connection closed earlier reads as closed at
/// once, so each time is its own.
async fn closed_at(streams: &mut [TcpStream], since: Instant) -> Vec<Duration> {
    let mut times = Vec::new();
    for stream in streams {
        assert_eq!(read_to_close(stream).await, "", "closed without an answer");
        times.push(since.elapsed());
    }
    times
}

#[tokio::test(start_paused = true)]
async fn each_phase_has_its_deadline_and_authentication_earns_the_long_one() {
    let h = Harness::start().await;
    let limits = h.limits.clone();
    assert!(limits.first_byte_timeout < limits.idle_timeout);

    let started = Instant::now();
    assert_eq!(closed_at(&mut [silent(&h).await], started).await, [limits.first_byte_timeout], "first byte");

    // A refusal does not authenticate: the connection kept open after a 401 gets the short
    // deadline again, from the end of the refusal.
    let mut refused = h.client.raw_open(format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", h.addr()).as_bytes()).await;
    let answer = read_until(&mut refused, "missing or invalid bearer token").await;
    assert!(answer.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{answer}");
    let refused_at = Instant::now();
    assert_eq!(closed_at(&mut [refused], refused_at).await, [limits.first_byte_timeout], "after a 401");

    // One request with the token, and the connection may idle for the keep-alive time.
    let mut kept = authenticated(&h).await;
    let idle_since = Instant::now();
    tokio::time::sleep(limits.idle_timeout - Duration::from_millis(1)).await;
    probe_on(&h, &mut kept).await;
    let idle_again = Instant::now();
    assert_eq!(closed_at(&mut [kept], idle_again).await, [limits.idle_timeout], "idle keep-alive");
    assert!(idle_again > idle_since, "a request just before the idle deadline kept it open");
}

#[tokio::test(start_paused = true)]
async fn a_head_must_be_complete_within_the_header_deadline_of_its_first_byte() {
    let h = Harness::start().await;
    let limits = h.limits.clone();
    let started = Instant::now();
    let partial = format!("POST / HTTP/1.1\r\nHost: {}\r\n", h.addr());
    let answer = h.client.raw(partial.as_bytes()).await;
    assert_eq!(answer, "", "closed without an answer");
    assert_eq!(started.elapsed(), limits.header_read_timeout);
}

#[tokio::test(start_paused = true)]
async fn a_slowloris_sending_one_header_byte_per_second_is_cut_at_the_header_deadline() {
    let h = Harness::start().await;
    let limits = h.limits.clone();
    let head = h.client.raw_post_head("Content-Length: 2\r\n") + "{}";
    assert!(head.len() as u64 > limits.header_read_timeout.as_secs() + limits.first_byte_timeout.as_secs());
    let mut stream = TcpStream::connect(h.addr()).await.unwrap();
    let (mut reader, mut writer) = stream.split();
    let started = Instant::now();
    let trickle = async {
        for byte in head.bytes() {
            if writer.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    let cut = async {
        let mut received = Vec::new();
        let _ = reader.read_to_end(&mut received).await;
        (started.elapsed(), received)
    };
    let ((), (elapsed, received)) = tokio::join!(trickle, cut);
    assert_eq!(received, b"", "cut without an answer");
    assert_eq!(elapsed, limits.header_read_timeout, "from the first byte, whatever trickles in after it");
}

#[tokio::test(start_paused = true)]
async fn the_unauthenticated_budget_at_its_edge_and_one_past_it() {
    let limits = Limits { max_unauthenticated_connections: 4, ..Limits::default() };
    let h = Harness::with_limits(limits.clone()).await;
    let fb = limits.first_byte_timeout;

    let started = Instant::now();
    let mut at_edge = Vec::new();
    for _ in 0..4 {
        at_edge.push(silent(&h).await);
    }
    assert_eq!(closed_at(&mut at_edge, started).await, [fb; 4], "exactly the budget: nobody evicted");

    let started = Instant::now();
    let mut past = Vec::new();
    for _ in 0..5 {
        past.push(silent(&h).await);
    }
    assert_eq!(
        closed_at(&mut past, started).await,
        [Duration::ZERO, fb, fb, fb, fb],
        "one past the budget: the longest-idle one is closed at once, the others at their deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_silent_connections_cannot_starve_an_authenticated_client() {
    let h = Harness::start().await;
    let limits = h.limits.clone();
    let budget = limits.max_unauthenticated_connections;
    let mut kept = authenticated(&h).await;

    let started = Instant::now();
    let extra = 8;
    let mut flood = Vec::new();
    for _ in 0..budget + extra {
        flood.push(silent(&h).await);
    }
    // A new client gets its answer at once.
    let pong = h.client.rpc(ping(1)).await;
    assert_eq!((pong.status, pong.json()["result"].clone()), (StatusCode::OK, json!({})));
    // The authenticated keep-alive connection was not touched by the flood.
    probe_on(&h, &mut kept).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "all of this before the clock moved");

    // The longest-idle silent ones made room: one per newcomer past the budget, and one for the
    // ping's own connection (unauthenticated until its request passed the gate).
    let evicted = extra + 1;
    let times = closed_at(&mut flood, started).await;
    assert_eq!(times[..evicted], vec![Duration::ZERO; evicted], "evicted at once");
    assert_eq!(times[evicted..], vec![limits.first_byte_timeout; budget - 1], "the rest at their deadline");
}

#[tokio::test(start_paused = true)]
async fn reopening_silent_connections_never_makes_a_ping_fail() {
    let h = Harness::start().await;
    let limits = h.limits.clone();
    let budget = limits.max_unauthenticated_connections;
    let mut kept = authenticated(&h).await;
    let started = Instant::now();
    let rounds = 3;
    let mut all = Vec::new();
    for round in 0..rounds {
        for _ in 0..budget {
            all.push(silent(&h).await);
        }
        let pong = h.client.rpc(ping(round)).await;
        assert_eq!(pong.status, StatusCode::OK, "round {round}");
        probe_on(&h, &mut kept).await;
    }
    // Each newcomer evicted the longest-idle silent connection: all but the newest `budget - 1`
    // (the last ping's connection took one place) were closed at once.
    let times = closed_at(&mut all, started).await;
    let kept_open = budget - 1;
    let evicted = rounds as usize * budget - kept_open;
    assert_eq!(times[..evicted], vec![Duration::ZERO; evicted]);
    assert_eq!(times[evicted..], vec![limits.first_byte_timeout; kept_open]);
}

#[tokio::test(start_paused = true)]
async fn the_connection_cap_evicts_the_longest_idle_never_a_busy_one_and_refuses_when_all_are_busy() {
    let limits = Limits { max_connections: 3, max_unauthenticated_connections: 3, ..Limits::default() };
    let h = Harness::with_limits(limits).await;
    let busy_call = |id: i64| {
        let client = h.client.clone();
        tokio::spawn(async move { client.rpc(call(json!(id), "wait_for_cancel", json!({}))).await })
    };
    let first_call = busy_call(1);
    h.service.wait_started(1).await;
    let a = authenticated(&h).await;
    let b = authenticated(&h).await;
    let started = Instant::now();
    // At the cap (the call, a, b): c takes the place of the longest-idle, a.
    let c = authenticated(&h).await;
    // Two more calls take b's and then c's places; the running call is never the one chosen.
    let more_calls = [busy_call(2), busy_call(3)];
    h.service.wait_started(3).await;
    assert_eq!(closed_at(&mut [a, b, c], started).await, [Duration::ZERO; 3]);

    // Every place is held by a request in progress: a newcomer is closed unanswered, at once.
    let refused = h.client.raw(probe_request(&h).as_bytes()).await;
    assert_eq!((refused.as_str(), started.elapsed()), ("", Duration::ZERO), "the cap holds");

    // The calls were never disturbed: they answer when the server shuts down.
    h.shutdown.cancel();
    for running in [first_call].into_iter().chain(more_calls) {
        assert_eq!(running.await.unwrap().tool_outcome(), (clawmcp_mcp::SHUTTING_DOWN.to_owned(), true));
    }
}
