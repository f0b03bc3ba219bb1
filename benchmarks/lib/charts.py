"""Plotly figures (plain figure JSON: ``{"data": [...], "layout": {...}}``) built
from selector output; templates embed them and plotly.js (served from
``static/vendor/plotly/``) draws them. Pure functions: no queries, no I/O.

A campaign's charts read its metric rows of ``CHARTED_METRICS``
(``campaign_chart_rows``), the
scenarios it ran (name, cache, concurrency, batch size) and the bundle's claims;
claimed values are drawn as reference markers wherever the metric, the statistic
and the scenario match what is plotted: claim against reproduced."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any, Final

LATENCY: Final = "ttft_ms"
THROUGHPUT: Final = "output_token_throughput_tps"
HIT_RATE: Final = "cache_hit_rate"
# the metric names the campaign charts read (their rows are all a page fetches)
CHARTED_METRICS: Final = (LATENCY, THROUGHPUT, HIT_RATE)
PERCENTILES: Final = ("p50", "p90", "p99")
CLAIM_MARKER: Final = {"symbol": "diamond-open", "size": 13, "line": {"width": 2}}
BASE_LAYOUT: Final = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 60},
    "height": 340,
    "legend": {"orientation": "h", "y": -0.25},
    "font": {"family": "system-ui, sans-serif", "size": 12},
}

Row = Mapping[str, Any]
Figure = dict[str, Any]


@dataclass(frozen=True)
class Chart:
    """One chart slot: a figure, or the reason there is none yet."""

    key: str
    title: str
    figure: Figure | None
    empty: str = "No data yet."


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    """The shared layout; every axis grows its margin to fit its tick labels and
    title (``automargin``), so long figures (1,200,000 IOPS) are never clipped."""
    layout = {**BASE_LAYOUT, "title": {"text": title}, **extra}
    for key in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        layout[key] = {"automargin": True, **layout[key]}
    for key in ("xaxis", "yaxis"):
        layout.setdefault(key, {"automargin": True})
    return layout


def _values(rows: Iterable[Row], name: str, stat: str) -> dict[str, list[float]]:
    """Per scenario, the values of one metric over the repetitions."""
    found: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        matches = row["name"] == name and row["stat"] == stat
        if matches and not row.get("scope") and _finite(row["value"]):
            found[str(row["scenario"])].append(float(row["value"]))
    return found


def _finite(value: Any) -> bool:
    """A plottable number (JSON has no NaN or infinity)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value)


def _unit(rows: Iterable[Row], name: str) -> str:
    return next((str(r["unit"]) for r in rows if r["name"] == name), "")


def _claims(claims: Iterable[Row], name: str, stat: str) -> dict[str, float]:
    """Claimed values of one metric and statistic, by scenario."""
    return {
        str(c.get("scenario") or ""): float(c["value"])
        for c in claims
        if c.get("metric") == name and c.get("stat") == stat
    }


def _ordered(scenarios: Sequence[Row], present: Iterable[str]) -> list[str]:
    """The campaign's scenario order, keeping only scenarios that have data."""
    present = set(present)
    names = [str(s["name"]) for s in scenarios if s.get("name") in present]
    return names + sorted(present - set(names))


def _claim_trace(name: str, x: list[Any], y: list[float]) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": x,
        "y": y,
        "marker": {**CLAIM_MARKER, "color": "#b42318"},
    }


def latency_percentiles(
    rows: Sequence[Row], scenarios: Sequence[Row], claims: Sequence[Row]
) -> Figure | None:
    """TTFT p50/p90/p99 per scenario (mean over repetitions), bars; claims as
    markers on the matching scenario."""
    traces, claimed_x, claimed_y = [], [], []
    for stat in PERCENTILES:
        values = _values(rows, LATENCY, stat)
        if not values:
            continue
        names = _ordered(scenarios, values)
        y = [fmean(values[n]) for n in names]
        traces.append({"type": "bar", "name": f"{stat} measured", "x": names, "y": y})
        for scenario, value in _claims(claims, LATENCY, stat).items():
            if scenario in values:
                claimed_x.append(scenario)
                claimed_y.append(value)
    if not traces:
        return None
    if claimed_x:
        traces.append(_claim_trace("claimed", claimed_x, claimed_y))
    unit = _unit(rows, LATENCY)
    layout = _layout(
        "Time to first token by scenario",
        barmode="group",
        yaxis={"title": {"text": f"TTFT ({unit})"}, "rangemode": "tozero"},
    )
    return {"data": traces, "layout": layout}


