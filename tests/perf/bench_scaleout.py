"""Scale-out benchmark: runs completed per minute with 1, 2 and 4 lab agents.
Prints figures, asserts nothing about timing.

    python -m tests.perf.bench_scaleout [--agents 1,2,4] [--runs-per-agent 6]
        [--sleep 5] [--broker rabbitmq|redis] [--redis-url URL]
        [--database-url URL] [--work-dir DIR]

1. a PostgreSQL database of its own (created on 127.0.0.1:5432 and dropped at the
   end; or the EMPTY one ``--database-url`` names), migrated;
2. the broker: RabbitMQ (default) in a vhost of its own, with the users
   ``deploy/rabbitmq/server-user.sh`` and ``pool-user.sh`` make (the agents
   connect as the pool's user, the server as its own; both deleted at the end), or
   Redis (``--redis-url``, one URL for both);
3. in a Django subprocess: a buyer, its lab and a vendor, an opened RFP, an
   accepted signed bundle whose harness sleeps ``--sleep`` seconds (I/O-bound:
   the two cores are not what limits it) and writes a metrics file, a lab pool
   and one host token per agent;
4. the server: gunicorn (``config.wsgi``, 2 processes of 4 threads) on a free
   loopback port, production settings (DEBUG off), local blob storage;
5. for each agent count N: N ``python -m reprogate_agent`` processes, each with
   its own working directory and host token and an environment holding only
   what the agent reads (plus PATH, HOME, LANG, PYTHONPATH), started and ready
   (hello answered, the worker consuming) before the clock starts; then a
   campaign of N x ``--runs-per-agent`` runs, timed from its start (the runs sent)
   until every run has ended; then the agents are stopped (SIGTERM: bye);
6. prints, per agent count: runs, seconds, **runs/min**, the **ratio** to one
   agent's runs/min (ideal: N), the mean claim-to-finish time of a run (the
   harness's sleep plus the agent's work around it: claim, download, extract,
   environment capture, sandbox, upload, finish), and how many runs each agent
   did.

Exit status: 0, or 1 when a run did not succeed, an agent exited early or the
server did not start (never because of a figure).

Measured 2026-12-04 on a quiet development VM (2 vCPUs, load average under 1),
``--agents 1,2,4 --runs-per-agent 6 --sleep 5``:

    broker            agents  runs  seconds  runs/min  ratio  run mean s
    RabbitMQ (users)       1     6     31.8     11.32   1.00        5.25
                           2    12     31.9     22.55   1.99        5.26
                           4    24     33.7     42.72   3.78        5.44
    Redis                  1     6     32.0     11.24   1.00        5.27
                           2    12     32.6     22.09   1.97        5.33
                           4    24     34.0     42.31   3.76        5.45

Every run succeeded on its first attempt, six per agent. A run takes the 5 s
sleep plus 0.25-0.45 s of the agent's and the server's work; that work grows
with more agents on two cores (gunicorn, PostgreSQL and four agents share them),
hence 3.8x rather than 4x with four agents. The "per agent" column shows the
campaign's balance: it ends with its busiest agent (tests/perf/README.md). The
ceiling is the harness, not the queue: one agent does at most 60 / run time runs
a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[2]
RABBITMQ_SCRIPTS: Final = ROOT / "deploy" / "rabbitmq"
POSTGRES_ADMIN: Final = "postgres://postgres@127.0.0.1:5432/postgres"
READY_TIMEOUT_S: Final = 90.0
SECRET: Final = "insecure-key-for-the-benchmark-only"
DJANGO_ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DJANGO_SECRET_KEY": SECRET,
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    "DJANGO_LOG_LEVEL": "WARNING",
}
FINAL_STATES: Final = ("succeeded", "failed", "cancelled", "timed_out")

HARNESS: Final = """#!/bin/sh
set -eu
echo "::progress:: 0.1"
sleep {sleep}
cat > "$REPROGATE_OUTPUT_DIR/metrics.json" <<JSON
{{"metrics": [{{"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms"}}]}}
JSON
echo "::progress:: 1"
"""


# --- the Django subprocesses (setup, then one campaign per agent count) -----------


def _setup(spec: dict[str, Any]) -> dict[str, Any]:
    """The organisations, the accepted bundle, the pool, the host tokens."""
    import django

    django.setup()
    from accounts.models import Organisation, Role
    from benchmarks.services.host_tokens import host_token_issue
    from benchmarks.services.pools import pool_create
    from tests.accounts.factories import (
        MembershipFactory,
        OrganisationFactory,
        UserFactory,
    )
    from tests.artifacts.ingest_support import open_rfp, register_corpus_keys
    from tests.benchmarks.runner.support import accepted_bundle

    buyer = OrganisationFactory.create(
        slug="northwind-ai", kind=Organisation.Kind.BUYER
    )
    lab = OrganisationFactory.create(slug="northwind-lab", kind=Organisation.Kind.LAB)
    buyer.engages.add(lab)
    vendor = OrganisationFactory.create(
        slug="acme-flash", kind=Organisation.Kind.VENDOR
    )
    vendor_user = UserFactory.create(username="vendor-a")
    MembershipFactory.create(user=vendor_user, organisation=vendor, role=Role.VENDOR)
    labops = UserFactory.create(username="labops")
    MembershipFactory.create(user=labops, organisation=lab, role=Role.LABOPS)
    register_corpus_keys([vendor], vendor_user)
    rfp = open_rfp(vendor, buyer=buyer)
    scenario = {
        "name": "sleep",
        "cache": "warm",
        "concurrency": 1,
        "batch_size": 1,
        "duration_s": max(1, int(spec["sleep"])),
    }
    bundle = accepted_bundle(
        Path(spec["work"]) / "bundle",
        rfp,
        vendor,
        vendor_user,
        harness=HARNESS.format(sleep=spec["sleep"]).encode(),
        scenarios=[scenario],
    )
    pool = pool_create(lab_organisation=lab, name=spec["pool"], actor=labops)
    tokens = [
        host_token_issue(pool=pool, name=f"agent-{n}", actor=labops).raw
        for n in range(spec["agents"])
    ]
    return {"bundle": bundle.pk, "pool": pool.pk, "labops": labops.pk, "tokens": tokens}


def _campaign(spec: dict[str, Any]) -> dict[str, Any]:
    """Start a campaign of ``runs`` runs; wait until every one has ended."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from artifacts.models import Bundle
    from benchmarks.models import LabPool, Run
    from benchmarks.services.campaigns import campaign_start

    bundle = Bundle.objects.get(pk=spec["bundle"])
    pool = LabPool.objects.get(pk=spec["pool"])
    actor = get_user_model().objects.get(pk=spec["labops"])
    began = time.monotonic()
    campaign = campaign_start(
        bundle=bundle, pool=pool, repetitions=spec["runs"], actor=actor
    )  # sent to the pool's queue as it commits
    deadline = began + spec["timeout"]
    runs = Run.objects.filter(campaign=campaign)
    while runs.exclude(state__in=FINAL_STATES).exists():
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    elapsed = time.monotonic() - began
    rows = list(
        runs.values("state", "worker_name", "claimed_at", "finished_at", "attempt")
    )
    spans = [
        (row["finished_at"] - row["claimed_at"]).total_seconds()
        for row in rows
        if row["finished_at"] and row["claimed_at"]
    ]
    by_worker: dict[str, int] = {}
    for row in rows:
        by_worker[row["worker_name"]] = by_worker.get(row["worker_name"], 0) + 1
    return {
        "elapsed_s": elapsed,
        "states": [row["state"] for row in rows],
        "retried": sum(1 for row in rows if row["attempt"] > 1),
        "spans_s": spans,
        "by_worker": by_worker,
    }


