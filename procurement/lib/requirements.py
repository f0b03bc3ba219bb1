"""What an RFP demands, as a document: ``reprogate.rfp-requirements/v1``.

No Django here: the fidelity matrix, the bundle manifest's vocabulary and the CLI
read the same document and import the vocabularies below (add names; never rename
or reuse one)::

    {"schema": "reprogate.rfp-requirements/v1",
     "approaches": ["nvme-of-appliance", "kv-cache-tiering"],
     "workloads": [{"id": "chat-70b", "model_family": "decoder",
                    "params_b": [65, 80], "context_tokens": 8192,
                    "concurrency": [8, 64], "tenants": 4,
                    "scenario_kinds": ["steady", "interference"]}],
     "accelerators": [{"vendors": ["nvidia"], "per_node": 8,
                       "sdk": {"cuda": ">=12.2"}}],
     "fabric": {"transports": ["tcp", "rdma"], "qos": true},
     "environment": {"pinned": ["kernel", "gpu_driver"]},
     "metrics": [{"metric": "ttft_ms", "stats": ["p99"], "series": false}],
     "artifacts": {"mandatory": ["workload", "harness"],
                   "bid_requires_bundle": true}}

``validate(document)`` returns every problem, each naming its place
(``workloads[0].params_b``); ``canonical(document)`` gives the one form the
server stores and answers (every section present, vocabulary lists in vocabulary
order, absent optional workload numbers left out); ``diff(old, new)`` says what
an edit or an addendum changed, path by path (workloads keyed by id, metrics by
name).

Where it is stored (the server's business, said here so readers of the document
know): the RFP keeps the document less ``artifacts`` and ``metrics``; those two
sections ARE the RFP's required-artifact rows (a kind is mandatory when a
mandatory row of it exists; the flag ``bid_requires_bundle``) and its required
metric rows (name, comma-separated stats, series). The server composes the
document on read and splits it on write, so the editor's checklist, the metric
rows and this document never disagree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

SCHEMA: Final = "reprogate.rfp-requirements/v1"

# --- vocabularies (imported by the bundle manifest and the fidelity matrix) --------
APPROACHES: Final = ("nvme-of-appliance", "local-nvme", "kv-cache-tiering")
MODEL_FAMILIES: Final = ("decoder", "encoder", "encoder-decoder", "moe-decoder")
SCENARIO_KINDS: Final = ("steady", "interference", "failover", "warmup", "rollback")
ACCELERATOR_VENDORS: Final = (
    "nvidia",
    "amd",
    "intel",
    "huawei-ascend",
    "hygon",
    "cambricon",
)
TRANSPORTS: Final = ("tcp", "rdma", "fc")
# Environment facts an RFP may require to be pinned (declared, and the same on
# every run of the lab).
PINNED_FIELDS: Final = (
    "os",
    "kernel",
    "cpu_microcode",
    "gpu_driver",
    "gpu_firmware",
    "nic_driver",
    "nic_firmware",
    "nvme_firmware",
)
# procurement.models.ArtifactKind's values (a test holds the two together).
ARTIFACT_KINDS: Final = (
    "workload",
    "environment",
    "harness",
    "trace",
    "cost_model",
    "report",
    "container_image",
    "iac",
    "runbook",
    "sbom",
    "other",
)
SECTIONS: Final = (
    "schema",
    "approaches",
    "workloads",
    "accelerators",
    "fabric",
    "environment",
    "metrics",
    "artifacts",
)
# The sections the RFP row stores itself; the other two are its rows.
STORED_SECTIONS: Final = SECTIONS[:6]

# --- caps ---------------------------------------------------------------------------
MAX_DOCUMENT_BYTES: Final = 64 * 1024
MAX_WORKLOADS: Final = 32
MAX_ACCELERATORS: Final = 8
MAX_SDKS: Final = 8
MAX_METRICS: Final = 64
MAX_STATS: Final = 8
MAX_STAT_LENGTH: Final = 11  # 8 of them fit RequiredMetric.stats
MIN_PARAMS_B: Final = 0.001  # a million parameters
MAX_SDK_SPEC_LENGTH: Final = 64
MAX_PARAMS_B: Final = 100_000  # billions of parameters
MAX_CONTEXT_TOKENS: Final = 10_000_000
MAX_CONCURRENCY: Final = 1_000_000
MAX_TENANTS: Final = 10_000
MAX_PER_NODE: Final = 64

# (matched whole: re.fullmatch)
WORKLOAD_ID_RE: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
METRIC_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
# as benchmarks.lib.parsers.model: mean, min, max, stddev, total or p0.1 … p100
STAT_RE: Final = re.compile(
    r"(?:mean|min|max|stddev|total|p(?:100|[1-9][0-9]?(?:\.[0-9]*[1-9])?"
    r"|0\.[0-9]*[1-9]))"
)
SDK_NAME_RE: Final = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_CLAUSE = r"(?:>=|<=|==|!=|~=|>|<)?[0-9]+(?:\.[0-9]+){0,3}"
SDK_SPEC_RE: Final = re.compile(rf"{_CLAUSE}(?:,{_CLAUSE}){{0,3}}")

PROBLEM_CODES: Final[Mapping[str, str]] = {
    "too_large": "The document is larger than a requirements document may be.",
    "schema": "The document does not name reprogate.rfp-requirements/v1.",
    "type": "A value has the wrong type.",
    "required": "A field that must be given is missing.",
    "unknown_field": "A field that the document format does not define.",
    "not_allowed": "A value outside the document's vocabulary.",
    "duplicate": "A value appears twice where each may appear once.",
    "range": "A number outside its allowed range, or a range whose low end is "
    "above its high end.",
    "pattern": "A name or version specification of the wrong form.",
    "too_many": "A list has more entries than the document allows.",
}


@dataclass(frozen=True)
class RequirementProblem:
    """One thing wrong with a document; ``path`` names where (``workloads[0].id``).
    The shape of ``artifacts.lib.problems.BundleProblem``, which this lower app
    may not import."""

    code: str
    message: str
    path: str | None = None

    def as_dict(self) -> dict[str, str]:
        data = {"code": self.code, "message": self.message}
        if self.path is not None:
            data["path"] = self.path
        return data

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class _Problems(list[RequirementProblem]):
    def add(self, code: str, message: str, path: str) -> None:
        if code not in PROBLEM_CODES:
            raise ValueError(f"unregistered requirements problem code {code!r}")
        self.append(RequirementProblem(code, message, path))


# --- validation ---------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (_is_int(value) or isinstance(value, float)) and value == value  # no NaN


def _object(
    value: object, path: str, known: Sequence[str], problems: _Problems
) -> Mapping[str, Any] | None:
    if not isinstance(value, Mapping):
        problems.add("type", "Must be an object.", path)
        return None
    for key in value:
        if key not in known:
            where = f"{path}.{key}" if path else str(key)
            problems.add("unknown_field", f"{key!r} is not a field here.", where)
    return value


def _vocabulary_list(
    value: object,
    path: str,
    vocabulary: Sequence[str],
    problems: _Problems,
    *,
    non_empty: bool = False,
) -> None:
    if not isinstance(value, list):
        problems.add("type", "Must be a list.", path)
        return
    if non_empty and not value:
        problems.add("required", "Name at least one.", path)
    if len(value) > len(vocabulary):
        problems.add("too_many", f"At most {len(vocabulary)} entries.", path)
        return
    for i, item in enumerate(value):  # a name given twice counts once
        if not isinstance(item, str) or item not in vocabulary:
            allowed = ", ".join(vocabulary)
            problems.add(
                "not_allowed", f"{item!r} is not one of {allowed}.", f"{path}[{i}]"
            )


def _integer(
    value: object, path: str, low: int, high: int, problems: _Problems
) -> None:
    if not _is_int(value):
        problems.add("type", "Must be a whole number.", path)
    elif not low <= value <= high:  # type: ignore[operator]
        problems.add("range", f"Must be from {low} to {high}.", path)


def _range(
    value: object,
    path: str,
    bounds: tuple[float, float],
    problems: _Problems,
    *,
    integers: bool,
) -> None:
    kind = "whole numbers" if integers else "numbers"
    ok = _is_int if integers else _is_number
    if not isinstance(value, list) or len(value) != 2 or not all(map(ok, value)):
        problems.add("type", f"Must be [low, high], two {kind}.", path)
        return
    low, top = value
    least, most = bounds
    if not (least <= low <= top <= most):
        problems.add(
            "range",
            f"Needs {least:g} <= low <= high <= {most:g}; got [{low}, {top}].",
            path,
        )


def _capped_list(
    value: object, path: str, cap: int, problems: _Problems
) -> list[Any] | None:
    if not isinstance(value, list):
        problems.add("type", "Must be a list.", path)
        return None
    if len(value) > cap:
        problems.add("too_many", f"At most {cap} entries.", path)
        return None
    return value


_WORKLOAD_FIELDS: Final = (
    "id",
    "model_family",
    "params_b",
    "context_tokens",
    "concurrency",
    "tenants",
    "scenario_kinds",
)


def _workload(value: object, path: str, problems: _Problems) -> None:
    w = _object(value, path, _WORKLOAD_FIELDS, problems)
    if w is None:
        return
    wid = w.get("id")
    if wid is None:
        problems.add("required", "Give the workload an id.", f"{path}.id")
    elif not isinstance(wid, str) or not WORKLOAD_ID_RE.fullmatch(wid):
        problems.add(
            "pattern", "Lower-case letters, digits, '.', '_', '-'.", f"{path}.id"
        )
    family = w.get("model_family")
    if family is None:
        problems.add("required", "Give the model family.", f"{path}.model_family")
    elif not isinstance(family, str) or family not in MODEL_FAMILIES:
        allowed = ", ".join(MODEL_FAMILIES)
        problems.add(
            "not_allowed",
            f"{family!r} is not one of {allowed}.",
            f"{path}.model_family",
        )
    if "params_b" in w:
        _range(
            w["params_b"],
            f"{path}.params_b",
            (MIN_PARAMS_B, MAX_PARAMS_B),
            problems,
            integers=False,
        )
    if "context_tokens" in w:
        _integer(
            w["context_tokens"],
            f"{path}.context_tokens",
            1,
            MAX_CONTEXT_TOKENS,
            problems,
        )
    if "concurrency" in w:
        _range(
            w["concurrency"],
            f"{path}.concurrency",
            (1, MAX_CONCURRENCY),
            problems,
            integers=True,
        )
    if "tenants" in w:
        _integer(w["tenants"], f"{path}.tenants", 1, MAX_TENANTS, problems)
    if "scenario_kinds" in w:
        _vocabulary_list(
            w["scenario_kinds"], f"{path}.scenario_kinds", SCENARIO_KINDS, problems
        )


def _workloads(value: object, problems: _Problems) -> None:
    items = _capped_list(value, "workloads", MAX_WORKLOADS, problems)
    seen: set[object] = set()
    for i, item in enumerate(items or []):
        _workload(item, f"workloads[{i}]", problems)
        wid = item.get("id") if isinstance(item, Mapping) else None
        if isinstance(wid, str) and wid in seen:
            problems.add("duplicate", f"Workload {wid!r} twice.", f"workloads[{i}].id")
        seen.add(wid)


def _accelerator(value: object, path: str, problems: _Problems) -> None:
    a = _object(value, path, ("vendors", "per_node", "sdk"), problems)
    if a is None:
        return
    if "vendors" not in a:
        problems.add("required", "Name the accelerator vendors.", f"{path}.vendors")
    else:
        _vocabulary_list(
            a["vendors"],
            f"{path}.vendors",
            ACCELERATOR_VENDORS,
            problems,
            non_empty=True,
        )
    if "per_node" in a:
        _integer(a["per_node"], f"{path}.per_node", 1, MAX_PER_NODE, problems)
    sdk = a.get("sdk", {})
    if not isinstance(sdk, Mapping):
        problems.add("type", "Must be an object: SDK name to version.", f"{path}.sdk")
        return
    if len(sdk) > MAX_SDKS:
        problems.add("too_many", f"At most {MAX_SDKS} SDKs.", f"{path}.sdk")
        return
    for name, spec in sdk.items():
        if not isinstance(name, str) or not SDK_NAME_RE.fullmatch(name):
            problems.add("pattern", "SDK names are lower-case.", f"{path}.sdk.{name}")
        elif (
            not isinstance(spec, str)
            or len(spec) > MAX_SDK_SPEC_LENGTH
            or not SDK_SPEC_RE.fullmatch(spec)
        ):
            problems.add(
                "pattern",
                "A version or version clauses, e.g. '>=12.2' or '>=8.0,<9'.",
                f"{path}.sdk.{name}",
            )


def _accelerators(value: object, problems: _Problems) -> None:
    items = _capped_list(value, "accelerators", MAX_ACCELERATORS, problems)
    for i, item in enumerate(items or []):
        _accelerator(item, f"accelerators[{i}]", problems)


def _fabric(value: object, problems: _Problems) -> None:
    f = _object(value, "fabric", ("transports", "qos"), problems)
    if f is None:
        return
    if "transports" in f:
        _vocabulary_list(f["transports"], "fabric.transports", TRANSPORTS, problems)
    if "qos" in f and not isinstance(f["qos"], bool):
        problems.add("type", "Must be true or false.", "fabric.qos")


def _environment(value: object, problems: _Problems) -> None:
    e = _object(value, "environment", ("pinned",), problems)
    if e is not None and "pinned" in e:
        _vocabulary_list(e["pinned"], "environment.pinned", PINNED_FIELDS, problems)


def _metric(value: object, path: str, problems: _Problems) -> None:
    m = _object(value, path, ("metric", "stats", "series"), problems)
    if m is None:
        return
    name = m.get("metric")
    if name is None:
        problems.add("required", "Name the metric.", f"{path}.metric")
    elif not isinstance(name, str) or not METRIC_RE.fullmatch(name):
        problems.add(
            "pattern", "lower_snake_case with its unit, e.g. ttft_ms.", f"{path}.metric"
        )
    stats = _capped_list(m.get("stats", []), f"{path}.stats", MAX_STATS, problems)
    for i, stat in enumerate(stats or []):  # a statistic given twice counts once
        where = f"{path}.stats[{i}]"
        if (
            not isinstance(stat, str)
            or len(stat) > MAX_STAT_LENGTH
            or not STAT_RE.fullmatch(stat)
        ):
            problems.add("pattern", f"{stat!r:.20}: mean, max, p99, p99.9 …", where)
    if "series" in m and not isinstance(m["series"], bool):
        problems.add("type", "Must be true or false.", f"{path}.series")


def _metrics(value: object, problems: _Problems) -> None:
    items = _capped_list(value, "metrics", MAX_METRICS, problems)
    seen: set[object] = set()
    for i, item in enumerate(items or []):
        _metric(item, f"metrics[{i}]", problems)
        name = item.get("metric") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name in seen:
            problems.add("duplicate", f"Metric {name!r} twice.", f"metrics[{i}].metric")
        seen.add(name)


def _artifacts(value: object, problems: _Problems) -> None:
    a = _object(value, "artifacts", ("mandatory", "bid_requires_bundle"), problems)
    if a is None:
        return
    if "mandatory" in a:
        _vocabulary_list(
            a["mandatory"], "artifacts.mandatory", ARTIFACT_KINDS, problems
        )
    if "bid_requires_bundle" in a and not isinstance(a["bid_requires_bundle"], bool):
        problems.add("type", "Must be true or false.", "artifacts.bid_requires_bundle")


_SECTION_CHECKS: Final = {
    "workloads": _workloads,
    "accelerators": _accelerators,
    "fabric": _fabric,
    "environment": _environment,
    "metrics": _metrics,
    "artifacts": _artifacts,
}


def validate(document: object) -> list[RequirementProblem]:
    """Every problem of ``document``; [] when it is a valid v1 document."""
    problems = _Problems()
    try:
        size = len(json.dumps(document, allow_nan=False).encode())
    except (TypeError, ValueError):
        problems.add("type", "The document is not plain JSON.", "")
        return problems
    if size > MAX_DOCUMENT_BYTES:
        problems.add("too_large", f"At most {MAX_DOCUMENT_BYTES} bytes.", "")
        return problems
    doc = _object(document, "", SECTIONS, problems)
    if doc is None:
        return problems
    if doc.get("schema") != SCHEMA:
        problems.add("schema", f"Must be {SCHEMA!r}.", "schema")
    if "approaches" in doc:
        _vocabulary_list(doc["approaches"], "approaches", APPROACHES, problems)
    for section, check in _SECTION_CHECKS.items():
        if section in doc:
            check(doc[section], problems)
    return problems


# --- the canonical form -------------------------------------------------------------


def _ordered(values: Sequence[str], vocabulary: Sequence[str]) -> list[str]:
    return [v for v in vocabulary if v in values]


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _canonical_workload(w: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": w["id"], "model_family": w["model_family"]}
    if "params_b" in w:
        out["params_b"] = [_number(v) for v in w["params_b"]]
    for key in ("context_tokens", "concurrency", "tenants"):
        if key in w:
            out[key] = w[key]
    out["scenario_kinds"] = _ordered(w.get("scenario_kinds", []), SCENARIO_KINDS)
    return out


def _canonical_accelerator(a: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"vendors": _ordered(a["vendors"], ACCELERATOR_VENDORS)}
    if "per_node" in a:
        out["per_node"] = a["per_node"]
    out["sdk"] = {name: a.get("sdk", {})[name] for name in sorted(a.get("sdk", {}))}
    return out


def canonical(document: Mapping[str, Any]) -> dict[str, Any]:
    """The one form of a valid document: every section, vocabulary lists in the
    vocabulary's order, whole numbers of parameters as integers."""
    fabric = document.get("fabric", {})
    artifacts = document.get("artifacts", {})
    return {
        "schema": SCHEMA,
        "approaches": _ordered(document.get("approaches", []), APPROACHES),
        "workloads": [_canonical_workload(w) for w in document.get("workloads", [])],
        "accelerators": [
            _canonical_accelerator(a) for a in document.get("accelerators", [])
        ],
        "fabric": {
            "transports": _ordered(fabric.get("transports", []), TRANSPORTS),
            "qos": bool(fabric.get("qos", False)),
        },
        "environment": {
            "pinned": _ordered(
                document.get("environment", {}).get("pinned", []), PINNED_FIELDS
            )
        },
        "metrics": [
            {
                "metric": m["metric"],
                "stats": list(dict.fromkeys(m.get("stats", []))),
                "series": bool(m.get("series", False)),
            }
            for m in document.get("metrics", [])
        ],
        "artifacts": {
            "mandatory": _ordered(artifacts.get("mandatory", []), ARTIFACT_KINDS),
            "bid_requires_bundle": bool(artifacts.get("bid_requires_bundle", False)),
        },
    }


