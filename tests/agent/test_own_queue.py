"""The agent's queues: its pool's, and its host's own as hello names it (the
runs of a campaign bound to named hosts), each checked against the names the
agent knows; a server that names none leaves the agent on its pool's queue."""

from __future__ import annotations

from typing import Any

import pytest

from reprogate_agent.celery_app import agent_queues, host_queue_of

NODE = "agent@lab-07"
HELLO = {
    "pool": "gpu-a",
    "queue": "pool.gpu-a",
    "host_queue": "pool.gpu-a.host.agent@lab-07",
}


def test_the_own_queue_hello_names_is_taken() -> None:
    assert host_queue_of(HELLO, NODE) == "pool.gpu-a.host.agent@lab-07"


@pytest.mark.parametrize("answer", [{**HELLO, "host_queue": ""}, {"pool": "gpu-a"}])
def test_no_own_queue_when_the_server_names_none(answer: dict[str, Any]) -> None:
    assert host_queue_of(answer, NODE) is None


@pytest.mark.parametrize(
    "queue",
    ["pool.gpu-a.host.agent@lab-08", "pool.gpu-b.host.agent@lab-07", "celery"],
)
def test_another_hosts_or_pools_queue_is_refused(queue: str) -> None:
    with pytest.raises(ValueError, match="named queue"):
        host_queue_of({**HELLO, "host_queue": queue}, NODE)


def test_a_name_no_queue_can_carry_refuses_any_own_queue() -> None:
    with pytest.raises(ValueError, match="named queue"):
        host_queue_of({**HELLO, "host_queue": "pool.gpu-a.host.a b"}, "a b")


@pytest.mark.parametrize(
    ("own", "expected"),
    [
        (
            "pool.gpu-a.host.agent@lab-07",
            ["pool.gpu-a", "pool.gpu-a.host.agent@lab-07"],
        ),
        (None, ["pool.gpu-a"]),
    ],
)
def test_the_worker_consumes_the_pools_queue_and_its_own(
    own: str | None, expected: list[str]
) -> None:
    assert agent_queues("pool.gpu-a", own) == expected
