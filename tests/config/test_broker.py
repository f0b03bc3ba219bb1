"""The embedded broker's channel (benchmarks/lib/broker.py), in process: a message
is a row that an acknowledgement deletes, a dead consumer's lease comes back, a row
that is not a message is set aside instead of raising out of the consumer loop."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from benchmarks.lib.broker import Channel, Transport


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "broker.sqlite3"  # the folder does not exist yet


def _connect(db_path: Path, visibility_timeout: float = 60.0) -> Connection:
    return Connection(
        f"sqla+sqlite:///{db_path}",
        transport=Transport,
        transport_options={"visibility_timeout": visibility_timeout},
    )


@pytest.fixture
def channel(db_path: Path) -> Iterator[Channel]:
    with _connect(db_path) as conn:
        yield conn.default_channel


def _rows(db_path: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db_path) as conn:
        return conn.execute(
            "SELECT id, visible FROM kombu_message ORDER BY id"
        ).fetchall()


def _publish(channel: Channel, body: str, queue: str = "q") -> None:
    message = channel.prepare_message(body)
    channel.queue_declare(queue)
    channel.basic_publish(message, exchange="", routing_key=queue)


def test_the_celery_app_uses_this_transport_for_sqla_urls() -> None:
    from config.celery import app

    with app.connection_for_write("sqla+sqlite:////tmp/unused.sqlite3") as conn:
        assert conn.transport_cls is Transport or conn.transport.__class__ is Transport


def test_a_message_is_a_row_until_it_is_acknowledged(
    channel: Channel, db_path: Path
) -> None:
    _publish(channel, "hello")

    message = channel.basic_get("q")

    assert message is not None
    assert message.body == b"hello" or message.body == "hello"
    assert _rows(db_path) == [(1, 0)]  # delivered, not visible, kept
    message.ack()
    assert _rows(db_path) == []


def test_messages_come_out_in_the_order_they_went_in(channel: Channel) -> None:
    for body in ("one", "two", "three"):
        _publish(channel, body)

    bodies = [channel.basic_get("q").body for _ in range(3)]

    assert [b if isinstance(b, str) else b.decode() for b in bodies] == [
        "one",
        "two",
        "three",
    ]
    assert channel.basic_get("q") is None


def test_a_rejected_message_goes_back_as_the_same_row(
    channel: Channel, db_path: Path
) -> None:
    _publish(channel, "again")
    message = channel.basic_get("q")

    message.requeue()

    assert _rows(db_path) == [(1, 1)]
    assert channel.basic_get("q").delivery_tag == message.delivery_tag


def test_a_message_rejected_without_requeue_is_deleted(
    channel: Channel, db_path: Path
) -> None:
    _publish(channel, "drop")

    channel.basic_get("q").reject()

    assert _rows(db_path) == []


def test_a_dead_consumers_lease_comes_back_after_the_visibility_timeout(
    db_path: Path,
) -> None:
    with _connect(db_path, visibility_timeout=0.4) as producer:
        _publish(producer.default_channel, "work")
    with _connect(db_path, visibility_timeout=0.4) as dead:
        held = dead.default_channel.basic_get("q")
        assert held is not None
        # As if its process was SIGKILLed: it neither acknowledges nor restores.
        dead.default_channel._leases.clear()
        dead.default_channel.qos._delivered.clear()
    with _connect(db_path, visibility_timeout=0.4) as survivor:
        assert survivor.default_channel.basic_get("q") is None  # still leased
        time.sleep(0.6)
        again = survivor.default_channel.basic_get("q")
        assert _rows(db_path) == [(1, 0)]  # the same row, leased again

    assert again is not None
    assert again.delivery_tag == held.delivery_tag
    assert _rows(db_path) == [(1, 1)]  # the survivor's close put it back


def test_a_live_consumer_renews_its_lease(db_path: Path) -> None:
    with _connect(db_path, visibility_timeout=0.4) as producer:
        _publish(producer.default_channel, "long task")
    with (
        _connect(db_path, visibility_timeout=0.4) as worker,
        _connect(db_path, visibility_timeout=0.4) as other,
    ):
        assert worker.default_channel.basic_get("q") is not None
        for _ in range(8):  # 0.8 s: twice the visibility timeout
            with pytest.raises(Empty):
                worker.default_channel.drain_events()  # renews every 0.1 s
            assert other.default_channel.basic_get("q") is None
            time.sleep(0.1)


@pytest.mark.parametrize("payload", ["", "{", "not json", '{"properties": 1}', "[]"])
def test_a_row_that_is_not_a_message_is_deleted_and_the_next_one_delivered(
    channel: Channel, db_path: Path, payload: str, caplog: pytest.LogCaptureFixture
) -> None:
    _publish(channel, "before")
    with sqlite3.connect(db_path) as conn:
        conn.execute(
            "INSERT INTO kombu_message (visible, payload, version, queue_id) "
            "VALUES (1, ?, 1, (SELECT id FROM kombu_queue WHERE name = 'q'))",
            (payload,),
        )
    _publish(channel, "after")

    first = channel.basic_get("q")
    bad = channel.basic_get("q")  # the bad row: logged, deleted, nothing delivered
    last = channel.basic_get("q")

    assert first is not None
    assert bad is None
    assert last is not None
    assert "is not a kombu message" in caplog.text
    assert [visible for _, visible in _rows(db_path)] == [0, 0]


def test_size_and_purge_count_waiting_messages_only(channel: Channel) -> None:
    for body in ("a", "b", "c"):
        _publish(channel, body)
    held = channel.basic_get("q")

    assert channel._size("q") == 2
    assert channel.queue_purge("q") == 2
    held.ack()
    assert channel._size("q") == 0


def test_publishing_creates_the_database_folder(db_path: Path) -> None:
    with _connect(db_path) as conn:
        _publish(conn.default_channel, "x")

    assert db_path.is_file()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
