"""Reading an evidence package without trusting it: the zip's members (sizes
capped, CRC checked, each failure recorded against the member), strict
canonical base64 and JSON (so no byte can change without changing a value),
and ``evidence.json``'s entries. Pure: the standard library only."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import (
    ALLOWED_SIGNERS,
    BLOBS_DIR,
    CHECKPOINT,
    DEPOSIT_SCHEMA,
    EVENT_SCHEMA,
    EVIDENCE_JSON,
    EVIDENCE_SCHEMA,
    LOG_KEY,
    README,
)

REQUIRED: Final = (EVIDENCE_JSON, CHECKPOINT, LOG_KEY, ALLOWED_SIGNERS, README)
MAX_SMALL: Final = {
    EVIDENCE_JSON: 256 * 1024 * 1024,
    CHECKPOINT: 64 * 1024,
    LOG_KEY: 4 * 1024,
    ALLOWED_SIGNERS: 4 * 1024 * 1024,
    README: 4 * 1024 * 1024,
}
BLOB_RE: Final = re.compile(rf"{re.escape(BLOBS_DIR)}([0-9a-f]{{64}})")
ENTRY_KEYS: Final = {"leaf_index", "leaf", "inclusion_proof"}
TOP_KEYS: Final = {"schema", "origin", "deposits", "checkpoint", "download"}
CHUNK: Final = 1024 * 1024


@dataclass(frozen=True)
class Check:
    ok: bool
    subject: str  # the file or deposit the check is about
    message: str


@dataclass
class EvidenceReport:
    path: Path
    checks: list[Check] = field(default_factory=list)
    origin: str = ""
    checkpoint_size: int | None = None
    root_hash: str = ""  # base64, as in the checkpoint
    log_key: str = ""

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    @property
    def ok(self) -> bool:
        return bool(self.checks) and not self.failures

    def passed(self, subject: str, message: str) -> None:
        self.checks.append(Check(True, subject, message))

    def failed(self, subject: str, message: str) -> None:
        self.checks.append(Check(False, subject, message))


class Stop(Exception):
    """Nothing further can be checked (the failure is recorded)."""


@dataclass(frozen=True)
class Entry:
    subject: str
    index: int
    leaf: bytes
    proof: list[bytes]
    record: dict[str, Any]


# --- encodings ---------------------------------------------------------------------


def strict_b64(text: Any, what: str) -> bytes:
    """Strict, canonical base64: one encoding per value, so no byte of the text
    can change without changing the value."""
    if not isinstance(text, str):
        raise ValueError(f"{what} is not a base64 string")
    try:
        value = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not valid base64") from None
    if base64.b64encode(value).decode("ascii") != text:
        raise ValueError(f"{what} is not canonical base64")
    return value


def canonical(data: bytes, what: str) -> Any:
    """JSON that is byte-identical to its canonical encoding."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{what} is not UTF-8 JSON ({error})") from None
    try:
        canonical = canonical_json(value)
    except ValueError:
        raise ValueError(f"{what} holds a value JSON cannot encode") from None
    if canonical != data:
        raise ValueError(f"{what} is not canonical JSON (sorted keys, no spaces)")
    return value


def sha256_of(stream: IO[bytes]) -> tuple[str, int]:
    hasher, size = hashlib.sha256(), 0
    while chunk := stream.read(CHUNK):
        hasher.update(chunk)
        size += len(chunk)
    return hasher.hexdigest(), size


# --- the zip -----------------------------------------------------------------------


