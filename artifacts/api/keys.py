"""Signing keys API: list and register the caller's organisation's keys, revoke
one, export them as an ``ssh-keygen`` allowed_signers file.

Keys of organisations the caller does not manage answer 404; callers who manage
no keys (evaluators, labs, auditors) get 403. A buyer organisation's buyers and
admins manage the keys its baseline bundles are signed with."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, page_response, page_serializer
from accounts.api.parsers import JSONParser
from accounts.api.schema import error_response
from accounts.models import Organisation
from accounts.views.requests import SignedInApiRequest
from artifacts.lib.signatures.sshkeys import KEY_TYPES, MAX_KEY_LINE
from artifacts.selectors.bundles import (
    key_organisation_list_for,
    signing_key_list_visible_to,
)
from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)

logger = logging.getLogger(__name__)


class SigningKeyOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "SigningKey"

    id = serializers.UUIDField(source="public_id")
    organisation = serializers.CharField(source="organisation.slug")
    fingerprint = serializers.CharField(help_text="SHA256:…, as ssh-keygen -l prints.")
    key_type = serializers.CharField()
    comment = serializers.CharField()
    valid_from = serializers.DateTimeField()
    valid_until = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


ORGANISATION_PARAMETER = OpenApiParameter(
    "organisation",
    str,
    description="Organisation slug; needed only if you manage several.",
)


def _organisation_for(user: Any, slug: str | None) -> Organisation:
    """The organisation to act for: 403 if none, 400 if ambiguous."""
    organisations = list(key_organisation_list_for(user))
    if not organisations:
        raise PermissionDenied
    if slug:
        organisations = [o for o in organisations if o.slug == slug]
        if not organisations:
            raise Http404
    if len(organisations) > 1:
        raise serializers.ValidationError(
            {"organisation": "You manage several organisations; name one by its slug."}
        )
    return organisations[0]


# ``<type> <base64> [comment]`` with a type the server accepts: the form of a key
# line, as the OpenAPI document states it (the key inside is the service's to check).
KEY_LINE_PATTERN = (
    r"^\s*(" + "|".join(KEY_TYPES) + r")[ \t]+[A-Za-z0-9+/]+={0,2}"
    r"([ \t][^\r\n\x00]*)?$"
)


@extend_schema_field(
    {"type": "string", "maxLength": MAX_KEY_LINE, "pattern": KEY_LINE_PATTERN}
)
class PublicKeyLineField(serializers.CharField):
    """One OpenSSH public key line."""


class SigningKeyListApi(APIView):
    """Your organisation's signing keys (GET); register one (POST, JSON:
    a form has no null for ``valid_until``)."""

    parser_classes = [JSONParser]

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "SigningKeyRegisterInput"

        public_key = PublicKeyLineField(
            max_length=MAX_KEY_LINE, help_text="One OpenSSH public key line (.pub)."
        )
        valid_until = serializers.DateTimeField(required=False, allow_null=True)
        organisation = serializers.SlugField(required=False)

    PageSerializer = page_serializer("SigningKeyPage", SigningKeyOutputSerializer)

    @extend_schema(
        operation_id="signing_key_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer},
    )
    def get(self, request: Request) -> Response:
        if not key_organisation_list_for(request.user).exists():
            raise PermissionDenied
        keys = signing_key_list_visible_to(request.user).order_by("-created_at", "-id")
        return page_response(self, request, keys, SigningKeyOutputSerializer)

    @extend_schema(
        operation_id="signing_key_register",
        request=InputSerializer,
        responses={
            201: SigningKeyOutputSerializer,
            404: error_response(404),
            409: error_response(409),
        },
    )
    def post(self, request: SignedInApiRequest) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        key = signing_key_register(
            organisation=_organisation_for(request.user, fields.get("organisation")),
            public_key_line=fields["public_key"],
            valid_until=fields.get("valid_until"),
            actor=request.user,
        )
        output = SigningKeyOutputSerializer(key).data
        return Response(output, status=status.HTTP_201_CREATED)


class SigningKeyRevokeApi(APIView):
    """Revoke a key: it verifies no upload from now on (409 if already revoked)."""

    @extend_schema(
        operation_id="signing_key_revoke",
        request=None,
        responses={200: SigningKeyOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, key_id: uuid.UUID) -> Response:
        if not key_organisation_list_for(request.user).exists():
            raise PermissionDenied
        found = signing_key_list_visible_to(request.user).filter(public_id=key_id)
        if not found.exists():
            raise Http404
        key = signing_key_revoke(key=found.get(), actor=request.user)
        return Response(SigningKeyOutputSerializer(key).data)


class PlainTextRenderer(BaseRenderer):
    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: Any = None, context: Any = None):
        return data if isinstance(data, str) else json.dumps(data)


class AllowedSignersApi(APIView):
    """Your organisation's unrevoked keys as an ssh-keygen allowed_signers file
    (principal = the organisation's slug, namespace reprogate-bundle)."""

    renderer_classes = [JSONRenderer, PlainTextRenderer]

    @extend_schema(
        operation_id="signing_key_allowed_signers",
        parameters=[ORGANISATION_PARAMETER],
        responses={(200, "text/plain"): OpenApiTypes.STR, 404: error_response(404)},
    )
    def get(self, request: Request) -> HttpResponse:
        slug = request.query_params.get("organisation")
        organisation = _organisation_for(request.user, slug)
        return HttpResponse(
            allowed_signers_text(organisation),
            content_type="text/plain; charset=utf-8",
            headers={"Content-Disposition": 'inline; filename="allowed_signers"'},
        )
