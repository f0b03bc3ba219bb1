"""What a pool's policy adds to a sandbox: device nodes, host mounts,
environment and endpoints (``SandboxExtras``), and how the devices get in.

Each device node is made afresh for the run (``mknod`` in a private directory
of the runner's, owned by the run's uid, mode 0600, or 0400 for read-only
access) and bound with ``--dev-bind`` at its path in the sandbox's private
``/dev``: the host's own node is never re-moded, and a node the policy does not
name does not exist inside. The lab layer (``benchmarks.lib.lab``) builds the
extras from the policy and the host's CDI specs; this module only applies them.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

# Nodes bubblewrap's private /dev holds (c major:minor): the allow-list keeps them.
BASIC_NODES: Final = (
    "c 1:3 rwm",  # null
    "c 1:5 rwm",  # zero
    "c 1:7 rwm",  # full
    "c 1:8 rwm",  # random
    "c 1:9 rwm",  # urandom
    "c 5:0 rwm",  # tty
    "c 5:2 rwm",  # ptmx
    "c 136:* rwm",  # pts
)


@dataclass(frozen=True)
class DeviceNode:
    path: str  # inside the sandbox, under /dev
    kind: str  # "b" (block) or "c" (character)
    major: int
    minor: int
    access: str = "rw"  # "r": the node is read-only for the run's user
    name: str = ""  # the policy's device name it comes from
    host_path: str = ""  # the host's node of the same numbers (recorded only)

    @property
    def mode(self) -> int:
        return 0o400 if self.access == "r" else 0o600

    @property
    def cgroup_rule(self) -> str:
        return f"{self.kind} {self.major}:{self.minor} {self.access}"

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "host_path": self.host_path,
            "type": self.kind,
            "major": self.major,
            "minor": self.minor,
            "access": self.access,
        }


@dataclass(frozen=True)
class HostMount:
    host_path: str
    path: str  # inside the sandbox
    writable: bool = False


@dataclass(frozen=True)
class EndpointTarget:
    """An address the harness may reach: ``tcp:IP:PORT`` or ``unix:/PATH`` (the
    same address inside the sandbox, relayed to the real one)."""

    name: str
    address: str

    @property
    def kind(self) -> str:
        return self.address.partition(":")[0]

    def tcp(self) -> tuple[str, int]:
        host, _, port = self.address.partition(":")[2].rpartition(":")
        return host, int(port)

    def unix_path(self) -> str:
        return self.address.partition(":")[2]


@dataclass(frozen=True)
class SandboxExtras:
    devices: tuple[DeviceNode, ...] = ()
    mounts: tuple[HostMount, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    endpoints: tuple[EndpointTarget, ...] = ()
    notes: tuple[str, ...] = ()
    # device name -> its first node's path (nodes devices share are bound once)
    paths: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.devices or self.mounts or self.env or self.endpoints)

    def devices_env(self) -> dict[str, str]:
        """``REPROGATE_DEVICES``: device name -> its path inside the sandbox
        (``paths`` where the lab layer named them, else each node's own)."""
        if self.paths:
            return dict(self.paths)
        found: dict[str, str] = {}
        for node in self.devices:
            found.setdefault(node.name or node.path, node.path)
        return found


def node_file_name(index: int) -> str:
    return f"dev{index}"


def device_bwrap_args(extras: SandboxExtras, node_dir: Path) -> list[str]:
    """The exact bubblewrap arguments for the extras' nodes (made by
    ``make_nodes`` in ``node_dir``) and mounts, after ``--dev /dev``."""
    args: list[str] = []
    for index, node in enumerate(extras.devices):
        args += ["--dev-bind", str(node_dir / node_file_name(index)), node.path]
    for mount in extras.mounts:
        flag = "--bind" if mount.writable else "--ro-bind"
        args += [flag, mount.host_path, mount.path]
    return args


def make_nodes(extras: SandboxExtras, node_dir: Path, uid: int, gid: int) -> None:
    """One fresh node per device in ``node_dir`` (the runner's, mode 0700),
    owned by the run's uid with the access's mode. Needs CAP_MKNOD."""
    for index, node in enumerate(extras.devices):
        kind = stat.S_IFBLK if node.kind == "b" else stat.S_IFCHR
        path = node_dir / node_file_name(index)
        os.mknod(path, kind | node.mode, os.makedev(node.major, node.minor))
        os.chown(path, uid, gid)
        os.chmod(path, node.mode)


def remove_nodes(node_dir: Path) -> None:
    for child in node_dir.iterdir() if node_dir.is_dir() else ():
        with contextlib.suppress(OSError):
            child.unlink()
    with contextlib.suppress(OSError):
        node_dir.rmdir()


def allow_list(extras: SandboxExtras) -> list[str]:
    """cgroup v1 ``devices.allow`` lines: bubblewrap's basic nodes and the
    policy's, with their access and no ``m`` (no mknod)."""
    return [*BASIC_NODES, *(node.cgroup_rule for node in extras.devices)]
