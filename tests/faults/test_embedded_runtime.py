"""The embedded runtime as ``scripts/run`` starts it (``config.supervise``: the web
server, two workers and beat) on a var directory of its own, migrated and seeded
with the demo data, on a file system of its own (a tmpfs, mounted for the module;
as root, else with ``sudo -n``).

- The console: one line per process started, then the address; the processes'
  output is in their logs, e-mails are files, both under the var directory.
- The web server SIGKILLed: the supervisor starts it again and ``/healthz``
  answers 200 within 30 s; the workers are left alone.
- The var directory's disk filled up (SQLite database included): pages of a
  logged-in user, API reads with a token never used before (its ``last_used_at``
  cannot be written) and a bundle download answer 200; an upload and a login
  answer 507 saying the disk is full; ``/healthz`` answers 503 naming the disk.
  Once the space is freed the same upload is accepted (nothing of the refused one
  was kept), the login works, ``/healthz`` is 200 and ``escrow_verify`` is clean.

Times to serve again are printed (``pytest -s``)."""

from __future__ import annotations

import contextlib
import errno
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.faults.support import (
    free_port,
    healthz,
    mount,
    report,
    unavailable,
    wait_for,
)
from tests.processes import PROJECT_DIR, Process

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]

VAR_BYTES = 48 * 1024 * 1024
MIN_FREE_MB = 4  # REPROGATE_MIN_FREE_DISK_MB: the empty tmpfs passes, a full one not
PASSWORD = "reprogate-demo"  # the demo accounts' documented password
BUILD_UPLOAD = """
import datetime as dt
from pathlib import Path
from artifacts.lib.bundle_build import build_bundle
from portal.demo import EXAMPLES_DIR, demo_key
build_bundle(EXAMPLES_DIR / "acme-flash", key=demo_key("acme-flash"),
             output=Path(OUTPUT), rfp="RFP-DEMO-1", vendor="acme-flash",
             created=dt.datetime.now(dt.UTC))
"""


@dataclass
class Embedded:
    var_dir: Path
    port: int
    env: dict[str, str]
    supervisor: Process
    upload: Path  # a new signed bundle of vendor-a's for RFP-DEMO-1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def programs(self) -> dict[str, Any]:
        status = json.loads((self.var_dir / "supervisor.json").read_text())
        return dict(status["programs"])

    def manage(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *argv],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


def _environment(var_dir: Path, port: int) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "CELERY_", "DATABASE_", "REPROGATE_"))
    }
    env.update(
        REPROGATE_EMBEDDED="True",
        REPROGATE_VAR_DIR=str(var_dir),
        REPROGATE_PORT=str(port),
        REPROGATE_MIN_FREE_DISK_MB=str(MIN_FREE_MB),
        DJANGO_SECRET_KEY="embedded-runtime-fault-test-" + "k" * 40,
    )
    return env


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Embedded]:
    root = tmp_path_factory.mktemp("embedded")
    var_dir = root / "var"
    var_dir.mkdir()
    options = f"size={VAR_BYTES},mode=0700"
    if not mount(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(var_dir)]):
        unavailable("cannot mount a tmpfs for the var directory (not root, no sudo)")
    port = free_port()
    env = _environment(var_dir, port)
    argv = [sys.executable, "-m", "config.supervise", "--port", str(port)]
    argv += ["--var-dir", str(var_dir), "--ready-note", "demo accounts"]
    supervisor = Process("supervisor", argv, env, root / "console.log")
    here = Embedded(var_dir, port, env, supervisor, root / "upload.tar.gz")
    try:
        for command in (
            ["migrate", "--no-input", "--verbosity=0"],
            ["seed_demo", "--verbosity=0"],
            ["shell", "-c", BUILD_UPLOAD.replace("OUTPUT", repr(str(here.upload)))],
        ):
            done = here.manage(*command)
            assert done.returncode == 0, done.stdout + done.stderr
        supervisor.start()
        wait_for(lambda: _healthy(port), 150, supervisor.tail, step=0.5)
        yield here
    finally:
        supervisor.stop()
        with contextlib.suppress(OSError, ValueError, KeyError):
            for entry in here.programs().values():  # the supervisor was killed
                with contextlib.suppress(ProcessLookupError, TypeError):
                    os.killpg(entry["pid"], signal.SIGKILL)
        mount(["umount", "-l", str(var_dir)])


