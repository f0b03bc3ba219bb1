"""A campaign's metrics as CSV and JSON (the same rows in both). Units, scopes
and source keys come from the vendor's harness output: the CSV neutralises
anything a spreadsheet would run as a formula.

The exports are produced as chunks of text (``…_chunks``) for a streaming
response: rows are read from the database in batches, a run's log tail and
JSON columns are never read, and no export is ever held whole in memory."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Iterable, Iterator
from itertools import islice
from typing import Any, Final

from django.db.models import F, QuerySet

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
CHART_COLUMNS: Final = ("scenario", "name", "stat", "value", "unit", "scope")
CHUNK_ROWS: Final = 2000  # rows per database fetch and per streamed chunk


def _current_metrics(campaign: Campaign) -> QuerySet[RunMetric]:
    """The metrics of each run's current attempt, in run order."""
    return RunMetric.objects.filter(
        run__campaign=campaign, attempt=F("run__attempt")
    ).order_by("run__position", "name", "stat", "scope", "id")


def campaign_metric_row_iter(campaign: Campaign) -> Iterator[dict[str, Any]]:
    """One row per metric of each run's current attempt, in run order, read in
    batches of ``CHUNK_ROWS`` (only the columns a row shows)."""
    metrics = _current_metrics(campaign).values_list(
        "run__public_id", "scenario", "run__scenario_name", "run__repetition",
        "attempt", "name", "stat", "value", "unit", "scope", "method",
        "source_path", "source_key",
    )  # fmt: skip
    for row in metrics.iterator(chunk_size=CHUNK_ROWS):
        run, scenario, run_scenario, repetition, *rest = row
        values = (str(run), scenario or run_scenario, repetition, *rest)
        yield dict(zip(COLUMNS, values, strict=True))


def campaign_chart_rows(
    campaign: Campaign, names: Collection[str]
) -> list[dict[str, Any]]:
    """The rows of ``campaign_metric_row_iter`` of the metrics ``names``, with the
    columns the campaign page's charts read (``CHART_COLUMNS``), in the same
    order, in one plain query: the charts hold them all anyway."""
    metrics = (
        _current_metrics(campaign)
        .filter(name__in=list(names))
        .values_list(
            "scenario", "run__scenario_name", "name", "stat", "value", "unit", "scope"
        )
    )
    return [
        dict(zip(CHART_COLUMNS, (scenario or run_scenario, *rest), strict=True))
        for scenario, run_scenario, *rest in metrics
    ]


def _batches(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, CHUNK_ROWS)):
        yield batch


def campaign_metrics_csv_chunks(campaign: Campaign) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for batch in _batches(campaign_metric_row_iter(campaign)):
        for row in batch:
            writer.writerow([csv_safe(str(row[column])) for column in COLUMNS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()  # no rows: the header alone


def campaign_metrics_json_chunks(campaign: Campaign) -> Iterator[str]:
    """The bytes ``json.dumps(document, indent=2, ensure_ascii=False)`` would
    give for the whole document, written a batch of metrics at a time."""
    head = {
        "campaign": str(campaign.public_id),
        "rfp": campaign.rfp.reference,
        "vendor": campaign.bundle.organisation.slug,
        "bundle_sha256": campaign.bundle.sha256,
        "pool": campaign.pool.name,
        "metrics": [],
    }
    opening = json.dumps(head, indent=2, ensure_ascii=False)
    opening = opening.removesuffix("[]\n}")  # ends with '"metrics": '
    separator = "[\n"
    for batch in _batches(campaign_metric_row_iter(campaign)):
        rows = ",\n".join(_indented(row) for row in batch)
        yield opening + separator + rows
        opening, separator = "", ",\n"
    yield f"{opening}[]\n}}\n" if opening else "\n  ]\n}\n"


def _indented(row: dict[str, Any]) -> str:
    """The row as ``json.dumps`` writes it inside the document's list."""
    text = json.dumps(row, indent=2, ensure_ascii=False)
    return "\n".join("    " + line for line in text.split("\n"))
