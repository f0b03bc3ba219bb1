from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path


def rfp_bids(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    raise Http404("Bids are being built.")


urlpatterns = [path("<uuid:rfp_id>/bids/", rfp_bids, name="rfp_bids")]
