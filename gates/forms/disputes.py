"""Forms of a verdict dispute: the vendor's reason and optional revised bundle
(on the evaluation page), the buyer side's answer (uphold, reject)."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from artifacts.models import Bundle
from gates.models import Evaluation
from gates.models.disputes import REASON_MAX


class DisputeOpenForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=REASON_MAX,
        label="Why the verdict is wrong",
    )
    bundle = forms.ModelChoiceField(
        queryset=Bundle.objects.none(),
        to_field_name="public_id",
        required=False,
        label="Revised bundle to re-run (optional)",
        empty_label="Re-run the judged bundle",
    )

    def __init__(self, *args: Any, evaluation: Evaluation, **kwargs: Any):
        super().__init__(*args, **kwargs)
        bundle_field = cast(forms.ModelChoiceField, self.fields["bundle"])
        bundle_field.queryset = Bundle.objects.filter(
            rfp_id=evaluation.rfp_id,
            organisation_id=evaluation.vendor_organisation_id,
            status=Bundle.Status.ACCEPTED,
        ).order_by("-id")


class DisputeAnswerForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=REASON_MAX,
        required=False,
        label="Your answer",
    )
