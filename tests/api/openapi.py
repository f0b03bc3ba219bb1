"""The API's OpenAPI document as JSON Schema: an answer's body checked against the
schema its operation declares for the status it gave."""

from __future__ import annotations

from typing import Any

import jsonschema
from rest_framework.test import APIClient


def openapi_document() -> dict[str, Any]:
    response = APIClient().get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's ``nullable`` as JSON Schema's null type, all the way down."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _json_schema(value) for key, value in node.items()}
    if converted.pop("nullable", False):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def response_problems(
    document: dict[str, Any], path: str, method: str, status: int, body: Any
) -> list[str]:
    """What is wrong with ``body`` as the ``status`` answer of ``method path``:
    an undocumented status, or each place the body breaks the declared schema."""
    responses = document["paths"][path][method.lower()]["responses"]
    declared = responses.get(str(status))
    if declared is None:
        return [f"{method} {path}: status {status} is not documented"]
    content = declared.get("content", {}).get("application/json")
    if content is None:
        return []
    schema = {
        **_json_schema(content["schema"]),
        "components": _json_schema(document["components"]),
    }
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{method} {path} {status}: {'/'.join(map(str, error.absolute_path))}: "
        f"{error.message}"
        for error in validator.iter_errors(body)
    ]
