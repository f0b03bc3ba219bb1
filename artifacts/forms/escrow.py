"""Forms of the escrow pages: the deposit filters, legal hold, retention, the
checkpoint marked as seen on the log page."""

from __future__ import annotations

import base64
import binascii
from typing import Any, cast

from django import forms

from accounts.forms.users import UtcDateTimeInput
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
        rfp, vendor = self.fields["rfp"], self.fields["vendor"]
        cast(forms.ChoiceField, rfp).choices = [("", "Any RFP")] + [
            (r, r) for r in rfps
        ]
        cast(forms.ChoiceField, vendor).choices = [("", "Any vendor")] + [
            (v, v) for v in vendors
        ]


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
        widget=UtcDateTimeInput(),
        help_text="UTC, as YYYY-MM-DD HH:MM. Retention is only ever extended.",
    )
    reason = forms.CharField(max_length=500)


class LogSeenForm(forms.Form):
    """The checkpoint the log page showed: its size and base64 root hash."""

    size = forms.IntegerField(min_value=0, max_value=2**63 - 1)
    root_hash = forms.CharField(max_length=64)

    def clean_root_hash(self) -> bytes:
        try:
            root = base64.b64decode(self.cleaned_data["root_hash"], validate=True)
        except (binascii.Error, ValueError) as error:
            raise forms.ValidationError("Not a base64 root hash.") from error
        if len(root) != 32:
            raise forms.ValidationError("A root hash is 32 bytes.")
        return root
