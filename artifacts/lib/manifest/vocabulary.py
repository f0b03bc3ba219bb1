"""What a bundle declares in the RFP requirements' vocabulary (DESIGN §3b), checked
with every problem named by its path:

- in ``manifest.json``: ``approach`` (one of ``APPROACHES``) and ``workloads``
  (``[{"id", "model_family", "params_b", "context_tokens", "concurrency": [n, …],
  "tenants", "scenario_kinds": [kind, …]}]``);
- in the environment manifest (``environment/manifest.json``, else the first JSON
  file of kind ``environment``): ``accelerators`` (``[{"vendor", "model"?,
  "per_node", "sdk": {name: version}}]``), ``fabric`` (``{"transport", "qos"?}``)
  and ``pinned`` (``{field: version}``: ``kernel``, ``gpu_driver``,
  ``nvme_firmware``, ``nic_firmware`` …).

Every one of them is optional (a bundle that declares none is as valid as before);
a declared one must be well formed. The rest of the environment manifest stays
free-form. No Django: the CLI and the offline verifier import this module.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from artifacts.lib.scenario_kinds import KINDS as SCENARIO_KINDS

# The RFP requirements' vocabulary (procurement's requirements document uses the
# same words).
APPROACHES: Final = ("nvme-of-appliance", "local-nvme", "kv-cache-tiering")
MODEL_FAMILIES: Final = ("decoder", "encoder", "encoder-decoder", "moe-decoder")
TRANSPORTS: Final = ("tcp", "rdma", "fc")
PINNED_FIELDS: Final = ("kernel", "gpu_driver", "nvme_firmware", "nic_firmware")
MANIFEST_FIELDS: Final = ("approach", "workloads")
ENVIRONMENT_FIELDS: Final = ("accelerators", "fabric", "pinned")
ENVIRONMENT_MANIFEST: Final = "environment/manifest.json"
# The most of it the CLI's verify reads (the server's BUNDLE_ENVIRONMENT_MAX_BYTES
# default).
ENVIRONMENT_MAX_BYTES: Final = 1024 * 1024
MAX_WORKLOADS: Final = 100
MAX_LIST: Final = 64
SLUG_RE: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
FIELD_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")

Problems = list[tuple[str, str]]  # (path, message)


@dataclass(frozen=True)
class Workload:
    id: str
    model_family: str
    params_b: float
    context_tokens: int
    concurrency: tuple[int, ...]
    tenants: int
    scenario_kinds: tuple[str, ...]


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


class _Check:
    def __init__(self) -> None:
        self.problems: Problems = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append((path, message))

    def obj(
        self, value: Any, path: str, required: Sequence[str], optional: Sequence[str]
    ) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.fail(path, "Must be a JSON object.")
            return None
        for key in value:
            if key not in (*required, *optional) and not str(key).startswith("x-"):
                self.fail(
                    _at(path, key),
                    "Is not a field of the schema (extensions start with 'x-').",
                )
        for key in required:
            if key not in value:
                self.fail(_at(path, key), "Is required.")
        return value

    def choice(self, value: Any, path: str, choices: Sequence[str]) -> str | None:
        if isinstance(value, str) and value in choices:
            return value
        self.fail(path, f"Must be one of {', '.join(choices)}; got {_show(value)}.")
        return None

    def pattern(self, value: Any, path: str, regex: re.Pattern[str]) -> str | None:
        if isinstance(value, str) and regex.fullmatch(value):
            return value
        self.fail(
            path,
            "Must be a short lower-case name (letters, digits, '.', '_', '-'); "
            f"got {_show(value)}.",
        )
        return None

    def text(self, value: Any, path: str, max_length: int = 200) -> str | None:
        if (
            isinstance(value, str)
            and value
            and len(value) <= max_length
            and value.isprintable()
            and value == value.strip()
        ):
            return value
        self.fail(
            path,
            f"Must be a non-empty printable string of at most {max_length} "
            f"characters; got {_show(value)}.",
        )
        return None

    def integer(self, value: Any, path: str, minimum: int = 1) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        self.fail(path, f"Must be an integer ≥ {minimum}; got {_show(value)}.")
        return None

    def positive(self, value: Any, path: str) -> float | None:
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        ):
            return float(value)
        self.fail(path, f"Must be a finite number > 0; got {_show(value)}.")
        return None

    def items(self, value: Any, path: str, maximum: int = MAX_LIST) -> list[Any]:
        if not isinstance(value, list) or not value:
            self.fail(path, "Must be a non-empty list.")
            return []
        if len(value) > maximum:
            self.fail(path, f"Lists {len(value)} items; at most {maximum}.")
            return []
        return value


# --- manifest.json: approach and workloads ------------------------------------------


def _field(obj: Mapping[str, Any], path: str, key: str, check: Any) -> Any:
    return check(obj[key], _at(path, key)) if key in obj else None


def _listed(c: _Check, obj: Mapping[str, Any], path: str, key: str, check: Any) -> Any:
    if key not in obj:
        return None
    at = _at(path, key)
    return [check(item, _at(at, i)) for i, item in enumerate(c.items(obj[key], at))]


def _workload(c: _Check, value: Any, path: str) -> Workload | None:
    keys = ("id", "model_family", "params_b", "context_tokens", "concurrency")
    obj = c.obj(value, path, keys, ("tenants", "scenario_kinds"))
    if obj is None:
        return None
    before = len(c.problems)
    ident = _field(obj, path, "id", lambda x, p: c.pattern(x, p, SLUG_RE))
    family = _field(
        obj, path, "model_family", lambda x, p: c.choice(x, p, MODEL_FAMILIES)
    )
    params = _field(obj, path, "params_b", c.positive)
    context = _field(obj, path, "context_tokens", c.integer)
    levels = _listed(c, obj, path, "concurrency", c.integer)
    tenants = _field(obj, path, "tenants", c.integer)
    kinds = _listed(
        c, obj, path, "scenario_kinds", lambda x, p: c.choice(x, p, SCENARIO_KINDS)
    )
    if len(c.problems) > before:
        return None
    return Workload(
        str(ident),
        str(family),
        float(params),
        int(context),
        tuple(int(n) for n in levels or ()),
        int(tenants or 1),
        tuple(str(k) for k in kinds or ("steady",)),
    )


def manifest_vocabulary(
    top: Mapping[str, Any],
) -> tuple[str | None, tuple[Workload, ...], Problems]:
    """The ``approach`` and ``workloads`` a manifest's top level declares (None and
    () when it declares none) and the problems of what it declares."""
    c = _Check()
    approach = None
    if "approach" in top:
        approach = c.choice(top["approach"], "approach", APPROACHES)
    workloads: list[Workload] = []
    if "workloads" in top:
        items = c.items(top["workloads"], "workloads", MAX_WORKLOADS)
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            workload = _workload(c, item, f"workloads[{i}]")
            if workload is None:
                continue
            if workload.id in seen:
                c.fail(
                    f"workloads[{i}].id",
                    f"Repeats the id of workloads[{seen[workload.id]}] "
                    f"({_show(workload.id)}).",
                )
                continue
            seen[workload.id] = i
            workloads.append(workload)
    return approach, tuple(workloads), c.problems


# --- the environment manifest: accelerators, fabric, pinned -------------------------


def environment_manifest_path(files: Sequence[tuple[str, str]]) -> str | None:
    """Of the manifest's ``(path, kind)`` files: ``environment/manifest.json``,
    else the first JSON file of kind ``environment`` (the runner's choice)."""
    paths = sorted(
        (p for p, kind in files if kind == "environment"),
        key=lambda p: (p != ENVIRONMENT_MANIFEST, not p.endswith(".json"), p),
    )
    return paths[0] if paths and paths[0].endswith(".json") else None


def _accelerator(c: _Check, value: Any, path: str) -> None:
    obj = c.obj(value, path, ("vendor", "per_node"), ("model", "sdk"))
    if obj is None:
        return
    if "vendor" in obj:
        c.pattern(obj["vendor"], _at(path, "vendor"), SLUG_RE)
    if "model" in obj:
        c.text(obj["model"], _at(path, "model"))
    if "per_node" in obj:
        c.integer(obj["per_node"], _at(path, "per_node"))
    sdk = obj.get("sdk", {})
    if not isinstance(sdk, Mapping):
        c.fail(_at(path, "sdk"), "Must be an object: SDK name -> version.")
        return
    for name, version in sdk.items():
        if not SLUG_RE.fullmatch(str(name)):
            c.fail(_at(_at(path, "sdk"), name), "Is not an SDK name (cuda, cann …).")
        else:
            c.text(version, _at(_at(path, "sdk"), name), max_length=64)


def _fabric(c: _Check, value: Any, path: str) -> None:
    obj = c.obj(value, path, ("transport",), ("qos",))
    if obj is None:
        return
    if "transport" in obj:
        c.choice(obj["transport"], _at(path, "transport"), TRANSPORTS)
    if "qos" in obj and not isinstance(obj["qos"], bool):
        c.fail(_at(path, "qos"), f"Must be true or false; got {_show(obj['qos'])}.")


def _pinned(c: _Check, value: Any, path: str) -> None:
    if not isinstance(value, Mapping) or not value:
        c.fail(path, "Must be a non-empty object: field -> version.")
        return
    for name, version in value.items():
        if not FIELD_RE.fullmatch(str(name)):
            c.fail(_at(path, name), "Is not a field name (lower_snake, like kernel).")
        else:
            c.text(version, _at(path, name), max_length=120)


def environment_declarations(document: Any) -> tuple[dict[str, Any], Problems]:
    """The structured fields of a decoded environment manifest (``{}`` when it
    declares none or is no JSON object) and the problems of those it declares."""
    if not isinstance(document, Mapping):
        return {}, []
    c = _Check()
    checks = {"accelerators": None, "fabric": _fabric, "pinned": _pinned}
    for key, check in checks.items():
        if key not in document:
            continue
        if check is None:
            for i, item in enumerate(c.items(document[key], key)):
                _accelerator(c, item, f"{key}[{i}]")
        else:
            check(c, document[key], key)
    if c.problems:
        return {}, c.problems
    return {k: document[k] for k in ENVIRONMENT_FIELDS if k in document}, []


def workload_dict(workload: Workload) -> dict[str, Any]:
    return {
        "id": workload.id,
        "model_family": workload.model_family,
        "params_b": workload.params_b,
        "context_tokens": workload.context_tokens,
        "concurrency": list(workload.concurrency),
        "tenants": workload.tenants,
        "scenario_kinds": list(workload.scenario_kinds),
    }


def environment_problems(path: str, data: bytes | None) -> Problems:
    """``(where, message)`` of the environment manifest at ``path`` (its bytes;
    None when too large to read): ``environment/manifest.json:fabric.transport``.
    A file that is not JSON declares nothing (the manifest stays free-form)."""
    if data is None:
        return []
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return []
    _, problems = environment_declarations(document)
    return [(f"{path}:{at}", message) for at, message in problems]
