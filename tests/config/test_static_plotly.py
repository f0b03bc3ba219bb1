"""plotly.js (4.8 MB) is served compressed and cached: under a name carrying the
plotly.js version, gzip (brotli when the module is there) for a browser that
accepts it, and a Cache-Control that keeps it for good. Checked in the embedded
default (a real ``runserver`` with DEBUG, whitenoise serving through the finders),
in the same set-up in process, and after ``collectstatic`` as in production."""

from __future__ import annotations

import gzip
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.template import Context, Template
from django.test import Client, override_settings

from config import staticfinders
from config.staticfinders import LOGICAL, PLOTLY_JS_VERSION, SOURCE, VERSIONED

URL = f"/static/{VERSIONED}"
DAY = 24 * 3600
DEBUG_STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    "staticfiles": {"BACKEND": "config.staticfinders.StaticFilesStorage"},
}


def _max_age(cache_control: str) -> int:
    found = re.search(r"max-age=(\d+)", cache_control)
    assert found, cache_control
    return int(found.group(1))


def _plotly() -> bytes:
    return SOURCE.read_bytes()


@pytest.fixture
def cache_dir(tmp_path: Path, settings: Any) -> Path:
    settings.STATIC_VENDOR_CACHE = tmp_path / "static-cache"
    return tmp_path / "static-cache"


@pytest.fixture
def embedded(cache_dir: Path) -> Iterator[None]:
    """What DEBUG sets up (the suite runs with DEBUG off): whitenoise serves the
    finders' files, refreshed on every request, with no max-age of its own."""
    with override_settings(
        DEBUG=True,
        WHITENOISE_AUTOREFRESH=True,
        WHITENOISE_USE_FINDERS=True,
        STORAGES=DEBUG_STORAGES,
    ):
        yield


# --- names ----------------------------------------------------------------------


def test_the_name_carries_the_plotly_js_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", PLOTLY_JS_VERSION)
    assert f"vendor/plotly/plotly-{PLOTLY_JS_VERSION}.min.js" == VERSIONED
    assert f"plotly.js v{PLOTLY_JS_VERSION}".encode() in _plotly()[:200]


def test_templates_get_the_versioned_url(embedded: None) -> None:
    rendered = Template(
        "{% load static %}{% static 'vendor/plotly/plotly.min.js' %}"
        "|{% static 'css/app.css' %}"
    ).render(Context())

    assert rendered == f"/static/{VERSIONED}|/static/css/app.css"


def test_the_finder_answers_only_its_own_names(cache_dir: Path) -> None:
    finder = staticfinders.PlotlyFinder()

    assert finder.find(VERSIONED) == str(cache_dir / VERSIONED)
    assert finder.find(LOGICAL) == str(SOURCE)
    for other in (
        "vendor/plotly/plotly-0.0.1.min.js",
        "vendor/plotly/../plotly/plotly.min.js",
        "vendor/plotly/plotly.js",
        "",
    ):
        assert finder.find(other) == []
        assert finder.find(other, find_all=True) == []
    assert [name for name, _ in finder.list(None)] == [
        f"plotly-{PLOTLY_JS_VERSION}.min.js"
    ]


def test_the_cached_copy_has_a_gzip_variant_of_the_same_bytes(cache_dir: Path) -> None:
    copy = staticfinders.prepared_copy()

    assert copy == cache_dir / VERSIONED
    assert copy.read_bytes() == _plotly()
    assert gzip.decompress(Path(f"{copy}.gz").read_bytes()) == _plotly()
    assert list(copy.parent.glob(".tmp-*")) == []  # no staging left behind


def test_a_stale_or_broken_copy_is_made_again(cache_dir: Path) -> None:
    copy = staticfinders.prepared_copy()
    assert copy is not None
    copy.write_bytes(b"truncated")
    Path(f"{copy}.gz").write_bytes(b"not gzip")

    again = staticfinders.prepared_copy()

    assert again == copy
    assert copy.read_bytes() == _plotly()
    assert gzip.decompress(Path(f"{copy}.gz").read_bytes()) == _plotly()


