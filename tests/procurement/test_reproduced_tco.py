"""TCO on the lab's reproduced throughput, the claimed figure beside it, and
the vendor's claim (labelled so) where nothing is reproduced yet."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from accounts.models import Organisation
from gates.selectors.reproduced import lab_validations_for
from procurement.models import Rfp
from procurement.selectors.evaluation import (
    bid_tco_reproduced,
    formula_params,
    tco_formula_current,
)
from tests.gates.reproduced_support import (  # noqa: F401 (fixture)
    HONEST,
    Reproduce,
    reproduce_fixture,
)
from tests.procurement.factories_evaluation import CostModelInputFactory

pytestmark = pytest.mark.django_db

CLAIMED_TPS = Decimal("1100.00")


@pytest.fixture
def rfp(
    reproduce: Reproduce,
    vendor_a_org: Organisation,
    vendor_a: Any,
    vendor_b_org: Organisation,
    vendor_b: Any,
) -> Rfp:
    """Acme's throughput is reproduced (1060 tok/s); Bolt's is not evaluated."""
    rfp = reproduce((vendor_a_org, vendor_a, HONEST), (vendor_b_org, vendor_b, None))
    for bid in rfp.bids.all():
        CostModelInputFactory.create(bid=bid, delivered_tokens_per_s=CLAIMED_TPS)
    return rfp


def _tco(rfp: Rfp, slug: str) -> Any:
    bids = list(rfp.bids.select_related("vendor_organisation", "cost_inputs"))
    labs = lab_validations_for(rfp, bids)
    params = formula_params(tco_formula_current(rfp))
    bid = next(b for b in bids if b.vendor_organisation.slug == slug)
    return bid_tco_reproduced(bid, params, labs[bid.vendor_organisation_id])


def test_tco_is_computed_on_the_reproduced_throughput(rfp: Rfp) -> None:
    tco = _tco(rfp, "acme-flash")

    assert tco.basis == "reproduced"
    assert (tco.reproduced_throughput, tco.claimed_throughput) == (
        Decimal("1060.00"),
        CLAIMED_TPS,
    )
    assert tco.throughput_result.criterion == "tput-mean-cold-c1"
    assert tco.shown is tco.reproduced
    assert tco.reproduced.total_per_year == tco.claimed.total_per_year
    ratio = tco.claimed.tokens_per_year / tco.reproduced.tokens_per_year
    assert ratio.quantize(Decimal("0.0001")) == (CLAIMED_TPS / 1060).quantize(
        Decimal("0.0001")
    )


def test_tco_falls_back_to_the_claim_when_nothing_is_reproduced(rfp: Rfp) -> None:
    tco = _tco(rfp, "bolt-storage")

    assert (tco.basis, tco.reproduced, tco.reproduced_throughput) == (
        "claimed",
        None,
        None,
    )
    assert tco.shown is tco.claimed
    assert tco.claimed.tokens_per_year > 0


def test_tco_page_labels_each_basis(client_for: Any, buyer: Any, rfp: Rfp) -> None:
    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/tco/").content.decode()

    start = html.index('data-testid="tco-basis-acme-flash"')
    acme = html[start : html.index("</p>", start)]
    assert "on lab throughput" in acme
    assert "1,060.00 tok/s" in acme
    assert "claimed 1,100.00 tok/s" in acme
    assert 'data-testid="tco-claimed-acme-flash"' in html
    start = html.index('data-testid="tco-basis-bolt-storage"')
    bolt = html[start : html.index("</p>", start)]
    assert "on claimed throughput" in bolt
    assert "Not yet reproduced" in bolt


def test_comparison_csv_marks_the_basis(client_for: Any, buyer: Any, rfp: Rfp) -> None:
    import csv
    import io

    from tests.procurement.factories_evaluation import RequiredMetricFactory

    RequiredMetricFactory.create(rfp=rfp, name="ttft_ms")
    response = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison.csv")

    rows = {r["vendor_slug"]: r for r in csv.DictReader(io.StringIO(response.text))}
    acme, bolt = rows["acme-flash"], rows["bolt-storage"]
    assert (acme["tco_basis"], acme["throughput_reproduced_tok_s"]) == (
        "reproduced",
        "1060.00",
    )
    assert acme["throughput_claimed_tok_s"] == "1100.00"
    assert (
        acme["tco_cost_per_million_tokens"]
        != acme["tco_claimed_cost_per_million_tokens"]
    )
    assert (bolt["tco_basis"], bolt["throughput_reproduced_tok_s"]) == ("claimed", "")
    assert (
        bolt["tco_cost_per_million_tokens"]
        == bolt["tco_claimed_cost_per_million_tokens"]
    )
