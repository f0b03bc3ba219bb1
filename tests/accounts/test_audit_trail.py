"""The trail page and its exports: labels beside codes, runner noise grouped,
formula-safe CSV, JSON, and a query count that does not grow with the rows."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.lib.audit_labels import ACTION_LABELS, action_label
from accounts.models import AuditEvent, Organisation
from accounts.services.audit import audit_record

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "procurement", "artifacts", "benchmarks", "gates", "portal")


def _record(org: Organisation, action: str, **data: Any) -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=None, action=action, organisation=org, data=data)


def _runs(org: Organisation, campaign: str, n: int) -> None:
    for i in range(n):
        _record(org, "run.transitioned", campaign=campaign, rfp="RFP-X", to=str(i))


# --- labels ------------------------------------------------------------------------


def _literal_codes() -> set[str]:
    """Every action code written as a literal where an audit row is made:
    ``audit_record(…, action="x.y", …)`` and the runner's ``_audit(run, actor,
    "x.y", …)``."""
    call = re.compile(
        r"audit_record\((?:[^()]|\([^()]*\))*?\baction=\"([^\"]+)\"", re.S
    )
    runner = re.compile(r"_audit\(\s*\w+,\s*\w+,\s*\"([a-z_.]+)\"")
    # the verbs' actions given to their entity's ``*_transition``, and its default
    moved = re.compile(
        r"_transition\((?:[^()]|\([^()]*\))*?\baction=\"([^\"]+)\"", re.S
    )
    default = re.compile(r"\baction: str(?: \| None)? = \"([a-z_.]+)\"")
    codes: set[str] = set()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            text = path.read_text()
            for pattern in (call, runner, moved, default):
                codes |= set(pattern.findall(text))
    return codes


def _built_codes() -> set[str]:
    """The codes services build at run time from their own choices."""
    from artifacts.models import EscrowEvent, ReleaseStep
    from gates.models import Report
    from procurement.models import BidReceipt

    holds = {EscrowEvent.Action.LEGAL_HOLD_SET, EscrowEvent.Action.LEGAL_HOLD_RELEASED}
    return (
        {f"bid.{a}" for a in BidReceipt.Action.values}
        | {f"rfp.{k}_changed" for k in ("artifacts", "metrics", "criteria")}
        | {f"release.{a}" for a in ReleaseStep.Action.values}
        | {f"deposit.{a}" for a in holds}
        | {f"report.{s}" for s in Report.Status.values}  # report_transition's
    )


def test_every_action_code_in_the_code_base_has_a_label() -> None:
    codes = _literal_codes() | _built_codes()

    assert len(codes) > 40  # the grep found the call sites
    assert sorted(codes - set(ACTION_LABELS)) == []


def test_an_unknown_code_reads_as_itself() -> None:
    assert action_label("bid.submitted") == "Bid submitted"
    assert action_label("thing.was_poked") == "Thing was poked"


def test_trail_shows_the_label_beside_the_code(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    _record(buyer_org, "rfp.opening_confirmed", rfp="RFP-X")

    html = client_for(buyer).get("/accounts/audit/").content.decode()

    assert re.search(r"Bid opening confirmed\s*<code[^>]*>rfp.opening_confirmed<", html)


def test_trail_page_says_when_an_rfp_is_not_one_to_filter_by(
    client_for: Any, buyer: Any
) -> None:
    response = client_for(buyer).get("/accounts/audit/", {"rfp": "RFP-ELSEWHERE"})

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()


# --- grouping ----------------------------------------------------------------------


def test_consecutive_run_transitions_of_a_campaign_are_one_line(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    _record(buyer_org, "campaign.started", campaign="c-1")
    _runs(buyer_org, "c-1", 72)
    _record(buyer_org, "campaign.finished_here")

    html = client_for(buyer).get("/accounts/audit/").content.decode()

    assert html.count('data-testid="audit-group"') == 1
    assert "72 run transitions in campaign c-1" in html
    assert "Page 1 of" not in html  # 3 lines: one page
    assert html.count('<code class="muted small">run.transitioned<') == 73


def test_grouping_breaks_where_another_event_or_campaign_comes_between(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    _runs(buyer_org, "c-1", 3)
    _record(buyer_org, "run_output.downloaded")
    _runs(buyer_org, "c-1", 4)
    _runs(buyer_org, "c-2", 5)
    _runs(buyer_org, "c-1", 1)  # alone: a plain row

    html = client_for(buyer).get("/accounts/audit/").content.decode()

    summaries = re.findall(r"(\d+) run transitions in campaign (c-\d)", html)
    assert summaries == [("5", "c-2"), ("4", "c-1"), ("3", "c-1")]
    assert html.count('data-testid="audit-group"') == 3


def test_pages_count_lines_not_rows(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    for n in range(49):
        _record(buyer_org, f"thing.n{n}")
    _runs(buyer_org, "c-1", 72)  # the newest line
    _record(buyer_org, "thing.newest")

    client = client_for(buyer)
    first = client.get("/accounts/audit/").content.decode()
    second = client.get("/accounts/audit/", {"page": 2}).content.decode()

    assert "Page 1 of 2 · 51 in all" in first
    assert "72 run transitions in campaign c-1" in first
    assert "thing.n1<" in first
    assert "thing.n0<" not in first
    assert "thing.n0<" in second
    assert "run transitions" not in second


def test_export_keeps_every_grouped_row(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    _runs(buyer_org, "c-1", 72)

    response = client_for(buyer).get("/accounts/audit/export.csv")

    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    )
    assert len(rows) == 72
    assert {r["action"] for r in rows} == {"run.transitioned"}
    assert rows[0]["label"] == "Run state changed"


# --- exports -----------------------------------------------------------------------


def _csv(response: Any) -> list[dict[str, str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize(
    "value", ['=HYPERLINK("http://x")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx"]
)
def test_csv_export_defuses_spreadsheet_formulas(
    client_for: Any, buyer: Any, buyer_org: Organisation, value: str
) -> None:
    AuditEvent.objects.create(
        actor_repr=value, organisation=buyer_org, action="thing.named", data={}
    )

    rows = _csv(client_for(buyer).get("/accounts/audit/export.csv"))

    named = next(r for r in rows if r["action"] == "thing.named")
    assert named["actor"] == "'" + value


def test_csv_export_leaves_negative_numbers_alone(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    AuditEvent.objects.create(
        actor_repr="-12.5", organisation=buyer_org, action="thing.named", data={}
    )

    rows = _csv(client_for(buyer).get("/accounts/audit/export.csv"))

    assert rows[0]["actor"] == "-12.5"


def test_exports_follow_the_filters_and_the_trail_scope(
    client_for: Any, buyer: Any, buyer_org: Organisation, outsider: Any
) -> None:
    _record(buyer_org, "rfp.published", rfp="RFP-X")
    _record(buyer_org, "membership.granted")
    _record(outsider.memberships.get().organisation, "rfp.outsider_moved")
    client = client_for(buyer)

    rows = _csv(client.get("/accounts/audit/export.csv", {"action": "rfp"}))
    body = client.get("/accounts/audit/export.json", {"action": "rfp"})
    document = json.loads(b"".join(body.streaming_content))

    assert [r["action"] for r in rows] == ["rfp.published"]
    assert document["schema"] == "reprogate.audit-trail/v1"
    assert document["filters"] == {"action": "rfp"}
    assert [e["action"] for e in document["events"]] == ["rfp.published"]
    assert document["events"][0]["details"] == {"rfp": "RFP-X"}
    assert body["Content-Disposition"] == 'attachment; filename="audit-trail.json"'


def test_export_refuses_bad_filters_and_strangers(
    client_for: Any, buyer: Any, vendor_a: Any
) -> None:
    bad = client_for(buyer).get("/accounts/audit/export.csv", {"rfp": "RFP-NOPE"})
    dates = client_for(buyer).get(
        "/accounts/audit/export.json", {"since": "2026-02-01", "until": "2026-01-01"}
    )

    assert bad.status_code == 400
    assert bad.json()["problems"][0]["path"] == "rfp"
    assert dates.status_code == 400
    assert client_for(vendor_a).get("/accounts/audit/export.csv").status_code == 403


# --- queries -----------------------------------------------------------------------


def _page_queries(client: Any) -> int:
    from django.db import connection

    with CaptureQueriesContext(connection) as queries:
        assert client.get("/accounts/audit/").status_code == 200
    return len(queries)


def test_trail_page_query_count_does_not_grow_with_the_rows(
    client_for: Any,
    buyer: Any,
    buyer_org: Organisation,
    django_assert_num_queries: Any,
) -> None:
    client = client_for(buyer)
    _record(buyer_org, "thing.one", rfp="RFP-X")
    _runs(buyer_org, "c-1", 3)
    few = _page_queries(client)
    for n in range(40):
        _record(buyer_org, f"thing.n{n}", rfp="RFP-X")
        _runs(buyer_org, f"c-{n}", 2)

    with django_assert_num_queries(few):
        client.get("/accounts/audit/")


def test_trail_times_are_ordered_newest_first(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    old = _record(buyer_org, "thing.old")
    AuditEvent.objects.create(
        occurred_at=timezone.now() + timedelta(hours=1),
        actor_repr="system",
        organisation=buyer_org,
        action="thing.later",
    )

    html = client_for(buyer).get("/accounts/audit/").content.decode()

    assert html.index("thing.later") < html.index(old.action)
