from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django import forms

from accounts.forms.users import UtcDateTimeInput
from procurement.models import Rfp
from procurement.selectors.requirements import requirements_document
from procurement.services.addenda import AMENDABLE_FIELDS, REASON_MAX_LENGTH
from procurement.services.clarifications import ANSWER_MAX_LENGTH, QUESTION_MAX_LENGTH

_DATETIME_LOCAL = UtcDateTimeInput()


def _textarea(rows: int = 4) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows})


# Re-test terms an addendum form may leave empty: they keep their value.
KEEP_WHEN_EMPTY = (
    "retest_deadline_days",
    "retest_max_attempts",
    "dispute_window_days",
    "update_deposit_days",
)


class ClarificationAskForm(forms.Form):
    question = forms.CharField(
        max_length=QUESTION_MAX_LENGTH,
        widget=_textarea(5),
        help_text="Only the buyer reads it until it is answered; the answer goes "
        "to every invited vendor without naming you.",
    )


class ClarificationAnswerForm(forms.Form):
    answer = forms.CharField(max_length=ANSWER_MAX_LENGTH, widget=_textarea(4))


def _text(**kwargs: Any) -> forms.CharField:
    return forms.CharField(required=False, widget=_textarea(), **kwargs)


class AddendumForm(forms.Form):
    """The amendable conditions, pre-filled with the current values: the buyer
    edits what changes, and ``changes()`` returns only those fields."""

    title = forms.CharField(max_length=200)
    description = _text(help_text="Markdown.")
    questions_deadline = forms.DateTimeField(
        required=False,
        widget=_DATETIME_LOCAL,
        help_text="UTC, as YYYY-MM-DD HH:MM; empty for none.",
    )
    submission_deadline = forms.DateTimeField(
        widget=_DATETIME_LOCAL, help_text="UTC, as YYYY-MM-DD HH:MM."
    )
    min_bids = forms.IntegerField(label="Minimum bids", min_value=1, max_value=20)
    workload_requirements = _text()
    escrow_clause = _text()
    escrow_retention_years = forms.IntegerField(
        label="Escrow retention (years)", min_value=1, max_value=50, required=False
    )
    acceptance_clause = _text()
    retest_clause = _text(label="Re-test clause")
    retest_tolerance_pct = forms.DecimalField(
        label="Re-test tolerance (%)",
        max_digits=5,
        decimal_places=2,
        min_value=Decimal(0),
        max_value=Decimal(100),
    )
    retest_vendor_funded = forms.BooleanField(
        label="Re-tests are vendor-funded", required=False
    )
    retest_deadline_days = forms.IntegerField(
        label="Re-test deadline (days)", min_value=1, max_value=365, required=False
    )
    retest_max_attempts = forms.IntegerField(
        label="Re-test attempts", min_value=1, max_value=10, required=False
    )
    audit_rights_clause = _text()
    dispute_window_days = forms.IntegerField(
        label="Dispute window (days)", min_value=1, max_value=90, required=False
    )
    update_deposit_days = forms.IntegerField(
        label="Update deposit deadline (days)",
        min_value=1,
        max_value=365,
        required=False,
    )
    drift_policy = forms.JSONField(
        label="Drift policy (JSON; empty for the defaults)",
        required=False,
        widget=_textarea(),
    )
    requirements = forms.JSONField(
        label="Requirements document (reprogate.rfp-requirements/v1, JSON)",
        required=False,
        widget=_textarea(12),
        help_text="Edit what changes; the addendum lists each changed place.",
    )
    reason = forms.CharField(
        max_length=REASON_MAX_LENGTH,
        widget=_textarea(3),
        help_text="Every invited vendor reads it with the changes.",
    )

    def __init__(self, *args: Any, rfp: Rfp, **kwargs: Any) -> None:
        self.current_requirements = requirements_document(rfp)
        kwargs.setdefault(
            "initial",
            {
                **{name: getattr(rfp, name) for name in AMENDABLE_FIELDS},
                "requirements": self.current_requirements,
            },
        )
        super().__init__(*args, **kwargs)
        self.rfp = rfp

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name, value in data.items():
            if isinstance(value, str):
                data[name] = value.replace("\r\n", "\n").strip()
        for name in KEEP_WHEN_EMPTY:  # left empty: unchanged
            if data.get(name) is None and name in self.fields:
                data[name] = getattr(self.rfp, name)
        if "drift_policy" in data and data["drift_policy"] is None:
            data["drift_policy"] = {}  # left empty: the defaults
        return data

    def changes(self) -> dict[str, object]:
        """The fields whose value differs from the RFP's as the form shows it
        (deadlines to the minute, text without surrounding white space)."""
        changes = {
            name: self.cleaned_data[name]
            for name in AMENDABLE_FIELDS
            if self.cleaned_data[name] != _as_shown(getattr(self.rfp, name))
        }
        document = self.cleaned_data.get("requirements")
        if (
            document is not None and document != self.current_requirements
        ):  # empty: as is
            changes["requirements"] = document
        return changes


def _as_shown(value: object) -> object:
    if isinstance(value, datetime):
        return value.replace(second=0, microsecond=0)
    if isinstance(value, str):
        return value.replace("\r\n", "\n").strip()
    return value
