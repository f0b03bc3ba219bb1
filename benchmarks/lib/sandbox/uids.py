"""A dedicated unprivileged uid per sandboxed run, and what runs under it.

Running as root, the harness is dropped to a uid nobody else uses (leased with a
lock file so that two runs on one host never share it): RLIMIT_NPROC counts all
processes of a uid, so only a dedicated uid makes it a per-run process limit, and
``kill(-1)`` from that uid kills every process of the run at once, forks racing
or not. Files the run created are handed back to the runner's uid afterwards.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

UID_BASE: Final = 1_960_000  # far above distribution and container ranges
UID_COUNT: Final = 4096
LOCK_DIR: Final = Path(tempfile.gettempdir()) / "reprogate-sandbox-uids"
PROC: Final = Path("/proc")
_TICKS: Final = os.sysconf("SC_CLK_TCK")


@dataclass
class UidLease:
    uid: int
    gid: int
    _fd: int | None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def uid_lease(
    *, lock_dir: Path = LOCK_DIR, start: int | None = None
) -> UidLease | None:
    """Lease a free uid of the range (no lock held on it, no live process),
    or None when every one is taken or the lock directory is unusable."""
    try:
        lock_dir.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    first = start if start is not None else secrets.randbelow(UID_COUNT)
    for step in range(UID_COUNT):
        uid = UID_BASE + (first + step) % UID_COUNT
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        if _clear(uid):
            return UidLease(uid=uid, gid=uid, _fd=fd)
        os.close(fd)
    return None


def _clear(uid: int) -> bool:
    """Whether no process holds ``uid``. Processes of a free uid are orphans of
    a runner that was killed: they are killed, then given 3 s to be reaped
    (zombies still count against RLIMIT_NPROC)."""
    if uid_processes(uid) and uid_kill(uid):
        return False
    for _ in range(60):  # some container inits reap only every second or so
        if not uid_processes(uid, zombies=True):
            return True
        time.sleep(0.05)
    return False


def _live_pids(*, zombies: bool = False) -> Iterator[tuple[int, str]]:
    """(pid, /proc/<pid>/stat text) of every process (zombies only if asked)."""
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            text = (PROC / name / "stat").read_text()
            state = text.rpartition(")")[2].split()[0]
            if zombies or state not in {"Z", "X"}:
                yield int(name), text


def uid_processes(uid: int, *, zombies: bool = False) -> list[int]:
    """Processes whose /proc entry belongs to ``uid`` (not zombies unless asked)."""
    found = []
    for pid, _text in _live_pids(zombies=zombies):
        with contextlib.suppress(OSError):
            if os.stat(PROC / str(pid)).st_uid == uid:
                found.append(pid)
    return found


def uid_count(uid: int) -> int:
    """Processes of ``uid`` as RLIMIT_NPROC counts them (zombies included)."""
    return len(uid_processes(uid, zombies=True))


def uid_cpu_seconds(uid: int) -> float:
    """CPU time of the uid's live processes, including their reaped children."""
    total = 0
    for pid, text in _live_pids():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if os.stat(PROC / str(pid)).st_uid != uid:
                continue
            fields = text.rpartition(")")[2].split()
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / _TICKS


def uid_kill(uid: int, *, rounds: int = 20) -> int:
    """SIGKILL every process of ``uid`` (``kill -KILL -1`` run as that uid: one
    atomic sweep per round). Returns how many processes survived (0 = all gone)."""
    for _ in range(rounds):
        if not uid_processes(uid):
            return 0
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["/bin/sh", "-c", "kill -KILL -1"],
                user=uid,
                group=uid,
                extra_groups=[],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={"PATH": "/usr/bin:/bin"},
                timeout=10,
                check=False,
                close_fds=True,
                cwd="/",
            )
    return len(uid_processes(uid))


def chown_tree(top: Path, uid: int, gid: int, *, only_uid: int | None = None) -> int:
    """lchown ``top`` and everything below it (links are not followed); with
    ``only_uid`` only entries owned by that uid. Returns the number changed."""
    changed = 0
    entries: list[str] = [str(top)]
    for root, dirs, files in os.walk(top, followlinks=False):
        entries.extend(os.path.join(root, name) for name in (*dirs, *files))
    for path in entries:
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if only_uid is not None and st.st_uid != only_uid:
                continue
            os.lchown(path, uid, gid)
            changed += 1
    return changed


def traversable_by_others(path: Path) -> bool:
    """Whether an unrelated uid may reach ``path`` (every ancestor o+x)."""
    current = path.resolve()
    for directory in (current, *current.parents):
        try:
            mode = os.stat(directory).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    return True
