"""The completeness and transparency report of a bundle: pure functions from the
RFP's requirements and the bundle's manifest and environment files to a
JSON-able dict (stored on the bundle, shown on its page, read by the evaluation).

The report answers four questions:

1. ``artifacts``: which of the RFP's required artifact kinds the bundle lists
   files of, which mandatory ones are missing, and which kinds fail their
   content check (``artifacts.lib.content``: container images, IaC, runbooks,
   SBOMs; the whole content report is the report's ``content``); a signed
   report counts only when its signature validates (``signed_reports``);
2. ``environment``: whether the environment manifest(s) (files of kind
   ``environment``) name the OS, kernel, driver and firmware versions, the
   NVMe-oF transport and the topology;
3. ``claims``: whether every claim refers to a scenario of the bundle's harness;
4. ``metrics``: which of the RFP's required metrics the claims cover.

Environment manifests are read tolerantly: JSON (nested objects and lists), or
``key: value`` / ``key=value`` lines (``/etc/os-release`` style). A field counts
as named when some key *path* holds a non-empty value and the path's words (split
at ``.``, ``_``, ``-``, spaces and camelCase) contain one of the field's words:
``hosts.gpu.os``, ``OS_VERSION``, ``nvmeof.transport``, ``nicFirmware``,
``kernel-release``. The first match in document order is reported.

No Django here: the offline verifier may rebuild the report.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from artifacts.lib.manifest import Manifest
from artifacts.lib.manifest.vocabulary import (
    environment_declarations,
    environment_manifest_path,
)

SCHEMA: Final = "reprogate.completeness/v1"
MAX_VALUE_CHARS: Final = 120
MAX_LEAVES: Final = 20_000
MAX_DEPTH: Final = 32


@dataclass(frozen=True)
class EnvironmentField:
    key: str
    label: str
    words: tuple[frozenset[str], ...]  # any one word set, all of its words present


def _any(*words: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(word.split("+")) for word in words)


ENVIRONMENT_FIELDS: Final = (
    EnvironmentField(
        "os",
        "Operating system and version",
        _any("os", "operating+system", "distro", "distribution", "pretty+name"),
    ),
    EnvironmentField("kernel", "Kernel version", _any("kernel", "uname")),
    EnvironmentField(
        "driver", "Driver versions", _any("driver", "drivers", "ofed", "mofed")
    ),
    EnvironmentField(
        "firmware", "Firmware versions", _any("firmware", "fw", "bios", "vbios")
    ),
    EnvironmentField(
        "nvmeof_transport",
        "NVMe-oF transport",
        _any("transport", "trtype", "nvmeof+fabric", "nvmf+fabric"),
    ),
    EnvironmentField("topology", "Topology", _any("topology")),
)


@dataclass(frozen=True)
class RequiredArtifact:
    """One line of the RFP's checklist (``procurement.RequiredArtifact``)."""

    kind: str
    title: str
    mandatory: bool = True


@dataclass(frozen=True)
class RequiredMetric:
    name: str
    stats: tuple[str, ...] = ()


# --- environment -------------------------------------------------------------------

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")
_LINE = re.compile(r"^\s*([A-Za-z0-9_.\- ]{1,100}?)\s*[:=]\s*(.+?)\s*$")


def words_of(path: str) -> frozenset[str]:
    """``nvmeOf.transport_type`` -> {nvme, of, nvmeof, transport, type}: words and
    the joins of neighbours, so ``nvme_of`` and ``nvmeof`` both give ``nvmeof``."""
    parts = [p for p in _SPLIT.split(_CAMEL.sub(r"\1 \2", path).lower()) if p]
    joined = {a + b for a, b in itertools.pairwise(parts)}
    return frozenset(parts) | joined


