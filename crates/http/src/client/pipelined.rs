//! HTTP/1.1 pipelining (RFC 9112 §9.3.2) for a burst of requests that a server must take one
//! after another, in order: the file channel's `openclaw/files/input` frames, where input out of
//! order ends the transfer (so they cannot go on parallel connections) and a 1 MiB chunk is 128
//! requests. One exchange each made the client and the node take turns for every frame; written
//! back to back on one connection, the node reads many in one read and answers while the client
//! writes the next.
//!
//! hyper's client connection keeps one request in flight, so this writes the requests and reads
//! the answers itself: each request has exactly the head [`McpClient::request_to`] gives every
//! message, each answer's head is read by `httparse`. An answer must be one JSON frame with a
//! `Content-Length` (how the node answers a request that streams nothing); anything else (an event
//! stream, a chunked body, a closed connection) fails the burst with what it was. The burst is
//! bounded by the client's timeout, and each answer by its response cap.

use bytes::{Bytes, BytesMut};
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::{Answer, request_frame_around};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::{ClientError, McpClient, Reply, first_line};

/// The largest response head read (status line and headers).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Headers read from one response head.
const MAX_HEADERS: usize = 64;

impl McpClient {
    /// Sends `requests` (ids, and params as JSON text the caller wrote: put in as they are, not
    /// parsed again) of `method` on one new connection, each written without waiting for the
    /// answers before it, and returns their answers in order. Each request is made as it is
    /// written (the server takes the first while the rest are being made). The first failure ends
    /// the burst: the requests after it may or may not have been taken.
    pub async fn request_pipelined<P: AsRef<str>>(
        &self,
        method: &str,
        requests: impl IntoIterator<Item = (RequestId, P)>,
    ) -> Result<Vec<Answer>, ClientError> {
        let mut requests = requests.into_iter().peekable();
        if requests.peek().is_none() {
            return Ok(Vec::new());
        }
        // The write half lives until the last answer is read: dropping it half-closes the
        // connection, which a server may take as the client gone (hyper's does, dropping the
        // request it is still answering).
        let (reader, mut writer) = self.connect_tcp().await?.into_split();
        // The writer tells the reader each request it wrote (or why it stopped), in order; the
        // channel closing after the last is the end of the burst.
        let (written, sent) = tokio::sync::mpsc::unbounded_channel();
        // The answers decide: all of them read means every request was written; an answer that
        // failed ends the burst at once, the writing with it.
        let exchange = async {
            let writing = self.write_all(&mut writer, method, requests, written);
            let reading = self.read_answers(reader, sent);
            tokio::pin!(writing, reading);
            let mut wrote = false;
            loop {
                tokio::select! {
                    () = &mut writing, if !wrote => wrote = true,
                    answers = &mut reading => return answers,
                }
            }
        };
        self.within_timeout(exchange).await
    }

