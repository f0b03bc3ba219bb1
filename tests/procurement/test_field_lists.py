"""One field list per concept: the contract terms (``RFP_TERMS_FIELDS``, beside
the model) and the cost inputs (``COST_INPUT_FIELDS``, from ``CostInputs`` in
the Django-free TCO library). The forms, services and addenda derive theirs;
the API's serializers, which declare each field with its own rules, and the
model are held to the lists here, in order."""

from __future__ import annotations

from collections.abc import Iterable

from procurement.api.clarifications import RfpAddendaApi
from procurement.api.rfps import RfpDetailApi, TermsSerializer
from procurement.forms.bids import COST_LABELS
from procurement.forms.clarifications import AddendumForm
from procurement.forms.rfps import RfpTermsForm
from procurement.lib.tco import COST_INPUT_FIELDS, CostInputs
from procurement.models import CostModelInput, Rfp
from procurement.models.rfp import RFP_TERMS_FIELDS
from procurement.services.addenda import AMENDABLE_FIELDS
from procurement.services.rfps import EDITABLE_FIELDS


def _in_terms(names: Iterable[str]) -> list[str]:
    return [n for n in names if n in RFP_TERMS_FIELDS]


def test_the_cost_inputs_are_the_model_fields_in_order() -> None:
    model_fields = [f.name for f in CostModelInput._meta.fields]

    assert model_fields == ["id", "bid", *COST_INPUT_FIELDS]
    assert list(COST_LABELS) == list(COST_INPUT_FIELDS)
    assert tuple(CostInputs.__dataclass_fields__) == COST_INPUT_FIELDS


def test_the_contract_terms_are_fields_of_the_rfp() -> None:
    names = {f.name for f in Rfp._meta.fields}

    assert [f for f in RFP_TERMS_FIELDS if f not in names] == []


def test_every_surface_of_the_terms_follows_the_one_list() -> None:
    assert list(RfpTermsForm.base_fields) == list(RFP_TERMS_FIELDS)
    assert list(TermsSerializer().fields) == [*RFP_TERMS_FIELDS, "frozen_at"]
    assert _in_terms(RfpDetailApi.InputSerializer().fields) == list(RFP_TERMS_FIELDS)
    assert set(RFP_TERMS_FIELDS) <= EDITABLE_FIELDS


def test_an_addendum_amends_every_term_but_the_standstill() -> None:
    terms = [f for f in RFP_TERMS_FIELDS if f != "standstill_days"]

    assert _in_terms(AMENDABLE_FIELDS) == terms
    assert _in_terms(AddendumForm.base_fields) == terms
    changes = RfpAddendaApi.InputSerializer.AddendumChangesInputSerializer
    assert _in_terms(changes().fields) == terms
