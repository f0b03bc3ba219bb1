"""The run page: state and progress with the log tail (polled while the run is
queued or active), environment and drift, isolation, metrics, the request
waterfall and the slowest requests joined with the telemetry (trace spans), raw
outputs (downloads audited) and the run's timeline; cancelling a run."""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError
from accounts.views.disk_full import unless_disk_full
from accounts.views.requests import SignedInRequest
from artifacts.storage.blobs import blob_open
from benchmarks.lib.charts import bundle_claims, run_charts, telemetry_charts
from benchmarks.lib.lab.artefacts import SPANS, TELEMETRY
from benchmarks.lib.lab.checks import CHECK_LABELS
from benchmarks.lib.lab.scenario_summary import scenario_did
from benchmarks.lib.lab.spans import (
    SpanTree,
    iso_to_ns,
    slowest_requests,
    waterfall,
)
from benchmarks.models import Run
from benchmarks.selectors.access import can_operate_campaign, run_get_visible
from benchmarks.selectors.campaigns import (
    run_event_list,
    run_metric_list,
    run_output_list,
    run_series_list,
)
from benchmarks.selectors.isolation import isolation_facts
from benchmarks.selectors.telemetry import (
    run_artefact_digests,
    run_scenario_document,
    run_spans,
    run_telemetry,
)
from benchmarks.services.downloads import run_output_record_download
from benchmarks.services.runs import run_cancel

SEVERITY_ORDER = {"major": 0, "minor": 1, "info": 2}
TRACE_CACHE_SECONDS = 600


def run_for_request(request: HttpRequest, run_id: uuid.UUID) -> Run:
    run = run_get_visible(request.user, run_id)
    if run is None:
        raise Http404("No such run.")
    return run


def _live_context(request: HttpRequest, run: Run) -> dict[str, object]:
    return {
        "run": run,
        "campaign": run.campaign,
        "can_operate": can_operate_campaign(request.user, run.campaign),
        "polling": run.state == Run.State.QUEUED or run.is_active,
    }


def _spans_context(run: Run, telemetry: dict[str, Any] | None) -> dict[str, object]:
    """The request waterfall and the slowest requests, on the telemetry's
    clock when the run has telemetry; kept in the cache under the digests of
    the spans and the telemetry they are drawn from."""
    digests = run_artefact_digests(run)
    if SPANS not in digests:
        return {"waterfall": None, "slowest": []}
    key = f"run-trace:{digests[SPANS]}:{digests.get(TELEMETRY, '')}"
    found = cache.get(key)
    if found is None:
        tree = SpanTree.of(run_spans(run) or [])
        start = iso_to_ns(str(telemetry["started"])) if telemetry else None
        found = {
            "waterfall": waterfall(tree, run_start_ns=start, max_requests=15),
            "slowest": slowest_requests(tree, telemetry, run_start_ns=start),
        }
        cache.set(key, found, TRACE_CACHE_SECONDS)
    return found


@login_required
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    run = run_for_request(request, run_id)
    telemetry = run_telemetry(run)
    document = telemetry.document(str(run.public_id)) if telemetry else None
    drift = sorted(
        run.drift or [], key=lambda d: SEVERITY_ORDER.get(str(d.get("severity")), 3)
    )
    context = {
        **_live_context(request, run),
        "drift": drift,
        "major_drift": sum(1 for d in drift if d.get("severity") == "major"),
        "declared_by": run.campaign.bundle.organisation,
        "metrics": run_metric_list(run),
        "charts": run_charts(
            list(run_series_list(run).values("name", "unit", "scope", "points")),
            bundle_claims(run.campaign.bundle.manifest),
            run.scenario_name,
        )
        + telemetry_charts(document),
        "has_telemetry": telemetry is not None,
        **_spans_context(run, document),
        "outputs": run_output_list(run),
        "events": run_event_list(run),
        "isolation": isolation_facts(run.isolation),
        "checks": check_rows(run.checks),
        "scenario": _scenario_context(run),
    }
    return render(request, "benchmarks/run_detail.html", context)


MAX_ACTION_ROWS = 100


def _scenario_context(run: Run) -> dict[str, object] | None:
    """What the runner did around the harness in a scenario of another kind
    than steady (its ``scenario.json``), or None."""
    document = run_scenario_document(run)
    if document is None:
        return None
    actions = document.record.get("actions")
    return {
        "kind": document.kind,
        "did": scenario_did(document.record),
        "metrics": document.metrics,
        "actions": [
            _action_row(a) for a in (actions if isinstance(actions, list) else [])
        ][:MAX_ACTION_ROWS],
    }


def _action_row(action: object) -> dict[str, object]:
    """One action of the record as the run page lists it (a record comes from a
    lab host: what is not shaped as expected shows as a dash)."""
    row = action if isinstance(action, dict) else {}
    given = row.get("argument")
    argument: dict[str, Any] = given if isinstance(given, dict) else {}
    return {
        "at_s": row.get("at_s"),
        "hook": row.get("hook"),
        "verb": row.get("verb"),
        "do": argument.get("do"),
        "for_s": argument.get("for_s"),
        "exit_code": row.get("exit_code"),
        "output": str(row.get("output") or "")[:300],
    }


def check_rows(checks: object) -> list[dict[str, object]]:
    """The run's anti-gaming checks as the run page lists them."""
    listed = checks if isinstance(checks, list) else []
    return [
        {**c, "label": CHECK_LABELS.get(str(c.get("id")), str(c.get("id")))}
        for c in listed
        if isinstance(c, dict)
    ]


@login_required
def run_live(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """State, progress and log tail alone: what the run page polls."""
    run = run_for_request(request, run_id)
    return render(request, "benchmarks/_run_live.html", _live_context(request, run))


@login_required
@require_POST
def run_cancel_view(request: SignedInRequest, run_id: uuid.UUID) -> HttpResponse:
    run = run_for_request(request, run_id)
    if not can_operate_campaign(request.user, run.campaign):
        raise PermissionDenied("Only the pool's lab operators cancel its runs.")
    try:
        run_cancel(run=run, actor=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Cancellation requested.")
    return redirect("benchmarks:run_detail", run_id=run.public_id)


@login_required
def run_output_download(
    request: SignedInRequest, run_id: uuid.UUID, output_id: int
) -> FileResponse:
    run = run_for_request(request, run_id)
    output = get_object_or_404(run_output_list(run), pk=output_id)
    # On a full disk the file is served and the audit row goes to the log.
    with unless_disk_full(f"run output {output.pk} downloaded by {request.user}"):
        run_output_record_download(output=output, actor=request.user, via="web")
    name = PurePosixPath(output.path).name
    return FileResponse(
        blob_open(output.blob),
        as_attachment=True,
        filename=name,
        content_type="application/octet-stream",
    )
