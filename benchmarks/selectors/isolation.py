"""A run's isolation record (``Run.isolation``, as the sandbox wrote it) as
people read it on the run page: human labels, byte limits in KiB/MiB/GiB,
seconds with their unit, and which mechanism enforces each limit. The record
itself stays as written (the API and the evidence package carry it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from accounts.templatetags.figures import humane, iec


@dataclass(frozen=True)
class IsolationFact:
    label: str
    value: str
    exact: str = ""  # the recorded value when ``value`` rounds it (a title)


TOP: Final = (
    ("method", "Sandbox"),
    ("network", "Network"),
    ("filesystem", "Filesystem"),
    ("pid_namespace", "Own process namespace"),
    ("cgroup", "Control groups"),
    ("cwd", "Working directory"),
    ("output_dir", "Output directory"),
)
# limit key -> (label, unit kind, enforced_by key)
LIMITS: Final = {
    "wall_seconds": ("Wall-clock limit", "s", "wall"),
    "cpu_seconds": ("CPU time limit", "s", "cpu"),
    "memory_bytes": ("Memory limit", "bytes", "memory"),
    "file_bytes": ("Largest file written", "bytes", "files"),
    "output_bytes": ("Outputs kept", "bytes", "output"),
    "processes": ("Processes", "", "processes"),
    "network": ("Open network (beyond the policy's endpoints)", "", "network"),
}
SHOWN: Final = frozenset(
    {k for k, _ in TOP}
    | {"uid", "uid_dropped", "limits", "notes", "devices", "endpoints"}
    | {"device_allow_list"}
)


def _text(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if value is None or value in ("", [], {}):
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items())
    return str(value)


def _label(key: str) -> str:
    return key.replace("_", " ").capitalize()


def _limit(key: str, value: Any, enforced: Mapping[str, Any]) -> IsolationFact:
    label, unit, by = LIMITS.get(key, (_label(key), "", key))
    exact = ""
    if unit == "bytes" and isinstance(value, int) and not isinstance(value, bool):
        text, exact = iec(value), f"{value:,} bytes"
    elif unit == "s" and isinstance(value, int | float) and not isinstance(value, bool):
        text = f"{humane(float(value))} s"
    else:
        text = _text(value)
    mechanisms = enforced.get(by) or []
    if mechanisms:
        text += f" (enforced by {_text(mechanisms)})"
    return IsolationFact(label, text, exact)


def _device(node: Mapping[str, Any]) -> str:
    numbers = (
        f"{node.get('type', '?')} {node.get('major', '?')}:{node.get('minor', '?')}"
    )
    name = node.get("name") or node.get("path")
    return f"{name} → {node.get('path')} ({numbers}, {node.get('access', 'rw')})"


def _endpoint(item: Mapping[str, Any]) -> str:
    text = f"{item.get('name')} {item.get('address')}"
    if "via" in item:
        text += (
            f" via {item['via']}: {item.get('connections', 0)} connection(s), "
            f"{iec(int(item.get('bytes_in') or 0))} in, "
            f"{iec(int(item.get('bytes_out') or 0))} out"
        )
    return text


def _policy_facts(record: Mapping[str, Any]) -> list[IsolationFact]:
    """The pool policy's devices and endpoints as the sandbox applied them."""
    facts = []
    devices = [d for d in record.get("devices") or [] if isinstance(d, Mapping)]
    if devices:
        facts.append(IsolationFact("Devices", "; ".join(_device(d) for d in devices)))
        allow = record.get("device_allow_list") or "none"
        facts.append(IsolationFact("Device allow-list", str(allow)))
    endpoints = [e for e in record.get("endpoints") or [] if isinstance(e, Mapping)]
    if endpoints:
        text = "; ".join(_endpoint(e) for e in endpoints)
        facts.append(IsolationFact("Endpoints", text))
    return facts


def isolation_facts(record: Mapping[str, Any] | None) -> list[IsolationFact]:
    """The record's facts in reading order; keys it does not know come last
    under their own names, so nothing recorded is hidden."""
    if not record:
        return []
    facts = [IsolationFact(label, _text(record[k])) for k, label in TOP if k in record]
    if "uid" in record:
        dropped = record.get("uid_dropped")
        note = " (privileges dropped)" if dropped else ""
        facts.insert(3, IsolationFact("User id", f"{record['uid']}{note}"))
    elif "uid_dropped" in record:
        facts.insert(
            3, IsolationFact("Privileges dropped", _text(record["uid_dropped"]))
        )
    limits = record.get("limits") or {}
    enforced = limits.get("enforced_by") or {}
    facts += [_limit(k, v, enforced) for k, v in limits.items() if k != "enforced_by"]
    facts += _policy_facts(record)
    facts += [
        IsolationFact(_label(k), _text(v)) for k, v in record.items() if k not in SHOWN
    ]
    if record.get("notes"):
        facts.append(IsolationFact("Notes", _text(record["notes"])))
    return facts
