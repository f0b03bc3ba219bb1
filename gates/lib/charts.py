"""Plotly figures of the gate pages (plain figure JSON, as ``benchmarks.lib.charts``
builds them; templates embed the JSON and plotly.js is served locally from
``static/vendor/plotly/``). Pure functions: no queries, no I/O."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from benchmarks.lib.charts import BASE_LAYOUT, Chart

Figure = dict[str, Any]
COLOURS: Final = {
    "PASS": "#1a7f37",
    "WARN": "#8a5a00",
    "FAIL": "#b42318",
    "INCONCLUSIVE": "#475467",
}
CLAIM: Final = "#6941c6"


def _finite(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value)


def criterion_repetitions(
    *,
    repetitions: Sequence[Any],
    claim: float | None,
    limit: float | None,
    unit: str,
    verdict: str = "",
    ci: tuple[float | None, float | None] = (None, None),
) -> Figure | None:
    """Every repetition's value of one criterion (x: the run's repetition, hover:
    its run id and whether it was counted) against the claim (a line) and the
    tolerance band between the claim and the limit (shaded); the median's
    confidence interval as a dotted band. None when no run reported a value.

    ``repetitions``: objects with ``run_id``, ``repetition``, ``value`` and
    ``counted`` (``gates.selectors.evaluations.Repetition``)."""
    points = [r for r in repetitions if _finite(r.value)]
    if not points:
        return None
    xs = [r.repetition for r in points]
    low, high = min(xs) - 0.5, max(xs) + 0.5
    suffix = f" {unit}" if unit else ""
    colour = COLOURS.get(verdict, COLOURS["INCONCLUSIVE"])
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "repetitions",
            "x": xs,
            "y": [r.value for r in points],
            "customdata": [r.run_id for r in points],
            "text": [
                f"run {r.run_id}{'' if r.counted else ' (not counted)'}" for r in points
            ],
            "hovertemplate": (
                f"%{{text}}<br>%{{y}}{suffix}<br>click: open the run<extra></extra>"
            ),
            "marker": {
                "size": 10,
                "color": [colour if r.counted else "#98a2b3" for r in points],
            },
        }
    ]
    shapes: list[dict[str, Any]] = []
    if _finite(claim):
        data.append(_line("claim", claim, low, high, CLAIM, "solid", suffix))
    if _finite(limit):
        data.append(_line("limit", limit, low, high, COLOURS["FAIL"], "dash", suffix))
    if _finite(claim) and _finite(limit):
        shapes.append(_band(claim, limit, "rgba(105, 65, 198, 0.12)"))
    if _finite(ci[0]) and _finite(ci[1]):
        shapes.append(_band(ci[0], ci[1], "rgba(71, 84, 103, 0.10)", dot=True))
    layout = {
        **BASE_LAYOUT,  # the page's caption titles the chart
        "margin": {"l": 60, "r": 20, "t": 20, "b": 60},
        "xaxis": {"title": {"text": "repetition"}, "dtick": 1},
        "yaxis": {"title": {"text": unit or "value"}},
        "shapes": shapes,
    }
    return {"data": data, "layout": layout}


def _line(
    name: str, y: Any, x0: float, x1: float, colour: str, dash: str, suffix: str
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": f"{name} {y}{suffix}",
        "x": [x0, x1],
        "y": [y, y],
        "hoverinfo": "name",
        "line": {"color": colour, "dash": dash, "width": 2},
    }


def _band(y0: Any, y1: Any, fill: str, *, dot: bool = False) -> dict[str, Any]:
    return {
        "type": "rect",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": min(y0, y1),
        "y1": max(y0, y1),
        "fillcolor": fill,
        "line": {"width": 1 if dot else 0, "dash": "dot", "color": "#98a2b3"},
        "layer": "below",
    }


def criterion_chart(page: Any) -> Chart:
    """The criterion page's chart slot (``gates.selectors.evaluations.
    CriterionPage``)."""
    row = page.latest
    title = f"{page.criterion}: every repetition of the latest evaluation"
    if row is None:
        return Chart("criterion", title, None, "Not evaluated yet.")
    figure = criterion_repetitions(
        repetitions=page.repetitions,
        claim=row.claim,
        limit=row.limit,
        unit=page.unit,
        verdict=row.verdict,
        ci=(row.ci_low, row.ci_high),
    )
    return Chart(
        "criterion", title, figure, "No run of this scenario reported the metric."
    )
