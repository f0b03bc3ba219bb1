from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path


def rfp_evaluation(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    raise Http404("Evaluation is being built.")


def rfp_comparison(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    raise Http404("Comparison is being built.")


urlpatterns = [
    path("<uuid:rfp_id>/evaluation/", rfp_evaluation, name="rfp_evaluation"),
    path("<uuid:rfp_id>/comparison/", rfp_comparison, name="rfp_comparison"),
]