def empty() -> dict[str, Any]:
    """The canonical document that requires nothing."""
    return canonical({"schema": SCHEMA})


def stored_part(document: Mapping[str, Any]) -> dict[str, Any]:
    """What the RFP row keeps of a canonical document ({} when it states nothing
    beyond the artifacts and metrics)."""
    part = {k: document[k] for k in STORED_SECTIONS}
    blank = {k: v for k, v in empty().items() if k in STORED_SECTIONS}
    return {} if part == blank else part


def compose(
    stored: Mapping[str, Any],
    *,
    metrics: Sequence[Mapping[str, Any]],
    mandatory_kinds: Sequence[str],
    bid_requires_bundle: bool,
) -> dict[str, Any]:
    """The whole canonical document from the RFP's stored part and its rows.
    Stored parts written before validation existed are read as they are."""
    document = {k: v for k, v in stored.items() if k in STORED_SECTIONS}
    document["metrics"] = list(metrics)
    document["artifacts"] = {
        "mandatory": list(mandatory_kinds),
        "bid_requires_bundle": bid_requires_bundle,
    }
    return canonical(document)


# --- what changed -------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One changed place: ``old`` is None where it was added, ``new`` where removed."""

    path: str
    old: Any
    new: Any

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new}

    def __str__(self) -> str:
        if self.old is None:
            return f"{self.path}: added {show_value(self.new)}"
        if self.new is None:
            return f"{self.path}: removed (was {show_value(self.old)})"
        return f"{self.path}: {show_value(self.old)} → {show_value(self.new)}"


