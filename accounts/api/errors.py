"""One error shape for the whole API:
``{"code", "message", "problems": [{"code", "message", "path"?}]}``."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from accounts.exceptions import ApplicationError, StateConflict
from accounts.views.disk_full import DISK_FULL_CODE, DISK_FULL_MESSAGE, is_disk_full

logger = logging.getLogger(__name__)


class ProblemSerializer(serializers.Serializer):
    """One problem of an error answer (OpenAPI component ``Problem``)."""

    class Meta:
        ref_name = "Problem"

    code = serializers.CharField()
    message = serializers.CharField()
    path = serializers.CharField(
        required=False, help_text="Where in the request, e.g. gates[0].criteria[2]."
    )


class ErrorSerializer(serializers.Serializer):
    """The API's one error shape (OpenAPI component ``Error``)."""

    class Meta:
        ref_name = "Error"

    code = serializers.CharField()
    message = serializers.CharField()
    problems = ProblemSerializer(many=True)


def _flatten(detail: Any, path: str = "") -> list[dict[str, str]]:
    """DRF's nested ``ValidationError.detail`` as a flat list of problems."""
    if isinstance(detail, dict):
        problems: list[dict[str, str]] = []
        for key, value in detail.items():
            if key == "non_field_errors":
                child = path
            elif isinstance(key, int) or str(key).isdigit():
                child = f"{path}[{key}]"  # list items: claims[0].stat
            else:
                child = f"{path}.{key}".lstrip(".")
            problems.extend(_flatten(value, child))
        return problems
    if isinstance(detail, list):
        problems = []
        for index, value in enumerate(detail):
            nested = isinstance(value, dict | list)
            problems.extend(_flatten(value, f"{path}[{index}]" if nested else path))
        return problems
    problem = {"code": getattr(detail, "code", "invalid"), "message": str(detail)}
    if path:
        problem["path"] = path
    return [problem]


def error_body(code: str, message: str, problems: list[dict[str, str]] | None = None):
    return {"code": code, "message": message, "problems": problems or []}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = _error_response(exc, context)
    request = context.get("request")
    if response is not None and request is not None:
        # An error is JSON and says so, even where the client asked for the
        # operation's other format (?format=zip, Accept: text/csv).
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
    return response


def _error_response(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        http = (
            status.HTTP_409_CONFLICT
            if isinstance(exc, StateConflict)
            else status.HTTP_400_BAD_REQUEST
        )
        problems = [p.as_dict() for p in exc.problems]
        return Response(error_body(exc.code, exc.message, problems), status=http)
    if is_disk_full(exc):
        logger.warning("disk full: %s", exc)
        return Response(
            error_body(DISK_FULL_CODE, DISK_FULL_MESSAGE),
            status=status.HTTP_507_INSUFFICIENT_STORAGE,
        )
    if isinstance(exc, RequestDataTooBig):  # over DATA_UPLOAD_MAX_MEMORY_SIZE
        message = "The request body is too large for this endpoint."
        return Response(
            error_body("too_large", message),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        problems = _flatten(exc.detail)
        message = "The request has problems: " + "; ".join(
            f"{p.get('path', 'request')}: {p['message']}" for p in problems[:5]
        )
        response.data = error_body("invalid", message, problems)
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        code = getattr(detail, "code", None) or exc.default_code
        response.data = error_body(str(code), str(detail))
    return response


def json_not_found(request: HttpRequest, exception: Exception | None = None):
    return JsonResponse(error_body("not_found", "Not found."), status=404)


def json_server_error(request: HttpRequest):
    return JsonResponse(
        error_body("server_error", "The server failed; the error was logged."),
        status=500,
    )
