"""checkpoint_publish: a signed C2SP checkpoint for the current size, at most one
per size, each proved consistent with the previous one before it is signed;
never a checkpoint over a tampered tree, with another key or another origin."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.db import connection

from accounts.models import AuditEvent
from artifacts.lib.transparency import merkle, note
from artifacts.lib.transparency.keyfile import LogKeyError
from artifacts.models import Checkpoint, LogEntry
from artifacts.selectors.log import (
    LogIntegrityError,
    checkpoint_latest,
    log_consistency_proof,
    log_private_key,
    log_root,
    log_verifier_key,
)
from artifacts.services.transparency import checkpoint_publish
from tests.artifacts.transparency.conftest import ORIGIN, numbered

pytestmark = pytest.mark.django_db
Append = Callable[..., list[LogEntry]]


def test_the_empty_log_signs_size_0() -> None:
    checkpoint = checkpoint_publish()

    opened = note.open_checkpoint(checkpoint.note, log_verifier_key())
    assert (opened.origin, opened.size) == (ORIGIN, 0)
    assert opened.root_hash == merkle.empty_root()


def test_a_checkpoint_signs_the_current_size_and_root(append: Append) -> None:
    append(*numbered(9))

    checkpoint = checkpoint_publish()

    opened = note.open_checkpoint(checkpoint.note, log_verifier_key())
    assert opened.size == checkpoint.size == 9
    assert opened.root_hash == bytes(checkpoint.root_hash) == log_root(9)
    assert checkpoint.verifier_key == log_verifier_key()


def test_no_new_checkpoint_until_the_log_grows(append: Append) -> None:
    append(*numbered(3))
    first = checkpoint_publish()

    again = checkpoint_publish()
    append(b"one more")
    grown = checkpoint_publish()

    assert again.pk == first.pk
    assert grown.size == 4
    assert checkpoint_latest() == grown
    assert Checkpoint.objects.count() == 2


def test_successive_checkpoints_are_provably_consistent(append: Append) -> None:
    vkey = log_verifier_key()
    checkpoints: list[note.Checkpoint] = []
    for count in (1, 4, 2, 9):
        append(*numbered(count, start=len(checkpoints) * 100))
        checkpoints.append(note.open_checkpoint(checkpoint_publish().note, vkey))

    for old, new in itertools.pairwise(checkpoints):
        proof = log_consistency_proof(old.size, new.size)
        merkle.verify_consistency(
            old.size, new.size, old.root_hash, new.root_hash, proof
        )


def test_signing_is_audited(append: Append) -> None:
    append(b"x")

    checkpoint = checkpoint_publish()

    event = AuditEvent.objects.get(action="log.checkpoint_signed")
    assert event.target_id == str(checkpoint.pk)
    assert event.data["size"] == 1
    assert event.actor_repr == "system"


def _tamper_node(level: int, index: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            'UPDATE artifacts_lognode SET hash = %s WHERE level = %s AND "index" = %s',
            [bytes(32), level, index],
        )


@pytest.mark.parametrize(
    "node",
    [(2, 0), (1, 2), (0, 8)],  # under the signed size 6, across it, above it
)
def test_a_tampered_tree_is_never_signed(append: Append, node: tuple[int, int]) -> None:
    append(*numbered(6))
    checkpoint_publish()
    append(*numbered(3, start=6))
    _tamper_node(*node)  # a node the consistency proof from 6 to 9 reads

    with pytest.raises(LogIntegrityError, match="does not extend checkpoint 6"):
        checkpoint_publish()

    assert list(Checkpoint.objects.values_list("size", flat=True)) == [6]


def test_the_key_file_is_made_on_first_use(key_path: Path) -> None:
    assert not key_path.exists()

    checkpoint_publish()

    assert key_path.stat().st_mode & 0o777 == 0o600


def test_a_lost_key_is_not_silently_replaced(append: Append, key_path: Path) -> None:
    checkpoint_publish()
    key_path.unlink()
    append(b"x")

    with pytest.raises(LogKeyError, match="missing"):
        checkpoint_publish()

    assert not key_path.exists()


def test_a_replaced_key_signs_nothing(append: Append, key_path: Path) -> None:
    checkpoint_publish()
    key_path.unlink()
    key_path.write_bytes(_new_key_pem())  # what an operator "fixing" it would do
    key_path.chmod(0o600)
    append(b"x")

    with pytest.raises(LogIntegrityError, match="restore the log's key file"):
        checkpoint_publish()


def test_a_changed_origin_signs_nothing(append: Append, settings: Any) -> None:
    checkpoint_publish()
    settings.REPROGATE_LOG_ORIGIN = "elsewhere.example/log"
    append(b"x")

    with pytest.raises(LogIntegrityError, match="origin changed"):
        checkpoint_publish()


def test_the_private_key_is_the_one_on_disk(key_path: Path) -> None:
    key = log_private_key()

    vkey = note.parse_verifier_key(log_verifier_key())

    assert vkey.name == ORIGIN
    assert vkey.public_key.public_bytes_raw() == key.public_key().public_bytes_raw()


def _new_key_pem() -> bytes:
    from cryptography.hazmat.primitives import serialization

    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
