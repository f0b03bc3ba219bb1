"""``reprogate submit FILE --url URL --token TOKEN --rfp REF``: upload a bundle
to ``POST /api/v1/rfps/<id>/bundles/``.

The RFP is found by its reference through ``GET /api/v1/rfps/`` (limit/offset
pages; a UUID is used as the id directly). The upload is one
``multipart/form-data`` request with a ``Content-Length``, written with
``http.client`` chunk by chunk, so memory does not grow with the bundle; its
SHA-256 is computed on the way and compared with the receipt's.

Exit codes: 0 accepted; 1 the server refused the bundle (every problem is
printed); 2 anything else (usage, authentication, network, server errors).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO
from urllib.parse import quote, urlencode, urlsplit

from reprogate_cli.progress import Progress

CHUNK_SIZE: Final = 256 * 1024
PAGE_SIZE: Final = 100
MAX_PAGES: Final = 1000
MAX_RESPONSE_BYTES: Final = 16 * 1024 * 1024
TIMEOUT_SECONDS: Final = 300.0
REFUSED_STATUSES: Final = frozenset({400, 409, 413, 415, 422})


class SubmitError(Exception):
    """Not a verdict on the bundle: usage, network, authentication, server."""


@dataclass(frozen=True)
class Response:
    status: int
    body: Any  # parsed JSON, or None
    text: str


@dataclass(frozen=True)
class Outcome:
    """What the server said about the upload."""

    accepted: bool
    status: int
    receipt: dict[str, Any] = field(default_factory=dict)
    sent_sha256: str = ""


class Server:
    """A ReproGate server at ``url`` (``http(s)://host[:port][/prefix]``)."""

    def __init__(self, url: str, token: str, timeout: float = TIMEOUT_SECONDS):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SubmitError(f"--url must be http:// or https:// with a host: {url!r}")
        if parts.query or parts.fragment:
            raise SubmitError(f"--url must not have a query or fragment: {url!r}")
        self.url = url
        self.scheme = parts.scheme
        self.netloc = parts.netloc
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout

    def connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.netloc, timeout=self.timeout)
        return http.client.HTTPConnection(self.netloc, timeout=self.timeout)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}", "Accept": "application/json"}

    def get_json(self, path: str) -> Response:
        connection = self.connect()
        try:
            connection.request("GET", self.prefix + path, headers=self.headers())
            return _read(connection.getresponse())
        except OSError as error:
            raise SubmitError(f"cannot reach {self.url}: {error}") from None
        finally:
            connection.close()


def _read(response: http.client.HTTPResponse) -> Response:
    raw = response.read(MAX_RESPONSE_BYTES + 1)
    text = raw[:MAX_RESPONSE_BYTES].decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    return Response(response.status, body, text)


def describe(response: Response) -> list[str]:
    """The error body (the API's error shape) as lines: headline, then every problem."""
    body = response.body if isinstance(response.body, dict) else {}
    code = body.get("code") or f"http_{response.status}"
    message = body.get("message") or response.text.strip()[:200] or "no details"
    lines = [f"HTTP {response.status} {code}: {message}"]
    for problem in body.get("problems") or []:
        if not isinstance(problem, dict):
            continue
        where = f"{problem['path']}: " if problem.get("path") else ""
        lines.append(
            f"  {problem.get('code', '?')}  {where}{problem.get('message', '')}"
        )
    return lines


# --- RFP by reference -------------------------------------------------------------


def _page(server: Server, offset: int) -> tuple[list[Any], int | None]:
    query = urlencode({"limit": PAGE_SIZE, "offset": offset})
    response = server.get_json(f"/api/v1/rfps/?{query}")
    if response.status != 200:
        raise SubmitError("listing RFPs failed: " + "\n".join(describe(response)))
    body = response.body
    if isinstance(body, list):  # an unpaginated list
        return body, len(body)
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise SubmitError("listing RFPs gave an unexpected answer (no results list)")
    count = body.get("count")
    return body["results"], count if isinstance(count, int) else None


