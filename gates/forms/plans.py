"""The draft plan editor's form: gates, their criteria and stop-loss conditions as
rows of text the buyer typed, turned into a ``reprogate.gate-plan/v1`` document
and back.

Nothing the buyer typed is lost on a refusal: a value that is not a number stays
the text it was, so the engine's validation names it at its path
(``gates[0].criteria[2].band.pct: must be a number``) and ``attach_problems``
puts each problem next to the field it is about. The row buttons (add, remove,
move up/down) change the rows and show the form again without saving."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from accounts.exceptions import Problem
from gates.lib.engine.documents import PLAN_SCHEMA

MAX_GATES: Final = 12
MAX_ROWS: Final = 200  # criteria or stop-loss conditions of one gate
LIMIT_KINDS: Final = (
    ("pct", "claim ± %"),
    ("abs", "claim ± value"),
    ("threshold", "threshold"),
    ("baseline", "baseline median ± %"),
)
STOP_KINDS: Final = (
    ("above", "a value is above"),
    ("below", "a value is below"),
    ("drift", "environment drifts"),
    ("run_failed", "a run fails"),
    ("checks", "an anti-gaming check flags a run"),
)
INTEGER = re.compile(r"[+-]?\d{1,30}", re.ASCII)  # longer ones: read as floats
INDEX = re.compile(r"\d{1,4}", re.ASCII)
HOST_SEPARATORS = re.compile(r"[,\s]+")
HOST_ENTRY = re.compile(r"^hosts\[(\d+)\]$")
Errors = dict[str, list[str]]


def _number(text: str) -> Any:
    """The number ``text`` reads as, or ``text`` itself (the engine names it)."""
    text = text.strip()
    if INTEGER.fullmatch(text):
        return int(text)
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


def _integer(text: str) -> Any:
    text = text.strip()
    return int(text) if INTEGER.fullmatch(text) else text


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class CriterionRow:
    id: str = ""
    metric: str = ""
    stat: str = "p99"
    scenario: str = ""
    direction: str = "lower"
    limit_kind: str = "pct"
    claim: str = ""
    band: str = ""
    threshold: str = ""
    baseline_scenario: str = ""  # with limit_kind baseline; its pct is ``band``
    min_runs: str = "3"
    max_cv_pct: str = "15"
    on_high_cv: str = "inconclusive"
    blocking: bool = True
    weight: str = "1"
    prefix: str = ""
    errors: Errors = field(default_factory=dict)

    TEXT: ClassVar[tuple[str, ...]] = (
        "id", "metric", "stat", "scenario", "direction", "limit_kind", "claim",
        "band", "threshold", "baseline_scenario", "min_runs", "max_cv_pct",
        "on_high_cv", "weight",
    )  # fmt: skip

    @classmethod
    def from_document(cls, c: Mapping[str, Any]) -> CriterionRow:
        raw_band = c.get("band")
        band = raw_band if isinstance(raw_band, dict) else {}
        kind = "threshold" if "threshold" in c else ("abs" if "abs" in band else "pct")
        raw_base = c.get("baseline")
        base = raw_base if isinstance(raw_base, dict) else {}
        if "baseline" in c:
            kind, band = "baseline", base
        skip = ("band", "limit_kind")
        values: dict[str, Any] = {
            k: _text(c[k]) for k in cls.TEXT if k in c and k not in skip
        }
        return cls(
            **values,
            limit_kind=kind,
            band=_text(band.get("abs" if kind == "abs" else "pct")),
            baseline_scenario=_text(base.get("scenario")),
            blocking=c.get("blocking") is not False,
        )

    @classmethod
    def from_post(cls, data: Mapping[str, str], prefix: str) -> CriterionRow:
        values: dict[str, Any] = {k: data.get(f"{prefix}-{k}", "") for k in cls.TEXT}
        return cls(**values, blocking=data.get(f"{prefix}-blocking") == "on")

    def document(self) -> dict[str, Any]:
        c: dict[str, Any] = {
            "id": self.id.strip(),
            "metric": self.metric.strip(),
            "stat": self.stat,
            "scenario": self.scenario.strip(),
            "direction": self.direction,
            "min_runs": _integer(self.min_runs),
            "max_cv_pct": _number(self.max_cv_pct),
            "on_high_cv": self.on_high_cv,
            "blocking": self.blocking,
            "weight": _number(self.weight),
        }
        if self.limit_kind == "threshold":
            c["threshold"] = _number(self.threshold)
        elif self.limit_kind == "baseline":
            c["baseline"] = {
                "scenario": self.baseline_scenario.strip(),
                "pct": _number(self.band),
            }
        else:
            c["claim"] = _number(self.claim)
            kind = "abs" if self.limit_kind == "abs" else "pct"
            c["band"] = {kind: _number(self.band)}
        return c


@dataclass
class StopLossRow:
    id: str = ""
    kind: str = "above"
    metric: str = ""
    stat: str = "p99"
    scenario: str = "*"
    value: str = ""
    drift: str = "major"
    checks: str = ""  # check_flagged's ids, comma-separated
    prefix: str = ""
    errors: Errors = field(default_factory=dict)

    TEXT: ClassVar[tuple[str, ...]] = (
        "id", "kind", "metric", "stat", "scenario", "value", "drift", "checks",
    )  # fmt: skip

    @classmethod
    def from_document(cls, s: Mapping[str, Any]) -> StopLossRow:
        row = cls(id=_text(s.get("id")))
        if "drift_at_least" in s:
            row.kind, row.drift = "drift", _text(s["drift_at_least"])
        elif "run_failed" in s:
            row.kind = "run_failed"
        elif "check_flagged" in s:
            named = s["check_flagged"]
            listed = named if isinstance(named, list) else [named]
            row.kind, row.checks = "checks", ", ".join(_text(n) for n in listed)
        else:
            row.kind = "below" if "below" in s else "above"
            row.value = _text(s.get(row.kind))
            row.metric, row.stat = _text(s.get("metric")), _text(s.get("stat"))
            row.scenario = _text(s.get("scenario"))
        return row

    @classmethod
    def from_post(cls, data: Mapping[str, str], prefix: str) -> StopLossRow:
        values: dict[str, Any] = {k: data.get(f"{prefix}-{k}", "") for k in cls.TEXT}
        return cls(**values)

    def document(self) -> dict[str, Any]:
        if self.kind == "drift":
            return {"id": self.id.strip(), "drift_at_least": self.drift}
        if self.kind == "run_failed":
            return {"id": self.id.strip(), "run_failed": True}
        if self.kind == "checks":
            ids = [n.strip() for n in self.checks.split(",") if n.strip()]
            named: Any = ids[0] if len(ids) == 1 else ids  # one id: a string
            return {"id": self.id.strip(), "check_flagged": named}
        return {
            "id": self.id.strip(),
            "metric": self.metric.strip(),
            "stat": self.stat,
            "scenario": self.scenario.strip(),
            "below" if self.kind == "below" else "above": _number(self.value),
        }


@dataclass
class GateRow:
    name: str = ""
    stage: str = "lab"
    consecutive_passes: str = "1"
    pass_pct: str = "90"  # noqa: S105 (a score, not a password)
    warn_pct: str = "75"
    max_extra_runs: str = ""  # kept as it was (not edited here)
    hosts: str = ""  # canary hosts, by worker name, separated by commas or spaces
    criteria: list[CriterionRow] = field(default_factory=list)
    stop_loss: list[StopLossRow] = field(default_factory=list)
    prefix: str = ""
    errors: Errors = field(default_factory=dict)

    TEXT: ClassVar[tuple[str, ...]] = (
        "name", "stage", "consecutive_passes", "pass_pct", "warn_pct",
        "max_extra_runs", "hosts",
    )  # fmt: skip

    @classmethod
    def from_document(cls, g: Mapping[str, Any]) -> GateRow:
        raw_score = g.get("score")
        score = raw_score if isinstance(raw_score, dict) else {}
        return cls(
            name=_text(g.get("name")),
            stage=_text(g.get("stage")),
            consecutive_passes=_text(g.get("consecutive_passes")),
            pass_pct=_text(score.get("pass_pct")),
            warn_pct=_text(score.get("warn_pct")),
            max_extra_runs=_text(g.get("max_extra_runs")),
            hosts=_hosts_text(g.get("hosts")),
            criteria=[CriterionRow.from_document(c) for c in _dicts(g, "criteria")],
            stop_loss=[StopLossRow.from_document(s) for s in _dicts(g, "stop_loss")],
        )

    @classmethod
    def from_post(cls, data: Mapping[str, str], prefix: str) -> GateRow:
        values: dict[str, Any] = {k: data.get(f"{prefix}-{k}", "") for k in cls.TEXT}
        gate = cls(**values)
        for j in range(_count(data, f"{prefix}-criteria")):
            gate.criteria.append(CriterionRow.from_post(data, f"{prefix}-c-{j}"))
        for k in range(_count(data, f"{prefix}-stops")):
            gate.stop_loss.append(StopLossRow.from_post(data, f"{prefix}-s-{k}"))
        return gate

    def document(self) -> dict[str, Any]:
        g: dict[str, Any] = {
            "name": self.name.strip(),
            "stage": self.stage,
            "consecutive_passes": _integer(self.consecutive_passes),
            "score": {
                "pass_pct": _number(self.pass_pct),
                "warn_pct": _number(self.warn_pct),
            },
            "criteria": [c.document() for c in self.criteria],
            "stop_loss": [s.document() for s in self.stop_loss],
        }
        if self.max_extra_runs.strip():
            g["max_extra_runs"] = _integer(self.max_extra_runs)
        if self.hosts.strip():
            g["hosts"] = HOST_SEPARATORS.split(self.hosts.strip())
        return g


def _hosts_text(hosts: Any) -> str:
    """A gate's canary hosts as the editor shows them: comma-separated."""
    if isinstance(hosts, list):
        return ", ".join(_text(h) for h in hosts)
    return _text(hosts)


