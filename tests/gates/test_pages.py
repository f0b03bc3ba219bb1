"""The gate page (criteria of the latest evaluation with units, stop-loss,
history, decision panel, more runs, links to plan, campaign, evidence and the
documents), the criterion page over re-tests with its chart, the evaluation's
documents byte-exact, the lab deviations list; empty states; constant queries."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from gates.lib.charts import criterion_repetitions
from gates.models import Evaluation, GatePlan
from gates.selectors.evaluations import Repetition
from procurement.models import Rfp
from tests.gates.read_support import (
    GATE,
    copy_evaluation,
    decide,
    evaluate,
    evaluated_fixture,  # noqa: F401
    more_vendors,
)
from tests.gates.support import plan_document

pytestmark = pytest.mark.django_db
CRITERION = "ttft-p99-cold-c1"


def _gate_url(rfp: Rfp, vendor: str = "acme-flash", gate: str = GATE) -> str:
    return reverse("gates:gate", args=[rfp.public_id, vendor, gate])


def _criterion_url(rfp: Rfp) -> str:
    args = [rfp.public_id, "acme-flash", GATE, CRITERION]
    return reverse("gates:criterion", args=args)


def test_gate_page_shows_the_criteria_with_units_and_the_stop_loss(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    evaluation: Evaluation = evaluated["a"]

    html = client_for(buyer).get(_gate_url(rfp)).content.decode()

    assert 'data-testid="criterion-ttft-p99-cold-c1"' in html
    assert 'data-verdict="PASS"' in html
    assert "176.2 ms" in html  # the median, with its unit
    assert "171\N{EN DASH}178.9 ms" in html  # the interval
    assert 'title="[171.0, 178.9] ms"' in html  # its exact ends on hover
    assert "198 ms" in html  # the limit
    assert 'data-testid="stop-loss-env-drift"' in html
    assert "halts on environment drift at least major" in html
    assert 'data-testid="stop-loss-failed-run"' in html
    assert str(evaluation.campaign.public_id) in html
    assert str(evaluation.deposit.public_id) in html
    assert reverse("gates:evaluation", args=[evaluation.public_id]) in html


def test_gate_page_history_is_newest_first_and_paginated(
    rfp: Rfp,
    buyer: Any,
    evaluated: Any,
    frozen_plan: GatePlan,
    client_for: Any,
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr("gates.selectors.evaluations.HISTORY_PAGE_SIZE", 20)
    for minutes in range(1, 22):  # 22 evaluations in all
        copy_evaluation(evaluated["a"], frozen_plan, verdict="WARN", minutes=minutes)
    client = client_for(buyer)

    first = client.get(_gate_url(rfp)).content.decode()
    second = client.get(_gate_url(rfp) + "?page=2").content.decode()

    assert first.count('data-testid="history-row"') == 20
    assert second.count('data-testid="history-row"') == 2
    assert "Page 1 of 2 · 22 in all" in first
    assert 'data-verdict="PASS"' in second  # the oldest, the real one


def test_gate_page_with_a_plan_but_no_evaluation_says_so(
    rfp: Rfp, buyer: Any, frozen_plan: GatePlan, client_for: Any
) -> None:
    response = client_for(buyer).get(_gate_url(rfp, gate="pilot"))

    assert response.status_code == 200
    assert b'data-testid="gate-not-evaluated"' in response.content
    assert b"No evaluations of this gate yet." in response.content


def test_gate_page_without_any_plan_is_404(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    response = client_for(buyer).get(_gate_url(rfp))

    assert response.status_code == 404


def test_inconclusive_gate_offers_the_runs_it_needs(
    rfp: Rfp,
    labops: Any,
    buyer: Any,
    vendor_a: Any,
    frozen_plan: GatePlan,
    gate_campaign: Any,
    client_for: Any,
) -> None:
    evaluate(frozen_plan, gate_campaign(3), buyer, [176.2])  # 2 more runs needed

    lab = client_for(labops).get(_gate_url(rfp)).content.decode()
    vendor = client_for(vendor_a).get(_gate_url(rfp)).content.decode()

    assert 'data-verdict="INCONCLUSIVE"' in lab
    assert "(+2 needed)" in lab
    assert 'data-testid="schedule-more-runs"' in lab
    assert "Schedule 2 more runs" in lab
    assert 'data-testid="more-runs"' in vendor  # what would decide it
    assert 'data-testid="schedule-more-runs"' not in vendor  # not the vendor's


def test_buyer_gets_the_decision_panel_and_the_vendor_no_forms(
    rfp: Rfp, buyer: Any, vendor_a: Any, evaluated: Any, client_for: Any
) -> None:
    buyer_html = client_for(buyer).get(_gate_url(rfp)).content.decode()
    vendor_html = client_for(vendor_a).get(_gate_url(rfp)).content.decode()

    assert 'data-testid="decision-panel"' in buyer_html
    assert 'data-testid="decision-form"' in buyer_html
    assert f'name="next" value="{_gate_url(rfp)}"' in buyer_html  # back here
    assert 'data-testid="decision-form"' not in vendor_html


def test_gate_page_queries_do_not_grow_with_the_vendors(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    client = client_for(buyer)
    client.get(_gate_url(rfp))

    with CaptureQueriesContext(connection) as two:
        client.get(_gate_url(rfp))
    more_vendors(rfp, evaluated["a"], buyer, 18)
    with CaptureQueriesContext(connection) as twenty:
        response = client.get(_gate_url(rfp))

    assert response.status_code == 200
    assert len(twenty.captured_queries) == len(two.captured_queries)


# --- the criterion page ------------------------------------------------------------


@pytest.fixture
def retested(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> tuple[Evaluation, Evaluation]:
    """A PASS, then a re-test that FAILs (well over the 198 ms limit)."""
    first = evaluate(frozen_plan, gate_campaign(3), buyer, [176.2, 171.0, 178.9])
    second = evaluate(frozen_plan, gate_campaign(3), buyer, [250.0, 251.0, 252.5])
    return first, second


def test_criterion_page_shows_every_evaluation_and_the_regression(
    rfp: Rfp, buyer: Any, retested: Any, client_for: Any
) -> None:
    first, _ = retested

    html = client_for(buyer).get(_criterion_url(rfp)).content.decode()

    assert html.count('data-testid="criterion-row"') == 2
    assert html.index("251 ms") < html.index("176.2 ms")  # newest first
    assert html.count('data-regressed="true"') == 1
    assert 'data-trend="worse"' in html
    assert first.campaign.bundle.sha256[:10] in html


def test_criterion_page_lists_each_repetition_with_its_run_and_source(
    rfp: Rfp, buyer: Any, retested: Any, client_for: Any
) -> None:
    _, second = retested
    runs = json.loads(second.results_document)["runs"]
    cold = [r for r in runs if r["scenario"] == "cold-c1"]

    html = client_for(buyer).get(_criterion_url(rfp)).content.decode()

    assert html.count('data-testid="repetition"') == len(cold) == 3
    for run in cold:
        assert reverse("benchmarks:run_detail", args=[run["id"]]) in html
    assert "<code>metrics.json</code> · <code>metrics[0]</code>" in html
    assert "252.5 ms" in html


def test_criterion_page_embeds_its_chart(
    rfp: Rfp, buyer: Any, retested: Any, client_for: Any
) -> None:
    response = client_for(buyer).get(_criterion_url(rfp))

    figure = json.loads(
        response.content.decode()
        .split('id="chart-data-criterion" type="application/json">')[1]
        .split("</script>")[0]
    )
    points = figure["data"][0]
    assert points["y"] == [250.0, 251.0, 252.5]
    names = [t["name"] for t in figure["data"][1:]]
    assert names == ["claim 180.0 ms", "limit 198.0 ms"]
    assert b"vendor/plotly/plotly.min.js" in response.content


def test_criterion_page_unknown_criterion_is_404(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    url = reverse("gates:criterion", args=[rfp.public_id, "acme-flash", GATE, "nope"])

    assert client_for(buyer).get(url).status_code == 404


def _rep(run: str, n: int, value: float | None, counted: bool = True) -> Repetition:
    return Repetition(run, "cold-c1", n, value, "ms", {}, counted)


def test_chart_draws_repetitions_against_claim_limit_and_band() -> None:
    reps = [_rep("r-1", 1, 176.2), _rep("r-2", 2, 171.0), _rep("r-3", 3, None)]

    figure = criterion_repetitions(
        repetitions=reps, claim=180.0, limit=198.0, unit="ms",
        verdict="PASS", ci=(171.0, 176.2),
    )  # fmt: skip

    assert figure is not None
    points, claim, limit = figure["data"]
    assert (points["x"], points["customdata"]) == ([1, 2], ["r-1", "r-2"])
    assert claim["y"] == [180.0, 180.0]
    assert limit["y"] == [198.0, 198.0]
    band, ci = figure["layout"]["shapes"]
    assert (band["y0"], band["y1"]) == (180.0, 198.0)
    assert (ci["y0"], ci["y1"]) == (171.0, 176.2)
    json.dumps(figure, allow_nan=False)  # plain JSON


def test_chart_is_none_without_values_and_greys_uncounted_runs() -> None:
    assert (
        criterion_repetitions(
            repetitions=[_rep("r-1", 1, None)], claim=1.0, limit=2.0, unit=""
        )
        is None
    )
    figure = criterion_repetitions(
        repetitions=[_rep("r-1", 1, 5.0, counted=False)],
        claim=None, limit=6.0, unit="",
    )  # fmt: skip
    assert figure is not None
    assert figure["data"][0]["marker"]["color"] == ["#98a2b3"]
    assert "not counted" in figure["data"][0]["text"][0]
    assert figure["layout"]["shapes"] == []  # a threshold: no band around a claim


# --- the evaluation's documents ------------------------------------------------------


def test_evaluation_page_offers_the_documents_with_their_digests_and_the_command(
    buyer: Any, evaluated: Any, client_for: Any
) -> None:
    evaluation = evaluated["a"]

    html = (
        client_for(buyer)
        .get(reverse("gates:evaluation", args=[evaluation.public_id]))
        .content.decode()
    )

    for sha in (
        evaluation.plan_sha256,
        evaluation.results_sha256,
        evaluation.evaluation_sha256,
    ):
        assert sha in html
    assert (
        "reprogate gate evaluate --plan plan.json --results results.json "
        "--gate lab-validation"
    ) in html
    assert f"/api/v1/evaluations/{evaluation.public_id}/" in html


@pytest.mark.parametrize("name", ["plan", "results", "evaluation"])
def test_document_download_is_byte_exact(
    name: str, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    evaluation = evaluated["a"]
    url = reverse("gates:evaluation_document", args=[evaluation.public_id, name])

    response = client_for(buyer).get(url)

    assert response["Content-Disposition"] == f'attachment; filename="{name}.json"'
    assert response.content == getattr(evaluation, f"{name}_document").encode()
    assert hashlib.sha256(response.content).hexdigest() == getattr(
        evaluation, f"{name}_sha256"
    )


# --- lab deviations ------------------------------------------------------------------


def test_lab_deviations_page_lists_failures_on_a_drifting_host(
    labops: Any, evaluated: Any, client_for: Any
) -> None:
    copy_evaluation(evaluated["b"], evaluated["b"].plan, max_drift="major", minutes=4)

    html = client_for(labops).get(reverse("gates:lab_deviations")).content.decode()

    assert 'data-testid="deviation-bolt-storage-lab-validation"' in html
    assert "acme-flash" not in html


def test_lab_deviations_page_is_empty_when_the_plan_accepts_the_lab(
    labops: Any, vendor_b: Any, evaluated: Any, client_for: Any
) -> None:
    plan = evaluated["b"].plan
    copy_evaluation(evaluated["b"], plan, max_drift="major", minutes=4)
    GatePlan.objects.filter(pk=plan.pk).update(lab_environment_accepted=True)

    lab = client_for(labops).get(reverse("gates:lab_deviations"))
    vendor = client_for(vendor_b).get(reverse("gates:lab_deviations"))

    assert b'data-testid="lab-deviations-empty"' in lab.content
    assert b'data-testid="lab-deviations-empty"' in vendor.content


def test_reading_the_gate_pages_writes_nothing(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any, clock: Any
) -> None:
    clock.advance(days=40)  # the open obligation is past its deadline
    client = client_for(buyer)
    urls = [reverse("gates:board", args=[rfp.public_id]), _gate_url(rfp)]
    urls += [_criterion_url(rfp), _gate_url(rfp, "bolt-storage")]
    client.get(urls[0])  # the session is saved once, at login

    with CaptureQueriesContext(connection) as queries:
        statuses = [client.get(url).status_code for url in urls]

    assert statuses == [200, 200, 200, 200]
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []


def test_draft_only_vendor_has_no_gate_links_on_the_board(
    rfp: Rfp, buyer: Any, vendor_a_org: Any, client_for: Any
) -> None:
    GatePlan.objects.create(
        rfp=rfp, vendor_organisation=vendor_a_org, version=1,
        document=json.dumps(plan_document(rfp.reference, vendor_a_org.slug)),
        sha256="0" * 64, created_by=buyer,
    )  # fmt: skip

    html = client_for(buyer).get(reverse("gates:board", args=[rfp.public_id]))

    assert b"draft v1" in html.content
    assert _gate_url(rfp).encode() not in html.content


def test_escrow_link_only_for_those_who_see_the_buyers_deposit(
    rfp: Rfp, auditor: Any, vendor_a: Any, evaluated: Any, client_for: Any
) -> None:
    public_id = evaluated["a"].deposit.public_id
    deposit = reverse("artifacts:escrow_deposit", args=[public_id])
    auditor_client, vendor_client = client_for(auditor), client_for(vendor_a)

    auditor_page = auditor_client.get(_gate_url(rfp)).content.decode()
    vendor_page = vendor_client.get(_gate_url(rfp)).content.decode()

    assert deposit in auditor_page
    assert auditor_client.get(deposit).status_code == 200
    assert deposit not in vendor_page
    assert vendor_client.get(deposit).status_code == 404  # so no dead link


@pytest.mark.parametrize(("persona", "linked"), [("buyer", True), ("labops", False)])
def test_criterion_page_links_the_bundle_only_for_who_may_open_it(
    persona: str, linked: bool, request: Any, rfp: Rfp, evaluated: Any, client_for: Any
) -> None:
    bundle = evaluated["a"].campaign.bundle
    url = reverse("artifacts:bundle_detail", args=[bundle.public_id])
    client = client_for(request.getfixturevalue(persona))

    html = client.get(_criterion_url(rfp)).content.decode()

    assert (url in html) is linked
    assert bundle.sha256[:10] in html
    assert client.get(url).status_code == (200 if linked else 404)


def test_gate_page_rounds_figures_for_people_and_keeps_the_exact_ones_on_hover(
    rfp: Rfp, buyer: Any, frozen_plan: GatePlan, gate_campaign: Any, client_for: Any
) -> None:
    evaluate(frozen_plan, gate_campaign(3), buyer, [4625.4172, 4625.4099, 4625.5253])

    html = client_for(buyer).get(_gate_url(rfp)).content.decode()

    assert '<span class="fig" title="4625.4172 ms">4,625 ms</span>' in html
    assert "4625.4172 ms</span>" not in html  # never the raw value as the text
    interval = re.search(r'title="\[(4625\.\d+), (4625\.\d+)\] ms">([^<]+)<', html)
    assert interval is not None  # the bootstrap interval's exact ends on hover
    end = r"4,62\d(\.\d{1,3})?"  # at most seven figures, enough to tell them apart
    assert re.fullmatch(f"{end}\N{EN DASH}{end} ms", interval.group(3))


def test_failing_gate_page_leads_with_the_failing_criteria(
    rfp: Rfp, buyer: Any, frozen_plan: GatePlan, gate_campaign: Any, client_for: Any
) -> None:
    evaluate(frozen_plan, gate_campaign(3), buyer, [4625.4172, 4625.4099, 4625.5253])

    html = client_for(buyer).get(_gate_url(rfp)).content.decode()

    failing = html.index('data-testid="criteria-table"')
    assert html.index('data-verdict="FAIL"') < failing  # the verdict in the head
    assert 'data-testid="criterion-ttft-p99-cold-c1"' in html[failing:]
    assert "did not pass</h2>" in html
    assert failing < html.index('data-testid="decision-panel"')


def test_gate_page_links_a_recorded_promotion_to_its_certificate(
    rfp: Rfp, buyer: Any, auditor: Any, evaluated: Any, client_for: Any
) -> None:
    promotion = decide(evaluated["a"], buyer, kind="promote", second=auditor)
    certificate = reverse("gates:decision_certificate", args=[promotion.public_id])

    html = client_for(auditor).get(_gate_url(rfp)).content.decode()

    assert f'href="{certificate}" data-testid="certificate-link"' in html
    assert f'href="{certificate}" data-testid="decision-certificate"' in html
    assert client_for(auditor).get(certificate).status_code == 200


def test_gate_page_without_a_recorded_promotion_has_no_certificate_link(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    decide(evaluated["a"], buyer, kind="promote", status="pending")

    html = client_for(buyer).get(_gate_url(rfp)).content.decode()

    assert 'data-testid="certificate-link"' not in html
    assert 'data-testid="decision-certificate"' not in html
