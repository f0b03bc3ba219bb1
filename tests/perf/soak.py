"""Soak test of the embedded default: ReproGate as ``scripts/run`` starts it, under
concurrent clients, while its runner worker is killed at random.

    python -m tests.perf.soak --minutes 60
    python -m tests.perf.soak --seconds 90 --start direct   # what CI runs
    python -m tests.perf.soak --seconds 90 --start direct \
        --database-url postgres://postgres@127.0.0.1:5432/reprogate_soak  # PostgreSQL

The embedded default (SQLite, local files, the SQLite broker, the supervisor of
``config.supervise``) runs in a var dir and on a free port of its own. ``--start
scripts-run`` (the default) runs ``scripts/run`` itself (the demo seed starts
RFP-DEMO-2's 12 lab runs, which the pool's worker runs before the soak's own
campaigns); ``--start direct`` runs what it runs
(``migrate``, ``seed_demo`` without ``--lab-in-background``, then the supervisor), in
about 20 s; with ``--database-url`` (direct start only) its processes use that
database instead of SQLite (an empty one: it is migrated and seeded). Meanwhile,
until the time is up:

- each demo vendor (``vendor-a``, ``vendor-b``) uploads signed bundles to
  RFP-DEMO-1 through the API with its token and its demo key (``VAR_DIR/demo-keys``),
  every one new (a file with a counter in it);
- ``labops`` starts campaigns through the API on the vendors' accepted bundles of
  RFP-DEMO-2 (one in flight at a time, vendors in turn, none in the last
  ``--campaign-cutoff`` seconds) and polls their runs;
- every demo account, logged in through the login page, loads its main pages
  (dashboard, RFP pages, the gate board, escrow, the lab's campaigns);
- the lab pool's worker (the runner) is killed with SIGKILL at random intervals:
  its main process alone, or its whole process group (a host lost with its
  harness), at random; the supervisor starts it again.

Then it waits (at most ``--drain-timeout``) for the campaigns to finish, stops the
product with SIGINT and prints what was served and what became of the runs. A run
is *lost* when it never ended (not final after the wait) or vanished (a run or
campaign seen before is no longer there). Exit status 1 if there were errors
(answers that are not 2xx/3xx, or not the expected one, and failed connections) or
lost runs; 2 if the product did not start.

The runner's timing is shortened for the soak (``RUNNER_*`` below, heartbeats every
2 s, a run reaped 10 s after its worker went silent) so that a killed run comes
back within a minute; the beat's reaper sweeps every 30 s as in the product.
Figures and how to read them: tests/perf/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import http.cookiejar
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from traceback import format_exc
from typing import Any, Final

PROJECT_DIR: Final = Path(__file__).resolve().parents[2]
PASSWORD: Final = "reprogate-demo"  # the documented demo password
DEMO_RFP: Final = "RFP-DEMO-1"
LAB_RFP: Final = "RFP-DEMO-2"
POOL: Final = "local"
RUNNER: Final = "lab-agent"  # the supervisor's name of the lab pool's agent
VENDORS: Final = (("acme-flash", "vendor-a"), ("bolt-storage", "vendor-b"))
ACCOUNTS: Final = ("buyer", "evaluator", "vendor-a", "vendor-b", "labops", "auditor")
FINAL_STATES: Final = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
# The runner's timing for the soak: a killed run is re-queued within a minute.
RUNNER_ENV: Final = {
    "RUNNER_HEARTBEAT_SECONDS": "2",
    "RUNNER_LOST_AFTER_SECONDS": "10",
    "RUNNER_REDISPATCH_AFTER_SECONDS": "20",
    "RUNNER_PROGRESS_WRITE_SECONDS": "1",
}
START_TIMEOUT_S: Final = 600.0
STOP_GRACE_S: Final = 20.0
HTTP_TIMEOUT_S: Final = 60.0


# --- figures -----------------------------------------------------------------------


@dataclass
class Figures:
    """What the clients saw; shared by the threads (one lock)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: dict[str, str] = field(default_factory=dict)
    requests: int = 0
    uploads: Counter[int] = field(default_factory=Counter)  # status -> count
    kills: Counter[str] = field(default_factory=Counter)  # "process" / "group"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def served(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.requests += 1
            self.latencies[kind].append(seconds)

    def error(self, kind: str, detail: str, sample: str = "") -> None:
        key = f"{kind}: {detail}"
        with self.lock:
            self.errors[key] += 1
            self.error_samples.setdefault(key, sample[:500])


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


