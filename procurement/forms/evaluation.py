from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any, cast

from django import forms
from django.utils.choices import BaseChoiceIterator
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from procurement.lib.scoring import SCORE_MAX, SCORE_MIN
from procurement.models import Bid, Criterion, Score, TcoFormula
from procurement.services.award import AWARD_RATIONALE_MIN, OVERRIDE_REASON_MIN
from procurement.services.evaluation import ScoreEntry
from procurement.services.tco import HOURS_PER_YEAR_MAX

SCORE_CHOICES = [
    ("", "not scored"),
    *((str(v), str(v)) for v in range(SCORE_MIN, SCORE_MAX + 1)),
]
JUSTIFICATION_MAX = 4000


class _ScoreChoices(BaseChoiceIterator):
    """``SCORE_CHOICES``, already in the form Django normalises choices to: a
    field given it skips the normalisation (a sheet has hundreds of fields)."""

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(SCORE_CHOICES)


_OPTIONS = [  # each option's markup, not chosen and chosen
    (
        value,
        format_html('<option value="{}">{}</option>', value, label),
        format_html('<option value="{}" selected>{}</option>', value, label),
    )
    for value, label in SCORE_CHOICES
]


def _invalid(id_: str) -> SafeString:
    """A control with errors, described by them (``<id>_error``, as Django does)."""
    return format_html(' aria-invalid="true" aria-describedby="{}_error"', id_)


def score_select_html(
    *, name: str, id_: str, testid: str, value: Any, invalid: bool
) -> SafeString:
    """What ``forms.Select`` renders for a score, without the form renderer."""
    chosen = None if value is None else str(value)
    options = "".join(on if v == chosen else off for v, off, on in _OPTIONS)
    return format_html(
        '<select name="{}" data-testid="{}" id="{}"{}>{}</select>',
        name,
        testid,
        id_,
        _invalid(id_) if invalid else "",
        mark_safe(options),  # noqa: S308 - built of escaped parts above
    )


def justification_html(
    *, name: str, id_: str, testid: str, value: Any, invalid: bool
) -> SafeString:
    """What ``forms.Textarea`` renders for a justification, without the renderer."""
    return format_html(
        '<textarea name="{}" cols="40" rows="2" data-testid="{}" maxlength="{}" '
        'id="{}"{}>\n{}</textarea>',
        name,
        testid,
        JUSTIFICATION_MAX,
        id_,
        _invalid(id_) if invalid else "",
        value or "",
    )


