"""RFC 9162 Merkle tree hashing and proof verification (pure Python).

- leaf hash ``SHA-256(0x00 || leaf)``, node hash ``SHA-256(0x01 || left || right)``,
  the empty tree's root ``SHA-256()`` (RFC 9162 §2.1.1);
- ``verify_inclusion``: §2.1.3.2, ``verify_consistency``: §2.1.4.2.

Both verifiers raise ``ProofError`` (a ``ValueError``) naming the cause and return
``None`` when the proof holds. They pass every inclusion and consistency vector of
transparency-dev/merkle (``tests/fixtures/merkle-vectors``), including the
pitfalls those vectors exist for: a leaf hash that is not 32 bytes (an empty leaf
hash and an empty root would otherwise "match"), and ``first == 0`` rejected before
the ``first == second`` shortcut.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Final

HASH_SIZE: Final = 32
LEAF_PREFIX: Final = b"\x00"
NODE_PREFIX: Final = b"\x01"


class ProofError(ValueError):
    """A Merkle proof did not verify; the message says why."""


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + bytes(leaf)).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def empty_root() -> bytes:
    """The root hash of the tree with no leaves: ``SHA-256()`` of nothing."""
    return hashlib.sha256(b"").digest()


def root_from_leaf_hashes(leaf_hashes: Iterable[bytes]) -> bytes:
    """The root of the tree over these leaf hashes, in order (RFC 9162 §2.1.2).

    Streams: memory grows with log2 of the number of leaves, not the number."""
    stack: list[bytes] = []
    count = 0
    for index, hashed in enumerate(leaf_hashes):
        _check_hash(f"leaf hash {index}", hashed)
        stack.append(bytes(hashed))
        merges = index
        while merges & 1:  # one merge per trailing 1 bit of the index
            right = stack.pop()
            stack.append(node_hash(stack.pop(), right))
            merges >>= 1
        count = index + 1
    if count == 0:
        return empty_root()
    while len(stack) > 1:
        right = stack.pop()
        stack.append(node_hash(stack.pop(), right))
    return stack[0]


def _check_hash(what: str, value: bytes) -> None:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise ProofError(f"{what} is not bytes")
    if len(value) != HASH_SIZE:
        raise ProofError(f"{what} is {len(value)} bytes long, not {HASH_SIZE}")


def _check_size(what: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProofError(f"{what} is not an integer")
    if value < 0:
        raise ProofError(f"{what} is negative ({value})")


def _check_path(proof: Sequence[bytes]) -> None:
    for position, element in enumerate(proof):
        _check_hash(f"proof element {position}", element)


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that the leaf with ``leaf_hash`` is number ``index`` (from 0) of the
    tree of ``size`` leaves whose root is ``root`` (RFC 9162 §2.1.3.2)."""
    _check_size("the leaf index", index)
    _check_size("the tree size", size)
    if index >= size:
        raise ProofError(f"leaf index {index} is not below the tree size {size}")
    _check_hash("the leaf hash", leaf_hash)
    _check_hash("the root hash", root)
    _check_path(proof)
    fn, sn, result = index, size - 1, bytes(leaf_hash)
    for element in proof:
        if sn == 0:
            raise ProofError(
                f"the proof has {len(proof)} hashes, more than a tree of {size} "
                "leaves needs for this index"
            )
        if fn & 1 or fn == sn:
            result = node_hash(element, result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = node_hash(result, element)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(
            f"the proof has {len(proof)} hashes, fewer than a tree of {size} "
            "leaves needs for this index"
        )
    if result != bytes(root):
        raise ProofError("the proof leads to another root hash than the one given")


def verify_consistency(
    first: int,
    second: int,
    first_root: bytes,
    second_root: bytes,
    proof: Sequence[bytes],
) -> None:
    """Check that the tree of ``first`` leaves (root ``first_root``) is a prefix of
    the tree of ``second`` leaves (root ``second_root``) (RFC 9162 §2.1.4.2)."""
    _check_size("the first tree size", first)
    _check_size("the second tree size", second)
    if first > second:
        raise ProofError(f"the first size {first} is larger than the second {second}")
    if first == 0:
        raise ProofError("a consistency proof from the empty tree proves nothing")
    if first == second:
        if proof:
            raise ProofError("equal tree sizes need an empty proof")
        if bytes(first_root) != bytes(second_root):
            raise ProofError("equal tree sizes but different root hashes")
        return
    if not proof:
        raise ProofError("the proof is empty")
    _check_hash("the first root hash", first_root)
    _check_hash("the second root hash", second_root)
    _check_path(proof)
    path = [bytes(first_root), *proof] if first & (first - 1) == 0 else list(proof)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    first_hash = second_hash = bytes(path[0])
    for element in path[1:]:
        if sn == 0:
            raise ProofError(
                f"the proof has {len(proof)} hashes, more than sizes {first} and "
                f"{second} need"
            )
        if fn & 1 or fn == sn:
            first_hash = node_hash(element, first_hash)
            second_hash = node_hash(element, second_hash)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            second_hash = node_hash(second_hash, element)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(
            f"the proof has {len(proof)} hashes, fewer than sizes {first} and "
            f"{second} need"
        )
    if first_hash != bytes(first_root):
        raise ProofError("the proof does not lead to the first root hash")
    if second_hash != bytes(second_root):
        raise ProofError("the proof does not lead to the second root hash")
