"""TCO: the pure computation against hand-computed examples, the versioned formula
service and the line-by-line page."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from accounts.exceptions import StateConflict
from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.lib.tco import TIMES, CostInputs, FormulaParams, tco_compute
from procurement.models import Rfp, TcoFormula
from procurement.selectors.evaluation import tco_formula_current
from procurement.services.tco import tco_formula_create, tco_formula_ensure
from tests.procurement.factories import RfpFactory
from tests.procurement.factories_evaluation import (
    CostModelInputFactory,
    bid_of,
    opened_rfp,
)

pytestmark = pytest.mark.django_db

DEFAULTS = FormulaParams(
    version=1, pue=Decimal("1.40"), utilisation=Decimal("0.600"), hours_per_year=8760
)
ENERGY_FORMULA = f" {TIMES} ".join(
    ["power_draw_kw", "pue", "hours_per_year", "energy_price_per_kwh"]
)


def _inputs(**overrides: Any) -> CostInputs:
    values: dict[str, Any] = {
        "currency": "EUR",
        "hardware_cost": Decimal("1200000.00"),
        "amortisation_years": Decimal("4.0"),
        "power_draw_kw": Decimal("12.500"),
        "energy_price_per_kwh": Decimal("0.1500"),
        "rack_units": 10,
        "rack_unit_cost_per_year": Decimal("1200.00"),
        "support_cost_per_year": Decimal("50000.00"),
        "delivered_tokens_per_s": Decimal("20000.00"),
    }
    return CostInputs(**(values | overrides))


def _values(result: Any) -> dict[str, Decimal | None]:
    return {line.key: line.value for line in result.lines}


def test_tco_by_hand() -> None:
    result = tco_compute(_inputs(), DEFAULTS)

    assert _values(result) == {
        "hardware_per_year": Decimal("300000.00"),  # 1,200,000 / 4
        "energy_per_year": Decimal("22995.00"),  # 12.5 x 1.4 x 8760 x 0.15
        "rack_per_year": Decimal("12000.00"),  # 10 x 1,200
        "support_per_year": Decimal("50000.00"),
        "total_per_year": Decimal("384995.00"),
        "tokens_per_year": Decimal("378432000000"),  # 20,000 x 0.6 x 8760 x 3600
        "cost_per_million_tokens": Decimal("1.0173"),  # 384,995 / 378,432
    }
    assert result.currency == "EUR"
    assert result.formula_version == 1


def test_tco_rounds_each_money_line_and_adds_up_the_rounded_lines() -> None:
    inputs = _inputs(
        currency="USD",
        hardware_cost=Decimal("1000.00"),
        amortisation_years=Decimal("3.0"),  # 333.333.. -> 333.33
        power_draw_kw=Decimal("1.234"),
        energy_price_per_kwh=Decimal("0.2345"),  # 1.234 x 1.5 x 8760 x 0.2345
        rack_units=3,
        rack_unit_cost_per_year=Decimal("333.33"),
        support_cost_per_year=Decimal("0.00"),
        delivered_tokens_per_s=Decimal("1234.56"),
    )
    formula = FormulaParams(2, Decimal("1.50"), Decimal("0.500"), 8760)

    result = tco_compute(inputs, formula)

    values = _values(result)
    assert values["energy_per_year"] == Decimal("3802.36")  # 3,802.36122
    assert result.total_per_year == Decimal("5135.68")  # 333.33+3802.36+999.99+0
    assert result.tokens_per_year == Decimal("19466542080")
    assert result.cost_per_million_tokens == Decimal("0.2638")  # 5135.68 / 19466.54


def test_tco_explains_each_line_with_its_formula_and_inputs() -> None:
    result = tco_compute(_inputs(), DEFAULTS)

    energy = next(line for line in result.lines if line.key == "energy_per_year")
    assert energy.formula == ENERGY_FORMULA
    assert [(i.name, i.value) for i in energy.inputs] == [
        ("power_draw_kw", Decimal("12.500")),
        ("pue", Decimal("1.40")),
        ("hours_per_year", 8760),
        ("energy_price_per_kwh", Decimal("0.1500")),
    ]
    assert energy.unit == "EUR/year"
    assert energy.display == "22,995.00"


def test_tco_per_million_tokens_is_none_when_no_whole_token_is_served() -> None:
    inputs = _inputs(delivered_tokens_per_s=Decimal("0.01"))
    formula = FormulaParams(1, Decimal("1.00"), Decimal("0.001"), 1)  # 0.036 tokens

    result = tco_compute(inputs, formula)

    assert result.tokens_per_year == 0
    assert result.cost_per_million_tokens is None


def test_current_formula_is_unrecorded_version_1_with_defaults(
    buyer_org: Organisation,
) -> None:
    rfp = opened_rfp(buyer_org, [])

    formula = tco_formula_current(rfp)

    assert (formula.pk, formula.version) == (None, 1)
    assert (formula.pue, formula.utilisation, formula.hours_per_year) == (
        Decimal("1.40"),
        Decimal("0.600"),
        8760,
    )


def test_first_new_version_records_the_defaults_as_version_1(
    buyer: Any, buyer_org: Organisation, clock: Any
) -> None:
    rfp = opened_rfp(buyer_org, [])

    formula = tco_formula_create(
        rfp=rfp,
        pue=Decimal("1.2"),
        utilisation=Decimal("0.8"),
        hours_per_year=8000,
        actor=buyer,
    )

    assert formula.version == 2
    assert formula.created_at == clock.now()
    assert list(rfp.tco_formulas.values_list("version", "pue")) == [
        (2, Decimal("1.20")),
        (1, Decimal("1.40")),
    ]
    events = AuditEvent.objects.filter(action="tco_formula.created")
    assert sorted(e.data["version"] for e in events) == [1, 2]


def test_new_version_refuses_the_values_of_the_latest(
    buyer: Any, buyer_org: Organisation
) -> None:
    rfp = opened_rfp(buyer_org, [])

    with pytest.raises(ProcurementError, match="values of version 1"):
        tco_formula_create(
            rfp=rfp,
            pue=Decimal("1.40"),
            utilisation=Decimal("0.6"),
            hours_per_year=8760,
            actor=buyer,
        )

    assert not TcoFormula.objects.filter(version=2).exists()


def test_new_version_refuses_bad_values_without_recording_anything(
    buyer: Any, buyer_org: Organisation
) -> None:
    rfp = opened_rfp(buyer_org, [])

    with pytest.raises(ProcurementError) as error:
        tco_formula_create(
            rfp=rfp,
            pue=Decimal("0.9"),
            utilisation=Decimal("0.5"),
            hours_per_year=8760,
            actor=buyer,
        )

    assert error.value.problems[0].path == "pue"
    assert not TcoFormula.objects.exists()


@pytest.mark.parametrize("hours", [0, 8785])
def test_new_version_refuses_impossible_hours(
    buyer: Any, buyer_org: Organisation, hours: int
) -> None:
    rfp = opened_rfp(buyer_org, [])

    with pytest.raises(ProcurementError, match="Hours per year"):
        tco_formula_create(
            rfp=rfp,
            pue=Decimal("1.3"),
            utilisation=Decimal("0.5"),
            hours_per_year=hours,
            actor=buyer,
        )


@pytest.mark.parametrize("status", [Rfp.Status.AWARDED, Rfp.Status.CANCELLED])
def test_formula_is_frozen_after_the_tender_ends(
    buyer: Any, buyer_org: Organisation, status: str
) -> None:
    rfp = RfpFactory.create(buyer_organisation=buyer_org, status=status)

    with pytest.raises(StateConflict, match="frozen"):
        tco_formula_create(
            rfp=rfp,
            pue=Decimal("1.3"),
            utilisation=Decimal("0.5"),
            hours_per_year=8760,
            actor=buyer,
        )


def test_formula_can_be_set_before_publication(
    buyer: Any, buyer_org: Organisation
) -> None:
    rfp = RfpFactory.create(buyer_organisation=buyer_org)

    formula = tco_formula_create(
        rfp=rfp,
        pue=Decimal("1.3"),
        utilisation=Decimal("0.5"),
        hours_per_year=8760,
        actor=buyer,
    )

    assert formula.version == 2


def test_ensure_records_version_1_once(buyer: Any, buyer_org: Organisation) -> None:
    rfp = opened_rfp(buyer_org, [])

    first = tco_formula_ensure(rfp=rfp, actor=buyer)
    again = tco_formula_ensure(rfp=rfp, actor=buyer)

    assert first.pk == again.pk
    assert AuditEvent.objects.filter(action="tco_formula.created").count() == 1


def test_tco_page_explains_each_vendor_line_by_line(
    client_for: Any,
    buyer: Any,
    buyer_org: Organisation,
    vendor_a_org: Any,
    vendor_b_org: Any,
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])
    CostModelInputFactory.create(bid=bid_of(rfp, vendor_a_org))

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/tco/").content.decode()

    assert "384,995.00" in html
    assert ENERGY_FORMULA in html
    assert "1.0173" in html
    assert "No cost inputs" in html  # vendor B gave none
    assert "version 1 (defaults)" in html


def test_tco_page_post_records_a_version(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    rfp = opened_rfp(buyer_org, [])
    data = {"pue": "1.25", "utilisation": "0.700", "hours_per_year": "8760"}

    response = client_for(buyer).post(f"/rfps/{rfp.public_id}/tco/", data)

    assert response.status_code == 302
    assert tco_formula_current(rfp).pue == Decimal("1.25")


def test_tco_page_post_is_forbidden_to_evaluators(
    client_for: Any, evaluator: Any, buyer_org: Organisation
) -> None:
    rfp = opened_rfp(buyer_org, [])
    data = {"pue": "1.25", "utilisation": "0.700", "hours_per_year": "8760"}

    response = client_for(evaluator).post(f"/rfps/{rfp.public_id}/tco/", data)

    assert response.status_code == 403
    assert not TcoFormula.objects.exists()


def test_tco_page_hides_vendors_while_sealed(
    client_for: Any, buyer: Any, buyer_org: Organisation, vendor_a_org: Any
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_a_org])
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/tco/").content.decode()

    assert "The bids are sealed" in html
    assert vendor_a_org.name not in html


def test_tco_page_is_404_for_vendors_and_403_for_auditors(
    client_for: Any,
    vendor_a: Any,
    auditor: Any,
    buyer_org: Organisation,
    vendor_a_org: Any,
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_a_org])
    CostModelInputFactory.create(bid=bid_of(rfp, vendor_a_org))

    assert client_for(vendor_a).get(f"/rfps/{rfp.public_id}/tco/").status_code == 404
    assert client_for(auditor).get(f"/rfps/{rfp.public_id}/tco/").status_code == 403