# --- HTTP -------------------------------------------------------------------------


class Session:
    """One client: a cookie jar (pages) or a token (API), timing every request."""

    def __init__(self, base: str, figures: Figures) -> None:
        self.base, self.figures = base, figures
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar)
        )
        self.token: str | None = None

    def call(
        self,
        kind: str,
        path: str,
        *,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        expect: Sequence[int] = (200,),
    ) -> tuple[int, bytes] | None:
        """The status and body, or None after recording an error: a status not in
        ``expect`` or a failed connection."""
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        request = urllib.request.Request(self.base + path, data=data, headers=headers)  # noqa: S310 (loopback http)
        started = time.perf_counter()
        try:
            with self.opener.open(request, timeout=HTTP_TIMEOUT_S) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        except (OSError, http.client.HTTPException) as exc:
            self.figures.error(kind, type(exc).__name__, str(exc))
            return None
        self.figures.served(kind, time.perf_counter() - started)
        if status not in expect:
            self.figures.error(kind, str(status), body.decode(errors="replace"))
            return None
        return status, body

    def json(self, kind: str, path: str, **kwargs: Any) -> Any:
        answer = self.call(kind, path, **kwargs)
        return None if answer is None else json.loads(answer[1])

    def post_json(
        self, kind: str, path: str, document: object, expect: Sequence[int]
    ) -> Any:
        body = json.dumps(document).encode()
        headers = {"Content-Type": "application/json"}
        return self.json(kind, path, data=body, headers=headers, expect=expect)

    def api_login(self, username: str) -> bool:
        answer = self.post_json(
            "api token",
            "/api/v1/auth/token/",
            {"username": username, "password": PASSWORD},
            expect=(200, 201),
        )
        if answer is None:
            return False
        self.token = answer["token"]
        return True

    def page_login(self, username: str) -> bool:
        answer = self.call("page login", "/accounts/login/")
        if answer is None:
            return False
        found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', answer[1])
        if not found:
            self.figures.error("page login", "no CSRF token", answer[1].decode())
            return False
        form = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": found.group(1).decode(),
                "username": username,
                "password": PASSWORD,
            }
        ).encode()
        page = self.call(
            "page login",
            "/accounts/login/",
            data=form,
            headers={"Referer": f"{self.base}/accounts/login/"},
        )  # the redirect to the dashboard is followed
        if page is None:
            return False
        if f'data-testid="current-user">{username}<'.encode() not in page[1]:
            self.figures.error("page login", "not signed in", page[1].decode())
            return False
        return True


def multipart(field_name: str, filename: str, data: bytes) -> tuple[bytes, str]:
    boundary = f"reprogate-soak-{uuid.uuid4().hex}"
    body = b"".join(
        [
            f"--{boundary}\r\n".encode(),
            f'Content-Disposition: form-data; name="{field_name}"; '
            f'filename="{filename}"\r\n'.encode(),
            b"Content-Type: application/gzip\r\n\r\n",
            data,
            f"\r\n--{boundary}--\r\n".encode(),
        ]
    )
    return body, f"multipart/form-data; boundary={boundary}"