    /// One request as it goes on the wire: the head every message has, and the body.
    fn serialized(&self, body: &str) -> Result<Bytes, ClientError> {
        let request = self.request_to(body.as_bytes())?;
        let mut wire = BytesMut::with_capacity(body.len() + 512);
        let path = request.uri_ref().map(|uri| uri.to_string()).unwrap_or_else(|| "/".into());
        wire.extend_from_slice(format!("POST {path} HTTP/1.1\r\n").as_bytes());
        for (name, value) in request.headers_ref().into_iter().flatten() {
            wire.extend_from_slice(name.as_str().as_bytes());
            wire.extend_from_slice(b": ");
            wire.extend_from_slice(value.as_bytes());
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
        wire.extend_from_slice(body.as_bytes());
        Ok(wire.freeze())
    }

    /// Serializes and writes each request, telling the reader its id; stops at the first
    /// failure, telling the reader why.
    async fn write_all<P: AsRef<str>>(
        &self,
        writer: &mut OwnedWriteHalf,
        method: &str,
        requests: impl Iterator<Item = (RequestId, P)>,
        written: UnboundedSender<Result<RequestId, ClientError>>,
    ) {
        let mut writer = BufWriter::with_capacity(64 * 1024, writer);
        for (id, params) in requests {
            let wire = match self.serialized(&request_frame_around(&id, method, params.as_ref())) {
                Ok(wire) => wire,
                Err(error) => {
                    let _ = written.send(Err(error));
                    return;
                }
            };
            if let Err(error) = writer.write_all(&wire).await {
                let _ = written.send(Err(self.write_failed(&error)));
                return;
            }
            if written.send(Ok(id)).is_err() {
                return;
            }
        }
        if let Err(error) = writer.flush().await {
            let _ = written.send(Err(self.write_failed(&error)));
        }
    }

    fn write_failed(&self, error: &std::io::Error) -> ClientError {
        ClientError::Connect {
            endpoint: self.endpoint(),
            reason: format!("a pipelined request could not be written: {error}"),
        }
    }

    /// The answer to each request the writer wrote, in order.
    async fn read_answers(
        &self,
        mut reader: OwnedReadHalf,
        mut sent: UnboundedReceiver<Result<RequestId, ClientError>>,
    ) -> Result<Vec<Answer>, ClientError> {
        let mut buffer = BytesMut::with_capacity(64 * 1024);
        let mut answers = Vec::new();
        while let Some(id) = sent.recv().await {
            let id = id?;
            let index = answers.len();
            let ended = |how: &str| ClientError::Connect {
                endpoint: self.endpoint(),
                reason: format!("the connection {how} after answering {index} of the pipelined requests"),
            };
            let mut read_more = async |buffer: &mut BytesMut| match reader.read_buf(buffer).await {
                Ok(0) => Err(ended("closed")),
                Ok(_) => Ok(()),
                Err(error) => Err(ended(&format!("failed ({error})"))),
            };
            let (status, length, head) = loop {
                if let Some(head) = self.response_head(&buffer)? {
                    break head;
                }
                if buffer.len() > MAX_HEAD_BYTES {
                    return Err(self.bad_response(format!("a response head is longer than {MAX_HEAD_BYTES} bytes")));
                }
                read_more(&mut buffer).await?;
            };
            if length > self.max_response_bytes {
                return Err(ClientError::TooLarge { endpoint: self.endpoint(), limit: self.max_response_bytes });
            }
            let _ = buffer.split_to(head);
            while buffer.len() < length {
                buffer.reserve(length - buffer.len());
                read_more(&mut buffer).await?;
            }
            let body = buffer.split_to(length).freeze();
            match status {
                200..=299 => answers.push(self.answer_of(&id, Reply::Frame(body), &mut |_| {}).await?),
                401 => return Err(ClientError::Unauthorized { endpoint: self.endpoint() }),
                _ => return Err(ClientError::Http { endpoint: self.endpoint(), status, body: first_line(&body) }),
            }
        }
        Ok(answers)
    }

    /// The status, body length and head length of the response head at the start of `buffer`,
    /// once it is all there.
    fn response_head(&self, buffer: &[u8]) -> Result<Option<(u16, usize, usize)>, ClientError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let head = match response.parse(buffer) {
            Ok(httparse::Status::Complete(head)) => head,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(error) => return Err(self.bad_response(format!("a pipelined answer's head is not HTTP/1.1: {error}"))),
        };
        let status = response.code.unwrap_or_default();
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value))
        };
        if header("transfer-encoding").is_some() {
            return Err(
                self.bad_response("a pipelined answer is streamed (Transfer-Encoding), not one JSON frame".into())
            );
        }
        if header("content-type").is_some_and(|kind| kind.trim_start().starts_with("text/event-stream")) {
            return Err(self.bad_response("a pipelined answer is an event stream, not one JSON frame".into()));
        }
        let length = match header("content-length").map(|value| value.trim().parse::<usize>()) {
            Some(Ok(length)) => length,
            // 204 and 304 have no body; anything else must say its length.
            None if status == 204 => 0,
            _ => return Err(self.bad_response("a pipelined answer has no valid Content-Length".into())),
        };
        Ok(Some((status, length, head)))
    }
}
