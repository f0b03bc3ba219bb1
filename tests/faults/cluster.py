"""The processes of a fault test, each started, killed and started again by the
test: a Redis server of its own (on a free loopback port, with an append-only
file so that queued messages survive a restart, as a production broker's do),
Celery beat, and the web server (gunicorn with deploy/gunicorn.conf.py).

The database, the blob store and the runner workers are those of
tests/integration/test_runner_workers.py (its module fixtures), pointed at this
Redis."""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis

from artifacts.models import Deposit
from benchmarks.models import Campaign, LabPool, Run, RunMetric, RunOutput
from benchmarks.services.host_tokens import host_token_issue
from tests.faults.support import free_port, healthz, unavailable, wait_for
from tests.integration import test_runner_workers as runner_it
from tests.processes import PROJECT_DIR, Process

BIN = Path(sys.executable).parent
START_TIMEOUT_S = 60.0
# About 3 s of work with progress, so that a fault lands in the middle of a run.
HARNESS = runner_it.SLOW_HARNESS.replace(b"-lt 40", b"-lt 12")


@dataclass
class OwnRedis:
    """redis-server on ``port`` with its files in ``directory``."""

    directory: Path
    port: int = field(default_factory=free_port)
    server: Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if self.server is None:
            binary = shutil.which("redis-server")
            if binary is None:
                unavailable("redis-server is not installed")
            argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1"]
            argv += ["--dir", str(self.directory), "--save", ""]
            argv += ["--appendonly", "yes", "--appendfsync", "always"]
            self.server = Process("redis", argv, {}, self.directory / "redis.log")
        self.server.start()
        wait_for(self.ping, START_TIMEOUT_S, self.server.text)

    def ping(self) -> bool:
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def unacked(self) -> int:
        """Messages delivered and not yet acknowledged (kombu's ``unacked`` hash)."""
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        try:
            return int(client.hlen("unacked"))
        finally:
            client.close()

    def kill(self) -> None:
        assert self.server is not None
        self.server.kill()


def beat(env: dict[str, str], var_dir: Path) -> Process:
    """Celery beat with a fast schedule (tests/faults/beat_app.py); its schedule
    file under ``var_dir`` is kept across restarts, as scripts/run keeps it."""
    argv = [str(BIN / "celery"), "-A", "tests.faults.beat_app", "beat", "-l", "INFO"]
    argv += [f"--schedule={var_dir / 'beat-schedule'}", "--pidfile="]
    return Process("beat", argv, env, var_dir / "beat.log")


def web(env: dict[str, str], var_dir: Path) -> tuple[Process, int]:
    """gunicorn serving the product with one worker on a free loopback port."""
    port = free_port()
    env = {
        **env,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    argv = [str(BIN / "gunicorn"), "config.wsgi:application"]
    argv += ["-c", "deploy/gunicorn.conf.py"]
    return Process("web", argv, env, var_dir / "web.log"), port


def time_until_healthy(port: int, timeout: float, explain: Process) -> float:
    """Seconds until ``/healthz`` answers 200 (polled every 50 ms)."""
    started = time.monotonic()
    wait_for(
        lambda: (answer := healthz(port, timeout=2)) is not None and answer[0] == 200,
        timeout,
        lambda: f"/healthz {healthz(port)}\n{explain.text()[-3000:]}",
        step=0.05,
    )
    return time.monotonic() - started


def runner_worker(
    env: dict[str, str], var_dir: Path, name: str, queues: list[str]
) -> Process:
    """A server worker (solo pool, one task at a time) consuming ``queues``: the
    default queue's tasks (a campaign's gate evaluation). No server worker runs
    a run: a pool's queue is the lab agents' (``runner_agent``)."""
    argv = [str(BIN / "celery"), "-A", "config", "worker", "--pool", "solo"]
    argv += ["--concurrency", "1", "-Q", ",".join(queues), "-n", f"{name}@%h"]
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return Process(name, [*argv, "-l", "INFO"], env, var_dir / f"{name}.log")


def runner_agent(
    env: dict[str, str], var_dir: Path, name: str, pool: LabPool, server_url: str
) -> Process:
    """A lab host of ``pool`` as the one run path has it: a host token of its
    own (named ``name``), and ``python -m reprogate_agent`` against
    ``server_url`` on the server's broker."""
    issued = host_token_issue(pool=pool, name=name, actor=None)
    return agent_process(
        var_dir, server_url, env["CELERY_BROKER_URL"], issued.raw, name
    )


@contextlib.contextmanager
def site(env: dict[str, str], var_dir: Path) -> Iterator[str]:
    """A web server (``web``) for agents to talk to, healthy; its URL."""
    server, port = web(env, var_dir)
    server.start()
    try:
        time_until_healthy(port, START_TIMEOUT_S, server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def agent_process(
    var_dir: Path, server_url: str, broker: str, raw: str, name: str
) -> Process:
    """``python -m reprogate_agent`` as a lab host runs it: its environment built
    from scratch (the server, the host token in a file, the pool's broker, a
    work dir, its name), nothing of the server's."""
    home = var_dir / f"home-{name}"
    home.mkdir(exist_ok=True)
    (home / "token").write_text(raw + "\n")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT_DIR),  # the checkout, not an installed package
        "REPROGATE_SERVER_URL": server_url,
        "REPROGATE_HOST_TOKEN_FILE": str(home / "token"),
        "REPROGATE_BROKER_URL": broker,
        "REPROGATE_AGENT_WORK_DIR": str(home / "work"),
        "REPROGATE_AGENT_NAME": name,
    }
    argv = [sys.executable, "-m", "reprogate_agent"]
    return Process(name, argv, env, var_dir / f"{name}.log")


def wait_ready(worker: Process) -> Process:
    wait_for(
        lambda: " ready." in worker.since_last_start() or not worker.alive(),
        START_TIMEOUT_S,
        worker.text,
    )
    assert worker.alive(), worker.text()[-3000:]
    return worker


def counted_once(campaign: Campaign, only: Iterable[Run] | None = None) -> None:
    """Every run (of ``only``) succeeded with one attempt's metrics and outputs,
    and one deposit."""
    for run in campaign.runs.all() if only is None else only:
        assert run.state == Run.State.SUCCEEDED, runner_it._runs(campaign)
        metrics = RunMetric.objects.filter(run=run)
        harness = metrics.exclude(method="telemetry")  # the runner's own beside it
        assert list(harness.values_list("attempt", flat=True)) == [run.attempt]
        assert set(metrics.values_list("attempt", flat=True)) == {run.attempt}
        outputs = RunOutput.objects.filter(run=run).values_list("attempt", flat=True)
        assert set(outputs) == {run.attempt}
        assert run.output_deposit_id is not None
        assert _output_deposits(run) == 1


def _output_deposits(run: Run) -> int:
    """Run-output deposits whose logged record names ``run``."""
    named = f'"run":"{run.public_id}"'.encode()
    leaves = Deposit.objects.filter(kind=Deposit.Kind.RUN_OUTPUT)
    return sum(named in bytes(leaf) for leaf in leaves.values_list("leaf", flat=True))
