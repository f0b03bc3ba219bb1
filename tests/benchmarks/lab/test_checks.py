"""The anti-gaming checks' rules (``benchmarks.lib.lab.checks``): the page
cache's sizes around a drop, the working set against host memory, the outputs
of a re-run with another seed, and the shape the server accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.checks import (
    CHECK_IDS,
    COLD_CACHE_FLOOR_BYTES,
    PageCache,
    checks_problems,
    cold_cache_check,
    flagged_ids,
    page_cache,
    seed_check,
    working_set_check,
)
from gates.lib.engine.validate import CHECKS

GIB = 1 << 30
COLD = {"name": "cold-c1", "cache": "cold"}
SENSITIVE = {"name": "s", "cache": "warm", "seed_sensitive": True}


def test_the_gate_engine_knows_the_same_check_ids() -> None:
    assert tuple(CHECKS) == CHECK_IDS


def test_page_cache_reads_cached_and_shmem_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:       16384000 kB\nCached:          2048000 kB\n"
        "SwapCached:            0 kB\nShmem:             48000 kB\n"
    )

    found = page_cache(meminfo)

    assert found == PageCache(cached=2048000 * 1024, shmem=48000 * 1024)
    assert found.droppable == 2000000 * 1024


def test_page_cache_is_none_where_meminfo_is_unreadable(tmp_path: Path) -> None:
    assert page_cache(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("MemTotal: 1 kB\n")
    assert page_cache(tmp_path / "odd") is None


def test_page_cache_on_this_host_is_read() -> None:
    if not Path("/proc/meminfo").exists():
        pytest.skip("no /proc/meminfo on this host")
    found = page_cache()
    assert found is not None
    assert found.cached >= 0


@pytest.mark.parametrize(
    ("before", "after", "flagged"),
    [
        (8 * GIB, 100 << 20, False),  # most of it dropped
        (8 * GIB, 5 * GIB, True),  # more than half stayed, over the floor
        (100 << 20, 90 << 20, True),  # little cache, little dropped: over 64 MiB
        (100 << 20, 60 << 20, False),  # what stayed is at most 64 MiB
        (200 << 20, 100 << 20, False),  # exactly half stayed
    ],
)
def test_a_drop_is_proven_by_the_sizes(before: int, after: int, flagged: bool) -> None:
    done = cold_cache_check(
        COLD, dropped=True, before=PageCache(before, 0), after=PageCache(after, 0)
    )

    assert (done["applicable"], done["flagged"]) == (True, flagged)
    assert (done["values"]["before_bytes"], done["values"]["after_bytes"]) == (
        before,
        after,
    )
    assert done["values"]["floor_bytes"] == COLD_CACHE_FLOOR_BYTES


def test_shared_memory_does_not_count_as_cache_left_behind() -> None:
    done = cold_cache_check(
        COLD,
        dropped=True,
        before=PageCache(9 * GIB, 2 * GIB),
        after=PageCache(2 * GIB + (10 << 20), 2 * GIB),
    )

    assert done["flagged"] is False
    assert done["values"]["cached_after_bytes"] == 2 * GIB + (10 << 20)


def test_a_cache_not_dropped_or_not_measured_is_unproven() -> None:
    refused = cold_cache_check(
        COLD, dropped=False, before=PageCache(GIB, 0), after=PageCache(GIB, 0)
    )
    unmeasured = cold_cache_check(COLD, dropped=True, before=None, after=None)

    assert refused["flagged"]
    assert "did not allow" in refused["detail"]
    assert unmeasured["flagged"]
    assert "could not be read" in unmeasured["detail"]


def test_a_warm_scenario_has_no_cold_cache_to_prove() -> None:
    done = cold_cache_check({"cache": "warm"}, dropped=None, before=None, after=None)

    assert (done["applicable"], done["flagged"]) == (False, False)


@pytest.mark.parametrize(
    ("working_set", "memory", "flagged"),
    [
        (4 * 64 * GIB, 64 * GIB, True),
        (5 * 64 * GIB - 1, 64 * GIB, True),
        (5 * 64 * GIB, 64 * GIB, False),  # exactly 5x: MLPerf Storage's minimum
        (10 * 64 * GIB, 64 * GIB, False),
    ],
)
def test_a_working_set_under_5x_host_memory_is_flagged(
    working_set: int, memory: int, flagged: bool
) -> None:
    scenario = {"working_set_bytes": working_set}

    done = working_set_check(scenario, {"memory": {"total_bytes": memory}})

    assert done["flagged"] is flagged
    assert done["values"]["working_set_bytes"] == working_set
    assert done["values"]["host_memory_bytes"] == memory


def test_a_working_set_against_unknown_memory_is_flagged() -> None:
    done = working_set_check({"working_set_bytes": GIB}, {"memory": {}})

    assert done["flagged"] is True
    assert "not captured" in done["detail"]


def test_a_scenario_without_a_working_set_is_not_applicable() -> None:
    done = working_set_check({}, {"memory": {"total_bytes": GIB}})

    assert (done["applicable"], done["flagged"]) == (False, False)


def test_identical_outputs_with_another_seed_flag_seed_ignored() -> None:
    same = {"metrics.json": "a" * 64}

    done = seed_check(SENSITIVE, seed=1, second_seed=2, first=same, second=same)

    assert done["flagged"] is True
    assert (done["values"]["seed"], done["values"]["second_seed"]) == (1, 2)


def test_outputs_that_differ_with_another_seed_are_not_flagged() -> None:
    done = seed_check(
        SENSITIVE,
        seed=1,
        second_seed=2,
        first={"metrics.json": "a" * 64},
        second={"metrics.json": "b" * 64},
    )

    assert done["flagged"] is False
    assert done["values"]["outputs"]["metrics.json"]["second_sha256"] == "b" * 64


def test_a_failed_rerun_is_flagged_and_a_failed_run_is_not_rerun() -> None:
    failed_rerun = seed_check(
        SENSITIVE, seed=1, second_seed=2, first={"m": "a"}, second=None
    )
    failed_run = seed_check(
        SENSITIVE, seed=1, second_seed=None, first={}, second=None, first_ok=False
    )

    assert failed_rerun["flagged"] is True
    assert (failed_run["applicable"], failed_run["flagged"]) == (True, False)


def test_a_scenario_not_seed_sensitive_is_not_rerun() -> None:
    done = seed_check({}, seed=1, second_seed=None, first={}, second=None)

    assert (done["applicable"], done["flagged"]) == (False, False)


def _checks(**changes: Any) -> list[dict[str, Any]]:
    one = {"id": "seed_ignored", "applicable": True, "flagged": True,
           "detail": "Same outputs.", "values": {"seed": 1}}  # fmt: skip
    return [{**one, **changes}]


def test_well_formed_checks_have_no_problems_and_their_flags_are_listed() -> None:
    checks = [*_checks(), *_checks(id="cold_cache_unproven", flagged=False)]

    assert checks_problems(checks) == []
    assert flagged_ids(checks) == ["seed_ignored"]


@pytest.mark.parametrize(
    ("checks", "where"),
    [
        ({"id": "seed_ignored"}, "checks"),
        (_checks(id="made_up"), "checks[0].id"),
        (_checks() + _checks(), "checks[1].id"),
        (_checks(flagged="yes"), "checks[0].flagged"),
        (_checks(applicable=None), "checks[0].applicable"),
        (_checks(detail="x" * 501), "checks[0].detail"),
        (_checks(values=[1]), "checks[0].values"),
        ([{"id": "seed_ignored", "flagged": True}], "checks[0]"),
    ],
)
def test_malformed_checks_are_named_by_their_path(checks: Any, where: str) -> None:
    problems = checks_problems(checks)

    assert len(problems) == 1
    assert problems[0].startswith(f"{where}:")
