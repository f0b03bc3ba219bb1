"""The example harness refuses a bad scenario clearly (exit 2 and the reason on
stderr, before doing any work) and runs without fio, saying that it skipped it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.examples.support import BARE_PATH, run_harness, scenario

GOOD = {
    "name": "x",
    "cache": "cold",
    "concurrency": 8,
    "batch_size": 8,
    "duration_s": 1,
}


@pytest.mark.parametrize(
    ("scenario_json", "message"),
    [
        ("", "REPROGATE_SCENARIO is not set"),
        ("{nope", "REPROGATE_SCENARIO is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        (
            json.dumps({**GOOD, "cache": "lukewarm"}),
            "cache: cold or warm, not 'lukewarm'",
        ),
        (json.dumps({**GOOD, "concurrency": 0}), "concurrency: an integer from 1"),
        (json.dumps({**GOOD, "batch_size": "8"}), "batch_size: an integer from 1"),
        (json.dumps({**GOOD, "duration_s": -5}), "duration_s: a number of seconds"),
        (json.dumps({**GOOD, "name": "../etc"}), "name: 1-64 letters"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "name"}), "name: 1-64"),
    ],
)
def test_bad_scenario_exits_2_with_the_reason(
    bundles: dict[str, Path], tmp_path: Path, scenario_json: str, message: str
) -> None:
    done = run_harness(bundles["acme-flash"], tmp_path / "out", scenario_json)

    assert done.returncode == 2
    assert message in done.stderr
    assert done.stderr.startswith("harness: ")
    assert list((tmp_path / "out").iterdir()) == []


def test_every_problem_of_a_scenario_is_named(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    bad = json.dumps({"name": "", "cache": None, "concurrency": 1.5})

    done = run_harness(bundles["bolt-storage"], tmp_path / "out", bad)

    assert done.returncode == 2
    for field in ("name", "cache", "concurrency", "batch_size", "duration_s"):
        assert f"{field}: " in done.stderr


def test_missing_output_dir_exits_2(bundles: dict[str, Path], tmp_path: Path) -> None:
    env = {
        "PATH": BARE_PATH,
        "REPROGATE_SCENARIO": json.dumps(GOOD),
        "REPROGATE_OUTPUT_DIR": str(tmp_path / "missing"),
    }

    done = subprocess.run(
        ["/bin/sh", "harness/run.sh"], cwd=bundles["acme-flash"], env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert done.returncode == 2
    assert "REPROGATE_OUTPUT_DIR is not set or not a directory" in done.stderr


def test_without_fio_the_harness_says_so_and_succeeds(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"  # python3 and dirname, no fio
    bin_dir.mkdir()
    for tool in ("python3", "dirname"):
        os.symlink(shutil.which(tool, path=BARE_PATH), bin_dir / tool)
    short = {**scenario(bundles["acme-flash"], "warm-c8-b8"), "duration_s": 1}

    done = run_harness(
        bundles["acme-flash"], tmp_path / "out", json.dumps(short), path=str(bin_dir)
    )

    assert done.returncode == 0, done.stderr
    assert "fio: not installed on this host; fio job skipped" in done.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "metrics.json",
        "trace.jsonl",
        "trace.jsonl.sha256",
    ]


@pytest.mark.parametrize(
    ("devices", "problem"),
    [
        ("{not json", "REPROGATE_DEVICES is not JSON"),
        ('["/dev/loop0"]', "REPROGATE_DEVICES must be a JSON object"),
    ],
)
def test_a_malformed_devices_variable_exits_2(
    bundles: dict[str, Path], tmp_path: Path, devices: str, problem: str
) -> None:
    (tmp_path / "out").mkdir()
    env = {
        "PATH": BARE_PATH,
        "REPROGATE_SCENARIO": json.dumps(GOOD),
        "REPROGATE_OUTPUT_DIR": str(tmp_path / "out"),
        "REPROGATE_DEVICES": devices,
    }

    done = subprocess.run(
        ["/bin/sh", "harness/run.sh"], cwd=bundles["acme-flash"], env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert done.returncode == 2
    assert problem in done.stderr


def test_a_named_device_that_is_no_block_device_falls_back_to_a_file(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "out").mkdir()
    plain = tmp_path / "not-a-device"
    plain.write_bytes(b"\0" * 4096)
    env = {
        "PATH": BARE_PATH,
        "REPROGATE_SCENARIO": json.dumps({**GOOD, "duration_s": 1}),
        "REPROGATE_OUTPUT_DIR": str(tmp_path / "out"),
        "REPROGATE_DEVICES": json.dumps({"reprogate.dev/block=scratch0": str(plain)}),
    }

    done = subprocess.run(
        ["/bin/sh", "harness/run.sh"], cwd=bundles["acme-flash"], env=env,
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "ssd tier: file-backed" in done.stdout
    assert plain.read_bytes() == b"\0" * 4096  # never written
