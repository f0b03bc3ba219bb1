"""The production smoke test, without containers: the whole deployment on
loopback (tests/deploy/stack.py: PostgreSQL, RabbitMQ, S3, gunicorn behind
nginx with TLS, Celery beat and the default worker, production settings), two
lab pools each with a host joined by ``manage.py pool_join`` and its runner agent
(``python -m reprogate_agent``) holding nothing but the runner API's URL, its
host token, its pool's broker user and the CA file.

A vendor signs and uploads a bundle with the ``reprogate`` CLI through nginx,
the lab operator starts a campaign on each pool through the API, both complete
on their own pool's agent, the results are there, escrow's fixity check is
clean; then one host's token is revoked and its agent is refused and stops.

It runs once: in CI's PostgreSQL pass, skipped unless the suite's DATABASE_URL
is PostgreSQL (its own database is on a PostgreSQL server the stack starts, one
that asks every client for a password). One stack serves the whole module; it
takes about a minute on an idle machine."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy.stack import (
    BIN,
    HOST,
    PROJECT_DIR,
    Process,
    Stack,
    StackError,
    base_env,
    running,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FINAL = {"succeeded", "failed", "cancelled", "timed_out", "parse_failed"}
RUN_TIMEOUT_S = 120.0
SCENARIOS = [
    {"name": "cold-c1", "cache": "cold", "concurrency": 1, "batch_size": 1,
     "duration_s": 1},
    {"name": "warm-c1", "cache": "warm", "concurrency": 1, "batch_size": 1,
     "duration_s": 1},
]  # fmt: skip
# A harness that follows the runner contract: progress, one reprogate-metrics file.
HARNESS = """#!/bin/sh
set -eu
echo "scenario: $REPROGATE_SCENARIO"
echo "::progress:: 0.5"
name=$(printf '%s' "$REPROGATE_SCENARIO" | sed -n 's/.*"name": "\\([^"]*\\)".*/\\1/p')
cat > "$REPROGATE_OUTPUT_DIR/metrics.json" <<JSON
{"metrics": [
  {"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms", "scenario": "$name"},
  {"name": "read_iops", "stat": "mean", "value": 1000, "unit": "IO/s"}
 ]}
JSON
echo "::progress:: 1"
"""
# psycopg with nothing but the caller's environment and the database's address.
CONNECT = """
import sys, psycopg
host, port, name, user = sys.argv[1:]
try:
    psycopg.connect(host=host, port=port, dbname=name, user=user or None,
                    connect_timeout=5).close()
except psycopg.OperationalError as error:
    print("refused:", error)
    sys.exit(1)
print("connected")
"""
# Variables a lab host must never hold.
SERVER_SECRETS = re.compile(r"^(DATABASE_URL|AWS_[A-Z_]*|DJANGO_SECRET_KEY)$")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the production smoke test must run on CI: {reason}")
    pytest.skip(reason)


@dataclass
class People:
    suffix: str
    rfp: str
    vendor: str
    passwords: dict[str, str]
    pools: list[str]


@dataclass
class Agent:
    pool: str
    host: str
    token: str
    env: dict[str, str]
    process: Process


@pytest.fixture(scope="module")
def stack(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """The deployment (tests/deploy/stack.py), started once for the module."""
    from django.db import connection

    if connection.vendor != "postgresql" or not os.environ.get(
        "DATABASE_URL", ""
    ).startswith(("postgres://", "postgresql://")):
        pytest.skip("the production smoke test runs in the PostgreSQL pass")
    for program in ("nginx", "rabbitmqctl", "envsubst", "ssh-keygen", "runuser"):
        if shutil.which(program) is None:
            _unavailable(f"{program} is not installed")
    root = tmp_path_factory.mktemp("smoke")
    try:
        with running(root) as deployed:
            print(f"\n[smoke] stack up: {deployed.timings}", flush=True)
            yield deployed
        print(f"\n[smoke] stack down: {deployed.timings}", flush=True)
    except StackError as error:
        pytest.fail(f"the stack did not start: {error}")


@pytest.fixture(scope="module")
def people(stack: Stack) -> People:
    """A buyer engaging a lab, the lab's operator and its two pools, a vendor
    invited to the buyer's published RFP; made as an operator would, with
    manage.py on the server."""
    suffix = stack.suffix
    passwords = {name: os.urandom(12).hex() for name in ("vendor", "labops")}
    pools = [f"smoke-a-{suffix}", f"smoke-b-{suffix}"]
    rfp, vendor = f"RFP-SMOKE-{suffix.upper()}", f"smoke-vendor-{suffix}"
    stack.shell(
        f"""
