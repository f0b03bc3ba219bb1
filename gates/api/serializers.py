"""What the gates API's modules share: the error answers its operations
document (the API's one error shape) and the field of a stored JSON document."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from accounts.api.errors import ErrorSerializer


def _error(text: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=text)


BAD_INPUT = _error("Bad input: every problem with its path.")
NOT_SIGNED_IN = _error("No valid token or session.")
FORBIDDEN = _error("You may see it but not do this.")
NOT_FOUND = _error("No such object, or not one you may see.")
CONFLICT = _error("Its current state refuses the request.")

READ_ERRORS: dict[int, OpenApiResponse] = {401: NOT_SIGNED_IN, 404: NOT_FOUND}
WRITE_ERRORS: dict[int, OpenApiResponse] = {
    400: BAD_INPUT,
    401: NOT_SIGNED_IN,
    403: FORBIDDEN,
    404: NOT_FOUND,
    409: CONFLICT,
}


@extend_schema_field({"type": "object", "additionalProperties": True})
class DocumentField(serializers.Field):
    """A stored canonical JSON text as the object it holds."""

    def to_representation(self, value: str) -> Any:
        return json.loads(value)
