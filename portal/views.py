from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from portal.health import run_probes
from portal.selectors import dashboard_for


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    return render(request, "portal/dashboard.html", dashboard_for(request.user))


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    checks = run_probes()
    ok = all(check["ok"] for check in checks.values())
    if not settings.DEBUG:
        # Failure details (hosts, paths) go to the log, not to anonymous callers;
        # reading request.user here would need the database this may report down.
        for check in checks.values():
            check.pop("error", None)
    return JsonResponse(
        {"status": "ok" if ok else "fail", "checks": checks}, status=200 if ok else 503
    )
