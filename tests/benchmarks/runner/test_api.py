"""The runner API: the same visibility as the pages, lab operators act."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.pools import host_register
from tests.benchmarks.runner.support import finish, runs_of, start, worker

pytestmark = pytest.mark.django_db


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:
    campaign = start(bundle, pool, labops)
    finish(
        runs_of(campaign)[0],
        metrics=[{"name": "ttft_ms", "stat": "p99", "value": 40.0}],
    )
    return campaign


def test_lab_operator_starts_a_campaign(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    body = {"bundle": str(bundle.public_id), "pool": pool.name, "repetitions": 2}

    response = api(labops).post(reverse("campaign-list"), body, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "queued"
    assert len(response.json()["runs"]) == 4


def test_start_with_a_pool_of_another_lab_is_404(bundle: Any, labops: Any) -> None:
    body = {"bundle": str(bundle.public_id), "pool": "nope", "repetitions": 1}

    response = api(labops).post(reverse("campaign-list"), body, format="json")

    assert response.status_code == 404


def test_start_by_a_buyer_is_403(bundle: Any, pool: LabPool, buyer: Any) -> None:
    body = {"bundle": str(bundle.public_id), "pool": pool.name, "repetitions": 1}

    response = api(buyer).post(reverse("campaign-list"), body, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_start_with_bad_repetitions_lists_the_problem(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    body = {"bundle": str(bundle.public_id), "pool": pool.name, "repetitions": 0}

    response = api(labops).post(reverse("campaign-list"), body, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "repetitions"


def test_campaign_detail_and_list(
    campaign: Campaign, buyer: Any, vendor_b: Any
) -> None:
    url = reverse("campaign-detail", args=[campaign.public_id])

    detail = api(buyer).get(url).json()
    listing = api(vendor_b).get(reverse("campaign-list")).json()

    assert detail["vendor"] == "acme-flash"
    assert [r["status"] for r in detail["runs"]] == ["succeeded", "queued"]
    assert listing["results"] == []
    assert api(vendor_b).get(url).status_code == 404


def test_run_detail_carries_its_metrics(
    campaign: Campaign, vendor_a: Any, outsider: Any
) -> None:
    run = runs_of(campaign)[0]
    url = reverse("run-detail", args=[run.public_id])

    body = api(vendor_a).get(url).json()

    assert [(m["name"], m["stat"], m["value"]) for m in body["metrics"]] == [
        ("ttft_ms", "p99", 40.0)
    ]
    assert api(outsider).get(url).status_code == 404


def test_run_cancel_of_a_finished_run_is_409(
    campaign: Campaign, labops: Any, buyer: Any
) -> None:
    run = runs_of(campaign)[0]
    url = reverse("run-cancel", args=[run.public_id])

    assert api(buyer).post(url).status_code == 403
    response = api(labops).post(url)
    assert response.status_code == 409
    assert response.json()["code"] == "run_finished"


def test_campaign_cancel(campaign: Campaign, labops: Any) -> None:
    response = api(labops).post(reverse("campaign-cancel", args=[campaign.public_id]))

    assert response.status_code == 200
    assert Run.objects.get(pk=runs_of(campaign)[1].pk).state == Run.State.CANCELLED


def test_pool_list_shows_host_status(pool: LabPool, labops: Any, buyer: Any) -> None:
    host_register(pool=pool, worker=worker())

    body = api(labops).get(reverse("lab-pool-list")).json()

    assert body["count"] == 1
    (listed,) = body["results"]
    assert listed["queue"] == "pool.gpu-a"
    assert listed["hosts"][0]["status"] == "online"
    assert api(buyer).get(reverse("lab-pool-list")).status_code == 403