# --- the product --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def product_environment(var_dir: Path, port: int) -> dict[str, str]:
    """This shell's environment without the product's own settings, as a new user
    has it, plus the soak's var dir, port and runner timing."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "CELERY_", "DATABASE_", "REPROGATE_"))
        and not name.startswith("RUNNER_")
    }
    env.update(RUNNER_ENV, REPROGATE_VAR_DIR=str(var_dir), REPROGATE_PORT=str(port))
    return env


@dataclass
class Product:
    process: subprocess.Popen[bytes]
    var_dir: Path
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def programs(self) -> dict[str, Any]:
        path = self.var_dir / "supervisor.json"
        try:
            return dict(json.loads(path.read_text())["programs"])
        except (OSError, ValueError, KeyError):
            return {}

    def log_tail(self, lines: int = 40) -> str:
        """The console's last lines, then each process's (the supervisor sends
        their output to ``var/logs/<process>.log``)."""
        tails = []
        for path in [self.log, *sorted((self.var_dir / "logs").glob("*.log"))]:
            text = path.read_text(errors="replace") if path.exists() else ""
            tails.append(
                f"--- {path.name} ---\n" + "\n".join(text.splitlines()[-lines:])
            )
        return "\n".join(tails)


def _manage(env: dict[str, str], log: Path, *argv: str) -> None:
    with log.open("ab") as out:
        subprocess.run(
            ["bash", "scripts/manage", *argv],
            cwd=PROJECT_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=START_TIMEOUT_S,
        )


def start_product(work: Path, start: str, database_url: str = "") -> Product:
    var_dir, port, log = work / "var", free_port(), work / "run.log"
    env = product_environment(var_dir, port)
    if database_url:
        env["DATABASE_URL"] = database_url
    if start == "direct":  # what scripts/run runs, without the lab's demo runs
        _manage(env, log, "migrate", "--no-input", "--verbosity=0")
        _manage(env, log, "seed_demo", "--verbosity=0")
        env.update(
            REPROGATE_EMBEDDED="True",
            DJANGO_SECRET_KEY_FILE=str(var_dir / "secret-key"),
            PATH=f"{PROJECT_DIR / '.venv' / 'bin'}:{env.get('PATH', '')}",
        )
        argv = [sys.executable, "-m", "config.supervise", "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--var-dir", str(var_dir)]
    else:
        argv = ["bash", "scripts/run"]
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv,
            cwd=PROJECT_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Product(process=process, var_dir=var_dir, port=port, log=log)


def wait_until_up(product: Product, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if product.process.poll() is not None:
            return False
        programs = product.programs()
        if programs and all(p["state"] == "running" for p in programs.values()):
            try:
                with urllib.request.urlopen(f"{product.base}/healthz", timeout=5):  # noqa: S310
                    return True
            except (OSError, urllib.error.HTTPError):
                pass
        time.sleep(1)
    return False


def stop_product(product: Product) -> None:
    """SIGINT (Ctrl-C), then SIGKILL of whatever process group is left."""
    if product.process.poll() is None:
        product.process.send_signal(signal.SIGINT)
        try:
            product.process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            product.process.kill()
            product.process.wait()
    for entry in product.programs().values():  # the supervisor did not clean up
        with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
            os.killpg(entry["pid"], signal.SIGKILL)


# --- the clients --------------------------------------------------------------------


@dataclass
class World:
    """The demo's ids, read through the API once the product is up."""

    rfps: dict[str, str]  # reference -> id
    lab_bundles: dict[str, str]  # vendor -> its accepted bundle on RFP-DEMO-2


@dataclass
class CampaignLedger:
    """Every campaign the soak started and every run seen in it. A run is lost
    when it vanished (seen before, missing from its campaign's next answer, or its
    campaign answered 404) or never ended (not final when the soak gave up)."""

    campaigns: dict[str, str] = field(default_factory=dict)  # id -> vendor
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> last seen
    runs_of: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    vanished: set[str] = field(default_factory=set)  # runs
    gone: set[str] = field(default_factory=set)  # campaigns that answered 404
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, campaign_id: str, detail: dict[str, Any] | None) -> None:
        """``detail``: the campaign's API answer, None when it answered 404."""
        with self.lock:
            self.campaigns.setdefault(campaign_id, "")
            if detail is None:
                self.gone.add(campaign_id)
            runs = {run["id"]: run for run in (detail or {}).get("runs", [])}
            self.vanished |= self.runs_of[campaign_id] - set(runs)
            self.runs_of[campaign_id] |= set(runs)
            self.runs.update(runs)

    def active(self) -> list[str]:
        """The campaigns still to wait for: a run not final, or no run seen yet."""
        with self.lock:
            return [
                campaign
                for campaign in self.campaigns
                if campaign not in self.gone
                and (
                    not self.runs_of[campaign]
                    or any(
                        self.runs[run]["status"] not in FINAL_STATES
                        for run in self.runs_of[campaign] - self.vanished
                    )
                )
            ]

    def lost(self) -> tuple[set[str], set[str]]:
        """(never ended, vanished) run ids."""
        with self.lock:
            never_ended = {
                run_id
                for run_id, run in self.runs.items()
                if run["status"] not in FINAL_STATES and run_id not in self.vanished
            }
            return never_ended, set(self.vanished)


