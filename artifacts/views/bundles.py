"""The vendor's "Signing keys" page: list, register, revoke, download
allowed_signers (vendors and admins of a vendor organisation, buyers and admins
of a buyer organisation for its baseline bundles); the bundle
upload page (vendors of an invited organisation) and the bundle page (sealed like
bids: ``bundle_get_visible``, 404 for anyone else)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import path, reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods, require_POST

from accounts.conf import site_url
from accounts.exceptions import ApplicationError, Problem
from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from accounts.views.requests import SignedInRequest
from artifacts.api.bundles import BundleUploadHandler
from artifacts.conf import bundle_max_upload_bytes
from artifacts.forms.keys import BundleUploadForm, SigningKeyRegisterForm
from artifacts.models import Bundle, BundleFile
from artifacts.selectors.bundles import (
    bundle_file_list,
    bundle_get_visible,
    bundle_list_visible_for_rfp,
    key_organisation_list_for,
    signing_key_list_for,
    signing_key_list_visible_to,
)
from artifacts.selectors.retest_window import retest_window
from artifacts.selectors.updates import update_window
from artifacts.services.ingest import (
    BundleSpoolFullError,
    BundleStorageError,
    IngestOutcome,
    bundle_ingest_outcome,
    bundle_refuse_upload,
    bundle_upload_closed,
    is_baseline_upload,
)
from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)
from procurement.models import Rfp
from procurement.permissions import bidding_organisation, can_manage_rfp
from procurement.selectors.rfps import rfp_get_visible_or_404

logger = logging.getLogger(__name__)


def _organisation(request: HttpRequest) -> Organisation:
    """The organisation picked by ``?organisation=`` (default: the first)."""
    organisations = key_organisation_list_for(request.user)
    slug = request.GET.get("organisation")
    if slug and organisations.exists():
        return get_object_or_404(organisations, slug=slug)
    first = organisations.first()
    if first is None:
        raise PermissionDenied("Only vendors and buyers manage signing keys.")
    return first


def _page(request: HttpRequest, organisation: Organisation) -> str:
    return f"{reverse('artifacts:signing_keys')}?organisation={organisation.slug}"


def _register(
    request: SignedInRequest, organisation: Organisation, form: SigningKeyRegisterForm
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
def signing_keys(request: SignedInRequest) -> HttpResponse:
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
def signing_key_revoke_view(
    request: SignedInRequest, key_id: uuid.UUID
) -> HttpResponse:
    if not key_organisation_list_for(request.user).exists():
        raise PermissionDenied("Only vendors and buyers manage signing keys.")
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


# --- bundles --------------------------------------------------------------------------


def _bidder(request: HttpRequest, rfp_id: uuid.UUID) -> tuple[Rfp, Organisation]:
    """The RFP (404 if invisible) and the invited vendor the user acts for, or
    the RFP's buyer organisation for a baseline of its own harness (403)."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    organisation = bidding_organisation(request.user, rfp)
    if organisation is None and can_manage_rfp(request.user, rfp):
        organisation = rfp.buyer_organisation
    if organisation is None:
        raise PermissionDenied(
            "Only vendors invited to this RFP and its buyers upload bundles."
        )
    return rfp, organisation


