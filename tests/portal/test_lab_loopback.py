"""The lab agent's run path in process (``portal.lab_loopback``): the agent's own
client, its transport the runner API's views; the same refusals as over HTTP,
and the block's host token revoked after it."""

from __future__ import annotations

import pytest

from accounts.models import Organisation
from benchmarks.models import HostToken, LabHost, LabPool
from benchmarks.services.host_tokens import host_token_issue
from benchmarks.services.pools import pool_create
from portal.lab_loopback import LoopbackRunnerClient, loopback_agent
from reprogate_agent.client import TokenRefused

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
    return pool_create(lab_organisation=lab, name="loop", actor=None)


def test_an_unknown_token_is_refused_as_over_http() -> None:
    client = LoopbackRunnerClient("rgh_" + "x" * 43)

    with pytest.raises(TokenRefused) as refused:
        client.hello({"worker_name": "w@h", "hostname": "h"})

    assert refused.value.status == 401
    assert "Unknown host token" in refused.value.detail


def test_the_block_s_host_says_hello_and_its_token_is_revoked_after(
    pool: LabPool,
) -> None:
    with loopback_agent(pool, "seed") as agent:
        host = LabHost.objects.get(pool=pool)
        assert host.worker_name == agent.terms.worker_name
        assert host.token is not None
        assert host.token.revoked_at is None
        assert agent.terms.worker_name.startswith("seed@")

    token = HostToken.objects.get(pool=pool, name="seed")
    assert token.revoked_at is not None
    assert LabHost.objects.get(pool=pool).stopped_at is not None


def test_a_token_left_by_an_interrupted_seed_is_revoked_first(pool: LabPool) -> None:
    left = host_token_issue(pool=pool, name="seed", actor=None)  # a killed seed's

    with loopback_agent(pool, "seed"):
        active = HostToken.objects.filter(pool=pool, revoked_at=None)
        assert active.count() == 1
        assert active.get().pk != left.token.pk

    assert not HostToken.objects.filter(pool=pool, revoked_at=None).exists()
