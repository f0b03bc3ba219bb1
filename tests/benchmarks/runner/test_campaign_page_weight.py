"""The campaign page's first load as the embedded default serves it (scripts/run:
collectstatic into the var dir, ``REPROGATE_STATIC_COLLECTED``): the page and every
static file it names, fetched as a browser would with ``Accept-Encoding: br,
gzip``, weigh under 1.5 MB together; every static URL carries a content hash and
is sent with a one-year immutable ``Cache-Control``, compressed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse

from benchmarks.models import Campaign, LabPool
from tests.benchmarks.runner.support import finish, runs_of, start

pytestmark = pytest.mark.django_db
BUDGET = 1_500_000  # bytes, the page and its static files on a first load
YEAR = 365 * 24 * 3600
HASHED = re.compile(r"^/static/.+\.[0-9a-f]{12}\.[a-z0-9]+$")
COLLECTED = {
    "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    "staticfiles": {
        "BACKEND": "config.staticfinders.CompressedManifestStaticFilesStorage"
    },
}


class _StaticUrls(HTMLParser):
    """The ``/static/`` URLs of scripts, stylesheets, icons and images."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("src", "href"):
            url = found.get(name) or ""
            if url.startswith("/static/") and url not in self.urls:
                self.urls.append(url)


@pytest.fixture(scope="module")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What scripts/run collects (the admin's and the API browser's files left
    out: the campaign page names none of them)."""
    root = tmp_path_factory.mktemp("static-root")
    with override_settings(STATIC_ROOT=root, STORAGES=COLLECTED):
        call_command(
            "collectstatic",
            interactive=False,
            verbosity=0,
            ignore_patterns=["admin", "rest_framework", "drf_spectacular_sidecar"],
        )
    return root


@pytest.fixture
def embedded_static(static_root: Path) -> Iterator[None]:
    with override_settings(
        STATIC_ROOT=static_root,
        STORAGES=COLLECTED,
        REPROGATE_STATIC_COLLECTED=True,
        WHITENOISE_USE_FINDERS=False,
        WHITENOISE_AUTOREFRESH=False,
    ):
        yield


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:
    campaign = start(bundle, pool, labops)
    for run in runs_of(campaign):
        finish(
            run,
            metrics=[{"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms"}],
            outputs={"metrics.json": b'{"metrics": []}\n'},
        )
    return campaign


def _body(response: Any) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def test_the_campaign_page_first_load_is_under_budget_hashed_and_cached(
    embedded_static: None, campaign: Campaign, labops: Any
) -> None:
    client = Client(HTTP_ACCEPT_ENCODING="br, gzip")
    client.force_login(labops)
    page = client.get(reverse("benchmarks:campaign_detail", args=[campaign.public_id]))
    assert page.status_code == 200
    html = _body(page)
    parser = _StaticUrls()
    parser.feed(html.decode())
    assert any("plotly" in url for url in parser.urls), parser.urls  # the charts

    weights = {"page": len(html)}
    for url in parser.urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert HASHED.match(url), url
        cache = response["Cache-Control"]
        assert "immutable" in cache, (url, cache)
        max_age = int(re.search(r"max-age=(\d+)", cache).group(1))
        assert max_age >= YEAR, (url, cache)
        assert response.get("Content-Encoding") in {"br", "gzip", None}, url
        weights[url] = len(_body(response))

    plotly = next(url for url in weights if "plotly" in url)
    assert page.status_code == 200
    assert client.get(plotly)["Content-Encoding"] == "br"
    assert sum(weights.values()) < BUDGET, weights
