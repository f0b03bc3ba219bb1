from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from procurement.selectors import invited_vendor_scope_for, rfp_list_visible_to
from procurement.views.common import rfp_for_request, rfp_page_context

RFP_PAGE_SIZE = 25


@login_required
def rfp_list(request: HttpRequest) -> HttpResponse:
    rfps = rfp_list_visible_to(request.user)
    page = Paginator(rfps, RFP_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "procurement/rfp_list.html", {"page": page})


@login_required
def rfp_detail(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_for_request(request, rfp_id)
    invited = invited_vendor_scope_for(request.user).visible(rfp)
    context = rfp_page_context(request, rfp, "overview", invited_vendors=invited)
    return render(request, "procurement/rfp_detail.html", context)


urlpatterns = [
    path("", rfp_list, name="rfp_list"),
    path("<uuid:rfp_id>/", rfp_detail, name="rfp_detail"),
]
