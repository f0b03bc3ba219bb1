"""The Celery application: pool queue names."""

from __future__ import annotations

import pytest

from config.celery import pool_queue


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
