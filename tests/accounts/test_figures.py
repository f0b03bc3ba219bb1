"""Measured figures as people read them: four significant figures, thousands
separated, the unit after, the exact value on hover; intervals with enough
figures to tell their ends apart; byte counts in binary units."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from accounts.templatetags.figures import bytes_iec, fig, fig_ci, humane, iec


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        (4625.4172, "4,625"),
        (0.934127, "0.9341"),
        (176.234, "176.2"),
        (1_234_567, "1,235,000"),
        (99.996, "100"),
        (12, "12"),
        (-3.5, "-3.5"),
        (0, "0"),
    ],
)
def test_humane_keeps_four_significant_figures(number: float, shown: str) -> None:
    assert humane(number) == shown


def test_fig_shows_the_rounded_value_with_its_unit_and_the_exact_one_on_hover() -> None:
    assert fig(4625.4172, "ms") == (
        '<span class="fig" title="4625.4172 ms">4,625 ms</span>'
    )
    assert fig(Decimal("384995.00"), "EUR") == (
        '<span class="fig" title="384995.00 EUR">385,000 EUR</span>'
    )
    assert fig(28.571, "%") == '<span class="fig" title="28.571%">28.57%</span>'


@pytest.mark.parametrize("value", [None, ""])
def test_fig_shows_a_dash_for_nothing(value: Any) -> None:
    assert fig(value, "ms") == "\N{EM DASH}"


def test_fig_escapes_what_it_does_not_read_as_a_number() -> None:
    assert fig("<b>", "ms") == "<b>"  # autoescaped by the template as any string
    assert "<b>" not in str(fig(1.5, "<b>"))


def test_an_interval_gets_the_figures_that_tell_its_ends_apart() -> None:
    close = fig_ci(4625.4099, 4625.4853, "ms")  # both 4,625 at four figures
    apart = fig_ci(4625.4099, 4625.5253, "ms")

    assert 'title="[4625.4099, 4625.4853] ms"' in close
    assert ">4,625.4\N{EN DASH}4,625.5 ms<" in close
    assert ">4,625\N{EN DASH}4,626 ms<" in apart


def test_byte_counts_are_shown_in_binary_units() -> None:
    assert iec(4_294_967_296) == "4 GiB"
    assert iec(1536) == "1.5 KiB"
    assert iec(100) == "100 bytes"
    assert bytes_iec(67_108_864) == (
        '<span class="fig" title="67,108,864 bytes">64 MiB</span>'
    )
