"""``figures_svg``: Plotly figure JSON (the very figures the criterion pages show,
``gates.charts``) drawn as vector SVG by kaleido, for a report to embed (as a
``data:`` image, which WeasyPrint draws as vectors).

One headless Chromium serves the whole batch (kaleido's sync server, MathJax off:
nothing is loaded from the network); it is stopped afterwards. The SVG is
checked before a report embeds it: one ``<svg>`` element with no
script, no embedded raster image, no foreign HTML and no reference outside the
document, so a value a vendor supplied (a unit, a scenario name) that Plotly put
into the chart's text stays text (a link Plotly made of it is reduced to its
text). See docs/reports.md."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any, Final

WIDTH: Final = 680  # px: the width of an A4 page's text at 96 dpi
HEIGHT: Final = 300
_LOCK = threading.Lock()  # kaleido's sync server is one per process
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


def figures_svg(
    figures: Sequence[dict[str, Any]], *, width: int = WIDTH, height: int = HEIGHT
) -> list[str]:
    """Each figure as SVG text, in order (one Chromium for the batch)."""
    if not figures:
        return []
    import kaleido  # type: ignore[import-untyped]

    options = {"format": "svg", "width": width, "height": height}
    with _LOCK:
        try:
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
        except Exception as error:  # choreographer: no Chromium, cannot start
            raise ChartError(f"Chromium could not be started: {error}") from error
        try:
            drawn = [kaleido.calc_fig_sync(fig, opts=options) for fig in figures]
        except Exception as error:
            raise ChartError(f"a chart could not be drawn: {error}") from error
        finally:
            kaleido.stop_sync_server(silence_warnings=True)
    return [checked_svg(svg) for svg in drawn]
