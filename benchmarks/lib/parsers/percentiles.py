"""Percentiles recomputed from raw data, and the check against the tool's own.

- ``linear``: numpy's default ``percentile`` method (linear interpolation
  between the two nearest order statistics), which vLLM and the MLPerf
  KV-cache benchmark use; pure Python over a sorted list.
- ``fio_bins``: fio's own algorithm (``stat.c: calc_clat_percentiles``) over a
  json+ ``bins`` histogram: walk the bins in value order, and the p-th
  percentile is the first bin where the running count reaches ``p/100 * N``.
  The comparison is exact (fractions), as fio's ``long double`` is in practice,
  so a correct fio file gives back exactly fio's figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction


def linear(sorted_values: Sequence[float], p: float) -> float:
    """numpy.percentile(values, p) (method "linear") of an ascending list."""
    if not sorted_values:
        raise ValueError("no values")
    position = (len(sorted_values) - 1) * p / 100.0
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    a, b = sorted_values[low], sorted_values[high]
    return a + (b - a) * fraction


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def pstdev(values: Sequence[float]) -> float:
    """Population standard deviation (numpy.std's default, ddof=0)."""
    centre = mean(values)
    return math.sqrt(math.fsum((v - centre) ** 2 for v in values) / len(values))


def fio_bins(
    bins: Iterable[tuple[int, int]], percentiles: Sequence[float]
) -> dict[float, int]:
    """fio's percentile of each p over ``(bin value, count)`` pairs."""
    ordered = sorted(bins)
    total = sum(count for _, count in ordered)
    result: dict[float, int] = {}
    if total <= 0:
        return result
    wanted = sorted(set(percentiles))
    running, index = 0, 0
    for value, count in ordered:
        running += count
        while index < len(wanted) and running >= Fraction(wanted[index]) / 100 * total:
            result[wanted[index]] = value
            index += 1
        if index == len(wanted):
            break
    return result


def disagrees(tool: float, recomputed: float, *, rel_tol: float) -> bool:
    return not math.isclose(tool, recomputed, rel_tol=rel_tol, abs_tol=1e-9)
