"""The runner API's authentication: ``Authorization: Bearer rgh_…``, a host
token (``benchmarks.services.host_tokens``). No session and no CSRF: an agent
holds nothing else. ``request.user`` stays anonymous; ``request.auth`` is the
``HostToken``, which names the pool the agent may work for."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from benchmarks.models import HostToken
from benchmarks.services.host_tokens import HostTokenRefused, host_token_authenticate

KEYWORD = "Bearer"
REFUSED = "host_token_refused"


class HostTokenRefusedError(exceptions.AuthenticationFailed):
    default_code = REFUSED


class HostTokenAuthentication(authentication.BaseAuthentication):
    """A lab host's agent, known by its host token."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, HostToken]:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != KEYWORD.lower().encode():
            raise HostTokenRefusedError(
                "Send the host token: 'Authorization: Bearer rgh_…'.", code=REFUSED
            )
        if len(header) != 2:
            raise HostTokenRefusedError(
                "Malformed Authorization header: use 'Bearer rgh_…'.", code=REFUSED
            )
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise HostTokenRefusedError("Unknown host token.", code=REFUSED) from None
        try:
            token = host_token_authenticate(raw)
        except HostTokenRefused as refused:
            raise HostTokenRefusedError(refused.message, code=REFUSED) from None
        return AnonymousUser(), token

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


class IsLabHost(permissions.BasePermission):
    """The request carries an active host token."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, HostToken)


class HostTokenScheme(OpenApiAuthenticationExtension):
    target_class = "benchmarks.api.runner_auth.HostTokenAuthentication"
    name = "hostTokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A host token `rgh_…`, issued when the host joins a "
            "pool (manage.py pool_join or the pool's page).",
        }