def _scenario_index(scenarios: Sequence[Row]) -> dict[str, Row]:
    return {str(s["name"]): s for s in scenarios if s.get("name")}


def throughput_vs_latency(
    rows: Sequence[Row], scenarios: Sequence[Row], claims: Sequence[Row]
) -> Figure | None:
    """Output tokens/s against TTFT p99 across the concurrency sweep: one line
    per (cache state, batch size), points in concurrency order."""
    latency = _values(rows, LATENCY, "p99")
    throughput = _values(rows, THROUGHPUT, "mean")
    index = _scenario_index(scenarios)
    groups: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for name in set(latency) & set(throughput):
        scenario = index.get(name, {})
        key = (str(scenario.get("cache", "?")), str(scenario.get("batch_size", "?")))
        groups[key].append((float(scenario.get("concurrency") or 0), name))
    traces = []
    for (cache, batch), members in sorted(groups.items()):
        members.sort()
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers+text",
                "name": f"{cache} · batch {batch}",
                "x": [fmean(latency[n]) for _, n in members],
                "y": [fmean(throughput[n]) for _, n in members],
                "text": [f"c{c:g}" for c, _ in members],
                "textposition": "top center",
            }
        )
    if not traces:
        return None
    claimed_latency = _claims(claims, LATENCY, "p99")
    claimed_tps = _claims(claims, THROUGHPUT, "mean")
    both = sorted(set(claimed_latency) & set(claimed_tps) & set(latency))
    if both:
        x, y = [claimed_latency[n] for n in both], [claimed_tps[n] for n in both]
        traces.append({**_claim_trace("claimed", x, y), "text": both})
    layout = _layout(
        "Throughput vs latency across the concurrency sweep",
        xaxis={"title": {"text": f"TTFT p99 ({_unit(rows, LATENCY)})"}},
        yaxis={"title": {"text": f"Output tokens/s ({_unit(rows, THROUGHPUT)})"}},
    )
    return {"data": traces, "layout": layout}


def _pair_label(scenario: Row) -> str:
    return f"c{scenario.get('concurrency', '?')} · b{scenario.get('batch_size', '?')}"


def warm_vs_cold(
    rows: Sequence[Row], scenarios: Sequence[Row], claims: Sequence[Row]
) -> Figure | None:
    """Cache-hit rate (left) and TTFT p99 (right), warm beside cold, for each
    concurrency and batch size."""
    index = _scenario_index(scenarios)
    panels = [(HIT_RATE, "mean", "x", "y"), (LATENCY, "p99", "x2", "y2")]
    traces = []
    for cache, color in (("cold", "#1f77b4"), ("warm", "#ff7f0e")):
        for metric, stat, xaxis, yaxis in panels:
            values = _values(rows, metric, stat)
            names = [
                n
                for n in _ordered(scenarios, values)
                if index.get(n, {}).get("cache") == cache
            ]
            if not names:
                continue
            traces.append(
                {
                    "type": "bar",
                    "name": cache,
                    "legendgroup": cache,
                    "showlegend": metric == HIT_RATE,
                    "marker": {"color": color},
                    "x": [_pair_label(index[n]) for n in names],
                    "y": [fmean(values[n]) for n in names],
                    "xaxis": xaxis,
                    "yaxis": yaxis,
                }
            )
    if not traces:
        return None
    for metric, stat, xaxis, yaxis in panels:
        claimed = _claims(claims, metric, stat)
        names = [n for n in claimed if n in index]
        if names:
            x = [_pair_label(index[n]) for n in names]
            trace = _claim_trace("claimed", x, [claimed[n] for n in names])
            shown = xaxis == "x" or not any(t["name"] == "claimed" for t in traces)
            traces.append(
                {**trace, "xaxis": xaxis, "yaxis": yaxis, "text": names}
                | {"legendgroup": "claimed", "showlegend": shown}
            )
    layout = _layout(
        "Warm vs cold cache",
        barmode="group",
        xaxis={"domain": [0, 0.45]},
        xaxis2={"domain": [0.55, 1], "anchor": "y2"},
        yaxis={"title": {"text": "Cache-hit rate"}, "rangemode": "tozero"},
        yaxis2={
            "title": {"text": f"TTFT p99 ({_unit(rows, LATENCY)})"},
            "anchor": "x2",
            "rangemode": "tozero",
        },
    )
    return {"data": traces, "layout": layout}


