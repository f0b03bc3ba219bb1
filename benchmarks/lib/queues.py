"""The Celery queue of a lab pool: pool ``<name>`` is the queue ``pool.<name>``,
and the one message sent to it, ``EXECUTE_RUN``.

The one place the rule is written, Django-free: the pool model, the process
supervisor's embedded lab agent and the demo read it here; the lab agent
(``reprogate_agent``) is told its queue by the runner API's hello and checks it."""

from __future__ import annotations

import re
from typing import Final

POOL_PREFIX: Final = "pool."
POOL_NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
# The pool the embedded lab agent of scripts/run (config.supervise) serves.
EMBEDDED_POOL: Final = "local"
# The task a pool's queue carries, ``[run_id, attempt]``: the server sends it by
# this name (``benchmarks.services.runs.runs_dispatch``); the lab agent registers
# it under it.
EXECUTE_RUN: Final = "benchmarks.execute_run"
_POOL_NAME = re.compile(POOL_NAME_PATTERN)


def pool_queue(pool_name: str) -> str:
    """The queue a lab pool's agents consume."""
    if not _POOL_NAME.fullmatch(pool_name):
        raise ValueError(
            f"Lab pool name {pool_name!r} must be lowercase letters, digits and dashes."
        )
    return f"{POOL_PREFIX}{pool_name}"
