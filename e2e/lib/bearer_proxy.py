"""Loopback-only reverse proxy that adds `Authorization: Bearer <token>` and changes nothing else.

Why this exists: `@modelcontextprotocol/conformance` has no option for request headers, and
`clawmcp node` requires the bearer token on every request. Rather than adding any auth bypass
to the product, the conformance run talks to this proxy, which forwards each request to the
node with the token added. Everything else is forwarded as sent -- method, path, body, and in
particular `Origin`, `Host`, `Sec-Fetch-*` -- so the node's browser/DNS-rebinding gate sees
exactly what the conformance client sent. The one rewrite: a `Host` naming the proxy's own
loopback authority (`127.0.0.1:<proxy port>` or `localhost:<proxy port>`) gets the node's port,
as if the client had connected to the node directly; any other `Host` (e.g. a rebinding
`evil.example.com`) passes through untouched.

It binds 127.0.0.1 on an ephemeral port, refuses non-loopback peers, prints `PORT <n>` on
stdout once listening, and exits on SIGTERM/SIGINT. Python stdlib only.

Usage: bearer_proxy.py --upstream-port N --token-file PATH
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# RFC 9110 section 7.6.1 hop-by-hop fields: they describe one connection, so a proxy must
# not forward them. Authorization is replaced, Content-Length recomputed.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}
# The node caps bodies at 4 MiB; the proxy allows more so the node, not the proxy, decides.
MAX_BODY_BYTES = 16 * 1024 * 1024
UPSTREAM_TIMEOUT_SECONDS = 120


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ProxyServer

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"[bearer-proxy] {self.address_string()} {format % args}\n")

    def read_body(self) -> bytes | None:
        """The request body, de-chunked; None if it is over the cap."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers are dropped (hop-by-hop here)
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length <= MAX_BODY_BYTES else None

    def forward(self) -> None:
        if not ipaddress.ip_address(self.client_address[0]).is_loopback:
            self.reply(403, b"loopback only")
            return
        body = self.read_body()
        if body is None:
            self.close_connection = True
            self.reply(413, b"request body too large for the test proxy")
            return
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=UPSTREAM_TIMEOUT_SECONDS)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                lower = name.lower()
                if lower in HOP_BY_HOP or lower in ("authorization", "content-length"):
                    continue
                if lower == "host":
                    value = self.server.map_host(value)
                upstream.putheader(name, value)
            upstream.putheader("Authorization", f"Bearer {self.server.token}")
            if body or self.command in ("POST", "PUT", "PATCH"):
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body or None)
            response = upstream.getresponse()
            payload = response.read()
        except OSError as exc:
            self.reply(502, f"upstream error: {exc}".encode())
            return
        finally:
            upstream.close()
        # send_response_only: the upstream's own Server/Date headers are forwarded instead.
        self.log_request(response.status)
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def reply(self, status: int, text: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = forward


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream_port: int, token: str) -> None:
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream_port = upstream_port
        self.token = token
        port = self.server_address[1]
        self.own_authorities = {f"127.0.0.1:{port}", f"localhost:{port}"}

    def map_host(self, host: str) -> str:
        if host.lower() in self.own_authorities:
            return f"{host.rsplit(':', 1)[0]}:{self.upstream_port}"
        return host


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--token-file", type=Path, required=True)
    args = parser.parse_args()
    token = args.token_file.read_text().strip()
    if not token:
        parser.error(f"{args.token_file} is empty")
    server = ProxyServer(args.upstream_port, token)
    # SystemExit from the handler unwinds serve_forever in the main thread.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
