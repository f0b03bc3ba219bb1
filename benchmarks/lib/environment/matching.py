"""Loose matching of free-form manifest values against captured ones, and
the ``Drift`` record. Used by ``drift`` and ``devices``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from benchmarks.lib.environment.policy import LEVELS, VERSIONED, version_level
from procurement.lib.drift_policy import DriftPolicy

MAJOR: Final = "major"
MINOR: Final = "minor"
INFO: Final = "info"
ORDER: Final = {MAJOR: 0, MINOR: 1, INFO: 2}
MODEL_NOISE: Final = frozenset(
    {"processor", "cpu", "controller", "corporation", "inc.", "inc", "co.,", "ltd."}
)
VERSION = re.compile(r"\d+(?:[.\-_]\d+)+[\w.\-]*|\d+[a-z]\w*")


@dataclass(frozen=True)
class Drift:
    field: str
    declared: str | None
    captured: str | None
    severity: str  # "major" | "minor" | "info"
    message: str
    rule: str = ""  # the drift policy's rule that set the severity
    policy: str = "default"  # whose rule it is: "default" or the RFP's reference

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def loose_key(name: Any) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def get(obj: Any, *names: str) -> tuple[str | None, Any]:
    """(key, value) of the first of ``names`` present in a mapping, loosely."""
    if not isinstance(obj, Mapping):
        return None, None
    keys = {loose_key(k): k for k in obj}
    for name in names:
        if name in keys and obj[keys[name]] not in (None, "", [], {}):
            return str(keys[name]), obj[keys[name]]
    return None, None


def text(value: Any) -> str | None:
    if value is None or isinstance(value, Mapping | list):
        return None
    return " ".join(str(value).split()) or None


def norm(text: str) -> str:
    return " ".join(text.lower().replace("(r)", "").replace("(tm)", "").split())


def same_version(declared: str, captured: str) -> bool:
    """Equal, or the declared value is a prefix of the captured one at a boundary."""
    d, c = norm(declared), norm(captured)
    if d == c:
        return True
    return c.startswith(d) and not c[len(d)].isalnum()


def same_model(declared: str, captured: str) -> bool:
    """All words of one name appear in the other (vendor suffixes aside); the
    shorter one must name a model number ("AMD EPYC" alone matches nothing)."""
    d = set(re.split(r"[\s,]+", norm(declared))) - MODEL_NOISE - {""}
    c = set(re.split(r"[\s,]+", norm(captured))) - MODEL_NOISE - {""}
    shorter = d if len(d) <= len(c) else c
    if not any(ch.isdigit() for word in shorter for ch in word):
        return d == c and bool(d)
    return d <= c or c <= d


def versions(text: str) -> list[str]:
    return VERSION.findall(text)


class Diff:
    """Collects drifts; each one's severity is the policy's for its rule."""

    def __init__(self, policy: DriftPolicy | None = None) -> None:
        self.policy = policy or DriftPolicy()
        self.drifts: list[Drift] = []

    def add(
        self, field: str, declared: Any, captured: Any, rule: str, message: str
    ) -> None:
        severity = self.policy.severity(rule)
        if severity == "ignore":
            return
        self.drifts.append(
            Drift(
                field,
                text(declared),
                text(captured),
                severity,
                message,
                rule,
                self.policy.set_by(rule),
            )
        )

    def missing(self, field: str, declared: Any, what: str) -> None:
        self.add(
            field,
            declared,
            None,
            "unverifiable",
            f"declared {what} {text(declared)}; not found on this host",
        )

    def versions(
        self,
        field: str,
        declared: Any,
        captured: Iterable[Any],
        what: str,
        rule: str,
    ) -> None:
        """A version mismatch under ``rule`` (a versioned rule is refined by
        the level of the closest captured version's difference)."""
        have = sorted({str(c) for c in captured if c not in (None, "")})
        if not have:
            self.missing(field, declared, what)
        elif not any(same_version(str(declared), c) for c in have):
            if rule in VERSIONED:
                levels = [version_level(str(declared), c) for c in have]
                rule = f"{rule}.{max(levels, key=LEVELS.index)}"
            self.add(
                field,
                declared,
                ", ".join(have),
                rule,
                f"{what}: declared {text(declared)}, this host has {', '.join(have)}",
            )


def items(value: Any) -> list[tuple[str, Mapping[str, Any]]]:
    if isinstance(value, Mapping):
        return [("", value)]
    if isinstance(value, list):
        return [(f"[{i}]", v) for i, v in enumerate(value) if isinstance(v, Mapping)]
    return []


def count(
    diff: Diff, field: str, item: Mapping[str, Any], have: int, what: str, rule: str
) -> None:
    key, count = get(item, "count", "quantity", "number")
    if count is not None and str(count) != str(have):
        diff.add(
            f"{field}.{key}",
            count,
            have,
            rule,
            f"{what} count: declared {count}, this host has {have}",
        )
