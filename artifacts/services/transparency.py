"""Writes of the transparency log: append a leaf, sign a checkpoint.

``log_append`` runs inside the caller's transaction (a deposit and its log entry
commit or roll back together) and locks the log's one state row until that
transaction ends, so indexes are consecutive from 0 with no gap and no duplicate
whatever the number of processes: PostgreSQL ``SELECT … FOR UPDATE``; SQLite
takes the database's write lock first (``BEGIN IMMEDIATE``, as configured, and
a write before any read). Take it last in your transaction: the lock is held
until commit, so every append in the installation waits for it.

``checkpoint_publish`` signs a checkpoint for the current size only after proving
it consistent with the latest one (never two inconsistent checkpoints); the
signed note is stored byte for byte. Reads never sign: a checkpoint is
published when a deposit or escrow event commits
(``checkpoint_publish_on_commit``) and by the beat task every minute
(``checkpoint_publish_if_grown``); pages and the API show the latest one."""

from __future__ import annotations

import base64
import logging

from django.db import connection, transaction
from django.db.models import F

from accounts.selectors import clock
from accounts.services.audit import audit_record
from artifacts.conf import log_key_path, log_max_leaf_bytes, log_origin
from artifacts.lib.transparency import merkle, note, tree
from artifacts.lib.transparency.keyfile import LogKeyError
from artifacts.models import Checkpoint, LogEntry, LogNode, LogState
from artifacts.selectors.log import (
    LogIntegrityError,
    checkpoint_latest,
    log_consistency_proof,
    log_private_key,
    log_size,
)

logger = logging.getLogger(__name__)


class LogOutsideTransaction(RuntimeError):
    """``log_append`` was called outside ``transaction.atomic()``."""


def _locked_state() -> LogState:
    """The log's state row, locked until the current transaction ends."""
    if connection.vendor == "sqlite":  # write first: the write lock, then read
        LogState.objects.filter(pk=LogState.SINGLETON).update(size=F("size"))
    locked = LogState.objects.select_for_update()
    state = locked.filter(pk=LogState.SINGLETON).first()
    if state is None:  # the first append ever (or two at once: one row wins)
        LogState.objects.bulk_create([LogState()], ignore_conflicts=True)
        state = locked.get(pk=LogState.SINGLETON)
    return state


def _peaks(state: LogState) -> list[bytes]:
    data, width = bytes(state.peaks), merkle.HASH_SIZE
    if len(data) != width * state.size.bit_count():
        raise LogIntegrityError(f"the log state's peaks do not fit size {state.size}")
    return [data[start : start + width] for start in range(0, len(data), width)]


def log_append(leaf: bytes) -> LogEntry:
    """Append ``leaf`` (stored byte-exact) as the log's next entry."""
    if not connection.in_atomic_block:
        raise LogOutsideTransaction("log_append must run inside transaction.atomic().")
    if not isinstance(leaf, bytes):
        raise TypeError("a log leaf is bytes")
    if len(leaf) > log_max_leaf_bytes():
        raise ValueError(f"a log leaf is at most {log_max_leaf_bytes()} bytes")
    state = _locked_state()
    hashed = merkle.leaf_hash(leaf)
    peaks, completed = tree.append_leaf(state.size, _peaks(state), hashed)
    entry = LogEntry.objects.create(
        index=state.size, leaf=leaf, leaf_hash=hashed, created_at=clock.now()
    )
    LogNode.objects.bulk_create(
        [LogNode(level=level, index=index, hash=h) for level, index, h in completed]
    )
    LogState.objects.filter(pk=state.pk).update(
        size=state.size + 1, peaks=b"".join(peaks)
    )
    return entry


def _check_extends(latest: Checkpoint, size: int, root: bytes, vkey: str) -> None:
    """Raise unless the tree (``size``, ``root``) extends the latest checkpoint."""
    if latest.origin != log_origin():
        raise LogIntegrityError(
            f"the log's origin changed from {latest.origin!r} to {log_origin()!r} "
            "(REPROGATE_LOG_ORIGIN): a log keeps its origin"
        )
    if latest.verifier_key != vkey:
        raise LogIntegrityError(
            f"the key at {log_key_path()} did not sign checkpoint {latest.size} "
            f"({latest.verifier_key}); restore the log's key file"
        )
    try:
        previous = note.open_checkpoint(latest.note, vkey)
        if previous.size > 0:
            proof = log_consistency_proof(previous.size, size)
            merkle.verify_consistency(
                previous.size, size, previous.root_hash, root, proof
            )
    except (note.NoteError, merkle.ProofError) as error:
        raise LogIntegrityError(
            f"refusing to sign size {size}: it does not extend checkpoint "
            f"{latest.size} ({error})"
        ) from error


@transaction.atomic
def checkpoint_publish() -> Checkpoint:
    """Sign a checkpoint for the current size if the log grew since the latest
    one (proved consistent with it first); else return the latest."""
    state = _locked_state()
    latest = checkpoint_latest()
    if latest is not None and latest.size == state.size:
        return latest
    if latest is not None and latest.size > state.size:
        raise LogIntegrityError(f"checkpoint {latest.size} exceeds size {state.size}")
    origin, key = log_origin(), log_private_key()
    vkey = note.verifier_key(origin, key.public_key())
    root = tree.root_from_peaks(_peaks(state))
    if latest is not None:
        _check_extends(latest, state.size, root, vkey)
    body = note.format_checkpoint(note.Checkpoint(origin, state.size, root))
    checkpoint = Checkpoint.objects.create(
        size=state.size, root_hash=root, origin=origin, verifier_key=vkey,
        note=note.sign_note(body, origin, key), created_at=clock.now(),
    )  # fmt: skip
    audit_record(
        actor=None, action="log.checkpoint_signed", target=checkpoint,
        data={"size": state.size, "root_hash": base64.b64encode(root).decode()},
    )  # fmt: skip
    return checkpoint


def checkpoint_publish_if_grown() -> Checkpoint | None:
    """Sign a checkpoint if the log grew since the latest one (the new one),
    else None; looks first without taking the log's lock."""
    latest = checkpoint_latest()
    if latest is not None and latest.size >= log_size():
        return None
    checkpoint = checkpoint_publish()
    return None if latest is not None and checkpoint.pk == latest.pk else checkpoint


def _publish_after_commit() -> None:
    """The deposit stands whatever happens here; the beat task publishes
    within a minute. A process without the log's key (a lab host's runner
    worker) says so in one line; any other failure is logged in full."""
    try:
        checkpoint_publish_if_grown()
    except LogKeyError as error:
        logger.warning("publishing a checkpoint after a commit failed: %s", error)
    except Exception:
        logger.exception("publishing a checkpoint after a commit failed")


def checkpoint_publish_on_commit() -> None:
    """Publish a checkpoint covering what the current transaction appended,
    once it commits (after the log's lock is released: appends never wait on
    a signature). Call it in the transaction that appends."""
    transaction.on_commit(_publish_after_commit)
