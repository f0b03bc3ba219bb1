"""``reprogate submit`` against a small loopback server that answers like the
API contract and checks the multipart body it receives."""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from reprogate_cli import submit
from reprogate_cli.main import main
from reprogate_cli.progress import Progress

TOKEN = "t0ken"
RFPS = [
    {"id": "0b6b3c58-0000-4000-8000-000000000001", "reference": "RFP-OLD-1"},
    {"id": "0b6b3c58-0000-4000-8000-000000000002", "reference": "RFP-OLD-2"},
    {"id": "0b6b3c58-0000-4000-8000-000000000003", "reference": "RFP-DEMO-1"},
]
DEMO_ID = RFPS[2]["id"]
PROBLEMS = {
    "code": "bundle_rejected",
    "message": "The bundle was rejected.",
    "problems": [
        {"code": "digest_mismatch", "message": "SHA-256 differs.", "path": "a.json"},
        {"code": "signature_key_not_allowed", "message": "Unknown key."},
    ],
}


@dataclass
class FakeApi:
    """What the server answers (``reply``) and what it received (``uploads``)."""

    url: str = ""
    reply: str = "accept"  # accept | reject | wrong-sha
    page_cap: int = 2  # serve at most this many RFPs per page, whatever the limit
    uploads: list[dict[str, Any]] = field(default_factory=list)
    listings: list[str] = field(default_factory=list)


def parse_multipart(content_type: str, body: bytes) -> tuple[str, bytes]:
    """The single part's headers and content, checking the framing exactly."""
    boundary = re.fullmatch(r"multipart/form-data; boundary=(\S+)", content_type)
    assert boundary, content_type
    delimiter = b"--" + boundary.group(1).encode()
    assert body.startswith(delimiter + b"\r\n")
    assert body.endswith(b"\r\n" + delimiter + b"--\r\n")
    inner = body[len(delimiter) + 2 : -(len(delimiter) + 6)]
    headers, _, content = inner.partition(b"\r\n\r\n")
    return headers.decode(), content


