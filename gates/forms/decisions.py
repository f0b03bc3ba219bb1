"""Forms of a gate decision: the decision with its rationale, and the second
person's note."""

from __future__ import annotations

from django import forms

from gates.models import Decision

TEXT_MAX = 4000


class DecisionForm(forms.Form):
    kind = forms.ChoiceField(choices=Decision.Kind.choices, widget=forms.RadioSelect)
    rationale = forms.CharField(max_length=TEXT_MAX, widget=forms.Textarea)


class SecondForm(forms.Form):
    note = forms.CharField(max_length=TEXT_MAX, required=False)
