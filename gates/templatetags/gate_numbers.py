"""``{{ value|num }}``: a measured number as people read it on the gate pages —
up to four decimals without trailing zeros (176.2, 171, 0.93), thousands
separated from 100,000 on (1,200,000 IOPS), a dash for none."""

from __future__ import annotations

import math
from typing import Any

from django import template

register = template.Library()


@register.filter
def num(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return str(number)
    if abs(number) >= 1e5:
        return f"{number:,.0f}"
    text = f"{number:.4f}".rstrip("0").rstrip(".")
    return "0" if text in {"", "-0"} else text
