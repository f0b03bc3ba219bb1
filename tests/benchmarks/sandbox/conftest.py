"""Fixtures for the sandbox tests: a fresh bundle copy holding one harness
script, its output directory, and probes for what must not survive a run."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.sandbox import HarnessResult, SandboxLimits, run_harness
from benchmarks.lib.sandbox.capabilities import host_support

HARNESSES = Path(__file__).parent / "harnesses"

needs_bwrap = pytest.mark.skipif(
    not host_support().bwrap_works, reason="bubblewrap does not work on this host"
)
needs_process_limit = pytest.mark.skipif(
    not (host_support().uid_drop or "pids" in host_support().cgroup_controllers),
    reason="no way to limit processes here (neither uid drop nor pids cgroup)",
)


@dataclass
class Bundle:
    dir: Path
    output: Path
    # A number no other process has on its command line: harness scripts sleep
    # "$MARK" seconds, so the tests can find what is left of this run only.
    mark: str = field(
        default_factory=lambda: (
            f"86{secrets.randbelow(10**3):03d}.{secrets.randbelow(10**9):09d}"
        )
    )

    def run(
        self, *, env: dict[str, str] | None = None, **options: Any
    ) -> HarnessResult:
        limit_names = set(SandboxLimits.__dataclass_fields__)
        limits = SandboxLimits(
            **{
                "wall_seconds": 30,
                **{k: v for k, v in options.items() if k in limit_names},
            }
        )
        rest = {k: v for k, v in options.items() if k not in limit_names}
        return run_harness(
            bundle_dir=self.dir,
            entrypoint="harness/run.sh",
            output_dir=self.output,
            env={"REPROGATE_RUN_ID": "run-1", "MARK": self.mark, **(env or {})},
            limits=limits,
            **rest,
        )


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[[str], Bundle]:
    """A bundle whose harness/run.sh is a script of ``harnesses/`` or given text."""

    def make(script: str) -> Bundle:
        bundle_dir = tmp_path / "bundle"
        (bundle_dir / "harness").mkdir(parents=True)
        source = HARNESSES / script
        target = bundle_dir / "harness" / "run.sh"
        if source.suffix == ".sh" and source.is_file():
            shutil.copyfile(source, target)
        else:
            target.write_text(script)
        (bundle_dir / "data.txt").write_text("bundle data\n")
        return Bundle(dir=bundle_dir, output=tmp_path / "output")

    return make


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(name))
    return found


def processes_of(uid: int) -> list[int]:
    from benchmarks.lib.sandbox.uids import uid_processes

    return uid_processes(uid)


@pytest.fixture
def without_cgroups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox as on a host where no cgroup can be created."""
    from dataclasses import replace

    from benchmarks.lib.sandbox import setup

    support = replace(host_support(), cgroup=None, cgroup_controllers=())
    monkeypatch.setattr(setup, "host_support", lambda: support)


@pytest.fixture
def reachable_bundle(
    make_bundle: Callable[[str], Bundle],
) -> Iterator[Callable[[str], Bundle]]:
    """Like make_bundle, but in a directory any uid may traverse (what the
    fallback methods need to drop the uid, as bwrap binds do not)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="reprogate-test-"))
    base.chmod(0o755)

    def make(script: str) -> Bundle:
        made = make_bundle(script)
        target = base / "bundle"
        shutil.copytree(made.dir, target)
        return Bundle(dir=target, output=base / "output", mark=made.mark)

    yield make
    shutil.rmtree(base, ignore_errors=True)
