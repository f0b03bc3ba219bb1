"""The embedded default's lab agent: ``scripts/run``'s supervisor starts one
``python -m reprogate_agent`` for pool ``local`` against the server on loopback,
the one run path every lab host takes.

At each start the supervisor asks for a fresh host token
(``manage.py embedded_agent_token``): the pool is made if it is missing, the
previous start's token is revoked (its agent, if one were left, is refused at its
next call; the runs it held are re-queued by the reaper) and a new one is issued,
for the agent to read from a 0600 file. Both are audited, as for any host.

Where the host can, the supervisor also attaches the demo's scratch block device
(``benchmarks.lib.lab.scratch``) and ``embedded_agent_policy`` puts it in the
pool's policy (``reprogate.dev/block=scratch0``, read-write); where it cannot,
the policy loses that device (its other entries stay) and the example harnesses
run file-backed. Where nbdkit is installed, the supervisor also serves the fault
export (``benchmarks.lib.lab.nbd_fault``) and the policy names its fault hook
and, for an agent running as root, its endpoint ``demo-nbd`` (a failover
scenario's harness reads it). Either way through ``pool_policy_set`` (audited),
and only when the policy changes."""

from __future__ import annotations

from typing import Final

from django.db import transaction

from accounts.models import Organisation
from accounts.services.users import organisation_create
from benchmarks.lib.lab.nbd_fault import FAULT_ENDPOINT, HOOK_PATH
from benchmarks.lib.lab.policy import SCHEMA as POLICY_SCHEMA
from benchmarks.lib.lab.scratch import SCRATCH_DEVICE
from benchmarks.lib.queues import EMBEDDED_POOL
from benchmarks.models import HostToken, LabPool
from benchmarks.services.host_tokens import (
    IssuedHostToken,
    host_token_issue,
    host_token_revoke,
)
from benchmarks.services.pools import pool_create, pool_policy_set

# The embedded agent's name on the pool (its token's and its Celery node's).
EMBEDDED_HOST: Final = "embedded-lab"
LOCAL_LAB_SLUG: Final = "local-lab"
SCRATCH_RULE: Final = {"name": SCRATCH_DEVICE, "access": "rw"}


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


def scratch_policy(current: object, device: str | None) -> dict[str, object]:
    """``current`` with the scratch device (``device``: its CDI name) as its
    read-write device, or without it (None); its other entries kept."""
    policy = dict(current) if isinstance(current, dict) and current else {}
    policy["schema"] = POLICY_SCHEMA
    kept = [
        d
        for d in policy.get("devices") or []
        if not (isinstance(d, dict) and d.get("name") == SCRATCH_DEVICE)
    ]
    if device is not None:
        kept.append({**SCRATCH_RULE, "name": device})
    policy["devices"] = kept
    return policy


def fault_policy(
    current: dict[str, object], endpoint: str | None, hook: str | None
) -> dict[str, object]:
    """``current`` with the fault export's endpoint (``demo-nbd``) and the
    fault hook, or without them (None); its other entries kept. A hook the
    operator named elsewhere than the embedded default's is left alone."""
    policy = dict(current)
    endpoints = [
        e
        for e in policy.get("endpoints") or []  # type: ignore[attr-defined]
        if not (isinstance(e, dict) and e.get("name") == FAULT_ENDPOINT)
    ]
    if endpoint:
        endpoints.append({"name": FAULT_ENDPOINT, "address": endpoint})
    if endpoints or "endpoints" in policy:
        policy["endpoints"] = endpoints
    hooks = dict(policy.get("hooks") or {})  # type: ignore[call-overload]
    if hook:
        hooks["fault"] = hook
    elif str(hooks.get("fault", "")).endswith("/" + HOOK_PATH):
        del hooks["fault"]
    if hooks or "hooks" in policy:
        policy["hooks"] = hooks
    return policy


@transaction.atomic
def embedded_agent_policy(
    *,
    pool_name: str = EMBEDDED_POOL,
    scratch_device: str | None,
    fault_endpoint: str | None = None,
    fault_hook: str | None = None,
) -> LabPool:
    """The embedded pool's policy with the scratch device, or without it
    (``scratch_device`` None: the host has none), and with the fault export's
    endpoint and hook, or without them; unchanged, no write."""
    pool = _pool(pool_name)
    current = pool.policy if isinstance(pool.policy, dict) else {}
    named = [
        d
        for d in current.get("devices") or []
        if isinstance(d, dict) and d.get("name") == SCRATCH_DEVICE
    ]
    wanted = current
    if not (scratch_device is None and not named) and not (
        scratch_device is not None and named == [SCRATCH_RULE]
    ):
        wanted = scratch_policy(current, scratch_device)
    wanted = fault_policy(wanted, fault_endpoint, fault_hook)
    if wanted == current:
        return pool
    wanted["schema"] = POLICY_SCHEMA
    return pool_policy_set(pool=pool, policy=wanted, actor=None)
