"""Fixity of the transparency log: one ordered pass over the entries below the
log's size (read first, so entries appended meanwhile are left for the next
run), with the deposit and escrow event rows walked beside them by index.

For each entry: no index skipped, the stored leaf hash is the leaf's, its
record is a deposit or an escrow event with the matching row
(``fixity_rows``). The leaf hashes feed the RFC 9162 tree as the log built it
(``tree.append_leaf``): every stored node the appends completed is compared,
a batch at a time, and the root at every checkpoint's size is compared with
the root that checkpoint signed (its signature checked with the log key), the
final one with the log state's peaks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final, Generic, TypeVar

from django.db.models import Q

from artifacts.lib.evidence.layout import DEPOSIT_SCHEMA, EVENT_SCHEMA
from artifacts.lib.transparency import merkle, note, tree
from artifacts.lib.transparency.keyfile import LogKeyError
from artifacts.models import (
    Checkpoint,
    Deposit,
    DepositBlob,
    EscrowEvent,
    FixityFinding,
    LogEntry,
    LogNode,
    LogState,
)
from artifacts.selectors.log import log_verifier_key
from artifacts.services.fixity.report import Finding, FixityReport
from artifacts.services.fixity.rows import DepositStates, check_deposit, check_event
from artifacts.services.fixity.sources import log_record_schemas

Kind = FixityFinding.Kind
BATCH: Final = 500
ITEM_BATCH: Final = 2000
T = TypeVar("T")


class Peekable(Generic[T]):
    def __init__(self, items: Iterator[T]) -> None:
        self._items, self._head = items, next(items, None)

    def peek(self) -> T | None:
        return self._head

    def pop(self) -> T | None:
        head, self._head = self._head, next(self._items, None)
        return head


def _rows(size: int) -> tuple[Peekable[Deposit], Peekable[EscrowEvent]]:
    deposits = (
        Deposit.objects.filter(log_index__lt=size)
        .select_related("organisation", "rfp", "bundle")
        .order_by("log_index")
    )
    events = (
        EscrowEvent.objects.filter(log_index__lt=size)
        .select_related("actor", "bundle", "deposit")
        .order_by("log_index")
    )
    return (
        Peekable(deposits.iterator(chunk_size=BATCH)),
        Peekable(events.iterator(chunk_size=BATCH)),
    )


class DepositItems:
    """The blob rows of the deposits below the log's size, as tuples in log
    and position order, read a chunk at a time beside the deposits (never a
    deposit's whole list of model rows, nor many deposits' at once)."""

    def __init__(self, size: int) -> None:
        items = (
            DepositBlob.objects.filter(deposit__log_index__lt=size)
            .order_by("deposit__log_index", "position", "pk")
            .values_list(
                "deposit__log_index", "role", "blob__sha256", "blob__size", "path"
            )
        )
        self.items = Peekable(items.iterator(chunk_size=ITEM_BATCH))

    def of(self, deposit: Deposit) -> list[tuple[Any, ...]]:
        """``deposit``'s blob rows (role, sha256, size, path); the rows of
        deposits before it that were not asked for are skipped."""
        found = []
        while (item := self.items.peek()) is not None and item[0] <= deposit.log_index:
            self.items.pop()
            if item[0] == deposit.log_index:
                found.append(item[1:])
        return found


def _record(leaf: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(leaf)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _logged_rfp(index: Any) -> str:
    """The RFP a deposit's log entry names (its row may be gone)."""
    if not isinstance(index, int):
        return ""
    entry = LogEntry.objects.filter(index=index).first()
    record = _record(bytes(entry.leaf)) if entry is not None else None
    return str(record.get("rfp", "")) if record else ""


