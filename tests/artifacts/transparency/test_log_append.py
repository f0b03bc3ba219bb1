"""log_append: consecutive indexes from 0, leaves byte-exact, one leaf node plus
on average one internal node per append, nothing outside a transaction, nothing
left by a rolled-back transaction, no update or delete of stored rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from artifacts.lib.transparency import merkle
from artifacts.models import LogEntry, LogNode
from artifacts.models.log import LogIsAppendOnly
from artifacts.selectors.log import log_root, log_size
from artifacts.services.transparency import LogOutsideTransaction, log_append
from tests.artifacts.transparency.conftest import numbered

pytestmark = pytest.mark.django_db
Append = Callable[..., list[LogEntry]]


def test_entries_get_consecutive_indexes_from_0(append: Append) -> None:
    entries = append(*numbered(5))

    assert [e.index for e in entries] == [0, 1, 2, 3, 4]
    assert list(LogEntry.objects.values_list("index", flat=True)) == [0, 1, 2, 3, 4]
    assert log_size() == 5


def test_leaves_are_stored_byte_exact(append: Append) -> None:
    leaves = [b"", b"\x00\xff\x00", '{"é":"\u2014"}'.encode(), bytes(range(256))]

    append(*leaves)

    stored = [bytes(e.leaf) for e in LogEntry.objects.order_by("index")]
    hashes = [bytes(e.leaf_hash) for e in LogEntry.objects.order_by("index")]
    assert stored == leaves
    assert hashes == [merkle.leaf_hash(leaf) for leaf in leaves]


@pytest.mark.parametrize("count", [1, 2, 7, 16, 37])
def test_appends_store_each_complete_subtree_once(append: Append, count: int) -> None:
    append(*numbered(count))

    assert LogNode.objects.count() == 2 * count - count.bit_count()
    assert LogNode.objects.filter(level=0).count() == count


def test_the_root_at_every_size_is_the_rfc_root(append: Append) -> None:
    leaves = numbered(21)
    append(*leaves)

    for size in range(22):
        expected = merkle.root_from_leaf_hashes(map(merkle.leaf_hash, leaves[:size]))
        assert log_root(size) == expected


@pytest.mark.django_db(transaction=True)
def test_log_append_refuses_to_run_outside_a_transaction() -> None:
    with pytest.raises(LogOutsideTransaction):
        log_append(b"{}")

    assert not LogEntry.objects.exists()


@transaction.atomic
def _append_then_fail(leaf: bytes) -> None:
    log_append(leaf)
    raise RuntimeError("the deposit failed after its log entry")


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_append_leaves_no_gap(append: Append) -> None:
    append(b"first")

    with pytest.raises(RuntimeError, match="deposit failed"):
        _append_then_fail(b"rolled back")
    (entry,) = append(b"second")

    assert entry.index == 1
    assert [bytes(e.leaf) for e in LogEntry.objects.all()] == [b"first", b"second"]
    assert log_size() == 2


@pytest.mark.parametrize("leaf", ["text", bytearray(b"x"), None])
def test_a_leaf_is_bytes(leaf: Any) -> None:
    with pytest.raises(TypeError), transaction.atomic():
        log_append(leaf)


def test_a_leaf_has_a_maximum_size(settings: Any) -> None:
    settings.REPROGATE_LOG_MAX_LEAF_BYTES = 8

    with pytest.raises(ValueError, match="at most 8 bytes"), transaction.atomic():
        log_append(b"123456789")

    assert not LogEntry.objects.exists()


def test_stored_rows_cannot_change_or_go(append: Append) -> None:
    (entry,) = append(b"kept")
    entry.leaf = b"changed"

    with pytest.raises(LogIsAppendOnly):
        entry.save()
    with pytest.raises(LogIsAppendOnly):
        entry.delete()
    with pytest.raises(LogIsAppendOnly):
        LogNode.objects.filter(level=0).update(hash=bytes(32))
    with pytest.raises(LogIsAppendOnly):
        LogEntry.objects.all().delete()
    assert bytes(LogEntry.objects.get().leaf) == b"kept"
