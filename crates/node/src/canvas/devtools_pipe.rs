//! Chromium's DevTools on a pipe, handed to chromiumoxide as a WebSocket only it can open.
//!
//! With `--remote-debugging-port`, Chromium listens on a loopback port that any process of this
//! machine can connect to, another local user's included, and whoever connects drives the
//! browser (reads every page, runs script, opens `file://` as the node's user). With
//! `--remote-debugging-pipe` it opens no port: it reads the protocol from its descriptor 3 and
//! writes to its descriptor 4, each message a JSON text ended by a NUL byte, and only the process
//! holding the other ends can speak to it. chromiumoxide (0.9) speaks WebSocket only, so
//! [`Bridge`] relays between the two: a listener on 127.0.0.1 whose one WebSocket path carries 256
//! random bits, which accepts one connection (chromiumoxide's, a moment after the browser started)
//! and is then closed. Messages are copied whole in both directions, never parsed: the protocol
//! stays chromiumoxide's.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::BytesMut;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{Callback, ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// The largest DevTools message relayed either way. A screenshot is the largest thing Chromium
/// sends: a PNG of the largest canvas (7680x7680) of an ordinary page is a few MB of base64, and
/// a page of pure noise that size is about 300 MB. A longer message is dropped whole (its command
/// then fails on its own deadline) and the connection goes on.
pub const MAX_MESSAGE: usize = 256 * 1024 * 1024;
/// How long the bridge waits for chromiumoxide's connection before it closes its listener.
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(15);
/// How long one connection may take to finish its WebSocket handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(2);
/// Handshakes in progress at once: a local process that opens connections and sends nothing
/// delays nobody beyond these.
const HANDSHAKES_AT_ONCE: usize = 8;
/// What one read from Chromium's pipe asks for.
const READ_CHUNK: usize = 64 * 1024;

/// The browser's ends of the two pipes: it reads the protocol from `reads` (give it as
/// descriptor 3) and writes to `writes` (descriptor 4). Both are close-on-exec here, so no other
/// child of the node inherits them; drop them once the browser has started, or the node would
/// not see the pipe end when the browser dies.
pub struct BrowserEnds {
    pub reads: OwnedFd,
    pub writes: OwnedFd,
}

/// The node's ends of the same pipes.
pub struct NodeEnds {
    to_browser: pipe::Sender,
    from_browser: pipe::Receiver,
}

/// The two pipes (must be called inside a tokio runtime).
pub fn pipes() -> io::Result<(BrowserEnds, NodeEnds)> {
    let (browser_reads, node_writes) = std::io::pipe()?;
    let (node_reads, browser_writes) = std::io::pipe()?;
    let node = NodeEnds {
        to_browser: pipe::Sender::from_owned_fd(OwnedFd::from(node_writes))?,
        from_browser: pipe::Receiver::from_owned_fd(OwnedFd::from(node_reads))?,
    };
    Ok((BrowserEnds { reads: OwnedFd::from(browser_reads), writes: OwnedFd::from(browser_writes) }, node))
}

/// A running relay between a WebSocket and the browser's pipe; dropping it ends the relay.
pub struct Bridge {
    url: String,
    task: JoinHandle<()>,
}

impl Bridge {
    /// Listens on a free loopback port for the one WebSocket connection (within
    /// [`CONNECT_DEADLINE`]) and relays it to `node`'s pipes until either side ends.
    pub async fn open(node: NodeEnds) -> io::Result<Bridge> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|error| io::Error::other(format!("no randomness: {error}")))?;
        let path = format!("/devtools/browser/{}", URL_SAFE_NO_PAD.encode(secret));
        let url = format!("ws://{}{path}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            let Some(socket) = accept_one(listener, path).await else {
                tracing::debug!("no DevTools client connected to the bridge in time");
                return;
            };
            relay(socket, node).await;
        });
        Ok(Bridge { url, task })
    }

    /// The WebSocket address to give chromiumoxide (it holds the secret path: never logged).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the relay still runs (or still waits for its connection).
    pub fn running(&self) -> bool {
        !self.task.is_finished()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn config() -> WebSocketConfig {
    WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE)).max_frame_size(Some(MAX_MESSAGE))
}

/// The first connection that asks for `path`; the listener is closed when this returns, so
/// nothing can connect afterwards. A connection asking for another path is refused (404) and
/// changes nothing.
async fn accept_one(listener: TcpListener, path: String) -> Option<WebSocketStream<TcpStream>> {
    let deadline = tokio::time::sleep(CONNECT_DEADLINE);
    tokio::pin!(deadline);
    let mut handshakes = tokio::task::JoinSet::new();
    // Oldest first: a new connection past the bound ends the oldest handshake still running, so
    // connections that send nothing cannot keep the client's out.
    let mut running = std::collections::VecDeque::new();
    loop {
        tokio::select! {
            () = &mut deadline => return None,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: not a reason to spin until the deadline.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                running.retain(|handshake: &tokio::task::AbortHandle| !handshake.is_finished());
                if running.len() >= HANDSHAKES_AT_ONCE
                    && let Some(oldest) = running.pop_front()
                {
                    oldest.abort();
                }
                running.push_back(handshakes.spawn(handshake(stream, SecretPath(path.clone()))));
            }
            Some(done) = handshakes.join_next(), if !handshakes.is_empty() => {
                if let Ok(Some(socket)) = done {
                    return Some(socket);
                }
            }
        }
    }
}

