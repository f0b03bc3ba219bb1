"""What a fault must leave as it was: the transparency log grows only by
appending (the checkpoint signed before the fault and one signed after are
proved consistent, under the same key), fixity finds nothing, and the key files
are the same bytes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from artifacts.lib.transparency import merkle, note
from artifacts.selectors.log import log_consistency_proof
from artifacts.services.fixity.run import fixity_check
from artifacts.services.transparency import checkpoint_publish


@dataclass(frozen=True)
class Before:
    """The checkpoint signed before a fault and the key files' bytes."""

    size: int
    root: bytes
    verifier_key: str
    keys: dict[str, bytes]


def key_files(var_dir: Path) -> dict[str, bytes]:
    """Every file under the server's keys folder (``REPROGATE_KEYS_DIR``, where
    the log key is), by its path there."""
    keys = var_dir / "keys"
    return {
        str(path.relative_to(keys)): path.read_bytes()
        for path in sorted(keys.rglob("*"))
        if path.is_file()
    }


def before_fault(var_dir: Path) -> Before:
    signed = checkpoint_publish()
    opened = note.open_checkpoint(signed.note, signed.verifier_key)
    assert opened.size > 0
    keys = key_files(var_dir)
    assert keys  # the log key, at least
    return Before(opened.size, opened.root_hash, signed.verifier_key, keys)


def escrow_intact_since(before: Before, var_dir: Path) -> None:
    """A checkpoint now extends ``before``'s (proved), signed by the same key;
    fixity is clean; the key files are the bytes they were."""
    signed = checkpoint_publish()
    assert signed.verifier_key == before.verifier_key
    after = note.open_checkpoint(signed.note, before.verifier_key)
    assert after.size > before.size
    proof = log_consistency_proof(before.size, after.size)
    merkle.verify_consistency(
        before.size, after.size, before.root, after.root_hash, proof
    )
    findings = fixity_check()
    assert findings.clean, findings.findings.items
    assert key_files(var_dir) == before.keys
