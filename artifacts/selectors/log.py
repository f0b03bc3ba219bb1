"""Reads of the transparency log: its size, root at any size, inclusion and
consistency proofs, entries, its origin and verifier key.

Proofs never read the leaves: they fold stored complete-subtree hashes
(``LogNode``), one query for every node a proof needs (at most 2·log2(size)
rows; ``artifacts.lib.transparency.tree``). Sizes and indexes out of range raise
``LogRangeError`` (HTTP 400); a node missing under the current size raises
``LogIntegrityError`` (the log's tables were tampered with)."""

from __future__ import annotations

from collections.abc import Collection
from itertools import groupby

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.db.models import Q

from accounts.exceptions import ApplicationError
from artifacts.conf import log_key_path, log_origin  # log_origin: also a selector
from artifacts.lib.transparency import keyfile, note, tree
from artifacts.lib.transparency.merkle import empty_root
from artifacts.models import Checkpoint, LogEntry, LogNode, LogState


class LogRangeError(ApplicationError):
    """An index or tree size the log does not have (HTTP 400)."""

    def __init__(self, message: str) -> None:
        super().__init__(message=message, code="out_of_range")


class LogIntegrityError(RuntimeError):
    """The stored log contradicts itself: a node is missing or a proof fails."""


def log_size() -> int:
    """How many entries the log holds (committed ones)."""
    state = LogState.objects.filter(pk=LogState.SINGLETON).only("size").first()
    return state.size if state is not None else 0


def log_entry(index: int) -> LogEntry | None:
    return LogEntry.objects.filter(index=index).first()


def log_nodes(nodes: Collection[tree.Node]) -> dict[tree.Node, bytes]:
    """The stored hashes of these nodes, in one query."""
    if not nodes:
        return {}
    condition = Q()
    for level, group in groupby(sorted(nodes), key=lambda node: node[0]):
        condition |= Q(level=level, index__in=[index for _, index in group])
    rows = LogNode.objects.filter(condition).values_list("level", "index", "hash")
    found = {(level, index): bytes(hashed) for level, index, hashed in rows}
    missing = set(nodes) - found.keys()
    if missing:
        raise LogIntegrityError(f"the log lacks the stored nodes {sorted(missing)}")
    return found


def _check_size(size: int, *, at_least: int = 0) -> None:
    current = log_size()
    if size < at_least or size > current:
        raise LogRangeError(
            f"The tree size {size} is not between {at_least} and the log's {current}."
        )


def log_root(size: int) -> bytes:
    """The root hash of the tree of the first ``size`` entries."""
    _check_size(size)
    if size == 0:
        return empty_root()
    hashes = log_nodes(tree.peak_nodes(size))
    return tree.root_from_peaks([hashes[node] for node in tree.peak_nodes(size)])


def log_inclusion_proof(index: int, size: int) -> list[bytes]:
    """RFC 9162 inclusion proof of entry ``index`` in the tree of ``size``
    entries (leaf to root)."""
    _check_size(size, at_least=1)
    if not 0 <= index < size:
        raise LogRangeError(f"The index {index} is not below the tree size {size}.")
    return tree.inclusion_proof(index, size, log_nodes)


def log_consistency_proof(first: int, second: int) -> list[bytes]:
    """RFC 9162 consistency proof from the tree of ``first`` entries to that of
    ``second`` (empty if they are equal)."""
    _check_size(second, at_least=1)
    if not 0 < first <= second:
        raise LogRangeError(
            f"The first size {first} is not between 1 and the second size {second}."
        )
    return tree.consistency_proof(first, second, log_nodes)


def log_private_key() -> Ed25519PrivateKey:
    """The log's signing key, created only while no checkpoint exists: a lost key
    file must be restored, never silently replaced."""
    create = not Checkpoint.objects.exists()
    return keyfile.load_private_key(log_key_path(), create=create)


def log_verifier_key() -> str:
    """The note verifier key clients check checkpoints with."""
    return note.verifier_key(log_origin(), log_private_key().public_key())


def checkpoint_latest() -> Checkpoint | None:
    """The checkpoint of the largest size signed so far."""
    return Checkpoint.objects.order_by("-size").first()
