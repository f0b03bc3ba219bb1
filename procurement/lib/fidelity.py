"""The fidelity matrix: what the RFP requires, beside what a vendor's bundle
declares and what the buyer's lab captured, one row per requirement, each with
a verdict and where every value comes from (DESIGN §3b).

Inputs (plain data, no Django):

- ``requirements``: the RFP's composed requirements document
  (``reprogate.rfp-requirements/v1``: approaches, workloads, accelerators, fabric,
  environment.pinned, metrics, artifacts);
- ``declared``: the vendor's accepted bundle (``Declared``): the manifest's
  ``approach``, ``workloads`` and ``claims``, the kinds of its files, and the
  environment manifest's structured fields (accelerators, fabric, pinned);
- ``captured``: what the lab captured on the host of the vendor's latest run
  (``Captured``): a flat ``path -> value`` dict (``kernel.release``,
  ``gpus[0].driver_version``, ``nvme[1].transport`` …) and the run's id. The
  matrix looks facts up by path patterns (``CAPTURE_PATHS``); a pinned field the
  table does not know is looked up by its name as the last part of a path, so the
  matrix gains captured values as the capture grows. A pinned NVMe firmware is
  compared on the NVMe devices reached over the transport the bundle declares
  (the storage offered, not the lab host's own disks).

Verdicts (``met | partial | missing | contradicted``):

- the bundle declares nothing for the requirement → ``missing``; if the lab
  captured a value anyway, that value decides: ``partial`` when it meets the
  requirement (captured but not declared), ``contradicted`` when it does not;
- what the bundle declares is judged against the requirement: ``met``,
  ``partial`` (some of it: part of a concurrency range, some scenario kinds, a
  shorter context, fewer tenants or accelerators per node), or ``contradicted``
  (another approach, model family, transport, vendor or SDK version, a model
  size out of range, a pinned field not declared);
- a captured value that differs from the declared one → ``contradicted``,
  whatever the declaration says (the lab's capture outranks the vendor's word).

Every requirement row is mandatory except an artifact the RFP lists as optional.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

MET: Final = "met"
PARTIAL: Final = "partial"
MISSING: Final = "missing"
CONTRADICTED: Final = "contradicted"
VERDICTS: Final = (MET, PARTIAL, MISSING, CONTRADICTED)
CHIPS: Final = {
    MET: "badge-pass",
    PARTIAL: "badge-warn",
    MISSING: "badge-inconclusive",
    CONTRADICTED: "badge-fail",
}
MANIFEST: Final = "manifest.json"

# Where the capture (``reprogate.host-environment/v1``, flattened) holds a fact.
CAPTURE_PATHS: Final[Mapping[str, str]] = {
    "kernel": r"kernel\.release",
    "gpu_driver": r"gpus\[\d+\]\.driver_version",
    "nvme_firmware": r"nvme\[\d+\]\.firmware",
    "nic_firmware": r"(?:nics|rdma)\[\d+\]\.firmware",
    "transport": r"nvme(?:_subsystems)?\[\d+\]\.(?:paths\[\d+\]\.)?transport",
    "accelerator_vendor": r"gpus\[\d+\]\.vendor",
    "accelerator": r"gpus\[(\d+)\]\.\w+",
    "sdk": r"packages\.{name}",
    "scenario_kind": r"scenarios\[\d+\]\.kind",
}
FABRIC_TRANSPORTS: Final = frozenset({"tcp", "rdma", "fc"})


@dataclass(frozen=True)
class Value:
    """A value and where it comes from (an RFP clause, a manifest path, a run)."""

    value: Any
    source: str
    display: str = ""  # how a page shows it, when not as ``_show`` would

    @property
    def shown(self) -> str:
        """The value as a page shows it (a list comma-separated)."""
        return self.display or _show(self.value)

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


@dataclass(frozen=True)
class Row:
    id: str  # the requirement's path in the requirements document
    label: str
    mandatory: bool
    required: Value
    declared: Value | None
    captured: Value | None
    verdict: str
    reason: str

    @property
    def chip(self) -> str:
        return CHIPS[self.verdict]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "mandatory": self.mandatory,
            "required": self.required.as_dict(),
            "declared": self.declared.as_dict() if self.declared else None,
            "captured": self.captured.as_dict() if self.captured else None,
            "verdict": self.verdict,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Declared:
    """What one accepted bundle declares. ``environment``: the environment
    manifest's structured fields with ``file``, its path."""

    bundle: str = ""  # public id
    manifest: Mapping[str, Any] = field(default_factory=dict)
    kinds: tuple[str, ...] = ()
    environment: Mapping[str, Any] = field(default_factory=dict)

    @property
    def environment_file(self) -> str:
        return str(self.environment.get("file") or "environment manifest")