def _django(mode: str, spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.perf.bench_scaleout", f"--{mode}",
         json.dumps(spec)],
        cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=spec.get("timeout", 300) + 120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(
            f"{mode} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --- the services around it ---------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(argv: list[str], stdin: str = "") -> str:
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()[-2000:]}")
    return done.stdout


@contextmanager
def postgres_database(url: str | None) -> Iterator[str]:
    """The database URL to use: ``url``, or a fresh one dropped afterwards."""
    if url:
        yield url
        return
    import psycopg

    name = f"reprogate_scaleout_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass(frozen=True)
class BrokerUrls:
    server: str
    agent: str


@contextmanager
def rabbitmq_broker(pool: str) -> Iterator[BrokerUrls]:
    """A vhost of its own; the server's user and the pool's user, made by the
    deployment scripts; all deleted afterwards."""
    suffix = pool.rsplit("-", 1)[-1]
    vhost, server_user, pool_user = (
        f"scaleout-{suffix}",
        f"scaleout-{suffix}",
        f"pool-{pool}",
    )
    try:
        server_password = _run(
            [str(RABBITMQ_SCRIPTS / "server-user.sh"), vhost, server_user]
        ).strip()
        pool_password = _run(
            [str(RABBITMQ_SCRIPTS / "pool-user.sh"), pool, vhost]
        ).strip()
        base = "127.0.0.1:5672"
        yield BrokerUrls(
            server=f"amqp://{server_user}:{server_password}@{base}/{vhost}",
            agent=f"amqp://{pool_user}:{pool_password}@{base}/{vhost}",
        )
    finally:
        for args in (
            ["delete_vhost", vhost],
            ["delete_user", server_user],
            ["delete_user", pool_user],
        ):
            subprocess.run(
                ["rabbitmqctl", args[0], "--", args[1]], capture_output=True,
                timeout=60, check=False,
            )  # fmt: skip


