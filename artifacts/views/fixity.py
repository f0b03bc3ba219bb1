"""Fixity pages: the runs of ``escrow_verify`` (newest first) and one run, each
in the user's scope (``artifacts.selectors.fixity``: the verdict, findings and
counts that concern the user's organisations; 404 for users who see no
fixity)."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from artifacts.permissions import can_see_fixity
from artifacts.selectors.fixity import (
    fixity_findings_visible_to,
    fixity_run_get,
    fixity_run_list,
    fixity_scope_for,
)

RECENT_RUNS = 30


@login_required
def fixity_runs(request: HttpRequest) -> HttpResponse:
    if not can_see_fixity(request.user):
        raise Http404("No fixity checks for you.")
    runs = list(fixity_run_list(request.user)[:RECENT_RUNS])
    latest = runs[0] if runs else None
    context = {
        "runs": runs,
        "run": latest,
        "findings": fixity_findings_visible_to(request.user, latest) if latest else [],
        "scope": fixity_scope_for(request.user, latest) if latest else None,
    }
    return render(request, "artifacts/fixity_runs.html", context)


@login_required
def fixity_run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    run = fixity_run_get(request.user, run_id)
    if run is None:
        raise Http404("No such fixity run.")
    context = {
        "run": run,
        "findings": fixity_findings_visible_to(request.user, run),
        "scope": fixity_scope_for(request.user, run),
    }
    return render(request, "artifacts/fixity_run.html", context)


urlpatterns = [
    path("escrow/fixity/", fixity_runs, name="fixity_runs"),
    path("escrow/fixity/<uuid:run_id>/", fixity_run_detail, name="fixity_run"),
]
