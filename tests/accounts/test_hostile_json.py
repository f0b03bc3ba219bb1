"""Hostile input gets a 4xx in the API's error shape, never a 500: JSON nested
too deep, bodies over the size limit, page numbers beyond any integer, and the
schema asked for by several clients at once."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.request import Request
from rest_framework.test import APIClient

from accounts.api.pagination import MAX_LIMIT, LimitOffsetPagination
from tests.procurement.factories_rfps import published_rfp

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "/api/v1/auth/token/"
DEEP = "[" * 1000 + "]" * 1000  # 2 kB


def _api_paths() -> list[str]:
    """Every API route with its parameters filled in (ids of nothing)."""
    values = {"uuid": str(uuid.uuid4()), "int": "1"}
    found: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for entry in patterns:
            route = str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + route)
            elif isinstance(entry, URLPattern):
                path = prefix + route
                for name, converter in entry.pattern.converters.items():
                    kind = type(converter).__name__.removesuffix("Converter").lower()
                    for text in (f"<{kind}:{name}>", f"<{name}>"):
                        path = path.replace(text, values.get(kind, "x"))
                found.append("/" + path.lstrip("^").rstrip("$"))

    walk(get_resolver().url_patterns, "")
    return sorted({p for p in found if p.startswith("/api/v1/")})


def _query(query: str) -> Request:
    return Request(RequestFactory().get(f"/api/v1/rfps/?{query}"))


def _json_error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) >= {"code", "message"}
    return body


def test_deeply_nested_json_to_the_token_endpoint_is_a_400(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        response = APIClient().post(TOKEN, DEEP, content_type="application/json")

    assert _json_error(response, 400)["code"] == "parse_error"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_json_nested_below_the_recursion_limit_is_refused_too() -> None:
    body = '{"username": ' + "[" * 200 + "]" * 200 + ', "password": "x"}'

    response = APIClient().post(TOKEN, body, content_type="application/json")

    error = _json_error(response, 400)
    assert error["code"] == "parse_error"
    assert "nested" in error["message"]


def test_ordinary_nesting_is_still_accepted() -> None:
    body = '{"username": "x", "password": "y", "extra": [[[{"a": [1]}]]]}'

    response = APIClient().post(TOKEN, body, content_type="application/json")

    assert _json_error(response, 400)["code"] == "invalid_credentials"


@pytest.mark.parametrize("authenticated", [False, True])
def test_deeply_nested_json_is_never_a_server_error_on_any_api_route(
    buyer: Any, authenticated: bool
) -> None:
    api = APIClient(raise_request_exception=False)
    if authenticated:
        api.force_authenticate(buyer)
    paths = _api_paths()
    assert {TOKEN, "/api/v1/rfps/"} <= set(paths)

    answers = {
        (method, path): getattr(api, method)(
            path, DEEP, content_type="application/json"
        ).status_code
        for path in paths
        for method in ("post", "put", "patch")
    }

    assert {k: v for k, v in answers.items() if v >= 500} == {}
    if authenticated:
        assert answers[("post", "/api/v1/rfps/")] == 400


def test_a_body_over_the_size_limit_gets_the_api_error_shape(settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = '{"username": "' + "x" * 2000 + '", "password": "y"}'

    response = APIClient().post(TOKEN, body, content_type="application/json")

    assert _json_error(response, 413)["code"] == "too_large"


def test_a_body_over_the_size_limit_on_an_authenticated_route(
    settings: Any, buyer: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    api = APIClient()
    api.force_authenticate(buyer)

    response = api.post(
        "/api/v1/rfps/",
        '{"title": "' + "x" * 2000 + '"}',
        content_type="application/json",
    )

    assert _json_error(response, 413)["code"] == "too_large"


@pytest.fixture
def listed_rfp(buyer: Any, buyer_org: Any, vendor_a_org: Any) -> Any:
    return published_rfp(buyer_org, vendor_a_org)


def test_a_limit_beyond_any_integer_is_clamped(buyer: Any, listed_rfp: Any) -> None:
    api = APIClient()
    api.force_authenticate(buyer)

    response = api.get("/api/v1/rfps/", {"limit": "9223372036854775808"})

    assert response.status_code == 200
    assert [r["reference"] for r in response.json()["results"]] == ["RFP-T-900"]


def test_an_offset_beyond_any_integer_is_an_empty_page(
    buyer: Any, listed_rfp: Any
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)

    response = api.get("/api/v1/rfps/", {"offset": "9223372036854775808"})

    assert response.status_code == 200
    assert response.json()["results"] == []


def test_a_limit_is_cut_to_the_maximum() -> None:
    paginator = LimitOffsetPagination()

    assert paginator.get_limit(_query("limit=100000")) == MAX_LIMIT
    assert paginator.get_limit(_query("limit=9223372036854775808")) == MAX_LIMIT
    assert paginator.get_limit(_query("limit=7")) == 7


def test_every_api_list_uses_the_bounded_paginator() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for app in ("accounts", "procurement", "artifacts", "benchmarks", "gates")
        for path in (ROOT / app).rglob("*.py")
        if "from rest_framework.pagination import" in path.read_text()
    ]

    assert offenders == []


SCHEMA_RACE = textwrap.dedent(
    """
    import threading
    import django
    django.setup()
    from django.test import Client
    barrier, bodies = threading.Barrier(4), []
    def fetch():
        client = Client(raise_request_exception=False)
        barrier.wait()
        response = client.get("/api/v1/schema/", {"format": "json"})
        bodies.append((response.status_code, response.content))
    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(sorted(status for status, _ in bodies), len({body for _, body in bodies}))
    """
)


def test_concurrent_first_schema_requests_all_get_the_schema(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": "insecure-key-for-the-test-suite-only",
        "DJANGO_SECURE_SSL_REDIRECT": "False",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "REPROGATE_VAR_DIR": str(tmp_path),
        "DJANGO_LOG_LEVEL": "CRITICAL",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCHEMA_RACE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[200,", "200,", "200,", "200]", "1"]


@pytest.mark.parametrize(
    "query",
    [
        "limit=abc",
        "limit=0",
        "limit=-1",
        "limit=",
        "limit=1&limit=2",
        "offset=-1",
        "offset=1.5",
        "offset=",
        "limit=1e3",
        "offset=+1",
    ],
)
def test_a_paging_parameter_that_is_no_whole_number_is_a_400(
    buyer: Any, query: str
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)

    response = api.get(f"/api/v1/rfps/?{query}")

    name = query.split("=")[0]
    assert response.status_code == 400
    assert [p["path"] for p in response.json()["problems"]] == [name]


@pytest.mark.parametrize("name", ["rfp", "vendor"])
def test_a_deposit_filter_with_a_nul_character_is_a_400(buyer: Any, name: str) -> None:
    api = APIClient()
    api.force_authenticate(buyer)

    response = api.get("/api/v1/escrow/deposits/", {name: "RFP\x00-1"})

    assert response.status_code == 400
    assert [p["path"] for p in response.json()["problems"]] == [name]