def _healthy(port: int) -> bool:
    answer = healthz(port)
    return answer is not None and answer[0] == 200


def _request(
    url: str,
    *,
    opener: urllib.request.OpenerDirector | None = None,
    token: str | None = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}))  # noqa: S310 - loopback
    if token is not None:
        request.add_header("Authorization", f"Token {token}")
    try:
        with (opener or urllib.request.build_opener()).open(
            request, timeout=60
        ) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _log_in(url: str, username: str) -> tuple[int, str, urllib.request.OpenerDirector]:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, page = _request(f"{url}/accounts/login/", opener=opener)
    assert status == 200
    found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found, page[:2000]
    form = {"csrfmiddlewaretoken": found.group(1).decode(), "username": username}
    form["password"] = PASSWORD
    status, page = _request(
        f"{url}/accounts/login/",
        opener=opener,
        data=urllib.parse.urlencode(form).encode(),
        headers={"Referer": f"{url}/accounts/login/"},
    )
    return status, page.decode(errors="replace"), opener


def _token(url: str, username: str) -> str:
    body = json.dumps({"username": username, "password": PASSWORD}).encode()
    headers = {"Content-Type": "application/json"}
    status, answer = _request(f"{url}/api/v1/auth/token/", data=body, headers=headers)
    assert status in (200, 201), answer
    return str(json.loads(answer)["token"])


def _upload(url: str, token: str, rfp_id: str, archive: Path) -> tuple[int, Any]:
    boundary = uuid.uuid4().hex
    body = b"".join(
        [
            f"--{boundary}\r\n".encode(),
            b'Content-Disposition: form-data; name="file"; filename="b.tar.gz"\r\n',
            b"Content-Type: application/gzip\r\n\r\n",
            archive.read_bytes(),
            f"\r\n--{boundary}--\r\n".encode(),
        ]
    )
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    status, answer = _request(
        f"{url}/api/v1/rfps/{rfp_id}/bundles/", token=token, data=body, headers=headers
    )
    return status, json.loads(answer)


def _fill(path: Path) -> None:
    """Write ``path`` until its file system has no byte left."""
    with path.open("wb", buffering=0) as handle:
        for chunk in (1024 * 1024, 4096):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * chunk)
    with pytest.raises(OSError, match="No space left") as full:
        (path.parent / "one-more").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC


def test_the_console_ends_with_the_address_and_mails_and_logs_are_files(
    embedded: Embedded,
) -> None:
    mail = embedded.var_dir / "mail"

    def mails() -> str:
        return "".join(path.read_text() for path in mail.glob("*.log"))

    # The demo's invitations, sent by the worker. Django's file back-end creates a
    # message's file when it opens its connection and writes the message after, so
    # wait for the text, not for the file.
    wait_for(
        lambda: "invites your organisation to bid" in mails(),
        60,
        embedded.supervisor.tail,
    )

    ready = f"==> ReproGate is ready at {embedded.url} — demo accounts; logs in"
    # said once the web answers, which may come after the worker's first e-mails
    wait_for(lambda: ready in embedded.supervisor.text(), 60, embedded.supervisor.tail)
    console = embedded.supervisor.text()
    assert f"e-mails in {mail}/" in console
    for noise in ("Subject:", "[tasks]", "celery beat", "Starting development"):
        assert noise not in console
    logs = embedded.var_dir / "logs"
    assert "[tasks]" in (logs / "worker.log").read_text()
    assert "Starting development server" in (logs / "web.log").read_text()


