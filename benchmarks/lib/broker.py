"""The embedded broker: kombu's SQLAlchemy transport on a SQLite file, made durable.

``sqla+sqlite:///…/broker.sqlite3`` names this transport once ``use_transport()``
pointed kombu's ``sqla`` alias here: the server's Celery app (config/celery.py) and
the embedded default's lab agent (``reprogate_agent``) do, so it lives in this
Django-free library. A message is a row of kombu's own tables, written in
one SQLite transaction, so a consumer never reads half a message (kombu's
filesystem transport did: its consumer died on an empty ``*.msg`` file). What
kombu's SQLAlchemy channel does not do, this one adds:

- A delivered row is a *lease*: it stays in the table, invisible, stamped with the
  time of delivery, until the consumer acknowledges it (the row is then deleted)
  or rejects it. A live consumer renews its leases every quarter of
  ``visibility_timeout``; a lease older than that belonged to a consumer that died
  (SIGKILL, OOM) and any consumer puts the row back in its queue. Tasks are
  therefore delivered at least once: with ``task_acks_late`` a task whose worker
  was killed runs again, and the runner's idempotent claim keeps it from running
  twice.
- A row that is not a kombu message (empty, truncated, not JSON) is logged and
  deleted instead of raising out of the consumer loop.
- ``BEGIN IMMEDIATE`` transactions, a busy timeout and WAL journal, so concurrent
  producers and consumers wait for each other instead of failing.
- Engines are per process (a forked pool child never reuses its parent's SQLite
  connections) and the database folder is created on first use.

Transport options: ``polling_interval`` (seconds between polls of an empty queue)
and ``visibility_timeout`` (seconds; default 60).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import sqlalchemy as kombu_sqla
from kombu.utils.encoding import bytes_to_str
from sqlalchemy import Connection, Engine, create_engine, delete, event, func, select
from sqlalchemy import update as sql_update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url

logger = logging.getLogger(__name__)

SCHEME = "sqla+sqlite"
TRANSPORT = f"{__name__}:Transport"
DEFAULT_VISIBILITY_TIMEOUT = 60.0
BUSY_TIMEOUT_S = 30.0
_ENGINES: dict[tuple[int, str], Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _now() -> dt.datetime:
    # kombu's column is a naive DateTime filled with local time (datetime.now).
    return dt.datetime.now()  # noqa: DTZ005


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Driver-level autocommit: this module issues BEGIN IMMEDIATE / COMMIT itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.close()


def engine_for(url: str) -> Engine:
    """This process's engine for ``url`` (a ``sqlite:///`` URL), tables created."""
    key = (os.getpid(), url)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            database = make_url(url).database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})
            event.listen(engine, "connect", _on_connect)
            with _write(engine) as conn:
                kombu_sqla.metadata.create_all(conn)
            _ENGINES[key] = engine
    return engine


@contextmanager
def _write(engine: Engine) -> Iterator[Connection]:
    """One write transaction that holds SQLite's write lock from its start."""
    with engine.connect() as conn:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


