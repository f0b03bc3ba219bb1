"""A campaign's runs page through their own list (the detail shows the first
``PAGE_SIZE`` with a count and the link) and the lab's pools answer a page;
another lab's operator gets 404 and none of its pools."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import Organisation, Role
from benchmarks.models import Campaign, LabPool, Run
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory
from tests.api.paging import assert_pages
from tests.benchmarks.runner.support import make_pool, start

pytestmark = pytest.mark.django_db


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def outsider(db: None) -> Any:
    lab = OrganisationFactory.create(slug="elsewhere-lab", kind=Organisation.Kind.LAB)
    make_pool(lab, "elsewhere")
    user = UserFactory.create(username="other-labops")
    MembershipFactory.create(user=user, organisation=lab, role=Role.LABOPS)
    return user


def test_a_campaigns_runs_page_in_dispatch_order(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    campaign: Campaign = start(bundle, pool, labops, repetitions=2)
    url = f"/api/v1/campaigns/{campaign.public_id}/runs/"

    whole = assert_pages(_client(labops), url)
    detail = _client(labops).get(f"/api/v1/campaigns/{campaign.public_id}/").json()

    ids = [str(r.public_id) for r in campaign.runs.order_by("position")]
    assert [r["id"] for r in whole["results"]] == ids
    assert [r["id"] for r in detail["runs"]] == ids
    assert (detail["run_count"], detail["runs_url"]) == (len(ids), url)


def test_a_campaigns_detail_reads_only_its_first_page_of_runs(
    bundle: Any, pool: LabPool, labops: Any, monkeypatch: Any
) -> None:
    """Status, progress and count come from the database's counts; only the
    first page of runs is read, so the queries and the rows read do not grow."""
    monkeypatch.setattr("benchmarks.api.campaigns.PAGE_SIZE", 2)
    campaign: Campaign = start(bundle, pool, labops, repetitions=3)
    total = campaign.runs.count()
    first = campaign.runs.order_by("position").first()
    assert first is not None
    assert total > 2
    Run.objects.filter(pk=first.pk).update(state=Run.State.SUCCEEDED, progress=1.0)
    url = f"/api/v1/campaigns/{campaign.public_id}/"

    with CaptureQueriesContext(connection) as captured:
        detail = _client(labops).get(url).json()

    assert detail["run_count"] == total
    assert len(detail["runs"]) == 2
    assert detail["status"] == "running"
    assert detail["progress"] == pytest.approx(1 / total)
    run_reads = [q["sql"] for q in captured if '"benchmarks_run"' in q["sql"]]
    assert run_reads
    assert all("LIMIT" in s or "COUNT" in s for s in run_reads), run_reads


def test_the_lab_pools_page(pool: LabPool, labops: Any, outsider: Any) -> None:
    make_pool(pool.lab_organisation, "gpu-b")

    whole = assert_pages(_client(labops), "/api/v1/lab/pools/")

    assert [p["name"] for p in whole["results"]] == ["gpu-a", "gpu-b"]


def test_another_lab_sees_neither_the_runs_nor_the_pools(
    bundle: Any, pool: LabPool, labops: Any, outsider: Any
) -> None:
    campaign = start(bundle, pool, labops)
    client = _client(outsider)

    runs = client.get(f"/api/v1/campaigns/{campaign.public_id}/runs/")
    pools = client.get("/api/v1/lab/pools/", {"limit": 10_000}).json()

    assert runs.status_code == 404
    assert [p["name"] for p in pools["results"]] == ["elsewhere"]
