"""A well-behaved harness in the sandbox: contract env, outputs, live lines,
progress, what the result says about isolation; the example bundles run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.lib.sandbox import SandboxLimits, run_harness
from benchmarks.lib.sandbox.uids import UID_BASE, UID_COUNT
from tests.benchmarks.sandbox.conftest import Bundle, needs_bwrap, processes_of

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

CONTRACT = """#!/bin/sh
set -eu
echo "uid=$(id -u) cwd=$(pwd)"
echo "::progress:: 0.5"
cat data.txt
echo "out" >"$REPROGATE_OUTPUT_DIR/result.txt"
echo "scratch" >scratch.txt
echo "in tmp" >"$TMPDIR/t.txt"
echo "warning on stderr" >&2
echo "::progress:: 1"
exit 0
"""


def test_harness_runs_with_the_contract(make_bundle: Callable[[str], Bundle]) -> None:
    bundle = make_bundle(CONTRACT)
    lines: list[tuple[str, str]] = []

    result = bundle.run(
        env={"REPROGATE_SCENARIO": '{"name": "warm"}'},
        on_line=lambda stream, line: lines.append((stream, line)),
    )

    assert (result.stop_reason, result.exit_code) == ("exited", 0), result
    assert result.succeeded
    assert result.progress == 1.0
    assert ("stdout", "bundle data") in lines
    assert ("stderr", "warning on stderr") in lines
    assert "::progress:: 0.5" in result.stdout_tail
    assert result.stderr_tail == "warning on stderr"
    assert (bundle.output / "result.txt").read_text() == "out\n"
    assert (bundle.dir / "scratch.txt").read_text() == "scratch\n"


def test_files_are_handed_back_to_the_runner(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle(CONTRACT)

    result = bundle.run()

    assert result.succeeded
    owners = {
        p.stat().st_uid for p in [*bundle.dir.rglob("*"), *bundle.output.rglob("*")]
    }
    assert owners == {os.geteuid()}


@needs_bwrap
def test_isolation_record_says_what_was_in_force(
    make_bundle: Callable[[str], Bundle],
) -> None:
    result = make_bundle(CONTRACT).run(processes=64)

    iso = result.isolation
    assert iso["method"] == "bwrap"
    assert iso["network"] == "none"
    assert iso["filesystem"] == "private"
    assert iso["limits"]["processes"] == 64
    assert "cwd=/sandbox/bundle" in result.stdout_tail
    if os.geteuid() == 0:
        assert iso["uid_dropped"] is True
        assert UID_BASE <= iso["uid"] < UID_BASE + UID_COUNT
        assert f"uid={iso['uid']}" in result.stdout_tail
        assert processes_of(iso["uid"]) == []


def test_parent_secrets_never_reach_the_harness(
    make_bundle: Callable[[str], Bundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DJANGO_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL"):
        monkeypatch.setenv(name, f"leaked-{name}")
    bundle = make_bundle(
        "#!/bin/sh\nenv\ncat /proc/self/environ | tr '\\0' '\\n' >&2\n"
    )

    result = bundle.run(env={"REPROGATE_SCENARIO": "{}"})

    assert result.succeeded
    assert "leaked-" not in result.stdout_tail + result.stderr_tail
    names = {line.split("=", 1)[0] for line in result.stdout_tail.splitlines()}
    assert {"REPROGATE_RUN_ID", "REPROGATE_SCENARIO", "REPROGATE_OUTPUT_DIR"} <= names
    assert not names & {"DJANGO_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL"}


def test_nonzero_exit_is_reported_as_such(make_bundle: Callable[[str], Bundle]) -> None:
    result = make_bundle("#!/bin/sh\necho failing >&2\nexit 3\n").run()

    assert (result.stop_reason, result.exit_code) == ("exited", 3)
    assert result.message == "exited with status 3"
    assert not result.succeeded


def test_bad_entrypoint_is_a_sandbox_error(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle(CONTRACT)

    result = run_harness(
        bundle_dir=bundle.dir,
        entrypoint="../escape.sh",
        output_dir=bundle.output,
        env={},
        limits=SandboxLimits(),
    )

    assert result.stop_reason == "sandbox_error"
    assert "inside the bundle" in result.message
    assert result.exit_code is None


def test_unknown_method_is_a_sandbox_error(
    make_bundle: Callable[[str], Bundle],
) -> None:
    result = make_bundle(CONTRACT).run(method="chroot")

    assert result.stop_reason == "sandbox_error"
    assert "chroot" in result.message


@pytest.mark.parametrize("vendor", ["acme-flash", "bolt-storage"])
def test_example_harness_runs_in_the_sandbox(tmp_path: Path, vendor: str) -> None:
    bundle_dir = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / vendor, bundle_dir)
    harness = json.loads((EXAMPLES / vendor / "bundle.json").read_text())["harness"]
    scenario = {**harness["scenarios"][0], "duration_s": 1}  # keep the test short

    result = run_harness(
        bundle_dir=bundle_dir,
        entrypoint="harness/run.sh",
        output_dir=tmp_path / "out",
        env={"REPROGATE_SCENARIO": json.dumps(scenario), "REPROGATE_RUN_ID": "9"},
        limits=SandboxLimits(wall_seconds=120),
    )

    assert result.succeeded, (result.message, result.stderr_tail)
    assert result.progress == 1.0
    assert (tmp_path / "out" / "metrics.json").is_file()


@needs_bwrap
def test_system_python_and_fio_work_inside(
    make_bundle: Callable[[str], Bundle],
) -> None:
    script = "#!/bin/sh\nset -e\npython3 -c 'import sys; print(sys.version_info[0])'\n"
    if shutil.which("fio"):
        script += "fio --version\n"
    result = make_bundle(script).run()

    assert result.succeeded, result.stderr_tail
    assert result.stdout_tail.splitlines()[0] == "3"
