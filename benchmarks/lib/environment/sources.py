"""Where captured facts come from: files below a root (the real ``/`` or a fake
tree in tests) and commands run with a timeout. Nothing here raises for a
missing file or tool: readers return None and ``Commands`` records the tool as
"absent", "failed" or "timeout" in ``status``."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

COMMAND_TIMEOUT: Final = 10.0
MAX_READ: Final = 1 << 20

# Runs argv and returns its stdout (whatever the exit status). Raises
# FileNotFoundError when the tool is absent, subprocess.TimeoutExpired on timeout.
Runner = Callable[[Sequence[str]], str]


def read(root: Path, relative: str) -> str | None:
    """Text of ``root/relative`` stripped, or None (absent, unreadable, binary)."""
    try:
        with open(root / relative.lstrip("/"), "rb") as handle:
            data = handle.read(MAX_READ)
    except OSError:
        return None
    text = data.decode("utf-8", "replace").replace("\x00", "").strip()
    return text or None


def read_int(root: Path, relative: str) -> int | None:
    text = read(root, relative)
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def link_name(root: Path, relative: str) -> str | None:
    """Last part of a symlink's target (``device/driver`` -> ``mlx5_core``)."""
    try:
        return os.path.basename(os.readlink(root / relative.lstrip("/")))
    except OSError:
        return None


def listdir(root: Path, relative: str) -> list[str]:
    try:
        return sorted(os.listdir(root / relative.lstrip("/")))
    except OSError:
        return []


def key_values(text: str | None, separator: str = "=") -> dict[str, str]:
    """``KEY=value`` (os-release) or ``key: value`` (ethtool, lscpu) lines."""
    result: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, found, value = line.partition(separator)
        if found and key.strip():
            result[key.strip()] = value.strip().strip('"').strip("'")
    return result


def system_runner(argv: Sequence[str]) -> str:
    path = shutil.which(argv[0])
    if path is None:
        raise FileNotFoundError(argv[0])
    done = subprocess.run(  # noqa: S603
        [path, *argv[1:]],
        capture_output=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
    )
    return done.stdout.decode("utf-8", "replace")


class Commands:
    """Runs tools through a ``Runner`` and remembers how each one went."""

    def __init__(self, runner: Runner | None) -> None:
        self.runner = runner
        self.status: dict[str, str] = {}

    def run(self, *argv: str) -> str | None:
        tool = argv[0]
        if self.runner is None:
            self.status.setdefault(tool, "not run")
            return None
        try:
            output = self.runner(argv)
        except FileNotFoundError:
            self.status[tool] = "absent"
            return None
        except subprocess.TimeoutExpired:
            self.status[tool] = "timeout"
            return None
        except (OSError, subprocess.SubprocessError, UnicodeError):
            self.status[tool] = "failed"
            return None
        self.status[tool] = "ok"
        return output
