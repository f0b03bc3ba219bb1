"""Signed report benchmark: prints figures, asserts nothing about timing.

    python -m tests.perf.bench_reports [--pages 20] [--repeat 3] [--no-charts] [--cold]

Builds a benchmark report about ``--pages`` A4 pages long without a database: a
gate plan of many criteria (latencies lower, throughputs higher, percent and
absolute bands, thresholds) over several scenarios and a results document of
their runs, evaluated by the real engine (``gates.lib.engine.evaluate_plan``); the
report's lines come from ``gates.selectors.report_content``'s own functions (criteria
with
their Plotly figures, stop-loss), the runs with outputs, drift, deposits and
decisions are made up around them. First, as a worker process does when it
starts (``gates.tasks``), the warm-up (``renderers_warm_up``: Chromium started
and one small chart drawn, one small page laid out by WeasyPrint), timed and
printed apart; with ``--cold`` none, as a worker with
``REPROGATE_REPORT_WARM_UP=False``, whose first report starts Chromium. Then,
``--repeat`` times: draws every chart (``attach_charts``), renders the PDF
(``render_pdf``) and signs it (``sign_pdf`` with a signer made by
``signer_load_or_create`` in a temporary folder, no timestamp), each run timed
from the start of its charts, as a task's. Prints the pages, the first run's
seconds (charts, render, sign, total: a worker's first report), the median of
the later runs' (its next reports), each run, and the versions. The targets: a
first report under 10 s, the next ones under 6 s, for 20 pages. Exit status 0,
or non-zero only on an error.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DATABASE_URL": "sqlite://:memory:",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "WARNING",
}
METRICS: Final = (  # name, stat, unit, typical value, direction, band
    ("ttft_ms", "p99", "ms", 180.0, "lower", {"pct": 10}),
    ("tpot_ms", "p99", "ms", 40.0, "lower", {"abs": 5}),
    ("itl_ms", "p50", "ms", 12.0, "lower", {"pct": 15}),
    ("e2e_latency_ms", "p95", "ms", 2500.0, "lower", None),
    ("output_token_throughput_tps", "mean", "tok/s", 9000.0, "higher", {"pct": 10}),
    ("read_iops", "mean", "IOPS", 1.2e6, "higher", {"pct": 5}),
    ("cache_hit_rate", "mean", "", 0.93, "higher", {"abs": 0.02}),
)
GATE: Final = "lab-validation"
# A criterion takes about 1.2 pages (its table row and its chart, the runs of its
# scenario); a scenario has 7 criteria and 12 runs.
RUNS_PER_SCENARIO: Final = 12


def _setup_django() -> None:
    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic
    for key, value in ENV.items():
        os.environ[key] = value
    import django

    django.setup()


def build(pages: int, seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    """A plan of about 0.85 x ``pages`` criteria over scenarios of 7 criteria
    each, and the results of ``RUNS_PER_SCENARIO`` runs per scenario."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    count = max(1, math.ceil(pages * 0.85))
    scenarios = [f"s{i}-c{2**i}" for i in range(math.ceil(count / len(METRICS)))]
    criteria = []
    for k in range(count):
        metric, stat, _unit, typical, direction, band = METRICS[k % len(METRICS)]
        c: dict[str, Any] = {
            "id": f"{metric}-{stat}-{k}", "metric": metric, "stat": stat,
            "scenario": scenarios[k // len(METRICS)], "direction": direction,
            "min_runs": 3, "max_cv_pct": 15, "on_high_cv": "inconclusive",
            "blocking": k % 3 != 2, "weight": 1,
        }  # fmt: skip
        if band is None:
            c["threshold"] = typical * 1.12
        else:
            c.update(claim=typical, band=band)
        criteria.append(c)
    plan = {
        "schema": "reprogate.gate-plan/v1", "rfp": "RFP-BENCH", "vendor": "bench",
        "gates": [{"name": GATE, "stage": "lab", "consecutive_passes": 1,
                   "score": {"pass_pct": 90, "warn_pct": 75}, "criteria": criteria,
                   "stop_loss": [{"id": "env-drift", "drift_at_least": "major"},
                                 {"id": "failed-run", "run_failed": True}]}],
    }  # fmt: skip
    runs = []
    for scenario in scenarios:
        for repetition in range(1, RUNS_PER_SCENARIO + 1):
            metrics = [
                {"name": m, "stat": s, "unit": u,
                 "value": round(typical * rng.lognormvariate(0, 0.03), 4),
                 "source": {"file": "metrics.json", "key": f"metrics[{i}].value"}}
                for i, (m, s, u, typical, _d, _b) in enumerate(METRICS)
            ]  # fmt: skip
            runs.append({
                "id": str(_uuid(rng)), "scenario": scenario,
                "repetition": repetition, "status": "succeeded",
                "drift": "minor" if repetition == 1 else "none", "metrics": metrics,
            })  # fmt: skip
    return plan, {"schema": "reprogate.results/v1", "runs": runs}


def _uuid(rng: random.Random) -> str:
    import uuid

    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _fixed_id(n: int) -> str:
    import uuid

    return str(uuid.UUID(int=n + 1, version=4))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def context(pages: int) -> dict[str, Any]:
    """The report context (``gates/reports/evaluation.html``), charts not drawn."""
    from gates.lib.engine import evaluate_plan
    from gates.selectors import report_content as content

    plan, results = build(pages)
    (doc,) = evaluate_plan(plan, results)
    criteria = content.criterion_lines(plan, results, doc, GATE)
    counted = {r for c in doc["criteria"] for r in c["runs"]}
    runs = []
    for i, run in enumerate(results["runs"]):
        line = content.RunLine(
            id=run["id"], scenario=run["scenario"], repetition=run["repetition"],
            status=run["status"], counted=run["id"] in counted, drift=run["drift"],
            host=f"lab-{i % 4:02d}", os="Debian GNU/Linux 12 (bookworm)",
            kernel="6.1.0-28-amd64", cpu="AMD EPYC 9454 48-Core Processor",
            gpus="NVIDIA H100 80GB HBM3 x 8", output_log_index=100 + i,
        )  # fmt: skip
        line.outputs = [
            content.OutputLine(name, _sha(run["id"] + name), 4096)
            for name in ("metrics.json", "stdout.log")
        ]
        if run["drift"] == "minor":
            line.drift_entries = [
                {"field": "packages.cuda", "severity": "minor",
                 "declared": "12.4", "captured": "12.6"}
            ]  # fmt: skip
        runs.append(line)
    deposits = [
        content.DepositLine(
            "Run outputs", "Run outputs", _fixed_id(i), 100 + i,
            _sha(str(i)), "2026-11-30 12:00:00 UTC",
        )
        for i in range(len(runs))
    ]  # fmt: skip
    decision = content.DecisionLine(
        public_id=_fixed_id(1), kind="Promote", status="Recorded",
        rationale="Every blocking criterion passed on the lab's hosts.",
        decided_by="Bea Buyer (buyer)", decided_at="2026-11-30 13:00:00 UTC",
        second_by="Eve Evaluator (evaluator)", second_at="2026-11-30 14:00:00 UTC",
        second_note="Agreed.", withdrawn_by="—", withdrawn_at="—", log_index="900",
        on_this_evaluation=True,
    )  # fmt: skip
    stop_loss = content.stop_loss_lines(plan, doc, GATE)
    ctx: dict[str, Any] = {
        "kind": "Benchmark report",
        "rfp": {"reference": "RFP-BENCH", "title": "Inference platform",
                "buyer": "Northwind AI"},
        "vendor": {"name": "Bench Vendor", "slug": "bench"},
        "gate": GATE, "plan_version": 1,
        "evaluation": {
            "public_id": _fixed_id(2), "verdict": doc["verdict"],
            "score_pct": content.num(doc.get("score_pct")),
            "evaluated_at": "2026-11-30 12:30:00 UTC", "evaluated_by": "ReproGate",
            "plan_sha256": _sha("plan"), "results_sha256": _sha("results"),
            "evaluation_sha256": _sha("evaluation"), "log_index": 99,
            "campaign": _fixed_id(3),
        },
        "bundle": {
            "public_id": _fixed_id(4), "filename": "bundle.tar.gz",
            "archive_sha256": _sha("archive"), "size": 1 << 30,
            "manifest_sha256": _sha("manifest"), "signature_kind": "OpenSSH signature",
            "key_fingerprint": "SHA256:" + "A" * 43, "key_type": "Ed25519",
            "uploaded_at": "2026-11-29 12:00:00 UTC",
        },
        "criteria": criteria,
        "charted": [c for c in criteria if c.figure is not None],
        "stop_loss": stop_loss, "stop_loss_triggered": False,
        "runs": runs, "drifted_runs": [r for r in runs if r.drift_entries],
        "max_drift": "minor", "lab": "gpu-a",
        "scenarios": [
            {"name": s, "parameters": "cache cold", "runs": RUNS_PER_SCENARIO,
             "succeeded": RUNS_PER_SCENARIO}
            for s in sorted({r.scenario for r in runs})
        ],
        "decisions": [decision], "deposits": deposits, "disputes": [],
        "log": content.LogHead("reprogate.example/log", 1000, _sha("root"), True,
                               True, "2026-11-30 14:00:05 UTC", ""),
        "signer_fingerprint": _sha("signer"),
    }  # fmt: skip
    ctx["toc"] = content.report_sections(ctx)
    ctx["show_toc"] = len(ctx["toc"]) > content.TOC_MIN_SECTIONS
    return ctx


def _cpu() -> float:
    """CPU seconds of this process and its finished children (Chromium)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one_run(pages: int, signer: Any, charts: bool) -> dict[str, float | int]:
    from gates.lib.signing.pades import sign_pdf
    from gates.selectors.report_content import attach_charts
    from gates.services.report_pdf import count_pages, render_pdf

    ctx = context(pages)
    t0, c0 = time.perf_counter(), _cpu()
    if charts:
        attach_charts(ctx["criteria"])
    t1, c1 = time.perf_counter(), _cpu()
    pdf = render_pdf("gates/reports/evaluation.html", ctx)
    t2, c2 = time.perf_counter(), _cpu()
    signed = sign_pdf(pdf, signer, reason="Benchmark report")
    t3, c3 = time.perf_counter(), _cpu()
    return {
        "pages": count_pages(signed), "charts": t1 - t0, "render": t2 - t1,
        "sign": t3 - t2, "total": t3 - t0, "bytes": len(signed),
        "charts_cpu": c1 - c0, "render_cpu": c2 - c1, "sign_cpu": c3 - c2,
        "total_cpu": c3 - c0,
        "criteria": len(ctx["criteria"]), "runs": len(ctx["runs"]),
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--no-charts", action="store_true", help="leave the charts out (no Chromium)"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="no warm-up: the first run starts Chromium (REPROGATE_REPORT_WARM_UP off)",
    )
    args = parser.parse_args(argv)
    if args.pages < 1 or args.repeat < 1:
        parser.error("--pages and --repeat must be at least 1")
    _setup_django()
    import logging

    logging.disable(logging.INFO)  # WeasyPrint's and kaleido's progress lines
    from gates.lib.signing.pki import signer_load_or_create

    warm_up: dict[str, float | str] = {}
    warm_up_s = 0.0
    if not args.cold and not args.no_charts:
        from gates.services.report_pdf import renderers_warm_up

        t0 = time.perf_counter()
        warm_up = renderers_warm_up()
        warm_up_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="bench-reports-") as keys:
        t0 = time.perf_counter()
        signer = signer_load_or_create(Path(keys), create=True)
        keys_s = time.perf_counter() - t0
        runs = [
            one_run(args.pages, signer, not args.no_charts) for _ in range(args.repeat)
        ]
    first, later = runs[0], runs[1:] or runs[:1]
    med = {k: statistics.median(r[k] for r in later) for k in runs[0]}
    print(
        f"python {platform.python_version()}, weasyprint {version('weasyprint')}, "
        f"pyhanko {version('pyhanko')}, kaleido {version('kaleido')}, "
        f"plotly {version('plotly')}, {platform.machine()}"
    )
    print(f"pages                         {int(med['pages'])}")
    print(f"criteria, runs                {int(med['criteria'])}, {int(med['runs'])}")
    print(f"signed PDF (bytes)            {int(med['bytes']):,}")
    print(f"signer created (s)            {keys_s:.2f}")
    if warm_up:
        parts = ", ".join(
            f"{part} {value:.2f}" if isinstance(value, float) else f"{part} {value}"
            for part, value in warm_up.items()
        )
        print(f"warm-up at the worker's start {warm_up_s:.2f} ({parts})")
    else:
        print("warm-up at the worker's start none (--cold or --no-charts)")
    rows = (
        ("charts", "charts (s)"),
        ("render", "render (s)"),
        ("sign", "sign (s)"),
        ("total", "total (s)"),
    )
    first_label = "first run (after warm-up)" if warm_up else "first run (cold)"
    print(f"{'':30}{first_label:31}median of the next {len(later)}")
    # CPU: this process's (Chromium's is not counted while it runs)
    print(f"{'':30}wall    CPU                    wall    CPU")
    for key, label in rows:
        print(
            f"{label:30}{first[key]:5.2f}   {first[key + '_cpu']:5.2f}"
            f"                  {med[key]:5.2f}   {med[key + '_cpu']:5.2f}"
        )
    for name, figures, target in (("first run", first, 10), ("later runs", med, 6)):
        met = "met" if figures["total"] < target else "NOT met"
        print(f"target under {target:2} s, {name:10} {met}")
    load = os.getloadavg()[0]
    print(f"load average (1 min)          {load:.2f} on {os.cpu_count()} CPUs")
    for i, r in enumerate(runs, 1):
        print(
            f"run {i}: charts {r['charts']:.2f} s, render {r['render']:.2f} s, "
            f"sign {r['sign']:.2f} s, total {r['total']:.2f} s, {r['pages']} pages"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
