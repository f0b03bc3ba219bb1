"""The dashboard's escrow panel: the deposits a user may see (sealing holds),
legal holds, and log entries since the user's last check of the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from accounts.models import Organisation
from artifacts.models import Deposit
from artifacts.selectors.proofs import b64
from artifacts.services.transparency import checkpoint_publish
from procurement.models import Rfp
from tests.artifacts.ingest_support import open_rfp, register_corpus_keys
from tests.escrow.conftest import ingest_and_deposit, open_bids

pytestmark = pytest.mark.django_db


@pytest.fixture
def deposit(
    settings: Any,
    tmp_path: Path,
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer_org: Organisation,
) -> Deposit:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    rfp = open_rfp(vendor_a_org, vendor_b_org, buyer=buyer_org)
    return ingest_and_deposit(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)


def _panel(user: Any) -> str:
    client = Client()
    client.force_login(user)
    html = client.get("/dashboard/").content.decode()
    start = html.find('data-testid="panel-escrow"')
    return "" if start < 0 else html[start : html.find("</section>", start)]


def test_the_vendor_sees_its_own_deposit(deposit: Deposit, vendor_a: Any) -> None:
    panel = _panel(vendor_a)

    assert "1 deposit you can see" in panel
    assert f"deposit #{deposit.log_index}" in panel


def test_the_other_vendor_and_the_sealed_buyer_side_see_none(
    deposit: Deposit, vendor_b: Any, buyer: Any, auditor: Any
) -> None:
    for user in (vendor_b, buyer):
        assert "No deposits you can see yet" in _panel(user)
    assert f"deposit #{deposit.log_index}" not in _panel(auditor)


def test_after_opening_the_buyer_sees_the_deposit_and_the_unchecked_log(
    deposit: Deposit, buyer: Any
) -> None:
    open_bids(Rfp.objects.get(pk=deposit.rfp_id))

    panel = _panel(buyer)

    assert "1 deposit you can see" in panel
    assert "You have not checked the log yet" in panel


def test_log_entries_since_the_last_check_are_counted(
    deposit: Deposit, buyer: Any, tmp_path: Path, vendor_a: Any
) -> None:
    rfp = open_bids(Rfp.objects.get(pk=deposit.rfp_id))
    client = Client()
    client.force_login(buyer)
    checkpoint = checkpoint_publish()
    assert client.get("/artifacts/escrow/log/").status_code == 200
    assert "You have not checked the log yet" in _panel(buyer)  # reading: no mark
    seen = {"size": checkpoint.size, "root_hash": b64(checkpoint.root_hash)}
    assert client.post("/artifacts/escrow/log/seen/", seen).status_code == 302
    assert "No new log entries since your last check" in _panel(buyer)
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.PUBLISHED)
    rfp.refresh_from_db()
    ingest_and_deposit(
        tmp_path / "again",
        rfp,
        deposit.organisation,
        vendor_a,
        extra_files={"notes/v2.txt": b"a second version"},  # other bytes: new
    )
    open_bids(rfp)

    panel = _panel(buyer)

    assert "since your last check" in panel
    assert "No new log entries" not in panel


def test_another_buyer_sees_nothing_and_lab_operators_get_no_panel(
    deposit: Deposit, outsider: Any, labops: Any
) -> None:
    assert "No deposits you can see yet" in _panel(outsider)
    assert _panel(labops) == ""
