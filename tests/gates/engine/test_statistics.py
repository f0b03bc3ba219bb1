"""The statistics: the bootstrap draws the median's exact resampling
distribution, from the seed alone; medians are exact decimals."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import numpy as np

from gates.lib.engine.statistics import (
    RESAMPLES,
    bootstrap_median_ci,
    cv_pct,
    dec,
    median,
    resample_median_ranks,
)


def test_resampled_medians_follow_resampling_with_replacement() -> None:
    """n = 3: the median of a resample is the smallest value when two or three
    of the draws are it: 3·(1/3)²·(2/3) + (1/3)³ = 7/27; the middle one 13/27."""
    draws: Counter[int] = Counter()
    for seed in range(10):
        draws.update(resample_median_ranks(3, seed)[:, 0].tolist())
    total = RESAMPLES * 10

    assert abs(draws[0] / total - 7 / 27) < 0.01
    assert abs(draws[1] / total - 13 / 27) < 0.01
    assert abs(draws[2] / total - 7 / 27) < 0.01


def test_even_counts_draw_both_middle_ranks_like_resampling() -> None:
    ranks = resample_median_ranks(4, 7)
    rng = np.random.default_rng(0)
    classic = np.sort(rng.integers(0, 4, (40_000, 4)), axis=1)[:, 1:3]
    ours = Counter(map(tuple, ranks.tolist()))
    theirs = Counter(map(tuple, classic.tolist()))

    assert (ranks[:, 0] <= ranks[:, 1]).all()
    for pair, count in theirs.items():
        assert abs(ours[pair] / RESAMPLES - count / 40_000) < 0.03, pair


def test_the_interval_depends_on_the_seed_only() -> None:
    values = sorted(dec(100 + (i * 7 % 13) * 0.5) for i in range(25))

    assert bootstrap_median_ci(values, 11) == bootstrap_median_ci(values, 11)
    lo, hi = bootstrap_median_ci(values, 11)
    assert values[0] <= lo <= median(values) <= hi <= values[-1]


def test_all_equal_values_give_a_point_interval() -> None:
    assert bootstrap_median_ci([Decimal("5.5")] * 4, 1) == (Decimal("5.5"),) * 2


def test_even_medians_are_exact_decimals() -> None:
    assert median([dec(0.1), dec(0.2)]) == Decimal("0.15")
    assert median([dec(1), dec(2), dec(4)]) == Decimal(2)


def test_cv_is_sample_stdev_over_mean() -> None:
    assert cv_pct([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == (
        (32 / 7) ** 0.5 / 5 * 100
    )
    assert cv_pct([3.0]) is None
    assert cv_pct([-1.0, 1.0]) is None
