"""Fixity and log pages show each organisation only what concerns it: two buyer
organisations (``buyer_org`` with its ``buyer`` and ``auditor``, and the
``outsider``'s), one fixity run with findings about each buyer's escrow, about
the log and about a stored object no deposit names. Neither buyer side sees
the other's findings or their number, nor the installation-wide counts (stored
objects listed, blobs and bytes re-hashed, deposits and escrow events checked)
on the fixity pages, the dashboard or the audit trail; operators holding the
permission to view fixity runs see the whole run. The log page and the
checkpoint stay public."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db.models import Sum
from django.template.defaultfilters import filesizeformat
from django.test import Client

from accounts.models import Organisation
from accounts.selectors import clock
from artifacts.models import Blob, Deposit, FixityFinding, FixityRun
from tests.escrow.conftest import open_bids

pytestmark = pytest.mark.django_db

# Installation-wide counts, distinctive enough not to appear by chance.
COUNTS = {
    "blobs_checked": 70919,
    "bytes_hashed": 71933,
    "objects_listed": 72931,
    "deposits_checked": 73939,
    "events_checked": 74941,
}
RIVAL_SUBJECTS = ("deposit #9001", "deposit #9002", "deposit #9003")
OWN_SUBJECTS = ("deposit #8001",)
STRAY_SUBJECT = "blobs/ab/ab" + "0" * 62
LOG_SUBJECT = "log entries 40..41"


def _finding(run: FixityRun, kind: str, subject: str, org: Any) -> None:
    FixityFinding.objects.create(
        run=run,
        kind=kind,
        subject=subject,
        detail=f"detail of {subject}",
        buyer_organisation=org,
        rfp_reference=f"RFP-{org.slug.upper()}" if org is not None else "",
    )


@pytest.fixture
def rival_org(outsider: Any) -> Organisation:
    return Organisation.objects.get(slug="globex")


@pytest.fixture
def run(buyer_org: Organisation, rival_org: Organisation) -> FixityRun:
    """An earlier clean run and the latest one with 6 findings: 1 about the
    buyer's escrow, 3 about the rival's, 1 about the log, 1 stray object."""
    now = clock.now()
    FixityRun.objects.create(
        trigger="schedule",
        started_at=now - timedelta(days=1),
        finished_at=now - timedelta(days=1),
        **COUNTS,
    )
    latest = FixityRun.objects.create(
        trigger="schedule",
        started_at=now - timedelta(minutes=5),
        finished_at=now,
        log_entries_checked=41,
        log_size=41,
        checkpoint_size=41,
        findings_count=6,
        **COUNTS,
    )
    for subject in OWN_SUBJECTS:
        _finding(latest, "row.altered", subject, buyer_org)
    for subject in RIVAL_SUBJECTS:
        _finding(latest, "blob.altered", subject, rival_org)
    _finding(latest, "log.gap", LOG_SUBJECT, None)
    _finding(latest, "blob.extra", STRAY_SUBJECT, None)
    return latest


def _pages(client: Client, run: FixityRun) -> dict[str, str]:
    urls = {
        "runs": "/artifacts/escrow/fixity/",
        "run": f"/artifacts/escrow/fixity/{run.public_id}/",
        "dashboard": "/dashboard/",
    }
    pages = {}
    for name, url in urls.items():
        response = client.get(url)
        assert response.status_code == 200, url
        pages[name] = response.content.decode()
    return pages


def _verdicts(page: str) -> list[str]:
    return re.findall(r'data-testid="fixity-verdict">([^<]*)<', page)


def _leaks(page: str, subjects: tuple[str, ...]) -> list[str]:
    found = [subject for subject in subjects if subject in page]
    found += [name for name, count in COUNTS.items() if str(count) in page]
    return found


def test_a_rival_buyer_sees_none_of_the_other_buyers_findings_nor_counts(
    run: FixityRun, client_for: Any, outsider: Any
) -> None:
    pages = _pages(client_for(outsider), run)

    for name, page in pages.items():
        assert _leaks(page, (*OWN_SUBJECTS, STRAY_SUBJECT)) == [], name
        assert "RFP-NORTHWIND-AI" not in page, name
        assert "6 findings" not in page, name
    # its own three findings and the log's, nothing else
    assert pages["run"].count('data-testid="fixity-finding"') == 4
    assert all(subject in pages["run"] for subject in RIVAL_SUBJECTS)
    assert _verdicts(pages["run"]) == ["4 findings"]
    assert _verdicts(pages["dashboard"]) == ["4 findings"]


def test_the_buyer_side_sees_its_own_findings_and_the_logs(
    run: FixityRun, client_for: Any, buyer: Any, auditor: Any
) -> None:
    for user in (buyer, auditor):
        pages = _pages(client_for(user), run)

        for name, page in pages.items():
            assert _leaks(page, (*RIVAL_SUBJECTS, STRAY_SUBJECT)) == [], name
            assert "RFP-GLOBEX" not in page, name
        kinds = re.findall(r'data-testid="fixity-finding" data-kind="([^"]+)"',
                           pages["run"])  # fmt: skip
        assert sorted(kinds) == ["log.gap", "row.altered"]
        assert _verdicts(pages["runs"]) == ["2 findings"]
        assert 'data-kind="row.altered"' in pages["dashboard"]
        assert _verdicts(pages["dashboard"]) == ["2 findings"]


def test_the_history_counts_only_the_findings_the_user_sees(
    run: FixityRun, client_for: Any, outsider: Any, buyer: Any
) -> None:
    for user, seen in ((outsider, 4), (buyer, 2)):
        page = client_for(user).get("/artifacts/escrow/fixity/").content.decode()
        history = page[page.index('data-testid="fixity-history"') :]

        assert "intact" in history  # the earlier, clean run
        assert str(COUNTS["blobs_checked"]) not in history
        assert f"{seen} findings" in page
        assert "6 findings" not in page


def test_operators_who_may_view_fixity_runs_see_the_whole_run(
    run: FixityRun, client_for: Any
) -> None:
    operator = User.objects.create_user(username="operator")
    operator.user_permissions.add(Permission.objects.get(codename="view_fixityrun"))
    client = client_for(operator)

    page = client.get(f"/artifacts/escrow/fixity/{run.public_id}/").content.decode()

    assert page.count('data-testid="fixity-finding"') == 6
    assert _verdicts(page) == ["6 findings"]
    counted = {k: v for k, v in COUNTS.items() if k != "bytes_hashed"}
    assert all(str(count) in page for count in counted.values())
    assert f"{filesizeformat(COUNTS['bytes_hashed'])} re-hashed" in page
    assert client.get("/artifacts/escrow/fixity/").status_code == 200


def test_users_of_no_buyer_side_still_see_no_fixity(
    run: FixityRun, client_for: Any, vendor_a: Any
) -> None:
    client = client_for(vendor_a)

    assert client.get("/artifacts/escrow/fixity/").status_code == 404
    assert client.get(f"/artifacts/escrow/fixity/{run.public_id}/").status_code == 404
    assert (
        'data-testid="escrow-fixity"' not in client.get("/dashboard/").content.decode()
    )


def test_the_audit_trail_keeps_each_buyers_findings_to_that_buyer(
    run: FixityRun, client_for: Any, outsider: Any
) -> None:
    from accounts.services.audit import audit_record

    for finding in run.findings.all():
        audit_record(
            actor=None,
            action="escrow.fixity_finding",
            target=finding,
            organisation=finding.buyer_organisation,
            data={"subject": finding.subject},
        )
    audit_record(
        actor=None,
        action="escrow.fixity_checked",
        target=run,
        data={**COUNTS, "findings": 6},
    )
    client = client_for(outsider)

    for url in ("/accounts/audit/", "/accounts/audit/export.json"):
        response = client.get(url)
        assert response.status_code == 200, url
        body = (
            b"".join(response.streaming_content)
            if response.streaming
            else (response.content)
        )
        assert _leaks(body.decode(), (*OWN_SUBJECTS, STRAY_SUBJECT)) == [], url


def test_a_buyer_sees_the_counts_of_its_own_deposits(
    deposit: Deposit, client_for: Any, buyer: Any, outsider: Any
) -> None:
    open_bids(deposit.rfp)  # sealed bids' deposits are counted once opened
    now = clock.now() + timedelta(seconds=1)
    run = FixityRun.objects.create(
        trigger="command", started_at=now, finished_at=now, **COUNTS
    )
    blobs = deposit.items.values("blob").distinct().count()

    own = client_for(buyer).get(f"/artifacts/escrow/fixity/{run.public_id}/")
    rival = client_for(outsider).get(f"/artifacts/escrow/fixity/{run.public_id}/")

    scope = re.search(r'data-testid="fixity-scope">([^<]*)<', own.content.decode())
    assert scope is not None
    assert "1 deposit of yours" in scope.group(1)
    assert f"{blobs} blob" in scope.group(1)
    size = Blob.objects.filter(pk__in=deposit.items.values("blob_id")).aggregate(
        total=Sum("size")
    )["total"]
    assert f"{filesizeformat(size)} re-hashed" in scope.group(1)
    rival_scope = re.search(
        r'data-testid="fixity-scope">([^<]*)<', rival.content.decode()
    )
    assert rival_scope is not None
    assert "0 deposits of yours" in rival_scope.group(1)


def test_the_log_page_and_checkpoint_stay_public(
    deposit: Deposit, client_for: Any, buyer: Any, outsider: Any, vendor_a: Any
) -> None:
    from artifacts.services.transparency import checkpoint_publish

    checkpoint_publish()
    sizes = set()
    for user in (buyer, outsider, vendor_a):
        client = client_for(user)
        page = client.get("/artifacts/escrow/log/").content.decode()
        assert 'data-testid="log-checkpoint"' in page
        assert deposit.rfp.reference not in page
        assert deposit.organisation.slug not in page
        size = re.search(r'data-testid="log-size">(\d+)<', page)
        assert size is not None
        sizes.add(size.group(1))
        assert client.get("/api/v1/log/checkpoint").status_code == 200
    assert len(sizes) == 1
