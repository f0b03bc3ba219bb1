from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.exceptions import ApplicationError
from accounts.forms.users import ApiTokenCreateForm, AuditFilterForm
from accounts.lib.paging import PAGE_SIZE
from accounts.models import AuditEvent
from accounts.permissions import can_view_audit_trail
from accounts.selectors.audit_rows import audit_lines, audit_rows
from accounts.selectors.exports import audit_csv_lines, audit_json_chunks
from accounts.selectors.users import (
    api_token_list_for,
    audit_event_list_visible_to,
    audit_event_page,
    audit_rfp_references,
    membership_list_for,
    notification_list_for,
)
from accounts.services.throttle import (
    LOCKED_MESSAGE,
    client_address,
    login_failed,
    login_locked_for,
    login_succeeded,
)
from accounts.services.users import (
    api_token_issue,
    api_token_revoke,
    notifications_mark_read,
    user_password_change,
)
from accounts.views.requests import SignedInRequest


class LoginView(auth_views.LoginView):
    """Django's login, under the limits it shares with the API token endpoint
    (``accounts.services.throttle``): a locked account or address is refused unchecked;
    a
    form without a username or a password checks none and counts as no attempt."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if login_locked_for(**self._throttle_key()):
            return self._blocked(self.get_form())
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        login_succeeded(**self._throttle_key())
        return super().form_valid(form)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        given = form.cleaned_data
        if given.get("username") is None or not given.get("password"):
            return super().form_invalid(form)  # no password was checked
        login_failed(**self._throttle_key())
        if login_locked_for(**self._throttle_key()):
            return self._blocked(form)
        return super().form_invalid(form)

    def _throttle_key(self) -> dict[str, str]:
        username = self.request.POST.get("username", "")
        return {"address": client_address(self.request), "username": username}

    def _blocked(self, form: AuthenticationForm) -> HttpResponse:
        form.errors.clear()
        form.add_error(None, LOCKED_MESSAGE)
        response = self.render_to_response(self.get_context_data(form=form))
        response.status_code = 429
        return response


def _tokens_revoked_text(count: int) -> str:
    if count == 1:
        return " Your 1 API token was revoked: make a new one for your scripts."
    if count:
        return f" Your {count} API tokens were revoked: make new ones for your scripts."
    return ""


@login_required
@require_http_methods(["GET", "POST"])
def password_change(request: SignedInRequest) -> HttpResponse:
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        user, revoked = user_password_change(
            user=request.user, new_password=form.cleaned_data["new_password1"]
        )
        update_session_auth_hash(request, user)
        text = "Your password was changed." + _tokens_revoked_text(revoked)
        messages.success(request, text)
        return redirect("accounts:profile")
    active = sum(t.is_active for t in api_token_list_for(request.user))
    context = {"form": form, "active_tokens": active}
    return render(request, "accounts/password_change.html", context)


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    context = {
        "memberships": membership_list_for(request.user),
        "tokens": api_token_list_for(request.user),
        "token_form": ApiTokenCreateForm(),
        "new_token": request.session.pop("new_api_token", None),
    }
    return render(request, "accounts/profile.html", context)


@login_required
@require_POST
def api_token_create(request: SignedInRequest) -> HttpResponse:
    form = ApiTokenCreateForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the token a name of up to 100 characters.")
        return redirect("accounts:profile")
    _token, raw = api_token_issue(user=request.user, name=form.cleaned_data["name"])
    # Shown once, on the next page, then forgotten: only the digest is stored.
    request.session["new_api_token"] = raw
    return redirect("accounts:profile")


@login_required
@require_POST
def api_token_revoke_view(
    request: SignedInRequest, token_id: uuid.UUID
) -> HttpResponse:
    token = get_object_or_404(api_token_list_for(request.user), public_id=token_id)
    try:
        api_token_revoke(token=token, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("accounts:profile")


def _audit_filtered(
    request: HttpRequest,
) -> tuple[AuditFilterForm, QuerySet[AuditEvent], dict[str, str]]:
    """The filter form, the trail it selects, and the filters as text."""
    if not can_view_audit_trail(request.user):
        raise PermissionDenied
    form = AuditFilterForm(
        request.GET or None, rfp_references=audit_rfp_references(request.user)
    )
    valid = form.is_bound and form.is_valid()
    filters = {k: v for k, v in (form.cleaned_data if valid else {}).items() if v}
    events = audit_event_list_visible_to(request.user, vendor_events=True, **filters)
    return form, events, {k: str(v) for k, v in filters.items()}


def audit_page_context(
    request: HttpRequest, events: QuerySet[AuditEvent], **extra: object
) -> dict[str, object]:
    """One page of the trail as lines (rows, and grouped runner noise)."""
    number = request.GET.get("page")
    trail = audit_event_page(events, number=number, size=PAGE_SIZE)
    query = request.GET.copy()
    query.pop("page", None)
    lines = audit_lines(trail)
    return {"page": trail.page, "lines": lines, "query": query.urlencode(), **extra}


@login_required
def audit_list(request: SignedInRequest) -> HttpResponse:
    form, events, _filters = _audit_filtered(request)
    context = audit_page_context(request, events, form=form)
    template = (
        "accounts/_audit_rows.html" if request.htmx else "accounts/audit_list.html"
    )
    return render(request, template, context)


@login_required
def audit_export(request: HttpRequest, fmt: str) -> HttpResponseBase:
    """Every row the filters select (no grouping, no pages), as CSV or JSON."""
    form, events, filters = _audit_filtered(request)
    if form.is_bound and not form.is_valid():
        problems = [
            {"code": "invalid", "message": str(message), "path": field}
            for field, messages in form.errors.items()
            for message in messages
        ]
        body = {"code": "invalid_filter", "message": "Check the filters."}
        return JsonResponse({**body, "problems": problems}, status=400)
    rows = audit_rows(events.iterator(chunk_size=500))
    name = "-".join(["audit-trail", *filters.get("rfp", "").split()])
    if fmt == "csv":
        chunks, kind = audit_csv_lines(rows), "text/csv; charset=utf-8"
    else:
        chunks, kind = audit_json_chunks(rows, filters), "application/json"
    response = StreamingHttpResponse(chunks, content_type=kind)
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def notification_list(request: SignedInRequest) -> HttpResponse:
    if request.method == "POST":
        notifications_mark_read(user=request.user)
        return redirect("accounts:notifications")
    notifications = notification_list_for(request.user)
    page = Paginator(notifications, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "accounts/notifications.html", {"page": page})
