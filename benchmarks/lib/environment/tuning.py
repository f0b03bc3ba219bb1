"""Drift of the host's tuning: kernel command line parameters, sysctls,
transparent huge pages and the CPU frequency governor, where the manifest
declares them (at the host's top level or inside its ``kernel``/``cpu``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.lib.environment.matching import Diff, get, text


def compare_tuning(
    diff: Diff, prefix: str, host: Mapping[str, Any], captured: Mapping[str, Any]
) -> None:
    kernel = _mapping(captured.get("kernel"))
    field, cmdline = _declared(host, "kernel", "cmdline", "kernel_cmdline")
    if cmdline is not None:
        _compare_cmdline(diff, prefix + field, cmdline, kernel.get("cmdline"))
    field, sysctls = _declared(host, "kernel", "sysctls", "sysctl")
    if isinstance(sysctls, Mapping):
        have = _mapping(kernel.get("sysctls"))
        for name, value in sysctls.items():
            _compare_value(
                diff, f"{prefix}{field}.{name}", value, have.get(str(name)),
                f"sysctl {name}", "sysctl",
            )  # fmt: skip
    field, thp = _declared(
        host, "kernel", "thp", "transparent_hugepages", "transparent_hugepage"
    )
    if thp is not None:
        got = _mapping(kernel.get("thp"))
        wanted = thp if isinstance(thp, Mapping) else {"enabled": thp}
        for name in ("enabled", "defrag"):
            if name in wanted:
                path = f"{prefix}{field}" + (f".{name}" if thp is wanted else "")
                what = f"transparent huge pages ({name})"
                _compare_value(diff, path, wanted[name], got.get(name), what, "thp")
    field, governor = _declared(host, "cpu", "governor", "scaling_governor")
    if governor is not None:
        cpu = _mapping(captured.get("cpu"))
        _compare_value(
            diff, prefix + field, governor, cpu.get("governor"), "CPU governor",
            "cpu.governor",
        )  # fmt: skip


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _declared(host: Mapping[str, Any], section: str, *names: str) -> tuple[str, Any]:
    """(path, value) of the first of ``names`` in the host or its ``section``."""
    key, value = get(host, *names)
    if value is not None:
        return str(key), value
    section_key, inner = get(host, section)
    key, value = get(inner, *names)
    return f"{section_key}.{key}", value


def _compare_value(
    diff: Diff, field: str, declared: Any, captured: Any, what: str, rule: str
) -> None:
    want, have = text(declared), text(captured)
    if want is None:
        return
    if have is None:
        diff.missing(field, want, what)
    elif want.lower() != have.lower():
        diff.add(
            field, want, have, rule, f"{what}: declared {want}, this host has {have}"
        )


def _compare_cmdline(diff: Diff, field: str, declared: Any, captured: Any) -> None:
    """Each declared parameter must be on the captured command line."""
    wanted = declared if isinstance(declared, list) else str(declared).split()
    have = text(captured)
    if have is None:
        diff.missing(field, " ".join(str(w) for w in wanted), "kernel command line")
        return
    tokens = set(have.split())
    absent = [str(w) for w in wanted if str(w) not in tokens]
    if absent:
        diff.add(
            field, " ".join(absent), have, "kernel.cmdline",
            f"kernel command line: declared {' '.join(absent)}, not on this host's",
        )  # fmt: skip
