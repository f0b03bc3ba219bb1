"""The lab operator's pools page: pools with their hosts (online, lost,
offline), and a form to add a pool."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render

from accounts.exceptions import ApplicationError
from accounts.requests import SignedInRequest
from benchmarks import conf
from benchmarks.selectors.access import lab_organisation_list_for, pool_list_operated_by
from benchmarks.selectors.pools import pool_list_with_hosts
from benchmarks.services.pools import pool_create
from benchmarks.views.forms import PoolCreateForm


@login_required
def pool_list(request: SignedInRequest) -> HttpResponse:
    if not lab_organisation_list_for(request.user).exists():
        raise PermissionDenied("Only lab operators manage pools.")
    form = PoolCreateForm(request.user, request.POST or None)
    if form.is_bound and form.is_valid():
        try:
            pool = pool_create(actor=request.user, **form.cleaned_data)
        except ApplicationError as error:
            form.add_error(
                "name" if error.code == "pool_exists" else None, error.message
            )
        else:
            messages.success(request, f"Pool {pool.name} created: queue {pool.queue}.")
            return redirect("benchmarks:pool_list")
    context = {
        "pools": pool_list_with_hosts(pool_list_operated_by(request.user)),
        "form": form,
        "lost_after": int(conf.lost_after_seconds()),
    }
    status = 400 if form.is_bound else 200
    return render(request, "benchmarks/pool_list.html", context, status=status)