def _dicts(value: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = value.get(key)
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _count(data: Mapping[str, str], key: str, top: int = MAX_ROWS) -> int:
    raw = data.get(key, "0")
    return min(int(raw), top) if INDEX.fullmatch(raw) else 0


@dataclass
class PlanEditor:
    """The whole editor: the gates and the plan's settings, as typed."""

    gates: list[GateRow] = field(default_factory=list)
    lab_environment_accepted: bool = False
    lab_environment_note: str = ""
    max_extra_runs: str = "0"
    errors: Errors = field(default_factory=dict)
    general: list[str] = field(default_factory=list)  # problems of no field

    @classmethod
    def from_plan(cls, plan: Any) -> PlanEditor:
        editor = cls(
            gates=[GateRow.from_document(g) for g in _dicts(plan.plan, "gates")],
            lab_environment_accepted=plan.lab_environment_accepted,
            lab_environment_note=plan.lab_environment_note,
            max_extra_runs=str(plan.max_extra_runs),
        )
        return editor.renumber()

    @classmethod
    def from_post(cls, data: Mapping[str, str]) -> PlanEditor:
        editor = cls(
            gates=[
                GateRow.from_post(data, f"g-{i}")
                for i in range(_count(data, "gates", MAX_GATES))
            ],
            lab_environment_accepted=data.get("lab_environment_accepted") == "on",
            lab_environment_note=data.get("lab_environment_note", ""),
            max_extra_runs=data.get("max_extra_runs", ""),
        )
        return editor.renumber()

    def renumber(self) -> PlanEditor:
        for i, gate in enumerate(self.gates):
            gate.prefix = f"g-{i}"
            for j, c in enumerate(gate.criteria):
                c.prefix = f"g-{i}-c-{j}"
            for k, s in enumerate(gate.stop_loss):
                s.prefix = f"g-{i}-s-{k}"
        return self

    def document(self, *, rfp: str, vendor: str) -> dict[str, Any]:
        return {
            "schema": PLAN_SCHEMA,
            "rfp": rfp,
            "vendor": vendor,
            "gates": [g.document() for g in self.gates],
        }

    def settings(self) -> dict[str, Any]:
        """The plan's settings as ``plan_update`` takes them (a top-up limit that
        is not a whole number is passed on as typed: the service refuses it)."""
        return {
            "lab_environment_accepted": self.lab_environment_accepted,
            "lab_environment_note": self.lab_environment_note,
            "max_extra_runs": _integer(self.max_extra_runs),
        }

    @property
    def has_errors(self) -> bool:
        rows: list[Any] = [*self.gates]
        for g in self.gates:
            rows += [*g.criteria, *g.stop_loss]
        return bool(self.errors or self.general or any(r.errors for r in rows))

    def apply(self, action: str) -> bool:
        """Apply a row button (``add_criterion:0``, ``criterion_up:1:2`` …);
        False when it names no row action or no row."""
        verb, _, rest = action.partition(":")
        numbers = [int(n) for n in rest.split(":") if INDEX.fullmatch(n)]
        done = _ACTIONS.get(verb, lambda _e, _n: False)(self, numbers)
        self.renumber()
        return bool(done)


def _move(items: list[Any], index: int, by: int) -> bool:
    to = index + by
    if not (0 <= index < len(items) and 0 <= to < len(items)):
        return False
    items[index], items[to] = items[to], items[index]
    return True


def _in(items: list[Any], index: int) -> bool:
    return 0 <= index < len(items)


def _gate_rows(editor: PlanEditor, n: list[int], attr: str) -> list[Any] | None:
    if not n or not _in(editor.gates, n[0]):
        return None
    rows: list[Any] = getattr(editor.gates[n[0]], attr)
    return rows


def _add(attr: str, make: Any) -> Any:
    def act(editor: PlanEditor, n: list[int]) -> bool:
        rows = _gate_rows(editor, n, attr)
        if rows is None or len(rows) >= MAX_ROWS:
            return False
        rows.append(make())
        return True

    return act


def _remove(attr: str) -> Any:
    def act(editor: PlanEditor, n: list[int]) -> bool:
        rows = _gate_rows(editor, n, attr)
        if rows is None or len(n) < 2 or not _in(rows, n[1]):
            return False
        del rows[n[1]]
        return True

    return act


def _shift(attr: str, by: int) -> Any:
    def act(editor: PlanEditor, n: list[int]) -> bool:
        rows = _gate_rows(editor, n, attr)
        return rows is not None and len(n) >= 2 and _move(rows, n[1], by)

    return act


def _add_gate(editor: PlanEditor, _n: list[int]) -> bool:
    if len(editor.gates) >= MAX_GATES:
        return False
    editor.gates.append(GateRow(criteria=[CriterionRow()]))
    return True


def _remove_gate(editor: PlanEditor, n: list[int]) -> bool:
    if not n or not _in(editor.gates, n[0]):
        return False
    del editor.gates[n[0]]
    return True


_ACTIONS: Final = {
    "add_gate": _add_gate,
    "remove_gate": _remove_gate,
    "gate_up": lambda e, n: bool(n) and _move(e.gates, n[0], -1),
    "gate_down": lambda e, n: bool(n) and _move(e.gates, n[0], 1),
    "add_criterion": _add("criteria", CriterionRow),
    "remove_criterion": _remove("criteria"),
    "criterion_up": _shift("criteria", -1),
    "criterion_down": _shift("criteria", 1),
    "add_stop": _add("stop_loss", StopLossRow),
    "remove_stop": _remove("stop_loss"),
    "stop_up": _shift("stop_loss", -1),
    "stop_down": _shift("stop_loss", 1),
}

# --- problems next to their fields ---------------------------------------------

PATH = re.compile(
    r"^gates\[(?P<g>\d+)\](?:\.(?P<list>criteria|stop_loss)(?:\[(?P<i>\d+)\])?)?"
    r"(?:\.(?P<rest>.+))?$"
)
GATE_FIELDS: Final = {
    "score.pass_pct": "pass_pct",
    "score.warn_pct": "warn_pct",
    "score": "pass_pct",
}
CRITERION_FIELDS: Final = {
    "band.pct": "band",
    "band.abs": "band",
    "baseline.pct": "band",
    "baseline.scenario": "baseline_scenario",
}
STOP_FIELDS: Final = {
    "above": "value",
    "below": "value",
    "drift_at_least": "drift",
    "run_failed": "kind",
    "check_flagged": "checks",
}


def _put(errors: Errors, key: str, message: str) -> None:
    errors.setdefault(key, []).append(message)


def _row_field(
    row: Any, rest: str | None, names: Mapping[str, str], message: str
) -> None:
    if rest is None:
        _put(row.errors, "row", message)
        return
    name = names.get(rest, rest)
    if name in row.TEXT or name == "blocking":
        _put(row.errors, name, message)
    else:
        _put(row.errors, "row", f"{rest}: {message}")


def _place(editor: PlanEditor, path: str, message: str) -> bool:
    if path in ("lab_environment_note", "max_extra_runs"):
        _put(editor.errors, path, message)
        return True
    found = PATH.match(path)
    if found is None or not _in(editor.gates, int(found["g"])):
        return False
    gate, rest = editor.gates[int(found["g"])], found["rest"]
    entry = HOST_ENTRY.match(rest or "")
    if found["list"] is None and entry is not None:
        _put(gate.errors, "hosts", f"host {int(entry[1]) + 1}: {message}")
        return True
    if found["list"] is None:
        _row_field(gate, rest, GATE_FIELDS, message)
        return True
    rows: list[Any] = getattr(gate, found["list"])
    if found["i"] is None:
        _put(gate.errors, found["list"], message)
        return True
    if not _in(rows, int(found["i"])):
        return False
    fields = CRITERION_FIELDS if found["list"] == "criteria" else STOP_FIELDS
    _row_field(rows[int(found["i"])], rest, fields, message)
    return True


def attach_problems(editor: PlanEditor, problems: Iterable[Problem]) -> PlanEditor:
    """Each problem beside its field; those of no field in ``general``."""
    for problem in problems:
        path = problem.path or ""
        if not _place(editor, path, problem.message):
            text = f"{path}: {problem.message}" if path else problem.message
            editor.general.append(text)
    return editor
