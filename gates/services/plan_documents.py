"""``default_plan``: the gate plan (``reprogate.gate-plan/v1``) a buyer
starts from for one vendor on one RFP, made from the vendor's bundle claims and
the contract terms. Pure: no database; the caller passes the manifest's claims and
the terms.

``terms`` is a small mapping:

- ``tolerance_pct`` (required): the contract's re-test tolerance band in percent
  (``Rfp.retest_tolerance_pct``), 0 to 100; every criterion's ``band.pct``.
- ``latency_ceiling_pct`` (optional, default ``None``: none): a stop-loss per
  latency claim — any single run whose value is more than this many percent over
  the claim (200: three times the claim) halts the gate. Off by default because
  neither the claims nor the RFP's terms give a sensible ceiling: one relative to
  the claim turns an over-claim (a FAIL and a re-test obligation) into a HALT (the
  demo's Bolt Storage measures its warm TTFT p50 at 3.9 times its claim), and an
  absolute ceiling (the demo's p99.9 TTFT over 2000 ms) is the buyer's service
  level, which the terms do not state; the buyer adds one when editing the plan.
- ``directions`` (optional): ``{metric: "lower" | "higher"}`` for metrics the
  defaults below do not know, or to override them.

Defaults, the same in every gate:

- three gates in this order: ``lab-validation`` (stage ``lab``), ``pilot`` (stage
  ``pilot``), ``rollout`` (stage ``rollout``); ``consecutive_passes`` 1;
  ``score`` ``{"pass_pct": 90, "warn_pct": 75}`` (Keptn's defaults).
- one criterion per claim: ``id`` the slug of metric (a trailing ``_ms``/``_us``/
  ``_ns`` dropped), stat and scenario (``ttft-p99-cold-c32``; ``-2``… if two slugs
  collide), ``claim`` the claimed value, ``band`` ``{"pct": tolerance_pct}``,
  ``min_runs`` 3, ``max_cv_pct`` 15, ``on_high_cv`` ``inconclusive``, ``blocking``
  true, ``weight`` 1.
- direction from the metric name (the runner contract's names): ``lower`` for latencies
  and times (ending in ``_ms``, ``_us``, ``_ns`` or ``_s`` other than a bandwidth
  ``_b_s``/``_kib_s``/``_mib_s``/``_gib_s``/``_kb_s``/``_mb_s``/``_gb_s``, or
  containing ``latency``) and for ``prefix_recompute_pct``,
  ``ssd_write_amplification``, ``*_error_rate``/``*_errors``; ``higher`` for
  throughput, IOPS, bandwidth, hit rates and utilisation (``_iops``, ``_rps``,
  ``_tps``, ``_qps``, ``throughput``, the bandwidth suffixes, ``hit_rate``,
  ``_util_pct``). Any other metric is refused with a problem naming the claim
  (``claims[4].metric``) unless ``directions`` names it: a wrong direction would
  turn a pass into a fail, so the plan does not guess.
- stop-loss: a latency ceiling per latency claim if the terms ask (above),
  ``env-drift`` (``drift_at_least`` ``major``: the lab's host no longer matches
  the vendor's environment manifest) and ``failed-run`` (``run_failed``).

Bad input (a claim that is not an object, a missing or non-positive value, a stat
outside the runner contract's list, two claims for the same metric, stat and scenario, a
tolerance out of range) is refused as well: ``PlanProblems`` lists every problem
with its path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from accounts.exceptions import ApplicationError, Problem
from gates.lib.engine.validate import STATS

SCHEMA: Final = "reprogate.gate-plan/v1"
GATES: Final = (("lab-validation", "lab"), ("pilot", "pilot"), ("rollout", "rollout"))
SCORE: Final = {"pass_pct": 90, "warn_pct": 75}
MIN_RUNS: Final = 3
MAX_CV_PCT: Final = 15
ON_HIGH_CV: Final = "inconclusive"
LATENCY_CEILING_PCT: Final[Decimal | None] = None

BANDWIDTH = re.compile(r"_(b|kb|mb|gb|kib|mib|gib)_s$")
LOWER_NAMES: Final = frozenset({"prefix_recompute_pct", "ssd_write_amplification"})
LOWER_SUFFIXES: Final = ("_ms", "_us", "_ns", "_s", "_error_rate", "_errors")
HIGHER_SUFFIXES: Final = ("_iops", "_rps", "_tps", "_qps", "_util_pct", "hit_rate")
TIME_SUFFIX = re.compile(r"_(ms|us|ns)$")


class PlanProblems(ApplicationError):
    """The claims or terms do not make a plan; ``problems`` say where and why."""


def metric_direction(metric: str) -> str | None:
    """``lower``, ``higher`` or ``None`` (not known) for a canonical metric name."""
    if metric in LOWER_NAMES:
        return "lower"
    if BANDWIDTH.search(metric) or "throughput" in metric:
        return "higher"
    if metric.endswith(HIGHER_SUFFIXES):
        return "higher"
    if "latency" in metric or metric.endswith(LOWER_SUFFIXES):
        return "lower"
    return None


def is_latency(metric: str) -> bool:
    """A time (latency, load time): the metrics that get a stop-loss ceiling."""
    return metric_direction(metric) == "lower" and (
        "latency" in metric or metric.endswith(("_ms", "_us", "_ns", "_s"))
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def criterion_slug(metric: str, stat: str, scenario: str) -> str:
    return "-".join(_slug(p) for p in (TIME_SUFFIX.sub("", metric), stat, scenario))


def _number(value: Decimal) -> int | float:
    """A decimal as the JSON number it reads as (10.00 → 10, 7.5 → 7.5)."""
    return int(value) if value == value.to_integral_value() else float(value)


@dataclass(frozen=True)
class _Claim:
    metric: str
    stat: str
    scenario: str
    value: float


def _terms(
    terms: Mapping[str, Any], found: list[Problem]
) -> tuple[Decimal, Decimal | None, dict[str, str]]:
    def pct(key: str, default: Decimal | None, top: Decimal | None) -> Decimal | None:
        raw = terms.get(key, default)
        if raw is None:
            return None
        try:
            if isinstance(raw, bool):
                raise InvalidOperation
            value = Decimal(str(raw))
        except (InvalidOperation, ValueError):
            found.append(Problem("invalid", "must be a number", f"terms.{key}"))
            return default
        if not value.is_finite() or value < 0 or (top is not None and value > top):
            limit = f"between 0 and {top}" if top is not None else "0 or more"
            found.append(Problem("invalid", f"must be {limit}", f"terms.{key}"))
            return default
        return value

    if "tolerance_pct" not in terms:
        found.append(Problem("required", "is required", "terms.tolerance_pct"))
    tolerance = pct("tolerance_pct", Decimal(10), Decimal(100)) or Decimal(0)
    ceiling = pct("latency_ceiling_pct", LATENCY_CEILING_PCT, None)
    directions: dict[str, str] = {}
    raw = terms.get("directions") or {}
    if not isinstance(raw, Mapping):
        found.append(Problem("invalid", "must be an object", "terms.directions"))
        raw = {}
    for metric, direction in raw.items():
        if direction not in ("lower", "higher"):
            path = f"terms.directions.{metric}"
            found.append(Problem("invalid", 'must be "lower" or "higher"', path))
        else:
            directions[str(metric)] = direction
    return tolerance, ceiling, directions


def _claims(
    claims: Sequence[Any], directions: Mapping[str, str], found: list[Problem]
) -> list[tuple[_Claim, str]]:
    result: list[tuple[_Claim, str]] = []
    seen: dict[tuple[str, str, str], int] = {}
    if isinstance(claims, (str, bytes)) or not isinstance(claims, Sequence):
        found.append(Problem("invalid", "must be a list", "claims"))
        return result
    if not claims:
        found.append(Problem("empty", "the bundle makes no claim to gate", "claims"))
    for index, claim in enumerate(claims):
        at = f"claims[{index}]"
        if not isinstance(claim, Mapping):
            found.append(Problem("invalid", "must be an object", at))
            continue
        bad = len(found)
        for key in ("metric", "stat", "scenario"):
            if not isinstance(claim.get(key), str) or not claim.get(key):
                found.append(
                    Problem("invalid", "must be a non-empty string", f"{at}.{key}")
                )
        value = claim.get("value")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            found.append(Problem("invalid", "must be a number over 0", f"{at}.value"))
        if len(found) > bad or not isinstance(value, (int, float)):
            continue  # (a value that is not a number is a problem already)
        metric, stat, scenario = claim["metric"], claim["stat"], claim["scenario"]
        if stat not in STATS:
            message = "must be one of " + ", ".join(STATS)
            found.append(Problem("invalid", message, f"{at}.stat"))
            continue
        direction = directions.get(metric) or metric_direction(metric)
        if direction is None:
            message = (
                f"{metric}: no known direction (lower or higher is better); "
                "name it in the terms' directions"
            )
            found.append(Problem("unknown_metric", message, f"{at}.metric"))
            continue
        identity = (metric, stat, scenario)
        if identity in seen:
            message = (
                f"claims {metric} {stat} in {scenario} again (claims[{seen[identity]}])"
            )
            found.append(Problem("duplicate", message, at))
            continue
        seen[identity] = index
        result.append((_Claim(metric, stat, scenario, float(value)), direction))
    return result


def _ceiling(claim: _Claim, pct: Decimal, criterion_id: str) -> dict[str, Any]:
    limit = Decimal(str(claim.value)) * (1 + pct / 100)
    return {
        "id": f"ceiling-{criterion_id}",
        "metric": claim.metric,
        "stat": claim.stat,
        "scenario": claim.scenario,
        "above": _number(limit),
    }


def default_plan(
    *,
    rfp_reference: str,
    vendor: str,
    claims: Sequence[Any],
    terms: Mapping[str, Any],
) -> dict[str, Any]:
    """The default ``reprogate.gate-plan/v1`` (see the module docstring); raises
    ``PlanProblems`` listing every problem of the claims and terms."""
    found: list[Problem] = []
    tolerance, ceiling_pct, directions = _terms(terms, found)
    judged = _claims(claims, directions, found)
    if found:
        raise PlanProblems(
            "These claims and terms do not make a gate plan.",
            code="invalid_plan_inputs",
            problems=tuple(found),
        )
    criteria: list[dict[str, Any]] = []
    ceilings: list[dict[str, Any]] = []
    ids: set[str] = set()
    for claim, direction in judged:
        base = criterion_slug(claim.metric, claim.stat, claim.scenario)
        criterion_id, n = base, 1
        while criterion_id in ids:
            n += 1
            criterion_id = f"{base}-{n}"
        ids.add(criterion_id)
        criteria.append(
            {
                "id": criterion_id,
                "metric": claim.metric,
                "stat": claim.stat,
                "scenario": claim.scenario,
                "direction": direction,
                "claim": claim.value,
                "band": {"pct": _number(tolerance)},
                "min_runs": MIN_RUNS,
                "max_cv_pct": MAX_CV_PCT,
                "on_high_cv": ON_HIGH_CV,
                "blocking": True,
                "weight": 1,
            }
        )
        if ceiling_pct is not None and is_latency(claim.metric):
            ceilings.append(_ceiling(claim, ceiling_pct, criterion_id))
    stop_loss = [
        *ceilings,
        {"id": "env-drift", "drift_at_least": "major"},
        {"id": "failed-run", "run_failed": True},
    ]
    return {
        "schema": SCHEMA,
        "rfp": rfp_reference,
        "vendor": vendor,
        "gates": [
            {
                "name": name,
                "stage": stage,
                "consecutive_passes": 1,
                "score": dict(SCORE),
                "criteria": [dict(c, band=dict(c["band"])) for c in criteria],
                "stop_loss": [dict(s) for s in stop_loss],
            }
            for name, stage in GATES
        ],
    }


def rfp_terms(rfp: Any) -> dict[str, Any]:
    """The terms ``default_plan`` reads from an RFP's contract terms."""
    return {"tolerance_pct": rfp.retest_tolerance_pct}