def run_to_run_spread(
    rows: Sequence[Row], scenarios: Sequence[Row], claims: Sequence[Row]
) -> Figure | None:
    """TTFT p99 of every repetition per scenario (box with all points)."""
    values = _values(rows, LATENCY, "p99")
    if not values:
        return None
    names = _ordered(scenarios, values)
    traces: list[dict[str, Any]] = [
        {
            "type": "box",
            "name": name,
            "y": values[name],
            "boxpoints": "all",
            "jitter": 0.3,
            "showlegend": False,
        }
        for name in names
    ]
    claimed = {n: v for n, v in _claims(claims, LATENCY, "p99").items() if n in values}
    if claimed:
        traces.append(_claim_trace("claimed", list(claimed), list(claimed.values())))
    repetitions = max(len(v) for v in values.values())
    layout = _layout(
        f"Run-to-run spread of TTFT p99 ({repetitions} repetition"
        f"{'s' if repetitions != 1 else ''} at most)",
        yaxis={"title": {"text": f"TTFT p99 ({_unit(rows, LATENCY)})"}},
    )
    return {"data": traces, "layout": layout}


CAMPAIGN_CHARTS: Final = (
    ("latency", "Latency percentiles by scenario", latency_percentiles),
    ("throughput", "Throughput vs latency", throughput_vs_latency),
    ("warm-cold", "Warm vs cold", warm_vs_cold),
    ("spread", "Run-to-run spread", run_to_run_spread),
)


def campaign_charts(
    rows: Sequence[Row],
    scenarios: Sequence[Row],
    claims: Sequence[Row],
    hit_rates: Sequence[Row] = (),
) -> list[Chart]:
    """The campaign page's charts, each a figure or an empty state: the four
    over the metrics, then the cache-hit rate over time of every run
    (``hit_rates``: ``campaign_hit_rate_series``)."""
    return [
        *(
            Chart(key, title, build(rows, scenarios, claims), "No metrics for it yet.")
            for key, title, build in CAMPAIGN_CHARTS
        ),
        Chart(
            "hit-rate",
            "Cache-hit rate over time",
            hit_rate_over_time(hit_rates, claims),
            "No run reported a cache_hit_rate series yet.",
        ),
    ]


def _points(raw: Any) -> list[tuple[float, float]]:
    return [
        (float(p[0]), float(p[1]))
        for p in raw or []
        if isinstance(p, list | tuple) and len(p) == 2 and all(map(_finite, p))
    ]


def hit_rate_over_time(series: Sequence[Row], claims: Sequence[Row]) -> Figure | None:
    """One line per run (``scenario_name``, ``repetition``, ``points``) of its
    cache-hit rate over time; each scenario's claimed mean as a dashed line."""
    traces: list[dict[str, Any]] = []
    for item in series:
        points = _points(item.get("points"))
        if points:
            label = f"{item['scenario_name']} #{item['repetition']}"
            x, y = [p[0] for p in points], [p[1] for p in points]
            traces.append(
                {"type": "scatter", "mode": "lines", "name": label, "x": x, "y": y}
            )
    if not traces:
        return None
    claimed = _claims(claims, HIT_RATE, "mean")
    shown = {str(item["scenario_name"]) for item in series}
    shapes = [_reference_line(v) for k, v in sorted(claimed.items()) if k in shown]
    unit = next((str(i.get("unit") or "") for i in series if i.get("unit")), "")
    layout = _layout(
        "Cache-hit rate over time, every run",
        shapes=shapes,
        xaxis={"title": {"text": "Time (s)"}},
        yaxis={
            "title": {"text": f"Cache-hit rate ({unit})" if unit else "Cache-hit rate"}
        },
    )
    return {"data": traces, "layout": layout}


def series_over_time(
    series: Sequence[Row], claims: Sequence[Row], scenario: str
) -> Figure | None:
    """A run's time series (``points``: ``[[t_s, value], ...]``), one line per
    series; a claimed mean of the same metric and scenario as a dashed line."""
    traces, shapes = [], []
    for item in series:
        points = [
            p
            for p in item.get("points") or []
            if isinstance(p, list | tuple) and len(p) == 2 and all(map(_finite, p))
        ]
        if not points:
            continue
        label = str(item["name"]) + (f" · {item['scope']}" if item.get("scope") else "")
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "x": [float(p[0]) for p in points],
                "y": [float(p[1]) for p in points],
            }
        )
        claimed = _claims(claims, str(item["name"]), "mean").get(scenario)
        if claimed is not None:
            shapes.append(_reference_line(claimed))
            traces.append(
                {
                    **_claim_trace(
                        f"{item['name']} claimed (mean)", [points[-1][0]], [claimed]
                    )
                }
            )
    if not traces:
        return None
    units = sorted({str(item.get("unit") or "") for item in series} - {""})
    layout = _layout(
        "Over time",
        shapes=shapes,
        xaxis={"title": {"text": "Time (s)"}},
        yaxis={"title": {"text": ", ".join(units)}},
    )
    return {"data": traces, "layout": layout}


