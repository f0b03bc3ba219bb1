"""plotly.js's global styles as a static file, for the Content-Security-Policy.

On load, plotly.js adds its global CSS rules to a ``<style>`` element it creates,
which ``style-src 'self'`` refuses. It skips that when the page already holds an
element ``#plotly.js-style-global.no-inline-styles``: the lab pages link
``static/css/plotly.css`` so (templates/benchmarks/_charts_scripts.html). This
module writes that file from the installed plotly.js, whose rules are an object
literal in the bundle; tests/config/test_headers.py checks the file is current.
After upgrading plotly: ``python -m config.plotly_css``.

The map library in the bundle (MapLibre) adds its own ``<style>`` too unless an
element has the id ``maplibre_style_id`` finds; the template holds an empty one.
No chart draws a map, so its 80 KB of CSS are not served; a map chart would need
them as a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from config.staticfinders import PLOTLY_JS_VERSION, SOURCE

TARGET = Path(__file__).resolve().parent.parent / "static" / "css" / "plotly.css"
_END = '"Y .notifier-close:hover"'  # the object's last key
_PAIR = re.compile(r'"([^"]*)":(?:\'([^\']*)\'|"([^"]*)")')
_MAPLIBRE = re.compile(
    r'if\(!document\.getElementById\("(\w+)"\)\)'
    r'\{var \w+=document\.createElement\("style"\)'
)


def plotly_rules(bundle: str) -> list[tuple[str, str]]:
    """(selector, declarations) in the order plotly.js adds them (``X`` and ``Y``
    in its keys stand for the plot and the notifier, replaced as plotly.js does)."""
    end = bundle.index(_END)
    start = bundle.rindex('={"X', 0, end) + 1
    body = bundle[start : bundle.index("};for(", end) + 1]
    rules = []
    for key, single, double in _PAIR.findall(body):
        selector = " ," + key[1:] if key.startswith(",") else key
        selector = selector.replace("X", ".js-plotly-plot .plotly")
        rules.append((selector.replace("Y", ".plotly-notifier"), single or double))
    return rules


def plotly_css(bundle: str, version: str) -> str:
    """The rules last first: plotly.js inserts each at the top of its sheet."""
    rules = [
        f"{selector} {{ {declarations} }}"
        for selector, declarations in reversed(plotly_rules(bundle))
    ]
    head = (
        f"/* plotly.js {version}'s global styles, written by config/plotly_css.py"
        " (python -m config.plotly_css); do not edit. */"
    )
    return "\n".join([head, *rules]) + "\n"


def maplibre_style_id(bundle: str) -> str:
    """The id whose element tells MapLibre its styles are on the page."""
    found = _MAPLIBRE.search(bundle)
    if found is None:
        raise ValueError("plotly.js: MapLibre's style element not found")
    return found.group(1)


def current_css() -> str:
    return plotly_css(SOURCE.read_text(encoding="utf-8"), PLOTLY_JS_VERSION)


if __name__ == "__main__":
    TARGET.write_text(current_css(), encoding="utf-8")
