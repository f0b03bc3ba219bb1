"""A deposit's blobs and a bundle's files page through their own lists; the
deposit and bundle details show the first ``PAGE_SIZE`` with a count and the
link. Another organisation's vendor gets 404 from the lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from artifacts.models import Deposit
from procurement.models import Rfp
from tests.api.paging import assert_pages
from tests.escrow.conftest import ingest_and_deposit, open_bids

pytestmark = pytest.mark.django_db

EXTRA = {f"results/extra-{i:03d}.txt": f"row {i}\n".encode() for i in range(PAGE_SIZE)}


@pytest.fixture
def big(tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation) -> Deposit:
    deposit = ingest_and_deposit(
        tmp_path / "big", rfp, vendor_a_org, vendor_a, extra_files=EXTRA
    )
    open_bids(rfp)
    return deposit


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_deposits_blobs_page_in_the_leafs_order(big: Deposit, auditor: Any) -> None:
    url = f"/api/v1/escrow/deposits/{big.public_id}/blobs/"

    whole = assert_pages(_client(auditor), url)
    detail = _client(auditor).get(f"/api/v1/escrow/deposits/{big.public_id}/").json()

    paths = [item.path for item in big.items.order_by("position")]
    assert [b["path"] for b in whole["results"]] == paths
    assert detail["blob_count"] == len(paths) > PAGE_SIZE
    assert [b["path"] for b in detail["blobs"]] == paths[:PAGE_SIZE]
    assert detail["blobs_url"] == url
    assert "blobs" not in detail["record"]


def test_a_bundles_files_page_by_path(big: Deposit, buyer: Any) -> None:
    bundle = big.bundle
    url = f"/api/v1/bundles/{bundle.public_id}/files/"

    whole = assert_pages(_client(buyer), url)
    detail = _client(buyer).get(f"/api/v1/bundles/{bundle.public_id}/").json()

    paths = sorted(bundle.files.values_list("path", flat=True))
    assert [f["path"] for f in whole["results"]] == paths
    assert detail["file_count"] == len(paths) > PAGE_SIZE
    assert [f["path"] for f in detail["files"]] == paths[:PAGE_SIZE]
    assert detail["files_url"] == url


def test_another_vendor_gets_404_from_both_lists(big: Deposit, vendor_b: Any) -> None:
    client = _client(vendor_b)

    blobs = client.get(f"/api/v1/escrow/deposits/{big.public_id}/blobs/")
    files = client.get(f"/api/v1/bundles/{big.bundle.public_id}/files/")

    assert (blobs.status_code, files.status_code) == (404, 404)
    assert "extra-000" not in blobs.content.decode() + files.content.decode()
