"""``gate_board``: per vendor and gate the latest evaluation, the decision state,
the open re-test obligations by the clock (a read never writes), the lab
deviation flag, bidders without a plan; a constant number of queries for 2 and
20 vendors. And the dashboard's gate entries."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import Organisation
from gates.models import Decision, GatePlan, RetestObligation
from gates.selectors.attention import gate_attention_for
from gates.selectors.board import BoardRow, GateCell, gate_board
from procurement.models import Bid, Rfp
from tests.accounts.factories import OrganisationFactory
from tests.gates.read_support import (
    GATE,
    copy_evaluation,
    decide,
    evaluated_fixture,  # noqa: F401
    more_vendors,
    oblige,
)
from tests.procurement.factories import BidFactory

pytestmark = pytest.mark.django_db

# memberships, plans, bidders, latest evaluations, their hosts, decisions, live
# obligations, open disputes, and for the fidelity column: the bids, the RFP's
# metrics and artifacts
BOARD_QUERIES = 11


def _cell(rows: list[BoardRow], slug: str, gate: str = GATE) -> GateCell:
    row = next(r for r in rows if r.vendor.slug == slug)
    return next(c for c in row.cells if c.gate == gate)


def test_board_has_each_vendor_by_the_plans_gates(
    rfp: Rfp, buyer: Any, evaluated: Any
) -> None:
    rows = gate_board(rfp=rfp, user=buyer)

    assert [r.vendor.slug for r in rows] == ["acme-flash", "bolt-storage"]
    assert [c.gate for c in rows[0].cells] == ["lab-validation", "pilot", "rollout"]
    a, b = _cell(rows, "acme-flash"), _cell(rows, "bolt-storage")
    assert (a.verdict, a.evaluation.pk) == ("PASS", evaluated["a"].pk)
    assert a.evaluation.score_pct == 100
    assert (b.verdict, b.open_obligations) == ("FAIL", 1)
    assert _cell(rows, "acme-flash", "pilot").evaluation is None


def test_board_shows_the_newest_evaluation_of_a_gate(
    rfp: Rfp, buyer: Any, evaluated: Any, frozen_plan: GatePlan
) -> None:
    newer = copy_evaluation(evaluated["a"], frozen_plan, verdict="WARN", minutes=5)

    cell = _cell(gate_board(rfp=rfp, user=buyer), "acme-flash")

    assert (cell.evaluation.pk, cell.verdict) == (newer.pk, "WARN")


def test_board_decision_state_is_the_latest_recorded_and_any_pending(
    rfp: Rfp, buyer: Any, evaluator: Any, evaluated: Any
) -> None:
    a = evaluated["a"]
    decide(a, buyer, Decision.Kind.HOLD)
    withdrawn = decide(a, evaluator, Decision.Kind.ROLLBACK)
    Decision.objects.filter(pk=withdrawn.pk).update(status=Decision.Status.WITHDRAWN)
    pending = decide(a, buyer, Decision.Kind.PROMOTE, Decision.Status.PENDING)

    cell = _cell(gate_board(rfp=rfp, user=buyer), "acme-flash")

    assert cell.decision.kind == Decision.Kind.HOLD
    assert cell.pending == pending
    assert not cell.undecided
    assert _cell(gate_board(rfp=rfp, user=buyer), "bolt-storage").undecided


def test_board_counts_an_obligation_past_its_deadline_as_expired_without_writing(
    rfp: Rfp, buyer: Any, evaluated: Any, clock: Any
) -> None:
    obligation = RetestObligation.objects.get(evaluation=evaluated["b"])
    clock.advance(days=31)

    cell = _cell(gate_board(rfp=rfp, user=buyer), "bolt-storage")

    assert cell.open_obligations == 0
    obligation.refresh_from_db()
    assert obligation.status == RetestObligation.Status.OPEN  # reads never write


@pytest.mark.parametrize(
    ("verdict", "drift", "accepted", "deviation"),
    [
        ("FAIL", "major", False, True),
        ("HALTED", "major", False, True),
        ("FAIL", "major", True, False),  # the buyer accepts the lab's environment
        ("FAIL", "minor", False, False),  # the vendor's failure
        ("PASS", "major", False, False),
    ],
)
def test_board_flags_lab_deviations(
    rfp: Rfp,
    buyer: Any,
    evaluated: Any,
    verdict: str,
    drift: str,
    accepted: bool,
    deviation: bool,
) -> None:
    plan = evaluated["b"].plan
    GatePlan.objects.filter(pk=plan.pk).update(lab_environment_accepted=accepted)
    copy_evaluation(evaluated["b"], plan, verdict=verdict, max_drift=drift, minutes=9)

    cell = _cell(gate_board(rfp=rfp, user=buyer), "bolt-storage")

    assert cell.lab_deviation is deviation


def test_board_lists_bidders_without_a_plan_once_opened(
    rfp: Rfp, buyer: Any, evaluated: Any
) -> None:
    late = OrganisationFactory.create(slug="cobalt-io", kind=Organisation.Kind.VENDOR)
    BidFactory.create(rfp=rfp, vendor_organisation=late, status=Bid.Status.SUBMITTED)
    rfp.refresh_from_db()  # opened by the bundle's fixture

    opened = gate_board(rfp=rfp, user=buyer)
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)
    rfp.refresh_from_db()
    sealed = gate_board(rfp=rfp, user=buyer)

    row = next(r for r in opened if r.vendor.slug == "cobalt-io")
    assert (row.plan, row.draft, row.cells) == (None, None, ())
    assert "cobalt-io" not in [r.vendor.slug for r in sealed]


def test_board_for_a_vendor_holds_only_its_own_row(
    rfp: Rfp, vendor_a: Any, vendor_b: Any, evaluated: Any
) -> None:
    mine = gate_board(rfp=rfp, user=vendor_a)
    theirs = gate_board(rfp=rfp, user=vendor_b)

    assert [r.vendor.slug for r in mine] == ["acme-flash"]
    assert [r.vendor.slug for r in theirs] == ["bolt-storage"]
    assert _cell(theirs, "bolt-storage").open_obligations == 1


def test_board_is_empty_for_an_outsider(
    rfp: Rfp, outsider: Any, evaluated: Any
) -> None:
    assert gate_board(rfp=rfp, user=outsider) == []


def test_board_queries_are_constant_for_2_and_20_vendors(
    rfp: Rfp, buyer: Any, evaluated: Any, django_assert_num_queries: Any
) -> None:
    rfp.refresh_from_db()  # opened: the bidders are read too
    users = type(buyer).objects
    first, second = users.get(pk=buyer.pk), users.get(pk=buyer.pk)  # no cached scope
    with django_assert_num_queries(BOARD_QUERIES):
        two = gate_board(rfp=rfp, user=first)
    more_vendors(rfp, evaluated["a"], buyer, 18)

    with django_assert_num_queries(BOARD_QUERIES):
        twenty = gate_board(rfp=rfp, user=second)

    assert (len(two), len(twenty)) == (2, 20)
    assert all(_cell(twenty, f"vendor-{i:02d}").open_obligations for i in range(18))


def test_board_page_queries_are_constant_for_2_and_20_vendors(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    client = client_for(buyer)
    url = reverse("gates:board", args=[rfp.public_id])
    client.get(url)  # sessions, content types: warm

    with CaptureQueriesContext(connection) as two:
        first = client.get(url)
    more_vendors(rfp, evaluated["a"], buyer, 18)
    with CaptureQueriesContext(connection) as twenty:
        second = client.get(url)

    assert (first.status_code, second.status_code) == (200, 200)
    assert second.content.count(b'data-testid="board-row-') == 20
    assert len(twenty.captured_queries) == len(two.captured_queries)


def test_board_page_renders_verdicts_decisions_and_obligations(
    rfp: Rfp, buyer: Any, evaluated: Any, client_for: Any
) -> None:
    decide(evaluated["a"], buyer, Decision.Kind.PROMOTE, Decision.Status.PENDING)

    page = client_for(buyer).get(reverse("gates:board", args=[rfp.public_id]))

    html = page.content.decode()
    assert 'data-testid="tab-gates"' in html or "Gate board" in html
    assert 'data-verdict="PASS"' in html
    assert 'data-verdict="FAIL"' in html
    assert "promotion waits for a second sign-off" in html
    assert "1 open re-test" in html


def test_board_page_empty_state_without_plans(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    page = client_for(buyer).get(reverse("gates:board", args=[rfp.public_id]))

    assert page.status_code == 200
    assert b'data-testid="board-empty"' in page.content


def test_board_page_row_without_a_plan_says_so(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    BidFactory.create(
        rfp=rfp, vendor_organisation=rfp.invited_vendors.get(slug="acme-flash")
    )
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)

    page = client_for(buyer).get(reverse("gates:board", args=[rfp.public_id]))

    assert b'data-testid="no-plan"' in page.content


# --- the dashboard's gate entries -----------------------------------------------------


def test_buyer_sees_decisions_due_and_seconds_asked_by_someone_else(
    buyer: Any, evaluator: Any, evaluated: Any
) -> None:
    decide(evaluated["a"], evaluator, Decision.Kind.PROMOTE, Decision.Status.PENDING)

    kinds = [(i.kind, i.text) for i in gate_attention_for(buyer)]
    own = [i.kind for i in gate_attention_for(evaluator)]

    assert ("gate_decision", "Decide on Bolt Storage's lab-validation gate (fail)") in (
        kinds
    )
    assert any(k == "gate_second" and "evaluator asks you" in t for k, t in kinds)
    assert "gate_second" not in own  # not one's own promotion
    assert all("Acme" not in t for k, t in kinds if k == "gate_decision")


def test_vendor_sees_its_re_tests_due_and_nothing_of_the_other(
    vendor_a: Any, vendor_b: Any, evaluated: Any
) -> None:
    theirs = gate_attention_for(vendor_b)
    mine = gate_attention_for(vendor_a)

    assert [i.kind for i in theirs] == ["retest"]
    obligation = RetestObligation.objects.get(vendor_organisation__slug="bolt-storage")
    assert theirs[0].due_at == obligation.deadline  # its own, not the RFP's
    assert "2 attempts left" in theirs[0].text
    assert mine == []


def test_lab_operator_sees_lab_deviations(
    labops: Any, buyer: Any, auditor: Any, evaluated: Any
) -> None:
    copy_evaluation(evaluated["b"], evaluated["b"].plan, max_drift="major", minutes=3)

    items = gate_attention_for(labops)

    assert [i.kind for i in items] == ["lab_deviation"]
    assert "Bolt Storage" in items[0].text
    assert "lab_deviation" not in [i.kind for i in gate_attention_for(auditor)]


def test_new_obligation_for_a_vendor_is_listed_soonest_first(
    vendor_b: Any, evaluated: Any, clock: Any
) -> None:
    b = evaluated["b"]
    pilot = copy_evaluation(b, b.plan, gate="pilot", minutes=2)
    oblige(pilot, days=3)

    items = gate_attention_for(vendor_b)

    assert items[0].url.rstrip("/").rsplit("/", 1)[-1] == str(
        RetestObligation.objects.get(gate="pilot").public_id
    )


def test_dashboard_lists_the_gate_entries_of_the_user(
    buyer: Any, vendor_b: Any, evaluated: Any, client_for: Any
) -> None:
    buyer_page = client_for(buyer).get(reverse("portal:dashboard")).content.decode()
    vendor_page = client_for(vendor_b).get(reverse("portal:dashboard")).content.decode()

    assert 'data-kind="gate_decision"' in buyer_page
    assert "Decide on Bolt Storage&#x27;s lab-validation gate" in buyer_page
    assert 'data-kind="retest"' in vendor_page
    assert "Acme" not in vendor_page


def test_rfp_pages_have_a_gates_tab_once_the_bids_are_opened(
    rfp: Rfp, buyer: Any, vendor_a: Any, evaluated: Any, client_for: Any
) -> None:
    overview = reverse("procurement:rfp_detail", args=[rfp.public_id])

    pages = [client_for(u).get(overview).content for u in (buyer, vendor_a)]
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)
    sealed = client_for(buyer).get(overview).content

    assert all(b'data-testid="tab-gates"' in p for p in pages)
    assert b'data-testid="tab-gates"' not in sealed


def test_the_dashboard_shows_a_re_test_with_its_own_deadline(
    vendor_b: Any, evaluated: Any, client_for: Any
) -> None:
    obligation = RetestObligation.objects.get(vendor_organisation__slug="bolt-storage")

    page = client_for(vendor_b).get("/dashboard/").content.decode()

    item = page.split('data-kind="retest"', 1)[1].split("</li>", 1)[0]
    assert f"due {obligation.deadline:%Y-%m-%d %H:%M} UTC" in item
    rfp_deadline = f"{obligation.rfp.submission_deadline:%Y-%m-%d %H:%M}"
    assert rfp_deadline not in item