from datetime import timedelta
from django.contrib.auth import get_user_model
from accounts.selectors import clock
from accounts.models import Membership, Organisation, Role
from benchmarks.services.pools import pool_create
from procurement.models import Rfp
buyer = Organisation.objects.create(slug="smoke-buyer-{suffix}", name="Buyer",
                                    kind="buyer")
lab = Organisation.objects.create(slug="smoke-lab-{suffix}", name="Lab", kind="lab")
vendor = Organisation.objects.create(slug="{vendor}", name="Vendor", kind="vendor")
buyer.engages.add(lab)
users = get_user_model().objects
for name, org, role in (("vendor", vendor, Role.VENDOR),
                        ("labops", lab, Role.LABOPS)):
    user = users.create_user(f"smoke-{{name}}", password={passwords!r}[name])
    Membership.objects.create(user=user, organisation=org, role=role)
rfp = Rfp.objects.create(reference="{rfp}", title="Smoke", buyer_organisation=buyer,
    submission_deadline=clock.now() + timedelta(days=14),
    status=Rfp.Status.PUBLISHED)
rfp.invited_vendors.add(vendor)
pool_create(lab_organisation=lab, name="{pools[1]}", actor=None)
"""
    )
    # One pool with the command, the other with the service it calls.
    done = stack.manage("pool_create", pools[0], "--lab", f"smoke-lab-{suffix}")
    assert f"consume pool.{pools[0]}" in done.stdout
    return People(suffix, rfp, vendor, passwords, pools)


def _join(stack: Stack, pool: str, host: str) -> dict[str, str]:
    """``manage.py pool_join``'s command for the host, the broker password filled
    in as the lab operator would: the variables it sets."""
    broker = stack.pool_broker_url(pool)
    done = stack.manage("pool_join", pool, host)
    words = shlex.split(done.stdout.strip())
    assert words[-3:] == ["python", "-m", "reprogate_agent"], done.stdout
    variables = dict(word.split("=", 1) for word in words[:-3])
    assert set(variables) == {
        "REPROGATE_SERVER_URL",
        "REPROGATE_BROKER_URL",
        "REPROGATE_HOST_TOKEN",
    }, done.stdout
    assert variables["REPROGATE_SERVER_URL"] == stack.url
    # The server names the pool's broker user, never its password: the operator
    # puts in the one it set (and the broker's address, if the server has none).
    shown = urlsplit(variables["REPROGATE_BROKER_URL"])
    assert (shown.scheme, shown.username) == ("amqp", f"pool-{pool}"), shown
    assert shown.password == "BROKER-PASSWORD", shown
    variables["REPROGATE_BROKER_URL"] = broker
    assert variables["REPROGATE_HOST_TOKEN"].startswith("rgh_")
    return variables


@pytest.fixture(scope="module")
def agents(stack: Stack, people: People) -> Iterator[dict[str, Agent]]:
    """One host per pool, each joined with ``pool_join`` and running its agent
    in a folder of its own, from an environment built from nothing."""
    started: dict[str, Agent] = {}
    hosts = [f"lab-{index + 1}" for index in range(len(people.pools))]
    with ThreadPoolExecutor(len(hosts)) as threads:  # two manage.py at once
        joined = list(threads.map(partial(_join, stack), people.pools, hosts))
    for pool, host, variables in zip(people.pools, hosts, joined, strict=True):
        home = stack.root / f"agent-{host}"
        home.mkdir()
        env = {**base_env(), "HOME": str(home), **variables}
        env["REPROGATE_CA_FILE"] = str(stack.ca_file)
        process = _start_agent(stack, host, env, home)
        token = variables["REPROGATE_HOST_TOKEN"]
        started[pool] = Agent(pool, host, token, env, process)
    for agent in started.values():
        agent.process.wait_output(" ready.", timeout=90)
    yield started
    # Stopped while the server still answers their goodbye.
    for agent in started.values():
        agent.process.terminate()
    for agent in started.values():
        agent.process.stop(timeout=20)


def _start_agent(stack: Stack, host: str, env: dict[str, str], home: Path) -> Process:
    """``python -m reprogate_agent`` in the host's own folder (its work folder is
    ./work there), as the command pool_join printed."""
    argv = [sys.executable, "-m", "reprogate_agent"]
    return stack.start_process(f"agent-{host}", argv, env=env, cwd=home)


def _cli(stack: Stack, *args: str, env: dict[str, str] | None = None) -> str:
    """``reprogate`` as a vendor's machine runs it: it trusts the site's
    certificate (SSL_CERT_FILE) and knows nothing else of the server."""
    done = subprocess.run(
        [str(BIN / "reprogate"), *args],
        env={**base_env(), "SSL_CERT_FILE": str(stack.ca_file), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=stack.root,
    )
    assert done.returncode == 0, f"reprogate {args[0]}: {done.stdout}{done.stderr}"
    return done.stdout


def _bundle_sources(folder: Path, people: People) -> Path:
    files = {
        "harness/run.sh": HARNESS,
        "environment/manifest.json": json.dumps({"os": "Debian", "kernel": "6"}),
        "workloads/chat.json": '{"model": "llama-70b"}\n',
        "bundle.json": json.dumps(
            {
                "rfp": people.rfp,
                "vendor": people.vendor,
                "harness": {
                    "entrypoint": "harness/run.sh",
                    "outputs": [
                        {"path": "metrics.json", "parser": "reprogate-metrics"}
                    ],
                    "scenarios": SCENARIOS,
                },
                "claims": [
                    {"metric": "ttft_ms", "stat": "p99", "scenario": "warm-c1",
                     "value": 40.0, "unit": "ms"}
                ],
            }
        ),
    }  # fmt: skip
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    (folder / "harness/run.sh").chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def bundle(stack: Stack, people: People) -> str:
    """The vendor's bundle, signed and uploaded with the CLI over HTTPS: its id."""
    vendor = stack.root / "vendor"
    vendor.mkdir()
    key = vendor / "signing-key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", people.vendor,
         "-f", str(key)],
        check=True, timeout=30,
    )  # fmt: skip
    token = _cli(
        stack, "login", "--username", "smoke-vendor", "--url", stack.url,
        env={"REPROGATE_PASSWORD": people.passwords["vendor"]},
    ).split()[0]  # fmt: skip
    _cli(stack, "key", "register", f"{key}.pub", "--token", token, "--url", stack.url)
    archive = vendor / "bundle.tar.gz"
    sources = _bundle_sources(vendor / "sources", people)
    _cli(stack, "bundle", "build", str(sources), "--key", str(key), "-o", str(archive))
    out = _cli(
        stack, "submit", str(archive), "--url", stack.url, "--token", token,
        "--rfp", people.rfp,
    )  # fmt: skip
    assert "status: accepted" in out, out
    found = re.search(r"^id: ([0-9a-f-]{36})$", out, re.M)
    assert found, out
    # Bids are opened after the deadline; the smoke test does not wait for it.
    stack.shell(
        "from procurement.models import Rfp; "
        f"Rfp.objects.filter(reference={people.rfp!r}).update(status=Rfp.Status.OPENED)"
    )
    return found.group(1)


