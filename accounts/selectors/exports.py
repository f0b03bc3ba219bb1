"""Exports that people open in spreadsheets: formula-safe CSV, and the audit
trail as CSV and JSON (the same rows, every one, sealed as on the page)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.core.serializers.json import DjangoJSONEncoder

if TYPE_CHECKING:
    from accounts.selectors.audit_rows import AuditRow

AUDIT_COLUMNS = [
    "occurred_at",
    "action",
    "label",
    "sealed",
    "actor",
    "organisation",
    "target_type",
    "target",
    "rfp",
    "details",
    "request_id",
]


def csv_safe(cell: str) -> str:
    """Keep spreadsheets from running text as a formula (CSV injection)."""
    if cell[:1] in {"=", "+", "-", "@", "\t", "\r"}:
        try:
            Decimal(cell)
        except ArithmeticError:
            return "'" + cell
    return cell


def _record(row: AuditRow) -> dict[str, Any]:
    return {
        "occurred_at": row.occurred_at.isoformat(),
        "action": row.action,
        "label": row.label,
        "sealed": row.sealed,
        "actor": row.actor,
        "organisation": row.organisation,
        "target_type": row.target_type,
        "target": row.target,
        "rfp": row.rfp,
        "details": row.details,
        "request_id": row.request_id,
    }


class _Echo:
    def write(self, value: str) -> str:
        return value


def audit_csv_lines(rows: Iterable[AuditRow]) -> Iterator[str]:
    """A header line, then one line per row; every cell formula-safe."""
    writer = csv.writer(_Echo())
    yield writer.writerow(AUDIT_COLUMNS)
    for row in rows:
        record = _record(row)
        record["sealed"] = "yes" if row.sealed else "no"
        record["details"] = json.dumps(
            row.details, cls=DjangoJSONEncoder, sort_keys=True, ensure_ascii=False
        )
        yield writer.writerow([csv_safe(str(record[c])) for c in AUDIT_COLUMNS])


def audit_json_chunks(
    rows: Iterable[AuditRow], filters: dict[str, str]
) -> Iterator[str]:
    """``{"schema": "reprogate.audit-trail/v1", "filters": …, "events": […]}``,
    written row by row."""
    head = {"schema": "reprogate.audit-trail/v1", "filters": filters}
    yield json.dumps(head, sort_keys=True)[:-1] + ', "events": ['
    for n, row in enumerate(rows):
        text = json.dumps(_record(row), cls=DjangoJSONEncoder, sort_keys=True)
        yield ("," if n else "") + text
    yield "]}"
