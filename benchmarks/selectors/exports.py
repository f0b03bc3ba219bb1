"""A campaign's metrics as CSV and JSON (the same rows in both). Units, scopes
and source keys come from the vendor's harness output: the CSV neutralises
anything a spreadsheet would run as a formula."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Final

from django.db.models import F

from benchmarks.models import Campaign, RunMetric
from procurement.selectors.comparison_exports import csv_safe

COLUMNS: Final = (
    "run",
    "scenario",
    "repetition",
    "attempt",
    "name",
    "stat",
    "value",
    "unit",
    "scope",
    "method",
    "source_path",
    "source_key",
)


def campaign_metric_rows(campaign: Campaign) -> list[dict[str, Any]]:
    """One row per metric of each run's current attempt, in run order."""
    metrics = (
        RunMetric.objects.filter(run__campaign=campaign, attempt=F("run__attempt"))
        .select_related("run")
        .order_by("run__position", "name", "stat", "scope", "id")
    )
    return [
        {
            "run": str(m.run.public_id),
            "scenario": m.scenario or m.run.scenario_name,
            "repetition": m.run.repetition,
            "attempt": m.attempt,
            "name": m.name,
            "stat": m.stat,
            "value": m.value,
            "unit": m.unit,
            "scope": m.scope,
            "method": m.method,
            "source_path": m.source_path,
            "source_key": m.source_key,
        }
        for m in metrics
    ]


def campaign_metrics_csv(campaign: Campaign) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in campaign_metric_rows(campaign):
        writer.writerow([csv_safe(str(row[column])) for column in COLUMNS])
    return buffer.getvalue()


def campaign_metrics_json(campaign: Campaign) -> str:
    document = {
        "campaign": str(campaign.public_id),
        "rfp": campaign.rfp.reference,
        "vendor": campaign.bundle.organisation.slug,
        "bundle_sha256": campaign.bundle.sha256,
        "pool": campaign.pool.name,
        "metrics": campaign_metric_rows(campaign),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
