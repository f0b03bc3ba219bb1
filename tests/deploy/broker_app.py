"""The lab agent's Celery app and worker (``reprogate_agent.celery_app.create_app``,
started as ``reprogate_agent.__main__`` starts it: solo pool, concurrency 1, no
gossip, mingle, heartbeat or events) for the broker permission tests, with one
difference: its ``benchmarks.execute_run`` writes ``<run_id> <attempt>`` to the
file ``BROKER_TEST_OUT`` names instead of calling a server.

    BROKER_TEST_URL=amqp://… BROKER_TEST_QUEUE=pool.<name> BROKER_TEST_OUT=file \\
        python -m tests.deploy.broker_app
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from reprogate_agent.celery_app import TASK_NAME, create_app, create_worker
from reprogate_agent.options import AgentOptions


def main() -> int:
    options = AgentOptions(
        server_url="https://unused.invalid",
        token="rgh_unused",
        broker_url=os.environ["BROKER_TEST_URL"],
        ca_file=None,
        work_dir=Path.cwd(),
        name="broker-test",
        hostname=socket.gethostname(),
    )
    queue = os.environ["BROKER_TEST_QUEUE"]
    app = create_app(options, queue)

    @app.task(name=TASK_NAME, acks_late=True, reject_on_worker_lost=True)
    def execute_run(run_id: int, attempt: int) -> None:
        with Path(os.environ["BROKER_TEST_OUT"]).open("a") as out:
            out.write(f"{run_id} {attempt}\n")

    worker = create_worker(app, options.node_name, queue)
    worker.start()
    return int(worker.exitcode or 0)


if __name__ == "__main__":
    sys.exit(main())
