"""The Celery queue of a lab pool: pool ``<name>`` is the queue ``pool.<name>``,
and the one message sent to it, ``EXECUTE_RUN``. Each host of a pool also has a
queue of its own, ``pool.<name>.host.<worker name>``: the runs of a campaign
bound to named hosts (a gate's canary hosts, or the rest of the pool after
them) are sent there, one message per run to one of those hosts.

The one place the rule is written, Django-free: the pool model, the process
supervisor's embedded lab agent and the demo read it here; the lab agent
(``reprogate_agent``) is told its queue by the runner API's hello and checks it."""

from __future__ import annotations

import re
from typing import Final

POOL_PREFIX: Final = "pool."
POOL_NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
HOST_INFIX: Final = ".host."
# A host a queue of its own can name: its worker name as an agent makes it
# (``<name>@<hostname>``); the gate plan's ``hosts`` follow the same rule.
HOST_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,254}$"
# The pool the embedded lab agent of scripts/run (config.supervise) serves.
EMBEDDED_POOL: Final = "local"
# The task a pool's queue carries, ``[run_id, attempt]``: the server sends it by
# this name (``benchmarks.services.runs.runs_dispatch``); the lab agent registers
# it under it.
EXECUTE_RUN: Final = "benchmarks.execute_run"
_POOL_NAME = re.compile(POOL_NAME_PATTERN)
_HOST_NAME = re.compile(HOST_NAME_PATTERN)


def pool_queue(pool_name: str) -> str:
    """The queue a lab pool's agents consume."""
    if not _POOL_NAME.fullmatch(pool_name):
        raise ValueError(
            f"Lab pool name {pool_name!r} must be lowercase letters, digits and dashes."
        )
    return f"{POOL_PREFIX}{pool_name}"


def host_queue(pool_name: str, host_name: str) -> str:
    """The queue of one host of a lab pool (its agent consumes it beside the
    pool's): ``pool.<pool>.host.<worker name>``."""
    if not host_name_routable(host_name):
        raise ValueError(
            f"Lab host name {host_name!r} must be letters, digits and . _ @ -."
        )
    return f"{pool_queue(pool_name)}{HOST_INFIX}{host_name}"


def host_name_routable(host_name: str) -> bool:
    """Whether a host of this name can have a queue of its own."""
    return bool(_HOST_NAME.fullmatch(host_name))


def pool_permission(pool_name: str) -> str:
    """The RabbitMQ permission pattern of the pool's broker user (configure,
    write and read): the pool's queue and exchange, and its hosts' own, and
    nothing else (``deploy/rabbitmq/pool-user.sh`` writes the same)."""
    pool_queue(pool_name)  # the name's rule: no metacharacter but the dot
    return rf"^pool\.{pool_name}(\.host\.[A-Za-z0-9._@-]+)?$"
