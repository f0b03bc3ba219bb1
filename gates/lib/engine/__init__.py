"""The gate evaluation engine: the gate rules on three JSON documents, with the
standard library and numpy only (no Django), so that the server and
``reprogate gate evaluate`` share one code path and anyone can recompute a
verdict offline::

    from gates.lib.engine import evaluate_plan, evaluation_bytes
    for doc in evaluate_plan(plan, results):      # one per gate, plan order
        print(evaluation_bytes(doc).decode())     # canonical JSON

``evaluate_plan`` validates both documents first and raises ``InvalidDocument``
(``.problems``: every problem, each ``path: message``). Numbers must be JSON
numbers (``int``/``float``, not ``Decimal`` or ``bool``) within ±1e100; a gate may
carry ``max_extra_runs`` (an integer >= 0, for automatic top-up; the engine does
not use it) and ``hosts`` (its canary hosts: a non-empty list of unique host
names, required with stage ``canary`` and the only way to it; the server routes
the gate's runs by it, the engine does not use it); any other unknown key is a
problem. What follows is enough to
reimplement it.

Documents and digests
    Canonical JSON: UTF-8, keys sorted, separators ``,`` and ``:``, non-ASCII as
    itself, numbers as Python's ``repr`` (shortest round-trip), no NaN/inf.
    ``inputs.plan_sha256`` / ``results_sha256``: SHA-256 (hex) of the canonical
    JSON of the plan and results as parsed.

Numbers
    A JSON number means the decimal of its shortest text (``Decimal(repr(x))``).
    Limits, medians, interval ends and every comparison with a limit are exact
    decimals: ``claim x (1 + pct/100)`` (lower) or ``claim x (1 - pct/100)``
    (higher), ``claim ± abs``, or ``threshold``; a value equal to the limit is
    within it. ``limit``, ``estimate`` and ``ci`` are written as the nearest
    double of that decimal. ``cv_pct`` and ``score_pct`` are rounded to 2
    decimals, half to even, and the verdict compares these rounded figures (what
    the evaluation shows is what was judged).

Values
    Per criterion, the values of the runs with status ``succeeded`` in its
    scenario that report its metric and stat, in document order (``runs``,
    ``values``). None: FAIL, "not measured". Runs with ``"role": "baseline"``
    are never among them, nor seen by stop-loss (a run without ``role`` is the
    vendor's).

Baseline criteria
    A criterion with ``"baseline": {"scenario": s, "pct": p}`` (instead of a
    claim with band or a threshold) is held to the buyer's current
    infrastructure: the limit is ``m x (1 + p/100)`` (lower) or ``m x (1 -
    p/100)`` (higher), m the median (as ``estimate``, exact decimal) of the
    values of the succeeded baseline runs of scenario s that report the
    criterion's metric and stat. The criterion's evaluation carries
    ``baseline``: ``{"scenario", "runs", "values", "median"}``. No such run:
    FAIL (WARN if not blocking), "baseline not measured", ``limit`` null;
    otherwise it is judged as any criterion against that limit.

Seed
    ``seed`` = the first 4 bytes, big-endian, of SHA-256 over the UTF-8 text
    ``plan_sha256 + "\\n" + results_sha256 + "\\n" + gate name + "\\n" +
    criterion id``.

Estimate and bootstrap interval (``statistics.py``)
    ``estimate`` = the median (mean of the two middle values for an even count).
    ``ci`` = the bootstrap percentile interval of the median at ``ci_level``
    0.95 with B = 2000 resamples: with ``rng = numpy.random.default_rng(seed)``
    a resample's median is drawn through its order statistics, which is
    exactly the distribution of resampling n values with replacement (rank
    ``min(floor(n*u), n-1)`` of the sorted values, ``u ~ Beta(k, n-k+1)`` the
    k-th of n uniforms; odd n: k = (n+1)/2, ``u = rng.beta(k, n-k+1, B)``;
    even n: k = n/2, ``u`` likewise, then ``u2 = u + (1-u) * rng.beta(1, n-k,
    B)`` for rank k+1). The B medians are sorted by value (ties in draw order);
    the interval is the 50th and the 1950th (⌈0.025 B⌉, ⌈0.975 B⌉). All values
    equal: ``[v, v]``. This costs O(B) whatever the number of runs.

Spread
    ``cv_pct`` = sample standard deviation (n-1) / |mean| x 100 with
    ``math.fsum`` sums, at most 1e12; ``null`` for one value or a zero mean
    (then not judged).

Verdict of a criterion, in this order
    1. no values: FAIL "not measured";
    2. n < ``min_runs``: INCONCLUSIVE, ``more_runs_needed`` = min_runs - n;
    3. cv_pct > ``max_cv_pct``: INCONCLUSIVE or WARN (``on_high_cv``),
       ``more_runs_needed`` = ceil(n x (cv/max_cv)^2) - n;
    4. lower: PASS if ci[1] <= limit, FAIL if ci[0] > limit; higher: PASS if
       ci[0] >= limit, FAIL if ci[1] < limit; otherwise INCONCLUSIVE with
       ``more_runs_needed`` = ceil(n x (h/m)^2) - n, h the distance from the
       estimate to the interval's end on the limit's side (it shrinks as
       1/sqrt(n)), m = |estimate - limit| (m = 0: the cap);
    5. a non-blocking criterion's FAIL is WARN.
    ``more_runs_needed`` is 0 when decided and is otherwise kept within 1..100.

Stop-loss
    ``above``/``below``: any run (whatever its status) whose value of metric +
    stat in the scenario (``*``: any) is strictly above/below; ``drift_at_least``:
    runs whose drift is at least that level in the order none < minor < major
    (the runner's ``info`` differences count as none, as the server's results
    document writes them); ``run_failed``: runs with status ``failed`` (not
    ``cancelled`` or ``pending``); ``check_flagged`` (a check id or a list of
    them: ``seed_ignored``, ``cold_cache_unproven``,
    ``working_set_fits_in_memory``): runs, whatever their status, whose
    ``checks`` name one of them. Triggered: at least one run; ``runs`` lists
    them in document order.

Gate
    HALTED if any stop-loss triggered; else FAIL if a blocking criterion FAILs;
    else INCONCLUSIVE if a blocking criterion is INCONCLUSIVE; else the score
    (Keptn's): sum(weight x points) / sum(weight) x 100 with PASS 1, WARN 1/2,
    FAIL 0, and a non-blocking INCONCLUSIVE 1/2 (not shown to pass, so it
    counts as a warning: it neither blocks the gate nor lets it pass as if
    proven; Keptn has no inconclusive and scores a failed objective 0) -> PASS
    at or over ``pass_pct``, WARN at or over ``warn_pct``, else FAIL.
    ``score_pct`` is computed for every verdict.
"""

from __future__ import annotations

from gates.lib.engine.documents import evaluation_bytes, load_json
from gates.lib.engine.evaluate import evaluate_plan, limit_of
from gates.lib.engine.validate import (
    InvalidDocument,
    Problem,
    plan_problems,
    results_problems,
)

__all__ = [
    "InvalidDocument",
    "Problem",
    "evaluate_plan",
    "evaluation_bytes",
    "limit_of",
    "load_json",
    "plan_problems",
    "results_problems",
]
