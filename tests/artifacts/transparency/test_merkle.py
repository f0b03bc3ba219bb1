"""RFC 9162 hashing, proof generation from stored subtrees and verification,
checked against a plain recursive reference of the RFC's definitions."""

from __future__ import annotations

import hashlib
import math

import pytest

from artifacts.lib.transparency import merkle, tree
from artifacts.lib.transparency.merkle import ProofError


def reference_root(leaves: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 MTH, recursively, from the leaves themselves."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    left, right = reference_root(leaves[:k]), reference_root(leaves[k:])
    return hashlib.sha256(b"\x01" + left + right).digest()


LEAVES = [f"leaf {n}".encode() for n in range(40)]


def built(count: int) -> tuple[tree.NodeReader, list[bytes]]:
    """A reader over the nodes ``count`` appends stored, and the final peaks."""
    nodes: dict[tree.Node, bytes] = {}
    peaks: list[bytes] = []
    for size in range(count):
        peaks, done = tree.append_leaf(size, peaks, merkle.leaf_hash(LEAVES[size]))
        nodes.update({(level, index): h for level, index, h in done})
    return (lambda wanted: {node: nodes[node] for node in wanted}), peaks


def root(size: int) -> bytes:
    return reference_root(LEAVES[:size])


def test_hashes_are_rfc_9162s() -> None:
    assert merkle.empty_root().hex().startswith("e3b0c44298fc1c14")
    assert merkle.leaf_hash(b"").hex().startswith("6e340b9cffb37a98")
    assert merkle.node_hash(b"a", b"b") == hashlib.sha256(b"\x01ab").digest()


@pytest.mark.parametrize("size", [0, 1, 2, 3, 5, 8, 13, 32, 33, 40])
def test_root_from_leaf_hashes_is_the_recursive_definition(size: int) -> None:
    hashes = (merkle.leaf_hash(leaf) for leaf in LEAVES[:size])  # a generator

    assert merkle.root_from_leaf_hashes(hashes) == root(size)


@pytest.mark.parametrize("size", [1, 2, 7, 16, 33, 40])
def test_peaks_kept_by_appends_give_the_root(size: int) -> None:
    _, peaks = built(size)

    assert len(peaks) == size.bit_count()
    assert tree.root_from_peaks(peaks) == root(size)


def test_root_from_leaf_hashes_refuses_a_short_hash() -> None:
    with pytest.raises(ProofError, match="leaf hash 1 is 31 bytes"):
        merkle.root_from_leaf_hashes([bytes(32), bytes(31)])


def test_every_inclusion_proof_of_small_trees_verifies() -> None:
    read, _ = built(33)
    for size in range(1, 34):
        for index in range(size):
            proof = tree.inclusion_proof(index, size, read)

            leaf_hash = merkle.leaf_hash(LEAVES[index])
            merkle.verify_inclusion(leaf_hash, index, size, proof, root(size))


def test_every_consistency_proof_of_small_trees_verifies() -> None:
    read, _ = built(33)
    for second in range(1, 34):
        for first in range(1, second + 1):
            proof = tree.consistency_proof(first, second, read)

            merkle.verify_consistency(first, second, root(first), root(second), proof)


def test_any_flipped_bit_breaks_an_inclusion_proof() -> None:
    read, _ = built(21)
    proof = tree.inclusion_proof(6, 21, read)
    for position in range(len(proof)):
        for bit in (0, 77, 255):
            bad = list(proof)
            bad[position] = _flip(bad[position], bit)

            with pytest.raises(ProofError, match="another root"):
                merkle.verify_inclusion(
                    merkle.leaf_hash(LEAVES[6]), 6, 21, bad, root(21)
                )


def test_any_flipped_bit_breaks_a_consistency_proof() -> None:
    read, _ = built(21)
    proof = tree.consistency_proof(6, 21, read)
    for position in range(len(proof)):
        bad = list(proof)
        bad[position] = _flip(bad[position], 3)

        with pytest.raises(ProofError, match="root hash"):
            merkle.verify_consistency(6, 21, root(6), root(21), bad)


def _flip(data: bytes, bit: int) -> bytes:
    flipped = bytearray(data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    return bytes(flipped)


@pytest.mark.parametrize(
    ("index", "size", "proof_change", "message"),
    [
        (5, 5, 0, "not below the tree size"),
        (-1, 5, 0, "negative"),
        (2, 5, -1, "fewer than a tree of 5"),
        (2, 5, +1, "more than a tree of 5"),
    ],
)
def test_inclusion_failures_name_their_cause(
    index: int, size: int, proof_change: int, message: str
) -> None:
    read, _ = built(5)
    proof = tree.inclusion_proof(2, 5, read)
    proof = proof[:-1] if proof_change < 0 else proof + [bytes(32)] * proof_change
    leaf_hash = merkle.leaf_hash(LEAVES[2])

    with pytest.raises(ProofError, match=message):
        merkle.verify_inclusion(leaf_hash, index, size, proof, root(5))


def test_inclusion_refuses_a_proof_element_of_the_wrong_size() -> None:
    with pytest.raises(ProofError, match="proof element 1 is 0 bytes"):
        merkle.verify_inclusion(bytes(32), 0, 4, [bytes(32), b""], bytes(32))


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (6, 5, "larger than the second"),
        (0, 5, "empty tree proves nothing"),
        (0, 0, "empty tree proves nothing"),
        (True, 5, "not an integer"),
    ],
)
def test_consistency_failures_name_their_cause(
    first: int, second: int, message: str
) -> None:
    with pytest.raises(ProofError, match=message):
        merkle.verify_consistency(first, second, root(5), root(5), [bytes(32)])


def test_proof_error_is_a_value_error() -> None:
    assert issubclass(ProofError, ValueError)


@pytest.mark.parametrize("size", [2, 3, 1000, 99_999, 100_000, 2**32 + 5, 2**40 - 1])
def test_a_proof_reads_at_most_two_nodes_per_level(size: int) -> None:
    levels = math.ceil(math.log2(size))
    for index in {0, 1, size // 3, size // 2, size - 2, size - 1}:
        assert len(tree.inclusion_proof_plan(index, size)) <= 2 * levels
    for first in {1, max(1, size // 3), size - 1, size}:
        assert len(tree.consistency_proof_plan(first, size)) <= 2 * levels


def test_append_leaf_refuses_peaks_that_do_not_fit_the_size() -> None:
    with pytest.raises(ValueError, match="3 leaves has 2 peaks"):
        tree.append_leaf(3, [bytes(32)], bytes(32))
