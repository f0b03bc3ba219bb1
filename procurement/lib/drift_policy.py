"""The drift policy, a contract term of an RFP: which severity each kind of
difference between a bundle's declared environment and the lab host it runs
on gets (``benchmarks.lib.environment`` applies it).

An RFP's contract terms carry one (``reprogate.drift-policy/v1``)::

    {"schema": "reprogate.drift-policy/v1",
     "rules": {"accelerator.firmware.patch": "info", "nvme.count": "major"}}

``rules`` overrides ``DEFAULT_RULES`` rule by rule; a rule's severity is
``major``, ``minor``, ``info`` or ``ignore`` (the line is dropped). A versioned
rule (``accelerator.driver``…) is looked up by the first part that differs:
``.major`` (550 → 560), ``.minor`` (550.127 → 550.90) or ``.patch``
(550.127.05 → 550.127.08); a version without dots that differs is ``.major``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

SCHEMA: Final = "reprogate.drift-policy/v1"
SEVERITIES: Final = ("major", "minor", "info", "ignore")

DEFAULT_RULES: Final[Mapping[str, str]] = {
    "os.distribution": "major",  # another distribution or major release
    "os.version": "minor",  # a point release of the same one
    "kernel": "major",
    "cpu.model": "info",
    "cpu.sockets": "info",
    "cpu.microcode": "minor",
    "cpu.governor": "minor",
    "kernel.cmdline": "minor",  # a declared boot parameter is not set
    "sysctl": "minor",
    "thp": "minor",  # transparent huge pages
    "accelerator.count": "major",  # "8 declared, 0 found" included
    "accelerator.model": "major",
    "accelerator.driver.major": "major",
    "accelerator.driver.minor": "minor",
    "accelerator.driver.patch": "minor",
    "accelerator.firmware.major": "major",
    "accelerator.firmware.minor": "minor",
    "accelerator.firmware.patch": "minor",
    "cuda": "minor",
    "nic.driver": "major",  # module name or driver (OFED) version
    "nic.firmware.major": "major",
    "nic.firmware.minor": "minor",
    "nic.firmware.patch": "minor",
    "nic.count": "info",
    "nvme.model": "info",
    "nvme.count": "info",
    "nvme.firmware.major": "major",
    "nvme.firmware.minor": "minor",
    "nvme.firmware.patch": "minor",
    "nvmeof.transport": "major",
    "nvmeof.absent": "info",  # declared a fabric; none is connected
    "package": "minor",
    "unverifiable": "info",  # declared, but this host does not show it
    "other_role": "info",  # a role of the manifest describing another machine
    "manifest": "info",  # the manifest itself is unusable
}


@dataclass(frozen=True)
class DriftPolicy:
    rules: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_RULES))
    source: str = "default"  # whose policy: "default" or e.g. "RFP-2026-07"
    overridden: frozenset[str] = frozenset()  # the rules ``source`` set itself

    def severity(self, rule: str) -> str:
        return self.rules.get(rule, DEFAULT_RULES.get(rule, "info"))

    def set_by(self, rule: str) -> str:
        """Who set ``rule``'s severity: the policy's source or "default"."""
        return self.source if rule in self.overridden else "default"

    def as_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "source": self.source, "rules": dict(self.rules)}


def drift_policy(document: Any, source: str = "default") -> DriftPolicy:
    """The policy of a ``reprogate.drift-policy/v1`` document over the defaults;
    an empty or invalid document gives the defaults (validate it first)."""
    rules = dict(DEFAULT_RULES)
    own: dict[str, str] = {}
    if isinstance(document, Mapping) and not drift_policy_problems(document):
        own = dict(document.get("rules") or {})
        rules.update(own)
    return DriftPolicy(rules=rules, source=source, overridden=frozenset(own))


def drift_policy_problems(document: Any) -> list[str]:
    """What is wrong with a policy document, each problem naming its path."""
    if document in (None, {}):
        return []
    if not isinstance(document, Mapping):
        return ["$: a drift policy is a JSON object"]
    problems = [
        f"$.{key}: unknown key (schema, rules)"
        for key in document
        if key not in {"schema", "rules"}
    ]
    if document.get("schema") != SCHEMA:
        problems.append(f"$.schema: must be {SCHEMA!r}")
    rules = document.get("rules", {})
    if not isinstance(rules, Mapping):
        return [*problems, "$.rules: an object of rule → severity"]
    for rule, severity in rules.items():
        if rule not in DEFAULT_RULES:
            problems.append(f"$.rules.{rule}: unknown rule")
        elif severity not in SEVERITIES:
            problems.append(f"$.rules.{rule}: one of {', '.join(SEVERITIES)}")
    return problems