def _leaves(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """``(path, scalar)`` for every non-empty scalar, in document order (nothing
    below ``MAX_DEPTH`` levels)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from _leaves(child, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _leaves(child, f"{path}[{index}]", depth + 1)
    elif value is not None and not isinstance(value, bool) and str(value).strip():
        yield path, value


def _text_pairs(text: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match:
            pairs.setdefault(match.group(1), match.group(2).strip("\"'"))
    return pairs


def parse_environment(data: bytes) -> Any:
    """JSON if it is JSON, else ``key: value`` lines; None if neither."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _text_pairs(text) or None


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _find(
    field: EnvironmentField, documents: Mapping[str, Any]
) -> dict[str, Any] | None:
    for file_path, document in documents.items():
        for count, (key, value) in enumerate(_leaves(document)):
            if count >= MAX_LEAVES:
                break
            words = words_of(key)
            if any(wanted <= words for wanted in field.words):
                return {"file": file_path, "key": key, "value": _short(value)}
    return None


def environment_report(environment: Mapping[str, bytes | None]) -> dict[str, Any]:
    """What the environment files (path -> bytes; None when unreadable, e.g. too
    large) name. ``complete`` when every field is found."""
    documents = {}
    unreadable = []
    for path, data in environment.items():
        parsed = parse_environment(data) if data is not None else None
        if parsed is None:
            unreadable.append(path)
        else:
            documents[path] = parsed
    fields = []
    for field in ENVIRONMENT_FIELDS:
        found = _find(field, documents)
        fields.append({"key": field.key, "label": field.label, "found": bool(found)})
        fields[-1].update({"where": found} if found else {})
    chosen = environment_manifest_path([(p, "environment") for p in documents])
    declared, _ = environment_declarations(documents.get(chosen) if chosen else None)
    return {
        "files": sorted(environment),
        "unreadable": sorted(unreadable),
        # the structured fields of the environment manifest (accelerators, fabric,
        # pinned), with the file they come from
        "declared": {"file": chosen, **declared} if declared else {},
        "fields": fields,
        "missing": [f["key"] for f in fields if not f["found"]],
        "complete": bool(documents) and all(f["found"] for f in fields),
    }


# --- artifacts, claims, metrics ----------------------------------------------------


# Kinds whose title promises a signature: a file of the kind counts only when it
# is a PDF whose signature validates (``signed_reports``, checked at ingest by
# ``artifacts.lib.reports``). Without those results (a report rebuilt offline)
# such an item is "supplied", never "signed" (``NOT_VERIFIED``).
SIGNED_KINDS: Final = frozenset({"report"})
NOT_VERIFIED: Final = "not_verified"


def _signature_state(
    paths: Sequence[str], signed: Mapping[str, Mapping[str, Any]]
) -> str:
    """``valid`` when one of the kind's PDFs validates, else the first PDF's
    state (``invalid``, ``unsigned``, ``unreadable``), else ``no_pdf``."""
    states = [str(signed[p].get("status")) for p in paths if p in signed]
    if "valid" in states:
        return "valid"
    return states[0] if states else "no_pdf"


def _artifact_item(
    r: RequiredArtifact,
    paths: Sequence[str],
    content: Mapping[str, Any],
    signed: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": r.kind,
        "title": r.title,
        "mandatory": r.mandatory,
        "present": bool(paths),
        "files": len(paths),
    }
    checked = content.get(r.kind) if paths else None
    if isinstance(checked, Mapping):  # "passed" or "failed" its content check
        item["content"] = "passed" if checked.get("ok") else "failed"
    if r.kind in SIGNED_KINDS:
        item["signature"] = NOT_VERIFIED
        item["pdf_files"] = sum(p.lower().endswith(".pdf") for p in paths)
        if signed is not None:
            item["signature"] = _signature_state(paths, signed)
            item["supplied"] = bool(paths)
            item["present"] = item["signature"] == "valid"
    return item


def artifacts_report(
    required: Sequence[RequiredArtifact],
    manifest: Manifest,
    content: Mapping[str, Any] | None = None,
    signed: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """``content``: the content report's ``kinds`` (kind -> its check);
    ``signed``: path -> ``artifacts.lib.reports`` verdict of each PDF of a kind
    in ``SIGNED_KINDS`` (None: not checked)."""
    checks = content or {}
    paths: dict[str, list[str]] = {}
    for file in manifest.files:
        paths.setdefault(file.kind, []).append(file.path)
    items = [_artifact_item(r, paths.get(r.kind, []), checks, signed) for r in required]
    missing = [i for i in items if i["mandatory"] and not i["present"]]
    failed = sorted(k for k, v in checks.items() if not v.get("ok"))
    return {
        "required": items,
        "kinds_present": sorted(paths),
        "kinds_counted": _kinds_counted(paths, signed),
        "mandatory_total": sum(1 for i in items if i["mandatory"]),
        "mandatory_present": sum(1 for i in items if i["mandatory"] and i["present"]),
        "missing_mandatory": [
            {"kind": i["kind"], "title": i["title"]} for i in missing
        ],
        "content_failed": failed,
        "complete": not missing and not failed,
    }


def _kinds_counted(
    paths: Mapping[str, Sequence[str]], signed: Mapping[str, Mapping[str, Any]] | None
) -> list[str]:
    """The kinds present, less signed kinds none of whose PDFs validates."""
    if signed is None:
        return sorted(paths)
    return sorted(
        kind
        for kind, kind_paths in paths.items()
        if kind not in SIGNED_KINDS or _signature_state(kind_paths, signed) == "valid"
    )


def _report_problems(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = []
    for part in (item, item.get("statement")):
        if isinstance(part, Mapping) and isinstance(part.get("problem"), Mapping):
            found.append({**part["problem"], "path": part.get("path", item["path"])})
    return found


def signed_reports_report(signed: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every checked PDF's verdict (and its statement's), with the problems."""
    files = [{**verdict, "path": path} for path, verdict in sorted(signed.items())]
    return {
        "files": files,
        "valid": sum(1 for item in files if item.get("status") == "valid"),
        "problems": [p for item in files for p in _report_problems(item)],
    }


def claims_report(manifest: Manifest) -> dict[str, Any]:
    scenarios = {s.name for s in manifest.harness.scenarios}
    claims = [
        {
            "metric": c.metric,
            "stat": c.stat,
            "scenario": c.scenario,
            "value": c.value,
            "unit": c.unit,
            "scenario_in_harness": c.scenario in scenarios,
        }
        for c in manifest.claims
    ]
    return {
        "scenarios": sorted(scenarios),
        "claims": claims,
        "unknown_scenarios": sorted(
            {c["scenario"] for c in claims if not c["scenario_in_harness"]}
        ),
        "complete": all(c["scenario_in_harness"] for c in claims),
    }


def metrics_report(
    required: Sequence[RequiredMetric], manifest: Manifest
) -> dict[str, Any]:
    claimed: dict[str, set[str]] = {}
    for claim in manifest.claims:
        claimed.setdefault(claim.metric, set()).add(claim.stat)
    items = []
    for metric in required:
        stats = claimed.get(metric.name, set())
        missing = [s for s in metric.stats if s not in stats]
        items.append(
            {
                "name": metric.name,
                "claimed": metric.name in claimed,
                "stats_claimed": sorted(stats),
                "stats_missing": missing,
            }
        )
    return {
        "required": items,
        "missing": [i["name"] for i in items if not i["claimed"]],
        "complete": all(i["claimed"] and not i["stats_missing"] for i in items),
    }


def completeness_report(
    *,
    manifest: Manifest,
    required_artifacts: Sequence[RequiredArtifact] = (),
    required_metrics: Sequence[RequiredMetric] = (),
    environment: Mapping[str, bytes | None] | None = None,
    content: Mapping[str, Any] | None = None,
    signed: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The whole report. ``environment``: the bytes of the manifest's files of
    kind ``environment`` (None for one that could not be read); ``content``: the
    content report (``artifacts.lib.content.content_report``), kept as the
    report's ``content`` and judged in ``artifacts``. ``signed``: the verdicts
    on the PDFs of signed kinds (``artifacts.lib.reports``); given, they are
    listed under ``signed_reports`` (not a check of its own: an invalid one
    makes its artifact missing)."""
    kinds = (content or {}).get("kinds") or {}
    parts = {
        "artifacts": artifacts_report(required_artifacts, manifest, kinds, signed),
        "environment": environment_report(environment or {}),
        "claims": claims_report(manifest),
        "metrics": metrics_report(required_metrics, manifest),
    }
    checks = [part["complete"] for part in parts.values()]
    extra = (
        {"signed_reports": signed_reports_report(signed)} if signed is not None else {}
    )
    if content is not None:
        extra["content"] = dict(content)
    return {
        "schema": SCHEMA,
        **parts,
        **extra,
        "complete": all(checks),
        "score": {"passed": sum(checks), "total": len(checks)},
    }


def stats_of(text: str) -> tuple[str, ...]:
    """``"p50, p99"`` (``RequiredMetric.stats``) -> ``("p50", "p99")``."""
    return tuple(s.strip() for s in text.split(",") if s.strip())


def environment_paths(manifest: Manifest) -> Iterable[str]:
    return [f.path for f in manifest.files if f.kind == "environment"]
