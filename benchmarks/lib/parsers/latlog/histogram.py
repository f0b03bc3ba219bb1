"""The log-linear latency histogram the per-I/O lines are folded into."""

from __future__ import annotations

from typing import Final

import numpy as np

SUB_BITS: Final = 12
BUCKETS: Final = 64 << SUB_BITS
DIRECTIONS: Final = ("read", "write", "trim")
_INT64_LIMIT: Final = 1 << 63
# float64 exponent bias, less one (frexp's exponent: 2**(e-1) <= v < 2**e) and
# SUB_BITS: a value's shift is its float exponent field less this
_SHIFT_BIAS: Final = 1022 + SUB_BITS


class LatencyHistogram:
    """Per-direction log-linear histograms plus exact count, sum, min, max.
    The directions' counts are interleaved (bucket * 3 + direction) so that a
    block's counts, whatever their directions, span the buckets it reached."""

    def __init__(self) -> None:
        self.counts = np.zeros(len(DIRECTIONS) * BUCKETS, dtype=np.int64)
        self.total = [0] * len(DIRECTIONS)
        self.sums = [0] * len(DIRECTIONS)
        self.mins = [0] * len(DIRECTIONS)
        self.maxs = [0] * len(DIRECTIONS)

    def add(self, values: np.ndarray, directions: np.ndarray) -> None:
        # the bucket: values below 2**SUB_BITS as they are, others shifted
        # right to SUB_BITS significant bits (the shift read from the float's
        # exponent field, as frexp would give it), the shift above them
        shift = values.astype(np.float64).view(np.int64) >> 52
        shift -= _SHIFT_BIAS
        np.maximum(shift, 0, out=shift)
        keys = values >> shift
        shift <<= SUB_BITS
        keys += shift
        keys *= len(DIRECTIONS)
        keys += directions
        np.add.at(self.counts, keys, 1)
        low, high = int(directions.min()), int(directions.max())
        low_value, high_value = int(values.min()), int(values.max())
        total = _exact_sum(values, high_value)
        seen = range(low, high + 1)
        counts, sums = {}, {}
        for d in seen[1:]:  # the lowest direction's: what the others leave
            mine = directions == d
            counts[d] = int(np.count_nonzero(mine))
            sums[d] = _exact_sum(np.where(mine, values, 0), high_value)
        counts[low] = int(values.size) - sum(counts.values())
        sums[low] = total - sum(sums.values())
        present = [d for d in seen if counts[d]]
        # a block's overall min and max are rarely a direction's new extreme:
        # the exact per-direction ones only when they might be
        if any(not self.total[d] or low_value < self.mins[d] for d in present) or any(
            high_value > self.maxs[d] for d in present
        ):
            lows = np.full(len(DIRECTIONS), np.iinfo(np.int64).max, dtype=np.int64)
            highs = np.full(len(DIRECTIONS), -1, dtype=np.int64)
            np.minimum.at(lows, directions, values)
            np.maximum.at(highs, directions, values)
            for d in present:
                first = self.total[d] == 0
                lo, hi = int(lows[d]), int(highs[d])
                self.mins[d] = lo if first else min(self.mins[d], lo)
                self.maxs[d] = hi if first else max(self.maxs[d], hi)
        for d in present:
            self.total[d] += counts[d]
            self.sums[d] += sums[d]

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


def _exact_sum(values: np.ndarray, high: int) -> int:
    """The sum of non-negative ``values`` (none above ``high``) as a Python int:
    in one int64 sum when it cannot overflow, else in 32-bit halves."""
    if high * values.size < _INT64_LIMIT:
        return int(values.sum())
    halves = int((values >> 32).sum()), int((values & 0xFFFFFFFF).sum())
    return (halves[0] << 32) + halves[1]
