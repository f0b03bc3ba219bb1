"""Fixtures of the host-token tests: the engaged lab, its pool ``gpu-a``, another
lab with its own operator and pool, and a runner host registered with a token."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Organisation, Role
from benchmarks.models import HostToken, LabHost, LabPool
from benchmarks.services.pools import WorkerIdentity, host_register, pool_create
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory


@pytest.fixture
def lab_org(buyer_org: Organisation) -> Organisation:
    return buyer_org.engages.get(kind=Organisation.Kind.LAB)


@pytest.fixture
def pool(lab_org: Organisation) -> LabPool:
    return pool_create(lab_organisation=lab_org, name="gpu-a", actor=None)


@pytest.fixture
def other_lab(db: None) -> Organisation:
    return OrganisationFactory.create(slug="elsewhere-lab", kind=Organisation.Kind.LAB)


@pytest.fixture
def other_labops(other_lab: Organisation) -> Any:
    user = UserFactory.create(username="other-labops")
    MembershipFactory.create(user=user, organisation=other_lab, role=Role.LABOPS)
    return user


@pytest.fixture
def other_pool(other_lab: Organisation) -> LabPool:
    return pool_create(lab_organisation=other_lab, name="elsewhere", actor=None)


def register_with(token: HostToken, worker_name: str = "lab-07@host-7") -> LabHost:
    """What the runner API's hello does for an agent holding ``token``."""
    host = host_register(
        pool=token.pool, worker=WorkerIdentity(worker_name, "host-7", 4242)
    )
    host.token = token
    host.save(update_fields=["token"])
    return host
