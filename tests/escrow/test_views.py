"""Escrow pages: deposits by RFP, vendor and kind (filters, pagination, empty
state); one deposit with its leaf and verified inclusion proof (pending until
a checkpoint holds it); legal hold and retention forms; the log page's
"rewritten since my last visit?" check against the checkpoint the user marked
as seen (a POST; reading the page remembers nothing)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from accounts.models import Organisation
from artifacts.models import Deposit, EscrowEvent, LogVisit
from artifacts.services.transparency import checkpoint_publish, log_append
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
    monkeypatch.setattr("artifacts.views.escrow.PAGE_SIZE", 2)
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
    checkpoint_publish()

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
    checkpoint_publish()

    page = client_for(vendor_a).get(f"/artifacts/escrow/deposits/{deposit.public_id}/")

    text = page.content.decode()
    assert 'data-testid="inclusion-verdict">verified<' in text
    assert 'data-testid="hold-form"' not in text


def test_deposit_newer_than_the_latest_checkpoint_is_pending_not_failed(
    deposit: Deposit, vendor_a: Any, client_for: Any
) -> None:
    page = client_for(vendor_a).get(f"/artifacts/escrow/deposits/{deposit.public_id}/")

    text = page.content.decode()
    assert 'data-testid="inclusion-verdict">pending<' in text
    assert "the next one is published within a minute" in text
    assert 'data-testid="inclusion-problem"' not in text


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


def _mark_seen(client: Any) -> str:
    """Press "Mark as seen" on the log page: the checkpoint it shows."""
    page = _log_page(client)
    size = re.search(r'name="size" value="(\d+)"', page)
    root = re.search(r'name="root_hash" value="([^"]+)"', page)
    assert size is not None, "no mark-as-seen form on the page"
    assert root is not None
    form = {"size": size.group(1), "root_hash": root.group(1)}
    response = client.post("/artifacts/escrow/log/seen/", form, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def _append(count: int) -> None:
    """``count`` entries, then a checkpoint (as the beat task would sign)."""
    with transaction.atomic():
        for number in range(count):
            log_append(f'{{"n":{number}}}'.encode())
    checkpoint_publish()


@pytest.fixture
def signed(deposit: Deposit) -> Deposit:
    checkpoint_publish()
    return deposit


def test_first_visit_offers_to_mark_the_checkpoint_seen(
    signed: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    page = _log_page(client)
    assert "First visit" in page
    assert not LogVisit.objects.filter(user=auditor).exists()  # a read

    page = _mark_seen(client)

    assert "Checkpoint of size 1 marked as seen" in page
    assert LogVisit.objects.get(user=auditor).size == 1
    assert 'data-testid="log-seen"' in page


def test_later_visit_proves_the_log_was_only_appended_to(
    signed: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _mark_seen(client)
    _append(5)

    page = _log_page(client)

    assert ">consistent<" in page
    assert "5 entries were appended; none was changed or removed." in page
    assert 'data-testid="log-proof"' in page
    assert LogVisit.objects.get(user=auditor).size == 1  # until marked again
    _mark_seen(client)
    assert LogVisit.objects.get(user=auditor).size == 6


def test_a_rewritten_log_is_flagged_and_the_old_checkpoint_kept(
    signed: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _mark_seen(client)
    seen = LogVisit.objects.get(user=auditor)
    # What the auditor saw differs from what the log now says it had: as if the
    # log had been rewritten and re-signed since the visit.
    LogVisit.objects.filter(pk=seen.pk).update(root_hash="ab" * 32)
    _append(3)

    page = _log_page(client)

    assert ">inconsistent<" in page
    assert "The consistency proof fails" in page
    assert 'data-testid="log-mark-seen"' not in page


def test_marking_a_checkpoint_that_does_not_extend_the_seen_one_is_refused(
    signed: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _mark_seen(client)
    LogVisit.objects.filter(user=auditor).update(root_hash="ab" * 32)
    _append(3)
    checkpoint = _log_page(client)  # the form is hidden; post it by hand
    root = re.search(r'data-testid="log-checkpoint">[^\n]*\n\d+\n([^\n]+)', checkpoint)
    assert root is not None

    page = client.post(
        "/artifacts/escrow/log/seen/",
        {"size": "4", "root_hash": root.group(1)},
        follow=True,
    ).content.decode()

    assert "The consistency proof fails" in page
    assert LogVisit.objects.get(user=auditor).size == 1  # not replaced


@pytest.mark.parametrize(
    "form",
    [
        {"size": "1", "root_hash": "not base64!"},
        {"size": "1", "root_hash": "AAAA"},
        {"size": "-1", "root_hash": "A" * 43 + "="},
        {"size": "1", "root_hash": "A" * 43 + "="},  # well formed, never signed
        {},
    ],
)
def test_marking_a_bad_or_unknown_checkpoint_is_refused(
    signed: Deposit, auditor: Any, client_for: Any, form: dict[str, str]
) -> None:
    client = client_for(auditor)

    response = client.post("/artifacts/escrow/log/seen/", form, follow=True)

    assert response.status_code == 200
    assert 'class="msg msg-error"' in response.content.decode()
    assert not LogVisit.objects.filter(user=auditor).exists()


def test_marking_seen_is_a_post(signed: Deposit, auditor: Any, client_for: Any) -> None:
    response = client_for(auditor).get("/artifacts/escrow/log/seen/")

    assert response.status_code == 405


def test_a_shrunk_log_is_flagged(
    signed: Deposit, auditor: Any, client_for: Any
) -> None:
    client = client_for(auditor)
    _mark_seen(client)
    LogVisit.objects.filter(user=auditor).update(size=50)

    page = _log_page(client)

    assert ">inconsistent<" in page
    assert "The log shrank from 50 to 1 entries." in page


def test_entries_since_the_latest_checkpoint_are_said_to_be_pending(
    signed: Deposit, auditor: Any, client_for: Any
) -> None:
    with transaction.atomic():
        log_append(b'{"n":1}')
        log_append(b'{"n":2}')

    page = _log_page(client_for(auditor))

    assert 'data-testid="log-size">1<' in page
    assert (
        "2 entries since the latest checkpoint; the next one is published "
        "within a minute." in page
    )


def test_escrow_summary_for_dashboards(
    deposits: list[Deposit], auditor: Any, vendor_b: Any, client_for: Any
) -> None:
    from artifacts.selectors.escrow import escrow_summary_for

    checkpoint_publish()
    before = escrow_summary_for(auditor)
    _mark_seen(client_for(auditor))
    _append(2)
    after = escrow_summary_for(auditor)

    assert (before.deposits, before.on_hold, before.unseen_entries) == (3, 0, None)
    assert [d.log_index for d in before.latest] == [2, 1, 0]
    assert after.unseen_entries == 2
    assert escrow_summary_for(vendor_b).deposits == 1
