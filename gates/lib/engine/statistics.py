"""The statistics of a criterion: median, sample CV, and the seeded bootstrap
percentile interval of the median (formulas in ``gates.lib.engine``'s docstring).

Medians and interval ends are exact decimals (the mean of the two middle values
of an even count is computed in ``Decimal``), so a value that sits exactly on a
limit compares as equal, never off by a binary rounding error.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Final

import numpy as np

RESAMPLES: Final = 2000
CV_CAP: Final = 1e12
CI_LEVEL: Final = 0.95
LO_RANK: Final = -(-RESAMPLES * 25 // 1000)  # ⌈B·0.025⌉ = 50
HI_RANK: Final = -(-RESAMPLES * 975 // 1000)  # ⌈B·0.975⌉ = 1950


def dec(value: float | int) -> Decimal:
    """The decimal a JSON number means: Python's shortest text of the double."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def criterion_seed(plan_sha256: str, results_sha256: str, gate: str, cid: str) -> int:
    """The first 4 bytes (big-endian) of SHA-256 over
    ``plan_sha256 \\n results_sha256 \\n gate name \\n criterion id`` (UTF-8)."""
    text = "\n".join((plan_sha256, results_sha256, gate, cid)).encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "big")


def median(sorted_values: Sequence[Decimal]) -> Decimal:
    n = len(sorted_values)
    mid = n // 2
    if n % 2:
        return sorted_values[mid]
    return (sorted_values[mid - 1] + sorted_values[mid]) / 2


def cv_pct(values: Sequence[float]) -> float | None:
    """Sample standard deviation / mean x 100 (``math.fsum``: exactly rounded
    sums, so the same on every machine), at most ``CV_CAP`` (a mean near 0);
    ``None`` for one value or a zero mean."""
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    if mean == 0:
        return None
    var = math.fsum((v - mean) * (v - mean) for v in values) / (n - 1)
    cv = math.sqrt(var) / abs(mean) * 100
    return cv if cv < CV_CAP else CV_CAP


def resample_median_ranks(n: int, seed: int) -> np.ndarray:
    """For each of ``RESAMPLES`` bootstrap resamples of n sorted values, the
    0-based ranks (lo, hi) of its median's order statistics (equal for odd n).

    A resample's k-th smallest value is the sorted value at rank ⌊n·U(k)⌋, U(k)
    the k-th smallest of n uniforms, U(k) ~ Beta(k, n-k+1): drawing it directly
    gives the bootstrap median's exact distribution in O(resamples), whatever n.
    With ``rng = numpy.random.default_rng(seed)``: odd n, k = (n+1)/2,
    ``u = rng.beta(k, n-k+1, RESAMPLES)``; even n, k = n/2, ``u = rng.beta(k,
    n-k+1, RESAMPLES)`` then ``u2 = u + (1-u)·rng.beta(1, n-k, RESAMPLES)`` (the
    smallest of the n-k uniforms above u). Ranks are ``min(⌊n·u⌋, n-1)``.
    """
    rng = np.random.default_rng(seed)
    k = (n + 1) // 2 if n % 2 else n // 2
    u = rng.beta(k, n - k + 1, RESAMPLES)
    lo = np.minimum(np.floor(n * u), n - 1).astype(np.int64)
    if n % 2:
        return np.stack([lo, lo], axis=1)
    u2 = u + (1 - u) * rng.beta(1, n - k, RESAMPLES)
    hi = np.minimum(np.floor(n * u2), n - 1).astype(np.int64)
    return np.stack([lo, np.maximum(hi, lo)], axis=1)


def bootstrap_median_ci(
    sorted_values: Sequence[Decimal], seed: int
) -> tuple[Decimal, Decimal]:
    """The bootstrap percentile interval of the median at ``CI_LEVEL``: the
    resample medians (``resample_median_ranks``; the mean of the two middle
    values for even n, in ``Decimal``) ordered by value (ties: draw order), and
    the ones of rank ⌈B·0.025⌉ = 50 and ⌈B·0.975⌉ = 1950 (1-based, B = 2000).
    All values equal: ``(v, v)``.
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no values")
    if sorted_values[0] == sorted_values[-1]:
        return sorted_values[0], sorted_values[0]
    xs = np.array([float(v) for v in sorted_values])
    ranks = resample_median_ranks(n, seed)
    # the pair's sum orders the medians (values are sorted, so it is monotone)
    order = np.argsort(xs[ranks[:, 0]] + xs[ranks[:, 1]], kind="stable")
    ends = []
    for rank in (LO_RANK, HI_RANK):
        i, j = (int(r) for r in ranks[order[rank - 1]])
        ends.append(median([sorted_values[i], sorted_values[j]]))
    return ends[0], ends[1]