def _upload_page(
    request: HttpRequest,
    rfp: Rfp,
    organisation: Organisation,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {
        "rfp": rfp,
        "organisation": organisation,
        "baseline": is_baseline_upload(rfp, organisation),
        "closed": bundle_upload_closed(rfp, organisation),
        "retest": retest_window(rfp, organisation),
        "update": update_window(rfp, organisation),
        "form": BundleUploadForm(),
        "error": error,
        "bundles": bundle_list_visible_for_rfp(request.user, rfp).filter(
            organisation=organisation
        )[:20],
        "max_bytes": bundle_max_upload_bytes(),
        "api_url": reverse("bundle-list", args=[rfp.public_id]),
        "site_url": site_url(),  # for the CLI command shown: what e-mails link to
    }
    return render(request, "artifacts/bundle_upload.html", context, status=status)


def _declared_too_large(request: HttpRequest) -> bool:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > bundle_max_upload_bytes() + 1024 * 1024


def _received_file(request: HttpRequest) -> Any:
    """The ``file`` field as ``BundleUploadHandler`` received it (the body is read
    only here, after the size announced by the request was checked)."""
    too_large = ApplicationError(
        f"The bundle is larger than {filesizeformat(bundle_max_upload_bytes())}, "
        "the upload limit.",
        code="bundle_too_large",
    )
    if _declared_too_large(request):
        raise too_large
    upload = request.FILES.get("file")
    if any(getattr(h, "no_space", False) for h in request.upload_handlers):
        raise BundleSpoolFullError("no space left for the upload")
    if any(getattr(h, "too_large", False) for h in request.upload_handlers):
        raise too_large
    if upload is None or not hasattr(upload, "digest"):
        raise ApplicationError("Choose a bundle archive to upload.", code="no_file")
    return upload


def _ingest(
    request: SignedInRequest, rfp: Rfp, organisation: Organisation
) -> IngestOutcome | str:
    """The recorded bundle, or why nothing was recorded."""
    try:
        bundle_refuse_upload(rfp=rfp, organisation=organisation)
        upload = _received_file(request)
        return bundle_ingest_outcome(
            rfp=rfp, organisation=organisation, uploaded_by=request.user,
            upload_path=upload.temporary_file_path(), filename=upload.name or "",
            archive_digest=upload.digest, consume_upload=True,
        )  # fmt: skip
    except ApplicationError as error:
        return error.message
    except BundleSpoolFullError:
        logger.exception("no disk space for a bundle upload to %s", rfp.reference)
        return (
            "The server has no disk space left to receive or check the bundle; "
            "nothing of it was kept. Upload it again later."
        )
    except BundleStorageError:
        logger.exception("bundle storage failed for %s", rfp.reference)
        return "Storage failed and nothing was kept; upload again."


@csrf_protect
def _bundle_upload(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp, organisation = _bidder(request, rfp_id)
    if request.method != "POST":
        return _upload_page(request, rfp, organisation)
    outcome = _ingest(request, rfp, organisation)
    if isinstance(outcome, str):
        return _upload_page(request, rfp, organisation, error=outcome, status=400)
    bundle = outcome.bundle
    if not outcome.created:
        messages.info(
            request,
            "You uploaded these exact bytes before: this is the bundle accepted "
            "then (nothing new was deposited).",
        )
    elif bundle.status == Bundle.Status.ACCEPTED:
        messages.success(request, f"Bundle accepted: SHA-256 {bundle.sha256}.")
    else:
        messages.error(request, "The bundle was rejected; see the problems below.")
    return redirect("artifacts:bundle_detail", bundle_id=bundle.public_id)


@csrf_exempt  # checked by _bundle_upload, once the streaming handler is installed
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def bundle_upload(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    """Upload page; its POST is the no-JS fallback of the API upload. The CSRF
    check reads the body, so the hashing, size-capped handler goes in first."""
    if request.method == "POST":
        request.upload_handlers = [BundleUploadHandler(request)]
    return _bundle_upload(request, rfp_id)


@dataclass(frozen=True)
class TreeRow:
    name: str
    depth: int
    file: BundleFile | None = None  # None: a folder


def bundle_file_tree(files: list[BundleFile]) -> list[TreeRow]:
    """Files sorted by path as rows of a tree: each folder once, before its files
    (on a page of the file list, the folders of its first file open it)."""
    rows: list[TreeRow] = []
    shown: set[tuple[str, ...]] = set()
    for item in sorted(files, key=lambda f: f.path.split("/")):
        *folders, name = item.path.split("/")
        for depth in range(len(folders)):
            prefix = tuple(folders[: depth + 1])
            if prefix not in shown:
                shown.add(prefix)
                rows.append(TreeRow(folders[depth] + "/", depth))
        rows.append(TreeRow(name, len(folders), item))
    return rows


@login_required
def bundle_detail(request: HttpRequest, bundle_id: uuid.UUID) -> HttpResponse:
    bundle = bundle_get_visible(request.user, bundle_id)
    if bundle is None:
        raise Http404("No such bundle.")
    completeness = bundle.completeness or {}
    files = Paginator(bundle_file_list(bundle), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {
        "bundle": bundle,
        "rfp": bundle.rfp,
        "page": files,
        "tree": bundle_file_tree(list(files)),
        "completeness": completeness,
        "claims": (completeness.get("claims") or {}).get("claims")
        or (bundle.manifest or {}).get("claims")
        or [],
        "update": {
            "supersedes": (bundle.manifest or {}).get("supersedes"),
            "changes": (bundle.manifest or {}).get("changes") or [],
        },
        "own": bidding_organisation(request.user, bundle.rfp) == bundle.organisation,
        "can_upload": bundle_upload_closed(bundle.rfp, bundle.organisation) is None,
    }
    return render(request, "artifacts/bundle_detail.html", context)


urlpatterns = [
    path("rfps/<uuid:rfp_id>/bundles/upload/", bundle_upload, name="bundle_upload"),
    path("bundles/<uuid:bundle_id>/", bundle_detail, name="bundle_detail"),
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
