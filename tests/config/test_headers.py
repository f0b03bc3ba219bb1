"""Every response carries a Content-Security-Policy (local assets only, no inline or
eval'd script, no framing) and a Permissions-Policy denying the browser features no
page uses: pages of each role, the API, errors, static files, the admin and the API
docs (Swagger UI's init script a second request, its page a <style> of its own).
The templates keep to the policy: no inline script, handler attribute or <style>."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse

from config.plotly_css import SOURCE, TARGET, current_css, maplibre_style_id

CSP = "Content-Security-Policy"
PERMISSIONS = "Permissions-Policy"
TEMPLATES = Path(settings.BASE_DIR) / "templates"


def _directives(response: Any) -> dict[str, list[str]]:
    policy = response[CSP]
    parts = [part.split() for part in policy.split(";") if part.strip()]
    return {part[0]: part[1:] for part in parts}


def _assert_strict(response: Any) -> None:
    directives = _directives(response)
    assert directives["default-src"] == ["'none'"]
    assert directives["script-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["base-uri"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["form-action"] == ["'self'"]
    assert "'unsafe-eval'" not in response[CSP]
    for feature in ("camera", "microphone", "geolocation", "payment", "usb"):
        assert f"{feature}=()" in response[PERMISSIONS].split(", ")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    ["/accounts/login/", "/healthz", "/no-such-page/", "/api/v1/me/", "/admin/login/"],
)
def test_anonymous_responses_carry_both_policies(url: str) -> None:
    response = Client().get(url)

    _assert_strict(response)
    assert _directives(response)["style-src"] == ["'self'"]


@pytest.mark.django_db  # the personas are asked for by name, in the test
@pytest.mark.parametrize(
    "user", ["buyer", "evaluator", "vendor_a", "labops", "auditor"]
)
def test_each_roles_dashboard_carries_both_policies(
    user: str, request: pytest.FixtureRequest, client_for: Any
) -> None:
    response = client_for(request.getfixturevalue(user)).get(
        reverse("portal:dashboard")
    )

    assert response.status_code == 200
    _assert_strict(response)


@override_settings(WHITENOISE_USE_FINDERS=True, WHITENOISE_AUTOREFRESH=True)
def test_static_files_carry_both_policies() -> None:
    response = Client().get("/static/img/favicon.svg")

    assert response.status_code == 200
    _assert_strict(response)


@pytest.mark.django_db
def test_api_docs_run_no_inline_script_and_allow_only_their_style() -> None:
    client = Client()

    page = client.get(reverse("api-docs"))
    script = client.get(reverse("api-docs") + "?script=")

    _assert_strict(page)
    assert _directives(page)["style-src"] == ["'self'", "'unsafe-inline'"]
    html = page.content.decode()
    inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert inline == []
    assert f'src="{reverse("api-docs")}?script="' in html
    assert script["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in script.content


@pytest.mark.django_db
def test_with_debug_django_s_error_pages_keep_their_inline_styles(
    settings: Any,
) -> None:
    settings.DEBUG = True

    missing = Client().get("/no-such-page/")
    page = Client().get("/accounts/login/")

    assert missing.status_code == 404
    assert CSP not in missing
    assert PERMISSIONS in missing
    _assert_strict(page)


def _template_texts() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(TEMPLATES)), path.read_text())
        for path in sorted(TEMPLATES.rglob("*.html"))
    ]


def test_templates_hold_no_inline_script_handler_or_style_element() -> None:
    inline_script = re.compile(
        r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>"
    )
    handler = re.compile(r"\son[a-z]+\s*=|\bhx-on|javascript:", re.I)
    found = [
        name
        for name, text in _template_texts()
        if inline_script.search(text) or handler.search(text) or "<style" in text
    ]

    assert found == []


def test_plotly_styles_file_is_the_installed_plotly_js_rules() -> None:
    """plotly.js adds no style element when this file is linked; it must hold
    the rules of the installed plotly.js (after an upgrade: python -m
    config.plotly_css)."""
    css = current_css()

    assert ".js-plotly-plot .plotly .modebar {" in css
    assert TARGET.read_text(encoding="utf-8") == css


def test_chart_pages_hold_the_element_that_keeps_maplibre_styles_out() -> None:
    marker = maplibre_style_id(SOURCE.read_text(encoding="utf-8"))
    template = TEMPLATES / "benchmarks" / "_charts_scripts.html"

    assert f'<template id="{marker}"></template>' in template.read_text()
