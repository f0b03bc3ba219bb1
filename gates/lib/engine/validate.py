"""Validation of gate plans and results documents: every problem, each with the
path of the field it is about (``gates[0].criteria[2].band.pct: must be between 0
and 100``). Unknown keys are problems too, so a typo never silently drops a rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from gates.lib.engine.documents import PLAN_SCHEMA, RESULTS_SCHEMA

STATS: Final = (
    "mean", "max", "min", "p50", "p90", "p95", "p99", "p99.5", "p99.9", "p99.99",
)  # fmt: skip
# A ``canary`` gate names its ``hosts``: only a gate that does may take it.
STAGES: Final = ("lab", "pilot", "canary", "rollout")
STAGES_WITHOUT_HOSTS: Final = tuple(s for s in STAGES if s != "canary")
# A canary host's name: a lab host's worker name as the pools page shows it
# (``<name>@<hostname>``); it becomes part of the host's queue name
# (``benchmarks.lib.queues.HOST_NAME_PATTERN``, the same rule).
HOST_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,254}$")
MAX_HOSTS: Final = 100
DIRECTIONS: Final = ("lower", "higher")
ON_HIGH_CV: Final = ("inconclusive", "warn")
DRIFT_LEVELS: Final = ("none", "minor", "major")  # in this order of severity
RUN_STATUSES: Final = ("succeeded", "failed", "cancelled", "pending")
# The anti-gaming checks a lab run records (flagged ids in a results document's
# ``runs[].checks``; a stop-loss ``check_flagged`` names them).
CHECKS: Final = ("seed_ignored", "cold_cache_unproven", "working_set_fits_in_memory")
RUN_ROLES: Final = ("vendor", "baseline")  # absent: vendor
METRIC_NAME: Final = re.compile(r"^[a-z][a-z0-9_]*$")
MAGNITUDE: Final = 1e100  # no number is larger: no overflow in any sum or square


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InvalidDocument(ValueError):
    """A plan or results document with problems (``problems``, all of them)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


