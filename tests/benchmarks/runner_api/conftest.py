"""Runner API fixtures: the runner tests' RFP, bundle and pool, a campaign on it,
and an agent (DRF's test client) holding a host token of the pool."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from benchmarks.models import Campaign, LabPool
from benchmarks.services.host_tokens import IssuedHostToken, host_token_issue
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401 (fixture rfp)
from tests.benchmarks.runner.conftest import (  # noqa: F401 (fixtures)
    _runner_settings,
    bundle,
    lab_org,
    pool,
    sent_tasks,
)
from tests.benchmarks.runner.support import (  # noqa: F401 (fixture)
    make_pool,
    runner_work_dir,
    start,
)


@pytest.fixture(autouse=True)
def _uploads_in_the_tests_var_dir(settings: Any, tmp_path: Any) -> None:
    """Runner uploads go under the installation's var directory: the test's own."""
    settings.VAR_DIR = tmp_path / "var"


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:  # noqa: F811
    return start(bundle, pool, labops)


@pytest.fixture
def issued(pool: LabPool) -> IssuedHostToken:  # noqa: F811
    return host_token_issue(pool=pool, name="lab-07", actor=None)


def agent_client(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def agent(issued: IssuedHostToken) -> APIClient:
    return agent_client(issued.raw)


@pytest.fixture
def other_pool(lab_org: Organisation) -> LabPool:  # noqa: F811
    return make_pool(lab_org, "gpu-b")


@pytest.fixture
def other_agent(other_pool: LabPool) -> APIClient:
    """An agent of another pool of the same lab."""
    return agent_client(
        host_token_issue(pool=other_pool, name="lab-99", actor=None).raw
    )
