"""The lab pools' queue names (``benchmarks.lib.queues``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.lib.queues import EMBEDDED_POOL, pool_queue
from benchmarks.models import LabPool
from config import supervise
from portal import demo


def test_pool_queue_prefixes_the_pool_name() -> None:
    assert pool_queue("lab-1") == "pool.lab-1"


def test_pool_queue_accepts_63_characters() -> None:
    assert pool_queue("a" * 63) == f"pool.{'a' * 63}"


@pytest.mark.parametrize(
    "name",
    ["", "Lab", "-lab", "lab_1", "lab.1", "pool.lab", "lab 1", "a" * 64, "lab\n"],
)
def test_pool_queue_rejects_a_bad_name(name: str) -> None:
    with pytest.raises(ValueError, match="lowercase letters, digits and dashes"):
        pool_queue(name)


def test_the_pool_model_the_demo_and_the_embedded_worker_share_the_rule(
    tmp_path: Path,
) -> None:
    programs = supervise.embedded_programs("h", 8130, tmp_path)

    assert LabPool(name="h100-rdma").queue == pool_queue("h100-rdma")
    assert demo.LAB_POOL == EMBEDDED_POOL
    assert any(p.name == "lab-agent" for p in programs)
    assert f"--pool={EMBEDDED_POOL}" in supervise.agent_token_argv(tmp_path)
