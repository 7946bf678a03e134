//! The physical floor `bench/node.sh` measures `clawmcp node` against.
//!
//! A hyper 1.x HTTP/1.1 server on 127.0.0.1 that reads each request body in full and answers
//! every request with the same JSON-RPC result. It does what any loopback MCP server must do
//! (accept, parse HTTP, read the body, write a JSON response, keep the connection alive) and
//! nothing else: no auth, no JSON parsing, no dispatch. The benchmark reports ours/floor ratios,
//! so the number that matters is how close the product gets to this.
//!
//! Usage: `clawmcp-bench-floor PORT [BODY_FILE]` (port 0 picks a free one). Answers with the
//! bytes of BODY_FILE if given (the benchmark passes our own `tools/list` answer, so the floor
//! sends as many bytes as we do), else with a `ping` result. Prints `PORT <n>` on stdout once
//! listening. Runs until killed.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// What `ping` answers in JSON-RPC: the smallest successful response.
const PING_RESPONSE: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

async fn answer(request: Request<Incoming>, body: Bytes) -> Result<Response<Full<Bytes>>, hyper::Error> {
    // Read the body like a real server must; the floor skips only what comes after.
    request.into_body().collect().await?;
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Serve connections from `listener` until the process ends, answering every request with `body`.
async fn serve(listener: TcpListener, body: Bytes) -> Infallible {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else { continue };
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, body.clone()));
            // A client resetting its connection mid-benchmark is normal; nothing to report.
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = match args.next().map(|arg| arg.parse()) {
        Some(Ok(port)) => port,
        _ => {
            return Err(std::io::Error::other("usage: clawmcp-bench-floor PORT [BODY_FILE] (port 0 picks a free one)"));
        }
    };
    let body = match args.next() {
        Some(path) => Bytes::from(std::fs::read(path)?),
        None => Bytes::from_static(PING_RESPONSE),
    };
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    #[expect(clippy::print_stdout, reason = "the bound port on stdout is this tool's interface to bench/node.sh")]
    {
        println!("PORT {}", listener.local_addr()?.port());
    }
    match serve(listener, body).await {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn answers_a_post_with_the_fixed_json_and_keeps_the_connection() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Bytes::from_static(PING_RESPONSE)));

        let mut stream = TcpStream::connect(addr).await.unwrap();
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        let request = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        // Two requests on one connection: the second proves keep-alive works.
        for _ in 0..2 {
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut received = Vec::new();
            while !received.ends_with(PING_RESPONSE) {
                let mut chunk = [0u8; 512];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "connection closed after {:?}", String::from_utf8_lossy(&received));
                received.extend_from_slice(&chunk[..n]);
            }
            let text = String::from_utf8_lossy(&received);
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
            assert!(text.contains("content-type: application/json\r\n"), "{text}");
        }
    }
}