class LogWalk:
    def __init__(self, report: FixityReport, size: int, sizes: set[int]) -> None:
        self.report, self.findings = report, report.findings
        self.size, self.checkpoint_sizes = size, sizes
        self.next, self.fed = 0, 0
        self.peaks: list[bytes] = []
        self.roots: dict[int, bytes] = {0: merkle.empty_root()}
        self.nodes: list[tuple[int, int, bytes]] = []
        self.nodes_comparable = True  # until a gap shifts every later node
        self.deposits, self.events = _rows(size)
        self.items = DepositItems(size)
        self.states = DepositStates()

    def add(self, kind: str, subject: str, detail: str, **extra: Any) -> None:
        self.findings.add(Finding(kind, subject, detail, **extra))

    def run(self) -> None:
        entries = LogEntry.objects.filter(index__lt=self.size).order_by("index")
        rows = entries.values_list("index", "leaf", "leaf_hash")
        for index, leaf, stored_hash in rows.iterator(chunk_size=BATCH):
            self.entry(index, bytes(leaf), bytes(stored_hash))
        if self.next < self.size:
            self.gap(self.next, self.size)
        for kind, rows_left in (("deposit", self.deposits), ("event", self.events)):
            while (row := rows_left.pop()) is not None:
                self.unlogged(kind, row)
        self.compare_nodes()
        self.states.check(self.findings, self.size)

    def gap(self, start: int, end: int) -> None:
        self.nodes_comparable = False
        self.add(
            Kind.LOG_GAP,
            f"log entries {start} to {end - 1}"
            if end - start > 1
            else f"log entry {start}",
            f"{end - start} entr{'y is' if end - start == 1 else 'ies are'} missing "
            f"from the log of {self.size}: rows were deleted.",
            log_index=start,
        )

    def entry(self, index: int, leaf: bytes, stored_hash: bytes) -> None:
        self.report.counts.log_entries_checked += 1
        if index != self.next:
            self.gap(self.next, index)
        self.next = index + 1
        hashed = merkle.leaf_hash(leaf)
        if stored_hash != hashed:
            self.add(
                Kind.LOG_ENTRY_ALTERED,
                f"log entry {index}",
                "Its stored leaf hash is not SHA-256(0x00 || leaf).",
                log_index=index,
            )
        self.feed(hashed)
        deposit = self.row_at(self.deposits, index, "deposit")
        event = self.row_at(self.events, index, "event")
        self.match(index, leaf, _record(leaf), deposit, event)

    def row_at(self, rows: Peekable[Any], index: int, kind: str) -> Any:
        while (row := rows.peek()) is not None and row.log_index < index:
            self.unlogged(kind, rows.pop())
        return rows.pop() if row is not None and row.log_index == index else None

    def unlogged(self, kind: str, row: Any) -> None:
        rfp = row.rfp.reference if isinstance(row, Deposit) else ""
        self.add(
            Kind.ROW_UNLOGGED,
            f"{kind} #{row.log_index}",
            f"This {kind} row claims log entry {row.log_index}, which does not "
            f"hold its record.",
            log_index=row.log_index,
            rfp_reference=rfp,
            deposit=str(row.public_id) if isinstance(row, Deposit) else "",
        )

    def match(self, index: int, leaf: bytes, record: Any, deposit: Any, event: Any):
        schema = record.get("schema") if record else None
        if schema == DEPOSIT_SCHEMA:
            self.report.counts.deposits_checked += deposit is not None
            if deposit is None:
                self.missing("deposit", index, record)
            else:
                items = self.items.of(deposit)
                check_deposit(self.findings, deposit, leaf, record, items)
                self.states.saw_deposit(deposit, record)
        elif schema == EVENT_SCHEMA:
            self.report.counts.events_checked += event is not None
            self.states.saw_event(index, record)
            if event is None:
                self.missing("escrow event", index, record)
            else:
                check_event(self.findings, event, leaf, record)
        elif schema in log_record_schemas:
            pass  # another app's record (sources.log_record_schemas)
        else:
            self.add(
                Kind.LOG_ENTRY_ALTERED,
                f"log entry {index}",
                "Its leaf is neither a deposit nor an escrow event record.",
                log_index=index,
            )
        if schema != DEPOSIT_SCHEMA and deposit is not None:
            self.unlogged("deposit", deposit)
        if schema != EVENT_SCHEMA and event is not None:
            self.unlogged("event", event)

    def missing(self, kind: str, index: int, record: dict[str, Any]) -> None:
        first: dict[str, Any] = next(iter(record.get("deposits") or []), {})
        named = record.get("deposit") or first.get("deposit", "")
        rfp = record.get("rfp") or _logged_rfp(first.get("leaf_index"))
        self.add(
            Kind.ROW_MISSING,
            f"{kind} #{index}",
            f"Log entry {index} records a {kind} "
            f"({record.get('kind') or record.get('action')}) that has no row: "
            "the row was deleted.",
            log_index=index,
            rfp_reference=rfp,
            deposit=named,
        )

    def feed(self, hashed: bytes) -> None:
        self.peaks, completed = tree.append_leaf(self.fed, self.peaks, hashed)
        self.fed += 1
        if self.fed in self.checkpoint_sizes:
            self.roots[self.fed] = tree.root_from_peaks(self.peaks)
        if self.nodes_comparable:
            self.nodes.extend(completed)
            if len(self.nodes) >= 2 * BATCH:
                self.compare_nodes()

    def compare_nodes(self) -> None:
        if not self.nodes:
            return
        by_level: dict[int, list[int]] = {}
        for level, index, _ in self.nodes:
            by_level.setdefault(level, []).append(index)
        condition = Q()
        for level, indexes in by_level.items():  # few levels: a shallow query
            condition |= Q(level=level, index__in=indexes)
        stored = {
            (level, index): bytes(hashed)
            for level, index, hashed in LogNode.objects.filter(condition).values_list(
                "level", "index", "hash"
            )
        }
        for level, index, hashed in self.nodes:
            if stored.get((level, index)) != hashed:
                state = "missing" if (level, index) not in stored else "altered"
                self.add(
                    Kind.LOG_NODE_ALTERED,
                    f"tree node {level}/{index}",
                    f"The stored hash of the subtree over leaves "
                    f"{index << level} to {((index + 1) << level) - 1} is {state}: "
                    "proofs built from it fail.",
                )
        self.nodes = []