@dataclass
class Process:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.text().splitlines()[-lines:])

    def stop(self, timeout: float = 60) -> None:
        if self.process.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def _spawn(
    name: str, argv: list[str], env: dict[str, str], cwd: Path, log: Path
) -> Process:
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    return Process(name, process, log)


def start_server(env: dict[str, str], work: Path) -> tuple[Process, str]:
    port = free_port()
    argv = [
        sys.executable, "-m", "gunicorn", "config.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4",
        "--worker-class", "gthread", "--timeout", "120", "--log-level", "warning",
    ]  # fmt: skip
    server = _spawn("server", argv, env, ROOT, work / "server.log")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{server.tail()}")
        health = f"{base}/healthz"
        with suppress(OSError), urllib.request.urlopen(health, timeout=2) as answer:  # noqa: S310
            if answer.status == 200:
                return server, base
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"the server did not answer /healthz:\n{server.tail()}")


def agent_environment(
    home: Path, server: str, token: str, broker: str, name: str
) -> dict[str, str]:
    """Built from scratch: the agent's own variables, PATH, HOME, LANG and the
    checkout on PYTHONPATH; nothing of the server's."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
        "REPROGATE_SERVER_URL": server,
        "REPROGATE_HOST_TOKEN": token,
        "REPROGATE_BROKER_URL": broker,
        "REPROGATE_AGENT_WORK_DIR": str(home / "work"),
        "REPROGATE_AGENT_NAME": name,
    }


def start_agents(
    count: int, tokens: list[str], server: str, broker: str, work: Path
) -> list[Process]:
    agents = []
    for n in range(count):
        home = work / f"agent-{n}"
        (home / "work").mkdir(parents=True, exist_ok=True)
        env = agent_environment(home, server, tokens[n], broker, f"agent-{n}")
        # A host keeps its key across rounds (the server pinned it at its first hello).
        env["REPROGATE_AGENT_STATE_DIR"] = str(work.parent / "agent-state" / f"{n}")
        argv = [sys.executable, "-m", "reprogate_agent"]
        agents.append(_spawn(f"agent-{n}", argv, env, home, home / "agent.log"))
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = list(agents)
    try:
        while waiting:
            for agent in list(waiting):
                if agent.process.poll() is not None:
                    raise RuntimeError(f"{agent.name} exited:\n{agent.tail()}")
                if " ready." in agent.text():
                    waiting.remove(agent)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{waiting[0].name} not ready:\n{waiting[0].tail()}")
            time.sleep(0.2)
    except BaseException:
        for agent in agents:
            agent.stop()
        raise
    return agents


# --- the benchmark ------------------------------------------------------------------


@dataclass
class Round:
    agents: int
    runs: int
    elapsed_s: float
    succeeded: int
    retried: int
    spans_s: list[float] = field(default_factory=list)
    by_worker: dict[str, int] = field(default_factory=dict)

    @property
    def per_minute(self) -> float:
        return self.succeeded / self.elapsed_s * 60 if self.elapsed_s else 0.0


def report(rounds: list[Round], sleep: float, broker: str) -> str:
    base = rounds[0].per_minute / rounds[0].agents if rounds else 0.0
    lines = [
        f"scale-out: harness sleeps {sleep:g} s; broker {broker}; server gunicorn "
        "2x4 threads on PostgreSQL",
        f"{'agents':>6} {'runs':>5} {'ok':>4} {'retried':>7} {'seconds':>8} "
        f"{'runs/min':>9} {'ratio':>6} {'ideal':>5} {'run mean s':>10}  per agent",
    ]
    for r in rounds:
        ratio = r.per_minute / rounds[0].per_minute if rounds[0].per_minute else 0.0
        mean = statistics.fmean(r.spans_s) if r.spans_s else 0.0
        spread = " ".join(str(v) for _, v in sorted(r.by_worker.items()))
        lines.append(
            f"{r.agents:>6} {r.runs:>5} {r.succeeded:>4} {r.retried:>7} "
            f"{r.elapsed_s:>8.1f} {r.per_minute:>9.2f} {ratio:>6.2f} {r.agents:>5} "
            f"{mean:>10.2f}  {spread}"
        )
    if base:
        lines.append(
            f"one agent's ceiling at this run time: {60 / (sleep or 1):.2f} runs/min"
        )
    return "\n".join(lines)


def server_environment(
    database_url: str, broker_url: str, var_dir: Path
) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(
            ("DJANGO_", "CELERY_", "DATABASE_", "REPROGATE_", "RUNNER_")
        )
    }
    env.update(DJANGO_ENV)
    env.update(
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        REPROGATE_VAR_DIR=str(var_dir),
        PYTHONPATH=str(ROOT),
    )
    return env


_BEGAN = time.monotonic()


def note(message: str) -> None:
    """A progress line on stderr, with the seconds since the benchmark began."""
    print(
        f"[{time.monotonic() - _BEGAN:6.1f} s] {message}", file=sys.stderr, flush=True
    )


def bench(args: argparse.Namespace, work: Path) -> int:
    counts = [int(n) for n in args.agents.split(",")]
    pool = f"scaleout-{secrets.token_hex(4)}"
    rounds: list[Round] = []
    failed = False
    with (
        postgres_database(args.database_url) as database_url,
        _broker(args, pool) as urls,
    ):
        note(f"database and broker ({args.broker}) ready; migrating")
        env = server_environment(database_url, urls.server, work / "var")
        done = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "--verbosity=0"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-4000:], file=sys.stderr)
            return 1
        note("migrated; making the bundle, the pool and the host tokens")
        made = _django(
            "setup",
            {
                "work": str(work),
                "sleep": args.sleep,
                "pool": pool,
                "agents": max(counts),
            },
            env,
        )
        note("starting the server")
        server, base = start_server(env, work)
        note(f"server up at {base}")
        try:
            for count in counts:
                note(f"starting {count} agent(s)")
                agents = start_agents(
                    count, made["tokens"], base, urls.agent, work / f"round-{count}"
                )
                note(f"{count} agent(s) ready; the campaign starts")
                try:
                    runs = count * args.runs_per_agent
                    timeout = runs / count * (args.sleep + 30) + 120
                    spec = {**made, "runs": runs, "timeout": timeout}
                    got = _django("campaign", spec, env)
                finally:
                    early = [a.name for a in agents if a.process.poll() is not None]
                    for agent in agents:
                        agent.stop()
                succeeded = got["states"].count("succeeded")
                rounds.append(
                    Round(
                        agents=count, runs=runs, elapsed_s=got["elapsed_s"],
                        succeeded=succeeded, retried=got["retried"],
                        spans_s=got["spans_s"], by_worker=got["by_worker"],
                    )
                )  # fmt: skip
                seconds = got["elapsed_s"]
                note(f"{count} agent(s): {succeeded}/{runs} runs in {seconds:.1f} s")
                if succeeded != runs or early:
                    failed = True
                    print(
                        f"runs: {sorted(got['states'])}; exited early: {early}",
                        file=sys.stderr,
                    )
                    for agent in agents:
                        print(f"--- {agent.name}\n{agent.tail()}", file=sys.stderr)
        finally:
            server.stop()
    print(report(rounds, args.sleep, args.broker))
    return 1 if failed else 0


@contextmanager
def _broker(args: argparse.Namespace, pool: str) -> Iterator[BrokerUrls]:
    if args.broker == "redis":
        yield BrokerUrls(server=args.redis_url, agent=args.redis_url)
    else:
        with rabbitmq_broker(pool) as urls:
            yield urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--agents", default="1,2,4", help="agent counts, comma-separated"
    )
    parser.add_argument("--runs-per-agent", type=int, default=6)
    parser.add_argument(
        "--sleep", type=float, default=5.0, help="the harness's sleep (s)"
    )
    parser.add_argument("--broker", choices=("rabbitmq", "redis"), default="rabbitmq")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--database-url", help="an EMPTY PostgreSQL database to use")
    parser.add_argument("--work-dir", type=Path, help="work there and keep the files")
    parser.add_argument("--setup", help=argparse.SUPPRESS)
    parser.add_argument("--campaign", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.setup:
        print(json.dumps(_setup(json.loads(args.setup))))
        return 0
    if args.campaign:
        print(json.dumps(_campaign(json.loads(args.campaign))))
        return 0
    counts = [int(n) for n in args.agents.split(",")]
    if not counts or min(counts) < 1 or args.runs_per_agent < 1:
        parser.error("--agents and --runs-per-agent must be positive")
    if max(counts) * args.runs_per_agent > 100:
        parser.error("at most 100 runs per campaign (agents x runs per agent)")
    try:
        if args.work_dir:
            args.work_dir.mkdir(parents=True, exist_ok=True)
            return bench(args, args.work_dir.resolve())
        with tempfile.TemporaryDirectory(prefix="bench-scaleout-") as work:
            return bench(args, Path(work))
    except RuntimeError as error:
        print(f"bench_scaleout: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
