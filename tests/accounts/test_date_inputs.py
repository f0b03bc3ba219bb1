"""Dates and times are typed as ISO 8601 in UTC on every form, whatever the
browser's locale: a text input with the format as placeholder and pattern (a
``datetime-local`` picker shows US 12-hour dates to a US browser, and no zone)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django import forms

from accounts.forms.users import AuditFilterForm, IsoDateInput, UtcDateTimeInput
from artifacts.forms.escrow import RetentionForm
from procurement.forms.rfps import RfpBasicsForm, RfpCreateForm


class _When(forms.Form):
    at = forms.DateTimeField(widget=UtcDateTimeInput())


@pytest.mark.parametrize("typed", ["2026-12-31 17:05", "2026-12-31T17:05"])
def test_a_utc_time_is_read_from_iso_text(typed: str) -> None:
    form = _When(data={"at": typed})

    assert form.is_valid(), form.errors
    assert form.cleaned_data["at"] == datetime(2026, 12, 31, 17, 5, tzinfo=UTC)


@pytest.mark.parametrize("typed", ["12/31/2026 5:05 PM", "31.12.2026 17:05", "soon"])
def test_a_locale_formatted_time_is_refused(typed: str) -> None:
    assert not _When(data={"at": typed}).is_valid()


def test_the_input_is_text_with_the_format_shown_never_a_locale_picker() -> None:
    html = str(_When(initial={"at": datetime(2026, 1, 2, 3, 4, tzinfo=UTC)})["at"])

    assert 'type="text"' in html
    assert 'placeholder="YYYY-MM-DD HH:MM"' in html
    assert 'value="2026-01-02 03:04"' in html
    assert "datetime-local" not in html


def test_every_date_field_of_the_forms_uses_an_iso_input() -> None:
    fields = [
        *AuditFilterForm().fields.values(),
        *RetentionForm().fields.values(),
        *RfpBasicsForm.base_fields.values(),
        *RfpCreateForm.base_fields.values(),
    ]
    dated = [f for f in fields if isinstance(f, forms.DateField | forms.DateTimeField)]

    assert dated
    for field in dated:
        assert isinstance(field.widget, IsoDateInput | UtcDateTimeInput), field


def test_an_iso_date_filter_reads_the_date() -> None:
    form = AuditFilterForm(data={"since": "2026-03-01", "until": "2026-03-31"})

    assert form.is_valid(), form.errors
    assert form.cleaned_data["since"] == date(2026, 3, 1)
