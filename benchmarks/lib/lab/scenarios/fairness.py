"""Fairness between the tenants of one device (the ``interference`` scenario).

Jain's fairness index over n tenants with normalised throughputs x_i:

    J = (Σ x_i)² / (n · Σ x_i²)

1 when every tenant got the same share of what it asked for, 1/n when one
tenant got everything (R. Jain, D. Chiu, W. Hawe, DEC-TR-301, 1984). The
throughput of tenant i is normalised by its demand: x_i = achieved_i /
demand_i, capped at 1 (a tenant that got all it asked for is fully served,
whatever it got beyond). ``interference.py`` says what each tenant's demand is.
"""

from __future__ import annotations

from collections.abc import Sequence


def normalised(achieved: float, demand: float) -> float | None:
    """achieved / demand capped at 1; None when the demand is not positive."""
    if demand <= 0 or achieved < 0:
        return None
    return min(1.0, achieved / demand)


def jain_index(shares: Sequence[float]) -> float | None:
    """Jain's index of ``shares`` (non-negative); None for no tenant or when
    no tenant got anything (the index is undefined)."""
    if not shares or any(x < 0 for x in shares):
        return None
    squares = sum(x * x for x in shares)
    if squares == 0:
        return None
    return sum(shares) ** 2 / (len(shares) * squares)
