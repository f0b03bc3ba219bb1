"""Measured figures as people read them, on every page (gate page, board,
comparison, run page): four significant figures with thousands separators and
the unit after (``4,625 ms``, ``0.9341``, ``1,235,000 IOPS``), the exact value
on hover (a ``title``). The documents (JSON, CSV, PDF) keep the exact values.

- ``{{ value|fig:"ms" }}``: ``<span class="fig" title="4625.4172 ms">4,625 ms</span>``
- ``{% fig_ci low high "ms" %}``: an interval, with as many figures as it takes
  to tell its ends apart (``4,625.41`` to ``4,625.53 ms``, joined by an en dash)
- ``{{ value|bytes_iec }}``: a byte count in KiB, MiB, GiB (``4 GiB``), exact
  bytes on hover
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

FIGURES = 4
DASH = "\N{EM DASH}"
EN_DASH = "\N{EN DASH}"
IEC_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def humane(number: float, figures: int = FIGURES) -> str:
    """``number`` rounded to ``figures`` significant figures, thousands
    separated, no trailing zeros: 4625.4172 -> "4,625", 0.934127 -> "0.9341"."""
    if number == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(number)))
    decimals = max(figures - 1 - magnitude, 0)
    rounded = round(number, figures - 1 - magnitude)
    text = f"{rounded:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in {"", "-0"} else text


def exact(value: Any) -> str:
    """The value as stored (a float's shortest repr, a Decimal's digits)."""
    if isinstance(value, Decimal | int):
        return str(value)
    number = _number(value)
    return str(value) if number is None else repr(number)


def _with_unit(text: str, unit: str) -> str:
    if not unit:
        return text
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


@register.filter
def fig(value: Any, unit: str = "") -> SafeString | str:
    """A figure for people, with its exact value in ``title``; a dash for none."""
    number = _number(value)
    if number is None:
        return DASH if value is None or value == "" else str(value)
    return format_html(
        '<span class="fig" title="{}">{}</span>',
        _with_unit(exact(value), unit),
        _with_unit(humane(number), unit),
    )


@register.simple_tag
def fig_ci(low: Any, high: Any, unit: str = "") -> SafeString | str:
    """An interval ``low`` en dash ``high unit``, each end with enough figures to differ
    from the other (up to seven), the exact ends on hover."""
    a, b = _number(low), _number(high)
    if a is None or b is None:
        return DASH
    figures = FIGURES
    while figures < 7 and a != b and humane(a, figures) == humane(b, figures):
        figures += 1
    return format_html(
        '<span class="fig" title="{}">{}</span>',
        _with_unit(f"[{exact(low)}, {exact(high)}]", unit),
        _with_unit(f"{humane(a, figures)}{EN_DASH}{humane(b, figures)}", unit),
    )


def iec(count: int) -> str:
    """A byte count in the largest binary unit it reaches: 4294967296 -> "4 GiB"."""
    size, unit = float(count), IEC_UNITS[0]
    for unit in IEC_UNITS:
        if abs(size) < 1024 or unit == IEC_UNITS[-1]:
            break
        size /= 1024
    if unit == IEC_UNITS[0]:
        return f"{count:,} bytes"
    return f"{humane(size, 3)} {unit}"


@register.filter
def bytes_iec(value: Any) -> SafeString | str:
    number = _number(value)
    if number is None:
        return DASH if value is None or value == "" else str(value)
    count = int(number)
    return format_html(
        '<span class="fig" title="{} bytes">{}</span>', f"{count:,}", iec(count)
    )
