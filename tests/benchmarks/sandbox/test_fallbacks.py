"""Hosts without bubblewrap or cgroups: ``unshare`` and no isolation at all.
What still holds is enforced; what does not is recorded in ``isolation``."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from benchmarks.lib.sandbox.capabilities import host_support
from tests.benchmarks.sandbox.conftest import Bundle, needs_bwrap, processes_with

ROOT = os.geteuid() == 0
needs_unshare = pytest.mark.skipif(
    not host_support().unshare_works, reason="unshare does not work here"
)
needs_root = pytest.mark.skipif(not ROOT, reason="the uid drop needs root")

ENV_DUMP = '#!/bin/sh\nenv\necho out >"$REPROGATE_OUTPUT_DIR/o.txt"\n'
methods = pytest.mark.parametrize(
    "method", [pytest.param("unshare", marks=needs_unshare), "none"]
)


@methods
def test_fallback_scrubs_env_and_records_what_it_could_not_do(
    make_bundle: Callable[[str], Bundle], monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", "leaked")
    bundle = make_bundle(ENV_DUMP)

    result = bundle.run(method=method, env={"REPROGATE_SCENARIO": "{}"})

    assert result.succeeded, result.stderr_tail
    assert "leaked" not in result.stdout_tail
    assert f"REPROGATE_OUTPUT_DIR={bundle.output.resolve()}" in result.stdout_tail
    assert (bundle.output / "o.txt").read_text() == "out\n"
    iso = result.isolation
    assert (iso["method"], iso["filesystem"]) == (method, "host")
    assert iso["network"] == ("none" if method == "unshare" else "host")
    if ROOT:  # pytest's tmp_path is not reachable by another uid
        assert iso["uid_dropped"] is False
        assert any("not reachable" in note for note in iso["notes"])


@needs_root
@methods
def test_fallback_drops_the_uid_and_kills_daemons_on_timeout(
    reachable_bundle: Callable[[str], Bundle], method: str
) -> None:
    bundle = reachable_bundle("sleep_forever.sh")
    result = bundle.run(method=method, wall_seconds=1)

    assert result.stop_reason == "timeout"
    assert result.isolation["uid_dropped"] is True
    assert result.isolation["uid"] != 0
    assert processes_with(bundle.mark) == []


@needs_root
@methods
@pytest.mark.usefixtures("without_cgroups")
def test_fallback_without_cgroups_still_kills_every_process_of_the_uid(
    reachable_bundle: Callable[[str], Bundle], method: str
) -> None:
    bundle = reachable_bundle("sleep_forever.sh")
    result = bundle.run(method=method, wall_seconds=1)

    assert result.stop_reason == "timeout"
    assert result.isolation["cgroup"] is None
    assert result.isolation["limits"]["enforced_by"]["processes"] == ["rlimit_nproc"]
    assert processes_with(bundle.mark) == []


@pytest.mark.usefixtures("without_cgroups")
def test_without_cgroups_and_uid_drop_the_missing_process_limit_is_said(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("#!/bin/sh\nexit 0\n")
    result = bundle.run(method="none")

    assert result.succeeded
    if ROOT:
        assert result.isolation["limits"]["enforced_by"]["processes"] == []
        assert any("no process limit" in note for note in result.isolation["notes"])
    assert result.isolation["limits"]["enforced_by"]["memory"] == ["rlimit_as"]


@needs_bwrap
@needs_root
@pytest.mark.usefixtures("without_cgroups")
def test_fork_bomb_without_cgroups_is_stopped_by_the_uid_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("fork_bomb.sh")
    result = bundle.run(processes=24, wall_seconds=60)

    assert result.stop_reason == "process_limit", result.message
    assert result.duration_s < 60
    assert processes_with(bundle.mark) == []


@needs_bwrap
@pytest.mark.usefixtures("without_cgroups")
def test_memory_hog_without_cgroups_meets_the_address_space_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("memory_hog.sh")
    result = bundle.run(memory_bytes=256 << 20)

    assert result.stop_reason == "memory_limit", (result.message, result.stderr_tail)
    assert result.exit_code not in (None, 0)
    assert "MemoryError" in result.stderr_tail


@needs_bwrap
@pytest.mark.usefixtures("without_cgroups")
def test_cpu_burn_without_cgroups_meets_the_cpu_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("cpu_burn.sh")
    result = bundle.run(cpu_seconds=1, wall_seconds=60)

    assert result.stop_reason == "cpu_limit", result.message
    assert result.duration_s < 30
