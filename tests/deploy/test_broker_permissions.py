"""The broker users of deploy/rabbitmq/ against the real RabbitMQ on
127.0.0.1:5672: a pool's user reaches its pool's queue and nothing else, and a
Celery worker configured as the lab agent's starts as that user and receives the
run the server's user sends.

Each module makes a vhost of its own and its users with the scripts themselves
(``rabbitmqctl`` as root), and deletes them afterwards. Pool and user names carry
a random suffix: RabbitMQ's users are not per vhost, and other tests make pools
too. Without a usable ``rabbitmqctl`` the module skips (on CI it fails)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import amqp  # type: ignore[import-untyped]
import pytest
from amqp.exceptions import AccessRefused, NotAllowed  # type: ignore[import-untyped]
from celery import Celery

from benchmarks.lib.queues import host_queue, pool_permission, pool_queue
from reprogate_agent.celery_app import create_app
from reprogate_agent.options import AgentOptions

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "deploy" / "rabbitmq"
HOST = "127.0.0.1:5672"
SUFFIX = uuid.uuid4().hex[:8]
POOL_A, POOL_B = f"a-{SUFFIX}", f"b-{SUFFIX}"
QUEUE_A, QUEUE_B = pool_queue(POOL_A), pool_queue(POOL_B)
HOST_A = host_queue(POOL_A, "agent@lab-07.example")  # a host's own, of pool a


@dataclass
class Broker:
    vhost: str
    server: tuple[str, str]  # user, password
    pool_a: tuple[str, str]
    pool_b: tuple[str, str]

    def url(self, user: tuple[str, str]) -> str:
        return f"amqp://{user[0]}:{user[1]}@{HOST}/{self.vhost}"

    def connect(
        self, user: tuple[str, str], vhost: str | None = None
    ) -> amqp.Connection:
        connection = amqp.Connection(
            HOST, userid=user[0], password=user[1],
            virtual_host=vhost or self.vhost, confirm_publish=True, connect_timeout=5,
        )  # fmt: skip
        connection.connect()
        return connection


def _ctl(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["rabbitmqctl", *args], input=input, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def _usable() -> str | None:
    """Why rabbitmqctl cannot be used here, or None."""
    if shutil.which("rabbitmqctl") is None:
        return "rabbitmqctl is not installed"
    done = _ctl("await_startup", "--timeout", "20")
    if done.returncode != 0:
        return f"rabbitmqctl await_startup failed: {done.stderr.strip()[-500:]}"
    return None


def _script(
    name: str, *args: str, stdin: str = "", ctl: str = "rabbitmqctl"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPTS / name), *args], input=stdin, capture_output=True, text=True,
        timeout=120, check=False, env={**os.environ, "RABBITMQCTL": ctl},
    )  # fmt: skip


def _started(name: str, *args: str, stdin: str = "") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(SCRIPTS / name), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None
    process.stdin.write(stdin)
    process.stdin.close()
    return process


def _finished(process: subprocess.Popen[str]) -> str:
    """The script's stdout, once it exited 0."""
    assert process.stdout is not None
    assert process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    assert process.wait(timeout=120) == 0, err
    return out


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    reason = _usable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    vhost = f"reprogate-test-{SUFFIX}"
    server_user = f"reprogate-{SUFFIX}"
    users = [server_user, f"pool-{POOL_A}", f"pool-{POOL_B}"]
    try:
        # the server's makes the vhost; then both pools' at once (rabbitmqctl
        # takes a second or two per call)
        server = _script("server-user.sh", vhost, server_user)  # generated password
        assert server.returncode == 0, server.stderr
        password_b = uuid.uuid4().hex  # read from stdin
        a = _started("pool-user.sh", POOL_A, vhost)
        b = _started("pool-user.sh", POOL_B, vhost, stdin=f"{password_b}\n")
        password_a = _finished(a).strip()
        assert _finished(b) == ""  # a password given is not printed
        yield Broker(
            vhost=vhost,
            server=(server_user, server.stdout.strip()),
            pool_a=(users[1], password_a),
            pool_b=(users[2], password_b),
        )
    finally:
        cleanup = [
            subprocess.Popen(["rabbitmqctl", *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            for args in [["delete_vhost", "--", vhost]]
            + [["delete_user", "--", user] for user in users]
        ]  # fmt: skip
        for process in cleanup:
            process.wait(timeout=60)


def _server_sends(broker: Broker, queue: str, run_id: int, attempt: int) -> None:
    """What the server does (``runs_dispatch``): ``execute_run`` to the pool's
    queue, which Celery declares (queue and direct exchange) as it sends."""
    app = Celery("server", broker=broker.url(broker.server), set_as_current=False)
    app.conf.update(task_serializer="json", result_backend=None)
    with app.connection_for_write() as connection:
        app.send_task(
            "benchmarks.execute_run", args=[run_id, attempt], queue=queue,
            connection=connection,
        )  # fmt: skip


def test_the_scripts_grant_the_pool_user_its_queue_only_and_no_tags(
    broker: Broker,
) -> None:
    done = _ctl("list_permissions", "--silent", "-p", broker.vhost)
    rows = {tuple(line.split("\t")) for line in done.stdout.splitlines()}
    only_a, only_b = pool_permission(POOL_A), pool_permission(POOL_B)
    assert rows == {
        (broker.server[0], ".*", ".*", ".*"),
        (broker.pool_a[0], only_a, only_a, only_a),
        (broker.pool_b[0], only_b, only_b, only_b),
    }
    users = dict(
        line.split("\t") for line in _ctl("list_users", "--silent").stdout.splitlines()
    )
    assert users[broker.pool_a[0]] == users[broker.server[0]] == "[]"
    assert len(broker.pool_a[1]) == len(broker.server[1]) == 32


@pytest.mark.parametrize(("queue", "run_id"), [(QUEUE_A, 41), (HOST_A, 45)])
def test_the_pool_user_consumes_its_pools_queue_and_its_hosts_own(
    broker: Broker, queue: str, run_id: int
) -> None:
    _server_sends(broker, queue, run_id, 1)
    connection = broker.connect(broker.pool_a)
    try:
        channel = connection.channel()
        message = None
        for _ in range(50):
            message = channel.basic_get(queue)
            if message is not None:
                break
            time.sleep(0.1)
        assert message is not None
        assert message.headers["task"] == "benchmarks.execute_run"
        assert message.headers["argsrepr"] == f"[{run_id}, 1]"
        channel.basic_ack(message.delivery_tag)
    finally:
        connection.close()


def _message() -> amqp.Message:
    return amqp.Message(b"{}")


ACTIONS: dict[str, Callable[[amqp.Channel, str], object]] = {
    "consume": lambda channel, name: channel.basic_consume(name, callback=print),
    "get": lambda channel, name: channel.basic_get(name),
    "publish-exchange": lambda channel, name: channel.basic_publish(
        _message(), exchange=name, routing_key=name
    ),
    "publish-default": lambda channel, name: channel.basic_publish(
        _message(), exchange="", routing_key=name
    ),
    "declare-queue": lambda channel, name: channel.queue_declare(
        name, durable=True, auto_delete=False
    ),
    "declare-exchange": lambda channel, name: channel.exchange_declare(
        name, "direct", durable=True, auto_delete=False
    ),
    "bind-to": lambda channel, name: channel.queue_bind(
        QUEUE_A, exchange=name, routing_key="#"
    ),
}


def _refused(broker: Broker, action: str, name: str) -> AccessRefused:
    """Do ``action`` on ``name`` as the pool-a user: the broker's refusal."""
    connection = broker.connect(broker.pool_a)
    try:
        channel = connection.channel()
        with pytest.raises(AccessRefused) as refused:
            ACTIONS[action](channel, name)
        assert refused.value.code == 403
        return refused.value
    finally:
        connection.close()


def test_consuming_another_pools_queue_is_refused(broker: Broker) -> None:
    _server_sends(broker, QUEUE_B, 42, 1)  # pool.b exists and holds a run

    assert "ACCESS_REFUSED" in str(_refused(broker, "consume", QUEUE_B))
    assert "ACCESS_REFUSED" in str(_refused(broker, "get", QUEUE_B))

    # still there for pool b's own user
    connection = broker.connect(broker.pool_b)
    try:
        message = connection.channel().basic_get(QUEUE_B)
        assert message is not None
        assert message.headers["argsrepr"] == "[42, 1]"
    finally:
        connection.close()


def test_publishing_to_another_pool_is_refused(broker: Broker) -> None:
    _server_sends(broker, QUEUE_B, 43, 1)  # its exchange exists

    assert "ACCESS_REFUSED" in str(_refused(broker, "publish-exchange", QUEUE_B))
    # nor straight into the queue through the default exchange
    assert "amq.default" in str(_refused(broker, "publish-default", QUEUE_B))
    assert "amq.default" in str(_refused(broker, "publish-default", QUEUE_A))


@pytest.mark.parametrize(
    "name",
    [
        "celery",  # the server's own tasks
        pool_queue(POOL_B),
        f"{QUEUE_A}-x",  # the pattern is anchored at the end
        f"x{QUEUE_A}",  # ... and at the start
        f"pool-{POOL_A}",  # the dot is a dot, not any character
        f"{QUEUE_A}.host.",  # a host's own queue names its host
        f"{QUEUE_A}.hostx.a",
        f"{QUEUE_A}.other",
        f"{QUEUE_A}.host.a b",  # a host name of the queues' characters only
        host_queue(POOL_B, "agent@lab-07"),  # another pool's host
        "",  # a server-named queue (amq.gen-…)
    ],
)
def test_declaring_other_queues_is_refused(broker: Broker, name: str) -> None:
    assert "ACCESS_REFUSED" in str(_refused(broker, "declare-queue", name))


@pytest.mark.parametrize("name", ["celery", "celeryev", "celery.pidbox", QUEUE_B])
def test_declaring_other_exchanges_is_refused(broker: Broker, name: str) -> None:
    assert "ACCESS_REFUSED" in str(_refused(broker, "declare-exchange", name))


@pytest.mark.parametrize("exchange", ["amq.topic", "amq.fanout", QUEUE_B])
def test_binding_its_queue_to_other_exchanges_is_refused(
    broker: Broker, exchange: str
) -> None:
    """Else it could receive what is sent elsewhere."""
    _server_sends(broker, QUEUE_B, 44, 1)
    assert "ACCESS_REFUSED" in str(_refused(broker, "bind-to", exchange))


def test_the_pool_user_has_no_other_vhost(broker: Broker) -> None:
    with pytest.raises(NotAllowed, match="access to vhost '/' refused"):
        broker.connect(broker.pool_a, vhost="/")


def test_a_wrong_password_is_refused(broker: Broker) -> None:
    with pytest.raises(AccessRefused):
        broker.connect((broker.pool_a[0], broker.pool_b[1]))


def test_running_the_script_again_changes_the_password(broker: Broker) -> None:
    new = uuid.uuid4().hex
    done = _script("pool-user.sh", POOL_B, broker.vhost, stdin=new + "\n")
    assert done.returncode == 0, done.stderr
    assert "password changed" in done.stderr

    old, broker.pool_b = broker.pool_b, (broker.pool_b[0], new)
    broker.connect(broker.pool_b).close()
    with pytest.raises(AccessRefused):
        broker.connect(old)


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["Pool"], "", "must be lowercase letters"),
        (["a.b"], "", "must be lowercase letters"),
        (["a|.*"], "", "must be lowercase letters"),
        (["-a"], "", "must be lowercase letters"),
        (["a" * 64], "", "must be lowercase letters"),
        ([], "", "usage"),
        (["a", "v", "extra"], "", "usage"),
        (["a-short"], "short\n", "shorter than 16"),
    ],
)
def test_the_pool_script_refuses_bad_input_before_calling_rabbitmqctl(
    args: list[str], stdin: str, message: str, tmp_path: Path
) -> None:
    called = tmp_path / "called"
    done = _script("pool-user.sh", *args, stdin=stdin, ctl=f"touch {called}")
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""
    assert not called.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["reprogate", "pool-x"], "pools' own"),
        (["reprogate", "a b"], "is not allowed"),
        (["reprogate", ""], "is not allowed"),
        (["", "reprogate"], "must not be empty"),
        (["a", "b", "c"], "usage"),
    ],
)
def test_the_server_script_refuses_bad_input_before_calling_rabbitmqctl(
    args: list[str], message: str, tmp_path: Path
) -> None:
    called = tmp_path / "called"
    done = _script("server-user.sh", *args, ctl=f"touch {called}")
    assert done.returncode == 2
    assert message in done.stderr
    assert not called.exists()


