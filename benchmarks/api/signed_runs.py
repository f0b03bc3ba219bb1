"""Host-signed results in the API (docs/runner-api.md): a run's statement
(``GET /api/v1/runs/<id>/statement.json``, the DSSE envelope its host signed),
a lab host's public key (``GET /api/v1/lab/hosts/<id>/key``, PEM) and a
campaign's evidence package (``GET /api/v1/campaigns/<id>/evidence/``, a zip
``reprogate evidence verify`` checks offline).

Who may: a run's statement, whoever may see the run; a host's key, the pool's
lab operators and whoever may see a run the host ran; a campaign's package,
whoever may see the campaign and have the bundle's own package (it holds the
archive). Anyone else gets 404, as if the object did not exist."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.views.requests import SignedInApiRequest
from artifacts.api.escrow import ZipRenderer, package_response
from artifacts.selectors.escrow import evidence_bundle_get
from artifacts.storage.blobs import blob_open
from benchmarks.selectors.access import (
    campaign_get_visible,
    host_get_visible,
    run_get_visible,
)
from benchmarks.services.evidence import campaign_evidence_prepare

PEM = "application/x-pem-file"
DSSE = "application/json"


class _Bytes(BaseRenderer):
    charset = None

    def render(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        return data


class PemRenderer(_Bytes):
    media_type = PEM
    format = "pem"


class RunStatementApi(APIView):
    """The DSSE envelope of the run's in-toto statement, signed by the host that
    ran it and verified by the server before the run was accepted (404 for a
    run without one)."""

    @extend_schema(
        operation_id="run_statement",
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT)},
    )
    def get(self, request: Request, run_id: uuid.UUID) -> HttpResponse:
        run = run_get_visible(request.user, run_id)
        if run is None or run.statement_blob is None:
            raise Http404
        with blob_open(run.statement_blob) as source:
            data = source.read()
        response = HttpResponse(data, content_type=DSSE)
        response["Content-Disposition"] = (
            f'inline; filename="statement-{run.public_id}.json"'
        )
        return response


class HostKeyApi(APIView):
    """The Ed25519 public key pinned for the lab host (PEM SubjectPublicKeyInfo),
    with its fingerprint in ``X-Key-Fingerprint``; 404 while none is pinned."""

    renderer_classes = [JSONRenderer, PemRenderer]

    @extend_schema(
        operation_id="lab_host_key",
        responses={(200, PEM): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request: Request, host_id: uuid.UUID) -> HttpResponse:
        host = host_get_visible(request.user, host_id)
        if host is None or not host.signing_key:
            raise Http404
        response = HttpResponse(host.signing_key.encode("ascii"), content_type=PEM)
        response["X-Key-Fingerprint"] = host.signing_key_fingerprint
        return response


class CampaignEvidenceApi(APIView):
    """The campaign's evidence package: its bundle's deposit and every run's
    (outputs, runner artefacts, host-signed statement, host key), the proofs,
    the checkpoint and the keys. Each download is audited and logged."""

    renderer_classes = [JSONRenderer, ZipRenderer]
    http_method_names = ["get", "options"]  # a HEAD would log a download too

    @extend_schema(
        operation_id="campaign_evidence_package",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
            409: OpenApiResponse(
                description="No run of the campaign has finished with a deposit yet."
            ),
        },
    )
    def get(
        self, request: SignedInApiRequest, campaign_id: uuid.UUID
    ) -> StreamingHttpResponse:
        campaign = campaign_get_visible(request.user, campaign_id)
        if campaign is None:
            raise Http404
        if evidence_bundle_get(request.user, campaign.bundle.public_id) is None:
            raise Http404
        package = campaign_evidence_prepare(campaign=campaign, actor=request.user)
        return package_response(package)
