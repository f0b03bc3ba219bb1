"""The agent's Celery task under the server's name: a message it cannot serve
goes back to the queue (``Reject(requeue=True)``); a refused token also asks
the worker to stop after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from celery.exceptions import Reject
from celery.worker import state
from celery.worker.consumer import Consumer
from kombu.utils.imports import symbol_by_name

from reprogate_agent.celery_app import (
    TASK_NAME,
    AgentConsumer,
    create_app,
    register_task,
)
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms
from reprogate_agent.options import read_options
from tests.agent.fake_server import FakeServer, Reply


@pytest.fixture
def task(fake: FakeServer, tmp_path: Path) -> Iterator[Any]:
    options = read_options(
        {
            "REPROGATE_SERVER_URL": fake.url,
            "REPROGATE_HOST_TOKEN": "rgh_" + "t" * 43,
            "REPROGATE_BROKER_URL": "redis://127.0.0.1:6379/9",
            "REPROGATE_AGENT_WORK_DIR": str(tmp_path / "work"),
        }
    )
    app = create_app(options, "pool.gpu")
    client = RunnerClient(fake.url, options.token, retries=1, sleep=lambda s: None)
    registered = register_task(app, client, Terms("w@h"), options)
    yield registered
    state.should_stop = None
    app.close()


def test_it_has_the_server_s_name_and_delivery_options(task: Any) -> None:
    assert task.name == TASK_NAME == "benchmarks.execute_run"
    assert task.acks_late is True
    assert task.reject_on_worker_lost is True
    assert task.app.conf.worker_prefetch_multiplier == 1
    assert task.app.conf.worker_enable_remote_control is False
    assert task.app.conf.worker_send_task_events is False


def test_a_refused_token_requeues_the_message_and_stops_the_worker(
    fake: FakeServer, task: Any
) -> None:
    fake.script("runs/5/claim", Reply(401, {"detail": "Revoked.", "code": "x"}))

    with pytest.raises(Reject) as caught:
        task.run(5, 1)

    assert caught.value.requeue is True
    assert state.should_stop  # the consumer's loop ends after this message


def test_an_unreachable_server_requeues_the_message_only(
    fake: FakeServer, task: Any
) -> None:
    fake.script("runs/5/claim", Reply(503, {"detail": "Restarting."}))

    with pytest.raises(Reject) as caught:
        task.run(5, 1)

    assert caught.value.requeue is True
    assert not state.should_stop
    assert len(fake.calls("runs/5/claim")) == 2  # one retry


def test_a_message_that_is_not_a_run_attempt_is_dropped(
    fake: FakeServer, task: Any
) -> None:
    assert task.run("5; drop", None) == "dropped"
    assert fake.seen == []


def test_making_the_agent_s_app_leaves_the_process_s_celery_app_current(
    tmp_path: Path,
) -> None:
    """Else the server's shared tasks, in a process that made one (a test), would
    be sent to the pool's broker with the pool user's credentials."""
    from celery import current_app

    from benchmarks.tasks import reap_runs_task

    before = current_app._get_current_object()
    options = read_options(
        {
            "REPROGATE_SERVER_URL": "https://unused.invalid",
            "REPROGATE_HOST_TOKEN": "rgh_" + "t" * 43,
            "REPROGATE_BROKER_URL": "amqp://pool-x:secret@127.0.0.1:5672/other",
            "REPROGATE_AGENT_WORK_DIR": str(tmp_path / "work"),
        }
    )
    app = create_app(options, "pool.x")
    try:
        assert current_app._get_current_object() is before
        assert reap_runs_task.app is before
        assert "pool-x" not in str(reap_runs_task.app.conf.broker_url)
    finally:
        app.close()


class _Hub:
    """A stand-in for Celery's event loop: what it was asked to run later."""

    def __init__(self) -> None:
        self.later: list[Any] = []

    def call_soon(self, callback: Any) -> Any:
        self.later.append(callback)
        return callback


def test_celery_s_consumer_leaves_the_ack_to_the_loop_s_next_turn() -> None:
    """What the agent's consumer changes: with an event loop, Celery only
    schedules the acknowledgement, and the broker sends the next run after it."""
    hub, acked = _Hub(), list[str]()

    Consumer.call_soon_ack(_with_hub(hub), acked.append, "tag")

    assert acked == []
    assert len(hub.later) == 1


def test_the_agent_acknowledges_a_message_at_once() -> None:
    hub, acked = _Hub(), list[str]()

    AgentConsumer.call_soon_ack(_with_hub(hub), acked.append, "tag")

    assert acked == ["tag"]
    assert hub.later == []


def test_a_failed_acknowledgement_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> None:
        raise ConnectionResetError("broker gone")

    AgentConsumer.call_soon_ack(_with_hub(_Hub()), broken)

    assert "acknowledging a message failed" in caplog.text
    assert "broker gone" in caplog.text


def _with_hub(hub: _Hub) -> Any:
    """What ``call_soon_ack`` reads of its consumer: the hub."""
    return SimpleNamespace(hub=hub)


def test_the_agent_s_worker_takes_the_agent_s_consumer(task: Any) -> None:
    """Celery's worker builds its consumer from ``worker_consumer``. (Not built
    here: a worker made in this process would mark it as a worker's for good, and
    later tests could no longer wait for a task's result.)"""
    assert symbol_by_name(task.app.conf.worker_consumer) is AgentConsumer


def test_the_embedded_default_s_agent_consumes_the_sqlite_broker_s_leases(
    tmp_path: Path,
) -> None:
    """The embedded default's agent reads the server's SQLite broker with the
    lease transport (benchmarks.lib.broker), not kombu's stock one, which loses a
    killed agent's message."""
    from kombu.transport import TRANSPORT_ALIASES

    database = tmp_path / "broker" / "broker.sqlite3"
    options = read_options(
        {
            "REPROGATE_SERVER_URL": "http://127.0.0.1:8000",
            "REPROGATE_HOST_TOKEN": "rgh_" + "t" * 43,
            "REPROGATE_BROKER_URL": f"sqla+sqlite:///{database}",
            "REPROGATE_AGENT_WORK_DIR": str(tmp_path / "work"),
        }
    )
    app = create_app(options, "pool.local")
    try:
        assert TRANSPORT_ALIASES["sqla"] == "benchmarks.lib.broker:Transport"
        with app.connection_for_read() as connection:
            assert type(connection.transport).__module__ == "benchmarks.lib.broker"
        assert app.conf.broker_transport_options["polling_interval"] == 0.2
    finally:
        app.close()
