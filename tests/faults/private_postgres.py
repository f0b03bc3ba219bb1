"""A PostgreSQL server of a test's own (the shared cluster is never restarted):
``initdb`` into a fresh folder, started with ``pg_ctl`` on a free loopback port,
stopped the way a crash stops it (``-m immediate``: no shutdown checkpoint, crash
recovery on the next start) and started again. ``initdb`` refuses root, so as
root the server runs as the ``postgres`` user, in a folder that user owns."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.faults.support import free_port, unavailable


def _binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl is None:
        unavailable("no PostgreSQL server binaries (pg_ctl, initdb)")
    return Path(pg_ctl).parent


class PrivatePostgres:
    def __init__(self) -> None:
        self.bin = _binaries()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="reprogate-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                unavailable("running as root and there is no postgres user")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *argv: str, timeout: float = 60) -> None:
        done = subprocess.run(
            [*self.as_user, *argv], capture_output=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace")
            raise RuntimeError(f"{argv[0]} failed:\n{output}\n{self.server_log()}")

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def init(self) -> None:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "--no-sync", "-E", "UTF8",
        )  # fmt: skip

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def _pg_ctl(self, mode: str) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "stop")

    def crash(self) -> None:
        """Stop without a checkpoint, as a crash would: every connection is cut."""
        self._pg_ctl("immediate")

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._pg_ctl("fast")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"
