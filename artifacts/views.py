"""The vendor's "Signing keys" page: list, register, revoke, download
allowed_signers. Vendors and admins of a vendor organisation only."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError, Problem
from accounts.models import Organisation
from artifacts.forms import SigningKeyRegisterForm
from artifacts.selectors import (
    key_organisation_list_for,
    signing_key_list_for,
    signing_key_list_visible_to,
)
from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)


def _organisation(request: HttpRequest) -> Organisation:
    """The vendor organisation picked by ``?organisation=`` (default: the first)."""
    organisations = key_organisation_list_for(request.user)
    slug = request.GET.get("organisation")
    if slug and organisations.exists():
        return get_object_or_404(organisations, slug=slug)
    first = organisations.first()
    if first is None:
        raise PermissionDenied("Only vendors manage signing keys.")
    return first


def _page(request: HttpRequest, organisation: Organisation) -> str:
    return f"{reverse('artifacts:signing_keys')}?organisation={organisation.slug}"


def _register(
    request: HttpRequest, organisation: Organisation, form: SigningKeyRegisterForm
) -> bool:
    """Register the pasted key; refusals become the form's errors."""
    try:
        key = signing_key_register(
            organisation=organisation,
            public_key_line=form.cleaned_data["public_key"],
            valid_until=form.cleaned_data["valid_until"],
            actor=request.user,
        )
    except ApplicationError as error:
        for problem in error.problems or [Problem(error.code, error.message)]:
            field = problem.path if problem.path in form.fields else None
            form.add_error(field, problem.message)
        return False
    messages.success(request, f"Key {key.fingerprint} registered.")
    return True


@login_required
def signing_keys(request: HttpRequest) -> HttpResponse:
    organisation = _organisation(request)
    form = SigningKeyRegisterForm(request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid() and _register(request, organisation, form):
        return redirect(_page(request, organisation))
    context = {
        "organisation": organisation,
        "organisations": key_organisation_list_for(request.user),
        "keys": signing_key_list_for(organisation),
        "form": form,
    }
    status = 400 if form.is_bound else 200
    return render(request, "artifacts/signing_keys.html", context, status=status)


@login_required
@require_POST
def signing_key_revoke_view(request: HttpRequest, key_id: uuid.UUID) -> HttpResponse:
    if not key_organisation_list_for(request.user).exists():
        raise PermissionDenied("Only vendors manage signing keys.")
    key = get_object_or_404(signing_key_list_visible_to(request.user), public_id=key_id)
    try:
        signing_key_revoke(key=key, actor=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Key {key.fingerprint} revoked.")
    return redirect(_page(request, key.organisation))


@login_required
def allowed_signers_download(request: HttpRequest) -> HttpResponse:
    organisation = _organisation(request)
    return HttpResponse(
        allowed_signers_text(organisation),
        content_type="text/plain; charset=utf-8",
        headers={
            "Content-Disposition": 'attachment; filename="allowed_signers"',
        },
    )


urlpatterns = [
    path("signing-keys/", signing_keys, name="signing_keys"),
    path(
        "signing-keys/<uuid:key_id>/revoke/",
        signing_key_revoke_view,
        name="signing_key_revoke",
    ),
    path(
        "signing-keys/allowed_signers",
        allowed_signers_download,
        name="allowed_signers",
    ),
]