@pytest.mark.timeout(120)
def test_a_killed_web_server_serves_again_within_30_seconds(
    embedded: Embedded,
) -> None:
    before = embedded.programs()

    os.kill(before["web"]["pid"], signal.SIGKILL)
    killed = time.monotonic()

    def served_by_a_new_web() -> bool:
        answer = healthz(embedded.port)
        return (
            answer is not None
            and answer[0] == 200
            and answer[1]["checks"]["processes"]["programs"]["web"]["restarts"] >= 1
        )

    wait_for(served_by_a_new_web, 30, embedded.supervisor.tail, step=0.5)
    report(
        "web server SIGKILLed under the supervisor: /healthz 200",
        time.monotonic() - killed,
    )
    after = embedded.programs()
    assert after["web"]["pid"] != before["web"]["pid"]
    assert after["web"]["last_exit"]["code"] == -signal.SIGKILL
    assert after["worker"]["pid"] == before["worker"]["pid"]
    console = embedded.supervisor.text()
    assert "==> web was killed by SIGKILL; restarting in 1 s" in console
    assert "==> web started again (restart 1; pid" in console


def _reads_work(url: str, buyer: urllib.request.OpenerDirector, token: str) -> str:
    """A logged-in page, API reads with the token and a download: 200. The id
    of RFP-DEMO-1."""
    status, page = _request(f"{url}/dashboard/", opener=buyer)
    assert status == 200, page[:2000]
    assert b'data-testid="current-user">buyer<' in page
    status, answer = _request(f"{url}/api/v1/rfps/", token=token)
    assert status == 200, answer
    rfps = {r["reference"]: r["id"] for r in json.loads(answer)["results"]}
    rfp = str(rfps["RFP-DEMO-1"])
    status, answer = _request(f"{url}/api/v1/rfps/{rfp}/bundles/", token=token)
    assert status == 200, answer
    bundle = json.loads(answer)["results"][0]["id"]
    download = f"{url}/api/v1/bundles/{bundle}/download/"
    status, archive = _request(download, token=token)
    assert status == 200, archive[:500]
    assert archive[:2] == b"\x1f\x8b"  # gzip
    return rfp


def _writes_answer_507(embedded: Embedded, token: str, rfp: str) -> None:
    """An upload and a login: 507, saying why; /healthz: 503 naming the disk."""
    status, body = _upload(embedded.url, token, rfp, embedded.upload)
    assert status == 507, body
    assert body["code"] == "spool_full"
    assert "space" in body["message"]
    status, text, _opener = _log_in(embedded.url, "vendor-b")
    assert status == 507, text[:2000]
    assert "The disk is full" in text
    assert "Traceback" not in text
    answer = healthz(embedded.port)
    assert answer is not None
    assert answer[0] == 503
    assert answer[1]["checks"]["disk"]["ok"] is False
    assert answer[1]["checks"]["database"]["ok"] is True


@pytest.mark.timeout(240)
def test_a_full_disk_keeps_reads_answers_writes_507_and_recovers(
    embedded: Embedded,
) -> None:
    status, text, buyer = _log_in(embedded.url, "buyer")
    assert status == 200, text[:2000]
    token = _token(embedded.url, "vendor-a")  # not used before the disk is full
    filler = embedded.var_dir / "filler"

    _fill(filler)
    try:
        rfp = _reads_work(embedded.url, buyer, token)
        _writes_answer_507(embedded, token, rfp)
    finally:
        filler.unlink()
        (embedded.var_dir / "one-more").unlink(missing_ok=True)

    freed = time.monotonic()
    wait_for(lambda: _healthy(embedded.port), 60, embedded.supervisor.tail, step=0.5)
    report("var disk full, space freed: /healthz 200", time.monotonic() - freed)
    status, body = _upload(embedded.url, token, rfp, embedded.upload)
    assert status == 201, body  # 201, not 200: nothing of the refused one was kept
    status, text, _opener = _log_in(embedded.url, "vendor-b")
    assert status == 200, text[:2000]
    assert 'data-testid="current-user">vendor-b<' in text
    verified = embedded.manage("escrow_verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "Escrow is intact" in verified.stdout
