"""Validation of a decoded manifest against ``reprogate.bundle/v1``, every
problem named by its path (``files[3].sha256``); ``parse_manifest``. No Django."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

from artifacts.lib.archive import (
    LookAlikes,
    confusable_problem,
    fold_name,
    path_problems,
)
from artifacts.lib.manifest.decode import _at, _check_json, _decode, _show
from artifacts.lib.manifest.schema import (
    CACHES,
    COMPONENTS,
    CREATED_RE,
    KINDS,
    MAX_FILES,
    MAX_ITEMS,
    METRIC_RE,
    PARSERS,
    RESERVED_PATHS,
    SCENARIO_RE,
    SCHEMA_ID,
    SHA256_RE,
    STATS,
    Change,
    Claim,
    Harness,
    HarnessOutput,
    Manifest,
    ManifestFile,
    ManifestResult,
    Scenario,
)
from artifacts.lib.manifest.vocabulary import MANIFEST_FIELDS, manifest_vocabulary
from artifacts.lib.problems import ProblemList
from artifacts.lib.scenario_kinds import SCENARIO_FIELDS, scenario_kind_problems

# Path problems the manifest reports under their own code (the others are
# manifest_schema): what a person must fix in the name, not in the JSON.
OWN_CODES: Final = frozenset({"path_not_nfc"})

# --- validation -------------------------------------------------------------------

_Check = Callable[[Any, str], Any]


class _Validator:
    def __init__(self, problems: ProblemList) -> None:
        self.problems = problems

    def fail(self, path: str, message: str, code: str = "manifest_schema") -> None:
        self.problems.add(code, message, path or None)

    def obj(
        self,
        value: Any,
        path: str,
        required: tuple[str, ...],
        optional: tuple[str, ...] = (),
    ) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(
                path,
                "Must be a JSON object."
                if path
                else "The manifest must be a JSON object.",
            )
            return None
        for key in value:
            if key not in required and key not in optional and not key.startswith("x-"):
                self.fail(
                    _at(path, key),
                    "Is not a field of the schema (extensions start with 'x-').",
                )
        for key in required:
            if key not in value:
                self.fail(_at(path, key), "Is required.")
        return value

    def field(self, obj: Mapping[str, Any], path: str, key: str, check: _Check) -> Any:
        return check(obj[key], _at(path, key)) if key in obj else None

    def array(
        self, value: Any, path: str, *, minimum: int, maximum: int
    ) -> list[Any] | None:
        if not isinstance(value, list):
            self.fail(path, "Must be a list.")
            return None
        if len(value) < minimum:
            self.fail(
                path, f"Must list at least {minimum} item{'s' if minimum > 1 else ''}."
            )
        if len(value) > maximum:
            self.fail(path, f"Lists {len(value)} items; at most {maximum}.")
            return None
        return value

    def text(self, value: Any, path: str, *, max_length: int = 200) -> str | None:
        if not isinstance(value, str) or not value:
            self.fail(path, "Must be a non-empty string.")
        elif len(value) > max_length:
            self.fail(path, f"Is longer than {max_length} characters.")
        elif not value.isprintable() or value != value.strip():
            self.fail(path, "Has control characters or leading/trailing spaces.")
        else:
            return value
        return None

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str | None:
        if value in choices and isinstance(value, str):
            return value
        self.fail(path, f"Must be one of {', '.join(choices)}; got {_show(value)}.")
        return None

    def pattern(
        self, value: Any, path: str, regex: re.Pattern[str], what: str
    ) -> str | None:
        if isinstance(value, str) and regex.fullmatch(value):
            return value
        self.fail(path, f"Must be {what}; got {_show(value)}.")
        return None

    def integer(self, value: Any, path: str, *, minimum: int) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        self.fail(path, f"Must be an integer ≥ {minimum}; got {_show(value)}.")
        return None

    def boolean(self, value: Any, path: str) -> bool | None:
        if isinstance(value, bool):
            return value
        self.fail(path, f"Must be true or false; got {_show(value)}.")
        return None

    def number(self, value: Any, path: str, *, positive: bool = False) -> float | None:
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
        )
        if ok and (value > 0 or not positive):
            return float(value)
        wanted = "a finite number > 0" if positive else "a finite number"
        self.fail(path, f"Must be {wanted}; got {_show(value)}.")
        return None

    def bundle_path(self, value: Any, path: str) -> str | None:
        name = self.text(value, path, max_length=10_000)
        if name is None:
            return None
        broken = path_problems(name)
        if name.startswith("./") or name.endswith("/"):
            message = "Write the path without a leading './' or trailing '/'."
            broken.append(("manifest_schema", message))
        for code, message in broken:
            self.fail(path, message, code if code in OWN_CODES else "manifest_schema")
        return None if broken else name

    def created(self, value: Any, path: str) -> datetime | None:
        match = CREATED_RE.fullmatch(value) if isinstance(value, str) else None
        if match:
            year, month, day, hour, minute, second, fraction = match.groups()
            try:
                micro = int((fraction or "0")[:6].ljust(6, "0"))
                y, mo, d, h, mi, s = map(int, (year, month, day, hour, minute, second))
                return datetime(y, mo, d, h, mi, s, micro, tzinfo=UTC)
            except ValueError:
                pass
        self.fail(
            path,
            "Must be an RFC 3339 UTC time like 2026-11-29T12:00:00Z; "
            f"got {_show(value)}.",
        )
        return None


def _unique(
    v: _Validator, values: list[tuple[str, str]], what: str, fold: bool = False
) -> set[str]:
    """Report each ``(path, value)`` whose value (case-folded if ``fold``)
    repeats; return the values involved."""
    first: dict[str, tuple[str, str]] = {}
    repeated: set[str] = set()
    for path, value in values:
        key = fold_name(value) if fold else value
        if key in first:
            other_path, other = first[key]
            same = "the same" if other == value else "a colliding"
            v.fail(path, f"Repeats {same} {what} as {other_path} ({_show(other)}).")
            repeated |= {value, other}
        else:
            first[key] = (path, value)
    return repeated


def _look_alikes(v: _Validator, paths: list[tuple[str, str]]) -> set[str]:
    """Report each listed path that looks the same as an earlier one (Unicode TR39
    confusables); return the paths involved."""
    seen, involved = LookAlikes(), set()
    for at, name in paths:
        if (first := seen.first_like(name)) is not None:
            v.fail(at, confusable_problem(name, first)[1], "path_confusable")
            involved |= {name, first}
    return involved


def _file_entry(
    v: _Validator, value: Any, path: str
) -> tuple[ManifestFile | None, str | None]:
    obj = v.obj(value, path, ("path", "sha256", "size", "kind"))
    if obj is None:
        return None, None
    name = v.field(obj, path, "path", v.bundle_path)
    if name in RESERVED_PATHS:
        v.fail(
            _at(path, "path"),
            f"{name} is part of the bundle's signature, not a listed file.",
        )
        name = None
    sha = v.field(
        obj,
        path,
        "sha256",
        lambda x, p: v.pattern(x, p, SHA256_RE, "64 lowercase hex characters"),
    )
    size = v.field(obj, path, "size", lambda x, p: v.integer(x, p, minimum=0))
    kind = v.field(obj, path, "kind", lambda x, p: v.choice(x, p, KINDS))
    mentioned = obj.get("path") if isinstance(obj.get("path"), str) else None
    if None in (name, sha, size, kind):
        return None, mentioned
    return ManifestFile(name, sha, size, kind), mentioned


@dataclass
class _Files:
    valid: list[ManifestFile]
    mentioned: set[str]
    ok: bool  # every entry valid
    known: bool  # ``files`` is a list


def _files(v: _Validator, value: Any, path: str) -> _Files:
    items = v.array(value, path, minimum=1, maximum=MAX_FILES)
    if items is None:
        return _Files([], set(), ok=False, known=False)
    files, mentioned, paths = [], set(), []
    for i, item in enumerate(items):
        entry, name = _file_entry(v, item, f"{path}[{i}]")
        if name is not None:
            mentioned.add(name)
            paths.append((f"{path}[{i}].path", name))
        if entry is not None:
            files.append(entry)
    repeated = _unique(v, paths, "path", fold=True)
    repeated |= _look_alikes(
        v, [(at, name) for at, name in paths if name not in repeated]
    )
    valid = [entry for entry in files if entry.path not in repeated]
    return _Files(valid, mentioned, ok=len(valid) == len(items), known=True)


def _output(v: _Validator, value: Any, path: str) -> HarnessOutput | None:
    obj = v.obj(value, path, ("path", "parser"))
    if obj is None:
        return None
    name = v.field(obj, path, "path", v.bundle_path)
    parser = v.field(obj, path, "parser", lambda x, p: v.choice(x, p, PARSERS))
    return HarnessOutput(name, parser) if name and parser else None


def _scenario(v: _Validator, value: Any, path: str) -> Scenario | None:
    keys = ("name", "cache", "concurrency", "batch_size", "duration_s")
    obj = v.obj(
        value, path, keys, ("seed_sensitive", "working_set_bytes", *SCENARIO_FIELDS)
    )
    if obj is None:
        return None
    kind_problems = scenario_kind_problems(obj, path)
    for at, message in kind_problems:
        v.fail(at, message)
    values = (
        v.field(
            obj,
            path,
            "name",
            lambda x, p: v.pattern(
                x, p, SCENARIO_RE, "a short name of letters, digits, '.', '_' or '-'"
            ),
        ),
        v.field(obj, path, "cache", lambda x, p: v.choice(x, p, CACHES)),
        v.field(obj, path, "concurrency", lambda x, p: v.integer(x, p, minimum=1)),
        v.field(obj, path, "batch_size", lambda x, p: v.integer(x, p, minimum=1)),
        v.field(obj, path, "duration_s", lambda x, p: v.number(x, p, positive=True)),
    )
    sensitive = v.field(obj, path, "seed_sensitive", v.boolean)
    working_set = v.field(
        obj, path, "working_set_bytes", lambda x, p: v.integer(x, p, minimum=1)
    )
    broken = ("seed_sensitive" in obj and sensitive is None) or (
        "working_set_bytes" in obj and working_set is None
    )
    if None in values or broken or kind_problems:
        return None
    return Scenario(
        *values, bool(sensitive), working_set, kind=str(obj.get("kind", "steady"))
    )


def scenario_problems(value: Any, path: str) -> list[tuple[str, str]]:
    """``(path, message)`` of what is wrong with one scenario object, checked
    as a manifest's ``harness.scenarios[]`` is (a lab plan's scenarios)."""
    problems = ProblemList()
    _scenario(_Validator(problems), value, path)
    return [(p.path or path, p.message) for p in problems]


def _listed(
    v: _Validator, value: Any, path: str, check: Callable[[_Validator, Any, str], Any]
) -> list[Any] | None:
    items = v.array(value, path, minimum=1, maximum=MAX_ITEMS)
    if items is None:
        return None
    parsed = [check(v, item, f"{path}[{i}]") for i, item in enumerate(items)]
    return None if None in parsed else parsed


def _harness(
    v: _Validator, value: Any, path: str, files: _Files
) -> tuple[Harness | None, list[str] | None]:
    """The harness and the scenario names (None if they cannot be known)."""
    obj = v.obj(value, path, ("entrypoint", "outputs", "scenarios"))
    if obj is None:
        return None, None
    entrypoint = v.field(obj, path, "entrypoint", v.bundle_path)
    outputs = v.field(obj, path, "outputs", lambda x, p: _listed(v, x, p, _output))
    scenarios = v.field(
        obj, path, "scenarios", lambda x, p: _listed(v, x, p, _scenario)
    )
    if outputs:
        _unique(
            v,
            [(f"{path}.outputs[{i}].path", o.path) for i, o in enumerate(outputs)],
            "path",
        )
    if scenarios:
        _unique(
            v,
            [(f"{path}.scenarios[{i}].name", s.name) for i, s in enumerate(scenarios)],
            "name",
        )
    names = [s.name for s in scenarios] if scenarios else None
    if entrypoint is not None:
        _entrypoint(v, entrypoint, files, _at(path, "entrypoint"))
    if entrypoint is None or outputs is None or scenarios is None:
        return None, names
    return Harness(entrypoint, tuple(outputs), tuple(scenarios)), names


def _claim(
    v: _Validator, value: Any, path: str, scenarios: list[str] | None
) -> Claim | None:
    obj = v.obj(value, path, ("metric", "stat", "scenario", "value", "unit"))
    if obj is None:
        return None
    metric = v.field(
        obj,
        path,
        "metric",
        lambda x, p: v.pattern(
            x, p, METRIC_RE, "a lower_snake metric name like ttft_ms"
        ),
    )
    stat = v.field(obj, path, "stat", lambda x, p: v.choice(x, p, STATS))
    scenario = v.field(obj, path, "scenario", lambda x, p: v.text(x, p, max_length=64))
    if scenario is not None and scenarios is not None and scenario not in scenarios:
        v.fail(
            _at(path, "scenario"),
            f"The harness has no scenario {_show(scenario)}.",
            "claim_scenario_unknown",
        )
    number = v.field(obj, path, "value", v.number)
    unit = v.field(obj, path, "unit", lambda x, p: v.text(x, p, max_length=64))
    values = (metric, stat, scenario, number, unit)
    return None if None in values else Claim(*values)


def _entrypoint(v: _Validator, entrypoint: str, files: _Files, path: str) -> None:
    listed = next((f for f in files.valid if f.path == entrypoint), None)
    if listed is None and files.known and entrypoint not in files.mentioned:
        message = f"{_show(entrypoint)} is not one of the listed files."
        v.fail(path, message, "entrypoint_unlisted")
    elif listed is not None and listed.kind != "harness":
        message = f"{_show(entrypoint)} is listed with kind {listed.kind!r}."
        v.fail(path, message, "entrypoint_not_harness")


@dataclass(frozen=True)
class _Parts:
    """What a broken manifest still tells: its valid files, rfp and vendor."""

    files: _Files = field(default_factory=lambda: _Files([], set(), False, False))
    rfp: str | None = None
    vendor: str | None = None


def _change(v: _Validator, value: Any, path: str) -> Change | None:
    obj = v.obj(value, path, ("component", "from", "to"), ("note",))
    if obj is None:
        return None
    component = v.field(obj, path, "component", lambda x, p: v.choice(x, p, COMPONENTS))
    old = v.field(obj, path, "from", v.text)
    new = v.field(obj, path, "to", v.text)
    note = v.field(obj, path, "note", lambda x, p: v.text(x, p, max_length=1000))
    if old is not None and old == new:
        v.fail(_at(path, "to"), f"Is the same as from ({_show(old)}): no change.")
        return None
    if None in (component, old, new) or ("note" in obj and note is None):
        return None
    return Change(component, old, new, note or "")


def _update(
    v: _Validator, top: Mapping[str, Any]
) -> tuple[str | None, tuple[Change, ...]] | None:
    """An update bundle's ``supersedes`` and ``changes`` (None: broken)."""
    supersedes = v.field(
        top,
        "",
        "supersedes",
        lambda x, p: v.pattern(
            x, p, SHA256_RE, "the SHA-256 of an accepted bundle (64 lowercase hex)"
        ),
    )
    if "changes" in top and "supersedes" not in top:
        v.fail(
            "changes",
            "Only an update bundle lists changes: name the accepted bundle it "
            "updates in supersedes.",
            "changes_without_supersedes",
        )
        return None
    items = v.array(top.get("changes", []), "changes", minimum=0, maximum=MAX_ITEMS)
    if items is None:
        return None
    changes = [_change(v, item, f"changes[{i}]") for i, item in enumerate(items)]
    valid = tuple(change for change in changes if change is not None)
    broken = len(valid) != len(changes) or ("supersedes" in top and not supersedes)
    return None if broken else (supersedes, valid)


