"""``evaluate_plan(plan, results)``: the gate rules, one evaluation document
per gate (formulas: ``gates.lib.engine``'s docstring)."""

from __future__ import annotations

import math
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext
from fractions import Fraction
from typing import Any, Final

from gates.lib.engine import reasons as say
from gates.lib.engine.documents import EVALUATION_SCHEMA, sha256_hex
from gates.lib.engine.statistics import (
    CI_LEVEL,
    bootstrap_median_ci,
    criterion_seed,
    cv_pct,
    dec,
    median,
)
from gates.lib.engine.validate import (
    DRIFT_LEVELS,
    InvalidDocument,
    Problem,
    checks_named,
    plan_problems,
    results_problems,
)

MAX_MORE_RUNS: Final = 100
POINTS: Final = {
    "PASS": Fraction(1),
    "WARN": Fraction(1, 2),
    "INCONCLUSIVE": Fraction(1, 2),  # non-blocking and not shown to pass: as WARN
    "FAIL": Fraction(0),
}
_CENT: Final = Decimal("0.01")

Row = tuple[str, float, str]  # run id, value, unit


class _Index:
    """The results document read once: values of the vendor's succeeded runs per
    (scenario, metric, stat), every vendor run's values per (metric, stat), and
    the baseline's succeeded runs per (scenario, metric, stat), in document
    order. Baseline runs (``"role": "baseline"``) are never judged as the
    vendor's: they only give baseline criteria their limit."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.judged: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
        self.any_run: dict[tuple[str, str], list[tuple[str, str, float, str]]] = (
            defaultdict(list)
        )
        self.baseline: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
        self.runs: list[dict[str, Any]] = []
        for run in results["runs"]:
            if run.get("role", "vendor") == "baseline":
                if run["status"] == "succeeded":
                    for m in run["metrics"]:
                        key = (run["scenario"], m["name"], m["stat"])
                        self.baseline[key].append((run["id"], m["value"], m["unit"]))
                continue
            self.runs.append(run)
            ok = run["status"] == "succeeded"
            for m in run["metrics"]:
                row = (run["id"], m["value"], m["unit"])
                if ok:
                    self.judged[(run["scenario"], m["name"], m["stat"])].append(row)
                self.any_run[(m["name"], m["stat"])].append(
                    (run["id"], run["scenario"], m["value"], m["unit"])
                )


def validate_documents(plan: Any, results: Any) -> list[Problem]:
    """Every problem of both documents (``Problem.path`` prefixed ``plan:`` /
    ``results:`` is the caller's business; here they come plan first)."""
    return [*plan_problems(plan), *results_problems(results)]


def evaluate_plan(
    plan: dict[str, Any], results: dict[str, Any]
) -> list[dict[str, Any]]:
    """One ``reprogate.evaluation/v1`` document per gate of ``plan``, in plan order.
    Raises ``InvalidDocument`` with every problem of either document."""
    problems = validate_documents(plan, results)
    if problems:
        raise InvalidDocument(problems)
    digests = {"plan_sha256": sha256_hex(plan), "results_sha256": sha256_hex(results)}
    index = _Index(results)
    # the same decimal arithmetic whatever context the caller has set
    with localcontext(Context(prec=28, rounding=ROUND_HALF_EVEN)):
        return [_gate(gate, index, digests) for gate in plan["gates"]]


def _gate(
    gate: dict[str, Any], index: _Index, digests: dict[str, str]
) -> dict[str, Any]:
    plan_sha, results_sha = digests["plan_sha256"], digests["results_sha256"]
    criteria = [
        _criterion(
            c, index, criterion_seed(plan_sha, results_sha, gate["name"], c["id"])
        )
        for c in gate["criteria"]
    ]
    stop_loss = [_stop_loss(s, index) for s in gate["stop_loss"]]
    blocked = {
        done["verdict"]
        for c, done in zip(gate["criteria"], criteria, strict=True)
        if c["blocking"]
    }
    score = _score(gate["criteria"], criteria)
    if any(s["triggered"] for s in stop_loss):
        verdict = "HALTED"
    elif "FAIL" in blocked:
        verdict = "FAIL"
    elif "INCONCLUSIVE" in blocked:
        verdict = "INCONCLUSIVE"
    elif score >= dec(gate["score"]["pass_pct"]):
        verdict = "PASS"
    elif score >= dec(gate["score"]["warn_pct"]):
        verdict = "WARN"
    else:
        verdict = "FAIL"
    return {
        "schema": EVALUATION_SCHEMA,
        "gate": gate["name"],
        "verdict": verdict,
        "score_pct": float(score),
        "inputs": dict(digests),
        "stop_loss": stop_loss,
        "criteria": criteria,
    }


def _score(plan_criteria: list[dict[str, Any]], done: list[dict[str, Any]]) -> Decimal:
    """Sum of weight x points / sum of weights x 100, exact, then rounded to 2
    decimals (half even)."""
    total = sum((Fraction(dec(c["weight"])) for c in plan_criteria), Fraction(0))
    got = sum(
        (Fraction(dec(c["weight"])) * POINTS[d["verdict"]]
         for c, d in zip(plan_criteria, done, strict=True)),
        Fraction(0),
    )  # fmt: skip
    exact = got / total * 100
    return (Decimal(exact.numerator) / Decimal(exact.denominator)).quantize(
        _CENT, rounding=ROUND_HALF_EVEN
    )


def limit_of(c: dict[str, Any]) -> Decimal:
    """The limit in decimal, on the worse side of the claim (or the threshold)."""
    if "threshold" in c:
        return dec(c["threshold"])
    claim, band = dec(c["claim"]), c["band"]
    sign = 1 if c["direction"] == "lower" else -1
    if "pct" in band:
        return claim * (1 + sign * dec(band["pct"]) / 100)
    return claim + sign * dec(band["abs"])


def _baseline_limit(
    c: dict[str, Any], rows: list[Row]
) -> tuple[Decimal, Decimal] | None:
    """The baseline's median and the limit pct % from it on the worse side
    (None: the baseline did not measure it)."""
    if not rows:
        return None
    base = median(sorted(dec(r[1]) for r in rows))
    sign = 1 if c["direction"] == "lower" else -1
    return base, base * (1 + sign * dec(c["baseline"]["pct"]) / 100)


def _criterion(c: dict[str, Any], index: _Index, seed: int) -> dict[str, Any]:
    rows = index.judged.get((c["scenario"], c["metric"], c["stat"]), [])
    out: dict[str, Any] = {
        "id": c["id"], "verdict": "FAIL", "reason": "", "runs": [r[0] for r in rows],
        "values": [r[1] for r in rows], "estimate": None, "ci": None,
        "ci_level": CI_LEVEL, "limit": None, "cv_pct": None,
        "more_runs_needed": 0, "seed": seed,
    }  # fmt: skip
    head = f"{say.what(c)}: "
    unit = next((r[3] for r in index.any_run.get((c["metric"], c["stat"]), [])), "")
    base: tuple[Decimal, int] | None = None  # the baseline's median and runs
    if "baseline" in c:
        scenario = c["baseline"]["scenario"]
        base_rows = index.baseline.get((scenario, c["metric"], c["stat"]), [])
        found = _baseline_limit(c, base_rows)
        out["baseline"] = {
            "scenario": scenario,
            "runs": [r[0] for r in base_rows],
            "values": [r[1] for r in base_rows],
            "median": None if found is None else float(found[0]),
        }
        if found is None:
            out["reason"] = (
                f"{head}{say.baseline_missing(c)}; baseline not measured: no "
                f"succeeded baseline run of {scenario} reports {c['metric']} "
                f"{c['stat']}. It is judged once the lab's baseline campaign "
                "measures it."
            )
            return _non_blocking(c, out)
        base, limit = (found[0], len(base_rows)), found[1]
        unit = unit or base_rows[0][2]
    else:
        limit = limit_of(c)
    out["limit"] = float(limit)
    if not rows:
        out["reason"] = (
            f"{head}{say.claim_part(c, limit, unit, base)}; not measured: no "
            f"succeeded run of {c['scenario']} reports {c['metric']} {c['stat']}. "
            "It is judged once a succeeded run reports it."
        )
        return _non_blocking(c, out)
    unit, n = rows[0][2], len(rows)
    values = sorted(dec(r[1]) for r in rows)
    estimate = median(values)
    ci = bootstrap_median_ci(values, seed)
    cv = cv_pct([r[1] for r in rows])
    cv_shown = None if cv is None else dec(cv).quantize(_CENT, rounding=ROUND_HALF_EVEN)
    out.update(
        estimate=float(estimate),
        ci=[float(ci[0]), float(ci[1])],
        cv_pct=None if cv_shown is None else float(cv_shown),
    )
    head += (
        f"{say.claim_part(c, limit, unit, base)}; "
        f"{say.measured_part(estimate, ci, n, unit)}"
    )
    if n < c["min_runs"]:
        more = c["min_runs"] - n
        out.update(verdict="INCONCLUSIVE", more_runs_needed=more)
        out["reason"] = (
            f"{head}: fewer runs than the {c['min_runs']} required; "
            f"{say.more_runs(more)} would let it be judged."
        )
        return out
    max_cv = dec(c["max_cv_pct"])
    if cv_shown is not None and cv_shown > max_cv:
        more = _clamp(math.ceil(n * (cv_shown / max_cv) ** 2) - n)
        verdict = "WARN" if c["on_high_cv"] == "warn" else "INCONCLUSIVE"
        out.update(verdict=verdict, more_runs_needed=more)
        out["reason"] = (
            f"{head}: the runs vary too much to judge against the band (CV "
            f"{say.fmt(cv_shown)} %, more than the {say.fmt(max_cv)} % allowed); "
            f"steadier runs, or about {say.more_runs(more)}, are needed."
        )
        return out
    return _non_blocking(c, _judge(c, out, head, estimate, ci, limit, n, unit))


def _judge(c: dict[str, Any], out: dict[str, Any], head: str, estimate: Decimal,
           ci: tuple[Decimal, Decimal], limit: Decimal, n: int,
           unit: str) -> dict[str, Any]:  # fmt: skip
    lower = c["direction"] == "lower"
    near, far = (ci[1], ci[0]) if lower else (ci[0], ci[1])
    within = (lambda v: v <= limit) if lower else (lambda v: v >= limit)
    lim = f"{say.fmt(limit)}{' ' + unit if unit else ''}"
    if within(near):
        out["verdict"] = "PASS"
        out["reason"] = f"{head}: within the limit."
    elif not within(far):
        out["verdict"] = "FAIL"
        edge, side = ("upper", "at or under") if lower else ("lower", "at or over")
        out["reason"] = (
            f"{head}: the whole interval is beyond the limit; it would pass with "
            f"the interval's {edge} end {side} {lim}."
        )
    else:
        # the interval's half on the limit's side shrinks as 1/sqrt(n) to the margin
        toward = abs(near - estimate) if within(estimate) else abs(estimate - far)
        margin = abs(estimate - limit)
        more = MAX_MORE_RUNS
        if margin:
            more = _clamp(math.ceil(n * (toward / margin) ** 2) - n)
        out.update(verdict="INCONCLUSIVE", more_runs_needed=more)
        out["reason"] = (
            f"{head}: the interval straddles the limit of {lim}; about "
            f"{say.more_runs(more)} would decide it."
        )
    return out


def _clamp(more: int) -> int:
    return max(1, min(MAX_MORE_RUNS, more))


def _non_blocking(c: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    if out["verdict"] == "FAIL" and not c["blocking"]:
        out["verdict"] = "WARN"
        out["reason"] += " Not blocking: a warning, not a failure."
    return out


def _stop_loss(s: dict[str, Any], index: _Index) -> dict[str, Any]:
    if "drift_at_least" in s:
        level = DRIFT_LEVELS.index(s["drift_at_least"])
        hit = [r["id"] for r in index.runs if DRIFT_LEVELS.index(r["drift"]) >= level]
        text = (
            f"environment drift of at least {s['drift_at_least']} on "
            f"{say.count(len(hit))} ({say.runs_list(hit)}): the lab host does not "
            "match the vendor's environment manifest; the gate halts."
        )
    elif "run_failed" in s:
        hit = [r["id"] for r in index.runs if r["status"] == "failed"]
        text = f"{say.count(len(hit))} failed ({say.runs_list(hit)}); the gate halts."
    elif "check_flagged" in s:
        ids = checks_named(s)
        per_run = [
            (r["id"], [i for i in ids if i in r.get("checks", [])]) for r in index.runs
        ]
        hit = [rid for rid, flags in per_run if flags]
        flags = sorted({f for _, fs in per_run for f in fs}, key=ids.index)
        text = (
            f"anti-gaming check{'s' if len(flags) > 1 else ''} "
            f"{' and '.join(flags)} flagged on "
            f"{say.count(len(hit))} ({say.runs_list(hit)}); the gate halts."
        )
    else:
        above = "above" in s
        bound = dec(s["above"] if above else s["below"])
        rows = [
            (rid, dec(v), unit)
            for rid, scenario, v, unit in index.any_run.get(
                (s["metric"], s["stat"]), []
            )
            if s["scenario"] in ("*", scenario)
        ]
        found = [r for r in rows if (r[1] > bound if above else r[1] < bound)]
        hit = [r[0] for r in found]
        shown = ", ".join(
            f"{rid}: {say.fmt_measured(v)}" for rid, v, _ in found[: say.SHOWN_RUNS]
        )
        more = len(found) - say.SHOWN_RUNS
        unit = found[0][2] if found else ""
        where = "any scenario" if s["scenario"] == "*" else s["scenario"]
        text = (
            f"{s['metric']} {s['stat']} in {where} {'above' if above else 'below'} "
            f"{say.fmt(bound)}{' ' + unit if unit else ''} on {say.count(len(hit))} "
            f"({shown}{f' and {more} more' if more > 0 else ''}); the gate halts."
        )
    return {"id": s["id"], "triggered": bool(hit), "runs": hit,
            "reason": text if hit else ""}  # fmt: skip
