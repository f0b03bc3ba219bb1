"""The sentences of an evaluation: each criterion's ``reason`` names the claim,
the band, the measured estimate and interval, the runs, and what would change the
verdict; each triggered stop-loss names the runs that triggered it."""

from __future__ import annotations

from decimal import Context, Decimal
from typing import Any, Final

SHOWN_RUNS: Final = 5
_SIX: Final = Context(prec=6)


def fmt(value: Decimal) -> str:
    """A limit or claim as a reader writes it: ``198``, ``0.3``, ``1.5``."""
    text = format(value.normalize(), "f")
    return text


def fmt_measured(value: Decimal) -> str:
    """A measured number to 6 significant digits, trailing zeros as measured."""
    return format(_SIX.plus(value), "f")


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


def what(c: dict[str, Any]) -> str:
    return f"{c['metric']} {c['stat']} in {c['scenario']}"


def claim_part(
    c: dict[str, Any],
    limit: Decimal,
    unit: str,
    baseline: tuple[Decimal, int] | None = None,
) -> str:
    """What the measurement is held to: the claim and band, the threshold, or
    (``baseline``: its median and number of runs) the buyer's baseline."""
    u = _unit(unit)
    side = "up to" if c["direction"] == "lower" else "down to"
    if baseline is not None:
        base, n = baseline
        sign = "+" if c["direction"] == "lower" else "-"
        pct = fmt(Decimal(repr(c["baseline"]["pct"])))
        return (
            f"the current infrastructure's baseline median {fmt_measured(base)}{u} "
            f"in {c['baseline']['scenario']} over {count(n)}, accepted {side} "
            f"{fmt(limit)}{u} ({sign}{pct} %)"
        )
    if "threshold" in c:
        most = "at most" if c["direction"] == "lower" else "at least"
        return f"required {most} {fmt(limit)}{u}"
    band = c["band"]
    sign = "+" if c["direction"] == "lower" else "-"
    width = f"{sign}{fmt(Decimal(repr(band['pct'])))} %" if "pct" in band else (
        f"{sign}{fmt(Decimal(repr(band['abs'])))}{u}"
    )  # fmt: skip
    claim = Decimal(repr(c["claim"]))
    return f"claimed {fmt(claim)}{u}, accepted {side} {fmt(limit)}{u} ({width})"


def baseline_missing(c: dict[str, Any]) -> str:
    sign = "+" if c["direction"] == "lower" else "-"
    pct = fmt(Decimal(repr(c["baseline"]["pct"])))
    return (
        f"held to the current infrastructure's baseline in "
        f"{c['baseline']['scenario']} ({sign}{pct} %)"
    )


def measured_part(
    estimate: Decimal, ci: tuple[Decimal, Decimal], n: int, unit: str
) -> str:
    runs = "1 run" if n == 1 else f"{n} runs"
    return (
        f"measured median {fmt_measured(estimate)}{_unit(unit)}, 95 % interval "
        f"{fmt_measured(ci[0])}\N{EN DASH}{fmt_measured(ci[1])}{_unit(unit)} "
        f"over {runs}"
    )


def runs_list(run_ids: list[str]) -> str:
    shown = ", ".join(run_ids[:SHOWN_RUNS])
    more = len(run_ids) - SHOWN_RUNS
    return shown + (f" and {more} more" if more > 0 else "")


def count(n: int, word: str = "run") -> str:
    return f"1 {word}" if n == 1 else f"{n} {word}s"


def more_runs(n: int) -> str:
    return "1 more run" if n == 1 else f"{n} more runs"
