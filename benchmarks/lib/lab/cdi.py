"""Container Device Interface (CDI) spec files, read and resolved.

A lab host's accelerator tools write CDI specs (``nvidia-ctk cdi generate``,
the domestic vendors' container toolkits), and the lab writes its own
``reprogate.dev/block`` specs for NVMe namespaces, loop devices and RDMA nodes.
``load_specs`` reads every ``*.json`` / ``*.yaml`` / ``*.yml`` in the CDI
directories (``REPROGATE_CDI_DIRS``, default ``/etc/cdi:/var/run/cdi``; later
directories win, as in CDI); ``resolve`` maps fully-qualified names
(``vendor.com/class=name``) to the nodes, mounts and environment of their
``containerEdits`` (CDI 0.3-1.1: ``deviceNodes``, ``mounts``, ``env``,
``hooks``). Anything that cannot be honoured is a named problem: an unknown
name, a malformed spec, a hook the operator has not allowed, edits this runner
cannot apply (``intelRdt``, ``netDevices``).

ReproGate runs no OCI hooks: an allowed hook is recorded as not run.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.policy import CDI_NAME, Policy
from benchmarks.lib.sandbox.extras import DeviceNode, HostMount, SandboxExtras

DEFAULT_DIRS: Final = "/etc/cdi:/var/run/cdi"
SUFFIXES: Final = (".json", ".yaml", ".yml")
MAX_SPEC_BYTES: Final = 4 << 20
KIND: Final = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?/"
    r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$"
)
DEVICE_NAME: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
EDIT_KEYS: Final = frozenset(
    {
        "env",
        "deviceNodes",
        "mounts",
        "hooks",
        "additionalGids",
        "intelRdt",
        "netDevices",
    }
)
# The sandbox's own folders: a spec's mount may not cover them.
RESERVED_MOUNTS: Final = frozenset({"sandbox", "proc"})
UNSUPPORTED_EDITS: Final = ("intelRdt", "netDevices")
StatFunction = Callable[[str], os.stat_result]


@dataclass
class Spec:
    file: str
    kind: str
    devices: dict[str, dict[str, Any]]
    edits: dict[str, Any]


@dataclass
class Registry:
    specs: dict[str, list[Spec]] = field(default_factory=dict)  # kind -> specs
    problems: dict[str, list[str]] = field(default_factory=dict)  # file -> problems

    def find(self, kind: str, name: str) -> tuple[Spec, dict[str, Any]] | None:
        for spec in reversed(self.specs.get(kind, [])):  # later directories win
            if name in spec.devices:
                return spec, spec.devices[name]
        return None


def cdi_dirs(value: str | None) -> list[Path]:
    """``REPROGATE_CDI_DIRS`` (colon-separated) as paths; unset: the CDI default."""
    text = DEFAULT_DIRS if value is None else value
    return [Path(part) for part in text.split(":") if part.strip()]


def _load_text(path: Path, text: str) -> object:
    if path.suffix == ".json":
        return json.loads(text)
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML ships with the project
        raise ValueError("PyYAML is not installed: YAML specs cannot be read") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from exc


def _edits_problems(edits: object, where: str) -> list[str]:
    if not isinstance(edits, dict):
        return [f"{where}: must be an object"]
    problems = [
        f"{where}: unknown key {key!r}" for key in sorted(set(edits) - EDIT_KEYS)
    ]
    env = edits.get("env", [])
    if not isinstance(env, list) or not all(
        isinstance(e, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", e) for e in env
    ):
        problems.append(f"{where}.env: must be a list of NAME=value strings")
    for index, node in enumerate(_list(edits, "deviceNodes", problems, where)):
        here = f"{where}.deviceNodes[{index}]"
        if not isinstance(node, dict) or not _abs(node.get("path")):
            problems.append(f"{here}.path: must be an absolute path")
            continue
        if not str(node["path"]).startswith("/dev/"):
            problems.append(f"{here}.path: must be under /dev")
        if "hostPath" in node and not _abs(node["hostPath"]):
            problems.append(f"{here}.hostPath: must be an absolute path")
        if node.get("type", "c") not in ("b", "c", "u"):
            problems.append(f"{here}.type: must be b or c")
        for key in ("major", "minor"):
            if key in node and (
                isinstance(node[key], bool) or not isinstance(node[key], int)
            ):
                problems.append(f"{here}.{key}: must be an integer")
    for index, mount in enumerate(_list(edits, "mounts", problems, where)):
        here = f"{where}.mounts[{index}]"
        if not isinstance(mount, dict):
            problems.append(f"{here}: must be an object")
            continue
        for key in ("hostPath", "containerPath"):
            if not _abs(mount.get(key)):
                problems.append(f"{here}.{key}: must be an absolute path")
        inside = str(mount.get("containerPath") or "/").split("/")[1]
        if inside in RESERVED_MOUNTS:
            problems.append(
                f"{here}.containerPath: may not cover the sandbox's /{inside}"
            )
    for index, hook in enumerate(_list(edits, "hooks", problems, where)):
        if not isinstance(hook, dict) or not _abs(hook.get("path")):
            problems.append(f"{where}.hooks[{index}].path: must be an absolute path")
    return problems


def _list(
    edits: dict[str, Any], key: str, problems: list[str], where: str
) -> list[Any]:
    value = edits.get(key, [])
    if not isinstance(value, list):
        problems.append(f"{where}.{key}: must be a list")
        return []
    return value


def _abs(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith("/")
        and ".." not in value.split("/")
    )


def spec_from_document(document: object, file: str) -> tuple[Spec | None, list[str]]:
    """A spec, or the problems that make it unusable (each named with its path)."""
    if not isinstance(document, dict):
        return None, ["(spec): must be an object"]
    problems = []
    if not isinstance(document.get("cdiVersion"), str):
        problems.append("cdiVersion: missing")
    kind = document.get("kind")
    if not isinstance(kind, str) or not KIND.match(kind):
        problems.append("kind: must be vendor.com/class")
    devices = document.get("devices")
    found: dict[str, dict[str, Any]] = {}
    if not isinstance(devices, list) or not devices:
        problems.append("devices: must be a non-empty list")
        devices = []
    for index, device in enumerate(devices):
        where = f"devices[{index}]"
        if not isinstance(device, dict):
            problems.append(f"{where}: must be an object")
            continue
        name = device.get("name")
        if not isinstance(name, str) or not DEVICE_NAME.match(name):
            problems.append(f"{where}.name: not a valid CDI device name")
        elif name in found:
            problems.append(f"{where}.name: {name} is defined twice")
        else:
            found[name] = device
        problems += _edits_problems(
            device.get("containerEdits"), f"{where}.containerEdits"
        )
    edits = document.get("containerEdits", {})
    problems += _edits_problems(edits, "containerEdits")
    if problems:
        return None, problems
    return Spec(file=file, kind=str(kind), devices=found, edits=edits), []


def load_specs(dirs: Iterable[Path]) -> Registry:
    registry = Registry()
    for directory in dirs:
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            continue  # an absent CDI directory is normal
        for path in entries:
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            try:
                if path.stat().st_size > MAX_SPEC_BYTES:
                    raise ValueError(f"larger than {MAX_SPEC_BYTES} bytes")
                document = _load_text(path, path.read_text(encoding="utf-8"))
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                registry.problems[str(path)] = [f"(spec): unreadable: {exc}"]
                continue
            spec, problems = spec_from_document(document, str(path))
            if spec is None:
                registry.problems[str(path)] = problems
            else:
                registry.specs.setdefault(spec.kind, []).append(spec)
    return registry


def _malformed_for(registry: Registry, kind: str) -> list[str]:
    """Problems of the spec files that might have defined ``kind``."""
    named = []
    for file, problems in registry.problems.items():
        named += [f"CDI spec {file}: {p}" for p in problems]
    return named if not registry.specs.get(kind) else []


@dataclass
class Resolution:
    extras: SandboxExtras
    problems: list[str]
    hooks_not_run: list[str]


def _node(
    raw: dict[str, Any], name: str, access: str, stat_fn: StatFunction
) -> tuple[DeviceNode | None, str | None]:
    path = str(raw["path"])
    host = str(raw.get("hostPath") or path)
    kind, major, minor = raw.get("type"), raw.get("major"), raw.get("minor")
    if kind is None or major is None or minor is None:
        try:
            st = stat_fn(host)
        except OSError as exc:
            return None, f"{name}: host node {host} is not there ({exc.strerror})"
        if stat.S_ISBLK(st.st_mode):
            kind = kind or "b"
        elif stat.S_ISCHR(st.st_mode):
            kind = kind or "c"
        else:
            return None, f"{name}: host path {host} is not a device node"
        major = os.major(st.st_rdev) if major is None else major
        minor = os.minor(st.st_rdev) if minor is None else minor
    if kind not in ("b", "c"):
        kind = "c"  # CDI "u" is an unbuffered character device
    permissions = str(raw.get("permissions") or "rw")
    if access == "rw" and "w" not in permissions:
        access = "r"  # the spec itself allows no writes
    node = DeviceNode(path, str(kind), int(major), int(minor), access, name, host)
    return node, None


def _apply(
    edits: dict[str, Any],
    name: str,
    access: str,
    allowed_hooks: tuple[str, ...],
    stat_fn: StatFunction,
    out: dict[str, Any],
) -> None:
    for key in UNSUPPORTED_EDITS:
        if edits.get(key):
            out["problems"].append(f"{name}: the spec's {key} cannot be applied here")
    for hook in edits.get("hooks", []):
        if hook["path"] in allowed_hooks:
            out["hooks"].append(f"{name}: {hook['path']} ({hook.get('hookName', '?')})")
        else:
            out["problems"].append(
                f"{name}: the spec has hook {hook['path']}, which the pool's policy "
                "does not allow (cdi.allow_hooks)"
            )
    for raw in edits.get("deviceNodes", []):
        node, problem = _node(raw, name, access, stat_fn)
        if problem:
            out["problems"].append(problem)
        elif node is not None:
            out["nodes"].append(node)
    for mount in edits.get("mounts", []):
        options = mount.get("options") or []
        writable = "rw" in options and "ro" not in options
        out["mounts"].append(
            HostMount(mount["hostPath"], mount["containerPath"], writable)
        )
    for entry in edits.get("env", []):
        key, _, value = entry.partition("=")
        out["env"][key] = value


def _merge_nodes(nodes: list[DeviceNode]) -> tuple[DeviceNode, ...]:
    """One node per path inside; a node two devices share (``/dev/nvidiactl``)
    gets the wider access."""
    merged: dict[str, DeviceNode] = {}
    for node in nodes:
        seen = merged.get(node.path)
        if seen is None or (seen.access == "r" and node.access == "rw"):
            merged[node.path] = node
    return tuple(merged.values())


def resolve(
    policy: Policy, registry: Registry, *, stat_fn: StatFunction = os.stat
) -> Resolution:
    """The policy's devices as sandbox extras, or the problems refusing the run."""
    out: dict[str, Any] = {
        "paths": {},
        "problems": [],
        "hooks": [],
        "nodes": [],
        "mounts": [],
        "env": {},
    }
    applied_specs: set[int] = set()
    for rule in policy.devices:
        match = CDI_NAME.match(rule.name)
        if match is None:
            out["problems"].append(f"{rule.name}: not a CDI device name")
            continue
        kind = f"{match['vendor']}/{match['class']}"
        found = registry.find(kind, match["name"])
        if found is None:
            problems = _malformed_for(registry, kind)
            out["problems"].append(
                f"{rule.name}: no CDI spec on this host defines it"
                + (f" ({'; '.join(problems)})" if problems else "")
            )
            continue
        spec, device = found
        allowed = policy.cdi_hooks_allowed
        # the device's own edits first: its first node is its path in
        # REPROGATE_DEVICES; then the spec-wide edits, once per spec
        before = len(out["nodes"])
        _apply(device["containerEdits"], rule.name, rule.access, allowed, stat_fn, out)
        if len(out["nodes"]) > before:
            out["paths"][rule.name] = out["nodes"][before].path
        if id(spec) not in applied_specs:
            applied_specs.add(id(spec))
            _apply(spec.edits, rule.name, rule.access, allowed, stat_fn, out)
    mounts = tuple(dict.fromkeys(out["mounts"]))
    extras = SandboxExtras(
        devices=_merge_nodes(out["nodes"]),
        mounts=mounts,
        env=dict(out["env"]),
        paths=dict(out["paths"]),
    )
    return Resolution(extras, out["problems"], out["hooks"])
