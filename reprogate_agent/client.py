"""The agent's side of the server's runner API (``/api/v1/runner/``): JSON calls
with the host token, the bundle streamed down, outputs streamed up.

Connection errors, timeouts and 5xx answers are retried with exponential
backoff (``retries`` times, at most ``backoff_max`` seconds apart); any other
answer is final. 401 raises ``TokenRefused`` (the token is revoked or unknown:
the agent stops), 409 ``Conflict`` (the run moved on), other 4xx
``ServerRefused``. The token goes only to the configured server: a plain-HTTP
server is accepted on the loopback interface only, and the bundle URL the
server hands out must be a path on the same server."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final
from urllib.parse import quote, urlsplit

import urllib3

logger = logging.getLogger(__name__)

API_PREFIX: Final = "/api/v1/runner/"
CHUNK: Final = 1024 * 1024
LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})
RETRY_STATUSES: Final = frozenset({500, 502, 503, 504})
# Worth another try: no connection, a timeout, an answer broken off (not TLS
# refusals, raised as ``ClientError``: a wrong certificate stays wrong).
RETRIED: Final = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


class ClientError(Exception):
    """The server could not be asked, or said no."""


class Unreachable(ClientError):
    """No answer (or only 5xx) after every retry."""


@dataclass
class ServerRefused(ClientError):
    """A final 4xx answer: ``status``, the server's ``detail`` and ``code``."""

    status: int
    detail: str
    code: str = ""

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.detail}"


class TokenRefused(ServerRefused):
    """401: the host token is unknown or revoked."""


class Conflict(ServerRefused):
    """409: the run is not (or no longer) this host's attempt."""


