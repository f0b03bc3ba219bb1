"""Who sees an RFP's gates: the buyer organisation (every role), the engaged lab
and audit organisations read-only, a vendor only its own rows (no trace of the
other vendor on any page), anyone else 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from gates.models import Evaluation
from gates.permissions import gate_scope
from procurement.models import Rfp
from tests.gates.read_support import GATE, evaluated_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

FULL_VIEW = ["buyer", "evaluator", "labops", "auditor"]


def _pages(rfp: Rfp, evaluation: Evaluation) -> list[str]:
    """Every read page about ``evaluation``'s vendor."""
    vendor = evaluation.vendor_organisation.slug
    gate = (rfp.public_id, vendor, GATE)
    return [
        reverse("gates:gate", args=gate),
        reverse("gates:criterion", args=(*gate, "ttft-p99-cold-c1")),
        reverse("gates:evaluation", args=[evaluation.public_id]),
        reverse("gates:evaluation_document", args=[evaluation.public_id, "plan"]),
    ]


@pytest.mark.parametrize("persona", FULL_VIEW)
def test_buyer_side_and_engaged_organisations_see_every_vendor(
    persona: str, request: Any, client_for: Any, rfp: Rfp, evaluated: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    board = client.get(reverse("gates:board", args=[rfp.public_id]))
    pages = [client.get(url) for url in _pages(rfp, evaluated["b"])]

    assert board.status_code == 200
    assert b"board-row-acme-flash" in board.content
    assert b"board-row-bolt-storage" in board.content
    assert [p.status_code for p in pages] == [200, 200, 200, 200]


def test_scope_is_read_only_for_engaged_organisations(
    rfp: Rfp, buyer: Any, evaluator: Any, labops: Any, auditor: Any
) -> None:
    scopes = {u.username: gate_scope(u, rfp) for u in (buyer, evaluator, labops)}
    scopes["auditor"] = gate_scope(auditor, rfp)

    assert scopes["buyer"].buyer_side
    assert scopes["evaluator"].buyer_side
    assert (scopes["labops"].buyer_side, scopes["labops"].full) == (False, True)
    assert (scopes["auditor"].buyer_side, scopes["auditor"].full) == (False, True)
    assert (scopes["labops"].lab, scopes["auditor"].lab) == (True, False)


def test_vendor_sees_its_own_gates_and_no_trace_of_the_other_vendor(
    client_for: Any, vendor_a: Any, rfp: Rfp, evaluated: Any
) -> None:
    client = client_for(vendor_a)

    board = client.get(reverse("gates:board", args=[rfp.public_id]))
    own = [client.get(url) for url in _pages(rfp, evaluated["a"])]

    assert board.status_code == 200
    assert b"board-row-acme-flash" in board.content
    for response in [board, *own]:
        assert response.status_code == 200
        assert b"bolt" not in response.content.lower()
        assert b"Bolt" not in response.content


def test_vendor_gets_404_for_every_page_of_the_other_vendor(
    client_for: Any, vendor_a: Any, rfp: Rfp, evaluated: Any
) -> None:
    client = client_for(vendor_a)

    statuses = [client.get(url).status_code for url in _pages(rfp, evaluated["b"])]

    assert statuses == [404, 404, 404, 404]


def test_outsider_gets_404_everywhere(
    client_for: Any, outsider: Any, rfp: Rfp, evaluated: Any
) -> None:
    client = client_for(outsider)
    urls = [reverse("gates:board", args=[rfp.public_id])]
    urls += _pages(rfp, evaluated["a"])

    statuses = [client.get(url).status_code for url in urls]

    assert statuses == [404] * 5


def test_anonymous_is_sent_to_log_in(client: Any, rfp: Rfp) -> None:
    response = client.get(reverse("gates:board", args=[rfp.public_id]))

    assert response.status_code == 302
    assert "login" in response["Location"]


def test_unknown_vendor_and_gate_are_404(
    client_for: Any, buyer: Any, rfp: Rfp, evaluated: Any
) -> None:
    client = client_for(buyer)

    unknown_vendor = reverse("gates:gate", args=[rfp.public_id, "globex", GATE])
    unknown_gate = reverse("gates:gate", args=[rfp.public_id, "acme-flash", "nope"])
    bad_document = f"/gates/evaluations/{evaluated['a'].public_id}/secrets.json"

    assert client.get(unknown_vendor).status_code == 404
    assert client.get(unknown_gate).status_code == 404
    assert client.get(bad_document).status_code == 404
