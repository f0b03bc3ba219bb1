"""The offline check of an evidence package (``reprogate evidence verify``):
nothing but the standard library, ``cryptography`` and pure ``artifacts``
modules, no server, no database.

What it proves, in order (every failure is reported, naming the file or
deposit, and the check goes on):

1. the zip is readable, holds exactly the files of docs/architecture.md and each
   member's CRC holds;
2. ``evidence.json`` is canonical JSON of the ``reprogate.evidence/v1`` shape
   (so no byte of it can change without changing what it says);
3. ``log/checkpoint`` is a signed note that ``log/key.pub`` verifies (and, with
   ``--log-key``, that key is the one the auditor obtained from the server);
   its origin is the package's;
4. every deposit's leaf is a canonical ``reprogate.deposit/v1`` record and is
   included in that checkpoint (RFC 9162 inclusion proof);
5. every blob the leaves name is in ``blobs/`` with that SHA-256 and size, and
   no other blob is;
6. each bundle's archive carries a manifest whose vendor signature verifies
   against ``keys/allowed_signers`` at the deposit time, and which lists
   exactly the files the leaf names;
7. the download receipt (an ``evidence.downloaded`` escrow event the server
   logged before signing the checkpoint) is included in the checkpoint too and
   names the SHA-256 of ``README.txt``, ``keys/allowed_signers`` and
   ``log/key.pub`` — so those files are bound to the log as well.

The bundle signature is checked by ``artifacts.lib.bundle_verify`` (the same
code as ``reprogate bundle verify``): the manifest and its signature are read
from the archive blob itself, never stored beside it.

Packages of other things than a bundle (a gate evaluation's) hold deposits of
other kinds and a few more files; a higher layer checks those through
``checks`` (``PackageCheck``: the files it reads and a function given the
package, its parsed deposit entries and the report), so this library knows
nothing of them — the gate checks are ``gates.lib.engine.evidence``'s. A check's
files are optional for the package, but one that is present must be named by
the download receipt like README.txt (and one the receipt names must be
present).
"""

from __future__ import annotations

import base64
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from artifacts.lib.evidence.layout import (
    ALLOWED_SIGNERS,
    BLOBS_DIR,
    CHECKPOINT,
    EVIDENCE_JSON,
    LOG_KEY,
    README,
    parse_time,
)
from artifacts.lib.evidence.reader import (
    BLOB_RE,
    CHUNK,
    Check,
    Entry,
    EvidenceReport,
    PackageReader,
    Stop,
    parse_evidence,
    strict_b64,
)
from artifacts.lib.transparency.merkle import ProofError, leaf_hash, verify_inclusion
from artifacts.lib.transparency.note import NoteError, open_checkpoint

BOUND_FILES: Final = (README, ALLOWED_SIGNERS, LOG_KEY)  # named by the receipt

__all__ = ["Check", "EvidenceReport", "PackageCheck", "verify_package"]


@dataclass(frozen=True)
class PackageCheck:
    """A check beyond this module's: ``run(package, entries, report)`` records
    its passes and failures on the report (``entries``: every deposit of the
    package, parsed, whether or not it passed the checks above); ``files``: the
    members it reads beyond the standard layout, with their size caps."""

    name: str
    run: Callable[[PackageReader, list[Entry], EvidenceReport], None]
    files: Mapping[str, int] = field(default_factory=dict)


# --- the log -----------------------------------------------------------------------


SIGNATURE_LINE: Final = re.compile(r"\u2014 (\S+) (\S+)")