def _reference_line(value: float) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": value,
        "y1": value,
        "line": {"dash": "dash", "color": "#b42318", "width": 1.5},
    }


def run_charts(
    series: Sequence[Row], claims: Sequence[Row], scenario: str
) -> list[Chart]:
    """The run page's chart: its series over time (cache-hit rate in the examples)."""
    figure = series_over_time(series, claims, scenario)
    return [
        Chart(
            "series",
            "Cache-hit rate and other series over time",
            figure,
            "No time series in this run's outputs.",
        )
    ]


def bundle_claims(manifest: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The manifest's claims that are well-formed enough to plot."""
    claims = (manifest or {}).get("claims")
    if not isinstance(claims, list):
        return []
    usable = []
    for claim in claims:
        if not isinstance(claim, dict):
            continue
        if _finite(claim.get("value")):
            usable.append(claim)
    return usable


def _rates(t_ms: Sequence[int], deltas: Sequence[float], scale: float) -> list[float]:
    """Per-interval deltas as rates per second (0 at the first sample)."""
    rates = [0.0]
    for i in range(1, min(len(t_ms), len(deltas))):
        span = (t_ms[i] - t_ms[i - 1]) / 1000
        rates.append(round(deltas[i] * scale / span, 3) if span > 0 else 0.0)
    return rates


def _progress_trace(document: Mapping[str, Any]) -> list[Figure]:
    """The harness's reported progress on the right axis: the charts' time
    axis is the runner's, so the two line up."""
    for s in document.get("series") or []:
        if s.get("source") == "harness" and "progress_permille" in s.get("fields", {}):
            values = [v / 10 for v in s["fields"]["progress_permille"]]
            seconds = [t / 1000 for t in s["t_ms"]]
            return [
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": "harness progress (%)",
                    "x": seconds,
                    "y": values,
                    "yaxis": "y2",
                    "line": {"dash": "dot", "shape": "hv"},
                }
            ]
    return []


def telemetry_charts(document: Mapping[str, Any] | None) -> list[Chart]:
    """The run page's telemetry charts (``reprogate.telemetry/v1``): each
    device's read and write IOPS, and the host's I/O pressure, over the run's
    time, with the harness's progress on the right axis."""
    empty = "No telemetry: the run did not start, or ran before the runner sampled."
    disk: list[Figure] = []
    pressure: list[Figure] = []
    for s in (document or {}).get("series") or []:
        fields, t_ms = s.get("fields") or {}, s.get("t_ms") or []
        seconds = [t / 1000 for t in t_ms]
        if s.get("source") == "diskstats":
            for field, label in (
                ("reads_completed", "read"),
                ("writes_completed", "write"),
            ):
                if any(fields.get(field) or ()):
                    disk.append(
                        {
                            "type": "scatter",
                            "mode": "lines",
                            "name": f"{s.get('device')} {label} IOPS",
                            "x": seconds,
                            "y": _rates(t_ms, fields[field], 1.0),
                        }
                    )
        elif s.get("source") == "pressure" and "io_full_us" in fields:
            pressure.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": "I/O pressure, full (% of time)",
                    "x": seconds,
                    "y": _rates(t_ms, fields["io_full_us"], 100 / 1e6),
                }
            )
    progress = _progress_trace(document or {})
    right = {
        "title": {"text": "progress (%)"},
        "overlaying": "y",
        "side": "right",
        "range": [0, 100],
    }

    def figure(traces: list[Figure], title: str, unit: str) -> Figure | None:
        if not traces:
            return None
        return {
            "data": traces + progress,
            "layout": _layout(
                title,
                xaxis={"title": {"text": "time since the harness started (s)"}},
                yaxis={"title": {"text": unit}, "rangemode": "tozero"},
                **({"yaxis2": right} if progress else {}),
            ),
        }

    return [
        Chart(
            "telemetry-disk",
            "Device I/O during the run",
            figure(disk, "Device IOPS", "IO/s"),
            empty,
        ),
        Chart(
            "telemetry-pressure",
            "I/O pressure during the run",
            figure(pressure, "I/O pressure stall", "% of time"),
            empty,
        ),
    ]
