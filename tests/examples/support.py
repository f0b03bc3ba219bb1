"""Helpers for the example-bundle tests: building and unpacking the bundles
with examples/build.sh, running a harness as the runner would."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENDORS = ("acme-flash", "bolt-storage")
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"  # the sandbox's PATH


@dataclass(frozen=True)
class Run:
    vendor: str
    scenario: dict[str, Any]
    returncode: int
    stdout: str
    stderr: str
    out: Path

    @property
    def metrics(self) -> dict[tuple[str, str], float]:
        doc = json.loads((self.out / "metrics.json").read_text())
        return {(m["name"], m["stat"]): m["value"] for m in doc["metrics"]}


def manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_text())


def scenario(bundle: Path, name: str) -> dict[str, Any]:
    scenarios = manifest(bundle)["harness"]["scenarios"]
    return next(s for s in scenarios if s["name"] == name)


def run_harness(
    bundle: Path,
    out: Path,
    scenario_json: str,
    path: str = BARE_PATH,
    trace: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    env = {"PATH": path, "REPROGATE_SCENARIO": scenario_json, "REPROGATE_RUN_ID": "t1"}
    env["REPROGATE_OUTPUT_DIR"] = str(out)
    if trace is not None:
        trace.mkdir(parents=True, exist_ok=True)
        env["REPROGATE_TRACE_DIR"] = str(trace)
    return subprocess.run(
        ["/bin/sh", "harness/run.sh"], cwd=bundle, env=env,
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def build_and_unpack(root: Path) -> dict[str, Path]:
    """vendor -> the bundle built and verified by examples/build.sh, unpacked."""
    done = subprocess.run(
        ["bash", str(ROOT / "examples/build.sh"), str(root / "out")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "SOURCE_DATE_EPOCH": "1795953600"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == list(VENDORS)
    unpacked = {}
    for vendor in VENDORS:
        with tarfile.open(root / "out" / f"{vendor}.tar.gz") as tar:
            tar.extractall(root / vendor, filter="data")
        unpacked[vendor] = root / vendor
    return unpacked
