"""Building the RFC 9162 tree from stored complete subtrees (pure Python).

A *node* ``(level, index)`` is the complete (perfect) subtree over the leaves
``index * 2**level`` to ``(index + 1) * 2**level - 1``; level 0 is a leaf. Once the
log holds that many leaves the node never changes, so the server stores each node
when an append completes it: one leaf node per append plus, on average, one
internal node (``append_leaf``).

Every subtree RFC 9162's recursion visits (§2.1.1, ``PATH`` §2.1.3.1, ``PROOF``
§2.1.4.1) is either such a node or lies on the tree's right edge, where it is the
fold of a few nodes (``subtree_nodes``). A proof therefore reads
O(log n) stored nodes, never the leaves: ``inclusion_proof_plan`` and
``consistency_proof_plan`` name them, ``proof_hashes`` folds them.

The *peaks* of a tree of ``size`` leaves are its largest nodes, left to right (one
per 1 bit of ``size``); the root is their fold (``root_from_peaks``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeAlias

from artifacts.lib.transparency.merkle import empty_root, node_hash

Node: TypeAlias = tuple[int, int]  # (level, index)
Span: TypeAlias = tuple[int, int]  # leaves [start, end)
NodeReader: TypeAlias = Callable[[Collection[Node]], Mapping[Node, bytes]]


def _split(width: int) -> int:
    """The largest power of two smaller than ``width`` (``width`` > 1)."""
    return 1 << ((width - 1).bit_length() - 1)


def _node(start: int, end: int) -> Node | None:
    """The node covering exactly ``[start, end)``, if that span is one."""
    width = end - start
    if width <= 0 or width & (width - 1) or start % width:
        return None
    level = width.bit_length() - 1
    return level, start >> level


def subtree_nodes(start: int, end: int) -> list[Node]:
    """The nodes, left to right, whose fold is the RFC 9162 hash of the leaves
    ``[start, end)``, a span RFC 9162's recursion visits (``start`` aligned)."""
    if not 0 <= start < end:
        raise ValueError(f"empty or negative span [{start}, {end})")
    nodes: list[Node] = []
    while (whole := _node(start, end)) is None:
        left = _node(start, start + _split(end - start))
        if left is None:
            raise ValueError(f"[{start}, {end}) is not a subtree of RFC 9162's tree")
        nodes.append(left)
        start += _split(end - start)
    nodes.append(whole)
    return nodes


def fold(hashes: Sequence[bytes]) -> bytes:
    """Right-to-left fold: ``H(h0, H(h1, … H(h[-2], h[-1])))``."""
    result = hashes[-1]
    for left in reversed(hashes[:-1]):
        result = node_hash(left, result)
    return result


def peak_nodes(size: int) -> list[Node]:
    """The nodes whose fold is the root of the tree of ``size`` leaves."""
    return subtree_nodes(0, size) if size else []


def root_from_peaks(peaks: Sequence[bytes]) -> bytes:
    return fold(peaks) if peaks else empty_root()


def append_leaf(
    size: int, peaks: Sequence[bytes], leaf_hash: bytes
) -> tuple[list[bytes], list[tuple[int, int, bytes]]]:
    """Add leaf number ``size`` to a tree with these peaks: the new peaks and the
    nodes the leaf completes, ``(level, index, hash)``, the leaf itself first."""
    if len(peaks) != size.bit_count():
        raise ValueError(f"a tree of {size} leaves has {size.bit_count()} peaks")
    peaks = list(peaks)
    level, index, hashed = 0, size, leaf_hash
    completed = [(level, index, hashed)]
    while index & 1:  # a right child: its left sibling is the last peak
        hashed = node_hash(peaks.pop(), hashed)
        level, index = level + 1, index >> 1
        completed.append((level, index, hashed))
    peaks.append(hashed)
    return peaks, completed


def inclusion_spans(index: int, size: int) -> list[Span]:
    """RFC 9162 §2.1.3.1 ``PATH(index, D[0:size])`` as spans, leaf to root."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not below the tree size {size}")
    spans: list[Span] = []
    start, end = 0, size
    while end - start > 1:
        middle = start + _split(end - start)
        if index < middle:
            spans.append((middle, end))
            end = middle
        else:
            spans.append((start, middle))
            start = middle
    return spans[::-1]


def consistency_spans(first: int, second: int) -> list[Span]:
    """RFC 9162 §2.1.4.1 ``PROOF(first, D[0:second])`` as spans, in proof order."""
    if not 0 < first <= second:
        raise ValueError(f"no consistency proof from size {first} to {second}")
    spans: list[Span] = []
    start, end, known, whole = 0, second, first, True
    while known != end - start:
        middle = start + _split(end - start)
        if known <= middle - start:
            spans.append((middle, end))
            end = middle
        else:
            spans.append((start, middle))
            known -= middle - start
            start, whole = middle, False
    if not whole:
        spans.append((start, end))
    return spans[::-1]


def plan(spans: Sequence[Span]) -> list[list[Node]]:
    """For each span, the nodes its hash folds."""
    return [subtree_nodes(start, end) for start, end in spans]


def nodes_of(planned: Sequence[Sequence[Node]]) -> set[Node]:
    return {node for nodes in planned for node in nodes}


def proof_hashes(spans: Sequence[Span], read: NodeReader) -> list[bytes]:
    """The hashes of these spans, reading every node they need in one call."""
    planned = plan(spans)
    hashes = read(nodes_of(planned))
    return [fold([hashes[node] for node in nodes]) for nodes in planned]


def inclusion_proof(index: int, size: int, read: NodeReader) -> list[bytes]:
    return proof_hashes(inclusion_spans(index, size), read)


def consistency_proof(first: int, second: int, read: NodeReader) -> list[bytes]:
    return proof_hashes(consistency_spans(first, second), read)


def inclusion_proof_plan(index: int, size: int) -> set[Node]:
    """The stored nodes an inclusion proof reads (at most 2·log2(size) of them)."""
    return nodes_of(plan(inclusion_spans(index, size)))


def consistency_proof_plan(first: int, second: int) -> set[Node]:
    return nodes_of(plan(consistency_spans(first, second)))