def test_the_agents_worker_receives_the_servers_run_as_the_pool_user(
    broker: Broker, tmp_path: Path
) -> None:
    out = tmp_path / "received.txt"
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT), "BROKER_TEST_URL": broker.url(broker.pool_a),
        "BROKER_TEST_QUEUE": QUEUE_A, "BROKER_TEST_OUT": str(out),
    }  # fmt: skip
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "tests.deploy.broker_app"]
    with log.open("wb") as sink:
        worker = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while " ready." not in log.read_text():
            assert worker.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        _server_sends(broker, QUEUE_A, 45, 2)
        while not out.exists() or out.read_text() != "45 2\n":
            assert worker.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    text = log.read_text()
    assert "ACCESS_REFUSED" not in text, text
    assert "Traceback" not in text, text
    assert f"Connected to amqp://{broker.pool_a[0]}:" in text, text


def test_the_example_definitions_grant_what_the_scripts_grant() -> None:
    """The definitions file is the scripts' result written out: the same
    patterns, no tags, and no password (empty hashes)."""
    definitions = json.loads((SCRIPTS / "definitions.example.json").read_text())
    users = {user["name"]: user for user in definitions["users"]}
    assert all(user["tags"] == [] for user in users.values())
    assert all(user["password_hash"] == "" for user in users.values())
    vhosts = {vhost["name"] for vhost in definitions["vhosts"]}
    for grant in definitions["permissions"]:
        assert grant["vhost"] in vhosts
        assert grant["user"] in users
        patterns = {grant["configure"], grant["write"], grant["read"]}
        if grant["user"].startswith("pool-"):
            pool = grant["user"].removeprefix("pool-")
            assert patterns == {pool_permission(pool)}
        else:
            assert patterns == {".*"}
    assert sum(user.startswith("pool-") for user in users) == 2


