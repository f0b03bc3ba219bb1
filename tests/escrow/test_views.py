"""Escrow pages: deposits by RFP, vendor and kind (filters, pagination, empty
state); one deposit with its leaf and verified inclusion proof; legal hold and
retention forms; the log page's "rewritten since my last visit?" check."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from accounts.models import Organisation
from artifacts.models import Deposit, EscrowEvent, LogVisit
from artifacts.services.transparency import log_append
from procurement.models import Rfp
from tests.artifacts.ingest_support import open_rfp
from tests.escrow.conftest import ingest_and_deposit, open_bids

pytestmark = pytest.mark.django_db


@pytest.fixture
def deposits(
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    vendor_b: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer_org: Organisation,
) -> list[Deposit]:
    """Two vendors on RFP-DEMO-1, and acme-flash on a second RFP; all opened."""
    second = open_rfp(vendor_a_org, reference="RFP-SECOND", buyer=buyer_org)
    made = [
        ingest_and_deposit(tmp_path / "a", rfp, vendor_a_org, vendor_a),
        ingest_and_deposit(
            tmp_path / "b",
            rfp,
            vendor_b_org,
            vendor_b,
            key="vendor_b",
            extra_files={"x/notes.txt": b"bolt"},
        ),
        ingest_and_deposit(tmp_path / "c", second, vendor_a_org, vendor_a),
    ]
    open_bids(rfp)
    open_bids(second)
    return made


def _rows(client: Any, query: str = "") -> str:
    response = client.get(f"/artifacts/escrow/{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_deposit_list_filters_by_rfp_vendor_and_kind(
    deposits: list[Deposit], auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)

    assert _rows(client).count('data-testid="deposit-row"') == 3
    assert _rows(client, "?rfp=RFP-SECOND").count('data-testid="deposit-row"') == 1
    assert _rows(client, "?vendor=bolt-storage").count('data-testid="deposit-row"') == 1
    by_both = _rows(client, "?rfp=RFP-DEMO-1&vendor=acme-flash&kind=bundle")
    assert by_both.count('data-testid="deposit-row"') == 1
    assert 'data-testid="deposit-list-empty"' in _rows(client, "?kind=report")


def test_deposit_list_refuses_unknown_filter_values(
    deposits: list[Deposit], auditor: Any, client_for: Any
) -> None:
    page = _rows(client_for(auditor), "?vendor=globex&kind=%3Cscript%3E")

    assert page.count('data-testid="deposit-row"') == 3  # invalid filter: ignored
    assert "<script>" not in page


def test_deposit_list_is_paginated_keeping_the_filters(
    deposits: list[Deposit], auditor: Any, client_for: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("artifacts.escrow_views.PAGE_SIZE", 2)
    client = client_for(auditor)

    first = _rows(client, "?kind=bundle")
    second = _rows(client, "?kind=bundle&page=2")

    assert first.count('data-testid="deposit-row"') == 2
    assert "?kind=bundle&amp;page=2" in first
    assert second.count('data-testid="deposit-row"') == 1


def test_deposit_list_empty_state_for_a_newcomer(
    outsider: Any, client_for: Any
) -> None:
    page = _rows(client_for(outsider))

    assert 'data-testid="deposit-list-empty"' in page
    assert "No deposits for you yet" in page


def test_deposit_page_shows_leaf_and_verified_proof(
    deposits: list[Deposit], auditor: Any, client_for: Any
) -> None:
    deposit = deposits[1]

    page = client_for(auditor).get(f"/artifacts/escrow/deposits/{deposit.public_id}/")

    text = page.content.decode()
    assert page.status_code == 200
    assert f'data-testid="deposit-index">{deposit.log_index}<' in text
    assert 'data-testid="inclusion-verdict">verified<' in text
    assert deposit.leaf_hash in text
    assert "x/notes.txt" in text
    assert f"/api/v1/bundles/{deposit.bundle.public_id}/evidence/" in text
    assert 'data-testid="hold-form"' in text  # auditors may place a legal hold


def test_vendor_sees_its_receipt_without_the_hold_forms(
    deposit: Deposit, vendor_a: Any, client_for: Any
) -> None:
    page = client_for(vendor_a).get(f"/artifacts/escrow/deposits/{deposit.public_id}/")

    text = page.content.decode()
    assert 'data-testid="inclusion-verdict">verified<' in text
    assert 'data-testid="hold-form"' not in text


def test_hold_and_retention_through_the_page(
    deposit: Deposit, buyer: Any, client_for: Any
) -> None:
    open_bids(deposit.rfp)
    client = client_for(buyer)
    base = f"/artifacts/escrow/deposits/{deposit.public_id}/"
    later = (deposit.retain_until + timedelta(days=400)).strftime("%Y-%m-%dT%H:%M")

    client.post(base + "legal-hold/", {"hold": "on", "reason": "dispute 14"})
    client.post(base + "retention/", {"retain_until": later, "reason": "renewal"})
    refused = client.post(
        base + "retention/",
        {"retain_until": "2001-01-01T00:00", "reason": "x"},
        follow=True,
    )

    deposit.refresh_from_db()
    assert deposit.legal_hold is True
    assert deposit.retain_until.strftime("%Y-%m-%dT%H:%M") == later
    assert "Retention can only be extended" in refused.content.decode()
    assert list(
        EscrowEvent.objects.values_list("action", flat=True).order_by("log_index")
    ) == [
        "legal_hold.set",
        "retention.extended",
    ]


# --- "has anything been rewritten since my last visit?" -----------------------------


def _log_page(client: Any) -> str:
    response = client.get("/artifacts/escrow/log/")
    assert response.status_code == 200
    return response.content.decode()


def _append(count: int) -> None:
    with transaction.atomic():
        for number in range(count):
            log_append(f'{{"n":{number}}}'.encode())


def test_first_visit_remembers_the_checkpoint(
    deposit: Deposit, auditor: Any, client_for: Any
) -> None:
    page = _log_page(client_for(auditor))

    assert "First visit" in page
    visit = LogVisit.objects.get(user=auditor)
    assert visit.size == 1


def test_later_visit_proves_the_log_was_only_appended_to(
    deposit: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _log_page(client)
    _append(5)

    page = _log_page(client)

    assert ">consistent<" in page
    assert "5 entries were appended; none was changed or removed." in page
    assert 'data-testid="log-proof"' in page
    assert LogVisit.objects.get(user=auditor).size == 6


def test_a_rewritten_log_is_flagged_and_the_old_checkpoint_kept(
    deposit: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _log_page(client)
    seen = LogVisit.objects.get(user=auditor)
    # What the auditor saw differs from what the log now says it had: as if the
    # log had been rewritten and re-signed since the visit.
    LogVisit.objects.filter(pk=seen.pk).update(root_hash="ab" * 32)
    _append(3)

    page = _log_page(client)

    assert ">inconsistent<" in page
    assert "The consistency proof fails" in page
    assert LogVisit.objects.get(user=auditor).size == 1  # not replaced


def test_a_shrunk_log_is_flagged(
    deposit: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _log_page(client)
    LogVisit.objects.filter(user=auditor).update(size=50)

    page = _log_page(client)

    assert ">inconsistent<" in page
    assert "The log shrank from 50 to 1 entries." in page


def test_escrow_summary_for_dashboards(
    deposits: list[Deposit], auditor: Any, vendor_b: Any, client_for: Any
) -> None:
    from artifacts.escrow.selectors import escrow_summary_for

    before = escrow_summary_for(auditor)
    _log_page(client_for(auditor))
    _append(2)
    after = escrow_summary_for(auditor)

    assert (before.deposits, before.on_hold, before.unseen_entries) == (3, 0, None)
    assert [d.log_index for d in before.latest] == [2, 1, 0]
    assert after.unseen_entries == 2
    assert escrow_summary_for(vendor_b).deposits == 1