def resolve_rfp(server: Server, reference: str) -> str:
    """The id of the RFP whose ``reference`` is ``reference``."""
    try:
        return str(uuid.UUID(reference))
    except ValueError:
        pass
    offset = 0
    for _ in range(MAX_PAGES):
        results, count = _page(server, offset)
        for rfp in results:
            if isinstance(rfp, dict) and rfp.get("reference") == reference:
                if not rfp.get("id"):
                    raise SubmitError(f"the server lists {reference!r} without an id")
                return str(rfp["id"])
        offset += len(results)
        if not results or count is None or offset >= count:
            break
    raise SubmitError(f"no RFP with reference {reference!r} is visible to this token")


# --- the upload -------------------------------------------------------------------


def _filename(path: Path) -> str:
    """The file name for Content-Disposition, with quotes and controls escaped."""
    name = "".join(c if c.isprintable() else "_" for c in path.name) or "bundle"
    return name.replace("\\", "%5C").replace('"', "%22")


def multipart_parts(path: Path, boundary: str) -> tuple[bytes, bytes]:
    """The bytes before and after the file's content."""
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{_filename(path)}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return head, f"\r\n--{boundary}--\r\n".encode()


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            yield chunk


def _send(
    connection: http.client.HTTPConnection,
    path: Path,
    parts: tuple[bytes, bytes],
    progress: Progress,
) -> str:
    """Send the body; return the SHA-256 of the file's bytes sent."""
    hasher = hashlib.sha256()
    connection.send(parts[0])
    for chunk in _chunks(path):
        connection.send(chunk)
        hasher.update(chunk)
        progress.update(len(chunk))
    connection.send(parts[1])
    progress.finish()
    return hasher.hexdigest()


def upload(
    server: Server, rfp_id: str, path: Path, *, stderr: TextIO | None = None
) -> tuple[Response, str]:
    """POST the bundle; the server's answer and the SHA-256 sent."""
    size = path.stat().st_size
    boundary = f"reprogate-{secrets.token_hex(16)}"
    parts = multipart_parts(path, boundary)
    connection = server.connect()
    target = f"{server.prefix}/api/v1/rfps/{quote(rfp_id, safe='')}/bundles/"
    progress = Progress(size, label=f"uploading {path.name}", stream=stderr)
    try:
        connection.putrequest("POST", target, skip_accept_encoding=True)
        headers = {
            **server.headers(),
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Content-Length": str(len(parts[0]) + size + len(parts[1])),
        }
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        sent = _try_send(lambda: _send(connection, path, parts, progress))
        return _read(connection.getresponse()), sent
    except OSError as error:
        raise SubmitError(
            f"the upload to {server.url} failed after {progress.done} of {size} "
            f"bytes: {error}"
        ) from None
    finally:
        connection.close()


def _try_send(send: Callable[[], str]) -> str:
    """Send; if the server closed early (it refused the upload before reading
    it all), fall through so its answer can still be read."""
    try:
        return send()
    except (BrokenPipeError, ConnectionResetError):
        return ""


def submit(
    path: Path,
    *,
    url: str,
    token: str,
    rfp: str,
    stderr: TextIO | None = None,
) -> tuple[Outcome, Response]:
    if not path.is_file():
        raise SubmitError(f"{path} is not a file")
    server = Server(url, token)
    rfp_id = resolve_rfp(server, rfp)
    response, sent = upload(server, rfp_id, path, stderr=stderr)
    if response.status in (200, 201) and isinstance(response.body, dict):
        accepted = response.body.get("status") == "accepted"
        return Outcome(accepted, response.status, response.body, sent), response
    if response.status in REFUSED_STATUSES and isinstance(response.body, dict):
        return Outcome(False, response.status, {}, sent), response
    raise SubmitError(
        "the server did not take the bundle:\n" + "\n".join(describe(response))
    )


def render(outcome: Outcome, response: Response) -> tuple[list[str], int]:
    """Lines for stdout and the exit code."""
    receipt = outcome.receipt
    if outcome.accepted:
        lines = [f"{key}: {receipt.get(key, '')}" for key in ("id", "status", "sha256")]
        if outcome.sent_sha256 and receipt.get("sha256") != outcome.sent_sha256:
            lines.append(
                f"warning: the server's SHA-256 differs from the bytes sent "
                f"({outcome.sent_sha256})"
            )
            return lines, 2
        return lines, 0
    if receipt:  # 2xx, but not accepted
        lines = [f"{key}: {receipt.get(key, '')}" for key in ("id", "status", "sha256")]
        return lines + describe(response)[1:], 1
    return ["rejected", *describe(response)], 1
