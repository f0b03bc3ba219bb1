"""Bundles API: upload a bundle to an RFP, list an RFP's bundles, one bundle's
detail, its download.

Bundles are sealed like bids (``artifacts.selectors.bundles.bundle_list_visible_to``):
404 for any bundle the caller may not see."""

from __future__ import annotations

import errno
import logging
import uuid
from typing import Any, cast

from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.files.uploadhandler import (
    SkipFile,
    StopUpload,
    TemporaryFileUploadHandler,
)
from django.http import FileResponse, Http404, HttpRequest
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.errors import error_body
from accounts.api.pagination import (
    PAGE_PARAMETERS,
    LimitOffsetPagination,
    page_response,
    page_serializer,
)
from accounts.api.schema import error_response
from accounts.lib.paging import PAGE_SIZE
from accounts.views.disk_full import unless_disk_full
from accounts.views.requests import SignedInApiRequest
from artifacts.conf import bundle_max_upload_bytes
from artifacts.lib.archive import FileDigest, Sha256Hasher
from artifacts.models import Bundle
from artifacts.selectors.bundles import (
    bundle_file_list,
    bundle_get_visible,
    bundle_list_visible_for_rfp,
)
from artifacts.services.downloads import bundle_record_download
from artifacts.services.ingest import (
    BundleSpoolFullError,
    BundleStorageError,
    bundle_ingest_outcome,
    bundle_refuse_upload,
)
from artifacts.storage.blobs import blob_open
from procurement.permissions import bidding_organisation, can_manage_rfp
from procurement.selectors.rfps import rfp_get_visible_or_404

logger = logging.getLogger(__name__)


# Status codes of an upload: 201 accepted; 200 the same bytes were accepted before
# (the body is that bundle; nothing new is kept); 422 ``bundle_rejected`` when the
# request was fine but the bundle failed verification (the rejection is recorded,
# its ``id`` is in the body); 400 for a bad request (no ``file`` field, RFP closed,
# deadline passed); 403 for callers who do not bid on the RFP; 404 for an RFP they
# cannot see; 413 when the upload exceeds BUNDLE_MAX_UPLOAD_BYTES; 415 for a body
# that is not multipart; 503 ``storage_unavailable`` when storage failed (nothing kept);
# 507 ``spool_full`` when the server had no disk space to receive or check it.


class HashedUpload(TemporaryUploadedFile):
    """What ``BundleUploadHandler`` hands over, for the type checker: Django's
    temporary file with the ``digest`` the handler sets on it."""

    digest: FileDigest


class BundleUploadHandler(TemporaryFileUploadHandler):
    """Streams the first ``file`` field to a temporary file while hashing it (in
    a thread, so that hashing one chunk overlaps with writing the next), and
    stops at ``BUNDLE_MAX_UPLOAD_BYTES``, or when the disk is full (``no_space``).
    Other file fields are skipped."""

    chunk_size = 1024 * 1024

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.limit = bundle_max_upload_bytes()
        self.too_large = False
        self.no_space = False
        self.started = False
        self.hasher: Sha256Hasher | None = None
        self.received = 0

    def new_file(self, field_name: str, *args: Any, **kwargs: Any) -> None:
        if field_name != "file" or self.started:  # one bundle per request
            raise SkipFile
        self.started = True
        super().new_file(field_name, *args, **kwargs)
        self.hasher = Sha256Hasher(threaded=True)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.too_large = True
            raise StopUpload(connection_reset=True)
        assert self.hasher is not None  # noqa: S101 - new_file came first
        self.hasher.update(raw_data)
        try:
            super().receive_data_chunk(raw_data, start)
        except OSError as error:
            if error.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            self.no_space = True
            raise StopUpload(connection_reset=True) from error

    def file_complete(self, file_size: int) -> Any:
        upload = cast("HashedUpload", super().file_complete(file_size))
        assert self.hasher is not None  # noqa: S101 - new_file came first
        upload.digest = FileDigest(self.received, self.hasher.hexdigest())
        self.hasher = None
        return upload

    def _stop_hashing(self) -> None:
        if self.hasher is not None:
            self.hasher.hexdigest()  # ends its thread
            self.hasher = None

    def upload_interrupted(self) -> None:
        self._stop_hashing()
        super().upload_interrupted()

    def upload_complete(self) -> None:
        self._stop_hashing()  # stopped early (too large, aborted): no digest


