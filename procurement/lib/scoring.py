"""Consensus scoring: pure functions over submitted scores, no ORM.

The rules, as the evaluation pages and exports explain them:

- Consensus per bid x criterion is taken over *submitted* score sheets only: the
  mean, the spread (max - min) and the population standard deviation. A spread of
  ``DISAGREEMENT_SPREAD`` points or more flags a large disagreement.
- Weighted total per bid = Σ (mean / 10 x weight) over the criteria, 0-100 when the
  weights sum to 100. It is computed from exact means and rounded to 0.01 before
  ranking, so that bids shown with the same total share a rank.
- A bid is *complete* when every criterion has at least one submitted score. An
  incomplete bid's total counts only the criteria that were scored; it is flagged
  and ranked after every complete bid, however high its partial total.
- Ranks are standard competition ranks: equal totals share a rank and the next rank
  skips (1, 1, 3).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Final

DISAGREEMENT_SPREAD: Final = 4
SCORE_MIN: Final = 0
SCORE_MAX: Final = 10
CENT: Final = Decimal("0.01")


@dataclass(frozen=True)
class WeightedCriterion:
    key: Hashable
    name: str
    weight: int


@dataclass(frozen=True)
class ScoreValue:
    """One submitted score of one evaluator."""

    bid: Hashable
    criterion: Hashable
    value: int


@dataclass(frozen=True)
class CellConsensus:
    """What the panel thinks of one bid on one criterion."""

    criterion: Hashable
    values: tuple[int, ...]
    mean: Decimal | None
    spread: int | None
    stdev: Decimal | None

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def missing(self) -> bool:
        return not self.values

    @property
    def disagreement(self) -> bool:
        return self.spread is not None and self.spread >= DISAGREEMENT_SPREAD


@dataclass(frozen=True)
class BidConsensus:
    bid: Hashable
    cells: tuple[CellConsensus, ...]  # in the order of the criteria given
    weighted_total: Decimal
    complete: bool
    rank: int


def _decimal(value: Fraction) -> Decimal:
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return exact.quantize(CENT, rounding=ROUND_HALF_UP)


def _exact_mean(values: Sequence[int]) -> Fraction:
    return Fraction(sum(values), len(values))


def cell_consensus(criterion: Hashable, values: Sequence[int]) -> CellConsensus:
    """Mean and spreads of one cell, each rounded to 0.01; ``None`` when unscored."""
    if not values:
        return CellConsensus(criterion, (), None, None, None)
    mean = _exact_mean(values)
    variance = sum(((Fraction(v) - mean) ** 2 for v in values), Fraction(0)) / len(
        values
    )
    stdev = (Decimal(variance.numerator) / Decimal(variance.denominator)).sqrt()
    return CellConsensus(
        criterion=criterion,
        values=tuple(values),
        mean=_decimal(mean),
        spread=max(values) - min(values),
        stdev=stdev.quantize(CENT, rounding=ROUND_HALF_UP),
    )


def weighted_total(
    criteria: Sequence[WeightedCriterion], values: Mapping[Hashable, Sequence[int]]
) -> Decimal:
    """Σ mean / 10 x weight over the criteria that have scores, rounded to 0.01."""
    total = sum(
        (
            _exact_mean(values[c.key]) * c.weight / SCORE_MAX
            for c in criteria
            if values.get(c.key)
        ),
        Fraction(0),
    )
    return _decimal(total)


def competition_ranks(
    totals: Sequence[tuple[Hashable, Decimal]],
) -> dict[Hashable, int]:
    """Rank by total, highest first; equal totals share a rank (1, 1, 3)."""
    ranks: dict[Hashable, int] = {}
    rank, previous = 0, None
    for position, (key, total) in enumerate(
        sorted(totals, key=lambda item: item[1], reverse=True), start=1
    ):
        if total != previous:
            rank, previous = position, total
        ranks[key] = rank
    return ranks


def consensus(
    bids: Sequence[Hashable],
    criteria: Sequence[WeightedCriterion],
    scores: Iterable[ScoreValue],
) -> list[BidConsensus]:
    """Every bid's consensus, best first: complete bids, then incomplete ones."""
    by_cell: dict[Hashable, dict[Hashable, list[int]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for score in scores:
        by_cell[score.bid][score.criterion].append(score.value)
    totals = {bid: weighted_total(criteria, by_cell[bid]) for bid in bids}
    complete = {bid for bid in bids if all(by_cell[bid][c.key] for c in criteria)}
    ranks = competition_ranks([(b, totals[b]) for b in bids if b in complete])
    behind = competition_ranks([(b, totals[b]) for b in bids if b not in complete])
    ranks |= {bid: rank + len(complete) for bid, rank in behind.items()}
    result = [
        BidConsensus(
            bid=bid,
            cells=tuple(cell_consensus(c.key, by_cell[bid][c.key]) for c in criteria),
            weighted_total=totals[bid],
            complete=bid in complete,
            rank=ranks[bid],
        )
        for bid in bids
    ]
    return sorted(result, key=lambda row: row.rank)
