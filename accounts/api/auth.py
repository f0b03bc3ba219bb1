from __future__ import annotations

import threading
from typing import Any, ClassVar

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.exceptions import ApplicationError
from accounts.selectors.users import membership_list_for
from accounts.services.throttle import (
    LOCKED_MESSAGE,
    LoginRateThrottle,
    client_address,
    login_failed,
    login_locked_for,
    login_succeeded,
)
from accounts.services.users import api_token_issue


class LoginLocked(exceptions.Throttled):
    """429: too many failed attempts for this account or client address."""

    default_code = "login_locked"


class AuthTokenObtainApi(APIView):
    """Exchange a username and password for an API token (``Token …`` header)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginRateThrottle]
    throttle_scope = "login"

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AuthTokenInput"

        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)
        name = serializers.CharField(
            max_length=100, required=False, default="API login"
        )

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AuthToken"

        token = serializers.CharField()
        expires_at = serializers.DateTimeField()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer}, auth=[])
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        username = data.validated_data["username"]
        address = client_address(request)
        wait = login_locked_for(address=address, username=username)
        if wait:
            raise LoginLocked(wait=wait, detail=LOCKED_MESSAGE)
        user = authenticate(
            request, username=username, password=data.validated_data["password"]
        )
        if user is None:
            login_failed(address=address, username=username)
            raise ApplicationError(
                "Unable to log in with the username and password given.",
                code="invalid_credentials",
            )
        login_succeeded(address=address, username=username)
        token, raw = api_token_issue(user=user, name=data.validated_data["name"])
        body = self.OutputSerializer({"token": raw, "expires_at": token.expires_at})
        return Response(body.data, status=status.HTTP_200_OK)


class MeApi(APIView):
    """Who the caller is and the roles they hold in which organisations."""

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "Me"

        class MembershipOutputSerializer(serializers.Serializer):
            class Meta:
                ref_name = "Membership"

            organisation = serializers.CharField(source="organisation.slug")
            organisation_kind = serializers.CharField(source="organisation.kind")
            role = serializers.CharField()

        username = serializers.CharField()
        memberships = MembershipOutputSerializer(many=True)

    @extend_schema(operation_id="me", responses={200: OutputSerializer})
    def get(self, request: Request) -> Response:
        me = {
            "username": request.user.get_username(),
            "memberships": membership_list_for(request.user),
        }
        return Response(self.OutputSerializer(me).data)


class ApiSchemaApi(SpectacularAPIView):
    """The OpenAPI document, built once per process under a lock: a build sets
    attributes on shared view classes, so concurrent builds trample each other.
    The API has one version and one language: ``?version`` and ``?lang`` are
    ignored (each would otherwise be a build, and a cache entry, per value)."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _schema: ClassVar[dict[str, Any] | None] = None

    def _get_schema_response(self, request: Request) -> Response:
        with self._lock:
            if ApiSchemaApi._schema is None:
                generator = self.generator_class(
                    urlconf=self.urlconf, api_version=None, patterns=self.patterns
                )
                ApiSchemaApi._schema = generator.get_schema(
                    request=request, public=self.serve_public
                )
        name = self._get_filename(request, None)
        return Response(
            data=ApiSchemaApi._schema,
            headers={"Content-Disposition": f'inline; filename="{name}"'},
        )