def show_value(value: Any) -> str:
    """A value of the document in words: lists of names joined, yes/no, JSON."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value) if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value, sort_keys=True)


def _keyed_diff(
    section: str,
    key: str,
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
) -> list[Change]:
    before = {item[key]: item for item in old}
    after = {item[key]: item for item in new}
    changes: list[Change] = []
    for name in [*before, *(n for n in after if n not in before)]:
        path = f"{section}[{name}]"
        if name not in after:
            changes.append(Change(path, before[name], None))
        elif name not in before:
            changes.append(Change(path, None, after[name]))
        else:
            changes.extend(_field_diff(path, before[name], after[name]))
    return changes


def _field_diff(
    path: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[Change]:
    keys = [*old, *(k for k in new if k not in old)]
    return [
        Change(f"{path}.{k}", old.get(k), new.get(k))
        for k in keys
        if old.get(k) != new.get(k)
    ]


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """What differs between two canonical documents, in the document's order."""
    changes: list[Change] = []
    for section in SECTIONS[1:]:
        a, b = old.get(section), new.get(section)
        if a == b:
            continue
        if section == "workloads":
            changes.extend(_keyed_diff("workloads", "id", a or [], b or []))
        elif section == "metrics":
            changes.extend(_keyed_diff("metrics", "metric", a or [], b or []))
        elif section == "accelerators":
            a, b = a or [], b or []
            for i in range(max(len(a), len(b))):
                x = a[i] if i < len(a) else None
                y = b[i] if i < len(b) else None
                if x is None or y is None:
                    changes.append(Change(f"accelerators[{i}]", x, y))
                elif x != y:
                    changes.extend(_field_diff(f"accelerators[{i}]", x, y))
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            changes.extend(_field_diff(section, a, b))
        else:
            changes.append(Change(section, a, b))
    return changes
