from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

UTC_DATETIME_FORMAT = "%Y-%m-%d %H:%M"
ISO_DATE_FORMAT = "%Y-%m-%d"


class UtcDateTimeInput(forms.DateTimeInput):
    """A date and time typed as ISO 8601 in UTC (``2026-12-31 17:00``; a ``T``
    between them and seconds are accepted too). The same on every browser: a
    ``datetime-local`` picker shows the browser's own locale (12-hour US dates)
    and says nothing of the zone, on pages where every time is UTC. The field's
    label or help says "UTC"; the placeholder shows the format."""

    input_type = "text"

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        base = {
            "pattern": r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?",
            "placeholder": "YYYY-MM-DD HH:MM",
            "title": "UTC, as YYYY-MM-DD HH:MM",
            "autocomplete": "off",
            "spellcheck": "false",
            "class": "iso-input",
        }
        super().__init__(attrs={**base, **(attrs or {})}, format=UTC_DATETIME_FORMAT)


class IsoDateInput(forms.DateInput):
    """A date typed as ISO 8601 (``2026-12-31``), whatever the browser's locale."""

    input_type = "text"

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        base = {
            "pattern": r"\d{4}-\d{2}-\d{2}",
            "placeholder": "YYYY-MM-DD",
            "title": "a date, as YYYY-MM-DD",
            "autocomplete": "off",
            "spellcheck": "false",
            "class": "iso-input",
        }
        super().__init__(attrs={**base, **(attrs or {})}, format=ISO_DATE_FORMAT)


class AuditFilterForm(forms.Form):
    rfp = forms.ChoiceField(required=False, label="RFP")
    action = forms.CharField(
        required=False, max_length=100, help_text="e.g. rfp or rfp.transitioned"
    )
    actor = forms.CharField(required=False, max_length=150)
    target_type = forms.CharField(required=False, max_length=100)
    since = forms.DateField(required=False, widget=IsoDateInput(), label="Since (UTC)")
    until = forms.DateField(required=False, widget=IsoDateInput(), label="Until (UTC)")

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
