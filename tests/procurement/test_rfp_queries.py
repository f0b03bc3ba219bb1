"""The RFP list and overview cost the same number of queries whatever their size."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Organisation
from procurement.models import Criterion, RequiredArtifact, RequiredMetric, Rfp
from tests.accounts.factories import OrganisationFactory
from tests.procurement.factories import RfpFactory

pytestmark = pytest.mark.django_db

# Session and user; memberships (visibility, tabs, permissions, invitation scope);
# the RFP and its four prefetched relations; for the buyer, the vendors left to
# invite; the unread-notification count of the page header.
DETAIL_QUERIES_BUYER = 14
DETAIL_QUERIES_VENDOR = 14
# Session and user; memberships; the due-deadline check; "may author?"; count and
# page of RFPs (with their buyers); the header's role list and unread count.
LIST_QUERIES = 9


def _tender(buyer_org: Organisation, size: int, reference: str) -> Rfp:
    """A published RFP with ``size`` invited vendors, artifacts, metrics, criteria."""
    vendors = [
        OrganisationFactory.create(slug=f"{reference.lower()}-v{i}", kind="vendor")
        for i in range(size)
    ]
    rfp = RfpFactory.create(
        reference=reference,
        buyer_organisation=buyer_org,
        published=True,
        invited=vendors,
    )
    RequiredArtifact.objects.bulk_create(
        RequiredArtifact(rfp=rfp, kind="trace", title=f"Trace {i}", position=i)
        for i in range(size)
    )
    RequiredMetric.objects.bulk_create(
        RequiredMetric(rfp=rfp, name=f"metric_{i}", stats="p99", position=i)
        for i in range(size)
    )
    Criterion.objects.bulk_create(
        Criterion(rfp=rfp, name=f"Criterion {i}", weight=100 // size, position=i)
        for i in range(size)
    )
    return rfp


@pytest.mark.parametrize("size", [2, 20])
def test_rfp_detail_page_queries_do_not_grow_for_the_buyer(
    size: int,
    buyer: Any,
    buyer_org: Organisation,
    client_for: Any,
    django_assert_num_queries: Any,
) -> None:
    rfp = _tender(buyer_org, size, "RFP-Q-1")
    client = client_for(buyer)

    with django_assert_num_queries(DETAIL_QUERIES_BUYER):
        response = client.get(f"/rfps/{rfp.public_id}/")

    assert response.status_code == 200
    assert response.content.decode().count('data-testid="artifact-trace"') == size


@pytest.mark.parametrize("size", [2, 20])
def test_rfp_detail_page_queries_do_not_grow_for_a_vendor(
    size: int,
    vendor_a: Any,
    vendor_a_org: Organisation,
    buyer_org: Organisation,
    client_for: Any,
    django_assert_num_queries: Any,
) -> None:
    rfp = _tender(buyer_org, size, "RFP-Q-1")
    rfp.invited_vendors.add(vendor_a_org)
    client = client_for(vendor_a)

    with django_assert_num_queries(DETAIL_QUERIES_VENDOR):
        response = client.get(f"/rfps/{rfp.public_id}/")

    assert 'data-testid="invited-acme-flash"' in response.content.decode()


@pytest.mark.parametrize("size", [2, 20])
def test_rfp_list_page_queries_do_not_grow(
    size: int,
    buyer: Any,
    buyer_org: Organisation,
    client_for: Any,
    django_assert_num_queries: Any,
) -> None:
    for n in range(size):
        _tender(buyer_org, size, f"RFP-Q-{n}")
    client = client_for(buyer)

    with django_assert_num_queries(LIST_QUERIES):
        response = client.get("/rfps/")

    assert response.content.decode().count('data-testid="rfp-row-') == size
