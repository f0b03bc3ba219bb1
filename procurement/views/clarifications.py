from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path


def rfp_clarifications(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    raise Http404("Clarifications are being built.")


urlpatterns = [
    path("<uuid:rfp_id>/clarifications/", rfp_clarifications, name="rfp_clarifications")
]
