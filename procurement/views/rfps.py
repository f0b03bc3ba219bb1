from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from procurement.selectors import (
    invited_vendor_scope_for,
    rfp_get_visible,
    rfp_list_visible_to,
)

RFP_PAGE_SIZE = 25


@login_required
def rfp_list(request: HttpRequest) -> HttpResponse:
    rfps = rfp_list_visible_to(request.user)
    page = Paginator(rfps, RFP_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "procurement/rfp_list.html", {"page": page})


@login_required
def rfp_detail(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_get_visible(request.user, public_id=rfp_id)
    if rfp is None:
        raise Http404("No such RFP.")
    invited = invited_vendor_scope_for(request.user).visible(rfp)
    return render(
        request, "procurement/rfp_detail.html", {"rfp": rfp, "invited_vendors": invited}
    )


urlpatterns = [
    path("", rfp_list, name="rfp_list"),
    path("<uuid:rfp_id>/", rfp_detail, name="rfp_detail"),
]