def server_base(url: str) -> str:
    """``REPROGATE_SERVER_URL`` checked: https (http on loopback only), a host,
    no query, fragment or credentials; without its trailing slash."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{url!r} is not an https:// URL of the server.")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise ValueError(
            f"{url!r} is plain HTTP: the host token would cross the network in "
            "clear. Use https:// (plain http is accepted on 127.0.0.1 only)."
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError(f"{url!r} must have no credentials, query or fragment.")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


class RunnerClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        ca_file: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        retries: int = 5,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base = server_base(base_url)
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": "reprogate-agent",
        }
        self._http = urllib3.PoolManager(
            num_pools=2,
            maxsize=2,
            ca_certs=ca_file,
            cert_reqs="CERT_REQUIRED",
            timeout=urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            retries=False,
        )
        self.retries, self.backoff, self.backoff_max = retries, backoff, backoff_max
        self._sleep = sleep

    def close(self) -> None:
        self._http.clear()

    # -- the endpoints ----------------------------------------------------------------

    def hello(self, identity: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "hello", identity)

    def heartbeat(self, worker_name: str) -> None:
        self.call("POST", "heartbeat", {"worker_name": worker_name})

    def bye(self, worker_name: str) -> None:
        self.call("POST", "bye", {"worker_name": worker_name})

    def claim(self, run_id: int, attempt: int, worker_name: str) -> dict[str, Any]:
        """The run to execute; ``Conflict`` when it is not queued with ``attempt``."""
        body = {"attempt": attempt, "worker_name": worker_name}
        answer = self.call("POST", f"runs/{int(run_id)}/claim", body)
        run = answer.get("run")
        if not answer.get("claimed") or not isinstance(run, dict):
            raise Conflict(409, str(answer.get("detail") or "Not claimed."))
        return run

    def report(
        self, run_id: int, attempt: int, progress: float | None, log_tail: str | None
    ) -> bool:
        """False once the run was cancelled, re-queued or finished."""
        body = {"attempt": attempt, "progress": progress, "log_tail": log_tail}
        try:
            self.call("POST", f"runs/{int(run_id)}/report", body)
        except Conflict:
            return False
        return True

    def running(self, run_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"runs/{int(run_id)}/running", body)

    def finish(self, run_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"runs/{int(run_id)}/finish", body)

    def fail(self, run_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"runs/{int(run_id)}/fail", body)

    def download(
        self, url: str, consume: Callable[[dict[str, str], Iterator[bytes]], None]
    ) -> None:
        """GET the bundle at ``url`` (a path the server handed out) and hand its
        headers and chunks to ``consume``; after a connection error while
        reading, ``consume`` is called again with a fresh answer (it starts its
        copy afresh). What ``consume`` raises is not retried."""
        path = self._same_server_path(url)
        for wait in self._waits():
            try:
                response = self._request("GET", path, None, {}, stream=True)
            except RETRIED as error:
                logger.warning("GET %s failed: %s", path, error)
                self._pause(wait)
                continue
            if response is None:
                self._pause(wait)
                continue
            try:
                headers = {k.lower(): v for k, v in response.headers.items()}
                consume(headers, response.stream(CHUNK))
            except RETRIED as error:
                logger.warning("download of %s broke off: %s", path, error)
                response.close()  # never back to the pool half read
                self._pause(wait)
                continue
            except BaseException:
                response.close()
                raise
            response.release_conn()
            return
        raise Unreachable(f"GET {self.base}{path}: no complete answer after retries")

    def upload(
        self, run_id: int, attempt: int, relative: str, local: Path
    ) -> dict[str, Any]:
        """PUT one output file, streamed from the agent's own copy."""
        path = (
            f"{API_PREFIX}runs/{int(run_id)}/outputs/{quote(relative, safe='/')}"
            f"?attempt={int(attempt)}"
        )
        size = local.stat().st_size
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(size),
        }

        def body() -> IO[bytes]:
            return local.open("rb")

        return self._json_call("PUT", path, body, headers)

    def upload_artefact(
        self, run_id: int, attempt: int, name: str, local: Path
    ) -> dict[str, Any]:
        """PUT one runner artefact (``telemetry.bin`` …): the runner's own file."""
        path = (
            f"{API_PREFIX}runs/{int(run_id)}/artefacts/{quote(name, safe='')}"
            f"?attempt={int(attempt)}"
        )
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(local.stat().st_size),
        }
        return self._json_call("PUT", path, lambda: local.open("rb"), headers)

    # -- the machinery --------------------------------------------------------------

    def call(self, method: str, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        """A JSON call of ``endpoint`` (relative to the runner API)."""
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        return self._json_call(method, API_PREFIX + endpoint, lambda: data, headers)

    def _json_call(
        self,
        method: str,
        path: str,
        body: Callable[[], bytes | IO[bytes]],
        headers: dict[str, str],
    ) -> dict[str, Any]:
        for wait in self._waits():
            source = body()
            try:
                response = self._request(method, path, source, headers)
            except RETRIED as error:
                logger.warning("%s %s failed: %s", method, path, error)
                self._pause(wait)
                continue
            finally:
                if not isinstance(source, bytes):
                    source.close()
            if response is not None:
                return _json_of(response)
            self._pause(wait)
        raise Unreachable(
            f"{method} {self.base}{path}: no answer after {self.retries} retries"
        )

    def _waits(self) -> Iterator[float]:
        """The pause after each failed try: 0 after the last (not taken)."""
        for n in range(self.retries):
            yield min(self.backoff_max, self.backoff * 2**n)
        yield 0.0

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self._sleep(seconds)

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | IO[bytes] | None,
        headers: dict[str, str],
        *,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse | None:
        """The answer, or None for a 5xx worth another try; refusals raised."""
        try:
            response = self._send(method, path, body, headers, stream=stream)
        except urllib3.exceptions.SSLError as error:
            raise ClientError(f"TLS with {self.base} failed: {error}") from error
        if response.status in RETRY_STATUSES:
            logger.warning("%s %s: HTTP %s", method, path, response.status)
            response.drain_conn()
            response.release_conn()
            return None
        if not 200 <= response.status < 300:
            if stream:
                response.read(cache_content=True)
            _refuse(response)
        return response

    def _send(
        self,
        method: str,
        path: str,
        body: bytes | IO[bytes] | None,
        headers: dict[str, str],
        *,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """The transport: one HTTP request to the server, its answer as it is."""
        return self._http.request(
            method,
            self.base + path,
            body=body,
            headers={**self._headers, **headers},
            preload_content=not stream,
            redirect=False,
        )

    def _same_server_path(self, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path.startswith(API_PREFIX):
            raise ClientError(f"The server handed out a bundle URL {url!r} of its own.")
        return parts.path + (f"?{parts.query}" if parts.query else "")


def _json_of(response: urllib3.BaseHTTPResponse) -> dict[str, Any]:
    try:
        document = json.loads(response.data or b"{}")
    except ValueError as error:
        raise ClientError(f"HTTP {response.status}: not JSON ({error})") from error
    if not isinstance(document, dict):
        raise ClientError(f"HTTP {response.status}: not a JSON object")
    return document


def _refuse(response: urllib3.BaseHTTPResponse) -> None:
    try:
        document = json.loads(response.data or b"{}")
    except ValueError:
        document = {}
    if not isinstance(document, dict):
        document = {}
    detail = str(document.get("detail") or document.get("message") or "")[:2000]
    code = str(document.get("code") or "")
    status = response.status
    kind = {401: TokenRefused, 409: Conflict}.get(status, ServerRefused)
    raise kind(status, detail or f"HTTP {status}", code)