def _agent_consumes(url: str, queue: str) -> None:
    """What the agent's worker does with the broker on start for each of its
    queues (the pool's, and its host's own): exchange declared, queue declared,
    bound; then consumed, as ``reprogate_agent.celery_app.create_app``
    configures it."""
    from kombu import Connection, Consumer

    options = AgentOptions(
        server_url="https://unused.invalid", token="rgh_unused", broker_url=url,
        ca_file=None, work_dir=ROOT, name="probe", hostname="test",
    )  # fmt: skip
    app = create_app(options, queue)
    with Connection(url, connect_timeout=5) as connection:
        channel = connection.channel()
        with Consumer(channel, [app.amqp.queues[queue]], callbacks=[]):
            pass


def test_each_of_the_three_permissions_is_needed_by_the_agents_worker(
    broker: Broker,
) -> None:
    """Without configure, write or read on its queue the agent's worker cannot
    start; with all three (the script's grant) it can."""
    pool = f"c-{SUFFIX}"
    user, password, only = f"pool-{pool}", uuid.uuid4().hex, pool_permission(pool)
    url = f"amqp://{user}:{password}@{HOST}/{broker.vhost}"
    assert _ctl("add_user", "--", user, input=password + "\n").returncode == 0
    try:
        grants = {
            "configure": ("", only, only),
            "write": (only, "", only),
            "read": (only, only, ""),
        }
        for grant in grants.values():
            done = _ctl("set_permissions", "-p", broker.vhost, "--", user, *grant)
            assert done.returncode == 0, done.stderr
            for queue in (pool_queue(pool), host_queue(pool, "probe@test")):
                with pytest.raises(AccessRefused):
                    _agent_consumes(url, queue)
        _ctl("set_permissions", "-p", broker.vhost, "--", user, only, only, only)
        _agent_consumes(url, pool_queue(pool))
        _agent_consumes(url, host_queue(pool, "probe@test"))
    finally:
        _ctl("delete_user", "--", user)
