"""The log-linear latency histogram the per-I/O lines are folded into."""

from __future__ import annotations

from typing import Final

import numpy as np

SUB_BITS: Final = 12
BUCKETS: Final = 64 << SUB_BITS
DIRECTIONS: Final = ("read", "write", "trim")


class LatencyHistogram:
    """Per-direction log-linear histograms plus exact count, sum, min, max.
    The directions' counts are interleaved (bucket * 3 + direction) so that a
    block's counts, whatever their directions, span the buckets it reached."""

    def __init__(self) -> None:
        self.counts = np.zeros(len(DIRECTIONS) * BUCKETS, dtype=np.int64)
        self.total = [0] * len(DIRECTIONS)
        self.sums = [0.0] * len(DIRECTIONS)
        self.mins = [0] * len(DIRECTIONS)
        self.maxs = [0] * len(DIRECTIONS)

    def add(self, values: np.ndarray, directions: np.ndarray) -> None:
        _, exponent = np.frexp(values.astype(np.float64))
        shift = np.maximum(exponent - SUB_BITS, 0)
        bucket = (shift << SUB_BITS) + (values >> shift)
        added = np.bincount(bucket * len(DIRECTIONS) + directions)
        self.counts[: added.size] += added
        counts = np.bincount(directions, minlength=len(DIRECTIONS))
        sums = np.bincount(directions, weights=values, minlength=len(DIRECTIONS))
        lows = np.full(len(DIRECTIONS), np.iinfo(np.int64).max, dtype=np.int64)
        highs = np.full(len(DIRECTIONS), -1, dtype=np.int64)
        np.minimum.at(lows, directions, values)
        np.maximum.at(highs, directions, values)
        for d in np.flatnonzero(counts):
            first = self.total[d] == 0
            self.mins[d] = int(lows[d]) if first else min(self.mins[d], int(lows[d]))
            self.maxs[d] = int(highs[d]) if first else max(self.maxs[d], int(highs[d]))
            self.total[d] += int(counts[d])
            self.sums[d] += float(sums[d])

    def percentiles(
        self, direction: int, wanted: tuple[float, ...]
    ) -> dict[float, float]:
        n = self.total[direction]
        counts = self.counts[direction :: len(DIRECTIONS)]
        cumulative = np.cumsum(counts)
        result = {}
        for p in wanted:
            position = (n - 1) * p / 100.0
            low = int(np.floor(position))
            high = min(low + 1, n - 1)
            a, b = (
                self._order_stat(cumulative, low, direction),
                self._order_stat(cumulative, high, direction),
            )
            result[p] = a + (b - a) * (position - low)
        return result

    def _order_stat(self, cumulative: np.ndarray, k: int, direction: int) -> float:
        bucket = int(np.searchsorted(cumulative, k + 1))
        shift, sub = bucket >> SUB_BITS, bucket & ((1 << SUB_BITS) - 1)
        # the bucket holds [sub << shift, (sub + 1) << shift); its midpoint:
        value = ((sub << shift) + ((sub + 1) << shift) - 1) / 2 if shift else sub
        return min(max(value, self.mins[direction]), self.maxs[direction])