class Channel(kombu_sqla.Channel):
    """kombu's SQLAlchemy channel with leases, poison-row handling and SQLite
    transactions of its own (kombu's ORM session is not used)."""

    def __init__(self, connection: Any, **kwargs: Any) -> None:
        options = connection.client.transport_options
        self.visibility_timeout = float(
            options.get("visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT)
        )
        self._leases: dict[str, int] = {}  # delivery tag -> message row id
        self._queue_ids: dict[str, int] = {}
        self._renewed_at = time.monotonic()
        self._swept_at = 0.0
        super().__init__(connection, **kwargs)

    # --- storage ------------------------------------------------------------------
    @property
    def engine(self) -> Engine:
        return engine_for(self.connection.client.hostname)

    @property
    def _messages(self) -> Any:
        return self.message_cls.__table__

    def _open(self) -> Any:
        return self.engine

    def _queue_id(self, queue: str) -> int:
        queue_id = self._queue_ids.get(queue)
        if queue_id is None:
            table = self.queue_cls.__table__
            lookup = select(table.c.id).where(table.c.name == queue)
            with self.engine.connect() as conn:
                queue_id = conn.execute(lookup).scalar()
            if queue_id is None:
                with _write(self.engine) as conn:
                    conn.execute(
                        sqlite_insert(table).values(name=queue).on_conflict_do_nothing()
                    )
                    queue_id = conn.execute(lookup).scalar_one()
            self._queue_ids[queue] = queue_id
        return queue_id

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        self._queue_id(queue)

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        return True

    # kombu's own bases disagree on the name (AbstractChannel's ``message``, the
    # SQLAlchemy Channel's ``payload``); kombu passes it by position.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        queue_id = self._queue_id(queue)
        with _write(self.engine) as conn:
            conn.execute(
                self._messages.insert().values(
                    payload=json.dumps(payload), queue_id=queue_id, visible=True
                )
            )

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        self._restore_expired_leases()
        table = self._messages
        queue_id = self._queue_id(queue)
        with self.engine.connect() as conn:  # a cheap read before taking the lock
            waiting = conn.execute(
                select(table.c.id)
                .where(table.c.queue_id == queue_id, table.c.visible.is_(True))
                .limit(1)
            ).first()
        if waiting is None:
            raise Empty()
        oldest = (
            select(table.c.id)
            .where(table.c.queue_id == queue_id, table.c.visible.is_(True))
            .order_by(table.c.id)
            .limit(1)
            .scalar_subquery()
        )
        with _write(self.engine) as conn:
            row = conn.execute(
                sql_update(table)
                .where(table.c.id == oldest)
                .values(visible=False, timestamp=_now(), version=table.c.version + 1)
                .returning(table.c.id, table.c.payload)
            ).first()
        if row is None:
            raise Empty()
        try:
            payload = json.loads(bytes_to_str(row.payload))
            tag = payload["properties"]["delivery_tag"]
        except (ValueError, TypeError, KeyError) as exc:
            logger.error(
                "broker: message %s in queue %s is not a kombu message (%s: %.200r); "
                "deleted",
                row.id,
                queue,
                type(exc).__name__,
                row.payload,
            )
            self._delete_rows([row.id])
            raise Empty() from None
        self._leases[tag] = row.id
        return payload

    def _size(self, queue: str) -> int:
        table = self._messages
        with self.engine.connect() as conn:
            return conn.execute(
                select(func.count())
                .select_from(table)
                .where(
                    table.c.queue_id == self._queue_id(queue),
                    table.c.visible.is_(True),
                )
            ).scalar_one()

    def _purge(self, queue: str) -> int:
        table = self._messages
        with _write(self.engine) as conn:
            return conn.execute(
                delete(table).where(
                    table.c.queue_id == self._queue_id(queue),
                    table.c.visible.is_(True),
                )
            ).rowcount

    def _delete_rows(self, row_ids: list[int]) -> None:
        if row_ids:
            table = self._messages
            with _write(self.engine) as conn:
                conn.execute(delete(table).where(table.c.id.in_(row_ids)))

    # --- leases -------------------------------------------------------------------
    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        super().basic_ack(delivery_tag, multiple=multiple)
        row_id = self._leases.pop(delivery_tag, None)
        if row_id is not None:
            self._delete_rows([row_id])

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        super().basic_reject(delivery_tag, requeue=requeue)  # requeue: _restore
        row_id = self._leases.pop(delivery_tag, None)
        if row_id is not None:
            self._delete_rows([row_id])

    def _restore(self, message: Any) -> None:
        """Put an unacknowledged message back in its queue: its own row, if this
        channel holds its lease (kombu would insert a copy)."""
        row_id = self._leases.pop(message.delivery_tag, None)
        if row_id is None:
            super()._restore(message)
            return
        table = self._messages
        with _write(self.engine) as conn:
            conn.execute(
                sql_update(table)
                .where(table.c.id == row_id)
                .values(visible=True, timestamp=None)
            )

    def drain_events(self, timeout: float | None = None, callback: Any = None) -> Any:
        self._renew_leases()
        return super().drain_events(timeout=timeout, callback=callback)

    def _renew_leases(self) -> None:
        if time.monotonic() - self._renewed_at < self.visibility_timeout / 4:
            return
        self._renewed_at = time.monotonic()
        if self._leases:
            table = self._messages
            with _write(self.engine) as conn:
                conn.execute(
                    sql_update(table)
                    .where(table.c.id.in_(list(self._leases.values())))
                    .values(timestamp=_now())
                )

    def _restore_expired_leases(self) -> None:
        if time.monotonic() - self._swept_at < min(5.0, self.visibility_timeout / 4):
            return
        self._swept_at = time.monotonic()
        self._renew_leases()
        table = self._messages
        expired_before = _now() - dt.timedelta(seconds=self.visibility_timeout)
        with _write(self.engine) as conn:
            restored = conn.execute(
                sql_update(table)
                .where(table.c.visible.is_(False), table.c.timestamp < expired_before)
                .values(visible=True, timestamp=None)
            ).rowcount
        if restored:
            logger.warning(
                "broker: %d message(s) whose consumer stopped before acknowledging "
                "are back in their queue",
                restored,
            )


class Transport(kombu_sqla.Transport):
    Channel = Channel
    polling_interval = 0.2


def use_transport() -> None:
    """Point kombu's ``sqla`` (and ``sqlalchemy``) alias at this transport; a name,
    resolved on the first connection."""
    TRANSPORT_ALIASES["sqla"] = TRANSPORT_ALIASES["sqlalchemy"] = TRANSPORT
