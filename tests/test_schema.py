from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

UNDOCUMENTED = {"api/v1/schema/", "api/v1/docs/"}


def _routes(patterns: list[Any], prefix: str) -> set[str]:
    routes: set[str] = set()
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes |= _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and route not in UNDOCUMENTED:
            routes.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
    return routes


def _api_routes() -> set[str]:
    """Every route under /api/v1/ as OpenAPI writes it, e.g. /api/v1/rfps/{rfp_id}/."""
    api = next(
        p
        for p in get_resolver().url_patterns
        if isinstance(p, URLResolver) and str(p.pattern) == "api/v1/"
    )
    return _routes(api.url_patterns, "api/v1/")


def test_schema_is_valid_openapi_3_naming_every_endpoint() -> None:
    response = APIClient().get("/api/v1/schema/", {"format": "json"})

    schema = response.json()
    validate_schema(schema)  # raises on an invalid document
    assert schema["openapi"].startswith("3.")
    assert _api_routes() <= set(schema["paths"])
    assert "/api/v1/rfps/" in schema["paths"]


def test_docs_page_uses_only_local_assets(client: Any) -> None:
    response = client.get("/api/v1/docs/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "swagger-ui-bundle.js" in html
    assert "cdn." not in html
    assert "https://" not in html


def test_schema_generates_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "schema.yml"

    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))

    assert "/api/v1/auth/token/" in out.read_text()