class ScoreSheetForm(forms.Form):
    """One score (0-10) and one justification per bid and criterion. A cell left
    empty stays unscored in the draft; a cell half filled in is an error.

    The template draws the controls from ``groups()``: the same names, ids,
    values and errors as Django's widgets, built here in one pass (through the
    form renderer, the 600 widgets of 50 bids x 6 criteria took most of a second)."""

    def __init__(
        self,
        *args: Any,
        bids: list[Bid],
        criteria: list[Criterion],
        scores: dict[tuple[int, int], Score],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.cells: list[tuple[Bid, Criterion, str]] = []
        for bid in bids:
            for criterion in criteria:
                key = f"{bid.public_id}-{criterion.pk}"
                score = scores.get((bid.pk, criterion.pk))
                self.fields[f"value-{key}"] = forms.TypedChoiceField(
                    choices=_ScoreChoices(),
                    coerce=int,
                    empty_value=None,
                    required=False,
                    initial=str(score.value) if score else "",
                    label=f"Score: {bid.vendor_organisation.name}, {criterion.name}",
                )
                self.fields[f"justification-{key}"] = forms.CharField(
                    required=False,
                    max_length=JUSTIFICATION_MAX,
                    initial=score.justification if score else "",
                    label="Justification",
                )
                self.cells.append((bid, criterion, key))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for _, _, key in self.cells:
            value, why = data.get(f"value-{key}"), data.get(f"justification-{key}", "")
            if value is not None and not why.strip():
                self.add_error(f"justification-{key}", "Justify this score.")
            if value is None and why.strip():
                self.add_error(f"value-{key}", "Give a score for this justification.")
        return data

    def _control(self, name: str, testid: str, draw: Any) -> dict[str, Any]:
        """A field's id, label, errors and markup (``draw``: one of the two
        ``*_html`` functions above), its value as its bound field would give it."""
        html_name, field = self.add_prefix(name), self.fields[name]
        auto_id = str(self.auto_id)
        id_ = auto_id % html_name if "%s" in auto_id else html_name
        if self.is_bound:
            value = self.data.get(html_name)
        else:
            value = self.get_initial_for_field(field, name)
        errors = [str(e) for e in self.errors.get(name, ())]
        html = draw(
            name=html_name, id_=id_, testid=testid, value=value, invalid=bool(errors)
        )
        return {"id": id_, "label": field.label, "errors": errors, "html": html}

    def groups(self) -> list[dict[str, Any]]:
        """Per bid, its criteria with their two controls (for the template)."""
        groups: dict[int, dict[str, Any]] = {}
        for bid, criterion, key in self.cells:
            testid = f"{bid.vendor_organisation.slug}-{slugify(criterion.name)}"
            group = groups.setdefault(bid.pk, {"bid": bid, "cells": []})
            group["cells"].append(
                {
                    "criterion": criterion,
                    "value": self._control(
                        f"value-{key}", f"score-{testid}", score_select_html
                    ),
                    "justification": self._control(
                        f"justification-{key}",
                        f"justification-{testid}",
                        justification_html,
                    ),
                }
            )
        return list(groups.values())

    def entries(self) -> list[ScoreEntry]:
        return [
            ScoreEntry(
                bid=bid.public_id,
                criterion=criterion.pk,
                value=self.cleaned_data[f"value-{key}"],
                justification=self.cleaned_data[f"justification-{key}"],
            )
            for bid, criterion, key in self.cells
            if self.cleaned_data.get(f"value-{key}") is not None
        ]


class TcoFormulaForm(forms.Form):
    pue = forms.DecimalField(
        label="PUE",
        min_value=Decimal(1),
        max_value=Decimal("9.99"),
        decimal_places=2,
        help_text="Power usage effectiveness of your datacentre, e.g. 1.40.",
    )
    utilisation = forms.DecimalField(
        min_value=Decimal("0.001"),
        max_value=Decimal(1),
        decimal_places=3,
        help_text="Share of the year the system serves at its delivered throughput.",
    )
    hours_per_year = forms.IntegerField(
        min_value=1, max_value=HOURS_PER_YEAR_MAX, help_text="8760 for a full year."
    )

    @classmethod
    def initial_from(cls, formula: TcoFormula) -> dict[str, Any]:
        return {
            "pue": formula.pue,
            "utilisation": formula.utilisation,
            "hours_per_year": formula.hours_per_year,
        }


class AwardForm(forms.Form):
    bid = forms.ChoiceField(label="Winning bid")
    rationale = forms.CharField(
        min_length=AWARD_RATIONALE_MIN,
        max_length=10000,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=(
            f"Why this bid wins, at least {AWARD_RATIONALE_MIN} characters. "
            "Kept with the award for audit."
        ),
    )
    override_reason = forms.CharField(
        label="Award without every score sheet, because",
        required=False,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=(
            "Only when an evaluator has not submitted: why the award cannot wait, "
            f"at least {OVERRIDE_REASON_MIN} characters. Shown on the award and "
            "in the notices."
        ),
    )

    gates_override_reason = forms.CharField(
        label="Award to a vendor that has not passed lab validation, because",
        required=False,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=(
            "Only when the winning vendor's lab validation has not passed (failed, "
            "inconclusive, halted or not run yet): why the award cannot rest on "
            f"reproduced claims, at least {OVERRIDE_REASON_MIN} characters. Shown on "
            "the award, to the confirmer and in the notices."
        ),
    )

    fidelity_override_reason = forms.CharField(
        label="Award although a mandatory requirement is contradicted, because",
        required=False,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=(
            "Only when the winning vendor's fidelity matrix shows a mandatory "
            "requirement its bundle or the lab's capture contradicts: why it may "
            f"win anyway, at least {OVERRIDE_REASON_MIN} characters. Kept with the "
            "award."
        ),
    )

    def __init__(self, *args: Any, choices: list[tuple[str, str]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        bid_field = cast(forms.ChoiceField, self.fields["bid"])
        bid_field.choices = [("", "Choose the winning bid"), *choices]


class AwardCancelForm(forms.Form):
    reason = forms.CharField(
        label="Reason",
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why the request is withdrawn or declined (kept in the audit trail).",
    )
