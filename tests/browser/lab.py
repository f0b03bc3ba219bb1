"""A lab in the embedded default for the browser tests: the demo seeded, blobs on
files, tasks sent through the SQLite broker of a temporary folder, and the lab
agent of ``pool.local`` (``python -m reprogate_agent``, with a host token of its
own) against the live server, as ``scripts/run`` has it; a test whose campaigns are
judged also gets a server worker for the default queue.

On SQLite the (in-memory) test database is switched for a file both the live
server and the worker can open; on PostgreSQL the worker opens the test database
itself. The fixtures are made available to every browser test by conftest.py."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from celery import Celery
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connections
from playwright.sync_api import Page, expect

from benchmarks.lib.queues import pool_queue
from config.celery import app as celery_app
from portal.demo import DEMO_PASSWORD, LAB_POOL, LAB_RFP, demo_seed

PROJECT_DIR = Path(__file__).resolve().parents[2]
CELERY_BIN = Path(sys.executable).with_name("celery")
READY_TIMEOUT_S = 60
CAMPAIGN_TIMEOUT_S = 300


def broker_url(var_dir: Path) -> str:
    """What config/settings.py gives a worker whose VAR_DIR is ``var_dir``."""
    return f"sqla+sqlite:///{var_dir / 'broker' / 'broker.sqlite3'}"


def postgres_url(settings_dict: dict[str, Any]) -> str:
    user = quote(settings_dict["USER"] or "", safe="")
    password = settings_dict["PASSWORD"]
    secret = f":{quote(password, safe='')}" if password else ""
    host = settings_dict["HOST"] or "localhost"
    port = settings_dict["PORT"] or 5432
    return f"postgres://{user}{secret}@{host}:{port}/{settings_dict['NAME']}"


@pytest.fixture
def shared_database(
    transactional_db: None, live_server: Any, tmp_path: Path
) -> Iterator[str]:
    """A database URL the worker process can open, holding what the live server
    serves. SQLite: a migrated file in place of the in-memory test database, put
    back afterwards. For an in-memory database the live server's request threads
    share the test's connection object (``connections_override``); with a file
    that sharing is wrong (one sqlite3 connection used by concurrent requests:
    "bad parameter or other API misuse"), so meanwhile each request thread opens
    the file itself."""
    connection = connections["default"]
    if connection.vendor == "postgresql":
        yield postgres_url(connection.settings_dict)
        return
    saved, saved_raw = dict(connection.settings_dict), connection.connection
    overrides = live_server.thread.connections_override  # the request threads' too
    shared = overrides.pop("default", None) if overrides is not None else None
    name = str(tmp_path / "lab.sqlite3")
    connection.connection = None  # the next query opens the file
    connection.settings_dict["NAME"] = name
    ContentType.objects.clear_cache()  # its ids are the other database's
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield f"sqlite:///{name}"
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        connection.connection = saved_raw
        if shared is not None:
            overrides["default"] = shared
        ContentType.objects.clear_cache()  # back to the test database's ids


@pytest.fixture
def lab_queues() -> tuple[str, ...]:
    """The queues the lab consumes: ``pool.local`` (its agent); a test whose
    campaigns are judged overrides it to add the default queue (where the gate
    evaluation of a finished campaign goes: a server worker)."""
    return (pool_queue(LAB_POOL),)


@pytest.fixture
def lab(
    shared_database: str,
    tmp_path: Path,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    lab_queues: tuple[str, ...],
    live_server: Any,
) -> Iterator[subprocess.Popen[bytes]]:
    """The demo seeded, blobs on shared files, tasks sent through the SQLite
    broker of ``tmp_path``, and the processes consuming ``lab_queues`` (the
    agent is yielded)."""
    var_dir = tmp_path / "var"
    media = var_dir / "media"
    media.mkdir(parents=True)
    settings.VAR_DIR = var_dir
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": str(media)},
        },
    }
    settings.REPROGATE_LOG_KEY_PATH = str(var_dir / "keys" / "log.pem")
    settings.RUNNER_PROGRESS_WRITE_SECONDS = 0.2  # the agent's reports, seen live
    demo_seed()
    client = Celery("lab-acceptance", broker=broker_url(var_dir), set_as_current=False)

    def send(name: str, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        return client.send_task(name, args=args, kwargs=kwargs, **options)

    # Every task the live server sends (the runs, and the gate evaluation a
    # campaign's end sends when the agent's last run finishes there) goes to the
    # SQLite broker of ``var_dir``, where the agent and the server worker read.
    monkeypatch.setattr(celery_app, "send_task", send)
    started = start_worker(shared_database, var_dir, lab_queues, live_server.url)
    yield started[-1]
    for worker in started:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)
    client.close()


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"{log.name} did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)


def start_worker(
    database_url: str, var_dir: Path, queues: tuple[str, ...], server_url: str
) -> list[subprocess.Popen[bytes]]:
    """A server worker for the queues that are not a pool's (if any), then the
    lab agent of ``LAB_POOL`` against ``server_url`` (last)."""
    from benchmarks.models import LabPool
    from benchmarks.services.host_tokens import host_token_issue

    started = []
    others = [q for q in queues if q != pool_queue(LAB_POOL)]
    if others:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")}
        env.pop("CELERY_BROKER_URL", None)  # the embedded default: SQLite broker
        env.update(
            DATABASE_URL=database_url,
            DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
            DJANGO_SECURE_SSL_REDIRECT="False",
            DJANGO_DEBUG="False",
            REPROGATE_VAR_DIR=str(var_dir),
            REPROGATE_LOG_KEY_PATH=str(var_dir / "keys" / "log.pem"),
        )
        log = var_dir / "worker.log"
        command = [str(CELERY_BIN), "-A", "config", "worker", "-Q", ",".join(others)]
        command += ["--concurrency", "1", "-n", "lab-acceptance@%h", "-l", "INFO"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        with log.open("wb") as out:
            worker = subprocess.Popen(
                command, cwd=PROJECT_DIR, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        started.append(worker)
        _wait_ready(worker, log)
    issued = host_token_issue(
        pool=LabPool.objects.get(name=LAB_POOL), name="lab-agent", actor=None
    )
    home = var_dir / "lab-agent"
    home.mkdir(exist_ok=True)
    (home / "token").write_text(issued.raw + "\n")
    agent_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT_DIR),
        "REPROGATE_SERVER_URL": server_url,
        "REPROGATE_HOST_TOKEN_FILE": str(home / "token"),
        "REPROGATE_BROKER_URL": broker_url(var_dir),
        "REPROGATE_AGENT_WORK_DIR": str(home / "work"),
        "REPROGATE_AGENT_NAME": "lab-agent",
    }
    log = var_dir / "lab-agent.log"
    with log.open("wb") as out:
        agent = subprocess.Popen(
            [sys.executable, "-m", "reprogate_agent"],
            cwd=PROJECT_DIR, env=agent_env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    started.append(agent)
    _wait_ready(agent, log)
    return started


def log_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()


def start_campaign(page: Page, vendor: str) -> str:
    page.goto("/lab/campaigns/new/")
    bundle = page.locator("#id_bundle option", has_text=f"{LAB_RFP} · {vendor}")
    page.locator("#id_bundle").select_option(value=bundle.get_attribute("value"))
    choose_pool(page, LAB_POOL)
    page.locator("#id_repetitions").fill("1")
    page.get_by_test_id("campaign-start-submit").click()
    expect(page).to_have_url(re.compile(r"/lab/campaigns/[0-9a-f-]{36}/$"))
    return page.url


def choose_pool(page: Page, name: str) -> None:
    """Choose the pool ``name`` on the campaign form (its label also says how
    many of its hosts are online)."""
    option = page.locator("#id_pool option", has_text=re.compile(f"^{name} · "))
    page.locator("#id_pool").select_option(value=option.get_attribute("value"))


def watch_campaign(page: Page, url: str) -> list[int]:
    """Stay on the campaign page (htmx polls it) until no run is queued or
    running; the campaign progress values seen on the way."""
    page.goto(url)
    runs = page.get_by_test_id("campaign-runs")
    seen: list[int] = []
    deadline = time.monotonic() + CAMPAIGN_TIMEOUT_S
    while time.monotonic() < deadline:
        seen.append(
            int(page.get_by_test_id("campaign-progress").get_attribute("value"))
        )
        if runs.get_attribute("data-status") not in ("queued", "running"):
            return seen
        page.wait_for_timeout(500)
    pytest.fail(f"the campaign did not finish; progress seen: {seen}")


def expect_charts(page: Page, keys: tuple[str, ...]) -> None:
    for key in keys:
        chart = page.get_by_test_id(f"chart-{key}")
        expect(
            chart.locator("[data-testid=chart-plot] svg.main-svg").first
        ).to_be_visible(timeout=20_000)


def expect_campaign_done(page: Page, url: str) -> None:
    """The campaign at ``url`` (an example bundle's, on this lab's pool) has
    ended: every steady run succeeded; the pool's policy names no fault hook and
    no block device, so the bundle's failover and interference runs failed
    saying what it lacks (the warm-up runs need nothing more)."""
    from benchmarks.models import Campaign, Run

    page.goto(url)
    expect(page.get_by_test_id("campaign-status")).to_have_text(
        "finished with failures"
    )
    campaign = Campaign.objects.get(public_id=url.rstrip("/").rsplit("/", 1)[1])
    failed = {
        r.scenario.get("kind"): r.reason
        for r in campaign.runs.exclude(state=Run.State.SUCCEEDED)
    }
    assert set(failed) == {"failover", "interference"}, failed
    assert "fault" in failed["failover"], failed
    assert "device" in failed["interference"], failed