class Handler(BaseHTTPRequestHandler):
    api: FakeApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorised(self) -> bool:
        if self.headers.get("Authorization") == f"Token {TOKEN}":
            return True
        self.answer(401, {"code": "not_authenticated", "message": "Bad token."})
        return False

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path != "/api/v1/rfps/" or not self.authorised():
            return None if url.path == "/api/v1/rfps/" else self.answer(404, {})
        self.api.listings.append(url.query)
        query = parse_qs(url.query)
        offset, limit = int(query["offset"][0]), int(query["limit"][0])
        page = RFPS[offset : offset + min(limit, self.api.page_cap)]
        return self.answer(200, {"count": len(RFPS), "next": None, "results": page})

    def do_POST(self) -> None:
        if not self.authorised():
            return
        length = int(self.headers["Content-Length"])
        headers, content = parse_multipart(
            self.headers["Content-Type"], self.rfile.read(length)
        )
        self.api.uploads.append(
            {
                "path": self.path,
                "headers": headers,
                "content": content,
                "chunked": "Transfer-Encoding" in self.headers,
            }
        )
        digest = hashlib.sha256(content).hexdigest()
        if self.api.reply == "reject":
            return self.answer(400, PROBLEMS)
        if self.api.reply == "wrong-sha":
            digest = "0" * 64
        return self.answer(201, {"id": "b-1", "status": "accepted", "sha256": digest})


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi()
    handler = type("BoundHandler", (Handler,), {"api": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / 'acme "final".tar.gz'
    path.write_bytes(bytes(range(256)) * 4000 + b"\r\n--tail")  # > one chunk
    return path


def run(api: FakeApi, bundle: Path, *extra: str, rfp: str = "RFP-DEMO-1") -> int:
    return main(
        [
            "submit",
            str(bundle),
            "--url",
            api.url,
            "--token",
            TOKEN,
            "--rfp",
            rfp,
            *extra,
        ]
    )


def test_submit_uploads_the_exact_bytes_and_prints_the_receipt(
    api: FakeApi, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run(api, bundle)

    [upload] = api.uploads
    sha256 = hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert status == 0
    assert upload["path"] == f"/api/v1/rfps/{DEMO_ID}/bundles/"
    assert upload["content"] == bundle.read_bytes()
    assert capsys.readouterr().out.splitlines() == [
        "id: b-1",
        "status: accepted",
        f"sha256: {sha256}",
    ]


def test_the_file_part_is_named_file_with_a_safe_file_name(
    api: FakeApi, bundle: Path
) -> None:
    run(api, bundle)

    headers = api.uploads[0]["headers"]
    assert 'Content-Disposition: form-data; name="file"; ' in headers
    assert 'filename="acme %22final%22.tar.gz"' in headers
    assert api.uploads[0]["chunked"] is False  # sent with a Content-Length


def test_the_reference_is_found_on_a_later_page(api: FakeApi, bundle: Path) -> None:
    run(api, bundle)

    assert api.listings == ["limit=100&offset=0", "limit=100&offset=2"]


def test_an_rfp_id_is_used_without_listing(api: FakeApi, bundle: Path) -> None:
    assert run(api, bundle, rfp=DEMO_ID) == 0

    assert api.listings == []
    assert api.uploads[0]["path"] == f"/api/v1/rfps/{DEMO_ID}/bundles/"


def test_a_rejection_prints_every_problem_and_exits_1(
    api: FakeApi, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply = "reject"

    status = run(api, bundle)

    assert status == 1
    assert capsys.readouterr().out.splitlines() == [
        "rejected",
        "HTTP 400 bundle_rejected: The bundle was rejected.",
        "  digest_mismatch  a.json: SHA-256 differs.",
        "  signature_key_not_allowed  Unknown key.",
    ]


def test_an_unknown_reference_exits_2_without_uploading(
    api: FakeApi, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(api, bundle, rfp="RFP-NOPE") == 2

    assert "no RFP with reference 'RFP-NOPE'" in capsys.readouterr().err
    assert api.uploads == []


def test_a_bad_token_exits_2_with_the_server_message(
    api: FakeApi, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "submit",
            str(bundle),
            "--url",
            api.url,
            "--token",
            "wrong",
            "--rfp",
            "RFP-DEMO-1",
        ]
    )

    assert status == 2
    assert "HTTP 401 not_authenticated: Bad token." in capsys.readouterr().err


def test_a_receipt_for_other_bytes_exits_2(
    api: FakeApi, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.reply = "wrong-sha"

    assert run(api, bundle) == 2
    assert "differs from the bytes sent" in capsys.readouterr().out


def test_an_unreachable_server_exits_2(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "submit",
            str(bundle),
            "--url",
            "http://127.0.0.1:9",
            "--token",
            TOKEN,
            "--rfp",
            "RFP-DEMO-1",
        ]
    )

    assert status == 2
    assert "cannot reach http://127.0.0.1:9" in capsys.readouterr().err


def test_a_missing_token_or_file_exits_2(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REPROGATE_TOKEN", raising=False)

    no_token = main(["submit", str(tmp_path), "--url", api.url, "--rfp", "R"])
    no_file = run(api, tmp_path / "missing.tar.gz")

    assert (no_token, no_file) == (2, 2)


def test_the_file_is_streamed_in_chunks(
    api: FakeApi, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    original = http.client.HTTPConnection.send

    def spy(self: http.client.HTTPConnection, data: Any) -> None:
        sizes.append(len(data))
        original(self, data)

    monkeypatch.setattr(http.client.HTTPConnection, "send", spy)

    assert run(api, bundle) == 0
    assert max(sizes) <= max(submit.CHUNK_SIZE, 4096)
    assert sum(sizes) > bundle.stat().st_size


def test_progress_is_printed_as_lines_when_stderr_is_not_a_terminal(
    api: FakeApi, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(api, bundle)

    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"uploading {bundle.name}: ")
    assert lines[-1] == f"uploading {bundle.name}: 100% " + (
        f"({bundle.stat().st_size} of {bundle.stat().st_size} bytes)"
    )
    assert len(lines) <= 11


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_one_bar_on_a_terminal() -> None:
    screen = Terminal()
    progress = Progress(2048, label="uploading b", stream=screen)

    progress.update(1024)
    progress.update(1024)  # within 0.1 s: not drawn
    progress.finish()

    text = screen.getvalue()
    assert text.startswith("\ruploading b [###############               ]  50%")
    assert (
        "\ruploading b [##############################] 100% 2.0 KiB / 2.0 KiB" in text
    )
    assert text.count("\r") == 2
    assert text.endswith("\n")
    assert text.count("\n") == 1
