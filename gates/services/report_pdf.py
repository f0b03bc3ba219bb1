"""``render_pdf``: a report template rendered by Django (autoescaped) and laid out
by WeasyPrint into a PDF, without any network.

The HTML is laid out against a fixed origin that never resolves
(``https://reprogate.invalid/``) and a URL fetcher that serves only the
project's static files under ``/static/`` on that origin, found by Django's
staticfiles finders; every other URL (``http``, ``https``, ``file``, ``ftp``,
another host, a path outside ``/static/`` or climbing out of it) is refused, so
a string in a report (vendor names, reasons, RFP titles are untrusted) can never
make the renderer fetch anything. ``data:`` URLs are decoded in process.

``renderers_warm_up``: what a worker that renders reports runs as its process
starts (``gates.tasks``, in a background thread): Chromium for the charts and
one small page through WeasyPrint (its fonts), so the first report costs what
the next ones do. See docs/reports.md."""

from __future__ import annotations

import io
import logging
import mimetypes
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import weasyprint  # type: ignore[import-untyped]
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from pyhanko.pdf_utils.misc import PdfError
from pyhanko.pdf_utils.reader import PdfFileReader
from weasyprint.urls import (  # type: ignore[import-untyped]
    URLFetcher,
    URLFetcherResponse,
)

logger = logging.getLogger(__name__)

# WeasyPrint lays out one document at a time in a process: a report's, or the
# warm-up's while the worker has just started.
_LAYOUT_LOCK: Final = threading.Lock()
ORIGIN: Final = "https://reprogate.invalid"
BASE_URL: Final = f"{ORIGIN}/"
STATIC_PREFIX: Final = "/static/"


class ReportFetchRefused(ValueError):
    """A report asked for a resource that is not one of the project's static
    files (WeasyPrint logs it and leaves the resource out)."""


class StaticOnlyFetcher(URLFetcher):
    """WeasyPrint's URL fetcher for reports: the project's static files and
    ``data:`` URLs, nothing else."""

    def __init__(self) -> None:
        super().__init__(allowed_protocols=("data",), fail_on_errors=False)

    def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
        if url.lower().startswith("data:"):
            return super().fetch(url, headers)
        return URLFetcherResponse(url, static_bytes(url), _content_type(url))


def static_bytes(url: str) -> bytes:
    """The bytes of the static file ``url`` names on the report origin; raises
    ``ReportFetchRefused`` for any other URL."""
    parts = urlsplit(url)
    if (
        f"{parts.scheme}://{parts.netloc}".lower() != ORIGIN
        or parts.query
        or not parts.path.startswith(STATIC_PREFIX)
    ):
        raise ReportFetchRefused(f"A report may not fetch {url!r}.")
    relative = unquote(parts.path.removeprefix(STATIC_PREFIX))
    segments = relative.split("/")
    if not relative or any(s in {"", ".", ".."} or "\\" in s for s in segments):
        raise ReportFetchRefused(f"A report may not fetch {url!r}.")
    found = finders.find(relative)
    if not isinstance(found, str) or not Path(found).is_file():
        raise ReportFetchRefused(f"No static file {relative!r} for a report.")
    return Path(found).read_bytes()


def _content_type(url: str) -> dict[str, str]:
    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    return {"Content-Type": guessed or "application/octet-stream"}


def render_html(template_name: str, context: Mapping[str, Any]) -> str:
    """The report's HTML (Django's template engine, autoescaping on)."""
    return render_to_string(template_name, dict(context))


def render_pdf(template_name: str, context: Mapping[str, Any]) -> bytes:
    """The PDF of the report template ``template_name`` with ``context``."""
    html = render_html(template_name, context)
    document = weasyprint.HTML(
        string=html, base_url=BASE_URL, url_fetcher=StaticOnlyFetcher()
    )
    with _LAYOUT_LOCK:
        pdf = document.write_pdf()
    if not isinstance(pdf, bytes):  # write_pdf() without a target returns bytes
        raise TypeError("WeasyPrint returned no PDF bytes")
    return pdf


def count_pages(pdf: bytes) -> int:
    """The page count of a PDF (its page tree's ``/Count``, after any
    incremental update such as a signature); ``ValueError`` if it is none."""
    try:
        return int(PdfFileReader(io.BytesIO(pdf)).root["/Pages"]["/Count"])
    except (PdfError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"not a PDF with a page tree: {error}") from error


_WARM_UP_HTML: Final = (
    '<link rel="stylesheet" href="/static/css/report.css">'
    "<h1>ReproGate</h1><p>Warm-up <code>0123</code> <strong>pass</strong></p>"
)


def renderers_warm_up() -> dict[str, float | str]:
    """Start this process's chart Chromium (``charts_warm_up``, in a thread of
    its own, as it mostly waits for Chromium) while WeasyPrint lays out one page
    with the report's stylesheet; seconds each took, or why it failed (logged
    as a warning: the worker goes on, and a report tries again)."""
    from gates.lib.report_charts import ChartError, charts_warm_up

    outcome: dict[str, float | str] = {}

    def charts() -> None:
        try:
            outcome["charts"] = charts_warm_up()
        except ChartError as error:
            outcome["charts"] = str(error)

    thread = threading.Thread(target=charts, name="report-charts-warm-up")
    thread.start()
    started = time.perf_counter()
    try:
        document = weasyprint.HTML(
            string=_WARM_UP_HTML, base_url=BASE_URL, url_fetcher=StaticOnlyFetcher()
        )
        with _LAYOUT_LOCK:
            document.write_pdf()
        outcome["pdf"] = time.perf_counter() - started
    except Exception as error:  # a warm-up never stops a worker
        outcome["pdf"] = f"{type(error).__name__}: {error}"
    thread.join()
    for part, value in outcome.items():
        if isinstance(value, str):
            logger.warning("report %s warm-up failed: %s", part, value)
    logger.info("report renderers warmed up: %s", outcome)
    return outcome
