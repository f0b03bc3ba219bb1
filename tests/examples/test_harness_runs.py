"""The example harnesses really run: both bundles are built and verified with
examples/build.sh, unpacked, and their harness is run as the runner would
(docs/runner-contract.md: cwd = the bundle, REPROGATE_* variables, a bare PATH that
finds the system's python3) for the scenarios their claims name, all at once (the runs
mostly wait for the wall clock, ~8 s each).

The claim checks test the example data, not a system: the simulator's figures
come from the vendor's tier model and the trace (deterministic) plus the
measured time of real local reads (microseconds), so they barely move between
machines. Acme's claims must hold within 15 % and lie within 25 % of what its
harness produces (honest, not sandbagged); Bolt's TTFT and hit-rate claims must
be at least 1.5x better than what its harness produces (over-claimed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.spans import collect_trace_dir
from benchmarks.lib.parsers import parse
from tests.examples.support import (
    BARE_PATH,
    ROOT,
    VENDORS,
    Run,
    manifest,
    run_harness,
    scenario,
)

HIGHER_IS_BETTER = {"cache_hit_rate", "output_token_throughput_tps"}


@pytest.fixture(scope="module")
def runs(
    bundles: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Run]:
    """(vendor, scenario) -> Run, for cold-c32-b8 and warm-c32-b8 of each vendor;
    the warm ones with a REPROGATE_TRACE_DIR (``<out>.trace``)."""
    root = tmp_path_factory.mktemp("runs")
    jobs = [(v, c) for v in VENDORS for c in ("cold-c32-b8", "warm-c32-b8")]

    def one(job: tuple[str, str]) -> Run:
        vendor, name = job
        s = scenario(bundles[vendor], name)
        out = root / f"{vendor}-{name}"
        trace = out.with_suffix(".trace") if name.startswith("warm") else None
        done = run_harness(bundles[vendor], out, json.dumps(s), trace=trace)
        return Run(vendor, s, done.returncode, done.stdout, done.stderr, out)

    with ThreadPoolExecutor(len(jobs)) as pool:
        return {(r.vendor, r.scenario["name"]): r for r in pool.map(one, jobs)}


@pytest.fixture(
    params=[(v, f"{c}-c32-b8") for v in VENDORS for c in ("cold", "warm")],
    ids=lambda job: "-".join(job),
)
def each_run(request: pytest.FixtureRequest, runs: dict[tuple[str, str], Run]) -> Run:
    return runs[request.param]


@pytest.fixture(params=VENDORS)
def vendor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_harness_succeeds_and_reports_progress(each_run: Run) -> None:
    progress = [
        float(line.split()[1])
        for line in each_run.stdout.splitlines()
        if line.startswith("::progress::")
    ]

    assert each_run.returncode == 0, each_run.stderr
    assert each_run.stderr == ""
    assert progress == sorted(progress)
    assert len(progress) >= 5
    assert progress[-1] == 1.0
    # no REPROGATE_DEVICES here: the SSD tier is a file, and the log says so
    assert "ssd tier: file-backed (no block device in REPROGATE_DEVICES)" in (
        each_run.stdout
    )


def test_metrics_parse_without_problems(each_run: Run) -> None:
    result = parse("reprogate-metrics", (each_run.out / "metrics.json").read_bytes())

    assert result.problems == []
    names = {(m.name, m.stat) for m in result.metrics}
    assert {
        ("ttft_ms", "p50"), ("ttft_ms", "p90"), ("ttft_ms", "p99"), ("tpot_ms", "p50"),
        ("e2e_latency_ms", "p99"), ("output_token_throughput_tps", "mean"),
        ("request_throughput_rps", "mean"), ("cache_hit_rate", "mean"),
    } <= names  # fmt: skip
    assert {m.scenario for m in result.metrics} == {each_run.scenario["name"]}
    assert [s.name for s in result.series] == ["cache_hit_rate"]


def test_outputs_are_the_trace_and_no_scratch_files(each_run: Run) -> None:
    files = {p.name for p in each_run.out.iterdir()}
    digest, name = (each_run.out / "trace.jsonl.sha256").read_text().split()

    assert files - {"fio.json"} == {"metrics.json", "trace.jsonl", "trace.jsonl.sha256"}
    assert name == "trace.jsonl"
    assert digest in each_run.stdout  # the log names the trace it replayed
    assert subprocess.run(
        ["sha256sum", "-c", "trace.jsonl.sha256"], cwd=each_run.out, check=False
    ).returncode == 0  # fmt: skip


@pytest.mark.skipif(shutil.which("fio", path=BARE_PATH) is None, reason="no fio")
def test_fio_output_parses(each_run: Run) -> None:
    result = parse("fio-json", (each_run.out / "fio.json").read_bytes())

    assert result.problems == []
    iops = [m for m in result.metrics if m.name == "read_iops"]
    assert iops
    assert iops[0].value > 0


def test_metrics_are_plausible(each_run: Run) -> None:
    m = each_run.metrics
    points = json.loads((each_run.out / "metrics.json").read_text())["series"][0]

    assert 0 < m["cache_hit_rate", "mean"] < 1
    assert m["ttft_ms", "p50"] <= m["ttft_ms", "p90"] <= m["ttft_ms", "p99"]
    assert m["ttft_ms", "p50"] < m["e2e_latency_ms", "p50"]
    assert 10 < m["tpot_ms", "p50"] < 100  # decode_step_ms is 10 in both configs
    assert m["requests", "total"] > 50
    assert (
        m["output_token_throughput_tps", "mean"] > m["request_throughput_rps", "mean"]
    )
    assert all(0 <= v <= 1 for _, v in points["points"])
    assert len(points["points"]) >= 5


def test_warm_cache_beats_cold(vendor: str, runs: dict[tuple[str, str], Run]) -> None:
    cold, warm = (runs[(vendor, f"{c}-c32-b8")].metrics for c in ("cold", "warm"))

    assert warm["cache_hit_rate", "mean"] > cold["cache_hit_rate", "mean"]
    assert warm["prefix_recompute_pct", "mean"] < cold["prefix_recompute_pct", "mean"]
    assert warm["ttft_ms", "p99"] < cold["ttft_ms", "p99"]


def test_cold_and_warm_replay_the_same_trace(
    vendor: str, runs: dict[tuple[str, str], Run]
) -> None:
    cold, warm = (runs[(vendor, f"{c}-c32-b8")].out for c in ("cold", "warm"))

    assert (cold / "trace.jsonl").read_bytes() == (warm / "trace.jsonl").read_bytes()


def claims_vs_measured(
    vendor: str, bundles: dict[str, Path], runs: dict[tuple[str, str], Run]
) -> list[tuple[dict[str, Any], float]]:
    claims = manifest(bundles[vendor])["claims"]
    return [
        (c, runs[(vendor, c["scenario"])].metrics[c["metric"], c["stat"]])
        for c in claims
    ]


def test_acme_claims_are_reproduced(
    bundles: dict[str, Path], runs: dict[tuple[str, str], Run]
) -> None:
    for claim, measured in claims_vs_measured("acme-flash", bundles, runs):
        value = claim["value"]
        if claim["metric"] in HIGHER_IS_BETTER:
            assert measured >= value * 0.85, (claim, measured)
        else:
            assert measured <= value * 1.15, (claim, measured)
        assert abs(value - measured) <= 0.25 * measured, (claim, measured)


def test_bolt_over_claims_ttft_and_hit_rate(
    bundles: dict[str, Path], runs: dict[tuple[str, str], Run]
) -> None:
    checked = 0
    for claim, measured in claims_vs_measured("bolt-storage", bundles, runs):
        if claim["metric"] == "ttft_ms" and claim["stat"] == "p99":
            assert measured >= 1.5 * claim["value"], (claim, measured)
            checked += 1
        if claim["metric"] == "cache_hit_rate":
            assert claim["value"] >= 1.5 * measured, (claim, measured)
            checked += 1

    assert checked == 3


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_harness_writes_spans_of_its_real_reads(
    vendor: str, runs: dict[tuple[str, str], Run]
) -> None:
    run = runs[(vendor, "warm-c32-b8")]

    parsed = collect_trace_dir(run.out.with_suffix(".trace"))

    assert parsed.warnings() == []
    by_id = {s.span_id: s for s in parsed.spans}
    requests = [s for s in parsed.spans if s.name == "request"]
    reads = [s for s in parsed.spans if s.name == "storage.read"]
    assert len(requests) == dict(run.metrics)[("requests", "total")]
    assert reads, "a warm run reads KV blocks back from the SSD tier"
    chain = [by_id[reads[0].parent_id or ""]]
    chain.append(by_id[chain[-1].parent_id or ""])
    chain.append(by_id[chain[-1].parent_id or ""])
    assert [s.name for s in chain] == ["kv_cache.lookup", "prefill", "request"]
    block = json.loads((ROOT / "examples" / vendor / "harness/config.json")
                       .read_text())["tiers"]["block_bytes"]  # fmt: skip
    assert {r.attributes["reprogate.io.bytes"] for r in reads} == {block}
    assert all(r.attributes["reprogate.io.offset"] % block == 0 for r in reads)
    measured_us = dict(run.metrics)[("kv_ssd_read_us", "mean")]
    spans_us = sum(r.duration_ns for r in reads) / len(reads) / 1000
    assert spans_us == pytest.approx(measured_us, rel=0.01)
    hits = sum(int(s.attributes.get("reprogate.kv.hits", 0)) for s in parsed.spans)
    assert hits > 0
    assert "spans:" in run.stdout
