"""Forms of the release pages: the request, the vendor's objection, an
approval, and the reason for a rejection or a withdrawal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django import forms

from artifacts.models import Release
from artifacts.selectors.breaches import CitedBreach

TEXT_MAX = 4000


class ReleaseRequestForm(forms.Form):
    condition = forms.ChoiceField(
        label="Release condition",
        choices=Release.Condition.choices,
        widget=forms.RadioSelect,
    )
    statement = forms.CharField(
        label="Statement",
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="What happened, with dates. Required for “other”.",
    )
    breach = forms.ChoiceField(
        label="Breach cited",
        required=False,
        help_text="A recorded breach of the vendor's (e.g. a re-test obligation "
        "it failed or let expire): the statement quotes it.",
    )

    def __init__(self, *args: Any, breaches: Sequence[CitedBreach] = (), **kw: Any):
        super().__init__(*args, **kw)
        cast(forms.ChoiceField, self.fields["breach"]).choices = [
            ("", "None"),
            *((b.id, b.label) for b in breaches),
        ]
        if not breaches:
            del self.fields["breach"]


class ObjectionForm(forms.Form):
    reason = forms.CharField(
        label="Your objection",
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 4}),
    )


class ApprovalForm(forms.Form):
    note = forms.CharField(
        label="Note",
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Required when the vendor objected: your answer to it.",
    )
    acknowledge_objection = forms.BooleanField(
        label="I have read the vendor's objection and approve nonetheless",
        required=False,
    )


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label="Reason",
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
