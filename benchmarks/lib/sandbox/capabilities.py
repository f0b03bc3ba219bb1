"""What this host can enforce for a harness run, found by trying it once.

``host_support()`` probes bubblewrap, ``unshare``, the uid drop and cgroups
(cached per process); ``sandbox_capabilities()`` is its JSON-able form for the
runner's host registration. ``drop_page_cache()`` empties the page cache for
cold-cache scenarios where the host permits it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.sandbox.cgroups import cgroup_create

DROP_CACHES: Final = Path("/proc/sys/vm/drop_caches")
DEVICES_ALLOW: Final = Path("/sys/fs/cgroup/devices/devices.allow")
PROBE_UID: Final = 65534  # nobody: any uid but root makes user namespaces alike
# A second bwrap, run as the sandbox uid in the first (command.userns_lock_argv).
USERNS_LOCK: Final = ("--unshare-user", "--disable-userns", "--dev-bind", "/", "/")
PROBE_TIMEOUT: Final = 15.0
# Paths *inside* the sandbox: private tmpfs mounts, not the host's shared ones.
SANDBOX_TMP: Final = "/tmp"  # noqa: S108
SANDBOX_SHM: Final = "/dev/shm"  # noqa: S108
# Directories of a merged-/usr system: symlinks into /usr or directories.
SYSTEM_DIRS: Final = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


@dataclass(frozen=True)
class HostSupport:
    root: bool
    bwrap: str | None
    bwrap_version: str | None
    bwrap_works: bool
    bwrap_tmpfs_size: bool  # `--size` before `--tmpfs` (bubblewrap >= 0.7)
    # `--unshare-user --disable-userns` (bubblewrap >= 0.8): the harness can make
    # no user namespace. Run by this process, and (root only) by a second bwrap
    # started inside the first after the drop to a sandbox uid.
    bwrap_disable_userns: bool
    bwrap_disable_userns_nested: bool
    unshare: str | None
    unshare_works: bool
    setpriv: str | None
    uid_drop: bool
    cgroup: str | None  # "v1" | "v2" | None
    cgroup_controllers: tuple[str, ...]
    drop_caches: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def device_binding(self) -> bool:
        """A pool's devices can be given to a run: per-run nodes (mknod, chown)
        need root, and ``--dev-bind`` needs bubblewrap."""
        return self.root and self.bwrap_works

    @property
    def best_method(self) -> str:
        if self.bwrap_works:
            return "bwrap"
        return "unshare" if self.unshare_works else "none"


def system_binds() -> list[str]:
    """bwrap arguments that make /usr and the merged-/usr links visible."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return args


def _runs(argv: list[str]) -> bool:
    try:
        done = subprocess.run(  # noqa: S603
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT,
            check=False,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _bwrap_probe(
    bwrap: str, root: bool, size: bool, *, userns: bool = False, inner: str = ""
) -> bool:
    """Does bwrap run as the harness's sandbox would run it? ``userns``: with
    ``--unshare-user --disable-userns``; ``inner``: then setpriv's drop to
    another uid, and a second bwrap that disables user namespaces."""
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net"]
    if not root or userns:
        args.append("--unshare-user")
    args += ["--disable-userns"] if userns else []
    args += [*system_binds(), "--dev", "/dev", "--proc", "/proc"]
    args += [
        "--perms",
        "1777",
        *(["--size", "65536"] if size else []),
        "--tmpfs",
        SANDBOX_TMP,
        "--",
    ]
    if inner:
        drop = [inner, f"--reuid={PROBE_UID}", f"--regid={PROBE_UID}"]
        drop += ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        args += [*drop, "--no-new-privs", "--", bwrap, *USERNS_LOCK, "--"]
    return _runs([*args, "/bin/sh", "-c", "exit 0"])


def _unshare_args(unshare: str, *, root: bool, network: bool) -> list[str]:
    args = [unshare]
    if not root:
        args += ["--user", "--map-root-user"]
    if not network:
        args.append("--net")
    return [*args, "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts"]


def unshare_args(*, network: bool) -> list[str]:
    support = host_support()
    return _unshare_args(
        support.unshare or "unshare", root=support.root, network=network
    )


def _cgroup_probe() -> tuple[str | None, tuple[str, ...], list[str]]:
    group, notes = cgroup_create(
        f"reprogate-probe-{uuid.uuid4().hex[:12]}", memory_bytes=None, processes=None
    )
    if group is None:
        return None, (), notes
    try:
        return group.version, tuple(group.controllers), notes
    finally:
        group.remove()


@functools.cache
def host_support() -> HostSupport:
    root = os.geteuid() == 0
    bwrap, unshare, setpriv = (shutil.which(n) for n in ("bwrap", "unshare", "setpriv"))
    version = None
    if bwrap:
        try:
            out = subprocess.run(  # noqa: S603
                [bwrap, "--version"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
        version = match.group(0) if match else None
    sized = bool(bwrap) and _bwrap_probe(bwrap or "", root, size=True)
    works = sized or (bool(bwrap) and _bwrap_probe(bwrap or "", root, size=False))
    no_userns = works and _bwrap_probe(bwrap or "", root, sized, userns=True)
    nested = (
        works
        and root
        and bool(setpriv)
        and _bwrap_probe(bwrap or "", root, sized, inner=setpriv or "")
    )
    unshare_ok = bool(unshare) and _runs(
        [
            *_unshare_args(unshare or "", root=root, network=False),
            "/bin/sh",
            "-c",
            "exit 0",
        ]
    )
    cgroup, controllers, notes = _cgroup_probe()
    return HostSupport(
        root=root,
        bwrap=bwrap,
        bwrap_version=version,
        bwrap_works=works,
        bwrap_tmpfs_size=sized,
        bwrap_disable_userns=no_userns,
        bwrap_disable_userns_nested=nested,
        unshare=unshare,
        unshare_works=unshare_ok,
        setpriv=setpriv,
        uid_drop=root and setpriv is not None,
        cgroup=cgroup,
        cgroup_controllers=controllers,
        drop_caches=os.access(DROP_CACHES, os.W_OK),
        notes=tuple(notes),
    )


def sandbox_capabilities(*, refresh: bool = False) -> dict[str, Any]:
    """What this host can enforce: isolation method, network namespace, uid drop,
    cgroup limits, page-cache dropping, a pool's devices (per-run nodes, a
    cgroup v1 allow-list or "none") and endpoints (a per-run network namespace).
    JSON-able; probed once per process."""
    if refresh:
        host_support.cache_clear()
    support = host_support()
    data = asdict(support)
    data["notes"] = list(support.notes)
    data["cgroup_controllers"] = list(support.cgroup_controllers)
    data["method"] = support.best_method
    data["network_isolation"] = support.bwrap_works or support.unshare_works
    data["filesystem_isolation"] = support.bwrap_works
    data["process_limit"] = support.uid_drop or "pids" in support.cgroup_controllers
    data["device_binding"] = support.device_binding
    data["device_allow_list"] = (
        "cgroup-v1" if support.cgroup == "v1" and DEVICES_ALLOW.exists() else "none"
    )
    data["endpoints"] = support.device_binding and shutil.which("ip") is not None
    return data


def drop_page_cache(*, control: Path = DROP_CACHES) -> bool:
    """``sync; echo 3 > /proc/sys/vm/drop_caches``; False where not permitted."""
    os.sync()
    try:
        with open(control, "w") as handle:
            handle.write("3\n")
    except OSError:
        return False
    return True
