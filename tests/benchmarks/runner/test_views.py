"""The lab pages: who sees what (404 for campaigns one may not know of), the
start form, live polling, cancellation, exports and audited downloads."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, Organisation, Role
from benchmarks.models import Campaign, LabPool, Run, RunSeries
from benchmarks.selectors.campaigns import campaign_hit_rate_series
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory
from tests.benchmarks.runner.support import finish, runs_of, start

pytestmark = pytest.mark.django_db
READERS = ["labops", "buyer", "evaluator", "auditor", "vendor_a"]
STRANGERS = ["vendor_b", "outsider", "other_labops"]


@pytest.fixture
def other_labops(db: None) -> Any:
    lab = OrganisationFactory.create(slug="elsewhere-lab", kind=Organisation.Kind.LAB)
    user = UserFactory.create(username="other-labops")
    MembershipFactory.create(user=user, organisation=lab, role=Role.LABOPS)
    return user


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:
    campaign = start(bundle, pool, labops)
    first = runs_of(campaign)[0]
    finish(
        first,
        metrics=[{"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "=1+1"}],
        outputs={"metrics.json": b'{"metrics": []}\n'},
    )
    return campaign


def _pages(campaign: Campaign) -> list[str]:
    run = runs_of(campaign)[0]
    output = run.outputs.get()
    cid, rid = campaign.public_id, run.public_id
    return [
        reverse("benchmarks:campaign_detail", args=[cid]),
        reverse("benchmarks:campaign_runs", args=[cid]),
        reverse("benchmarks:campaign_metrics_csv", args=[cid]),
        reverse("benchmarks:campaign_metrics_json", args=[cid]),
        reverse("benchmarks:run_detail", args=[rid]),
        reverse("benchmarks:run_live", args=[rid]),
        reverse("benchmarks:run_output_download", args=[rid, output.pk]),
    ]


@pytest.mark.parametrize("persona", READERS)
def test_campaign_pages_open_for_those_who_may_see_them(
    campaign: Campaign, client_for: Any, persona: str, request: pytest.FixtureRequest
) -> None:
    client = client_for(request.getfixturevalue(persona))

    statuses = {url: client.get(url).status_code for url in _pages(campaign)}

    assert set(statuses.values()) == {200}, statuses


@pytest.mark.parametrize("persona", STRANGERS)
def test_campaign_pages_are_404_for_everyone_else(
    campaign: Campaign, client_for: Any, persona: str, request: pytest.FixtureRequest
) -> None:
    client = client_for(request.getfixturevalue(persona))

    statuses = {url: client.get(url).status_code for url in _pages(campaign)}

    assert set(statuses.values()) == {404}, statuses
    listing = client.get(reverse("benchmarks:campaign_list"))
    assert str(campaign.public_id) not in listing.content.decode()


def test_anonymous_visitors_are_sent_to_log_in(campaign: Campaign, client: Any) -> None:
    response = client.get(
        reverse("benchmarks:campaign_detail", args=[campaign.public_id])
    )

    assert response.status_code == 302
    assert "login" in response["Location"]


@pytest.mark.parametrize("persona", ["buyer", "vendor_a", "auditor"])
def test_only_lab_operators_cancel(
    campaign: Campaign, client_for: Any, persona: str, request: pytest.FixtureRequest
) -> None:
    client = client_for(request.getfixturevalue(persona))
    run = runs_of(campaign)[1]

    response = client.post(reverse("benchmarks:run_cancel", args=[run.public_id]))
    campaign_response = client.post(
        reverse("benchmarks:campaign_cancel", args=[campaign.public_id])
    )

    assert (response.status_code, campaign_response.status_code) == (403, 403)
    assert Run.objects.get(pk=run.pk).state == Run.State.QUEUED


def test_lab_operator_cancels_a_queued_run(
    campaign: Campaign, client_for: Any, labops: Any
) -> None:
    run = runs_of(campaign)[1]

    response = client_for(labops).post(
        reverse("benchmarks:run_cancel", args=[run.public_id])
    )

    assert response.status_code == 302
    assert Run.objects.get(pk=run.pk).state == Run.State.CANCELLED


def test_campaign_page_polls_while_runs_are_pending(
    campaign: Campaign, client_for: Any, labops: Any
) -> None:
    client = client_for(labops)
    url = reverse("benchmarks:campaign_runs", args=[campaign.public_id])

    pending = client.get(url).content.decode()
    Run.objects.filter(campaign=campaign).update(state=Run.State.SUCCEEDED, progress=1)
    done = client.get(url).content.decode()

    assert 'hx-trigger="every 2s"' in pending
    assert 'data-testid="run-progress"' in pending
    assert "hx-trigger" not in done
    assert 'data-status="succeeded"' in done


def test_run_page_shows_metrics_drift_and_outputs(
    campaign: Campaign, client_for: Any, buyer: Any
) -> None:
    run = runs_of(campaign)[0]
    drift = [
        {
            "field": "kernel",
            "declared": "5.15",
            "captured": "6.1",
            "severity": "major",
            "message": "kernel differs",
        }
    ]
    Run.objects.filter(pk=run.pk).update(drift=drift, environment={"kernel": "6.1"})

    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    html = page.content.decode()
    assert 'data-testid="metric-row"' in html
    assert 'data-severity="major"' in html
    assert "metrics.json" in html
    assert "hx-trigger" not in html  # a finished run does not poll


def test_csv_export_defuses_formulas(
    campaign: Campaign, client_for: Any, labops: Any
) -> None:
    url = reverse("benchmarks:campaign_metrics_csv", args=[campaign.public_id])

    response = client_for(labops).get(url)

    body = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert response["Content-Type"].startswith("text/csv")
    assert [(r["name"], r["stat"], r["value"], r["unit"]) for r in rows] == [
        ("ttft_ms", "p99", "41.5", "'=1+1")
    ]


def test_json_export_carries_the_same_rows(
    campaign: Campaign, client_for: Any, labops: Any
) -> None:
    url = reverse("benchmarks:campaign_metrics_json", args=[campaign.public_id])

    response = client_for(labops).get(url)
    document = json.loads(b"".join(response.streaming_content))

    assert document["vendor"] == "acme-flash"
    assert [(m["name"], m["value"], m["unit"]) for m in document["metrics"]] == [
        ("ttft_ms", 41.5, "=1+1")
    ]


def test_output_download_is_audited(
    campaign: Campaign, client_for: Any, auditor: Any
) -> None:
    run = runs_of(campaign)[0]
    output = run.outputs.get()
    url = reverse("benchmarks:run_output_download", args=[run.public_id, output.pk])

    response = client_for(auditor).get(url)

    assert b"".join(response.streaming_content) == b'{"metrics": []}\n'
    assert 'filename="metrics.json"' in response["Content-Disposition"]
    event = AuditEvent.objects.get(action="run_output.downloaded")
    assert (event.actor, event.data["path"]) == (auditor, "metrics.json")


def test_output_of_another_run_is_404(
    campaign: Campaign, client_for: Any, labops: Any
) -> None:
    first, second = runs_of(campaign)
    output = first.outputs.get()
    url = reverse("benchmarks:run_output_download", args=[second.public_id, output.pk])

    assert client_for(labops).get(url).status_code == 404


@pytest.mark.parametrize(
    ("persona", "status"), [("labops", 200), ("buyer", 403), ("vendor_a", 403)]
)
def test_pool_page_and_start_form_are_for_lab_operators(
    pool: LabPool,
    client_for: Any,
    persona: str,
    status: int,
    request: pytest.FixtureRequest,
) -> None:
    client = client_for(request.getfixturevalue(persona))

    assert client.get(reverse("benchmarks:pool_list")).status_code == status
    assert client.get(reverse("benchmarks:campaign_start")).status_code == status


def test_start_form_starts_a_campaign(
    bundle: Any, pool: LabPool, client_for: Any, labops: Any
) -> None:
    data = {
        "bundle": bundle.pk,
        "pool": pool.pk,
        "repetitions": 2,
        "note": "first pass",
    }

    response = client_for(labops).post(reverse("benchmarks:campaign_start"), data)

    campaign = Campaign.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "benchmarks:campaign_detail", args=[campaign.public_id]
    )
    assert campaign.runs.count() == 4


def test_start_form_offers_no_bundle_of_a_sealed_rfp(
    bundle: Any, pool: LabPool, client_for: Any, labops: Any
) -> None:
    from procurement.models import Rfp

    Rfp.objects.filter(pk=bundle.rfp_id).update(status=Rfp.Status.CLOSED)
    data = {"bundle": bundle.pk, "pool": pool.pk, "repetitions": 1}

    response = client_for(labops).post(reverse("benchmarks:campaign_start"), data)

    assert response.status_code == 400
    assert not Campaign.objects.exists()


def test_pool_page_adds_a_pool_and_lists_hosts(
    pool: LabPool, client_for: Any, labops: Any, lab_org: Organisation
) -> None:
    from benchmarks.services.pools import host_register
    from tests.benchmarks.runner.support import worker

    host_register(pool=pool, worker=worker())
    client = client_for(labops)

    created = client.post(
        reverse("benchmarks:pool_list"),
        {"lab_organisation": lab_org.pk, "name": "cpu-b"},
    )
    page = client.get(reverse("benchmarks:pool_list")).content.decode()

    assert created.status_code == 302
    assert LabPool.objects.filter(name="cpu-b").exists()
    assert "w1@lab-host" in page
    assert 'data-testid="host-status">online' in page


def test_campaign_page_draws_each_runs_cache_hit_rate_of_its_current_attempt(
    campaign: Campaign, client_for: Any, labops: Any
) -> None:
    run = runs_of(campaign)[0]
    points = [[0, 0.25], [1, 0.5]]
    for attempt, scope in ((run.attempt, ""), (run.attempt, "tier1"), (99, "")):
        RunSeries.objects.create(
            run=run, attempt=attempt, name="cache_hit_rate", unit="ratio",
            points=points, source_path="x.json", source_key="k", scope=scope,
        )  # fmt: skip

    series = campaign_hit_rate_series(campaign)
    page = client_for(labops).get(
        reverse("benchmarks:campaign_detail", args=[campaign.public_id])
    )

    assert series == [  # the run's own attempt, unscoped, once
        {"unit": "ratio", "points": points, "scenario_name": run.scenario_name,
         "repetition": run.repetition}
    ]  # fmt: skip
    body = page.content.decode()
    assert 'data-testid="chart-hit-rate"' in body
    assert 'id="chart-data-hit-rate"' in body
