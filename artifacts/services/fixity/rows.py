"""Fixity of escrow rows: a deposit or escrow event row against the log entry
at its index (``fixity_log`` walks them side by side), and a deposit's legal
hold and retention against the hold and retention events the log holds.

A row is compared with the entry's leaf: the bytes and leaf hash it keeps,
then each field the leaf names (ids, kind, depositor, RFP, time, actor, the
deposits an event is about), and for a deposit its blob rows in order (role,
SHA-256, size, path) with the leaf's blob list."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from artifacts.lib.evidence.layout import format_time
from artifacts.lib.transparency.merkle import leaf_hash
from artifacts.models import Deposit, EscrowEvent, FixityFinding, LogEntry
from artifacts.services.fixity.report import Finding, Findings

Kind = FixityFinding.Kind
HOLD_ACTIONS = {"legal_hold.set": True, "legal_hold.released": False}
RETENTION = "retention.extended"


def _stored(row: Deposit | EscrowEvent, leaf: bytes) -> list[str]:
    problems = []
    if bytes(row.leaf) != leaf:
        problems.append("its leaf bytes differ from the log entry's")
    if row.leaf_hash != leaf_hash(leaf).hex():
        problems.append("its leaf hash is not the entry's")
    return problems


def _fields(expected: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """Names only, never values: a finding is shown to the buyer side even
    while the RFP's bids are sealed (no vendor name may appear)."""
    differing = [key for key, value in expected.items() if record.get(key) != value]
    return [f"its {', '.join(differing)} differ from the log"] if differing else []


def _blob_rows(deposit: Deposit) -> list[tuple[Any, ...]]:
    items = deposit.items.order_by("position", "pk")
    return list(items.values_list("role", "blob__sha256", "blob__size", "path"))


def _logged_blobs(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    blobs = record.get("blobs")
    if not isinstance(blobs, list):
        return []
    return [
        (b.get("role"), b.get("sha256"), b.get("size"), b.get("path", ""))
        for b in blobs
        if isinstance(b, dict)
    ]


def _blob_problem(rows: list[tuple[Any, ...]], logged: list[tuple[Any, ...]]) -> str:
    missing = [entry[1][:12] for entry in logged if entry not in rows]
    extra = [entry[1][:12] for entry in rows if entry not in logged]
    parts = [f"{len(rows)} blob rows for {len(logged)} logged blobs"]
    if missing:
        parts.append(f"logged but not in the rows: {', '.join(missing)}")
    if extra:
        parts.append(f"in the rows but not logged: {', '.join(extra)}")
    if not missing and not extra:
        parts.append("in another order")
    return "; ".join(parts)


def check_deposit(
    findings: Findings,
    row: Deposit,
    leaf: bytes,
    record: dict[str, Any],
    blob_rows: list[tuple[Any, ...]] | None = None,
) -> None:
    """``row`` against its log entry; ``blob_rows``: its blob rows (role,
    sha256, size, path) in position order, read here if not given."""
    problems = _stored(row, leaf)
    problems += _fields(
        {
            "deposit": str(row.public_id),
            "kind": row.kind,
            "organisation": row.organisation.slug,
            "rfp": row.rfp.reference,
            "time": format_time(row.deposited_at),
        },
        record,
    )
    bundle = str(row.bundle.public_id) if row.bundle is not None else None
    if record.get("bundle") != bundle:
        problems.append("its bundle is not the logged one")
    rows = _blob_rows(row) if blob_rows is None else blob_rows
    logged = _logged_blobs(record)
    if rows != logged:
        problems.append(_blob_problem(rows, logged))
    if problems:
        findings.add(
            Finding(
                Kind.ROW_ALTERED,
                f"deposit #{row.log_index}",
                "The deposit row differs from its log entry: " + "; ".join(problems),
                log_index=row.log_index,
                rfp_reference=row.rfp.reference,
                deposit=str(row.public_id),
            )
        )


def check_event(
    findings: Findings, row: EscrowEvent, leaf: bytes, record: dict[str, Any]
) -> None:
    problems = _stored(row, leaf)
    actor = row.actor.get_username() if row.actor is not None else "system"
    problems += _fields(
        {
            "event": str(row.public_id),
            "action": row.action,
            "actor": actor,
            "time": format_time(row.occurred_at),
        },
        record,
    )
    named = [d.get("deposit") for d in record.get("deposits") or []]
    if row.deposit is not None and named != [str(row.deposit.public_id)]:
        problems.append("its deposit is not the one logged")
    bundle = str(row.bundle.public_id) if row.bundle is not None else None
    if record.get("bundle") != bundle:
        problems.append("its bundle is not the logged one")
    if problems:
        findings.add(
            Finding(
                Kind.ROW_ALTERED,
                f"escrow event #{row.log_index}",
                "The escrow event row differs from its log entry: "
                + "; ".join(problems),
                log_index=row.log_index,
                deposit=named[0] if named else "",
            )
        )


class DepositStates:
    """Legal hold and retention: what the log says each deposit's should be
    (its leaf, then its hold and retention events in log order), compared
    at the end with fresh reads of the rows that may differ."""

    def __init__(self) -> None:
        self.events: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.suspects: set[str] = set()

    def saw_deposit(self, row: Deposit, record: dict[str, Any]) -> None:
        initial = (False, record.get("retain_until"))
        if (row.legal_hold, format_time(row.retain_until)) != initial:
            self.suspects.add(str(row.public_id))

    def saw_event(self, index: int, record: dict[str, Any]) -> None:
        action = record.get("action")
        if action not in HOLD_ACTIONS and action != RETENTION:
            return
        for named in record.get("deposits") or []:
            deposit = str(named.get("deposit"))
            self.events[deposit].append((index, record))
            self.suspects.add(deposit)

    def check(self, findings: Findings, size: int) -> None:
        suspects = sorted(self.suspects)
        for start in range(0, len(suspects), 500):
            rows = Deposit.objects.filter(public_id__in=suspects[start : start + 500])
            for row in rows.select_related("rfp"):
                self._check_one(findings, row, size)

    def _later_events(self, row: Deposit, size: int) -> Iterable[tuple[int, dict]]:
        """Hold and retention events appended since the walk began."""
        later = EscrowEvent.objects.filter(deposit=row, log_index__gte=size)
        for event in later.order_by("log_index"):
            yield event.log_index, json.loads(bytes(event.leaf))

    def _check_one(self, findings: Findings, row: Deposit, size: int) -> None:
        entry = LogEntry.objects.filter(index=row.log_index).first()
        if entry is None:
            return  # reported by the walk
        hold, retain = False, json.loads(bytes(entry.leaf)).get("retain_until")
        logged = self.events.get(str(row.public_id), [])
        for _, record in [*logged, *self._later_events(row, size)]:
            if record.get("action") in HOLD_ACTIONS:
                hold = HOLD_ACTIONS[record["action"]]
            else:
                retain = record.get("retain_until")
        actual = (row.legal_hold, format_time(row.retain_until))
        if actual == (hold, retain):
            return
        detail = (
            f"legal hold {'on' if actual[0] else 'off'}, kept until {actual[1]}; "
            f"the log says hold {'on' if hold else 'off'}, kept until {retain}"
        )
        findings.add(
            Finding(
                Kind.ROW_ALTERED,
                f"deposit #{row.log_index}",
                "The deposit's legal hold or retention is not what its logged "
                f"events say: {detail}.",
                log_index=row.log_index,
                rfp_reference=row.rfp.reference,
                deposit=str(row.public_id),
            )
        )
