"""The command line and environment a harness runs with.

- ``entrypoint_argv``: how to start the bundle's entrypoint without trusting its
  mode bits (shebang line, else ``python3`` for ``.py``, else ``/bin/sh``);
- ``harness_env``: a scrubbed environment, built from nothing: basics + what the
  runner passes, never the runner's own variables (secrets, DATABASE_URL…);
- ``bwrap_argv``: the bubblewrap sandbox: only /usr, a few files of /etc and a
  read-only /sys of the host; private /tmp, /dev, /proc; the bundle and output
  directories bound at fixed paths; no network unless asked;
- ``setpriv_argv``: the drop to the run's dedicated uid with no capabilities.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from benchmarks.lib.sandbox.capabilities import (
    SANDBOX_SHM,
    SANDBOX_TMP,
    USERNS_LOCK,
    system_binds,
)

BUNDLE_MOUNT: Final = "/sandbox/bundle"
OUTPUT_MOUNT: Final = "/sandbox/output"
TRACE_MOUNT: Final = "/sandbox/trace"
BASE_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# /etc files a harness's tools may need; nothing with secrets.
ETC_FILES: Final = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "passwd",
    "group",
    "protocols",
    "services",
    "mime.types",
    "os-release",
    "debian_version",
    "ssl",
    "ca-certificates",
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_SHEBANG: Final = 256


class SandboxSetupError(Exception):
    """The run cannot start as asked (bad entrypoint, bad env, missing dirs)."""


def entrypoint_path(bundle_dir: Path, entrypoint: str) -> PurePosixPath:
    """The entrypoint as a safe relative path to a regular file of the bundle."""
    if not isinstance(entrypoint, str) or not entrypoint or "\x00" in entrypoint:
        raise SandboxSetupError("the entrypoint is empty or not a path")
    relative = PurePosixPath(entrypoint)
    if relative.is_absolute() or ".." in relative.parts or "\\" in entrypoint:
        raise SandboxSetupError(
            f"entrypoint {entrypoint!r} must be a path inside the bundle"
        )
    current = bundle_dir
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise SandboxSetupError(f"entrypoint {entrypoint!r} goes through a link")
    if not current.is_file():
        raise SandboxSetupError(
            f"entrypoint {entrypoint!r} is not a file of the bundle"
        )
    return relative


def entrypoint_argv(bundle_dir: Path, entrypoint: str) -> list[str]:
    """argv run with the bundle as working directory."""
    relative = entrypoint_path(bundle_dir, entrypoint)
    with open(bundle_dir / relative, "rb") as handle:
        head = handle.read(MAX_SHEBANG).split(b"\n", 1)[0]
    target = f"./{relative}" if len(relative.parts) == 1 else str(relative)
    if head.startswith(b"#!"):
        line = head[2:].decode("utf-8", "replace").strip()
        interpreter, _, argument = line.partition(" ")
        if not interpreter.startswith("/"):
            raise SandboxSetupError(f"entrypoint {entrypoint!r}: unusable #! line")
        return [interpreter, *([argument.strip()] if argument.strip() else []), target]
    if relative.suffix == ".py":
        return ["python3", target]
    return ["/bin/sh", target]


def harness_env(
    env: Mapping[str, str],
    *,
    home: str,
    tmp: str,
    output_dir: str,
    trace_dir: str | None = None,
) -> dict[str, str]:
    """Basics, then the runner's ``env``, then REPROGATE_OUTPUT_DIR (and
    REPROGATE_TRACE_DIR when the run has one) as seen inside."""
    result = {"PATH": BASE_PATH, "HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8"}
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise SandboxSetupError(f"environment variable name {name!r} is not valid")
        if not isinstance(value, str) or "\x00" in value:
            raise SandboxSetupError(f"environment variable {name} must be a string")
        result[name] = value
    result["REPROGATE_OUTPUT_DIR"] = output_dir
    result.pop("REPROGATE_TRACE_DIR", None)
    if trace_dir is not None:
        result["REPROGATE_TRACE_DIR"] = trace_dir
    return result


def bwrap_argv(
    bwrap: str,
    *,
    bundle_dir: Path,
    output_dir: Path,
    network: bool,
    tmp_bytes: int | None,
    user_namespace: bool,
    drop_caps: bool,
    disable_userns: bool = False,
    extra: Sequence[str] = (),
    joined_netns: bool = False,
    trace_dir: Path | None = None,
) -> list[str]:
    """``user_namespace``: bwrap's own (always without root); ``disable_userns``:
    in it, the harness can create no user namespace of its own. ``extra``: more
    binds, last (a policy's device nodes, mounts and endpoint
    sockets, ``extras.device_bwrap_args``); ``joined_netns``: the sandbox keeps
    the network namespace it was started in (the run's own, with its endpoint
    relays) instead of a new empty one; ``trace_dir``: bound writable at
    ``TRACE_MOUNT`` (REPROGATE_TRACE_DIR)."""
    args = [bwrap, "--die-with-parent", "--new-session"]
    args += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    args += [] if network or joined_netns else ["--unshare-net"]
    args += ["--unshare-user"] if user_namespace or disable_userns else []
    args += ["--disable-userns"] if disable_userns else []
    args += ["--cap-drop", "ALL"] if drop_caps else []
    args += ["--hostname", "reprogate-sandbox", *system_binds()]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in (*ETC_FILES, *(["resolv.conf"] if network else [])):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--ro-bind", "/sys", "/sys", "--dev", "/dev", "--proc", "/proc"]
    size = ["--size", str(tmp_bytes)] if tmp_bytes else []
    args += ["--perms", "1777", *size, "--tmpfs", SANDBOX_TMP]
    args += ["--perms", "1777", *size, "--tmpfs", SANDBOX_SHM]
    args += ["--perms", "0755", "--dir", "/sandbox"]
    args += [
        "--bind",
        str(bundle_dir),
        BUNDLE_MOUNT,
        "--bind",
        str(output_dir),
        OUTPUT_MOUNT,
    ]
    args += ["--bind", str(trace_dir), TRACE_MOUNT] if trace_dir is not None else []
    return [*args, *extra, "--chdir", BUNDLE_MOUNT, "--"]


def userns_lock_argv(bwrap: str) -> list[str]:
    """A second bwrap, run as the sandbox uid inside the first (after the drop):
    a user namespace of that uid alone, in which the harness can create no
    other. bubblewrap's ``--disable-userns`` needs a user namespace of bwrap's
    own, and a bwrap run by root maps only root into one, leaving no uid to
    drop to."""
    return [bwrap, "--die-with-parent", *USERNS_LOCK, "--chdir", BUNDLE_MOUNT, "--"]


def setpriv_argv(setpriv: str, uid: int, gid: int) -> list[str]:
    """The drop to the run's uid, no capabilities, no privilege gain by exec."""
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def die_with_runner_argv(setpriv: str) -> list[str]:
    """SIGKILL the next program when the runner dies (bwrap has its own
    --die-with-parent): a SIGKILLed worker leaves no harness running."""
    return [setpriv, "--pdeathsig", "SIGKILL", "--"]