def _labops_token(stack: Stack, people: People) -> str:
    answer = stack.api(
        "POST",
        "/api/v1/auth/token/",
        {"username": "smoke-labops", "password": people.passwords["labops"]},
    )
    assert answer.status == 200, answer
    return str(answer.body["token"])


def _campaign_over(stack: Stack, token: str, campaign: str) -> dict[str, Any]:
    def over() -> dict[str, Any] | None:
        answer = stack.api("GET", f"/api/v1/campaigns/{campaign}/", token=token)
        assert answer.status == 200, answer
        runs = answer.body["runs"]
        return answer.body if runs and {r["status"] for r in runs} <= FINAL else None

    return dict(
        wait_for(over, RUN_TIMEOUT_S, lambda: f"campaign {campaign}\n{stack.tails()}")
    )


# --- the tests ---------------------------------------------------------------------


def test_the_site_is_served_over_tls_by_nginx_with_production_settings(
    stack: Stack,
) -> None:
    # Every probe (database, broker, S3) answers; on a busy machine one may be
    # slow to at first, so the answer is awaited.
    health = wait_for(
        lambda: (answer := stack.api("GET", "/healthz")).status == 200 and answer,
        30,
        lambda: f"{stack.api('GET', '/healthz')}\n{stack.tails()}",
    )
    assert health.body["status"] == "ok", health
    assert health.headers.get("server", "").startswith("nginx")
    assert "strict-transport-security" in stack.api("GET", "/api/v1/me/").headers
    # An error page is the production one: no traceback, no settings.
    missing = stack.api("GET", "/no-such-page/")
    assert missing.status == 404
    assert missing.body is None or "Traceback" not in json.dumps(missing.body)
    # Static files are collectstatic's, from disk.
    static = list((stack.var / "static").rglob("*.css"))
    assert static, "collectstatic wrote no stylesheet"
    path = static[0].relative_to(stack.var / "static").as_posix()
    served = stack.api("GET", f"/static/{path}", headers={"Accept-Encoding": "gzip"})
    assert served.status == 200, served
    assert served.headers.get("content-encoding") == "gzip", served.headers
    # Django's deployment checklist passes with the stack's settings.
    checked = stack.manage("check", "--deploy", "--fail-level", "WARNING", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The unauthenticated API is refused in the API's own error shape.
    refused = stack.api("GET", "/api/v1/campaigns/")
    assert refused.status in (401, 403), refused
    assert set(refused.body) >= {"code", "message"}, refused


def test_a_lab_host_holds_no_server_secret_and_cannot_reach_the_database(
    stack: Stack, agents: dict[str, Agent]
) -> None:
    for agent in agents.values():
        assert set(agent.env) <= {
            "PATH", "HOME", "LANG", "REPROGATE_SERVER_URL", "REPROGATE_HOST_TOKEN",
            "REPROGATE_BROKER_URL", "REPROGATE_CA_FILE",
        }  # fmt: skip
        for pid in _process_tree(agent.process.pid):
            names = _environ_names(pid)
            assert not {n for n in names if SERVER_SECRETS.match(n)}, (pid, names)
        # The database, even named with its address, refuses the host: its
        # environment holds no password (nor a PGPASSWORD or ~/.pgpass).
        assert stack.database is not None
        for user in ("", "postgres"):
            connect = subprocess.run(
                [sys.executable, "-c", CONNECT, HOST, str(stack.database.port),
                 stack.database_name, user],
                env=agent.env, capture_output=True, text=True, timeout=30, check=False,
                cwd=agent.env["HOME"],
            )  # fmt: skip
            assert connect.returncode == 1, connect.stderr
            assert "refused: " in connect.stdout, connect.stdout
            assert "password" in connect.stdout, connect.stdout
        # Nor can it load the server's settings: they want the Django secret.
        settings = subprocess.run(
            [sys.executable, "manage.py", "check"], cwd=PROJECT_DIR,
            env=agent.env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert settings.returncode == 3, settings.stderr
        assert "DJANGO_SECRET_KEY" in settings.stderr


def _process_tree(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def _environ_names(pid: int) -> set[str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return {item.split(b"=", 1)[0].decode() for item in raw.split(b"\0") if item}


def test_an_uploaded_bundle_runs_on_each_pool_and_escrow_stays_intact(
    stack: Stack, people: People, agents: dict[str, Agent], bundle: str
) -> None:
    token = _labops_token(stack, people)
    started = {}
    for pool in people.pools:
        answer = stack.api(
            "POST",
            "/api/v1/campaigns/",
            {"bundle": bundle, "pool": pool, "repetitions": 1},
            token=token,
        )
        assert answer.status == 201, answer
        started[pool] = answer.body["id"]

    for pool, campaign in started.items():
        detail = _campaign_over(stack, token, campaign)
        runs = detail["runs"]
        assert {r["status"] for r in runs} == {"succeeded"}, (runs, stack.tails())
        assert sorted(r["scenario"] for r in runs) == ["cold-c1", "warm-c1"]
        assert _claimed_by(stack, runs) == {agents[pool].host}, runs
        for run in runs:
            answer = stack.api("GET", f"/api/v1/runs/{run['id']}/", token=token)
            assert answer.status == 200, answer
            metrics = {(m["name"], m["stat"]): m for m in answer.body["metrics"]}
            assert metrics[("ttft_ms", "p99")]["value"] == 41.5
            assert metrics[("ttft_ms", "p99")]["unit"] == "ms"
            assert answer.body["exit_code"] == 0

    anonymous = stack.api("GET", f"/api/v1/campaigns/{started[people.pools[0]]}/")
    assert anonymous.status in (401, 403)  # only with a token
    # Bundles, outputs and evidence are in S3, none on the server's disk.
    keys = stack.s3_keys()
    assert any(key.startswith("media/") for key in keys), keys
    assert not (stack.var / "media").exists()
    fixity = stack.manage("escrow_verify", check=False)
    assert fixity.returncode == 0, fixity.stdout + fixity.stderr


def test_a_revoked_host_token_is_refused_and_its_agent_stops(
    stack: Stack, people: People, agents: dict[str, Agent]
) -> None:
    revoked, kept = (agents[pool] for pool in people.pools)
    done = stack.manage("pool_revoke", revoked.pool, revoked.host)
    assert "Revoked" in done.stdout

    refused = stack.api(
        "POST",
        "/api/v1/runner/heartbeat",
        {"worker_name": revoked.host},
        token=revoked.token,
        scheme="Bearer",
    )
    assert refused.status == 401, refused
    assert refused.body["code"] == "host_token_refused", refused
    wait_for(lambda: not revoked.process.alive(), 60, lambda: revoked.process.tail())
    assert kept.process.alive(), kept.process.tail()
    pools = stack.api("GET", "/api/v1/lab/pools/", token=_labops_token(stack, people))
    assert pools.status == 200, pools
    rows = pools.body["results"]
    status = {pool["name"]: {h["status"] for h in pool["hosts"]} for pool in rows}
    assert status[revoked.pool] == {"offline"}, status
    assert status[kept.pool] == {"online"}, status
    still = stack.api(
        "POST",
        "/api/v1/runner/heartbeat",
        {"worker_name": kept.host},
        token=kept.token,
        scheme="Bearer",
    )
    assert still.status == 200, still


def _claimed_by(stack: Stack, runs: list[dict[str, Any]]) -> set[str]:
    """The hosts that ran these runs, as the server recorded them: the name of
    the host token that registered each."""
    ids = [run["id"] for run in runs]
    out = stack.shell(
        "import json; from benchmarks.models import Run; print(json.dumps(["
        "r.host.token.name if r.host.token_id else None "
        f"for r in Run.objects.filter(public_id__in={ids!r}).select_related("
        "'host__token')]))"
    )
    return set(json.loads(out.strip().splitlines()[-1]))
