"""The synthetic trace generator: byte-identical output for one (profile, seed),
a checked-in digest that catches any change of algorithm, and distributions
that match the profile (large samples, tolerances of several standard errors)."""

from __future__ import annotations

import hashlib
import io
import math
import statistics
from collections import Counter, defaultdict
from typing import Any

import pytest

from benchmarks.lib.workloads import (
    ProfileError,
    TraceProfile,
    TraceRequest,
    generate,
    read_trace,
    write_trace,
)

# Changing this digest means every recorded trace changes: bump
# GENERATOR_VERSION in tracegen.py and say so, do not just update the number.
SMALL_DIGEST = "db69c66cc7c7b10cdf1ba10ac50fe710deed63c9c215183e575f833a9ad7958c"
SMALL: dict[str, Any] = {
    "name": "small",
    "requests": {
        "arrival": {"process": "gamma", "rate_rps": 4.0, "cv": 1.5},
        "prompt_tokens": {"distribution": "lognormal", "mean": 2000, "p99": 9000},
        "output_tokens": {"distribution": "uniform", "min": 16, "max": 256},
        "shared_prefix": {"share": 0.5, "prefix_tokens_mean": 1024},
        "sessions": {
            "turns_mean": 3,
            "message_tokens": {"distribution": "normal", "mean": 200, "stddev": 50},
        },
        "tenants": {"weights": [3, 1]},
        "count": 40,
    },
}


def profile(**changes: Any) -> TraceProfile:
    """A large plain profile (Poisson, no sessions) with ``changes`` applied."""
    requests: dict[str, Any] = {
        "arrival": {"process": "poisson", "rate_rps": 20.0},
        "prompt_tokens": {"distribution": "lognormal", "mean": 6144, "p99": 28000},
        "output_tokens": {"distribution": "lognormal", "mean": 320, "p99": 1200},
        "shared_prefix": {"share": 0.62, "prefix_tokens_mean": 4096},
        "tenants": {"count": 4},
        "count": 20_000,
    }
    requests.update(changes)
    return TraceProfile.from_dict({"name": "big", "requests": requests})


def trace_bytes(p: TraceProfile, seed: int) -> tuple[bytes, str]:
    out = io.BytesIO()
    digest, _ = write_trace(p, seed, out)
    return out.getvalue(), digest


def test_same_profile_and_seed_give_the_same_bytes_and_digest() -> None:
    first, first_digest = trace_bytes(TraceProfile.from_dict(SMALL), 7)

    again, again_digest = trace_bytes(TraceProfile.from_dict(SMALL), 7)

    assert first == again
    assert first_digest == again_digest == hashlib.sha256(first).hexdigest()


def test_small_trace_matches_the_recorded_digest() -> None:
    data, digest = trace_bytes(TraceProfile.from_dict(SMALL), 7)

    assert len(data.splitlines()) == 41  # header + 40 requests
    assert digest == SMALL_DIGEST


def test_different_seeds_give_different_traces() -> None:
    p = TraceProfile.from_dict(SMALL)

    assert trace_bytes(p, 7)[1] != trace_bytes(p, 8)[1]


def test_the_trace_reads_back_with_its_header() -> None:
    data, _ = trace_bytes(TraceProfile.from_dict(SMALL), 7)

    header, requests = read_trace(io.StringIO(data.decode()))

    assert header["format"] == "reprogate.trace/v1"
    assert (header["profile"], header["seed"]) == ("small", 7)
    assert requests == list(generate(TraceProfile.from_dict(SMALL), 7))


def test_poisson_gaps_average_one_over_the_rate() -> None:
    times = [r.t for r in generate(profile(), 1)]

    gaps = [b - a for a, b in zip([0.0, *times], times, strict=False)]

    # 20,000 exponential gaps: the standard error of the mean is 0.7 %.
    assert statistics.fmean(gaps) == pytest.approx(1 / 20.0, rel=0.03)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(
        1, abs=0.05
    )


def test_gamma_gaps_have_the_rate_and_the_coefficient_of_variation() -> None:
    p = profile(arrival={"process": "gamma", "rate_rps": 5.0, "cv": 2.0})
    times = [r.t for r in generate(p, 2)]

    gaps = [b - a for a, b in zip([0.0, *times], times, strict=False)]

    assert statistics.fmean(gaps) == pytest.approx(1 / 5.0, rel=0.05)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(2, rel=0.1)


def test_prefix_share_matches_the_profile() -> None:
    requests = list(generate(profile(), 3))

    share = sum(r.prefix is not None for r in requests) / len(requests)

    assert share == pytest.approx(0.62, abs=0.015)  # 3.4 standard errors
    assert all(0 < r.prefix_tokens <= r.prompt_tokens for r in requests if r.prefix)
    assert all(r.prefix_tokens == 0 for r in requests if r.prefix is None)


def test_shared_prefixes_repeat_by_popularity_within_a_tenant() -> None:
    requests = [r for r in generate(profile(), 4) if r.prefix]

    counts = Counter(r.prefix for r in requests)

    assert all(r.prefix.startswith(f"{r.tenant}/") for r in requests)
    most, _ = counts.most_common(1)[0]
    assert most.endswith("/p0")  # Zipf: rank 0 is the most popular
    lengths = {r.prefix: r.prefix_tokens for r in requests if r.prompt_tokens > 6200}
    assert statistics.fmean(lengths.values()) == pytest.approx(4096, rel=0.15)


