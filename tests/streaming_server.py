"""A local HTTP server that cuts its answers: the streams' tests and the docs' stream
examples download from it.  It listens on 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CuttingServer:
    """Serves *body* at ``/file`` (honouring ``Range: bytes=N-``) and *lines* at
    ``/lines``; each of the first *cuts* answers stops after *cut_after* bytes
    of its body and closes the connection.  ``requests`` records the Range
    asked of each request (None for none)."""

    def __init__(self, body: bytes = b"", lines: list[str] = (), cuts: int = 2, cut_after: int = 0):
        self.body = body
        self.lines = "".join(f"{line}\n" for line in lines).encode()
        self.cuts = cuts
        self.cut_after = cut_after
        self.requests: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                server.answer(self)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True)

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        asked = handler.headers.get("Range")
        self.requests.append(asked)
        content = self.lines if handler.path == "/lines" else self.body
        start = int(asked.removeprefix("bytes=").rstrip("-")) if asked else 0
        part = content[start:]
        handler.send_response(206 if asked else 200)
        if asked:
            handler.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        handler.send_header("Content-Length", str(len(part)))
        handler.end_headers()
        if len(self.requests) <= self.cuts:
            cut = self.cut_after or max(1, len(part) // 3)
            handler.wfile.write(part[:cut])
            handler.wfile.flush()
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(2)  # the peer sees the body end short
            return
        handler.wfile.write(part)

    def __enter__(self) -> CuttingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


@contextlib.contextmanager
def cutting_server(**options: object) -> Iterator[CuttingServer]:
    """A CuttingServer running for the block."""
    with CuttingServer(**options) as server:  # type: ignore[arg-type]
        yield server