def test_an_unwritable_cache_falls_back_to_the_package_file(
    tmp_path: Path, settings: Any
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache should be")
    settings.STATIC_VENDOR_CACHE = blocker

    assert staticfinders.prepared_copy() == SOURCE


# --- serving, in process --------------------------------------------------------


def test_gzip_and_a_long_cache_for_a_browser_that_accepts_it(embedded: None) -> None:
    response = Client().get(URL, HTTP_ACCEPT_ENCODING="gzip, deflate")

    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in response["Vary"]
    assert response["Content-Type"].startswith("text/javascript")
    assert _max_age(response["Cache-Control"]) >= DAY
    assert "immutable" in response["Cache-Control"]
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert len(body) < len(_plotly()) / 2
    assert gzip.decompress(body) == _plotly()


def test_plain_bytes_for_a_client_without_gzip(embedded: None) -> None:
    response = Client().get(URL, HTTP_ACCEPT_ENCODING="identity")

    assert response.status_code == 200
    assert "Content-Encoding" not in response
    assert b"".join(response.streaming_content) == _plotly()  # type: ignore[attr-defined]


def test_other_static_files_keep_short_caching_in_debug(embedded: None) -> None:
    response = Client().get("/static/css/app.css")

    assert response.status_code == 200
    assert _max_age(response["Cache-Control"]) == 0  # edited while runserver runs


@pytest.mark.parametrize(
    "url", ["/static/vendor/plotly/plotly-0.0.1.min.js", "/static/css/none.css"]
)
def test_an_unknown_static_file_is_not_found(embedded: None, url: str) -> None:
    # was a 500: the finder's None became [None] in django's find()
    assert Client().get(url).status_code == 404


# --- serving, as production has it ----------------------------------------------


@pytest.mark.django_db
def test_collectstatic_hashes_and_compresses_plotly(tmp_path: Path) -> None:
    root = tmp_path / "static-root"
    production = {
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
        "staticfiles": {
            "BACKEND": "config.staticfinders.CompressedManifestStaticFilesStorage"
        },
    }
    with override_settings(STATIC_ROOT=root, STORAGES=production, DEBUG=False):
        call_command(
            "collectstatic",
            interactive=False,
            verbosity=0,
            ignore_patterns=["admin", "rest_framework", "drf_spectacular_sidecar"],
        )
        url = Template(
            "{% load static %}{% static 'vendor/plotly/plotly.min.js' %}"
        ).render(Context())
        assert re.fullmatch(
            rf"/static/vendor/plotly/plotly-{re.escape(PLOTLY_JS_VERSION)}"
            r"\.min\.[0-9a-f]{12}\.js",
            url,
        ), url
        served = root / url.removeprefix("/static/")
        assert gzip.decompress(Path(f"{served}.gz").read_bytes()) == _plotly()

        response = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")

    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert _max_age(response["Cache-Control"]) >= DAY
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert gzip.decompress(body) == _plotly()


# --- serving, by a real runserver (the embedded default) ------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, deadline: float) -> Any:
    request = urllib.request.Request(  # noqa: S310 (loopback http)
        url, headers={"Accept-Encoding": "gzip"}
    )
    while True:
        try:
            return urllib.request.urlopen(request, timeout=30)  # noqa: S310 (loopback)
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_runserver_in_debug_sends_plotly_gzipped_and_cached(tmp_path: Path) -> None:
    port = _free_port()
    (tmp_path / "var").mkdir()  # as scripts/run makes it
    env = {
        **os.environ,
        "DJANGO_DEBUG": "True",
        "REPROGATE_VAR_DIR": str(tmp_path / "var"),
        "PYTHONUNBUFFERED": "1",
    }
    for production_only in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
        env.pop(production_only, None)  # the embedded default: SQLite under var/
    server = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "runserver",
            "--noreload",
            "--skip-checks",
            f"127.0.0.1:{port}",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        response = _get(f"http://127.0.0.1:{port}{URL}", time.monotonic() + 60)
        body = response.read()
        headers = response.headers
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)

    assert headers["Content-Encoding"] == "gzip", errors.decode()[-2000:]
    assert _max_age(headers["Cache-Control"]) >= DAY
    assert gzip.decompress(body) == _plotly()
    assert (tmp_path / "var" / "cache" / "static" / VERSIONED).is_file()