def test_lognormal_lengths_have_the_mean_and_p99() -> None:
    prompts = sorted(r.prompt_tokens for r in generate(profile(), 5))

    assert statistics.fmean(prompts) == pytest.approx(6144, rel=0.05)
    assert prompts[int(0.99 * len(prompts))] == pytest.approx(28000, rel=0.1)


def test_lengths_stay_within_their_bounds() -> None:
    p = profile(
        prompt_tokens={
            "distribution": "normal",
            "mean": 500,
            "stddev": 400,
            "min": 100,
        },
        output_tokens={"distribution": "uniform", "min": 10, "max": 20},
    )

    requests = list(generate(p, 6))

    assert min(r.prompt_tokens for r in requests) == 100
    assert {r.output_tokens for r in requests} == set(range(10, 21))


def test_tenant_weights_set_the_mix() -> None:
    requests = list(generate(profile(tenants={"weights": [3, 1]}), 7))

    counts = Counter(r.tenant for r in requests)

    assert counts["t0"] / len(requests) == pytest.approx(0.75, abs=0.015)


def test_later_turns_resend_the_previous_turn() -> None:
    sessions = {
        "turns_mean": 4,
        "message_tokens": {"distribution": "fixed", "value": 50},
    }
    requests = list(generate(profile(sessions=sessions), 8))
    last: dict[str, TraceRequest] = {}
    turns: dict[str, int] = defaultdict(int)

    for r in requests:
        before = last.get(r.session)
        expected = 0 if before is None else before.prompt_tokens + before.output_tokens
        assert r.history_tokens == expected
        assert r.prompt_tokens == (r.history_tokens + 50 if before else r.prompt_tokens)
        assert r.turn == turns[r.session] + 1
        last[r.session], turns[r.session] = r, r.turn

    # Conversations cut short by the context limit or the end lower the mean.
    assert 3.0 < statistics.fmean(turns.values()) <= 4.0


def test_changing_lengths_leaves_arrivals_and_prefixes_alone() -> None:
    base = list(generate(profile(count=500), 9))

    other = list(
        generate(
            profile(count=500, output_tokens={"distribution": "fixed", "value": 1}), 9
        )
    )

    assert [(r.t, r.tenant, r.prefix) for r in base] == [
        (r.t, r.tenant, r.prefix) for r in other
    ]


def test_duration_ends_the_trace() -> None:
    requests = list(generate(profile(duration_s=10.0), 10))

    assert requests[-1].t < 10.0
    assert len(requests) == pytest.approx(200, rel=0.25)


def test_rate_per_stream_is_multiplied_by_the_concurrency() -> None:
    data = {"requests": {**SMALL["requests"], "arrival": {"rate_rps_per_stream": 0.5}}}

    assert TraceProfile.from_dict(data, concurrency=32).rate_rps == 16.0
    with pytest.raises(ProfileError, match="needs the scenario's concurrency"):
        TraceProfile.from_dict(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"surprise": 1}, "requests.surprise: unknown key"),
        ({"arrival": {"rate_rps": -1}}, "arrival.rate_rps: -1 is not a number"),
        ({"arrival": {"rate_rps": True}}, "arrival.rate_rps: True is not a number"),
        ({"arrival": {"process": "burst", "rate_rps": 1}}, "'burst' is not poisson"),
        ({"arrival": {"rate_rps": 1, "cv": 2}}, "only a gamma process has a cv"),
        (
            {"prompt_tokens": {"distribution": "lognormal", "mean": 100, "p99": 50}},
            "a lognormal needs mean < p99",
        ),
        ({"output_tokens": {"distribution": "zipf"}}, "'zipf' is not one of"),
        (
            {
                "output_tokens": {
                    "distribution": "fixed",
                    "value": 5,
                    "min": 9,
                    "max": 3,
                }
            },
            "min 9 is over max 3",
        ),
        ({"shared_prefix": {"share": 1.5}}, "shared_prefix.share: 1.5"),
        ({"tenants": {"weights": []}}, "tenants.weights: must be a list"),
        ({"count": None}, "requests.count: None is not a number"),
    ],
)
def test_bad_profiles_are_refused_with_the_reason(
    change: dict[str, Any], message: str
) -> None:
    data = {"name": "bad", "requests": {**SMALL["requests"], **change}}

    with pytest.raises(ProfileError) as caught:
        TraceProfile.from_dict(data)

    assert any(message in problem for problem in caught.value.problems), caught.value


def test_a_profile_needs_a_count_or_a_duration() -> None:
    requests = {k: v for k, v in SMALL["requests"].items() if k != "count"}

    with pytest.raises(ProfileError, match="needs count"):
        TraceProfile.from_dict({"name": "x", "requests": requests})


def test_every_problem_is_reported_at_once() -> None:
    data = {"name": "bad name!", "requests": {"arrival": {}, "count": 0}}

    with pytest.raises(ProfileError) as caught:
        TraceProfile.from_dict(data)

    paths = {problem.split(":")[0] for problem in caught.value.problems}
    assert {"name", "arrival.rate_rps", "prompt_tokens", "requests.count"} <= paths


def test_profile_digest_changes_with_the_profile() -> None:
    assert profile().digest() == profile().digest()
    assert profile().digest() != profile(count=19_999).digest()
    assert not math.isnan(profile().rate_rps)
