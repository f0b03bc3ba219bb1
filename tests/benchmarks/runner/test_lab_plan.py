"""The buyer's lab plan at a campaign's start: the lab's own scenarios (any
kind, checked as a manifest's are) stored beside the bundle's and marked
``"added_by": "lab"``, and its neighbour jobs, which the claim of an
interference run carries; every problem named by its path, through the
service, the API and the form."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from benchmarks.lib.lab.lab_plan import STANDARD_NEIGHBOURS, lab_plan_problems
from benchmarks.lib.lab.scenarios.neighbour import parse_neighbour
from benchmarks.models import Campaign, LabPool
from benchmarks.services.campaigns import campaign_start
from benchmarks.services.common import RunnerError
from benchmarks.services.remote import claimed_run
from tests.benchmarks.runner.support import SCENARIOS, runs_of

pytestmark = pytest.mark.django_db

FAILOVER = {
    "name": "failover-eio", "kind": "failover", "cache": "warm", "concurrency": 1,
    "batch_size": 1, "duration_s": 10,
    "actions": [{"at_s": 3, "do": "error_window", "for_s": 2}],
}  # fmt: skip
NOISY = {
    "name": "noisy", "kind": "interference", "neighbour": "noisy-500",
    "cache": "cold", "concurrency": 1, "batch_size": 1, "duration_s": 10,
}  # fmt: skip
NEIGHBOURS = {"noisy-500": {"rw": "randread", "bs": "4k", "rate_iops": 500}}


def test_the_lab_s_scenarios_run_after_the_bundle_s_marked_as_the_lab_s(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    plan = {"scenarios": [FAILOVER, NOISY], "neighbours": NEIGHBOURS}

    campaign = campaign_start(
        bundle=bundle, pool=pool, repetitions=1, actor=labops, lab_plan=plan
    )

    names = [r.scenario_name for r in runs_of(campaign)]
    assert names == [s["name"] for s in SCENARIOS] + ["failover-eio", "noisy"]
    assert campaign.scenarios[-2] == {**FAILOVER, "added_by": "lab"}
    assert campaign.neighbours == NEIGHBOURS
    noisy, failover = runs_of(campaign)[-1], runs_of(campaign)[-2]
    assert claimed_run(noisy)["neighbours"] == NEIGHBOURS
    assert claimed_run(failover)["neighbours"] == {}
    assert claimed_run(failover)["scenario"]["actions"] == FAILOVER["actions"]


@pytest.mark.parametrize(
    ("plan", "path", "says"),
    [
        ({"scenarios": [{**FAILOVER, "actions": [{"at_s": 3, "do": "bandwidth",
                                                  "for_s": 2}]}]},
         "lab_plan.scenarios[0].actions[0].rate", "Is required for 'bandwidth'"),
        ({"scenarios": [{**FAILOVER, "name": SCENARIOS[0]["name"]}]},
         "lab_plan.scenarios[0].name", "Repeats the bundle's scenario name"),
        ({"scenarios": [FAILOVER, FAILOVER]},
         "lab_plan.scenarios[1].name", "Repeats another lab scenario name"),
        ({"scenarios": [{**NOISY, "neighbour": "hammer"}]},
         "lab_plan.scenarios[0].neighbour",
         "which neither the lab plan's neighbours nor the lab's standard ones"),
        ({"scenarios": [{**FAILOVER, "added_by": "vendor"}]},
         "lab_plan.scenarios[0].added_by", "Must be 'lab'"),
        ({"scenarios": [{"name": "x", "kind": "warmup"}]},
         "lab_plan.scenarios[0].cache", "Is required"),
        ({"neighbours": {"noisy-500": "fio --rw=randread"}},
         "lab_plan.neighbours.noisy-500", "Must be an object of fio job options"),
        ({"neighbours": {"n": {"rw": "read", "bs": "4k", "rate_iops": True}}},
         "lab_plan.neighbours.n.rate_iops", "must be a whole number"),
        ({"neighbours": {"n": {"rw": "read", "bs": "4k", "filename": "/etc/passwd"}}},
         "lab_plan.neighbours.n.filename", "not an allowed option"),
        ({"neighbours": {"Bad Name": {"rw": "read"}}},
         "lab_plan.neighbours.Bad Name", "lowercase"),
        ({"extra": 1}, "lab_plan.extra", "Is not a field of a lab plan"),
        ({"scenarios": {}}, "lab_plan.scenarios", "Must be a list"),
    ],
)  # fmt: skip
def test_a_bad_lab_plan_is_refused_naming_the_place(
    bundle: Any,
    pool: LabPool,
    labops: Any,
    plan: dict[str, Any],
    path: str,
    says: str,
) -> None:
    with pytest.raises(RunnerError) as refused:
        campaign_start(
            bundle=bundle, pool=pool, repetitions=1, actor=labops, lab_plan=plan
        )

    assert refused.value.code == "lab_plan"
    assert any(
        p.path == path and says in p.message for p in refused.value.problems or []
    ), refused.value.problems
    assert not Campaign.objects.exists()


def test_a_bundle_s_interference_scenario_needs_a_neighbour_the_lab_defines() -> None:
    hammer = {**NOISY, "neighbour": "hammer"}

    assert lab_plan_problems({}, [hammer]) == [
        (
            "bundle scenario noisy",
            "Names neighbour 'hammer', which neither the lab plan's neighbours nor "
            "the lab's standard ones (noisy-500, noisy-max) define.",
        )
    ]
    assert lab_plan_problems({"neighbours": {"hammer": NEIGHBOURS["noisy-500"]}},
                             [hammer]) == []  # fmt: skip
    assert lab_plan_problems({}, [NOISY]) == []  # a standard job


@pytest.mark.parametrize("name", sorted(STANDARD_NEIGHBOURS))
def test_the_lab_s_standard_neighbours_are_valid_jobs(name: str) -> None:
    assert parse_neighbour(STANDARD_NEIGHBOURS[name]).rw == "randread"


def test_a_campaign_without_a_plan_stores_the_standard_job_its_scenario_names(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    plan = {"scenarios": [NOISY]}

    campaign = campaign_start(
        bundle=bundle, pool=pool, repetitions=1, actor=labops, lab_plan=plan
    )

    assert campaign.neighbours == {"noisy-500": STANDARD_NEIGHBOURS["noisy-500"]}
    assert claimed_run(runs_of(campaign)[-1])["neighbours"] == campaign.neighbours


def test_a_plan_s_job_of_a_standard_name_replaces_the_standard_one(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    mine = {"noisy-500": {"rw": "randwrite", "bs": "8k", "rate_iops": 500}}

    campaign = campaign_start(
        bundle=bundle,
        pool=pool,
        repetitions=1,
        actor=labops,
        lab_plan={"scenarios": [NOISY], "neighbours": mine},
    )

    assert campaign.neighbours == mine


def test_the_api_takes_a_lab_plan_and_names_its_problems(
    bundle: Any, pool: LabPool, labops: Any
) -> None:
    client = APIClient()
    client.force_authenticate(labops)
    body = {"bundle": str(bundle.public_id), "pool": pool.name, "repetitions": 1}
    bad = {"scenarios": [{**FAILOVER, "kind": "chaos"}]}

    refused = client.post(
        reverse("campaign-list"), {**body, "lab_plan": bad}, format="json"
    )
    started = client.post(
        reverse("campaign-list"),
        {**body, "lab_plan": {"scenarios": [FAILOVER]}},
        format="json",
    )

    assert refused.status_code == 400
    assert {"code": "lab_plan", "path": "lab_plan.scenarios[0].kind"}.items() <= (
        refused.json()["problems"][0].items()
    )
    assert started.status_code == 201, started.json()
    assert len(started.json()["runs"]) == len(SCENARIOS) + 1


def test_the_form_takes_a_lab_plan_and_shows_its_problems(
    bundle: Any, pool: LabPool, client_for: Any, labops: Any
) -> None:
    data = {"bundle": bundle.pk, "pool": pool.pk, "repetitions": 1}
    client = client_for(labops)
    url = reverse("benchmarks:campaign_start")
    bad = {"scenarios": [{**FAILOVER, "actions": []}]}

    not_json = client.post(url, {**data, "lab_plan": "{scenarios"})
    refused = client.post(url, {**data, "lab_plan": json.dumps(bad)})
    started = client.post(
        url, {**data, "lab_plan": json.dumps({"scenarios": [FAILOVER]})}
    )

    assert not_json.status_code == 400
    assert "Not JSON" in not_json.content.decode()
    assert refused.status_code == 400
    assert "lab_plan.scenarios[0].actions: Must be a list of 1 to 20" in (
        refused.content.decode()
    )
    assert started.status_code == 302
    assert Campaign.objects.get().scenarios[-1]["added_by"] == "lab"