def _too_large(limit: int) -> Response:
    message = f"The bundle is larger than {filesizeformat(limit)}, the upload limit."
    body = error_body("bundle_too_large", message)
    return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)


def _no_space() -> Response:
    message = (
        "The server has no disk space left to receive or check the bundle; nothing "
        "of it was kept. Upload it again later."
    )
    body = error_body("spool_full", message)
    return Response(body, status=status.HTTP_507_INSUFFICIENT_STORAGE)


def _declared_too_large(request: Request) -> bool:
    """The request announces more bytes than a bundle may have (plus 1 MiB of
    multipart framing): refuse before reading the body."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > bundle_max_upload_bytes() + 1024 * 1024


def _uploaded_file(request: Request) -> HashedUpload | None:
    """The ``file`` field, received by ``BundleUploadHandler`` (None: too large)."""
    upload = request.FILES.get("file")
    handlers = request._request.upload_handlers
    if any(getattr(h, "no_space", False) for h in handlers):
        raise BundleSpoolFullError("no space left for the upload")
    if any(getattr(h, "too_large", False) for h in handlers):
        return None
    if upload is None or not hasattr(upload, "digest"):
        raise serializers.ValidationError(
            {"file": "Send the bundle archive as the multipart field 'file'."}
        )
    return cast("HashedUpload", upload)


class BundleSignatureSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleSignature"

    kind = serializers.CharField(help_text="sshsig or dsse")
    key_id = serializers.UUIDField(source="key.public_id")
    fingerprint = serializers.CharField(source="key.fingerprint")
    key_type = serializers.CharField(source="key.key_type")
    comment = serializers.CharField(source="key.comment")


class BundleProblemSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleProblem"

    code = serializers.CharField()
    message = serializers.CharField()
    path = serializers.CharField(required=False)


class BundleFileSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleFile"

    path = serializers.CharField()
    kind = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()


class BundleChangeSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleChange"

    component = serializers.CharField(help_text="gpu_driver, nvme_firmware, kernel…")
    # "from" is a Python keyword: the field is named in ``get_fields``
    to = serializers.CharField()
    note = serializers.CharField(required=False)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {
            "component": fields["component"],
            "from": serializers.CharField(),
            "to": fields["to"],
            "note": fields["note"],
        }


class BundleSummarySerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleSummary"

    id = serializers.UUIDField(source="public_id")
    status = serializers.CharField()
    rfp = serializers.CharField(source="rfp.reference")
    rfp_id = serializers.UUIDField(source="rfp.public_id")
    vendor = serializers.CharField(source="organisation.slug")
    filename = serializers.CharField()
    sha256 = serializers.CharField(help_text="Of the uploaded archive.")
    size = serializers.IntegerField()
    uploaded_at = serializers.DateTimeField(source="created_at")
    uploaded_by = serializers.CharField(source="uploaded_by.username")


class BundleSbomDocumentSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleSbomDocument"

    path = serializers.CharField()
    format = serializers.ChoiceField(choices=["spdx", "cyclonedx"])
    version = serializers.CharField()
    components = serializers.IntegerField()
    licences = serializers.ListField(child=serializers.CharField())
    licences_truncated = serializers.BooleanField()


class BundleSbomSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BundleSbom"

    ok = serializers.BooleanField(help_text="Every sbom file passed its check.")
    components = serializers.IntegerField(help_text="In all SBOMs together.")
    licences = serializers.ListField(child=serializers.CharField())
    documents = BundleSbomDocumentSerializer(many=True, source="items")
    problems = BundleProblemSerializer(many=True)


class BundleDetailSerializer(BundleSummarySerializer):
    class Meta:
        ref_name = "BundleDetail"

    manifest_sha256 = serializers.CharField()
    signature = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField(
        help_text=f"The first {PAGE_SIZE} files by path; files_url pages them all."
    )
    file_count = serializers.IntegerField(source="files.count")
    files_url = serializers.SerializerMethodField()
    completeness = serializers.JSONField(help_text="reprogate.completeness/v1")
    sbom = serializers.SerializerMethodField(
        help_text="What the bundle's SBOMs list (null: no sbom file checked)."
    )
    claims = serializers.SerializerMethodField()
    problems = BundleProblemSerializer(many=True)
    download_url = serializers.SerializerMethodField()
    supersedes = serializers.SerializerMethodField()
    supersedes_id = serializers.UUIDField(
        source="supersedes.public_id",
        allow_null=True,
        default=None,
        help_text="The accepted bundle this update supersedes.",
    )
    changes = serializers.SerializerMethodField()

    @extend_schema_field(
        serializers.CharField(
            allow_null=True,
            help_text="An update bundle: the SHA-256 of the accepted bundle it "
            "updates (null for any other bundle).",
        )
    )
    def get_supersedes(self, bundle: Bundle) -> str | None:
        return (bundle.manifest or {}).get("supersedes")

    @extend_schema_field(BundleChangeSerializer(many=True))
    def get_changes(self, bundle: Bundle) -> list[Any]:
        return list((bundle.manifest or {}).get("changes") or [])

    @extend_schema_field(BundleSignatureSerializer(allow_null=True))
    def get_signature(self, bundle: Bundle) -> dict[str, Any] | None:
        if bundle.signing_key is None:
            return None
        data = {"kind": bundle.signature_kind, "key": bundle.signing_key}
        return BundleSignatureSerializer(data).data

    @extend_schema_field(BundleFileSerializer(many=True))
    def get_files(self, bundle: Bundle) -> list[dict[str, Any]]:
        first = bundle_file_list(bundle)[:PAGE_SIZE]
        return list(BundleFileSerializer(first, many=True).data)

    @extend_schema_field(serializers.CharField())
    def get_files_url(self, bundle: Bundle) -> str:
        return reverse("bundle-file-list", args=[bundle.public_id])

    @extend_schema_field(BundleSbomSerializer(allow_null=True))
    def get_sbom(self, bundle: Bundle) -> dict[str, Any] | None:
        content = (bundle.completeness or {}).get("content") or {}
        checked = (content.get("kinds") or {}).get("sbom")
        return BundleSbomSerializer(checked).data if checked else None

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_claims(self, bundle: Bundle) -> list[Any]:
        return list((bundle.manifest or {}).get("claims") or [])

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_download_url(self, bundle: Bundle) -> str | None:
        if bundle.archive_blob_id is None:
            return None
        return reverse("bundle-download", args=[bundle.public_id])


def _rejected(bundle: Bundle) -> Response:
    count = len(bundle.problems)
    body = error_body(
        "bundle_rejected",
        f"The bundle was rejected: {count} problem{'s' if count != 1 else ''} "
        "found. Nothing of it was kept except this record.",
        bundle.problems,
    )
    body["id"] = str(bundle.public_id)
    return Response(body, status=status.HTTP_422_UNPROCESSABLE_ENTITY)


class BundleListApi(APIView):
    """The bundles of an RFP you may see (GET); upload one (POST, multipart
    field ``file``; an invited vendor's bid bundle, or the RFP's buyer's own
    baseline bundle, signed with a key of the buyer organisation): 201
    accepted, 200 with the bundle accepted before when the same bytes were
    (nothing new is kept), or 422 with every problem found."""

    parser_classes = [MultiPartParser]
    # Read by the OpenAPI schema (a page of the rows, ?limit and ?offset); get()
    # pages with the same paginator.
    pagination_class = LimitOffsetPagination

    class UploadSerializer(serializers.Serializer):
        class Meta:
            ref_name = "BundleUploadInput"

        file = serializers.FileField(help_text="A .tar, .tar.gz/.tgz or .zip bundle.")

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any):
        """Stream uploads to disk while hashing (before anything reads the body)."""
        if request.method == "POST":
            request.upload_handlers = [BundleUploadHandler(request)]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="bundle_list",
        responses={200: BundleSummarySerializer(many=True)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
        paginator = LimitOffsetPagination()
        bundles = bundle_list_visible_for_rfp(request.user, rfp)
        page = paginator.paginate_queryset(bundles, request, self)
        data = BundleSummarySerializer(page, many=True).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        operation_id="bundle_upload",
        request={"multipart/form-data": UploadSerializer},
        responses={
            200: BundleDetailSerializer,
            201: BundleDetailSerializer,
            422: OpenApiTypes.OBJECT,
            503: error_response(503),
            507: error_response(507),
        },
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
        organisation = bidding_organisation(request.user, rfp)
        if organisation is None and can_manage_rfp(request.user, rfp):
            organisation = rfp.buyer_organisation  # a baseline of its own harness
        if organisation is None:
            raise PermissionDenied
        bundle_refuse_upload(rfp=rfp, organisation=organisation)
        try:
            if (
                _declared_too_large(request)
                or (upload := _uploaded_file(request)) is None
            ):
                return _too_large(bundle_max_upload_bytes())
            outcome = bundle_ingest_outcome(
                rfp=rfp, organisation=organisation, uploaded_by=request.user,
                upload_path=upload.temporary_file_path(), filename=upload.name or "",
                archive_digest=upload.digest, consume_upload=True,
            )  # fmt: skip
        except BundleSpoolFullError:
            logger.exception("no disk space for a bundle upload to %s", rfp.reference)
            return _no_space()
        except BundleStorageError:
            logger.exception("bundle storage failed for %s", rfp.reference)
            body = error_body("storage_unavailable", "Storage failed; upload again.")
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        bundle = outcome.bundle
        if bundle.status != Bundle.Status.ACCEPTED:
            return _rejected(bundle)
        data = BundleDetailSerializer(bundle).data
        created = status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK
        return Response(data, status=created)


def _visible_bundle(request: Request, bundle_id: uuid.UUID) -> Bundle:
    bundle = bundle_get_visible(request.user, bundle_id)
    if bundle is None:
        raise Http404
    return bundle


class BundleDetailApi(APIView):
    """One bundle: its first files (``files_url`` pages them all), signature,
    completeness, claims, or its problems."""

    @extend_schema(
        operation_id="bundle_detail", responses={200: BundleDetailSerializer}
    )
    def get(self, request: Request, bundle_id: uuid.UUID) -> Response:
        bundle = _visible_bundle(request, bundle_id)
        return Response(BundleDetailSerializer(bundle).data)


class BundleFileListApi(APIView):
    """A page of the bundle's files, by path; same visibility as detail."""

    @extend_schema(
        operation_id="bundle_file_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("BundleFilePage", BundleFileSerializer)},
    )
    def get(self, request: Request, bundle_id: uuid.UUID) -> Response:
        bundle = _visible_bundle(request, bundle_id)
        files = bundle_file_list(bundle)
        return page_response(self, request, files, BundleFileSerializer)


ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


