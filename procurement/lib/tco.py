"""Total cost of ownership: a pure computation from a bid's cost-model inputs and the
buyer's formula, explained line by line. No ORM, Decimal arithmetic throughout.

Rounding: every money line is rounded to the cent (half up) and the total per year is
the sum of the rounded lines, so the explanation adds up exactly as shown. Tokens per
year are rounded to whole tokens; the cost per million tokens to 0.0001 of the
currency, computed from the rounded total and tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

CENT: Final = Decimal("0.01")
TIMES: Final = "\N{MULTIPLICATION SIGN}"
DIVIDED: Final = "\N{DIVISION SIGN}"
PER_MILLION_PRECISION: Final = Decimal("0.0001")
SECONDS_PER_HOUR: Final = 3600
MILLION: Final = Decimal(1_000_000)


@dataclass(frozen=True)
class CostInputs:
    """What a vendor states about its offer (``CostModelInput``)."""

    currency: str
    hardware_cost: Decimal
    amortisation_years: Decimal
    power_draw_kw: Decimal
    energy_price_per_kwh: Decimal
    rack_units: int
    rack_unit_cost_per_year: Decimal
    support_cost_per_year: Decimal
    delivered_tokens_per_s: Decimal

    @classmethod
    def from_object(cls, source: Any) -> CostInputs:
        """From anything with these attributes, e.g. a ``CostModelInput`` row."""
        return cls(**{name: getattr(source, name) for name in COST_INPUT_FIELDS})


# The cost inputs, in the order the bid form, the API and the exports show them:
# the one list (``CostModelInput`` has these fields; a test holds it to them).
COST_INPUT_FIELDS: Final = tuple(f.name for f in fields(CostInputs))


@dataclass(frozen=True)
class FormulaParams:
    """The buyer's side of the formula (one ``TcoFormula`` version)."""

    version: int
    pue: Decimal
    utilisation: Decimal
    hours_per_year: int


@dataclass(frozen=True)
class TcoInput:
    name: str
    value: Decimal | int
    unit: str

    @property
    def display(self) -> str:
        return f"{self.value:,}"


@dataclass(frozen=True)
class TcoLine:
    key: str
    label: str
    formula: str
    inputs: tuple[TcoInput, ...]
    value: Decimal | None  # None: not computable (e.g. no tokens served)
    unit: str

    @property
    def display(self) -> str:
        """The value with thousands separators, at its rounding precision."""
        return "" if self.value is None else f"{self.value:,}"


@dataclass(frozen=True)
class TcoResult:
    currency: str
    formula_version: int
    lines: tuple[TcoLine, ...]
    total_per_year: Decimal
    tokens_per_year: Decimal
    cost_per_million_tokens: Decimal | None


def _product(*names: str) -> str:
    return f" {TIMES} ".join(names)


def _cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def _money_lines(c: CostInputs, f: FormulaParams) -> list[TcoLine]:
    money = f"{c.currency}/year"
    energy = c.power_draw_kw * f.pue * f.hours_per_year * c.energy_price_per_kwh
    return [
        TcoLine(
            "hardware_per_year",
            "Amortised hardware",
            f"hardware_cost {DIVIDED} amortisation_years",
            (
                TcoInput("hardware_cost", c.hardware_cost, c.currency),
                TcoInput("amortisation_years", c.amortisation_years, "years"),
            ),
            _cents(c.hardware_cost / c.amortisation_years),
            money,
        ),
        TcoLine(
            "energy_per_year",
            "Energy",
            _product("power_draw_kw", "pue", "hours_per_year", "energy_price_per_kwh"),
            (
                TcoInput("power_draw_kw", c.power_draw_kw, "kW"),
                TcoInput("pue", f.pue, "formula"),
                TcoInput("hours_per_year", f.hours_per_year, "h, formula"),
                TcoInput("energy_price_per_kwh", c.energy_price_per_kwh, "per kWh"),
            ),
            _cents(energy),
            money,
        ),
        TcoLine(
            "rack_per_year",
            "Rack space",
            _product("rack_units", "rack_unit_cost_per_year"),
            (
                TcoInput("rack_units", c.rack_units, "U"),
                TcoInput("rack_unit_cost_per_year", c.rack_unit_cost_per_year, money),
            ),
            _cents(c.rack_units * c.rack_unit_cost_per_year),
            money,
        ),
        TcoLine(
            "support_per_year",
            "Support",
            "support_cost_per_year",
            (TcoInput("support_cost_per_year", c.support_cost_per_year, money),),
            _cents(c.support_cost_per_year),
            money,
        ),
    ]


def _token_lines(
    c: CostInputs, f: FormulaParams, total: Decimal
) -> tuple[TcoLine, TcoLine]:
    tokens = (
        c.delivered_tokens_per_s * f.utilisation * f.hours_per_year * SECONDS_PER_HOUR
    ).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    per_million = (
        (total / (tokens / MILLION)).quantize(
            PER_MILLION_PRECISION, rounding=ROUND_HALF_UP
        )
        if tokens > 0
        else None
    )
    return (
        TcoLine(
            "tokens_per_year",
            "Tokens served per year",
            _product("delivered_tokens_per_s", "utilisation", "hours_per_year", "3600"),
            (
                TcoInput("delivered_tokens_per_s", c.delivered_tokens_per_s, "tok/s"),
                TcoInput("utilisation", f.utilisation, "formula"),
                TcoInput("hours_per_year", f.hours_per_year, "h, formula"),
            ),
            tokens,
            "tokens/year",
        ),
        TcoLine(
            "cost_per_million_tokens",
            "Cost per million tokens",
            f"total_per_year {DIVIDED} (tokens_per_year {DIVIDED} 1,000,000)",
            (
                TcoInput("total_per_year", total, f"{c.currency}/year"),
                TcoInput("tokens_per_year", tokens, "tokens/year"),
            ),
            per_million,
            f"{c.currency}/Mtok",
        ),
    )


def tco_compute(inputs: CostInputs, formula: FormulaParams) -> TcoResult:
    """Cost per year and per million tokens, each line with its formula and inputs."""
    money = _money_lines(inputs, formula)
    total = sum((line.value or Decimal(0) for line in money), Decimal(0))
    total_line = TcoLine(
        "total_per_year",
        "Total cost per year",
        "hardware + energy + rack space + support",
        tuple(
            TcoInput(line.key, line.value or Decimal(0), line.unit) for line in money
        ),
        total,
        f"{inputs.currency}/year",
    )
    tokens, per_million = _token_lines(inputs, formula, total)
    return TcoResult(
        currency=inputs.currency,
        formula_version=formula.version,
        lines=(*money, total_line, tokens, per_million),
        total_per_year=total,
        tokens_per_year=tokens.value or Decimal(0),
        cost_per_million_tokens=per_million.value,
    )
