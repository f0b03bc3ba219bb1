"""``environment_drift``: how this host differs from the bundle's environment
manifest (free-form JSON, see examples/*/environment/manifest.json).

The manifest may describe several roles (``hosts: {gpu: …, storage_target: …}``
or a list with ``role``); the runner's host is compared with the client-side
role (gpu, client, compute, initiator, host…), the others are listed as "info"
and not compared. A flat manifest (``os``, ``kernel``… at the top) is one host.
Keys are matched loosely (case, ``-``/``_``/spaces, common synonyms).

The severity of each mismatch is the drift policy's for the rule that
compared it (``policy.DEFAULT_RULES``: kernel, another OS release, accelerator
count, model and driver major version, NIC driver, NVMe-oF transport and a
firmware's major version → major; an OS point release, a driver's or a
firmware's minor or patch version, CUDA, microcode and packages → minor; CPU
model, NIC and NVMe counts and declared values this host does not show → info).
Each ``Drift`` names its ``rule``; an RFP's policy may change any of them.

A version declared as a prefix matches (declared "5.15" = "5.15.0-125-generic").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from benchmarks.lib.environment.devices import (
    compare_gpu,
    compare_nic,
    compare_nvme,
    compare_transport,
)
from benchmarks.lib.environment.matching import (
    INFO,
    MAJOR,
    MINOR,
    ORDER,
    Diff,
    Drift,
    get,
    items,
    loose_key,
    norm,
    same_model,
    same_version,
    text,
    versions,
)
from benchmarks.lib.environment.tuning import compare_tuning
from procurement.lib.drift_policy import DriftPolicy

__all__ = ["INFO", "MAJOR", "MINOR", "Drift", "environment_drift"]

CLIENT_ROLES: Final = (
    "gpu",
    "client",
    "compute",
    "initiator",
    "host",
    "worker",
    "node",
)
REMOTE_ROLES: Final = ("storage", "target", "array", "switch", "server", "fabric")


def environment_drift(
    captured: Mapping[str, Any],
    declared: Mapping[str, Any],
    policy: DriftPolicy | None = None,
) -> list[Drift]:
    """Differences between a ``capture_environment`` result and a manifest,
    the most severe first, with severities from ``policy`` (the defaults when
    None)."""
    diff = Diff(policy)
    captured = _well_formed(captured)
    if not isinstance(declared, Mapping):
        diff.add(
            "manifest",
            None,
            None,
            "manifest",
            "the environment manifest is not an object",
        )
        return diff.drifts
    prefix, host = _pick_host(declared, diff)
    if host is None:
        diff.add(
            "manifest",
            None,
            None,
            "manifest",
            "the manifest describes no host to compare",
        )
    else:
        _compare_host(diff, prefix, host, captured)
    fabric_key, fabric = get(declared, "nvmeof", "nvme_of", "nvmf", "fabric")
    key, transport = get(fabric, "transport", "trtype")
    if transport is not None:
        compare_transport(diff, f"{fabric_key}.{key}", transport, captured)
    _compare_packages(diff, "", declared, captured)
    if host is not None and host is not declared:
        _compare_packages(diff, prefix, host, captured)
    return sorted(diff.drifts, key=lambda d: ORDER.get(d.severity, 3))


def _well_formed(captured: Any) -> dict[str, Any]:
    """The capture with each section of the type the comparisons expect."""
    captured = captured if isinstance(captured, Mapping) else {}
    result: dict[str, Any] = {}
    for name in ("os", "kernel", "cpu", "memory", "packages"):
        section = captured.get(name)
        result[name] = section if isinstance(section, Mapping) else {}
    for name in ("gpus", "nics", "nvme", "block"):
        section = captured.get(name)
        rows = section if isinstance(section, list) else []
        result[name] = [row for row in rows if isinstance(row, Mapping)]
    return result


def _pick_host(
    declared: Mapping[str, Any], diff: Diff
) -> tuple[str, Mapping[str, Any] | None]:
    key, hosts = get(declared, "hosts", "nodes", "machines", "servers")
    if hosts is None:
        return "", declared
    if isinstance(hosts, list):
        hosts = {
            str(get(h, "role", "name")[1] or i): h
            for i, h in enumerate(hosts)
            if isinstance(h, Mapping)
        }
    if not isinstance(hosts, Mapping) or not hosts:
        return "", None
    chosen = _choose_role([str(r) for r in hosts])
    for role in hosts:
        if str(role) != chosen:
            diff.add(
                f"{key}.{role}",
                None,
                None,
                "other_role",
                f"role {role!r} describes another machine: not compared",
            )
    host = next(h for r, h in hosts.items() if str(r) == chosen)
    return f"{key}.{chosen}.", host if isinstance(host, Mapping) else None


def _choose_role(roles: list[str]) -> str:
    for wanted in CLIENT_ROLES:
        for role in roles:
            if wanted in loose_key(role) and not any(
                r in loose_key(role) for r in REMOTE_ROLES
            ):
                return role
    return roles[0]


def _compare_host(
    diff: Diff, prefix: str, host: Mapping[str, Any], captured: Mapping[str, Any]
) -> None:
    key, value = get(
        host, "os", "operating_system", "distro", "distribution", "pretty_name"
    )
    if value is not None:
        _compare_os(diff, prefix + str(key), value, captured.get("os"))
    key, value = get(host, "kernel", "kernel_version", "kernel_release", "uname")
    if isinstance(value, Mapping):  # {"release", "cmdline", "sysctls"…}
        inner, value = get(value, "release", "version")
        key = f"{key}.{inner}"
    if value is not None:
        kernel = (captured.get("kernel") or {}).get("release")
        diff.versions(
            prefix + str(key), text(value) or value, [kernel], "kernel", "kernel"
        )
    key, value = get(host, "cpu", "cpus", "processor")
    if isinstance(value, Mapping):
        _compare_cpu(diff, f"{prefix}{key}", value, captured.get("cpu") or {})
    key, value = get(host, "gpu", "gpus", "accelerator", "accelerators")
    for i, gpu in items(value):
        compare_gpu(diff, f"{prefix}{key}{i}", gpu, captured)
    key, value = get(host, "nics", "nic", "network", "network_adapters", "hcas")
    for i, nic in items(value):
        compare_nic(diff, f"{prefix}{key}{i}", nic, captured.get("nics") or [])
    for name in ("local_nvme", "nvme", "ssds", "drives"):
        key, value = get(host, name)
        for i, drive in items(value):
            compare_nvme(diff, f"{prefix}{key}{i}", drive, captured.get("nvme") or [])
    key, value = get(host, "transport", "trtype", "nvmeof_transport")
    if value is not None:
        compare_transport(diff, prefix + str(key), value, captured)
    compare_tuning(diff, prefix, host, captured)


def _compare_os(diff: Diff, field: str, declared: Any, os_info: Any) -> None:
    if isinstance(declared, Mapping):
        described = text(" ".join(str(v) for v in declared.values() if text(v)))
    else:
        described = text(declared)
    os_info = os_info if isinstance(os_info, Mapping) else {}
    captured = os_info.get("pretty_name") or os_info.get("name")
    if not described or not captured:
        if described:
            diff.missing(field, described, "OS")
        return
    ids = {
        loose_key(os_info.get("id") or ""),
        loose_key((os_info.get("name") or "").split(" ")[0]),
    }
    same_distro = any(i and i in loose_key(described) for i in ids)
    have = versions(f"{os_info.get('version') or ''} {captured}") or [
        os_info.get("version_id") or ""
    ]
    want = versions(described)
    message = f"declared {described}, this host runs {captured}"
    if not same_distro or (want and have[0].split(".")[0] != want[0].split(".")[0]):
        diff.add(field, described, captured, "os.distribution", f"OS: {message}")
    elif want and not same_version(want[0], have[0]):
        diff.add(field, described, captured, "os.version", f"OS version: {message}")


def _compare_cpu(
    diff: Diff, field: str, cpu: Mapping[str, Any], have: Mapping[str, Any]
) -> None:
    key, model = get(cpu, "model", "model_name", "name")
    if model is not None:
        if not have.get("model"):
            diff.missing(f"{field}.{key}", model, "CPU")
        elif not same_model(str(model), str(have["model"])):
            diff.add(
                f"{field}.{key}",
                model,
                have["model"],
                "cpu.model",
                f"CPU model: declared {text(model)}, this host has {have['model']}",
            )
    key, code = get(cpu, "microcode", "ucode", "microcode_version")
    if code is not None:
        if not have.get("microcode"):
            diff.missing(f"{field}.{key}", code, "CPU microcode")
        elif _hex(code) != _hex(have["microcode"]):
            diff.add(
                f"{field}.{key}",
                code,
                have["microcode"],
                "cpu.microcode",
                f"CPU microcode: declared {code}, this host has {have['microcode']}",
            )
    key, sockets = get(cpu, "sockets")
    if (
        sockets is not None
        and have.get("sockets")
        and str(sockets) != str(have["sockets"])
    ):
        diff.add(
            f"{field}.{key}",
            sockets,
            have["sockets"],
            "cpu.sockets",
            f"CPU sockets: declared {sockets}, this host has {have['sockets']}",
        )


def _hex(value: Any) -> int | str:
    try:
        return int(str(value), 16)
    except ValueError:
        return norm(str(value))


def _compare_packages(
    diff: Diff, prefix: str, declared: Mapping[str, Any], captured: Mapping[str, Any]
) -> None:
    key, packages = get(
        declared, "packages", "software", "software_versions", "versions"
    )
    have = captured.get("packages") or {}
    have = (
        {loose_key(k): v for k, v in have.items()} if isinstance(have, Mapping) else {}
    )
    for name, version in packages.items() if isinstance(packages, Mapping) else ():
        if text(version) is None:
            continue
        diff.versions(
            f"{prefix}{key}.{name}",
            version,
            [have.get(loose_key(name))],
            f"package {name}",
            "package",
        )
