"""A Celery app configured as the lab agent's (CONTRACT: no events, no remote
control, no result backend; the worker runs with ``--pool solo``, without gossip,
mingle or heartbeat), for the broker permission tests: its
``benchmarks.execute_run`` writes ``<run_id> <attempt>`` to the file
``BROKER_TEST_OUT`` names instead of running anything. The broker is
``BROKER_TEST_URL``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from celery import Celery

AGENT_SETTINGS: Final[dict[str, Any]] = {
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
    "worker_send_task_events": False,
    "task_send_sent_event": False,
    "worker_enable_remote_control": False,
    "result_backend": None,
    "task_ignore_result": True,
    "broker_connection_retry_on_startup": True,
    "task_serializer": "json",
    "accept_content": ["json"],
}
WORKER_ARGS: Final = (
    "--pool", "solo", "--concurrency", "1",
    "--without-gossip", "--without-mingle", "--without-heartbeat",
)  # fmt: skip

app = Celery("broker-permissions", broker=os.environ.get("BROKER_TEST_URL"))
app.conf.update(AGENT_SETTINGS)


@app.task(name="benchmarks.execute_run", acks_late=True, reject_on_worker_lost=True)
def execute_run(run_id: int, attempt: int) -> None:
    with Path(os.environ["BROKER_TEST_OUT"]).open("a") as out:
        out.write(f"{run_id} {attempt}\n")
