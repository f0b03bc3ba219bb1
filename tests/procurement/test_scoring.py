"""Consensus scoring against hand-computed examples (pure functions, no database)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from decimal import Decimal

from procurement.lib.scoring import (
    DISAGREEMENT_SPREAD,
    ScoreValue,
    WeightedCriterion,
    cell_consensus,
    competition_ranks,
    consensus,
    weighted_total,
)

REPRO = WeightedCriterion("repro", "Reproducibility", 60)
TCO = WeightedCriterion("tco", "TCO", 40)


def _scores(bid: str, criterion: str, *values: int) -> list[ScoreValue]:
    return [ScoreValue(bid, criterion, v) for v in values]


def test_cell_mean_spread_and_population_stdev() -> None:
    cell = cell_consensus("repro", [8, 4, 6])

    # mean 18/3 = 6; spread 8 - 4 = 4; sigma = sqrt((4 + 4 + 0) / 3) = 1.633
    assert cell.mean == Decimal("6.00")
    assert cell.spread == 4
    assert cell.stdev == Decimal("1.63")
    assert cell.count == 3


def test_cell_rounds_the_mean_half_up() -> None:
    cell = cell_consensus("repro", [7, 8, 8, 8, 8, 8, 8, 8])  # 63 / 8 = 7.875

    assert cell.mean == Decimal("7.88")
    assert cell.stdev == Decimal("0.33")  # sqrt((0.765625 + 7 x 0.015625) / 8)


def test_disagreement_is_flagged_from_the_threshold_on() -> None:
    assert DISAGREEMENT_SPREAD == 4
    assert not cell_consensus("c", [5, 8]).disagreement  # spread 3
    assert cell_consensus("c", [4, 8]).disagreement  # spread 4
    assert cell_consensus("c", [0, 10]).disagreement


def test_an_unscored_cell_is_missing_not_zero() -> None:
    cell = cell_consensus("tco", [])

    assert cell.missing
    assert (cell.mean, cell.spread, cell.stdev) == (None, None, None)
    assert not cell.disagreement


def test_weighted_total_by_hand() -> None:
    values: Mapping[Hashable, Sequence[int]] = {"repro": [8, 4, 6], "tco": [7, 8]}

    # 6.0 / 10 x 60 + 7.5 / 10 x 40 = 36 + 30
    assert weighted_total([REPRO, TCO], values) == Decimal("66.00")


def test_weighted_total_uses_exact_means_not_rounded_ones() -> None:
    third = WeightedCriterion("c", "C", 30)

    # mean 23/3 = 7.666..; 23/3 / 10 x 30 = 23.00 (rounded mean 7.67 would give 23.01)
    assert weighted_total([third], {"c": [7, 8, 8]}) == Decimal("23.00")


def test_competition_ranks_share_ties_and_skip() -> None:
    ranks = competition_ranks(
        [("a", Decimal(80)), ("b", Decimal(70)), ("c", Decimal(80)), ("d", Decimal(60))]
    )

    assert ranks == {"a": 1, "c": 1, "b": 3, "d": 4}


def test_consensus_ranks_tied_bids_together() -> None:
    scores = [
        *_scores("acme", "repro", 8, 4),  # mean 6 -> 36
        *_scores("acme", "tco", 7),  # 7 -> 28: total 64
        *_scores("bolt", "repro", 6),  # 36
        *_scores("bolt", "tco", 7),  # 28: total 64
        *_scores("core", "repro", 9),  # 54
        *_scores("core", "tco", 9),  # 36: total 90
    ]

    rows = consensus(["acme", "bolt", "core"], [REPRO, TCO], scores)

    assert [(r.bid, r.rank, r.weighted_total) for r in rows] == [
        ("core", 1, Decimal("90.00")),
        ("acme", 2, Decimal("64.00")),
        ("bolt", 2, Decimal("64.00")),
    ]


def test_an_incomplete_bid_ranks_after_every_complete_one() -> None:
    scores = [
        *_scores("acme", "repro", 5),
        *_scores("acme", "tco", 5),  # complete: 30 + 20 = 50
        *_scores("bolt", "repro", 10),  # no TCO score: partial 60
    ]

    rows = consensus(["acme", "bolt"], [REPRO, TCO], scores)

    assert [(r.bid, r.rank, r.complete) for r in rows] == [
        ("acme", 1, True),
        ("bolt", 2, False),
    ]
    assert rows[1].weighted_total == Decimal("60.00")
    assert rows[1].cells[1].missing


def test_incomplete_bids_share_ranks_among_themselves() -> None:
    scores = [
        *_scores("acme", "repro", 5),
        *_scores("acme", "tco", 5),
        *_scores("bolt", "tco", 5),  # partial 20
        *_scores("core", "tco", 5),  # partial 20
    ]

    rows = consensus(["acme", "bolt", "core", "dyna"], [REPRO, TCO], scores)

    assert {r.bid: r.rank for r in rows} == {"acme": 1, "bolt": 2, "core": 2, "dyna": 4}
    assert rows[-1].weighted_total == Decimal("0.00")  # dyna: nothing scored


def test_consensus_keeps_the_cells_in_criteria_order() -> None:
    scores = [*_scores("acme", "tco", 2, 9), *_scores("acme", "repro", 7)]

    (row,) = consensus(["acme"], [REPRO, TCO], scores)

    assert [c.criterion for c in row.cells] == ["repro", "tco"]
    assert row.cells[1].values == (2, 9)
    assert row.cells[1].disagreement
