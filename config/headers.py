"""Content-Security-Policy and Permissions-Policy on every response.

The policies are settings (``REPROGATE_CSP``, ``REPROGATE_PERMISSIONS_POLICY``): the
pages load only local assets and run no inline script, so the policy is strict. A
view that needs more wraps itself in ``csp_update`` (the API docs' Swagger UI);
the middleware keeps a policy a response already carries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase

CSP_HEADER = "Content-Security-Policy"
PERMISSIONS_POLICY_HEADER = "Permissions-Policy"

Directives = Mapping[str, Sequence[str]]


def csp_header(directives: Directives) -> str:
    """``{"script-src": ["'self'"]}`` → ``"script-src 'self'"``."""
    return "; ".join(" ".join([name, *sources]) for name, sources in directives.items())


def permissions_policy_header(features: Directives) -> str:
    """``{"camera": []}`` → ``"camera=()"``; ``{"fullscreen": ["self"]}`` →
    ``"fullscreen=(self)"`` (an origin in the allowlist is written quoted)."""
    return ", ".join(
        f"{name}=({' '.join(allowlist)})" for name, allowlist in features.items()
    )


def csp_update(
    **directives: Sequence[str],
) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """A view's own policy: ``REPROGATE_CSP`` with the given directives replaced
    (``style_src=[...]`` replaces ``style-src``)."""
    update = {name.replace("_", "-"): list(v) for name, v in directives.items()}

    def decorate(
        view: Callable[..., HttpResponseBase],
    ) -> Callable[..., HttpResponseBase]:
        @wraps(view)
        def wrapped(
            request: HttpRequest, *args: Any, **kwargs: Any
        ) -> HttpResponseBase:
            response = view(request, *args, **kwargs)
            response[CSP_HEADER] = csp_header({**settings.REPROGATE_CSP, **update})
            return response

        return wrapped

    return decorate


def _debug_page(response: HttpResponse) -> bool:
    """With DEBUG, an error page may be Django's technical one (inline style and
    script): it keeps working. DEBUG is for a developer's machine only."""
    return bool(settings.DEBUG) and response.status_code >= 400


class SecurityHeadersMiddleware:
    """Sets both policies on every response, static files included (it sits
    before WhiteNoise), unless the view set its own; with DEBUG, error pages get
    no Content-Security-Policy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if CSP_HEADER not in response and not _debug_page(response):
            response[CSP_HEADER] = csp_header(settings.REPROGATE_CSP)
        if PERMISSIONS_POLICY_HEADER not in response:
            response[PERMISSIONS_POLICY_HEADER] = permissions_policy_header(
                settings.REPROGATE_PERMISSIONS_POLICY
            )
        return response