def _checkpoint(
    package: PackageReader, report: EvidenceReport, origin: str, pinned: str | None
) -> Any:
    key_bytes = package.read(LOG_KEY)
    note_bytes = package.read(CHECKPOINT)
    if key_bytes is None or note_bytes is None:
        raise Stop
    try:
        key = key_bytes.decode("ascii")
    except UnicodeDecodeError:
        report.failed(LOG_KEY, "is not ASCII text")
        raise Stop from None
    try:
        note = note_bytes.decode("utf-8")
    except UnicodeDecodeError:
        report.failed(CHECKPOINT, "is not UTF-8 text")
        raise Stop from None
    if not key.endswith("\n") or "\n" in key[:-1]:
        report.failed(LOG_KEY, "must hold one verifier key on one line")
        raise Stop
    key = key[:-1]
    report.log_key = key
    if pinned is not None and key != pinned.strip():
        report.failed(LOG_KEY, f"is not the log key you gave ({pinned.strip()[:80]})")
    for line in note.split("\n\n", 1)[-1].splitlines():
        match = SIGNATURE_LINE.fullmatch(line)
        try:
            strict_b64(match.group(2) if match else None, "a signature line")
        except ValueError as error:
            report.failed(CHECKPOINT, f"{error}: {line[:80]!r}")
            raise Stop from None
    try:
        checkpoint = open_checkpoint(note, key)
    except NoteError as error:
        report.failed(
            CHECKPOINT, f"the signature does not verify with {LOG_KEY}: {error}"
        )
        raise Stop from None
    report.origin, report.checkpoint_size = checkpoint.origin, checkpoint.size
    report.root_hash = base64.b64encode(checkpoint.root_hash).decode("ascii")
    name = key.split("+", 1)[0]
    report.passed(CHECKPOINT, f"signed by the log key {name}, size {checkpoint.size}")
    if checkpoint.origin != origin:
        report.failed(
            CHECKPOINT,
            f"its origin {checkpoint.origin!r} is not the one {EVIDENCE_JSON} "
            f"names ({origin!r})",
        )
    return checkpoint


def _included(entry: Entry, checkpoint: Any, report: EvidenceReport) -> bool:
    try:
        verify_inclusion(
            leaf_hash(entry.leaf),
            entry.index,
            checkpoint.size,
            entry.proof,
            checkpoint.root_hash,
        )
    except ProofError as error:
        report.failed(entry.subject, f"is not included in the checkpoint: {error}")
        return False
    report.passed(
        entry.subject,
        f"included in the checkpoint of size {checkpoint.size} "
        f"({len(entry.proof)} proof hashes)",
    )
    return True


# --- blobs -------------------------------------------------------------------------


def _named_blobs(entry: Entry) -> list[dict[str, Any]]:
    blobs = entry.record.get("blobs")
    ok = (
        isinstance(blobs, list)
        and blobs
        and all(
            isinstance(b, dict)
            and isinstance(b.get("sha256"), str)
            and BLOB_RE.fullmatch(BLOBS_DIR + b["sha256"])
            and isinstance(b.get("size"), int)
            and not isinstance(b.get("size"), bool)
            for b in blobs
        )
    )
    if not ok:
        raise ValueError(f"{entry.subject}: the leaf names no well-formed blobs")
    return blobs  # type: ignore[return-value]


def _check_blobs(
    package: PackageReader, entries: list[Entry], report: EvidenceReport
) -> set[str]:
    """Digest every blob once; the digests that are present and intact."""
    wanted: dict[str, tuple[int, str]] = {}
    for entry in entries:
        for blob in _named_blobs(entry):
            wanted.setdefault(blob["sha256"], (blob["size"], entry.subject))
    intact: set[str] = set()
    for sha256, (size, subject) in wanted.items():
        name = BLOBS_DIR + sha256
        if sha256 not in package.blobs:
            report.failed(name, f"is missing: {subject} names it")
            continue
        digest = package.digest(name)
        if digest is None:
            continue
        actual, actual_size = digest
        if actual != sha256:
            report.failed(name, f"has SHA-256 {actual}, not the one it is named by")
        elif actual_size != size:
            report.failed(name, f"is {actual_size} bytes; {subject} says {size}")
        else:
            intact.add(sha256)
            report.passed(name, f"SHA-256 and size ({size} bytes) match")
    for sha256 in sorted(set(package.blobs) - set(wanted)):
        report.failed(BLOBS_DIR + sha256, "is named by no deposit in the package")
    return intact


# --- bundle signatures --------------------------------------------------------------


@contextmanager
def _extracted(package: PackageReader, name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="reprogate-evidence-") as directory:
        path = Path(directory) / "bundle"
        with package.zip.open(name) as source, path.open("wb") as target:
            shutil.copyfileobj(source, target, CHUNK)
        yield path


def _leaf_files(record: dict[str, Any]) -> set[tuple[str, str, int]]:
    return {
        (b.get("path", ""), b["sha256"], b["size"])
        for b in record["blobs"]
        if b.get("role") == "file"
    }


