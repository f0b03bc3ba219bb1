"""``figures_svg``: Plotly figure JSON (the very figures the criterion pages show,
``gates.lib.charts``) drawn as vector SVG by kaleido, for a report to embed (as a
``data:`` image, which WeasyPrint draws as vectors).

One headless Chromium per process draws every chart (kaleido's sync server,
MathJax off: nothing is loaded from the network). It is started on the first
chart the process draws — in a Celery worker's own process, never before the
fork — and kept for the next report, stopped when the process exits, and started
afresh after a chart fails. A worker that renders reports starts it as its
process starts (``charts_warm_up``, from a background thread: the worker takes
tasks meanwhile), so its first report does not wait the seconds Chromium and
plotly.js take to start. Without a Chromium (none installed, ``BROWSER_PATH``
naming nothing runnable) a chart fails with ``ChartError`` at once. The SVG is
checked before a report embeds it: one ``<svg>`` element with no
script, no embedded raster image, no foreign HTML and no reference outside the
document, so a value a vendor supplied (a unit, a scenario name) that Plotly put
into the chart's text stays text (a link Plotly made of it is reduced to its
text). See docs/reports.md."""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

WIDTH: Final = 680  # px: the width of an A4 page's text at 96 dpi
HEIGHT: Final = 300
_LOCK = threading.Lock()  # kaleido's sync server is one per process
_running = False  # whether this process started it (under _LOCK)
_FORBIDDEN: Final = re.compile(
    r"<\s*(script|image|img|foreignObject|iframe|object|embed|use)\b"
    r"|<[^>]*\son[a-z]+\s*="
    r"|href\s*=\s*(?![\"']\s*#)"
    r"|url\(\s*(?![\"']?\s*#)",
    re.IGNORECASE,
)
# Plotly turns "<a href=...>" in a label (a unit is vendor text) into an SVG link:
# the report keeps the link's text and drops the link.
_LINK: Final = re.compile(r"<a\b[^>]*>|</a\s*>", re.IGNORECASE)


# Drawn by ``charts_warm_up``: one trace, so the tab has plotly.js loaded and run.
_WARM_UP_FIGURE: Final = {
    "data": [{"type": "scatter", "x": [0, 1], "y": [0, 1]}],
    "layout": {"title": {"text": "warm-up"}},
}


class ChartError(RuntimeError):
    """A chart could not be drawn, or kaleido returned something that is not a
    plain vector SVG."""


def checked_svg(svg: bytes | str) -> str:
    """``svg`` as text, without links, if it is one plain SVG document (see the
    module docstring); ``ChartError`` otherwise."""
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    text = _LINK.sub("", text.strip())
    if not text.startswith("<svg") or not text.endswith("</svg>"):
        raise ChartError("kaleido returned something other than an SVG document")
    found = _FORBIDDEN.search(text)
    if found:
        raise ChartError(f"the chart's SVG holds {found.group(0)!r}")
    return text


def chromium_path() -> str | None:
    """The Chromium kaleido would start (``BROWSER_PATH``, else one on ``PATH``
    or choreographer's download), if it is an executable file; else None."""
    from choreographer.browsers.chromium import Chromium

    path = Chromium.find_browser(skip_local=False)
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return str(path)
    return None


def _start() -> None:
    global _running
    if _running:
        return
    import kaleido  # type: ignore[import-untyped]

    # kaleido starts Chromium in its server's thread: one it cannot find ends that
    # thread, and every call would then wait for it for ever
    if chromium_path() is None:
        raise ChartError("no Chromium found (install chromium, or set BROWSER_PATH)")
    try:
        kaleido.start_sync_server(mathjax=False, silence_warnings=True)
    except Exception as error:  # choreographer: no Chromium, cannot start
        raise ChartError(f"Chromium could not be started: {error}") from error
    _running = True


def charts_stop() -> None:
    """Stop this process's Chromium, if it runs (at exit, and after a failure)."""
    global _running
    if not _running:
        return
    import kaleido

    _running = False
    kaleido.stop_sync_server(silence_warnings=True)


def _stop_at_exit() -> None:
    # at exit the log handlers' streams may be closed already (a test run's
    # captured output): kaleido's and choreographer's goodbyes are not logged
    import logging

    logging.disable(logging.CRITICAL)
    charts_stop()


atexit.register(_stop_at_exit)


def figures_svg(
    figures: Sequence[dict[str, Any]], *, width: int = WIDTH, height: int = HEIGHT
) -> list[str]:
    """Each figure as SVG text, in order."""
    if not figures:
        return []
    import kaleido

    options = {"format": "svg", "width": width, "height": height}
    with _LOCK:
        _start()
        try:
            drawn = [kaleido.calc_fig_sync(fig, opts=options) for fig in figures]
        except Exception as error:
            charts_stop()  # a Chromium in a bad state is not kept
            raise ChartError(f"a chart could not be drawn: {error}") from error
    return [checked_svg(svg) for svg in drawn]


def charts_warm_up() -> float:
    """Start this process's Chromium and draw one small chart (the tab loads and
    runs plotly.js), so that the next charts find both ready; the seconds it
    took. ``ChartError`` when Chromium cannot be started or draw."""
    started = time.perf_counter()
    figures_svg([_WARM_UP_FIGURE], width=200, height=100)
    return time.perf_counter() - started
