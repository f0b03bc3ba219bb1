"""The interference scenario's neighbour job: a validated fio vocabulary with
path-named problems, and Jain's fairness index."""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchmarks.lib.lab.lab_plan import lab_plan_problems
from benchmarks.lib.lab.scenarios.fairness import jain_index, normalised
from benchmarks.lib.lab.scenarios.neighbour import (
    NeighbourError,
    neighbour_job,
    neighbour_options_problems,
    neighbour_problems,
    parse_neighbour,
)

WHERE = "scenarios[1].neighbour"


def test_a_full_job_is_read_with_sizes_in_bytes() -> None:
    job = parse_neighbour(
        {"rw": "randread", "bs": "4k", "iodepth": 8, "rate_iops": 500,
         "runtime": 30, "size": "64m", "ioengine": "io_uring"}
    )  # fmt: skip

    assert (job.rw, job.bs, job.iodepth, job.rate_iops) == ("randread", 4096, 8, 500)
    assert (job.runtime_s, job.size, job.ioengine) == (30, 64 << 20, "io_uring")


def test_the_defaults_are_qd1_psync_the_whole_device_until_stopped() -> None:
    job = parse_neighbour({"rw": "read", "bs": 65536})

    assert (job.iodepth, job.ioengine, job.size, job.rate_iops) == (
        1,
        "psync",
        None,
        None,
    )
    assert job.runtime_s is None


def test_fio_s_command_line_is_the_runner_s_plus_the_job_s() -> None:
    job = parse_neighbour({"rw": "randread", "bs": "4k", "rate_iops": 500})

    args = job.fio_args(["/dev/loop0", "/dev/odd:name"], "/sandbox/output/fio.json")

    assert args[0] == "fio"
    assert "--filename=/dev/loop0:/dev/odd\\:name" in args
    assert {"--direct=1", "--rate_iops=500", "--bs=4096", "--rw=randread"} <= set(args)
    assert "--output=/sandbox/output/fio.json" in args
    assert "--output-format=json" in args


@pytest.mark.parametrize(
    ("job", "problem"),
    [
        ({"rw": "trim", "bs": "4k"}, f"{WHERE}.rw: 'trim' is not one of"),
        ({"bs": "4k"}, f"{WHERE}.rw: required"),
        ({"rw": "read"}, f"{WHERE}.bs: required"),
        ({"rw": "read", "bs": "1000"}, f"{WHERE}.bs: '1000' is not a block size"),
        ({"rw": "read", "bs": "32m"}, f"{WHERE}.bs: '32m' is not a block size"),
        ({"rw": "read", "bs": True}, f"{WHERE}.bs: True is not a block size"),
        ({"rw": "read", "bs": "4k", "iodepth": 0}, f"{WHERE}.iodepth: 0 is outside 1"),
        ({"rw": "read", "bs": "4k", "iodepth": "8"}, f"{WHERE}.iodepth: must be"),
        ({"rw": "read", "bs": "4k", "rate_iops": 2.5}, f"{WHERE}.rate_iops: must be"),
        ({"rw": "read", "bs": "4k", "runtime": 90_000}, f"{WHERE}.runtime: 90000 is"),
        ({"rw": "read", "bs": "4k", "size": "1x"}, f"{WHERE}.size: '1x' is not a size"),
        ({"rw": "read", "bs": "4k", "size": 100}, f"{WHERE}.size: 100 is not a size"),
        ({"rw": "read", "bs": "4k", "ioengine": "sync"}, f"{WHERE}.ioengine: 'sync'"),
        ({"rw": "read", "bs": "4k", "ioengine": "spdk"}, f"{WHERE}.ioengine: 'spdk'"),
        ({"rw": "read", "bs": "4k", "filename": "/etc/passwd"},
         f"{WHERE}.filename: not an allowed option"),
        ({"rw": "read", "bs": "4k", "exec_prerun": "sh"},
         f"{WHERE}.exec_prerun: not an allowed option"),
    ],
)  # fmt: skip
def test_a_bad_option_is_named_by_its_path(job: dict[str, Any], problem: str) -> None:
    problems = neighbour_problems(job, WHERE)

    assert len(problems) == 1
    assert problems[0].startswith(problem)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(NeighbourError) as refused:
        parse_neighbour({"rw": 1, "bs": "x", "iodepth": -1, "cmd": "sh"}, WHERE)

    named = {problem.split(":")[0] for problem in refused.value.problems}
    assert named == {f"{WHERE}.{key}" for key in ("rw", "bs", "iodepth", "cmd")}


def test_a_neighbour_that_is_not_an_object_is_refused() -> None:
    assert neighbour_problems(["fio", "--rw=read"], WHERE) == [
        f"{WHERE}: must be an object of fio options"
    ]
    assert neighbour_problems({"rw": "read", "bs": "4k"}, WHERE) == []


def test_jain_s_index_is_one_for_equal_shares_and_one_over_n_for_a_hog() -> None:
    assert jain_index([0.5, 0.5, 0.5]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)


def test_jain_s_index_of_unequal_shares_lies_between() -> None:
    # (0.2 + 1.0)^2 / (2 * (0.04 + 1.0)) = 1.44 / 2.08
    assert jain_index([0.2, 1.0]) == pytest.approx(1.44 / 2.08)
    assert 0.5 < (jain_index([0.2, 1.0]) or 0) < 1


def test_jain_s_index_is_undefined_without_tenants_or_throughput() -> None:
    assert jain_index([]) is None
    assert jain_index([0.0, 0.0]) is None
    assert jain_index([-1.0, 1.0]) is None


def test_a_share_is_capped_at_the_demand_and_needs_one() -> None:
    assert normalised(450, 500) == pytest.approx(0.9)
    assert normalised(700, 500) == 1.0
    assert normalised(10, 0) is None
    assert math.isclose(normalised(0, 500) or 0.0, 0.0)


def test_a_lab_plan_s_jobs_are_checked_in_this_vocabulary_at_its_start() -> None:
    plan = {"neighbours": {
        "noisy-500": {"rw": "randread", "bs": "4k", "rate_iops": 500},
        "hog": {"rw": "randwrite", "bs": 1000, "exec_prerun": "sh"},
    }}  # fmt: skip

    problems = lab_plan_problems(plan, [], options_check=neighbour_options_problems)

    assert problems == [
        ("lab_plan.neighbours.hog.exec_prerun",
         "not an allowed option (allowed: bs, iodepth, ioengine, rate_iops, "
         "runtime, rw, size)"),
        ("lab_plan.neighbours.hog.bs",
         "1000 is not a block size of 512 bytes to 16 MiB in multiples of 512"),
    ]  # fmt: skip


def test_a_scenario_s_job_is_found_in_the_plan_by_name() -> None:
    jobs = {"noisy-500": {"rw": "randread", "bs": "4k", "rate_iops": 500}}

    assert neighbour_job("noisy-500", jobs).rate_iops == 500
    with pytest.raises(NeighbourError) as missing:
        neighbour_job("quiet", jobs)
    assert missing.value.problems == [
        "neighbours.quiet: no such neighbour job in the lab plan (it has noisy-500)"
    ]
    with pytest.raises(NeighbourError, match=r"neighbours\.x\.rw: required"):
        neighbour_job("x", {"x": {"bs": "4k"}})