def _check_bundle(
    package: PackageReader, entry: Entry, signers_text: str, report: EvidenceReport
) -> None:
    from artifacts.lib.bundle_verify import parse_allowed_signers, verify_bundle

    record = entry.record
    subject = f"bundle {record.get('bundle')} (leaf {entry.index})"
    archives = [b for b in record["blobs"] if b.get("role") == "archive"]
    if len(archives) != 1:
        report.failed(subject, "the leaf does not name exactly one archive")
        return
    signers = parse_allowed_signers(signers_text)
    try:
        at = parse_time(str(record.get("time")))
    except ValueError:
        report.failed(subject, "the leaf's time is not a UTC timestamp")
        return
    with _extracted(package, BLOBS_DIR + archives[0]["sha256"]) as path:
        result = verify_bundle(
            path,
            signers,
            principal=str(record.get("organisation")),
            rfp=str(record.get("rfp")),
            at=at,
        )
    for problem in result.problems:
        where = f" ({problem.path})" if problem.path else ""
        report.failed(subject, f"{problem.code}{where}: {problem.message}")
    if result.manifest is None:
        return
    listed = {(f.path, f.sha256, f.size) for f in result.manifest.files}
    if listed != _leaf_files(record):
        report.failed(
            subject, "the signed manifest does not list the files the leaf names"
        )
    elif result.ok:
        report.passed(
            subject,
            f"manifest signed by {', '.join(result.fingerprints)} as "
            f"{result.principal}; its {len(listed)} files are the deposit's",
        )


# --- the receipt --------------------------------------------------------------------


def _check_receipt(
    package: PackageReader,
    receipt: Entry,
    entries: list[Entry],
    report: EvidenceReport,
    bound: Sequence[str],
) -> None:
    record = receipt.record
    if record.get("action") != "evidence.downloaded":
        report.failed(receipt.subject, "is not an evidence download event")
        return
    named = {
        d.get("leaf_index") for d in record.get("deposits") or [] if isinstance(d, dict)
    }
    if named != {e.index for e in entries}:
        report.failed(receipt.subject, "names other deposits than the package holds")
    files = record.get("files")
    if not isinstance(files, dict):
        report.failed(receipt.subject, "names no file digests")
        return
    for name in sorted(set(files) - set(package.names)):
        report.failed(str(name), "is missing: the download receipt names it")
    for name in bound:
        if name not in package.names or (digest := package.digest(name)) is None:
            continue
        if files.get(name) != digest[0]:
            report.failed(name, "is not the file the server logged for this download")
        else:
            report.passed(name, "is the file the server logged for this download")


# --- the whole package ----------------------------------------------------------------


def verify_package(
    path: Path, *, log_key: str | None = None, checks: Sequence[PackageCheck] = ()
) -> EvidenceReport:
    """Every check above, then each of ``checks``; ``log_key`` pins the log's
    verifier key."""
    report = EvidenceReport(Path(path))
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        report.failed(str(path), f"is not a readable zip: {error}")
        return report
    files = {name: cap for check in checks for name, cap in check.files.items()}
    with archive, suppress(Stop):
        _verify(PackageReader(archive, report, files), report, log_key, checks)
    return report


def _verify(
    package: PackageReader,
    report: EvidenceReport,
    log_key: str | None,
    checks: Sequence[PackageCheck],
) -> None:
    package.check_names()
    data = package.read(EVIDENCE_JSON)
    if data is None:
        raise Stop
    try:
        origin, entries, receipt = parse_evidence(data, report)
    except ValueError as error:
        report.failed(EVIDENCE_JSON, str(error))
        raise Stop from None
    checkpoint = _checkpoint(package, report, origin, log_key)
    for entry in [*entries, receipt]:
        _included(entry, checkpoint, report)
    try:
        intact = _check_blobs(package, entries, report)
    except ValueError as error:
        report.failed(EVIDENCE_JSON, str(error))
        raise Stop from None
    signers = package.read(ALLOWED_SIGNERS)
    for entry in entries:
        if entry.record.get("kind") != "bundle":
            continue
        archive = [b for b in entry.record["blobs"] if b.get("role") == "archive"]
        if signers is not None and archive and archive[0]["sha256"] in intact:
            _check_bundle(package, entry, signers.decode("utf-8", "replace"), report)
    extra = [name for check in checks for name in check.files]
    _check_receipt(package, receipt, entries, report, [*BOUND_FILES, *extra])
    for check in checks:
        check.run(package, entries, report)
