"""Averaged logs (``log_avg_msec``): telling them from per-I/O logs, and their
honest figures (window means, never percentiles)."""

from __future__ import annotations

from typing import Final

import numpy as np

from benchmarks.lib.parsers.latlog.histogram import DIRECTIONS, LatencyHistogram
from benchmarks.lib.parsers.model import MetricSink, ParseResult, Series

WINDOW_METHOD: Final = "recomputed:lat-log-windows"
# Without a block-size column: the mean gap (ms) between a direction's lines
# from which evenly spaced, never repeated timestamps are taken for windows.
MIN_WINDOW_MS: Final = 10
# An averaged log's windows also become a time series, up to this many points
# per direction (the runner keeps at most 20,000 points of a series).
MAX_WINDOW_POINTS: Final = 20_000


class Logging:
    """What tells a per-I/O log from an averaged one, gathered as the chunks
    go by: block-size columns that are 0, that are not, lines without one,
    and for those, per direction, the gaps between consecutive timestamps."""

    def __init__(self) -> None:
        self.bs_zero = self.bs_set = self.no_bs = 0
        self.first: list[int | None] = [None] * len(DIRECTIONS)
        self.last: list[int | None] = [None] * len(DIRECTIONS)
        self.gaps = [0] * len(DIRECTIONS)
        self.span = [0] * len(DIRECTIONS)
        self.repeats = [0] * len(DIRECTIONS)
        self.backwards = [0] * len(DIRECTIONS)
        self.bad_times = False
        # the windows' (time ms, value ns) by direction, for the time series
        self.points: list[list[tuple[np.ndarray, np.ndarray]]] = [
            [] for _ in DIRECTIONS
        ]
        self.kept = [0] * len(DIRECTIONS)

    def add_windows(
        self, times: np.ndarray, values: np.ndarray, directions: np.ndarray
    ) -> None:
        for d in np.unique(directions):
            mine = directions == d
            self._keep_points(int(d), times[mine], values[mine])

    def _keep_points(self, d: int, times: np.ndarray, values: np.ndarray) -> None:
        """Direction ``d``'s windows, as many as ``MAX_WINDOW_POINTS`` leaves
        room for."""
        room = max(MAX_WINDOW_POINTS - self.kept[d], 0)
        t, v = times[:room], values[:room]
        if t.size:
            self.points[d].append((t, v))
            self.kept[d] += int(t.size)

    def add_times(self, times: np.ndarray, directions: np.ndarray) -> None:
        for d in np.unique(directions):
            t = times[directions == d]
            previous = self.last[d]
            if previous is not None:
                t = np.concatenate((np.array([previous], dtype=np.int64), t))
            else:
                self.first[d] = int(t[0])
            self._add_steps(d, np.diff(t))
            self.last[d] = int(t[-1])

    def _add_steps(self, d: int, steps: np.ndarray) -> None:
        self.gaps[d] += int(steps.size)
        self.span[d] += int(steps[steps > 0].sum())
        self.repeats[d] += int((steps == 0).sum())
        self.backwards[d] += int((steps < 0).sum())

    def extend(self, later: Logging) -> None:
        """Take in what ``later`` gathered from the lines after these, as if
        this one had seen them: blocks parsed apart, folded in order."""
        self.bs_zero += later.bs_zero
        self.bs_set += later.bs_set
        self.no_bs += later.no_bs
        self.bad_times |= later.bad_times
        for d in range(len(DIRECTIONS)):
            first, previous = later.first[d], self.last[d]
            if first is not None:
                if previous is not None:  # the step between the two
                    self._add_steps(d, np.array([first - previous]))
                else:
                    self.first[d] = first
                self.last[d] = later.last[d]
            self.gaps[d] += later.gaps[d]
            self.span[d] += later.span[d]
            self.repeats[d] += later.repeats[d]
            self.backwards[d] += later.backwards[d]
            for t, v in later.points[d]:
                self._keep_points(d, t, v)

    def windowed(self) -> tuple[bool, str]:
        """Whether the lines are windows, and the evidence (for the warning)."""
        lines = self.bs_zero + self.bs_set + self.no_bs
        if self.bs_zero == lines:
            return True, "block size 0 on every line, fio's mark of a window"
        if self.bs_zero:
            return True, (
                f"{self.bs_zero} of {lines} lines have block size 0, fio's mark of a "
                "window, the others do not: averaged and per-I/O lines mixed"
            )
        if self.bs_set or self.bad_times:
            return False, ""
        seen = [d for d in range(len(DIRECTIONS)) if self.gaps[d]]
        even = bool(seen) and all(
            self.backwards[d] == 0
            and self.repeats[d] <= 1
            and self.span[d] >= MIN_WINDOW_MS * self.gaps[d]
            for d in seen
        )
        if not even:
            return False, ""
        gap = sum(self.span[d] for d in seen) / sum(self.gaps[d] for d in seen)
        return True, (
            "no block-size column, and its timestamps are evenly spaced, one line "
            f"per direction about every {gap:.0f} ms, as fio writes windows"
        )


def window_series(
    result: ParseResult,
    logging: Logging,
    histogram: LatencyHistogram,
    kind: str,
    source_name: str,
) -> None:
    """An averaged log's windows over time (s, us), one series per direction."""
    for d, direction in enumerate(DIRECTIONS):
        if not logging.points[d]:
            continue
        times = np.concatenate([t for t, _ in logging.points[d]]) / 1000
        values = np.concatenate([v for _, v in logging.points[d]]) / 1000
        name = f"{direction}_{kind}_window_mean_us"
        points = tuple(zip(times.tolist(), values.tolist(), strict=True))
        key = f"{source_name or 'log'} direction {d}"
        result.series.append(Series(name, "us", points, key))
        if (
            logging.kept[d] >= MAX_WINDOW_POINTS
            and histogram.total[d] > logging.kept[d]
        ):
            result.warnings.append(
                f"{name}: the time series holds the first {logging.kept[d]} of "
                f"{histogram.total[d]} windows"
            )


def window_means(
    sink: MetricSink,
    histogram: LatencyHistogram,
    kind: str,
    source_name: str,
    evidence: str,
) -> None:
    """An averaged log's honest figures: the lowest, highest and mean window."""
    names = []
    for d, direction in enumerate(DIRECTIONS):
        n = histogram.total[d]
        if not n:
            continue
        name = f"{direction}_{kind}_window_mean_us"
        key = f"{source_name or 'log'} direction {d}"
        names.append(name)
        for stat, value in (
            ("min", histogram.mins[d]),
            ("max", histogram.maxs[d]),
            ("mean", histogram.sums[d] / n),
        ):
            sink.add(name, stat, value / 1000, "us", key, method=WINDOW_METHOD)
    sink.result.warnings.append(
        f"fio wrote this latency log with log_avg_msec ({evidence}): each line is "
        "the mean latency of one time window (its maximum with "
        "log_window_value=max), not one I/O's, so no per-I/O percentile can be "
        f"computed from it; reported as {', '.join(names)} (min, max and mean over "
        "the windows). For percentiles, log every I/O (no log_avg_msec), or use "
        "fio's json+ bins or log_hist_msec."
    )