def bundle_download_name(bundle: Bundle) -> str:
    """``RFP-DEMO-1-acme-flash-1a2b3c4d5e6f.tar.gz``: built from our own fields."""
    lower = bundle.filename.lower()
    suffix = next((s for s in ARCHIVE_SUFFIXES if lower.endswith(s)), "")
    stem = f"{bundle.rfp.reference}-{bundle.organisation.slug}-{bundle.sha256[:12]}"
    return stem + suffix


class BundleDownloadApi(APIView):
    """The accepted archive, byte for byte (streamed); same visibility as detail.
    Every download is audited (``bundle.downloaded``; on a full disk, in the log
    instead: accounts/views/disk_full.py)."""

    @extend_schema(
        operation_id="bundle_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY)
        },
    )
    def get(self, request: SignedInApiRequest, bundle_id: uuid.UUID) -> FileResponse:
        bundle = _visible_bundle(request, bundle_id)
        if bundle.archive_blob is None:
            raise Http404
        via = "api" if request.auth else "web"
        # On a full disk the archive is served and the audit row goes to the log.
        with unless_disk_full(
            f"bundle.downloaded {bundle.public_id} by {request.user}"
        ):
            bundle_record_download(bundle=bundle, actor=request.user, via=via)
        return FileResponse(
            blob_open(bundle.archive_blob),
            as_attachment=True,
            filename=bundle_download_name(bundle),
            content_type="application/octet-stream",
        )
