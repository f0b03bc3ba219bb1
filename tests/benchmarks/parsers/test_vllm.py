"""vllm-bench: serve results (flat stat keys, fractional percentiles, "inf"
rate, failures, per-request recomputation) and bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.lib.parsers import ParseResult, parse
from tests.benchmarks.parsers.helpers import one, problems, values

# Three successful requests and one failed (vLLM keeps failed ones in the arrays).
TTFTS = [0.010, 0.020, 0.040, 0.0]
LATENCIES = [0.110, 0.220, 0.440, 0.0]
ITLS = [[0.05, 0.05], [0.1, 0.1], [0.2, 0.2], []]
OUTPUT_LENS = [3, 3, 3, 0]
ERRORS = ["", "", "", "Server disconnected"]


def serve(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "date": "20260722-060114", "backend": "openai", "model_id": "m",
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": None,
        "duration": 2.0, "completed": 3, "failed": 1,
        "total_input_tokens": 300, "total_output_tokens": 9,
        "request_throughput": 1.5, "request_goodput": None,
        "output_throughput": 4.5, "total_token_throughput": 154.5,
        "max_output_tokens_per_s": 6.0, "max_concurrent_requests": 3,
        "mean_ttft_ms": 23.333333333333332, "median_ttft_ms": 20.0,
        "std_ttft_ms": 12.47219128924647, "p99_ttft_ms": 39.6, "p99.9_ttft_ms": 39.96,
        "mean_e2el_ms": 256.6666666666667, "median_e2el_ms": 220.0,
        "p99_e2el_ms": 435.6,
    }  # fmt: skip
    doc.update(extra)
    return doc


def run(doc: dict[str, Any]) -> ParseResult:
    return parse("vllm-bench", json.dumps(doc).encode())


def test_serve_stat_keys_become_canonical_metrics() -> None:
    result = run(serve())

    assert one(result, "ttft_ms", "p99.9") == 39.96
    assert one(result, "ttft_ms", "p50") == 20.0  # median_ttft_ms
    assert one(result, "ttft_ms", "stddev") == 12.47219128924647
    assert one(result, "e2e_latency_ms", "p99") == 435.6
    assert one(result, "request_throughput_rps", "mean") == 1.5
    assert one(result, "output_token_throughput_tps", "max") == 6.0
    assert one(result, "failed_requests", "total") == 1
    assert values(result, "request_goodput_rps", "mean") == []  # null without --goodput
    assert result.info["request_rate"] == "inf"


def test_failed_requests_are_a_warning() -> None:
    result = run(serve())

    assert any("1 of 4 requests failed" in w for w in result.warnings)


def test_nothing_completed_gives_no_latency_figures() -> None:
    result = run(serve(completed=0, failed=4))

    assert values(result, "ttft_ms", "p99") == []
    assert any("no request completed" in w for w in result.warnings)


def test_per_request_arrays_are_recomputed_like_vllm_and_agree() -> None:
    doc = serve(
        ttfts=TTFTS,
        latencies=LATENCIES,
        itls=ITLS,
        output_lens=OUTPUT_LENS,
        errors=ERRORS,
    )

    result = run(doc)

    method = {"method": "recomputed:per-request"}
    assert one(result, "ttft_ms", "p99", **method) == pytest.approx(39.6)
    assert one(result, "ttft_ms", "mean", **method) == pytest.approx(23.333333333)
    assert one(result, "e2e_latency_ms", "p50", **method) == pytest.approx(220.0)
    # TPOT = (latency - ttft) / (output_len - 1): 50, 100, 200 ms
    assert one(result, "tpot_ms", "p50", **method) == pytest.approx(100.0)
    assert one(result, "itl_ms", "p50", **method) == pytest.approx(100.0)
    assert not [w for w in result.warnings if "both kept" in w]


def test_a_summary_that_its_samples_contradict_is_flagged() -> None:
    doc = serve(p99_ttft_ms=12.0, ttfts=TTFTS, latencies=LATENCIES, errors=ERRORS)

    result = run(doc)

    assert sorted(values(result, "ttft_ms", "p99")) == [12.0, pytest.approx(39.6)]
    assert any("ttft_ms p99: the file says 12 ms" in w for w in result.warnings)


def test_samples_without_errors_while_requests_failed_are_not_recomputed() -> None:
    result = run(serve(ttfts=TTFTS, latencies=LATENCIES))

    assert not [m for m in result.metrics if m.method != "tool"]
    assert any("percentiles not recomputed" in w for w in result.warnings)


def detailed(**extra: Any) -> dict[str, Any]:
    """What vLLM 0.8 saves: per-request arrays without ``latencies``, no
    ``failed`` key, ``errors`` holding an empty string per successful request."""
    doc = serve(num_prompts=4, ttfts=TTFTS, itls=ITLS, output_lens=OUTPUT_LENS)
    del doc["failed"]
    doc.update(extra)
    return doc


def test_arrays_without_latencies_are_recomputed_and_empty_errors_are_no_failure() -> (
    None
):
    doc = detailed(
        completed=4, errors=["", "", "", ""], ttfts=[*TTFTS[:3], 0.08],
        itls=[*ITLS[:3], [0.4, 0.4]], output_lens=[3, 3, 3, 3],
    )  # fmt: skip

    result = run(doc)

    method = {"method": "recomputed:per-request"}
    assert one(result, "ttft_ms", "p50", **method) == pytest.approx(30.0)
    assert one(result, "ttft_ms", "p99", **method) == pytest.approx(78.8)
    # TPOT from the gaps: sum(itls) / (output_len - 1): 50, 100, 200, 400 ms
    assert one(result, "tpot_ms", "mean", **method) == pytest.approx(187.5)
    assert one(result, "itl_ms", "p50", **method) == pytest.approx(150.0)
    assert one(result, "failed_requests", "total", **method) == 0
    assert values(result, "e2e_latency_ms", "p50") == [pytest.approx(220.0)]  # tool
    assert not [w for w in result.warnings if "fail" in w]


def test_non_empty_errors_are_the_failures() -> None:
    result = run(detailed(errors=ERRORS))

    assert any("1 of 4 requests failed" in w for w in result.warnings)
    method = {"method": "recomputed:per-request"}
    assert one(result, "failed_requests", "total", **method) == 1
    assert one(result, "ttft_ms", "mean", **method) == pytest.approx(23.333333333)
    assert not [w for w in result.warnings if "not recomputed" in w]


def test_a_failure_with_an_empty_error_cannot_be_told_apart() -> None:
    # vLLM stores ``response.reason or ""``: a failed request may carry "".
    result = run(detailed(errors=["", "", "", ""]))

    assert not [m for m in result.metrics if m.method != "tool"]
    assert any(
        "4 requests have an empty error but completed is 3" in w
        for w in result.warnings
    )
    assert any("1 of 4 requests failed" in w for w in result.warnings)


def test_counts_that_disagree_with_the_errors_are_flagged() -> None:
    result = run(detailed(errors=ERRORS, failed=0))

    assert any("failed is 0 but errors holds 1" in w for w in result.warnings)
    assert one(result, "ttft_ms", "p50", method="recomputed:per-request") == 20.0


def test_num_prompts_that_disagrees_with_the_requests_is_flagged() -> None:
    result = run(detailed(errors=ERRORS, num_prompts=5))

    assert any(
        "num_prompts: 5 prompts but 4 requests were counted (errors)" in w
        for w in result.warnings
    )
    assert any("errors: 1 of 4 requests failed" in w for w in result.warnings)


def test_completed_short_of_num_prompts_is_a_failure_warning() -> None:
    doc = serve(num_prompts=5, completed=3)
    del doc["failed"]

    result = run(doc)

    assert any("2 of 5 requests failed" in w for w in result.warnings)


def test_throughput_result() -> None:
    doc = {"elapsed_time": 2.0, "num_requests": 10, "total_num_tokens": 500,
           "requests_per_second": 5.0, "tokens_per_second": 250.0}  # fmt: skip

    result = run(doc)

    assert one(result, "token_throughput_tps", "mean") == 250.0
    assert result.info["kind"] == "throughput"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"jobs": [], "fio version": "fio-3.33"}, "it looks like fio-json output"),
        ({"hello": 1}, "not vllm bench serve or throughput JSON"),
        (
            serve(ttfts=[0.1], latencies=[0.1, 0.2]),
            "latencies: has 2 entries but ttfts has 1",
        ),
        (
            serve(ttfts=[-1, 0, 0, 0], latencies=LATENCIES, errors=ERRORS),
            "ttfts[0]: expected a duration",
        ),
        (
            serve(ttfts=TTFTS, latencies=LATENCIES, errors=ERRORS, itls=[1, 2, 3, 4]),
            "itls[0]",
        ),
    ],
)
def test_bad_input_is_a_clear_problem(doc: dict[str, Any], message: str) -> None:
    assert message in problems(run(doc))


def test_non_finite_figures_are_skipped() -> None:
    data = json.dumps(serve(mean_ttft_ms=float("nan"))).encode()  # json.dump writes NaN

    result = parse("vllm-bench", data)

    assert values(result, "ttft_ms", "mean") == []
    assert any("mean_ttft_ms: nan is not a finite number" in w for w in result.warnings)
