"""The API's OpenAPI description (drf-spectacular): our token authentication, and
the error answers every operation documents with the one error shape
(``accounts.api.errors.ErrorSerializer``)."""

from __future__ import annotations

import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from accounts.api.errors import ErrorSerializer


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>`; get one from POST /api/v1/auth/token/.",
        }


ERRORS: dict[str, str] = {
    "400": "Bad input: every problem with its path.",
    "401": "No valid token or session.",
    "403": "You may not do this (your role, or the session's CSRF check).",
    "404": "No such object, or not one you may see.",
    "409": "Its current state refuses the request.",
    "413": "The request body is too large for this endpoint.",
    "415": "The request body's Content-Type is not one this operation reads.",
    "429": "Too many attempts; wait and retry (Retry-After).",
    "503": "A service it needs is unavailable; retry later.",
    "507": (
        "The server's disk is full; nothing was kept (spool_full for an upload, "
        "else disk_full); retry later."
    ),
}


def error_response(status: int) -> OpenApiResponse:
    """The error answer ``status`` for an operation's ``@extend_schema(responses=…)``,
    where the view gives one the rules of ``AutoSchema`` do not see (a 404 for an
    object named in the body or the query)."""
    return OpenApiResponse(ErrorSerializer, description=ERRORS[str(status)])


UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Patterns of request texts: no NUL character; and one that is not whitespace.
NO_NUL = "^[^\\x00]*$"
NOT_BLANK = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"
# The RFC 3339 date-times Django reads: upper-case T and Z, no leap second, and
# a year from 1000 to 8999 (at the ends, the UTC time may leave datetime's range);
# days to the 28th, which every month has (a pattern knows no calendar).
DATE_TIME = (
    r"^[1-8][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


def _regex_of(field: Any) -> str | None:
    """The pattern of a field's ``RegexValidator``, if it has one."""
    for validator in field.validators:
        if isinstance(validator, RegexValidator):
            regex = validator.regex  # compiled by RegexValidator itself
            return regex if isinstance(regex, str) else str(regex.pattern)
    return None


# drf-spectacular's pattern of a decimal, ``^-?\d{0,W}(?:\.\d{0,P})?$``, allows
# "", "." and "-", which DRF refuses as "a valid number is required".
_DECIMAL = re.compile(r"^\^-\?\\d\{0,(\d+)\}\(\?:\\\.\\d\{0,(\d+)\}\)\?\$$")


def _with_a_digit(pattern: str) -> str:
    """The decimal's pattern with at least one digit (before or after the point)."""
    match = _DECIMAL.match(pattern)
    if match is None or int(match[1]) == 0 or int(match[2]) == 0:
        return pattern
    whole, places = match[1], match[2]
    return rf"^-?(?:\d{{1,{whole}}}(?:\.\d{{0,{places}}})?|\.\d{{1,{places}}})$"


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema, plus the error answers an operation can give,
    read from the view: 401 and 403 where it needs a signed-in caller; 404 where
    its path names an object or it takes ``?format``; 400 where it reads a body
    or query parameters; 409, 413 and 507 for the unsafe methods, 415 where they read
    a body; 429 where it is throttled. Always as JSON, whatever the success
    answer's media type (``accounts.api.errors.exception_handler`` answers so).
    An operation's own ``@extend_schema(responses=…)`` wins for a status it
    names."""

    def error_statuses(self) -> list[str]:
        statuses: list[str] = []
        method = self.method.upper()
        unsafe = method in UNSAFE
        signed_in = not all(
            isinstance(permission, AllowAny)
            for permission in self.view.get_permissions()
        )
        query = [
            parameter
            for parameter in self._get_parameters()
            if parameter.get("in") == "query"
        ]
        if unsafe or query:
            statuses.append("400")
        if signed_in:
            statuses += ["401", "403"]
        if "{" in self.path or any(p.get("name") == "format" for p in query):
            statuses.append("404")  # DRF's answer to an unknown ?format too
        if unsafe:
            statuses += ["409", "413", "507"]  # 507: a full disk (disk_full)
        if unsafe and self.get_request_serializer() is not None:
            statuses.append("415")
        if getattr(self.view, "throttle_classes", None):
            statuses.append("429")
        return statuses

    def _map_serializer_field(
        self, field: Any, direction: Any, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        """What DRF's fields refuse in a request, the schema says: for a
        ``CharField``, a NUL character, and unless blank is allowed, an empty
        text or (where it trims whitespace) one of whitespace only; for a
        ``DecimalField``, a minus sign where the minimum is 0 or more, and the
        field's own ``RegexValidator`` (its bounds, as text) where it has one;
        a ``FileField`` takes a file (drf-spectacular says a URL, as it answers);
        a ``DateTimeField`` the RFC 3339 date-times Django's parser reads."""
        schema: dict[str, Any] = super()._map_serializer_field(
            field, direction, bypass_extensions
        )
        if direction != "request" or schema.get("type") != "string":
            return schema
        regex = _regex_of(field)
        if isinstance(field, serializers.FileField):  # a file part, not a URL
            schema["format"] = "binary"
        elif type(field) is serializers.CharField and "pattern" not in schema:
            blank = field.allow_blank
            if not blank:
                schema.setdefault("minLength", 1)
            if regex is None:  # else drf-spectacular writes the field's own
                trimmed = field.trim_whitespace and not blank
                schema["pattern"] = NOT_BLANK if trimmed else NO_NUL
        elif isinstance(field, serializers.DateTimeField):
            schema["pattern"] = DATE_TIME
        elif isinstance(field, serializers.DecimalField):
            if regex is not None:  # the bounds, as a pattern
                schema["pattern"] = regex
            else:
                schema["pattern"] = _with_a_digit(schema.get("pattern", ""))
                if field.min_value is not None and field.min_value >= 0:
                    schema["pattern"] = schema["pattern"].replace("^-?", "^", 1)
        return schema

    def _get_serializer_name(
        self, serializer: Any, direction: Any, bypass_extensions: bool = False
    ) -> str:
        """A body a request sends is a component of its own, named ``…Input``:
        one shared with an answer (an RFP's metrics) would carry only what the
        answer's fields say, not what the request's refuse."""
        name: str = super()._get_serializer_name(
            serializer, direction, bypass_extensions
        )
        if direction == "request" and not name.endswith("Input"):
            name += "Input"
        return name

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        """drf-spectacular adds a blank alternative where a pattern might refuse
        a blank text; ``NO_NUL`` never does, so a blank-allowed text stays one
        plain string."""
        super()._insert_field_validators(field, schema)
        choices = schema.get("oneOf")
        blank = {"type": "string", "maxLength": 0}
        if isinstance(choices, list) and len(choices) == 2 and choices[1] == blank:
            inner = choices[0]
            if inner.get("pattern") == NO_NUL and not {"minLength", "format"} & set(
                inner
            ):
                schema.update(schema.pop("oneOf")[0])

    def _map_basic_serializer(self, serializer: Any, direction: Any) -> Any:
        """A serializer whose ``Meta.closed`` is true refuses keys it does not
        name: ``additionalProperties: false``."""
        schema = super()._map_basic_serializer(serializer, direction)
        if getattr(getattr(serializer, "Meta", None), "closed", False):
            schema["additionalProperties"] = False
        return schema

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for code in self.error_statuses():
            if code not in responses:
                error = error_response(int(code))
                responses[code] = self._get_response_for_code(
                    error, code, ["application/json"], direction
                )
        return responses