@dataclass(frozen=True)
class Captured:
    """The lab's capture of one run's host, flattened (``flatten``)."""

    run: str = ""  # the run's public id
    facts: Mapping[str, Any] = field(default_factory=dict)

    def find(self, pattern: str) -> list[tuple[str, Any]]:
        regex = re.compile(pattern)
        return [
            (path, value)
            for path, value in self.facts.items()
            if regex.fullmatch(path) and value not in (None, "")
        ]


@dataclass(frozen=True)
class Matrix:
    rows: tuple[Row, ...]
    bundle: str = ""
    run: str = ""

    def count(self, verdict: str) -> int:
        return sum(row.verdict == verdict for row in self.rows)

    @property
    def counts(self) -> dict[str, int]:
        return {verdict: self.count(verdict) for verdict in VERDICTS}

    @property
    def contradicted_mandatory(self) -> list[Row]:
        return [r for r in self.rows if r.mandatory and r.verdict == CONTRADICTED]

    @property
    def summary(self) -> str:
        counts = self.counts
        return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])

    def as_dict(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle or None,
            "run": self.run or None,
            "counts": self.counts,
            "rows": [row.as_dict() for row in self.rows],
        }


def flatten(value: Any, path: str = "", depth: int = 0) -> dict[str, Any]:
    """``{"gpus": [{"vendor": "NVIDIA"}]}`` -> ``{"gpus[0].vendor": "NVIDIA"}``."""
    if depth > 16:
        return {}
    if isinstance(value, Mapping):
        found: dict[str, Any] = {}
        for key, child in value.items():
            found |= flatten(child, f"{path}.{key}" if path else str(key), depth + 1)
        return found
    if isinstance(value, list):
        found = {}
        for index, child in enumerate(value):
            found |= flatten(child, f"{path}[{index}]", depth + 1)
        return found
    return {path: value} if path else {}


# --- comparisons ----------------------------------------------------------------------


def _norm(value: Any) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", str(value).strip().lower()).strip("-")


def same_version(declared: Any, captured: Any) -> bool:
    """Equal, or one is a prefix of the other at a boundary ("5.15" = "5.15.0-1")."""
    d, c = _norm(declared), _norm(captured)
    short, long = sorted((d, c), key=len)
    return bool(short) and (
        short == long or (long.startswith(short) and not long[len(short)].isalnum())
    )


