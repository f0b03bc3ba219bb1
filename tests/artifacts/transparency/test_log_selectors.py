"""Proofs from stored subtrees: they verify, read a bounded number of rows in a
bounded number of queries whatever the log's size, refuse sizes and indexes the
log does not have, and report a missing node instead of a wrong proof."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from artifacts.lib.transparency import merkle, tree
from artifacts.models import LogEntry
from artifacts.selectors.log import (
    LogIntegrityError,
    LogRangeError,
    log_consistency_proof,
    log_entry,
    log_inclusion_proof,
    log_nodes,
    log_origin,
    log_root,
)
from tests.artifacts.transparency.conftest import ORIGIN, numbered

pytestmark = pytest.mark.django_db
Append = Callable[..., list[LogEntry]]


def test_every_inclusion_proof_verifies(append: Append) -> None:
    leaves = numbered(13)
    append(*leaves)

    for size in range(1, 14):
        root = log_root(size)
        for index in range(size):
            proof = log_inclusion_proof(index, size)
            hashed = merkle.leaf_hash(leaves[index])
            merkle.verify_inclusion(hashed, index, size, proof, root)


def test_every_consistency_proof_verifies(append: Append) -> None:
    append(*numbered(13))

    for second in range(1, 14):
        for first in range(1, second + 1):
            proof = log_consistency_proof(first, second)
            roots = log_root(first), log_root(second)
            merkle.verify_consistency(first, second, *roots, proof)


def test_proofs_take_two_queries_at_any_size(
    append: Append, django_assert_max_num_queries: Any
) -> None:
    append(*numbered(300))

    with django_assert_max_num_queries(2):  # the size, then every node at once
        log_inclusion_proof(150, 300)
    with django_assert_max_num_queries(2):
        log_consistency_proof(77, 299)
    with django_assert_max_num_queries(2):
        log_root(283)


def test_a_proof_reads_only_the_nodes_it_needs(append: Append) -> None:
    append(*numbered(300))
    wanted = tree.inclusion_proof_plan(150, 300)

    rows = log_nodes(wanted)

    assert rows.keys() == wanted
    assert len(wanted) <= 2 * math.ceil(math.log2(300))


@pytest.mark.parametrize(("index", "size"), [(5, 5), (0, 6), (0, 0), (-1, 3), (2, 1)])
def test_inclusion_out_of_range_is_refused(
    append: Append, index: int, size: int
) -> None:
    append(*numbered(5))

    with pytest.raises(LogRangeError) as raised:
        log_inclusion_proof(index, size)

    assert raised.value.code == "out_of_range"


@pytest.mark.parametrize(("first", "second"), [(0, 3), (4, 3), (2, 6), (-1, 2)])
def test_consistency_out_of_range_is_refused(
    append: Append, first: int, second: int
) -> None:
    append(*numbered(5))

    with pytest.raises(LogRangeError):
        log_consistency_proof(first, second)


def test_root_of_a_size_beyond_the_log_is_refused(append: Append) -> None:
    append(*numbered(2))

    with pytest.raises(LogRangeError, match="not between 0 and the log's 2"):
        log_root(3)


def test_a_missing_node_is_reported_not_guessed(append: Append) -> None:
    append(*numbered(8))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM artifacts_lognode WHERE level = 1")

    with pytest.raises(LogIntegrityError, match=r"lacks the stored nodes \[\(1, "):
        log_inclusion_proof(0, 8)


def test_log_entry_and_origin(append: Append) -> None:
    append(b"zero", b"one")

    assert bytes(log_entry(1).leaf) == b"one"
    assert log_entry(2) is None
    assert log_origin() == ORIGIN
