"""``scripts/run`` end to end, as a new user starts it (embedded default, its own
var dir and port): no debug page (DEBUG off, a generated secret key, the demo login
over plain http); a worker killed with SIGKILL is started again while the web keeps
answering and ``/healthz`` tells; the console says where ReproGate is ready, the
workers' output is in their logs; Ctrl-C (SIGINT) leaves no process."""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from config.supervise import STOP_GRACE_S

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

PROJECT_DIR = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 240.0
# and the demo's fault export (nbdkit) where nbdkit is installed
PROGRAMS = {"web", "worker", "lab-agent", "beat"} | (
    {"fault-export"} if shutil.which("nbdkit") else set()
)
# A password in the product's environment that a debug page would print.
CANARY = "canary-pw-7d2a61"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthz(port: int) -> tuple[int, dict[str, Any]] | None:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/healthz", timeout=5
        ) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)
    except (OSError, ValueError):
        return None


def _programs(port: int) -> dict[str, Any] | None:
    answer = _healthz(port)
    if answer is None:
        return None
    return answer[1]["checks"].get("processes", {}).get("programs")


def _get(
    url: str,
    headers: dict[str, str] | None = None,
    opener: urllib.request.OpenerDirector | None = None,
    data: bytes | None = None,
) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers=headers or {})  # noqa: S310 (loopback http)
    try:
        with (opener or urllib.request.build_opener()).open(
            request, timeout=30
        ) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _no_debug_page_and_the_demo_login_works(port: int, var_dir: Path) -> None:
    base = f"http://127.0.0.1:{port}"
    # DEBUG would list the URL configuration, and answer an unknown Host header
    # with the technical page: the settings and the whole environment.
    for status, body in (
        _get(f"{base}/no-such-page/"),
        _get(f"{base}/", headers={"Host": "attacker.example"}),
    ):
        assert status in (404, 400)
        assert CANARY not in body
        for debug_only in ("Traceback", "URLconf", "DJANGO_SETTINGS_MODULE"):
            assert debug_only not in body, body[:2000]
    assert "Not found" in _get(f"{base}/no-such-page/")[1]
    key = var_dir / "secret-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600

    # The demo accounts log in over plain http; pages and static files load.
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, login = _get(f"{base}/accounts/login/", opener=opener)
    assert status == 200
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login)
    assert found, login[:2000]
    form = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": found.group(1),
            "username": "buyer",
            "password": "reprogate-demo",
        }
    ).encode()
    status, page = _get(
        f"{base}/accounts/login/",
        opener=opener,
        data=form,
        headers={"Referer": f"{base}/accounts/login/"},
    )
    assert status == 200, page[:2000]
    assert 'data-testid="current-user">buyer<' in page
    assert _get(f"{base}/static/css/app.css")[0] == 200


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def _group_members(groups: set[int]) -> set[int]:
    members = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) in groups:
                members.add(int(entry.name))
    return members


@pytest.fixture
def run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    port = _free_port()
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("DJANGO_", "CELERY_", "DATABASE_", "REPROGATE_")):
            del env[name]
    env.update(
        REPROGATE_VAR_DIR=str(tmp_path / "var"),
        REPROGATE_PORT=str(port),
        ANALYTICS_URL=f"https://reprogate:{CANARY}@analytics.invalid/",
    )
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", "scripts/run"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    yield process, port, log
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_GRACE_S + 10)
        except subprocess.TimeoutExpired:
            process.kill()
    status = tmp_path / "var" / "supervisor.json"
    if status.exists():  # the supervisor itself was killed: clean up after it
        pids = [p["pid"] for p in json.loads(status.read_text())["programs"].values()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, TypeError):
                os.killpg(pid, signal.SIGKILL)


def test_a_killed_worker_restarts_the_web_stays_and_ctrl_c_stops_everything(
    run: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    process, port, log = run
    deadline = time.monotonic() + START_TIMEOUT_S
    programs = None
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")
        programs = _programs(port)
        if programs and all(p["state"] == "running" for p in programs.values()):
            break
        time.sleep(1)
    assert programs is not None, log.read_text(errors="replace")
    assert set(programs) == PROGRAMS
    _no_debug_page_and_the_demo_login_works(port, log.parent / "var")
    web_pid, worker_pid = programs["web"]["pid"], programs["worker"]["pid"]

    os.kill(worker_pid, signal.SIGKILL)
    answered = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = _healthz(port)
        if answer is not None:
            answered.append(answer[0])
            worker = answer[1]["checks"]["processes"]["programs"]["worker"]
            if worker["state"] == "running" and worker["restarts"] == 1:
                break
        time.sleep(0.2)
    else:
        pytest.fail(f"the worker was not restarted:\n{log.read_text()}")

    assert answered, "the web stopped answering"
    assert worker["pid"] != worker_pid
    assert worker["last_exit"]["code"] == -signal.SIGKILL
    programs = _programs(port)
    assert programs is not None
    assert programs["web"]["pid"] == web_pid
    assert programs["web"]["restarts"] == 0
    text = log.read_text(errors="replace")
    assert "==> worker was killed by SIGKILL; restarting in 1 s" in text
    assert "superuser privileges" not in text
    # The console ends the start-up with the address and the accounts; the
    # workers' banners and task lines are in their logs under the var directory.
    ready = f"==> ReproGate is ready at http://127.0.0.1:{port} — log in as buyer"
    assert ready in text
    assert "[tasks]" not in text
    logs = log.parent / "var" / "logs"
    assert "[tasks]" in (logs / "worker.log").read_text(errors="replace")

    # Every process of every program's group, once the default worker's pool
    # processes (2) are there (the lab agent runs its runs in its own process).
    groups = {p["pid"] for p in programs.values()}
    assert _wait_for(lambda: len(_group_members(groups)) >= len(PROGRAMS) + 2, 60)
    children = _group_members(groups)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=STOP_GRACE_S + 10)
    elapsed = time.monotonic() - started

    assert elapsed < STOP_GRACE_S + 3
    assert sorted(pid for pid in children if _alive(pid)) == []