class PackageReader:
    """The package's zip; ``files``: the members beyond the standard layout that
    the verifier's extra checks know (name → size cap), optional here."""

    def __init__(
        self,
        archive: zipfile.ZipFile,
        report: EvidenceReport,
        files: Mapping[str, int] | None = None,
    ) -> None:
        self.zip, self.report = archive, report
        self.limits = {**MAX_SMALL, **(files or {})}
        self.names = [info.filename for info in archive.infolist()]
        self.blobs = {
            match.group(1): name
            for name in self.names
            if (match := BLOB_RE.fullmatch(name))
        }

    def check_names(self) -> None:
        seen: set[str] = set()
        for name in self.names:
            if name in seen:
                self.report.failed(name, "appears twice in the zip")
            seen.add(name)
            if name not in self.limits and not BLOB_RE.fullmatch(name):
                self.report.failed(name, "is not part of an evidence package")
        for name in REQUIRED:
            if name not in seen:
                self.report.failed(name, "is missing from the package")

    def read_small(self, name: str) -> bytes:
        return self._read_capped(name, self.limits[name])

    def _read_capped(self, name: str, limit: int) -> bytes:
        info = self.zip.getinfo(name)
        if info.file_size > limit:
            raise ValueError(f"is larger than {limit} bytes")
        with self.zip.open(info) as member:
            data = member.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"is larger than {limit} bytes")
        return data

    def read(self, name: str) -> bytes | None:
        """The member's bytes; None (recorded) if it is missing or damaged."""
        if name not in self.names:
            return None
        try:
            return self.read_small(name)
        except (zipfile.BadZipFile, zlib.error, OSError, ValueError) as error:
            self.report.failed(name, f"cannot be read: {error}")
            return None

    def blob(self, sha256: str, limit: int) -> bytes:
        """The bytes of ``blobs/<sha256>`` as they are in the zip (not checked
        against the name: the blob check does that); ValueError saying why
        they cannot be had (missing, damaged, larger than ``limit``)."""
        name = self.blobs.get(sha256)
        if name is None:
            raise ValueError(f"{BLOBS_DIR}{sha256} is missing")
        try:
            return self._read_capped(name, limit)
        except (zipfile.BadZipFile, zlib.error, OSError, ValueError) as error:
            raise ValueError(f"{name} cannot be read: {error}") from None

    def digest(self, name: str) -> tuple[str, int] | None:
        """The member's SHA-256 and size; None (recorded) if it is damaged."""
        try:
            with self.zip.open(name) as member:
                return sha256_of(member)
        except (zipfile.BadZipFile, zlib.error, OSError) as error:
            self.report.failed(name, f"cannot be read: {error}")
            return None


# --- evidence.json -----------------------------------------------------------------


def parse_entry(value: Any, subject: str, schema: str) -> Entry:
    if not isinstance(value, dict) or set(value) != ENTRY_KEYS:
        raise ValueError(f"needs exactly the keys {', '.join(sorted(ENTRY_KEYS))}")
    index = value["leaf_index"]
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError("leaf_index is not a non-negative integer")
    subject = f"{EVIDENCE_JSON} {subject} (leaf {index})"
    leaf = strict_b64(value["leaf"], f"{subject}: leaf")
    proof_values = value["inclusion_proof"]
    if not isinstance(proof_values, list):
        raise ValueError(f"{subject}: inclusion_proof is not a list")
    proof = [
        strict_b64(value, f"{subject}: inclusion_proof[{position}]")
        for position, value in enumerate(proof_values)
    ]
    record = canonical(leaf, f"{subject}: leaf")
    if not isinstance(record, dict) or record.get("schema") != schema:
        raise ValueError(f"{subject}: the leaf is not a {schema} record")
    return Entry(subject, index, leaf, proof, record)


def parse_evidence(
    data: bytes, report: EvidenceReport
) -> tuple[str, list[Entry], Entry]:
    evidence = canonical(data, EVIDENCE_JSON)
    if not isinstance(evidence, dict) or evidence.get("schema") != EVIDENCE_SCHEMA:
        raise ValueError(f"is not a {EVIDENCE_SCHEMA} document")
    if set(evidence) != TOP_KEYS:
        raise ValueError(f"needs exactly the keys {', '.join(sorted(TOP_KEYS))}")
    if evidence["checkpoint"] != CHECKPOINT:
        raise ValueError(f'"checkpoint" must be "{CHECKPOINT}"')
    if not isinstance(evidence["origin"], str) or not evidence["origin"]:
        raise ValueError('"origin" is not a log origin')
    deposits = evidence["deposits"]
    if not isinstance(deposits, list) or not deposits:
        raise ValueError('"deposits" is not a non-empty list')
    entries = [parse_entry(d, "deposit", DEPOSIT_SCHEMA) for d in deposits]
    receipt = parse_entry(evidence["download"], "download receipt", EVENT_SCHEMA)
    report.passed(
        EVIDENCE_JSON, f"canonical {EVIDENCE_SCHEMA}, {len(entries)} deposit(s)"
    )
    return evidence["origin"], entries, receipt
