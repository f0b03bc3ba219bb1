"""Forms of the escrow pages: the deposit filters, legal hold, retention."""

from __future__ import annotations

from typing import Any

from django import forms

from artifacts.models import Deposit


class DepositFilterForm(forms.Form):
    rfp = forms.ChoiceField(label="RFP", required=False)
    vendor = forms.ChoiceField(label="Vendor", required=False)
    kind = forms.ChoiceField(
        label="Kind",
        required=False,
        choices=[("", "Any kind"), *Deposit.Kind.choices],
    )

    def __init__(self, *args: Any, rfps: list[str], vendors: list[str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["rfp"].choices = [("", "Any RFP")] + [(r, r) for r in rfps]
        self.fields["vendor"].choices = [("", "Any vendor")] + [(v, v) for v in vendors]


class LegalHoldForm(forms.Form):
    hold = forms.TypedChoiceField(
        choices=[("on", "Place"), ("off", "Release")],
        coerce=lambda value: value == "on",
        widget=forms.HiddenInput,
    )
    reason = forms.CharField(
        max_length=500,
        widget=forms.TextInput(attrs={"placeholder": "e.g. dispute 2026-14"}),
    )


class RetentionForm(forms.Form):
    retain_until = forms.DateTimeField(
        label="Keep until",
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
        ),
        help_text="UTC. Retention is only ever extended.",
    )
    reason = forms.CharField(max_length=500)