class Soak:
    def __init__(self, product: Product, args: argparse.Namespace) -> None:
        self.product, self.args = product, args
        self.figures = Figures()
        self.ledger = CampaignLedger()
        self.stop = threading.Event()
        self.random = random.Random(args.seed)  # noqa: S311 - timing, not secrets
        self.ends_at = 0.0

    def session(self) -> Session:
        return Session(self.product.base, self.figures)

    def world(self) -> World | None:
        buyer = self.session()
        if not buyer.api_login("buyer"):
            return None
        listed = buyer.json("api rfps", "/api/v1/rfps/")
        if listed is None:
            return None
        rfps = {rfp["reference"]: rfp["id"] for rfp in listed["results"]}
        if not {DEMO_RFP, LAB_RFP} <= set(rfps):
            self.figures.error("api rfps", "no demo RFPs", str(sorted(rfps)))
            return None
        bundles = buyer.json("api bundles", f"/api/v1/rfps/{rfps[LAB_RFP]}/bundles/")
        if bundles is None:
            return None
        lab_bundles = {
            bundle["vendor"]: bundle["id"]
            for bundle in bundles["results"]
            if bundle["status"] == "accepted"
        }
        return World(rfps=rfps, lab_bundles=lab_bundles)

    def _pause(self, seconds: float) -> bool:
        """Wait; False once the soak is over."""
        return not self.stop.wait(seconds)

    # uploads ---------------------------------------------------------------------
    def uploader(self, world: World, vendor: str, username: str) -> None:
        from artifacts.lib.bundle_build import build_bundle
        from artifacts.lib.signatures.sshkeys import load_private_key

        client = self.session()
        if not client.api_login(username):
            return
        key_file = self.product.var_dir / "demo-keys" / vendor
        key = load_private_key(key_file.read_bytes(), comment=f"demo@{vendor}")
        path = f"/api/v1/rfps/{world.rfps[DEMO_RFP]}/bundles/"
        with tempfile.TemporaryDirectory(prefix=f"soak-{vendor}-") as folder:
            source = Path(folder) / vendor
            shutil.copytree(PROJECT_DIR / "examples" / vendor, source)
            output = Path(folder) / f"{vendor}.tar.gz"
            count = 0
            while not self.stop.is_set():
                count += 1
                nonce = {"soak": count, "nonce": uuid.uuid4().hex}
                (source / "traces" / "soak.json").write_text(json.dumps(nonce))
                build_bundle(source, key=key, output=output, environ={})
                body, content_type = multipart("file", output.name, output.read_bytes())
                answer = client.call(
                    "api bundle upload",
                    path,
                    data=body,
                    headers={"Content-Type": content_type},
                    expect=(201,),  # every bundle is new
                )
                if answer is not None:
                    with self.figures.lock:
                        self.figures.uploads[answer[0]] += 1
                if not self._pause(self.args.upload_pause):
                    return

    # campaigns -------------------------------------------------------------------
    def poll_campaign(self, client: Session, campaign_id: str) -> None:
        answer = client.call(
            "api campaign detail",
            f"/api/v1/campaigns/{campaign_id}/",
            expect=(200, 404),  # 404: it vanished, with its runs (counted lost)
        )
        if answer is not None:
            detail = json.loads(answer[1]) if answer[0] == 200 else None
            self.ledger.record(campaign_id, detail)

    def lab_operator(self, world: World) -> None:
        client = self.session()
        if not client.api_login("labops"):
            return
        vendors = sorted(world.lab_bundles)
        turn = 0
        while not self.stop.is_set():
            active = self.ledger.active()
            left = self.ends_at - time.monotonic()
            if not active and left > self.args.campaign_cutoff and vendors:
                vendor = vendors[turn % len(vendors)]
                turn += 1
                detail = client.post_json(
                    "api campaign start",
                    "/api/v1/campaigns/",
                    {
                        "bundle": world.lab_bundles[vendor],
                        "pool": POOL,
                        "repetitions": self.args.repetitions,
                        "note": "soak test",
                    },
                    expect=(201,),
                )
                if detail is not None:
                    with self.ledger.lock:
                        self.ledger.campaigns[detail["id"]] = vendor
                    self.ledger.record(detail["id"], detail)
            for campaign_id in active:
                self.poll_campaign(client, campaign_id)
            client.call("api campaign list", "/api/v1/campaigns/?limit=20")
            if not self._pause(2.0):
                return

    # pages -----------------------------------------------------------------------
    def pages(self, world: World, username: str) -> list[tuple[str, str]]:
        demo, lab = world.rfps[DEMO_RFP], world.rfps[LAB_RFP]
        common = [("dashboard", "/dashboard/"), ("rfp list", "/rfps/")]
        rfp_pages = [
            ("rfp detail", f"/rfps/{demo}/"),
            ("rfp detail", f"/rfps/{lab}/"),
            ("gate board", f"/gates/rfps/{lab}/board/"),
        ]
        escrow = [("escrow", "/artifacts/escrow/")]
        by_role = {
            "buyer": [
                *rfp_pages,
                ("rfp bids", f"/rfps/{demo}/bids/"),
                ("rfp bids", f"/rfps/{lab}/bids/"),
                *escrow,
                ("audit trail", "/accounts/audit/"),
                ("lab campaigns", "/lab/campaigns/"),
            ],
            "evaluator": [*rfp_pages, ("rfp bids", f"/rfps/{lab}/bids/"), *escrow],
            "vendor-a": [*rfp_pages, ("bid", f"/rfps/{lab}/bid/"), *escrow],
            "vendor-b": [*rfp_pages, ("bid", f"/rfps/{lab}/bid/"), *escrow],
            "labops": [
                ("rfp detail", f"/rfps/{lab}/"),
                ("gate board", f"/gates/rfps/{lab}/board/"),
                ("lab campaigns", "/lab/campaigns/"),
                ("lab pools", "/lab/pools/"),
            ],
            "auditor": [*rfp_pages, *escrow, ("audit trail", "/accounts/audit/")],
        }
        return common + by_role[username]

    def browser(self, world: World, username: str) -> None:
        client = self.session()
        if not client.page_login(username):
            return
        pages = self.pages(world, username)
        while not self.stop.is_set():
            for name, path in pages:
                client.call(f"page {name}", path)
                if not self._pause(self.args.page_pause):
                    return
            if username == "labops":  # the lab's campaign pages, newest few
                for campaign_id in list(self.ledger.campaigns)[-2:]:
                    client.call("page campaign", f"/lab/campaigns/{campaign_id}/")

    # the faults ------------------------------------------------------------------
    def killer(self) -> None:
        low, high = self.args.kill_every
        while self._pause(self.random.uniform(low, high)):
            entry = self.product.programs().get(RUNNER, {})
            pid = entry.get("pid")
            if entry.get("state") != "running" or not pid:
                continue  # being restarted: the next interval
            scope = self.random.choice(("process", "group"))
            with contextlib.suppress(ProcessLookupError):
                if scope == "group":
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
                with self.figures.lock:
                    self.figures.kills[scope] += 1

    # the whole soak --------------------------------------------------------------
    def _guarded(self, target: Callable[[], None]) -> None:
        """A client that crashes is an error of the soak, never a silent stop."""
        try:
            target()
        except Exception as exc:  # reported with its traceback
            self.figures.error("client crashed", type(exc).__name__, format_exc())

    def run(self, seconds: float) -> World | None:
        world = self.world()
        if world is None:
            return None
        self.ends_at = time.monotonic() + seconds
        targets: list[Callable[[], None]] = [
            lambda: self.lab_operator(world),
            self.killer,
            *(
                (lambda v=vendor, u=username: self.uploader(world, v, u))
                for vendor, username in VENDORS
            ),
            *((lambda u=username: self.browser(world, u)) for username in ACCOUNTS),
        ]
        threads = [
            threading.Thread(target=self._guarded, args=(target,), daemon=True)
            for target in targets
        ]
        for thread in threads:
            thread.start()
        self.stop.wait(seconds)
        self.stop.set()
        for thread in threads:
            thread.join(timeout=HTTP_TIMEOUT_S + 10)
        return world

    def drain(self, timeout: float) -> float:
        """Poll the campaigns until every run ended, at most ``timeout`` s."""
        client = self.session()
        client.api_login("labops")
        started = time.monotonic()
        while True:
            for campaign_id in list(self.ledger.campaigns):
                self.poll_campaign(client, campaign_id)
            if not self.ledger.active() or time.monotonic() - started > timeout:
                return time.monotonic() - started
            time.sleep(2)