/// `stream`'s WebSocket, if it asks for the secret path within [`HANDSHAKE_DEADLINE`].
async fn handshake(stream: TcpStream, check: SecretPath) -> Option<WebSocketStream<TcpStream>> {
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config()));
    tokio::time::timeout(HANDSHAKE_DEADLINE, handshake).await.ok()?.ok()
}

/// The handshake's check: the request's path is the secret one (compared in constant time), or
/// the answer is 404.
struct SecretPath(String);

impl Callback for SecretPath {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        if constant_time_eq::constant_time_eq(request.uri().path().as_bytes(), self.0.as_bytes()) {
            return Ok(response);
        }
        let mut refused = ErrorResponse::new(Some("not found".to_owned()));
        *refused.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::NOT_FOUND;
        Err(refused)
    }
}

/// Copies messages both ways until the browser's pipe or the WebSocket ends.
async fn relay(socket: WebSocketStream<TcpStream>, node: NodeEnds) {
    let (mut to_client, mut from_client) = socket.split();
    let NodeEnds { mut to_browser, from_browser } = node;
    let commands = async {
        while let Some(Ok(message)) = from_client.next().await {
            let bytes = match message {
                Message::Text(text) => text.into(),
                Message::Binary(bytes) => bytes,
                Message::Close(_) => break,
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            if to_browser.write_all(&bytes).await.is_err() || to_browser.write_all(b"\0").await.is_err() {
                break;
            }
        }
    };
    let answers = async {
        let mut messages = Messages::new(from_browser);
        while let Some(text) = messages.next().await {
            if to_client.send(Message::Text(text)).await.is_err() {
                break;
            }
        }
        let _ = to_client.close().await;
    };
    // Whichever side ends first ends both.
    tokio::select! {
        () = commands => {}
        () = answers => {}
    }
}

/// The NUL-ended messages read from the browser's pipe, each at most [`MAX_MESSAGE`] bytes.
struct Messages {
    pipe: pipe::Receiver,
    buffer: BytesMut,
    /// How much of `buffer` is known to hold no NUL.
    scanned: usize,
    /// Inside a message longer than the bound: its bytes are dropped up to its NUL.
    skipping: bool,
}

impl Messages {
    fn new(pipe: pipe::Receiver) -> Messages {
        Messages { pipe, buffer: BytesMut::with_capacity(READ_CHUNK), scanned: 0, skipping: false }
    }

    /// The next whole message; `None` once the pipe has ended (the browser is gone).
    async fn next(&mut self) -> Option<Utf8Bytes> {
        loop {
            if let Some(at) = memchr::memchr(0, &self.buffer[self.scanned..]) {
                let mut message = self.buffer.split_to(self.scanned + at + 1);
                message.truncate(message.len() - 1);
                self.scanned = 0;
                if std::mem::take(&mut self.skipping) || message.len() > MAX_MESSAGE {
                    tracing::warn!(bound = MAX_MESSAGE, "chromium sent a DevTools message over the bound; dropped");
                    continue;
                }
                match Utf8Bytes::try_from(message.freeze()) {
                    Ok(text) => return Some(text),
                    Err(_) => {
                        tracing::warn!("chromium sent a DevTools message that is not UTF-8; dropped");
                        continue;
                    }
                }
            }
            self.scanned = self.buffer.len();
            if self.buffer.len() > MAX_MESSAGE {
                // Its end is still to come: the bytes so far are dropped now, the rest as they come.
                self.skipping = true;
                self.buffer.clear();
                self.scanned = 0;
            }
            self.buffer.reserve(READ_CHUNK);
            match self.pipe.read_buf(&mut self.buffer).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The browser's side of the pipes, played by the test: what the bridge writes to the
    /// browser, and a way to write as the browser.
    struct FakeBrowserSide {
        commands: pipe::Receiver,
        answers: pipe::Sender,
    }

    async fn bridge() -> (Bridge, FakeBrowserSide) {
        let (browser, node) = pipes().unwrap();
        let side = FakeBrowserSide {
            commands: pipe::Receiver::from_owned_fd(browser.reads).unwrap(),
            answers: pipe::Sender::from_owned_fd(browser.writes).unwrap(),
        };
        (Bridge::open(node).await.unwrap(), side)
    }

    async fn connect(url: &str) -> Result<WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>, String> {
        tokio_tungstenite::connect_async(url).await.map(|(socket, _)| socket).map_err(|error| error.to_string())
    }

    /// Reads from the browser's side until `count` NULs came.
    async fn read_commands(side: &mut FakeBrowserSide, count: usize) -> Vec<u8> {
        let mut read = Vec::new();
        while read.iter().filter(|&&byte| byte == 0).count() < count {
            let mut chunk = [0u8; 4096];
            let n = side.commands.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the pipe ended");
            read.extend_from_slice(&chunk[..n]);
        }
        read
    }

    #[tokio::test]
    async fn messages_cross_whole_both_ways_and_a_nul_ends_each_on_the_pipe() {
        let (bridge, mut side) = bridge().await;
        let mut socket = connect(bridge.url()).await.unwrap();
        socket.send(Message::text(r#"{"id":1,"method":"Browser.getVersion"}"#)).await.unwrap();
        socket.send(Message::text("{\"id\":2,\"text\":\"é\"}")).await.unwrap();
        assert_eq!(
            read_commands(&mut side, 2).await,
            b"{\"id\":1,\"method\":\"Browser.getVersion\"}\0{\"id\":2,\"text\":\"\xc3\xa9\"}\0"
        );
        // Two answers in one write and one answer split over three: each arrives whole.
        side.answers.write_all(b"{\"id\":1}\0{\"id\":2}\0{\"method\":").await.unwrap();
        side.answers.write_all(b"\"Target.targetCreated\"").await.unwrap();
        side.answers.write_all(b"}\0").await.unwrap();
        for expected in [r#"{"id":1}"#, r#"{"id":2}"#, r#"{"method":"Target.targetCreated"}"#] {
            let message = socket.next().await.unwrap().unwrap();
            assert_eq!(message, Message::text(expected));
        }
        // The browser's end closing (it exited) closes the WebSocket and ends the bridge.
        drop(side);
        match socket.next().await {
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {}
            Some(Ok(other)) => panic!("unexpected {other:?}"),
        }
        tokio::time::timeout(Duration::from_secs(5), async {
            while bridge.running() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the bridge ends with the browser");
    }

    #[tokio::test]
    async fn only_the_secret_path_connects_and_only_once() {
        let (bridge, _side) = bridge().await;
        let url = bridge.url().to_owned();
        let (base, secret) = url.rsplit_once('/').unwrap();
        assert_eq!(secret.len(), 43, "256 random bits, base64url");
        assert!(base.starts_with("ws://127.0.0.1:"), "loopback only: {url}");
        // Guesses are refused and do not use up the one connection.
        for guess in [format!("{base}/"), format!("{base}/{}", &secret[..42]), format!("{base}/{secret}x")] {
            let refused = connect(&guess).await.unwrap_err();
            assert!(refused.contains("404"), "{guess}: {refused}");
        }
        let _socket = connect(&url).await.unwrap();
        // Once connected, the port is closed: not even the right path gets a second connection.
        let port = url.trim_start_matches("ws://127.0.0.1:").split('/').next().unwrap().parse::<u16>().unwrap();
        let mut closed = false;
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).await.is_err() {
                closed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(closed, "the listener is closed after the one connection");
    }

    #[tokio::test]
    async fn silent_connections_do_not_keep_the_client_out() {
        let (bridge, mut side) = bridge().await;
        let address = bridge.url().trim_start_matches("ws://").split('/').next().unwrap().to_owned();
        // More idle connections than handshakes run at once: they are dropped or time out.
        let mut idle = Vec::new();
        for _ in 0..HANDSHAKES_AT_ONCE * 2 {
            idle.push(TcpStream::connect(&address).await.unwrap());
        }
        let mut socket = connect(bridge.url()).await.unwrap();
        socket.send(Message::text("{}")).await.unwrap();
        assert_eq!(read_commands(&mut side, 1).await, b"{}\0");
    }

    #[tokio::test]
    async fn a_message_over_the_bound_is_dropped_and_the_next_one_arrives() {
        let (answers, node_reads) = {
            let (reader, writer) = std::io::pipe().unwrap();
            (pipe::Sender::from_owned_fd(OwnedFd::from(writer)).unwrap(), reader)
        };
        let mut messages = Messages::new(pipe::Receiver::from_owned_fd(OwnedFd::from(node_reads)).unwrap());
        let writer = tokio::spawn(async move {
            let mut answers = answers;
            let chunk = vec![b'x'; 1024 * 1024];
            // Exactly at the bound, then one byte over it, then a small one.
            for _ in 0..MAX_MESSAGE / chunk.len() {
                answers.write_all(&chunk).await.unwrap();
            }
            answers.write_all(b"\0").await.unwrap();
            for _ in 0..MAX_MESSAGE / chunk.len() {
                answers.write_all(&chunk).await.unwrap();
            }
            answers.write_all(b"y\0{\"id\":3}\0").await.unwrap();
        });
        let at_bound = messages.next().await.unwrap();
        assert_eq!(at_bound.len(), MAX_MESSAGE);
        drop(at_bound);
        let next = messages.next().await.unwrap();
        assert!(next.as_str() == r#"{"id":3}"#, "the longer one was dropped; got {} bytes", next.len());
        writer.await.unwrap();
        assert!(messages.next().await.is_none(), "the pipe ended");
    }
}
