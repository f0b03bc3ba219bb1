"""A stand-in for the runner API, for the client's error handling only (the
real server is in ``test_agent_end_to_end``): each path answers from its own
script of replies, the last one repeated; every request is recorded."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    # Send the headers, then close the connection before the body is complete.
    cut: bool = False


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.answers: dict[str, Callable[[], Reply]] = {}
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                fake.seen.append(
                    Seen(self.command, self.path, dict(self.headers.items()), body)
                )
                if path in fake.answers:
                    reply = fake.answers[path]()
                elif "/artefacts/" in path and path not in fake.scripts:
                    reply = Reply(201, {"name": path.rsplit("/", 1)[-1]})
                else:
                    script = fake.scripts.get(path) or [Reply(404, {"detail": "no"})]
                    reply = script.pop(0) if len(script) > 1 else script[0]
                data = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                headers = {"Content-Length": str(len(data)), **reply.headers}
                if not isinstance(reply.body, bytes):
                    headers.setdefault("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if reply.cut:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        port = self.httpd.server_address[1]
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        # The certificate names localhost; plain HTTP stays on 127.0.0.1.
        self.url = f"https://localhost:{port}" if tls else f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def script(self, endpoint: str, *replies: Reply) -> None:
        """Replies for ``/api/v1/runner/<endpoint>``, in order."""
        self.scripts[f"/api/v1/runner/{endpoint}"] = list(replies)

    def answer(self, endpoint: str, reply: Callable[[], Reply]) -> None:
        """``reply()`` answers each request of ``/api/v1/runner/<endpoint>``."""
        self.answers[f"/api/v1/runner/{endpoint}"] = reply

    def calls(self, endpoint: str) -> list[Seen]:
        path = f"/api/v1/runner/{endpoint}"
        return [s for s in self.seen if urlsplit(s.path).path == path]

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def serve() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server
