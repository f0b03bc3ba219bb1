"""Proofs the escrow pages show, verified on the server with the same pure code
the offline verifier runs: a deposit's inclusion in the latest checkpoint, and
the log's consistency since the checkpoint a user saw last.

Reads only: the latest *published* checkpoint is shown (deposits publish one
when they commit, the beat task every minute); entries appended since are
counted and said to be pending, never signed here."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass, field
from typing import Any

from artifacts.lib.transparency.merkle import (
    ProofError,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from artifacts.lib.transparency.note import NoteError, open_checkpoint
from artifacts.models import LogVisit
from artifacts.selectors.log import (
    checkpoint_latest,
    log_consistency_proof,
    log_inclusion_proof,
    log_size,
    log_verifier_key,
)

logger = logging.getLogger(__name__)


def b64(data: bytes | memoryview) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


@dataclass(frozen=True)
class SignedHead:
    """A checkpoint whose signature the server checked with the log key."""

    size: int
    root_hash: bytes
    note: str
    signature_ok: bool
    problem: str = ""

    @property
    def root_b64(self) -> str:
        return b64(self.root_hash)


def signed_head(checkpoint: Any) -> SignedHead:
    """``checkpoint`` with its signature checked against the log key."""
    try:
        opened = open_checkpoint(checkpoint.note, log_verifier_key())
    except NoteError as error:
        return SignedHead(
            checkpoint.size,
            bytes(checkpoint.root_hash),
            checkpoint.note,
            False,
            str(error),
        )
    consistent = (opened.size, opened.root_hash) == (
        checkpoint.size,
        bytes(checkpoint.root_hash),
    )
    problem = "" if consistent else "the signed note says another size or root"
    return SignedHead(
        opened.size, opened.root_hash, checkpoint.note, consistent, problem
    )


PENDING = "published within a minute"


def current_head() -> SignedHead | None:
    """The latest published checkpoint (None: none yet)."""
    checkpoint = checkpoint_latest()
    return None if checkpoint is None else signed_head(checkpoint)


def pending_entries(head: SignedHead | None) -> int:
    """Entries appended since the latest checkpoint (not signed yet)."""
    return max(0, log_size() - (head.size if head is not None else 0))


@dataclass(frozen=True)
class Inclusion:
    head: SignedHead | None
    leaf_hash: bytes
    proof: list[bytes]
    ok: bool
    problem: str = ""
    pending: bool = False  # the leaf is newer than the latest checkpoint

    @property
    def proof_b64(self) -> list[str]:
        return [b64(h) for h in self.proof]


def leaf_inclusion(index: int, leaf: bytes) -> Inclusion:
    """Leaf ``index`` in the latest checkpoint; ``pending`` if that one does
    not hold it yet."""
    head = current_head()
    hashed = leaf_hash(bytes(leaf))
    if head is None or head.size <= index:
        problem = f"Not in a signed checkpoint yet: the next one is {PENDING}."
        return Inclusion(head, hashed, [], False, problem, pending=True)
    proof = log_inclusion_proof(index, head.size)
    if not head.signature_ok:
        return Inclusion(head, hashed, proof, False, head.problem)
    try:
        verify_inclusion(hashed, index, head.size, proof, head.root_hash)
    except ProofError as error:
        logger.error("inclusion of leaf %s failed: %s", index, error)
        return Inclusion(head, hashed, proof, False, str(error))
    return Inclusion(head, hashed, proof, True)


@dataclass(frozen=True)
class SinceVisit:
    """The log now against the checkpoint the user saw last."""

    head: SignedHead | None
    previous: LogVisit | None
    proof: list[bytes] = field(default_factory=list)
    consistent: bool | None = None  # None: nothing to compare with
    message: str = ""
    pending: int = 0  # entries appended since the latest checkpoint

    @property
    def seen(self) -> bool:
        """The user marked this very checkpoint as seen already."""
        return (
            self.head is not None
            and self.previous is not None
            and (self.previous.size, self.previous.root_hash)
            == (self.head.size, self.head.root_hash.hex())
        )

    @property
    def proof_b64(self) -> list[str]:
        return [b64(h) for h in self.proof]

    @property
    def previous_root_b64(self) -> str:
        if self.previous is None:
            return ""
        return b64(bytes.fromhex(self.previous.root_hash))


def compare_with_visit(
    previous: LogVisit, head: SignedHead
) -> tuple[bool, list[bytes], str]:
    old_root = bytes.fromhex(previous.root_hash)
    if previous.size > head.size:
        return False, [], f"The log shrank from {previous.size} to {head.size} entries."
    if previous.size == head.size:
        same = old_root == head.root_hash
        text = "Nothing was added." if same else "Same size, another root hash."
        return same, [], text
    if previous.size == 0:
        return True, [], "You last saw the empty log: any log extends it."
    proof = log_consistency_proof(previous.size, head.size)
    try:
        verify_consistency(previous.size, head.size, old_root, head.root_hash, proof)
    except ProofError as error:
        return False, proof, f"The consistency proof fails: {error}"
    added = head.size - previous.size
    return True, proof, f"{added} entries were appended; none was changed or removed."


def log_since_visit(previous: LogVisit | None) -> SinceVisit:
    """Compare the latest checkpoint with the one the user marked as seen; a
    failure is logged as an error."""
    head = current_head()
    pending = pending_entries(head)
    if head is None or previous is None:
        return SinceVisit(head, previous, pending=pending)
    if not head.signature_ok:
        return SinceVisit(head, previous, [], False, head.problem, pending)
    consistent, proof, message = compare_with_visit(previous, head)
    if not consistent:
        logger.error("log inconsistency since a visit: %s", message)
    return SinceVisit(head, previous, proof, consistent, message, pending)
