"""``insert_rows``: plain INSERTs for the ingest's many rows, on SQLite and
PostgreSQL alike; ``large_write_cache``: SQLite's page cache while they are
written."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import Model
from django.test.utils import CaptureQueriesContext

from artifacts.models import Blob, Bundle
from artifacts.storage.bulk import (
    BATCH,
    LARGE_WRITE_CACHE_KIB,
    insert_rows,
    large_write_cache,
)
from tests.artifacts.ingest_support import sqlite_cache_size

pytestmark = pytest.mark.django_db

FIELDS = ("sha256", "size", "storage_key", "version_id", "created_at")
WHEN = datetime(2026, 11, 29, 12, 30, 5, 123456, tzinfo=UTC)


def _row(number: int) -> tuple[str, int, str, str, datetime]:
    digest = hashlib.sha256(str(number).encode()).hexdigest()
    return (digest, number, f"blobs/{digest[:2]}/{digest}", "", WHEN)


def test_rows_are_inserted_with_values_prepared_by_their_fields() -> None:
    rows = [_row(n) for n in range(BATCH + 5)]  # more than one batch

    insert_rows(Blob, FIELDS, rows)

    assert Blob.objects.count() == BATCH + 5
    blob = Blob.objects.get(sha256=rows[7][0])
    assert (blob.size, blob.storage_key, blob.version_id) == (7, rows[7][2], "")
    assert blob.created_at == WHEN  # a datetime, adapted as Django adapts it


def test_duplicates_are_skipped_only_when_asked() -> None:
    insert_rows(Blob, FIELDS, [_row(1), _row(2)])

    insert_rows(Blob, FIELDS, [_row(2), _row(3)], ignore_conflicts=True)

    assert Blob.objects.count() == 3
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(Blob, FIELDS, [_row(3)])
    assert Blob.objects.count() == 3


def test_nothing_to_insert_is_fine() -> None:
    insert_rows(Blob, FIELDS, [])

    assert not Blob.objects.exists()


@pytest.mark.parametrize(
    ("model", "name"), [(Blob, "id"), (Bundle, "files")]
)  # the primary key; a reverse relation
def test_only_concrete_columns_are_accepted(model: type[Model], name: str) -> None:
    with pytest.raises(ValueError, match="not an insertable column"):
        insert_rows(model, (name,), [(1,)])


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="zip"):
        insert_rows(Blob, FIELDS, [_row(1)[:3]])

    assert not Blob.objects.exists()


def test_values_of_another_type_are_still_prepared_by_their_fields() -> None:
    digest = hashlib.sha256(b"x").hexdigest()

    insert_rows(
        Blob, FIELDS, [(digest, "42", f"blobs/{digest[:2]}/{digest}", "", WHEN)]
    )

    assert Blob.objects.get(sha256=digest).size == 42  # "42" went through int()


def test_rows_sharing_one_value_object_each_get_it() -> None:
    later = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    rows = [(*_row(n)[:4], WHEN if n < 3 else later) for n in range(6)]

    insert_rows(Blob, FIELDS, rows)

    stored = dict(Blob.objects.values_list("size", "created_at"))
    assert stored == {0: WHEN, 1: WHEN, 2: WHEN, 3: later, 4: later, 5: later}


def test_a_large_write_cache_while_the_block_runs_then_the_size_before() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL has no per-connection page cache")
    before = sqlite_cache_size()
    assert before != -LARGE_WRITE_CACHE_KIB

    with large_write_cache(Blob):
        assert sqlite_cache_size() == -LARGE_WRITE_CACHE_KIB
        insert_rows(Blob, FIELDS, [_row(1)])

    assert sqlite_cache_size() == before
    assert Blob.objects.count() == 1


def test_the_cache_goes_back_when_the_block_fails_and_its_error_is_raised() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL has no per-connection page cache")
    before = sqlite_cache_size()

    with pytest.raises(IntegrityError), large_write_cache(Blob), transaction.atomic():
        insert_rows(Blob, FIELDS, [_row(1), _row(1)])

    assert sqlite_cache_size() == before
    assert not Blob.objects.exists()


def test_a_block_failing_inside_a_broken_transaction_raises_its_own_error() -> None:
    """A transaction that can run no more query (here one left by an inner
    ``atomic(savepoint=False)``): the cache is left as it is, for the connection
    to drop when it closes, rather than hiding the block's error behind a
    TransactionManagementError."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL has no per-connection page cache")
    before = sqlite_cache_size()

    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
        large_write_cache(Blob),
        transaction.atomic(savepoint=False),
    ):
        insert_rows(Blob, FIELDS, [_row(1), _row(1)])

    assert not Blob.objects.exists()
    # the tests' connection does not close between tests: put it back here
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA cache_size = {before:d}")


def test_a_large_write_cache_sends_nothing_to_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")

    with CaptureQueriesContext(connection) as queries, large_write_cache(Blob):
        pass

    assert queries.captured_queries == []