def _check_checkpoints(walk: LogWalk) -> None:
    try:
        key = log_verifier_key()
    except LogKeyError as error:
        key = None
        walk.add(
            Kind.CHECKPOINT_INVALID, "log key", f"Cannot read the log key: {error}"
        )
    if not walk.checkpoint_sizes:
        return
    signed_before = Checkpoint.objects.filter(size__lte=max(walk.checkpoint_sizes))
    for checkpoint in signed_before.order_by("size").iterator(chunk_size=BATCH):
        _check_checkpoint(walk, checkpoint, key)


def _check_checkpoint(walk: LogWalk, checkpoint: Checkpoint, key: str | None) -> None:
    subject, signed = f"checkpoint {checkpoint.size}", bytes(checkpoint.root_hash)
    if key is not None:
        try:
            opened = note.open_checkpoint(checkpoint.note, key)
        except note.NoteError as error:
            walk.add(Kind.CHECKPOINT_INVALID, subject, f"Its signature fails: {error}.")
        else:
            if (opened.size, opened.root_hash) != (checkpoint.size, signed):
                walk.add(
                    Kind.CHECKPOINT_INVALID,
                    subject,
                    "Its row says another size or root than its signed note.",
                )
            signed = opened.root_hash
    root = walk.roots.get(checkpoint.size)
    if root is None:
        walk.add(
            Kind.LOG_ROOT_MISMATCH,
            subject,
            f"It covers {checkpoint.size} entries; the log holds {walk.fed}.",
        )
    elif root != signed:
        walk.add(
            Kind.LOG_ROOT_MISMATCH,
            subject,
            "The stored leaves no longer hash to the root this checkpoint "
            f"signed ({signed.hex()[:16]}…, now {root.hex()[:16]}…): entries "
            "were changed, removed or reordered.",
        )


def _check_state(walk: LogWalk, state: LogState | None) -> None:
    if state is None:
        return
    data, width = bytes(state.peaks), merkle.HASH_SIZE
    peaks = [data[at : at + width] for at in range(0, len(data), width)]
    if walk.fed == state.size and peaks != walk.peaks:
        walk.add(
            Kind.LOG_ROOT_MISMATCH,
            "log state",
            "The log state's tree peaks are not those of the stored leaves.",
        )


def check_log(report: FixityReport) -> None:
    # checkpoints first: each one signed so far covers at most the size read next
    sizes = set(Checkpoint.objects.values_list("size", flat=True))
    state = LogState.objects.filter(pk=LogState.SINGLETON).first()
    size = state.size if state is not None else 0
    report.counts.log_size = size
    report.counts.checkpoint_size = max(sizes) if sizes else None
    walk = LogWalk(report, size, sizes)
    walk.run()
    _check_checkpoints(walk)
    _check_state(walk, state)
