"""Fixity check of escrow: everything stored is re-read and compared with what
the transparency log says. Reads only; ``artifacts.services.fixity.run`` records
the result.

- the log (``fixity_log``): entries 0 … size-1 with no gap, each stored leaf
  hash recomputed, every stored tree node recomputed from the leaves, the
  roots at every checkpoint recomputed and each checkpoint's signature checked
  with the log key; every deposit and escrow event row against its entry
  (leaf bytes, leaf hash, the fields the leaf names, a deposit's blob rows
  against the leaf's blob list, legal hold and retention against the logged
  events), every entry against its row;
- the releases (``fixity_releases``): each step row against its logged event,
  each status against the logged steps, a certificate against the SHA-256 its
  execution logged;
- the rows other apps keep of their deposits (``fixity_sources``: what each
  app registers, e.g. a gate evaluation's documents, digests and verdict
  against its deposit's leaf);
- the blobs (``fixity_blobs``): every ``Blob`` re-hashed as stored (S3: the
  recorded version), streamed in chunks; on S3 the key's current version must
  still be the deposited one; every object under ``blobs/`` must have a
  ``Blob`` row; every ``Blob`` row must be named by a deposit.

What counts as *extra*: an object under ``blobs/`` that no ``Blob`` row
points to (older than ``ESCROW_FIXITY_GRACE_SECONDS``, 3600: an ingest writes
its blobs before the transaction that records them), and a ``Blob`` row that
no deposit names (every blob is stored by an ingest that deposits it in the
same transaction, so such a row was left behind or added by hand). Objects
elsewhere in the storage are not escrow's and are not looked at.

Memory stays bounded: rows are read in chunks, blobs hashed chunk by chunk,
stored objects listed folder by folder."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from artifacts.conf import blob_sweep_every_hours, escrow_fixity_grace_seconds

MAX_PER_KIND: Final = 100  # findings listed per kind; the rest are counted


@dataclass(frozen=True)
class Finding:
    kind: str  # FixityFinding.Kind
    subject: str
    detail: str
    log_index: int | None = None
    sha256: str = ""
    rfp_reference: str = ""  # the deposit's RFP, for whose dashboards
    deposit: str = ""  # a deposit's public id, to find its RFP


@dataclass
class Findings:
    """Findings in the order found, at most ``MAX_PER_KIND`` of each kind
    (``more`` counts the rest)."""

    items: list[Finding] = field(default_factory=list)
    per_kind: Counter[str] = field(default_factory=Counter)

    def add(self, finding: Finding) -> None:
        self.per_kind[finding.kind] += 1
        if self.per_kind[finding.kind] <= MAX_PER_KIND:
            self.items.append(finding)

    def overflow(self) -> list[Finding]:
        return [
            Finding(kind, f"{count - MAX_PER_KIND} more", "not listed one by one")
            for kind, count in sorted(self.per_kind.items())
            if count > MAX_PER_KIND
        ]

    @property
    def total(self) -> int:
        return sum(self.per_kind.values())


@dataclass
class Counts:
    blobs_checked: int = 0
    bytes_hashed: int = 0
    objects_listed: int = 0
    deposits_checked: int = 0
    events_checked: int = 0
    log_entries_checked: int = 0
    log_size: int = 0
    checkpoint_size: int | None = None


@dataclass
class FixityReport:
    started_at: datetime
    finished_at: datetime | None = None
    counts: Counts = field(default_factory=Counts)
    findings: Findings = field(default_factory=Findings)

    @property
    def clean(self) -> bool:
        return self.findings.total == 0


def extra_object_age() -> timedelta:
    """How old an object under blobs/ with no row must be for fixity to report
    it: a failed ingest leaves its bytes for the blob sweep, which deletes them
    past the grace period, so only one the sweep should have taken is extra."""
    return grace_period() + timedelta(hours=blob_sweep_every_hours())


def grace_period() -> timedelta:
    """How long an object under ``blobs/`` with no row may be young: an ingest
    writes its bytes before recording their rows (the blob sweep spares them
    that long)."""
    return timedelta(seconds=escrow_fixity_grace_seconds())
