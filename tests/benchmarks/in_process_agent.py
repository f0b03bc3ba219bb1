"""A run executed in the test's process by the one run path: the lab agent's
``execute_run`` with a ``RunnerClient`` whose transport is Django's test client
(``portal.lab_loopback``): the runner API's views answer, no HTTP server, no
broker. Every test that needs a run executed for real uses this."""

from __future__ import annotations

import socket

from benchmarks.models import Run
from portal.lab_loopback import loopback_agent

HOST = "w1"  # the host token's name; the agent's worker is ``w1@<hostname>``


def worker_name(host: str = HOST) -> str:
    return f"{host}@{socket.gethostname()}"


def execute_in_process(run: Run, host: str = HOST) -> tuple[str, Run]:
    """Execute ``run``'s current attempt as a lab host of its pool named ``host``
    would: what the agent said, and the run as it ended."""
    pool = Run.objects.select_related("campaign__pool").get(pk=run.pk).campaign.pool
    with loopback_agent(pool, host) as agent:
        outcome = agent.execute(Run.objects.get(pk=run.pk))
    return outcome, Run.objects.get(pk=run.pk)