def _validate(v: _Validator, data: Any) -> tuple[Manifest | None, _Parts]:
    required = ("schema", "rfp", "vendor", "created", "files", "harness")
    top = v.obj(
        data, "", required, ("claims", "supersedes", "changes", *MANIFEST_FIELDS)
    )
    if top is None:
        return None, _Parts()
    approach, workloads, declared = manifest_vocabulary(top)
    for at, message in declared:
        v.fail(at, message)
    schema = v.field(top, "", "schema", lambda x, p: v.choice(x, p, (SCHEMA_ID,)))
    rfp = v.field(top, "", "rfp", v.text)
    vendor = v.field(top, "", "vendor", v.text)
    created = v.field(top, "", "created", v.created)
    files = _files(v, top["files"], "files") if "files" in top else _Parts().files
    harness, scenarios = (
        _harness(v, top["harness"], "harness", files)
        if "harness" in top
        else (None, None)
    )
    claims = _listed_claims(v, top.get("claims", []), scenarios)
    update = _update(v, top)
    parts = _Parts(files, rfp, vendor)
    if schema is None or rfp is None or vendor is None or created is None:
        return None, parts
    if harness is None or claims is None or not files.ok or update is None:
        return None, parts
    extensions = {key: value for key, value in top.items() if key.startswith("x-")}
    valid = tuple(files.valid)
    manifest = Manifest(schema, rfp, vendor, created, valid, harness, tuple(claims))
    supersedes, changes = update
    manifest = replace(
        manifest,
        extensions=extensions,
        supersedes=supersedes,
        changes=changes,
        approach=approach,
        workloads=workloads,
    )
    return manifest, parts


def _listed_claims(
    v: _Validator, value: Any, scenarios: list[str] | None
) -> list[Claim] | None:
    items = v.array(value, "claims", minimum=0, maximum=MAX_ITEMS)
    if items is None:
        return None
    claims = [
        _claim(v, item, f"claims[{i}]", scenarios) for i, item in enumerate(items)
    ]
    valid = [claim for claim in claims if claim is not None]
    return valid if len(valid) == len(claims) else None


def parse_manifest(data: bytes) -> ManifestResult:
    """Parse and validate ``manifest.json`` bytes, collecting every problem."""
    problems = ProblemList()
    value = _decode(data, problems)
    if problems:
        return ManifestResult(None, tuple(problems))
    _check_json(value, problems)
    validator = _Validator(problems)
    manifest, parts = _validate(validator, value)
    return ManifestResult(
        manifest if not problems else None,
        tuple(problems),
        files=tuple(parts.files.valid),
        mentioned_paths=frozenset(parts.files.mentioned),
        rfp=parts.rfp,
        vendor=parts.vendor,
        files_known=parts.files.known,
    )
