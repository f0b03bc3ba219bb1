"""Campaign pages: the list, the start form (lab operators), the campaign page
whose run table polls itself (htmx, every 2 s) while any run is queued or
running, cancellation, and the metric exports (CSV and JSON)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError, Problem
from accounts.lib.paging import PAGE_SIZE
from accounts.views.requests import SignedInRequest
from benchmarks.forms.lab import NO_GATE, CampaignStartForm
from benchmarks.lib.charts import (
    CHARTED_METRICS,
    Chart,
    bundle_claims,
    campaign_charts,
)
from benchmarks.models import Campaign
from benchmarks.selectors.access import (
    campaign_get_visible,
    campaign_list_visible_to,
    can_operate_campaign,
    lab_organisation_list_for,
)
from benchmarks.selectors.campaigns import (
    campaign_hit_rate_series,
    campaign_list_with_counts,
    campaign_run_list,
    campaign_summary_of,
)
from benchmarks.selectors.exports import (
    campaign_chart_rows,
    campaign_metrics_csv_chunks,
    campaign_metrics_json_chunks,
)
from benchmarks.selectors.gate_campaigns import campaign_judged_by, gate_campaign_start
from benchmarks.services.campaigns import campaign_cancel, campaign_start

EXPORTS: Final[dict[str, tuple[Callable[[Campaign], Iterator[str]], str]]] = {
    "csv": (campaign_metrics_csv_chunks, "text/csv; charset=utf-8"),
    "json": (campaign_metrics_json_chunks, "application/json"),
}


def campaign_for_request(request: HttpRequest, campaign_id: uuid.UUID) -> Campaign:
    campaign = campaign_get_visible(request.user, campaign_id)
    if campaign is None:
        raise Http404("No such campaign.")
    return campaign


@login_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = campaign_list_with_counts(campaign_list_visible_to(request.user))
    page = Paginator(campaigns.order_by("-created_at", "-id"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "can_start": lab_organisation_list_for(request.user).exists(),
    }
    return render(request, "benchmarks/campaign_list.html", context)


@login_required
def campaign_start_view(request: SignedInRequest) -> HttpResponse:
    if not lab_organisation_list_for(request.user).exists():
        raise PermissionDenied("Only lab operators start campaigns.")
    form = CampaignStartForm(request.user, request.POST or None)
    form.preselect_gate(request.GET.get("gate", ""))
    form.offer_bundles(request.GET.get("q", ""))
    if form.is_bound and form.is_valid():
        try:
            campaign = _start(request, form.cleaned_data)
        except ApplicationError as error:
            for problem in error.problems or []:
                field, message = _field_of(problem, form)
                form.add_error(field, message)
            if not error.problems:
                form.add_error(None, error.message)
        else:
            messages.success(
                request, f"Campaign started: {campaign.runs.count()} runs."
            )
            return redirect(
                "benchmarks:campaign_detail", campaign_id=campaign.public_id
            )
    status = 400 if form.is_bound else 200
    return render(
        request, "benchmarks/campaign_start.html", {"form": form}, status=status
    )


def _field_of(problem: Problem, form: CampaignStartForm) -> tuple[str | None, str]:
    """The form field a problem belongs to, and its message (a lab plan's
    problem names its place in the plan)."""
    if problem.path in form.fields:
        return problem.path, problem.message
    if (problem.path or "").startswith("lab_plan"):
        return "lab_plan", f"{problem.path}: {problem.message}"
    return None, problem.message


def _start(request: SignedInRequest, data: dict[str, Any]) -> Campaign:
    """A campaign for the chosen gate (judged when its runs end), else a plain
    one (not judged)."""
    gate, fields = data["gate"], {k: v for k, v in data.items() if k != "gate"}
    if gate:
        return gate_campaign_start(choice=gate, actor=request.user, **fields)
    return campaign_start(actor=request.user, **fields)


def _runs_context(request: HttpRequest, campaign: Campaign) -> dict[str, object]:
    """One page of the run table (``?page=``) and the summary of all runs."""
    runs = Paginator(campaign_run_list(campaign), PAGE_SIZE)
    return {
        "campaign": campaign,
        "page": runs.get_page(request.GET.get("page")),
        "summary": campaign_summary_of(campaign),
        "can_operate": can_operate_campaign(request.user, campaign),
    }


def _charts(campaign: Campaign) -> list[Chart]:
    return campaign_charts(
        campaign_chart_rows(campaign, CHARTED_METRICS),
        campaign.scenarios,
        bundle_claims(campaign.bundle.manifest),
        campaign_hit_rate_series(campaign),
    )


@login_required
def campaign_detail(request: HttpRequest, campaign_id: uuid.UUID) -> HttpResponse:
    campaign = campaign_for_request(request, campaign_id)
    context = {
        **_runs_context(request, campaign),
        "charts": _charts(campaign),
        "judged_by": campaign_judged_by(campaign),
        "not_judged": NO_GATE,
    }
    return render(request, "benchmarks/campaign_detail.html", context)


@login_required
def campaign_runs(request: HttpRequest, campaign_id: uuid.UUID) -> HttpResponse:
    """The run table alone: what the campaign page polls."""
    campaign = campaign_for_request(request, campaign_id)
    return render(
        request, "benchmarks/_campaign_runs.html", _runs_context(request, campaign)
    )


@login_required
def campaign_charts_view(request: HttpRequest, campaign_id: uuid.UUID) -> HttpResponse:
    """The charts alone: what the campaign page polls while runs are in progress."""
    campaign = campaign_for_request(request, campaign_id)
    context = {
        "campaign": campaign,
        "charts": _charts(campaign),
        "summary": campaign_summary_of(campaign),
    }
    return render(request, "benchmarks/_campaign_charts.html", context)


@login_required
@require_POST
def campaign_cancel_view(
    request: SignedInRequest, campaign_id: uuid.UUID
) -> HttpResponse:
    campaign = campaign_for_request(request, campaign_id)
    if not can_operate_campaign(request.user, campaign):
        raise PermissionDenied("Only the pool's lab operators cancel its campaigns.")
    try:
        campaign_cancel(campaign=campaign, actor=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(
            request, "Campaign cancelled: running harnesses are being stopped."
        )
    return redirect("benchmarks:campaign_detail", campaign_id=campaign.public_id)


@login_required
def campaign_metrics_export(
    request: HttpRequest, campaign_id: uuid.UUID, fmt: str
) -> StreamingHttpResponse:
    """Streamed: the rows are read and written a batch at a time."""
    campaign = campaign_for_request(request, campaign_id)
    write, content_type = EXPORTS[fmt]
    vendor, short = campaign.bundle.organisation.slug, str(campaign.public_id)[:8]
    name = f"{campaign.rfp.reference}-{vendor}-{short}-metrics.{fmt}"
    return StreamingHttpResponse(
        (chunk.encode() for chunk in write(campaign)),
        content_type=content_type,
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
