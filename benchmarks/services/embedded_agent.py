"""The embedded default's lab agent: ``scripts/run``'s supervisor starts one
``python -m reprogate_agent`` for pool ``local`` against the server on loopback,
the one run path every lab host takes.

At each start the supervisor asks for a fresh host token
(``manage.py embedded_agent_token``): the pool is made if it is missing, the
previous start's token is revoked (its agent, if one were left, is refused at its
next call; the runs it held are re-queued by the reaper) and a new one is issued,
for the agent to read from a 0600 file. Both are audited, as for any host."""

from __future__ import annotations

from typing import Final

from django.db import transaction

from accounts.models import Organisation
from accounts.services.users import organisation_create
from benchmarks.lib.queues import EMBEDDED_POOL
from benchmarks.models import HostToken, LabPool
from benchmarks.services.host_tokens import (
    IssuedHostToken,
    host_token_issue,
    host_token_revoke,
)
from benchmarks.services.pools import pool_create

# The embedded agent's name on the pool (its token's and its Celery node's).
EMBEDDED_HOST: Final = "embedded-lab"
LOCAL_LAB_SLUG: Final = "local-lab"


def _pool(name: str) -> LabPool:
    pool = LabPool.objects.select_related("lab_organisation").filter(name=name).first()
    if pool is not None:
        return pool
    lab = Organisation.objects.filter(kind=Organisation.Kind.LAB).order_by("pk").first()
    if lab is None:
        lab = organisation_create(
            slug=LOCAL_LAB_SLUG,
            name="Local lab",
            kind=Organisation.Kind.LAB,
            actor=None,
        )
    return pool_create(
        lab_organisation=lab,
        name=name,
        description="This machine: the embedded default's lab agent.",
        hardware_class="any Linux host",
        actor=None,
    )


@transaction.atomic
def embedded_agent_token(
    *, pool_name: str = EMBEDDED_POOL, host_name: str = EMBEDDED_HOST
) -> tuple[IssuedHostToken, list[HostToken]]:
    """A fresh token for the embedded agent on ``pool_name`` (made if missing),
    and the previous starts' tokens it replaces, revoked."""
    pool = _pool(pool_name)
    revoked = [
        host_token_revoke(token=old, actor=None)
        for old in HostToken.objects.filter(pool=pool, name=host_name, revoked_at=None)
    ]
    return host_token_issue(pool=pool, name=host_name, actor=None), revoked
