"""A pool's policy, made into what the sandbox applies for one run.

``policy_extras`` parses the policy, resolves its CDI device names against the
host's spec files and returns ``SandboxExtras`` with the devices' nodes,
mounts and environment and the policy's endpoints, or raises ``PolicyRefused``
with a stop reason and the named problems: the run does not start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Final

from benchmarks.lib.lab.cdi import StatFunction, cdi_dirs, load_specs, resolve
from benchmarks.lib.lab.policy import PolicyError, parse_policy
from benchmarks.lib.sandbox.extras import EndpointTarget, SandboxExtras

POLICY_INVALID: Final = "policy_invalid"
DEVICE_UNAVAILABLE: Final = "device_unavailable"
ROOT_NEEDED: Final = "policy_needs_root"
POLICY_REFUSALS: Final = frozenset({POLICY_INVALID, DEVICE_UNAVAILABLE, ROOT_NEEDED})
NON_ROOT_MESSAGE: Final = (
    "This runner does not run as root, so it cannot give the harness the pool's "
    "devices (a per-run device node needs mknod and a uid drop) or endpoints (a "
    "per-run network namespace). Run the agent as root, or clear the pool's "
    "device and endpoint policy."
)


class PolicyRefused(Exception):
    """The policy cannot be applied here; ``stop_reason`` names why."""

    def __init__(self, stop_reason: str, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.stop_reason = stop_reason
        self.problems = problems


def policy_extras(
    document: object,
    *,
    root: bool,
    environ: Mapping[str, str],
    dirs: list[Path] | None = None,
    stat_fn: StatFunction | None = None,
) -> tuple[SandboxExtras, list[str]]:
    """(extras, notes); ``environ`` supplies ``REPROGATE_CDI_DIRS``."""
    try:
        policy = parse_policy(document)
    except PolicyError as error:
        raise PolicyRefused(POLICY_INVALID, error.problems) from error
    if policy.empty:
        return SandboxExtras(), []
    if not root:
        raise PolicyRefused(ROOT_NEEDED, [NON_ROOT_MESSAGE])
    registry = load_specs(dirs or cdi_dirs(environ.get("REPROGATE_CDI_DIRS")))
    kwargs = {"stat_fn": stat_fn} if stat_fn else {}
    resolution = resolve(policy, registry, **kwargs)
    if resolution.problems:
        raise PolicyRefused(DEVICE_UNAVAILABLE, resolution.problems)
    notes = [
        f"CDI hook not run (allowed by the policy): {h}"
        for h in resolution.hooks_not_run
    ]
    endpoints = tuple(EndpointTarget(e.name, e.address) for e in policy.endpoints)
    return replace(resolution.extras, endpoints=endpoints, notes=tuple(notes)), notes


def block_device_names(
    extras: SandboxExtras, sys_root: Path = Path("/sys")
) -> list[str]:
    """The kernel's names (``/proc/diskstats``) of the policy's block devices:
    what the telemetry sampler watches for the run."""
    names: list[str] = []
    for node in extras.devices:
        if node.kind != "b":
            continue
        link = sys_root / "dev" / "block" / f"{node.major}:{node.minor}"
        try:
            name = link.resolve(strict=True).name
        except OSError:
            continue
        if name not in names:
            names.append(name)
    return names
