"""Every inclusion and consistency vector of transparency-dev/merkle passes or
fails as it should, and the proofs the log generates
are byte for byte the vectors' happy paths."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from artifacts.lib.transparency import merkle, tree

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "merkle-vectors"
INCLUSION = sorted((VECTORS / "inclusion").rglob("*.json"))
CONSISTENCY = sorted((VECTORS / "consistency").rglob("*.json"))
# testonly/constants.go: the leaves every vector's tree is built from
LEAVES = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243")]
LEAVES += [bytes(range(0x50, 0x58)), bytes(range(0x60, 0x70))]
ROOT_OF_8 = "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"


def _b(text: str) -> bytes:
    return base64.b64decode(text)


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(VECTORS)) for p in paths]


def _verify_inclusion(case: dict[str, Any]) -> None:
    merkle.verify_inclusion(
        _b(case["leafHash"]), case["leafIdx"], case["treeSize"],
        [_b(p) for p in case["proof"] or []], _b(case["root"]),
    )  # fmt: skip


def _verify_consistency(case: dict[str, Any]) -> None:
    merkle.verify_consistency(
        case["size1"], case["size2"], _b(case["root1"]), _b(case["root2"]),
        [_b(p) for p in case["proof"] or []],
    )  # fmt: skip


def test_the_corpus_is_all_here() -> None:
    assert len(INCLUSION) == 98
    assert len(CONSISTENCY) == 98


@pytest.mark.parametrize("path", INCLUSION, ids=_ids(INCLUSION))
def test_inclusion_vector(path: Path) -> None:
    case = _load(path)

    if case["wantErr"]:
        with pytest.raises(merkle.ProofError):
            _verify_inclusion(case)
    else:
        _verify_inclusion(case)


@pytest.mark.parametrize("path", CONSISTENCY, ids=_ids(CONSISTENCY))
def test_consistency_vector(path: Path) -> None:
    case = _load(path)

    if case["wantErr"]:
        with pytest.raises(merkle.ProofError):
            _verify_consistency(case)
    else:
        _verify_consistency(case)


def _stored_nodes() -> dict[tree.Node, bytes]:
    nodes: dict[tree.Node, bytes] = {}
    peaks: list[bytes] = []
    for size, leaf in enumerate(LEAVES):
        peaks, completed = tree.append_leaf(size, peaks, merkle.leaf_hash(leaf))
        nodes.update({(level, index): h for level, index, h in completed})
    return nodes


def _reader(nodes: dict[tree.Node, bytes]) -> tree.NodeReader:
    return lambda wanted: {node: nodes[node] for node in wanted}


def test_root_of_the_eight_test_leaves() -> None:
    hashes = [merkle.leaf_hash(leaf) for leaf in LEAVES]

    assert merkle.root_from_leaf_hashes(hashes).hex() == ROOT_OF_8


HAPPY_INCLUSION = sorted(VECTORS.glob("inclusion/[0-9]/happy-path.json"))
HAPPY_CONSISTENCY = sorted(VECTORS.glob("consistency/[0-9]/happy-path.json"))


@pytest.mark.parametrize("path", HAPPY_INCLUSION, ids=_ids(HAPPY_INCLUSION))
def test_generated_inclusion_proof_is_the_vectors(path: Path) -> None:
    case, nodes = _load(path), _stored_nodes()

    proof = tree.inclusion_proof(case["leafIdx"], case["treeSize"], _reader(nodes))
    peaks = [nodes[n] for n in tree.peak_nodes(case["treeSize"])]

    assert [base64.b64encode(h).decode() for h in proof] == (case["proof"] or [])
    assert base64.b64encode(tree.root_from_peaks(peaks)).decode() == case["root"]


@pytest.mark.parametrize("path", HAPPY_CONSISTENCY, ids=_ids(HAPPY_CONSISTENCY))
def test_generated_consistency_proof_is_the_vectors(path: Path) -> None:
    case, nodes = _load(path), _stored_nodes()

    proof = tree.consistency_proof(case["size1"], case["size2"], _reader(nodes))

    assert [base64.b64encode(h).decode() for h in proof] == (case["proof"] or [])