def _numbers(text: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", str(text)))


def version_satisfies(version: Any, spec: str) -> bool:
    """``"12.4"`` against ``">=12.2"`` or ``">=12.2,<13"``: every clause of the
    requirements document's SDK specification (``>=``, ``>``, ``<=``, ``<``,
    ``==``, ``!=``, ``~=``; a bare version matches as a prefix) holds."""
    clauses = [c for c in spec.split(",") if c.strip()]
    return bool(clauses) and all(_clause_holds(version, c) for c in clauses)


def _clause_holds(version: Any, clause: str) -> bool:
    match = re.fullmatch(r"\s*(>=|<=|==|!=|~=|>|<)?\s*(.+?)\s*", clause)
    if match is None:
        return False
    op, wanted = match.groups()
    if op is None:
        return same_version(wanted, version)
    have, want = _numbers(version), _numbers(wanted)
    width = max(len(have), len(want))
    have, want = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
    prefix = max(len(_numbers(wanted)) - 1, 1)  # ~=8.0: 8.x at or above 8.0
    checks: dict[str, Callable[[], bool]] = {
        ">=": lambda: have >= want,
        ">": lambda: have > want,
        "<=": lambda: have <= want,
        "<": lambda: have < want,
        "==": lambda: have == want,
        "!=": lambda: have != want,
        "~=": lambda: have >= want and have[:prefix] == want[:prefix],
    }
    return checks[op]()


def _same_vendor(a: Any, b: Any) -> bool:
    x, y = _norm(a), _norm(b)
    return bool(x and y) and (x.startswith(y) or y.startswith(x))


def _span(value: Any) -> tuple[float, float] | None:
    """``[65, 80]`` or ``70`` -> (low, high)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), float(value)
    if isinstance(value, list) and len(value) == 2:
        low, high = value
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return float(low), float(high)
    return None


def _range(value: Any) -> str:
    """``[65, 80]`` -> ``65 to 80``."""
    span = _span(value)
    if span is None or span[0] == span[1]:
        return _show(value)
    return f"{_show(span[0])} to {_show(span[1])}"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_show(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- one row --------------------------------------------------------------------------

Judge = Callable[[Any, Any], tuple[str, str]]  # (required, declared) -> verdict, why


def _captured_value(found: Sequence[tuple[str, Any]], run: str) -> Value | None:
    if not found:
        return None
    values = sorted({str(v) for _, v in found})
    paths = ", ".join(p for p, _ in found[:3]) + (" …" if len(found) > 3 else "")
    return Value(values[0] if len(values) == 1 else values, f"run {run}: {paths}")


def _row(
    ident: str,
    label: str,
    required: Value,
    declared: Value | None,
    judge: Judge,
    *,
    captured: Value | None = None,
    agrees: Callable[[Any, Any], bool] | None = None,
    mandatory: bool = True,
) -> Row:
    """A row: the declaration judged against the requirement, then the capture
    against the declaration (``agrees(declared, captured)``) or, with nothing
    declared, against the requirement."""
    args = (ident, label, mandatory, required, declared, captured)
    if declared is None:
        if captured is None:
            return Row(*args, MISSING, "The bundle does not declare it.")
        verdict, why = judge(required.value, captured.value)
        if verdict == MET:
            said = f"Not declared; the lab captured {_show(captured.value)}."
            return Row(*args, PARTIAL, said)
        return Row(*args, CONTRADICTED, f"Not declared; the lab captured: {why}")
    verdict, why = judge(required.value, declared.value)
    if (
        captured is not None
        and agrees is not None
        and not agrees(declared.value, captured.value)
    ):
        why = (
            f"Declared {_show(declared.value)}, but the lab captured "
            f"{_show(captured.value)}."
        )
        return Row(*args, CONTRADICTED, why)
    return Row(*args, verdict, why)


def _all_agree(declared: Any, captured: Any) -> bool:
    values = captured if isinstance(captured, list) else [captured]
    return all(same_version(declared, v) for v in values)


# --- judges ---------------------------------------------------------------------------


def _one_of(required: Any, declared: Any) -> tuple[str, str]:
    allowed = [str(v) for v in required] if isinstance(required, list) else []
    if str(declared) in allowed:
        return MET, f"{declared} is one the RFP allows."
    return CONTRADICTED, f"{declared} is not one the RFP allows ({_show(allowed)})."


def _equal(required: Any, declared: Any) -> tuple[str, str]:
    if str(required) == str(declared):
        return MET, f"{_show(declared)}, as required."
    return CONTRADICTED, f"{_show(declared)}, where the RFP requires {_show(required)}."


def _in_span(required: Any, declared: Any) -> tuple[str, str]:
    span = _span(required)
    if span is None or not isinstance(declared, int | float):
        return MISSING, "Not comparable."
    if span[0] <= declared <= span[1]:
        return MET, f"{_show(declared)} is within {_range(required)}."
    return CONTRADICTED, f"{_show(declared)} is outside {_range(required)}."


def _at_least(required: Any, declared: Any) -> tuple[str, str]:
    if not isinstance(declared, int | float) or not isinstance(required, int | float):
        return MISSING, "Not comparable."
    if declared >= required:
        return MET, f"{_show(declared)} ≥ {_show(required)}."
    return PARTIAL, f"{_show(declared)} < {_show(required)} required."


def _covers(required: Any, declared: Any) -> tuple[str, str]:
    span = _span(required)
    levels = [v for v in declared if isinstance(v, int | float)] if declared else []
    if span is None or not levels:
        return MISSING, "Not comparable."
    inside = [v for v in levels if span[0] <= v <= span[1]]
    if min(levels) <= span[0] and max(levels) >= span[1]:
        return MET, f"Levels {_show(levels)} cover {_range(required)}."
    if inside:
        return PARTIAL, f"Levels {_show(levels)} cover part of {_range(required)}."
    return CONTRADICTED, f"No level of {_show(levels)} is within {_range(required)}."


def _subset(required: Any, declared: Any) -> tuple[str, str]:
    wanted = [str(v) for v in required or []]
    have = {str(v) for v in (declared if isinstance(declared, list) else [declared])}
    lacking = [v for v in wanted if v not in have]
    if not lacking:
        return MET, f"All of {_show(wanted)}."
    if len(lacking) < len(wanted):
        return PARTIAL, f"Lacks {_show(lacking)}."
    return MISSING, f"None of {_show(wanted)}."


def _present(required: Any, declared: Any) -> tuple[str, str]:
    return MET, f"Declared {_show(declared)}."


def _sdk(spec: str) -> Judge:
    def judge(required: Any, declared: Any) -> tuple[str, str]:
        if version_satisfies(declared, spec):
            return MET, f"{declared} satisfies {spec}."
        return CONTRADICTED, f"{declared} does not satisfy {spec}."

    return judge


def _stats(required: Any, declared: Any) -> tuple[str, str]:
    return _subset(required, declared) if required else (MET, "Claimed.")


# --- sections -------------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _approach(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    approaches = _list(req.get("approaches"))
    if not approaches:
        return []
    approach = dec.manifest.get("approach")
    declared = Value(approach, f"{MANIFEST}:approach") if approach else None
    required = Value(approaches, "requirements.approaches")
    return [_row("approaches", "Approach", required, declared, _one_of)]


WORKLOAD_FIELDS: Final = (
    ("model_family", "model family", _equal),
    ("params_b", "model size (billion parameters)", _in_span),
    ("context_tokens", "context (tokens)", _at_least),
    ("concurrency", "concurrency", _covers),
    ("tenants", "tenants", _at_least),
    ("scenario_kinds", "scenario kinds", _subset),
)


SPANS: Final = frozenset({"params_b", "concurrency"})  # [low, high] in the RFP


def _workloads(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    declared = {
        str(w.get("id")): (i, w)
        for i, w in enumerate(_list(dec.manifest.get("workloads")))
        if isinstance(w, Mapping)
    }
    kinds = _captured_value(cap.find(CAPTURE_PATHS["scenario_kind"]), cap.run)
    rows = []
    for i, workload in enumerate(_list(req.get("workloads"))):
        wid = str(_map(workload).get("id", i))
        index, own = declared.get(wid, (None, {}))
        for key, label, judge in WORKLOAD_FIELDS:
            if key not in _map(workload):
                continue
            at = f"workloads[{i}].{key}"
            value = own.get(key)
            source = f"{MANIFEST}:workloads[{index}].{key}"
            rows.append(
                _row(
                    f"workloads[{wid}].{key}",
                    f"Workload {wid}: {label}",
                    Value(
                        workload[key],
                        f"requirements.{at}",
                        _range(workload[key]) if key in SPANS else "",
                    ),
                    Value(value, source) if value is not None else None,
                    judge,
                    captured=kinds if key == "scenario_kinds" else None,
                    agrees=_kinds_ran if key == "scenario_kinds" else None,
                )
            )
    return rows


def _kinds_ran(declared: Any, captured: Any) -> bool:
    """The lab ran scenarios of kinds the bundle does not declare: not a
    contradiction (the lab plan may add kinds); only a declared kind never run is
    left to the gates."""
    return True


def _accelerators(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    declared = [a for a in _list(dec.environment.get("accelerators")) if _map(a)]
    where = f"{dec.environment_file}:accelerators"
    vendors = [str(a.get("vendor")) for a in declared if a.get("vendor")]
    per_node = [a.get("per_node") for a in declared if a.get("per_node")]
    gpus = cap.find(CAPTURE_PATHS["accelerator"])
    count = len({re.sub(r"\]\..*", "", p) for p, _ in gpus})
    cap_vendor = _captured_value(cap.find(CAPTURE_PATHS["accelerator_vendor"]), cap.run)
    cap_count = Value(count, f"run {cap.run}: gpus[]") if count else None
    rows = []
    for i, item in enumerate(_list(req.get("accelerators"))):
        item = _map(item)
        at = f"requirements.accelerators[{i}]"
        if item.get("vendors"):
            rows.append(
                _row(
                    f"accelerators[{i}].vendors",
                    "Accelerator vendor",
                    Value(item["vendors"], f"{at}.vendors"),
                    Value(vendors[0] if len(vendors) == 1 else vendors, where)
                    if vendors
                    else None,
                    _vendor_allowed,
                    captured=cap_vendor,
                    agrees=_vendors_agree,
                )
            )
        if item.get("per_node"):
            rows.append(
                _row(
                    f"accelerators[{i}].per_node",
                    "Accelerators per node",
                    Value(item["per_node"], f"{at}.per_node"),
                    Value(max(per_node), where) if per_node else None,
                    _at_least,
                    captured=cap_count,
                    agrees=lambda d, c: int(d) == int(c),
                )
            )
        rows += _sdks(item, at, declared, where, cap)
    return rows


def _vendor_allowed(required: Any, declared: Any) -> tuple[str, str]:
    have = declared if isinstance(declared, list) else [declared]
    allowed = [str(v) for v in _list(required)]
    if all(any(_same_vendor(h, a) for a in allowed) for h in have):
        return MET, f"{_show(have)} is one the RFP allows."
    return CONTRADICTED, f"{_show(have)} is not one the RFP allows ({_show(allowed)})."


def _vendors_agree(declared: Any, captured: Any) -> bool:
    have = declared if isinstance(declared, list) else [declared]
    seen = captured if isinstance(captured, list) else [captured]
    return all(any(_same_vendor(s, h) for h in have) for s in seen)


def _sdks(
    item: Mapping[str, Any],
    at: str,
    declared: list[Mapping[str, Any]],
    where: str,
    cap: Captured,
) -> list[Row]:
    rows = []
    for name, spec in _map(item.get("sdk")).items():
        versions = [_map(a.get("sdk")).get(name) for a in declared]
        version = next((v for v in versions if v), None)
        found = cap.find(CAPTURE_PATHS["sdk"].format(name=re.escape(str(name))))
        rows.append(
            _row(
                f"{at.removeprefix('requirements.')}.sdk.{name}",
                f"{name} SDK",
                Value(spec, f"{at}.sdk.{name}"),
                Value(version, f"{where}[].sdk.{name}") if version else None,
                _sdk(str(spec)),
                captured=_captured_value(found, cap.run),
                agrees=_all_agree,
            )
        )
    return rows


def _fabric(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    fabric, own = _map(req.get("fabric")), _map(dec.environment.get("fabric"))
    where = f"{dec.environment_file}:fabric"
    rows = []
    if fabric.get("transports"):
        found = [
            (p, v)
            for p, v in cap.find(CAPTURE_PATHS["transport"])
            if str(v).lower() in FABRIC_TRANSPORTS
        ]
        transport = own.get("transport")
        rows.append(
            _row(
                "fabric.transports",
                "Fabric transport",
                Value(fabric["transports"], "requirements.fabric.transports"),
                Value(transport, f"{where}.transport") if transport else None,
                _one_of,
                captured=_captured_value(found, cap.run),
                agrees=lambda d, c: _all_agree(d, c),
            )
        )
    if fabric.get("qos") is True:
        qos = own.get("qos")
        rows.append(
            _row(
                "fabric.qos",
                "Fabric quality of service",
                Value(True, "requirements.fabric.qos"),
                Value(qos, f"{where}.qos") if qos is not None else None,
                _equal,
            )
        )
    return rows


def _pinned(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    pinned = _list(_map(req.get("environment")).get("pinned"))
    own = _map(dec.environment.get("pinned"))
    rows = []
    for i, name in enumerate(pinned):
        pattern = CAPTURE_PATHS.get(str(name), rf"(?:.+\.)?{re.escape(str(name))}")
        value = own.get(name)
        rows.append(
            _row(
                f"environment.pinned.{name}",
                f"Pinned {str(name).replace('_', ' ')}",
                Value(name, f"requirements.environment.pinned[{i}]"),
                Value(value, f"{dec.environment_file}:pinned.{name}")
                if value
                else None,
                _present,
                captured=_captured_value(
                    _pinned_found(name, pattern, dec, cap), cap.run
                ),
                agrees=_all_agree,
            )
        )
    return rows


def _pinned_found(
    name: Any, pattern: str, dec: Declared, cap: Captured
) -> list[tuple[str, Any]]:
    """The captured values of a pinned field. NVMe firmware: of the namespaces
    reached over the transport the bundle declares (the storage offered, not the
    lab host's own disks), of every NVMe device when it declares none."""
    found = cap.find(pattern)
    transport = _map(dec.environment.get("fabric")).get("transport")
    if name != "nvme_firmware" or not transport:
        return found
    return [
        (path, value)
        for path, value in found
        if same_version(
            transport, cap.facts.get(path.replace(".firmware", ".transport"), "")
        )
    ]


def _metrics(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    claims = [c for c in _list(dec.manifest.get("claims")) if _map(c)]
    rows = []
    for i, metric in enumerate(_list(req.get("metrics"))):
        name = str(_map(metric).get("metric", ""))
        stats = _list(_map(metric).get("stats"))
        own = [(j, c) for j, c in enumerate(claims) if c.get("metric") == name]
        claimed = sorted({str(c.get("stat")) for _, c in own})
        where = ", ".join(f"{MANIFEST}:claims[{j}]" for j, _ in own[:3])
        rows.append(
            _row(
                f"metrics[{name}]",
                f"Metric {name}",
                Value(stats, f"requirements.metrics[{i}]"),
                Value(claimed, where) if own else None,
                _stats,
            )
        )
    return rows


def _artifacts(req: Mapping[str, Any], dec: Declared, cap: Captured) -> list[Row]:
    section = _map(req.get("artifacts"))
    wanted = [(k, True) for k in _list(section.get("mandatory"))]
    wanted += [(k, False) for k in _list(section.get("optional"))]
    rows = []
    for kind, mandatory in wanted:
        found = kind in dec.kinds
        rows.append(
            _row(
                f"artifacts.{kind}",
                f"Artifact {kind}",
                Value(kind, "requirements.artifacts." + (
                    "mandatory" if mandatory else "optional"
                )),
                Value(kind, f"{MANIFEST}:files[].kind") if found else None,
                _present,
                mandatory=mandatory,
            )
        )  # fmt: skip
    return rows


SECTIONS: Final = (
    _approach,
    _workloads,
    _accelerators,
    _fabric,
    _pinned,
    _metrics,
    _artifacts,
)


def fidelity_matrix(
    requirements: Mapping[str, Any],
    declared: Declared | None = None,
    captured: Captured | None = None,
) -> Matrix:
    """The rows of one vendor: every requirement of the document, in its order."""
    dec, cap = declared or Declared(), captured or Captured()
    rows: list[Row] = []
    for section in SECTIONS:
        rows += section(requirements, dec, cap)
    return Matrix(tuple(rows), bundle=dec.bundle, run=cap.run)


def summary_of(matrices: Iterable[Matrix]) -> dict[str, int]:
    """The verdict counts over several matrices."""
    total = dict.fromkeys(VERDICTS, 0)
    for matrix in matrices:
        for verdict, count in matrix.counts.items():
            total[verdict] += count
    return total