# --- the report ---------------------------------------------------------------------


def report(soak: Soak, drained_s: float, elapsed_s: float) -> tuple[list[str], int]:
    figures, ledger = soak.figures, soak.ledger
    states = Counter(run["status"] for run in ledger.runs.values())
    never_ended, vanished = ledger.lost()
    lost = len(never_ended | vanished)
    retried = sum(1 for run in ledger.runs.values() if run.get("attempt", 1) > 1)
    runner = soak.product.programs().get(RUNNER, {})
    errors = sum(figures.errors.values())
    uploads = ", ".join(f"{n} x {s}" for s, n in sorted(figures.uploads.items()))
    lines = [
        f"soak of the embedded default ({soak.args.start}; SQLite) at "
        f"{soak.product.base}: {elapsed_s:.0f} s of clients, seed {soak.args.seed}",
        f"requests served          {figures.requests}",
        f"errors                   {errors}",
        *(f"  {kind}  x{count}" for kind, count in sorted(figures.errors.items())),
        f"bundles uploaded         {sum(figures.uploads.values())} ({uploads or '-'})",
        f"campaigns started        {len(ledger.campaigns)}",
        f"runs started             {len(ledger.runs)}",
        f"runs succeeded           {states['succeeded']}",
        f"runs failed              {states['failed'] + states['timed_out']}"
        f" (cancelled {states['cancelled']})",
        f"runs retried (attempt>1) {retried}",
        f"runs lost                {lost} (never ended {len(never_ended)}, "
        f"vanished {len(vanished)}; campaigns gone {len(ledger.gone)})",
        f"worker kills             {sum(figures.kills.values())} "
        f"(main process {figures.kills['process']}, process group "
        f"{figures.kills['group']}; supervisor restarts {runner.get('restarts', '?')}"
        f", now {runner.get('state', '?')})",
        f"campaigns drained in     {drained_s:.0f} s",
        "latency (ms)             requests      p50      p95      max",
    ]
    for kind in sorted(figures.latencies):
        values = [v * 1000 for v in figures.latencies[kind]]
        lines.append(
            f"  {kind:<24}{len(values):>8} {percentile(values, 0.5):>8.0f} "
            f"{percentile(values, 0.95):>8.0f} {max(values):>8.0f}"
        )
    for key, sample in sorted(figures.error_samples.items()):
        lines.append(f"first {key}: {' '.join(sample.split())[:300]}")
    return lines, (1 if errors or lost or ledger.gone else 0)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, default=None)
    length.add_argument("--seconds", type=float, default=None)
    parser.add_argument(
        "--start", choices=("scripts-run", "direct"), default="scripts-run"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--kill-every", type=float, nargs=2, default=(20.0, 60.0),
        metavar=("MIN", "MAX"),
        help="seconds between two kills of the runner worker (uniform)",
    )  # fmt: skip
    parser.add_argument("--repetitions", type=int, default=1, help="per campaign")
    parser.add_argument(
        "--campaign-cutoff", type=float, default=45.0,
        help="start no campaign this close to the end (s)",
    )  # fmt: skip
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--upload-pause", type=float, default=1.0)
    parser.add_argument("--page-pause", type=float, default=0.5)
    parser.add_argument("--work-dir", type=Path, default=None, help="kept afterwards")
    parser.add_argument(
        "--database-url", default="",
        help="with --start direct: the (empty) database the product uses instead of "
        "SQLite",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.database_url and args.start != "direct":
        parser.error("--database-url needs --start direct")
    return args


@contextlib.contextmanager
def _work_dir(chosen: Path | None) -> Iterator[Path]:
    if chosen is not None:
        chosen.mkdir(parents=True, exist_ok=True)
        yield chosen
        return
    with tempfile.TemporaryDirectory(prefix="reprogate-soak-") as folder:
        yield Path(folder)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    seconds = args.seconds or (args.minutes or 60.0) * 60
    sys.path.insert(0, str(PROJECT_DIR))  # the Django-free bundle builder
    with _work_dir(args.work_dir) as work:
        began = time.monotonic()
        product = start_product(work, args.start, args.database_url)
        try:
            if not wait_until_up(product, START_TIMEOUT_S):
                print("the product did not start:\n" + product.log_tail(), flush=True)
                return 2
            print(
                f"up after {time.monotonic() - began:.0f} s at {product.base} "
                f"({args.start}); soaking for {seconds:.0f} s",
                flush=True,
            )
            soak = Soak(product, args)
            clients_began = time.monotonic()
            if soak.run(seconds) is None:
                print("the demo data is not there:", dict(soak.figures.error_samples))
                return 2
            elapsed = time.monotonic() - clients_began
            drained = soak.drain(args.drain_timeout)
            lines, status = report(soak, drained, elapsed)
        finally:
            stop_product(product)
        print("\n".join(lines), flush=True)
        if status:
            print("--- the product's log, last lines ---\n" + product.log_tail())
        return status


if __name__ == "__main__":
    raise SystemExit(main())
