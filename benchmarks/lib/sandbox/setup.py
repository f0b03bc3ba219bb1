"""Everything arranged before a harness starts, and undone after it stopped.

``plan_prepare`` picks the isolation method (bubblewrap, else ``unshare``, else
none), leases the dedicated uid, creates the cgroup, builds argv, environment
and rlimits, and describes in ``isolation`` what is in force. ``Plan.kill_all``
kills every process of the run by every handle it has (process group, cgroup,
uid); ``Plan.cleanup`` removes the cgroup and private /tmp, hands files back to
the runner's uid and removes links and special files from the output directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.sandbox.capabilities import (
    SANDBOX_TMP,
    HostSupport,
    host_support,
    unshare_args,
)
from benchmarks.lib.sandbox.cgroups import Cgroup, cgroup_create
from benchmarks.lib.sandbox.command import (
    BUNDLE_MOUNT,
    OUTPUT_MOUNT,
    TRACE_MOUNT,
    SandboxSetupError,
    bwrap_argv,
    die_with_runner_argv,
    entrypoint_argv,
    harness_env,
    setpriv_argv,
    userns_lock_argv,
)
from benchmarks.lib.sandbox.extras import (
    SandboxExtras,
    allow_list,
    device_bwrap_args,
    make_nodes,
    remove_nodes,
)
from benchmarks.lib.sandbox.limits import SandboxLimits
from benchmarks.lib.sandbox.relay import EndpointError, EndpointNet, open_endpoints
from benchmarks.lib.sandbox.uids import (
    UidLease,
    chown_tree,
    traversable_by_others,
    uid_count,
    uid_kill,
    uid_lease,
)

METHODS: Final = ("bwrap", "unshare", "none")
CPU_GRACE_SECONDS: Final = 5  # RLIMIT_CPU hard limit above the soft one (SIGXCPU)
NPROC_SLACK: Final = 16  # RLIMIT_NPROC above pids.max: the cgroup counts the hit
HELPERS: Final = {
    "bwrap": 2,
    "unshare": 1,
    "none": 0,
}  # sandbox processes in the cgroup
NESTED_HELPERS: Final = 2  # the second bwrap that locks user namespaces (nested)


@dataclass
class Plan:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    rlimits: list[tuple[int, tuple[int, int]]]
    isolation: dict[str, Any]
    bundle_dir: Path
    output_dir: Path
    cgroup: Cgroup | None = None
    lease: UidLease | None = None
    private_tmp: Path | None = None
    notes: list[str] = field(default_factory=list)
    killed: bool = False
    extras: SandboxExtras = field(default_factory=SandboxExtras)
    extras_dir: Path | None = None  # the run's device nodes and endpoint sockets
    endpoints: EndpointNet | None = None
    trace_dir: Path | None = None  # REPROGATE_TRACE_DIR, empty

    @property
    def harness_dirs(self) -> list[Path]:
        """The folders the harness writes in, owned by its uid while it runs."""
        dirs = [self.bundle_dir, self.output_dir]
        return dirs + ([self.trace_dir] if self.trace_dir else [])

    @property
    def watched_dirs(self) -> list[Path]:
        return self.harness_dirs + ([self.private_tmp] if self.private_tmp else [])

    def preexec(self) -> Callable[[], None]:
        """Runs in the child between fork and exec: join the cgroup, set rlimits."""
        procs = self.cgroup.procs_files() if self.cgroup else []
        rlimits = list(self.rlimits)
        endpoints = self.endpoints

        def join_and_limit() -> None:
            if endpoints is not None:
                endpoints.enter()
            for path in procs:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            for which, value in rlimits:
                resource.setrlimit(which, value)

        return join_and_limit

    def kill_all(self, process: subprocess.Popen[bytes] | None) -> None:
        if process is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        survivors = self.cgroup.kill() if self.cgroup else 0
        if self.lease is not None:
            survivors = max(survivors, uid_kill(self.lease.uid))
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        if survivors:
            self.notes.append(f"{survivors} process(es) of the run could not be killed")
        self.killed = process is not None

    def cleanup(self) -> None:
        if self.endpoints is not None:
            self.isolation["endpoints"] = self.endpoints.records()
            self.endpoints.close()
        if self.extras_dir is not None:
            remove_nodes(self.extras_dir)
        if self.cgroup is not None:
            self.cgroup.remove()
        me, group = os.geteuid(), os.getegid()
        if self.lease is not None:
            for top in self.harness_dirs:
                chown_tree(top, me, group, only_uid=self.lease.uid)
        self.notes.extend(sanitize_outputs(self.output_dir))
        if self.trace_dir is not None:
            self.notes.extend(sanitize_outputs(self.trace_dir, "trace spans"))
        if self.private_tmp is not None:
            shutil.rmtree(self.private_tmp, ignore_errors=True)
        if self.lease is not None:
            self.lease.release()
        self.isolation["notes"].extend(self.notes)


def sanitize_outputs(output_dir: Path, what: str = "outputs") -> list[str]:
    """Remove what a hostile harness could use to make the runner read host files
    later: symbolic links, hard links, devices, FIFOs and sockets."""
    notes = []
    for root, dirs, files in os.walk(output_dir, followlinks=False):
        for name in (*dirs, *files):
            path = Path(root) / name
            with contextlib.suppress(OSError):
                st = path.lstat()
                if stat.S_ISDIR(st.st_mode):
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                    continue
                path.unlink()
                notes.append(
                    f"removed {path.relative_to(output_dir)} from the {what} "
                    "(a link or special file)"
                )
    return notes


def _method(requested: str | None, support: HostSupport) -> str:
    if requested is None:
        return support.best_method
    available = {
        "bwrap": support.bwrap_works,
        "unshare": support.unshare_works,
        "none": True,
    }
    if requested not in available:
        raise SandboxSetupError(f"unknown isolation method {requested!r}")
    if not available[requested]:
        raise SandboxSetupError(f"isolation method {requested!r} is not available here")
    return requested


def _check_extras(chosen: str, support: HostSupport) -> None:
    """Devices and endpoints need a root runner and bubblewrap."""
    if not support.root:
        raise SandboxSetupError(
            "the pool's device and endpoint policy needs a runner running as "
            "root (per-run device nodes, a per-run network namespace)"
        )
    if chosen != "bwrap":
        raise SandboxSetupError(
            "the pool's device and endpoint policy needs bubblewrap "
            f"(isolation method here: {chosen})"
        )


def _attach_extras(plan: Plan, uid: int, gid: int) -> list[str]:
    """Per-run nodes and endpoint relays in a private directory of the runner's;
    the bwrap arguments that bring them in."""
    extras = plan.extras
    if extras.empty:
        return []
    plan.extras_dir = Path(tempfile.mkdtemp(prefix="reprogate-extras-"))
    plan.extras_dir.chmod(0o700)  # bwrap (root) binds from it
    make_nodes(extras, plan.extras_dir, uid, gid)
    try:
        plan.endpoints = open_endpoints(extras.endpoints, plan.extras_dir, uid, gid)
    except EndpointError as error:
        raise SandboxSetupError(str(error)) from error
    return device_bwrap_args(extras, plan.extras_dir) + plan.endpoints.binds


def _directories(bundle_dir: Path, output_dir: Path) -> tuple[Path, Path]:
    if bundle_dir.is_symlink() or not bundle_dir.is_dir():
        raise SandboxSetupError(f"bundle directory {bundle_dir} does not exist")
    return bundle_dir.resolve(), _writable_dir(output_dir, "output")


def _writable_dir(folder: Path, what: str) -> Path:
    if folder.is_symlink():
        raise SandboxSetupError(f"{what} directory {folder} is a link")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SandboxSetupError(f"{what} directory {folder}: {exc.strerror}") from exc
    return folder.resolve()


def _rlimits(
    limits: SandboxLimits, *, memory_by_cgroup: bool, nproc: int | None
) -> list[tuple[int, tuple[int, int]]]:
    cpu = int(limits.cpu_seconds)
    values = [
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_CPU, (cpu, cpu + CPU_GRACE_SECONDS)),
        (resource.RLIMIT_FSIZE, (int(limits.file_bytes), int(limits.file_bytes))),
    ]
    if not memory_by_cgroup:  # address space: breaks GPU stacks, so only as fallback
        values.append((resource.RLIMIT_AS, (int(limits.memory_bytes),) * 2))
    if nproc is not None:
        values.append((resource.RLIMIT_NPROC, (nproc, nproc)))
    return values


def plan_prepare(
    *,
    bundle_dir: Path,
    entrypoint: str,
    output_dir: Path,
    env: Mapping[str, str],
    limits: SandboxLimits,
    method: str | None,
    extras: SandboxExtras | None = None,
    trace_dir: Path | None = None,
) -> Plan:
    support = host_support()
    chosen = _method(method, support)
    extras = extras or SandboxExtras()
    if not extras.empty:
        _check_extras(chosen, support)
    bundle_dir, output_dir = _directories(Path(bundle_dir), Path(output_dir))
    trace = _writable_dir(Path(trace_dir), "trace") if trace_dir is not None else None
    inner = entrypoint_argv(bundle_dir, entrypoint)
    notes: list[str] = list(extras.notes)
    plan = Plan([], {}, str(bundle_dir), [], {}, bundle_dir, output_dir, notes=notes)
    plan.extras, plan.trace_dir = extras, trace
    try:
        _arrange(plan, chosen, support, inner, env, limits)
    except BaseException:
        plan.kill_all(None)
        plan.isolation.setdefault("notes", [])
        plan.cleanup()
        raise
    return plan


def _arrange(
    plan: Plan,
    chosen: str,
    support: HostSupport,
    inner: list[str],
    env: Mapping[str, str],
    limits: SandboxLimits,
) -> None:
    notes = plan.notes
    reachable = chosen == "bwrap" or all(
        traversable_by_others(d) for d in plan.harness_dirs
    )
    if support.uid_drop and reachable:
        plan.lease = uid_lease()
        if plan.lease is None:
            notes.append("no free sandbox uid: the harness keeps the runner's uid")
    elif support.root and not support.uid_drop:
        notes.append(
            "setpriv is missing: the harness keeps uid 0 (capabilities dropped)"
        )
    elif support.root:
        notes.append(
            "the bundle or output directory is not reachable by another uid: "
            "uid not dropped"
        )
    lease = plan.lease
    uid = lease.uid if lease else os.geteuid()
    if chosen != "bwrap":
        plan.private_tmp = Path(tempfile.mkdtemp(prefix="reprogate-sandbox-"))
        if lease:
            os.chown(plan.private_tmp, lease.uid, lease.gid)
    if lease:
        for top in plan.harness_dirs:
            chown_tree(top, lease.uid, lease.gid)
    lock = _userns_lock(chosen, support, lease)
    helpers = HELPERS[chosen] + (NESTED_HELPERS if lock == "nested" else 0)
    if support.cgroup is not None:
        plan.cgroup, cg_notes = cgroup_create(
            f"reprogate-{uuid.uuid4().hex[:16]}",
            memory_bytes=int(limits.memory_bytes),
            processes=int(limits.processes) + helpers,
            device_rules=allow_list(plan.extras) if plan.extras.devices else None,
        )
        notes.extend(cg_notes)
    controllers = plan.cgroup.controllers if plan.cgroup else []
    enforces = plan.cgroup.enforces if plan.cgroup else frozenset()
    nproc = int(limits.processes) + helpers - HELPERS[chosen] if lease else None
    if nproc is not None and "pids" in enforces:
        nproc += NPROC_SLACK
    if not support.root:  # counts all of the runner's processes: leave it room
        nproc = uid_count(os.geteuid()) + int(limits.processes)
    plan.rlimits = _rlimits(limits, memory_by_cgroup="memory" in enforces, nproc=nproc)
    drop = setpriv_argv(support.setpriv or "setpriv", uid, uid) if lease else []
    extra_args = _attach_extras(plan, uid, lease.gid if lease else os.getegid())
    if chosen == "bwrap":
        home = tmp = SANDBOX_TMP
        output_inside = OUTPUT_MOUNT
        trace_inside = TRACE_MOUNT if plan.trace_dir else None
        plan.cwd = "/"
        plan.argv = (
            bwrap_argv(
                support.bwrap or "bwrap",
                bundle_dir=plan.bundle_dir,
                output_dir=plan.output_dir,
                network=limits.network,
                tmp_bytes=int(limits.file_bytes) if support.bwrap_tmpfs_size else None,
                user_namespace=not support.root,
                drop_caps=support.root and lease is None,
                disable_userns=lock == "direct",
                extra=extra_args,
                joined_netns=plan.endpoints is not None and plan.endpoints.joins_netns,
                trace_dir=plan.trace_dir,
            )
            + drop
            + (userns_lock_argv(support.bwrap or "bwrap") if lock == "nested" else [])
            + inner
        )
        if not lock:
            notes.append(
                "bubblewrap cannot disable user namespaces here (it needs 0.8 or "
                "later): the harness may create one of its own"
            )
    else:
        home = tmp = str(plan.private_tmp)
        output_inside = str(plan.output_dir)
        trace_inside = str(plan.trace_dir) if plan.trace_dir else None
        prefix = unshare_args(network=limits.network) if chosen == "unshare" else []
        if support.setpriv and (prefix or not drop):
            prefix = die_with_runner_argv(support.setpriv) + prefix
        elif drop:  # a uid change clears the death signal: set it in the same call
            drop = [drop[0], "--pdeathsig", "SIGKILL", *drop[1:]]
        else:
            notes.append(
                "setpriv is missing: a runner killed mid-run may leave the "
                "harness running"
            )
        plan.argv = prefix + drop + inner
    plan.env = harness_env(
        {**plan.extras.env, **env, **_extras_env(plan.extras)},
        home=home,
        tmp=tmp,
        output_dir=output_inside,
        trace_dir=trace_inside,
    )
    plan.isolation = _isolation(
        chosen, limits, plan, uid, support, controllers, enforces, lock
    )


def _extras_env(extras: SandboxExtras) -> dict[str, str]:
    """REPROGATE_DEVICES and REPROGATE_ENDPOINTS (JSON: name -> where the
    harness finds it); with no policy, neither is set."""
    if extras.empty:
        return {}
    devices = extras.devices_env()
    endpoints = {e.name: e.address for e in extras.endpoints}
    return {
        "REPROGATE_DEVICES": json.dumps(devices, sort_keys=True),
        "REPROGATE_ENDPOINTS": json.dumps(endpoints, sort_keys=True),
    }


def _userns_lock(chosen: str, support: HostSupport, lease: UidLease | None) -> str:
    """How the harness is kept from creating user namespaces (where it would be
    root with every capability again): ``direct`` (bwrap's own user namespace,
    ``--disable-userns``), ``nested`` (a second bwrap after the drop to the
    sandbox uid, ``userns_lock_argv``) or ``""`` (it is not: no bwrap, or one
    older than 0.8)."""
    if chosen != "bwrap":
        return ""
    if lease is not None:
        return "nested" if support.bwrap_disable_userns_nested else ""
    return "direct" if support.bwrap_disable_userns else ""


def _isolation(
    chosen: str,
    limits: SandboxLimits,
    plan: Plan,
    uid: int,
    support: HostSupport,
    controllers: list[str],
    enforces: frozenset[str],
    lock: str,
) -> dict[str, Any]:
    names = {which for which, _ in plan.rlimits}
    enforced = {
        "wall": ["runner"],
        "output": ["runner"],
        "cpu": ["rlimit_cpu"]
        + (
            ["cgroup"]
            if "cpuacct" in controllers or "cpu" in controllers
            else ["uid_monitor"]
            if plan.lease
            else []
        ),
        "memory": ["cgroup"] if "memory" in enforces else ["rlimit_as"],
        "processes": (["cgroup"] if "pids" in enforces else [])
        + (["rlimit_nproc"] if resource.RLIMIT_NPROC in names else []),
        "files": ["rlimit_fsize", "disk_monitor"]
        + (["tmpfs_size"] if chosen == "bwrap" and support.bwrap_tmpfs_size else []),
    }
    if not enforced["processes"]:
        plan.notes.append("no process limit in force (root without uid drop or cgroup)")
    if plan.extras.endpoints:
        network = "endpoints"
    else:
        network = "host" if limits.network or chosen == "none" else "none"
    return {
        "method": chosen,
        "network": network,
        "devices": [node.record() for node in plan.extras.devices],
        "mounts": [
            {"host_path": m.host_path, "path": m.path, "writable": m.writable}
            for m in plan.extras.mounts
        ],
        "endpoints": [
            {"name": e.name, "address": e.address} for e in plan.extras.endpoints
        ],
        "device_allow_list": plan.cgroup.device_allow_list if plan.cgroup else "none",
        "filesystem": "private" if chosen == "bwrap" else "host",
        "uid": uid,
        "uid_dropped": plan.lease is not None,
        "pid_namespace": chosen != "none",
        "user_namespaces": "disabled" if lock else "allowed",
        "cgroup": plan.cgroup.version if plan.cgroup else None,
        "cwd": BUNDLE_MOUNT if chosen == "bwrap" else str(plan.bundle_dir),
        "output_dir": OUTPUT_MOUNT if chosen == "bwrap" else str(plan.output_dir),
        "limits": {**limits.as_dict(), "enforced_by": enforced},
        "notes": [],
    }
