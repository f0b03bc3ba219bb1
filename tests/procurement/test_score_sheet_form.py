"""The score sheet draws its controls without Django's form renderer: the markup
must be what the renderer gave (names, ids, values, errors), so that the POST
handling and the browser journeys are unchanged."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django import forms

from accounts.models import Organisation
from procurement.forms.evaluation import SCORE_CHOICES, ScoreSheetForm
from procurement.models import Rfp
from procurement.selectors.evaluation import evaluation_board
from tests.procurement.factories_evaluation import opened_rfp

pytestmark = pytest.mark.django_db


def _tight(html: str) -> str:
    return re.sub(r">\s+<", "><", str(html)).replace(">\n", ">")


def _django_widgets(form: ScoreSheetForm, key: str, testid: str) -> tuple[str, str]:
    """The two controls as Django's widgets render them through the renderer."""
    value, why = form[f"value-{key}"], form[f"justification-{key}"]
    select = forms.Select(attrs={"data-testid": f"score-{testid}"})
    select.choices = SCORE_CHOICES
    textarea = forms.Textarea(
        attrs={"rows": 2, "data-testid": f"justification-{testid}", "maxlength": 4000}
    )
    return (
        value.as_widget(select, attrs={"id": value.auto_id}),
        why.as_widget(textarea, attrs={"id": why.auto_id}),
    )


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any) -> Rfp:
    return opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])


@pytest.mark.parametrize(
    "data",
    [None, {"value": "7", "justification": "Re-ran <cleanly> & fast."}, {"value": "4"}],
    ids=["unbound", "bound", "bound-with-error"],
)
def test_sheet_controls_are_the_widgets_markup(rfp: Rfp, data: Any) -> None:
    board = evaluation_board(rfp)
    bid, criterion = board.bids[0], board.criteria[0]
    key = f"{bid.public_id}-{criterion.pk}"
    posted = None if data is None else {f"{k}-{key}": v for k, v in data.items()}
    form = ScoreSheetForm(posted, bids=board.bids, criteria=board.criteria, scores={})
    if posted is not None:
        form.is_valid()

    cell = form.groups()[0]["cells"][0]

    testid = f"{bid.vendor_organisation.slug}-reproducibility"
    select, textarea = _django_widgets(form, key, testid)
    assert _tight(cell["value"]["html"]) == _tight(select)
    assert _tight(cell["justification"]["html"]) == _tight(textarea)
    assert cell["value"]["id"] == form[f"value-{key}"].id_for_label
    assert cell["justification"]["errors"] == form[f"justification-{key}"].errors


def test_sheet_marks_the_invalid_control(rfp: Rfp) -> None:
    board = evaluation_board(rfp)
    key = f"{board.bids[0].public_id}-{board.criteria[0].pk}"
    form = ScoreSheetForm(
        {f"value-{key}": "4"}, bids=board.bids, criteria=board.criteria, scores={}
    )

    assert not form.is_valid()

    cell = form.groups()[0]["cells"][0]
    described = f'aria-describedby="{cell["justification"]["id"]}_error"'
    assert 'aria-invalid="true"' in cell["justification"]["html"]
    assert described in cell["justification"]["html"]
    assert 'aria-invalid="true"' not in cell["value"]["html"]
    assert '<option value="4" selected>4</option>' in cell["value"]["html"]
    assert list(cell["justification"]["errors"]) == ["Justify this score."]