class _Checker:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def obj(self, value: Any, path: str, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> bool:  # fmt: skip
        if not isinstance(value, dict):
            self.add(path, "must be an object")
            return False
        for key in required:
            if key not in value:
                self.add(f"{path}.{key}" if path else key, "is required")
        for key in sorted(set(value) - set(required) - set(optional), key=str):
            self.add(f"{path}.{key}" if path else str(key), "is not a known field")
        return True

    def text(self, value: Any, path: str, pattern: re.Pattern[str] | None = None,
             what: str = "") -> None:  # fmt: skip
        if not isinstance(value, str) or not value.strip():
            self.add(path, "must be a non-empty string")
        elif pattern is not None and not pattern.match(value):
            self.add(path, f"must be {what}")

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> None:
        if value not in choices or not isinstance(value, str):
            self.add(path, "must be one of " + ", ".join(choices))

    def number(self, value: Any, path: str, low: float | None = None,
               high: float | None = None, *, above: bool = False) -> bool:  # fmt: skip
        if not _is_number(value):
            self.add(path, "must be a number")
            return False
        if abs(value) > MAGNITUDE:
            self.add(path, "must be a number between -1e100 and 1e100")
            return False
        if low is not None and high is not None and not low <= value <= high:
            self.add(path, f"must be between {_n(low)} and {_n(high)}")
            return False
        if low is not None and high is None:
            if above and not value > low:
                self.add(path, f"must be greater than {_n(low)}")
                return False
            if not above and not value >= low:
                self.add(path, f"must be at least {_n(low)}")
                return False
        return True

    def integer(self, value: Any, path: str, low: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.add(path, "must be an integer")
        elif value < low:
            self.add(path, f"must be at least {low}")

    def items(self, value: Any, path: str, check: Callable[[Any, str], None],
              *, non_empty: bool) -> None:  # fmt: skip
        if not isinstance(value, list):
            self.add(path, "must be a list")
            return
        if non_empty and not value:
            self.add(path, "must not be empty")
        for index, item in enumerate(value):
            check(item, f"{path}[{index}]")

    def unique(self, items: Any, key: str, path: str, what: str) -> None:
        seen: dict[Any, int] = {}
        for index, item in enumerate(items if isinstance(items, list) else []):
            value = item.get(key) if isinstance(item, dict) else None
            if not isinstance(value, str):
                continue
            if value in seen:
                self.add(f"{path}[{index}].{key}", f"{what} {value!r} again "
                         f"(as {path}[{seen[value]}])")  # fmt: skip
            else:
                seen[value] = index


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _n(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def plan_problems(plan: Any) -> list[Problem]:
    """Every problem of a ``reprogate.gate-plan/v1`` document (empty: valid)."""
    c = _Checker()
    if not c.obj(plan, "", ("schema", "rfp", "vendor", "gates")):
        c.problems[-1] = Problem("(document)", "must be a JSON object")
        return c.problems
    if "schema" in plan and plan["schema"] != PLAN_SCHEMA:
        c.add("schema", f"must be {PLAN_SCHEMA!r}")
    for key in ("rfp", "vendor"):
        if key in plan:
            c.text(plan[key], key)
    if "gates" in plan:
        c.items(plan["gates"], "gates", lambda g, p: _gate(c, g, p), non_empty=True)
        c.unique(plan["gates"], "name", "gates", "names the gate")
    return c.problems


def _gate(c: _Checker, gate: Any, path: str) -> None:
    required = ("name", "stage", "consecutive_passes", "score", "criteria",
                "stop_loss")  # fmt: skip
    if not c.obj(gate, path, required, ("max_extra_runs", "hosts")):
        return
    if "name" in gate:
        c.text(gate["name"], f"{path}.name")
    if "stage" in gate:
        stages = STAGES if "hosts" in gate else STAGES_WITHOUT_HOSTS
        if gate["stage"] == "canary" and "hosts" not in gate:
            c.add(f"{path}.hosts", "is required with stage canary")
        else:
            c.choice(gate["stage"], f"{path}.stage", stages)
    if "hosts" in gate:
        _hosts(c, gate["hosts"], f"{path}.hosts")
    if "consecutive_passes" in gate:
        c.integer(gate["consecutive_passes"], f"{path}.consecutive_passes", 1)
    if "max_extra_runs" in gate:
        c.integer(gate["max_extra_runs"], f"{path}.max_extra_runs", 0)
    score = gate.get("score")
    if "score" in gate and c.obj(score, f"{path}.score", ("pass_pct", "warn_pct")):
        ok = [
            c.number(score[k], f"{path}.score.{k}", 0, 100)
            for k in ("pass_pct", "warn_pct")
            if k in score
        ]
        if len(ok) == 2 and all(ok) and score["warn_pct"] > score["pass_pct"]:
            c.add(f"{path}.score.warn_pct", "must not be over pass_pct")
    if "criteria" in gate:
        criteria = gate["criteria"]
        c.items(criteria, f"{path}.criteria", lambda x, p: _criterion(c, x, p),
                non_empty=True)  # fmt: skip
        c.unique(criteria, "id", f"{path}.criteria", "names the criterion")
        listed = criteria if isinstance(criteria, list) else []
        weights = [x.get("weight") for x in listed if isinstance(x, dict)]
        if criteria and weights and all(_is_number(w) and w == 0 for w in weights):
            c.add(f"{path}.criteria", "the weights must not all be 0")
    if "stop_loss" in gate:
        c.items(gate["stop_loss"], f"{path}.stop_loss",
                lambda s, p: _stop_loss(c, s, p), non_empty=False)  # fmt: skip
        c.unique(gate["stop_loss"], "id", f"{path}.stop_loss", "names the condition")


def _hosts(c: _Checker, hosts: Any, path: str) -> None:
    """A gate's canary hosts: a non-empty list of unique host names."""
    if not isinstance(hosts, list):
        c.add(path, "must be a list of host names")
        return
    if not hosts:
        c.add(path, "must not be empty")
    elif len(hosts) > MAX_HOSTS:
        c.add(path, f"must name at most {MAX_HOSTS} hosts")
    seen: dict[str, int] = {}
    for index, name in enumerate(hosts):
        c.text(name, f"{path}[{index}]", HOST_NAME, "a host name (letters, digits "
               "and . _ @ -, as the pools page shows it)")  # fmt: skip
        if not isinstance(name, str):
            continue
        if name in seen:
            c.add(f"{path}[{index}]", f"names the host {name!r} again "
                  f"(as {path}[{seen[name]}])")  # fmt: skip
        else:
            seen[name] = index


def _criterion(c: _Checker, item: Any, path: str) -> None:
    required = ("id", "metric", "stat", "scenario", "direction", "min_runs",
                "max_cv_pct", "on_high_cv", "blocking", "weight")  # fmt: skip
    if not c.obj(item, path, required, ("claim", "band", "threshold", "baseline")):
        return
    for key in ("id", "scenario"):
        if key in item:
            c.text(item[key], f"{path}.{key}")
    if "metric" in item:
        c.text(item["metric"], f"{path}.metric", METRIC_NAME, "a lower_snake name")
    if "stat" in item:
        c.choice(item["stat"], f"{path}.stat", STATS)
    if "direction" in item:
        c.choice(item["direction"], f"{path}.direction", DIRECTIONS)
    if "min_runs" in item:
        c.integer(item["min_runs"], f"{path}.min_runs", 1)
    if "max_cv_pct" in item:
        c.number(item["max_cv_pct"], f"{path}.max_cv_pct", 0, above=True)
    if "on_high_cv" in item:
        c.choice(item["on_high_cv"], f"{path}.on_high_cv", ON_HIGH_CV)
    if "blocking" in item and not isinstance(item["blocking"], bool):
        c.add(f"{path}.blocking", "must be true or false")
    if "weight" in item:
        c.number(item["weight"], f"{path}.weight", 0)
    _claim(c, item, path)


def _claim(c: _Checker, item: dict[str, Any], path: str) -> None:
    if "baseline" in item:
        _baseline(c, item, path)
        return
    has_claim, has_threshold = "claim" in item, "threshold" in item
    if has_claim and has_threshold:
        c.add(f"{path}.threshold", "give either claim with band or threshold, not both")
    elif not has_claim and not has_threshold:
        c.add(f"{path}.claim", "give either claim with band or threshold")
    if has_threshold:
        c.number(item["threshold"], f"{path}.threshold")
        if "band" in item:
            c.add(f"{path}.band", "only goes with a claim")
        return
    if not has_claim:
        return
    c.number(item["claim"], f"{path}.claim")
    if "band" not in item:
        c.add(f"{path}.band", "is required with a claim")
        return
    band = item["band"]
    if not isinstance(band, dict) or len(band) != 1 or set(band) - {"pct", "abs"}:
        c.add(f"{path}.band", 'must be {"pct": number} or {"abs": number}')
    elif "pct" in band:
        c.number(band["pct"], f"{path}.band.pct", 0, 100)
    else:
        c.number(band["abs"], f"{path}.band.abs", 0)


def _baseline(c: _Checker, item: dict[str, Any], path: str) -> None:
    """``"baseline": {"scenario": "...", "pct": n}``: the limit is the buyer's
    baseline median in that scenario, pct % on the worse side; no claim, band or
    threshold beside it."""
    for key in ("claim", "band", "threshold"):
        if key in item:
            message = "does not go with a baseline (give one or the other)"
            c.add(f"{path}.{key}", message)
    base = item["baseline"]
    if not c.obj(base, f"{path}.baseline", ("scenario", "pct")):
        return
    if "scenario" in base:
        c.text(base["scenario"], f"{path}.baseline.scenario")
    if "pct" in base:
        c.number(base["pct"], f"{path}.baseline.pct", 0, 100)


def _stop_loss(c: _Checker, item: Any, path: str) -> None:
    if not isinstance(item, dict):
        c.add(path, "must be an object")
        return
    kinds = [k for k in ("drift_at_least", "run_failed", "check_flagged") if k in item]
    if any(k in item for k in ("metric", "stat", "scenario", "above", "below")):
        kinds.append("metric")
    if len(kinds) != 1:
        # check_flagged is named where it could be meant (the message for two
        # of the older kinds reads as it always has)
        told = (
            ""
            if len(kinds) > 1 and "check_flagged" not in kinds
            else (", check_flagged")
        )
        c.add(path, "must have exactly one of metric (with above or below), "
              f"drift_at_least, run_failed{told}")  # fmt: skip
        kinds = []
    kind = kinds[0] if kinds else ""
    if kind == "metric":
        bound = [k for k in ("above", "below") if k in item]
        c.obj(item, path, ("id", "metric", "stat", "scenario"), tuple(bound))
        if len(bound) != 1:
            c.add(path, "must have exactly one of above, below")
        for key in bound:
            c.number(item[key], f"{path}.{key}")
        if "metric" in item:
            c.text(item["metric"], f"{path}.metric", METRIC_NAME, "a lower_snake name")
        if "stat" in item:
            c.choice(item["stat"], f"{path}.stat", STATS)
        if "scenario" in item:
            c.text(item["scenario"], f"{path}.scenario")
    elif kind == "drift_at_least":
        c.obj(item, path, ("id", "drift_at_least"))
        c.choice(item["drift_at_least"], f"{path}.drift_at_least", ("minor", "major"))
    elif kind == "run_failed":
        c.obj(item, path, ("id", "run_failed"))
        if item["run_failed"] is not True:
            c.add(f"{path}.run_failed", "must be true")
    elif kind == "check_flagged":
        c.obj(item, path, ("id", "check_flagged"))
        _check_ids(c, item["check_flagged"], f"{path}.check_flagged")
    elif "id" not in item:
        c.add(f"{path}.id", "is required")
    if "id" in item:
        c.text(item["id"], f"{path}.id")


def _check_ids(c: _Checker, value: Any, path: str) -> None:
    """One check id, or a non-empty list of distinct ones."""
    named = "must name " + ", ".join(CHECKS)
    if isinstance(value, str):
        if value not in CHECKS:
            c.add(path, named)
        return
    if not isinstance(value, list) or not value:
        c.add(path, "must be a check id or a non-empty list of them")
        return
    for index, item in enumerate(value):
        if not isinstance(item, str) or item not in CHECKS:
            c.add(f"{path}[{index}]", named)
        elif item in value[:index]:
            c.add(f"{path}[{index}]", f"names {item} again")


def checks_named(condition: dict[str, Any]) -> list[str]:
    """The check ids a (valid) ``check_flagged`` condition names, as a list."""
    named = condition.get("check_flagged")
    return [named] if isinstance(named, str) else list(named or [])


def results_problems(results: Any) -> list[Problem]:
    """Every problem of a ``reprogate.results/v1`` document (empty: valid)."""
    c = _Checker()
    if not c.obj(results, "", ("schema", "runs")):
        c.problems[-1] = Problem("(document)", "must be a JSON object")
        return c.problems
    if "schema" in results and results["schema"] != RESULTS_SCHEMA:
        c.add("schema", f"must be {RESULTS_SCHEMA!r}")
    if "runs" in results:
        c.items(results["runs"], "runs", lambda r, p: _run(c, r, p), non_empty=False)
        c.unique(results["runs"], "id", "runs", "names the run")
    return c.problems


def _run(c: _Checker, run: Any, path: str) -> None:
    required = ("id", "scenario", "repetition", "status", "drift", "metrics")
    if not c.obj(run, path, required, ("checks", "role")):
        return
    if "checks" in run:
        _flagged(c, run["checks"], f"{path}.checks")
    if "role" in run:
        c.choice(run["role"], f"{path}.role", RUN_ROLES)
    for key in ("id", "scenario"):
        if key in run:
            c.text(run[key], f"{path}.{key}")
    if "repetition" in run:
        c.integer(run["repetition"], f"{path}.repetition", 1)
    if "status" in run:
        c.choice(run["status"], f"{path}.status", RUN_STATUSES)
    if "drift" in run:
        c.choice(run["drift"], f"{path}.drift", DRIFT_LEVELS)
    metrics = run.get("metrics")
    if "metrics" not in run:
        return
    c.items(metrics, f"{path}.metrics", lambda m, p: _metric(c, m, p), non_empty=False)
    seen: dict[tuple[Any, Any], int] = {}
    for index, m in enumerate(metrics if isinstance(metrics, list) else []):
        if not isinstance(m, dict) or not all(
            isinstance(m.get(k), str) for k in ("name", "stat")
        ):
            continue
        identity = (m.get("name"), m.get("stat"))
        if identity in seen:
            name, stat = identity
            c.add(f"{path}.metrics[{index}]", f"reports {name} {stat} again "
                  f"(as {path}.metrics[{seen[identity]}])")  # fmt: skip
        else:
            seen[identity] = index


def _flagged(c: _Checker, value: Any, path: str) -> None:
    """A run's flagged checks: distinct lower_snake ids (ids this engine does
    not know are kept: a later lab may flag more)."""
    if not isinstance(value, list):
        c.add(path, "must be a list")
        return
    for index, item in enumerate(value):
        if not isinstance(item, str) or not METRIC_NAME.match(item):
            c.add(f"{path}[{index}]", "must be a lower_snake check id")
        elif item in value[:index]:
            c.add(f"{path}[{index}]", f"names {item} again")


def _metric(c: _Checker, m: Any, path: str) -> None:
    if not c.obj(m, path, ("name", "stat", "value", "unit", "source")):
        return
    if "name" in m:
        c.text(m["name"], f"{path}.name", METRIC_NAME, "a lower_snake name")
    if "stat" in m:
        c.choice(m["stat"], f"{path}.stat", STATS)
    if "value" in m:
        c.number(m["value"], f"{path}.value")
    if "unit" in m and not isinstance(m["unit"], str):
        c.add(f"{path}.unit", "must be a string")
    source = m.get("source")
    if "source" in m and c.obj(source, f"{path}.source", ("file", "key")):
        for key in ("file", "key"):
            if key in source and not isinstance(source[key], str):
                c.add(f"{path}.source.{key}", "must be a string")
