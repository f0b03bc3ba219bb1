from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms


class AuditFilterForm(forms.Form):
    rfp = forms.ChoiceField(required=False, label="RFP")
    action = forms.CharField(
        required=False, max_length=100, help_text="e.g. rfp or rfp.transitioned"
    )
    actor = forms.CharField(required=False, max_length=150)
    target_type = forms.CharField(required=False, max_length=100)
    since = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(self, *args: Any, rfp_references: Sequence[str] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        choices = [("", "All RFPs"), *((r, r) for r in rfp_references)]
        self.fields["rfp"].choices = choices  # type: ignore[attr-defined]

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("The 'since' date is after the 'until' date.")
        return data


class ApiTokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="Where the token is used, e.g. 'CI uploader'."
    )
