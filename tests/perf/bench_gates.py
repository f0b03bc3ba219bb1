"""Gate evaluation benchmark: prints figures, asserts nothing about timing.

    python -m tests.perf.bench_gates [--runs 5000] [--scenarios 1] [--repeat 3]

Builds a gate plan of 7 criteria (latencies lower, throughputs higher, percent
and absolute bands, a threshold) and 4 stop-loss conditions (a ceiling on any
scenario, a floor, environment drift, a failed run), and a results document of
``--runs`` runs spread over ``--scenarios`` scenarios (default 1: every
criterion judges every succeeded run, the worst case), each run reporting 8
metrics, 1 % of them failed and 1 % with minor drift, values from a seeded
``random.Random``. Then times, in this process, ``evaluate_plan`` (validation
of both documents, their digests, every criterion's statistics and bootstrap,
stop-loss, score) and ``evaluation_bytes``: CPU time (``time.process_time``)
and wall time, the median of ``--repeat`` calls. The target is under 1 s of CPU
for 5,000 runs. Exit status 0, or non-zero only on an error.

With ``--queries`` it then prints how many SQL queries the gate board (the
selector and the page) and one vendor's gate page take for 2 and for 20
vendors (each with a frozen plan, an evaluation, a decision and an open re-test
obligation), on a throw-away in-memory SQLite database migrated in this
process: the figures must not grow with the vendors.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from gates.lib.engine import evaluate_plan, evaluation_bytes

METRICS = (  # name, stat, unit, typical value, direction, band
    ("ttft_ms", "p99", "ms", 180.0, "lower", {"pct": 10}),
    ("tpot_ms", "p99", "ms", 40.0, "lower", {"abs": 5}),
    ("itl_ms", "p50", "ms", 12.0, "lower", {"pct": 15}),
    ("e2e_latency_ms", "p95", "ms", 2500.0, "lower", None),  # threshold 2800
    ("output_token_throughput_tps", "mean", "tok/s", 9000.0, "higher", {"pct": 10}),
    ("read_iops", "mean", "IOPS", 1.2e6, "higher", {"pct": 5}),
    ("cache_hit_rate", "mean", "", 0.93, "higher", {"abs": 0.02}),
)


def build(
    runs: int, scenarios: int, seed: int = 7
) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    names = [f"s{i}" for i in range(scenarios)]
    criteria = []
    for i, (metric, stat, _unit, typical, direction, band) in enumerate(METRICS):
        c: dict[str, Any] = {
            "id": f"{metric}-{stat}", "metric": metric, "stat": stat,
            "scenario": names[i % scenarios], "direction": direction,
            "min_runs": 3, "max_cv_pct": 15, "on_high_cv": "inconclusive",
            "blocking": i < 5, "weight": 1 + i % 2,
        }  # fmt: skip
        if band is None:
            c["threshold"] = typical * 1.12
        else:
            c.update(claim=typical, band=band)
        criteria.append(c)
    stop_loss = [
        {"id": "ttft-ceiling", "metric": "ttft_ms", "stat": "p99.9", "scenario": "*",
         "above": 2000},
        {"id": "iops-floor", "metric": "read_iops", "stat": "mean",
         "scenario": names[0], "below": 1000},
        {"id": "env-drift", "drift_at_least": "major"},
        {"id": "failed-run", "run_failed": True},
    ]  # fmt: skip
    plan = {
        "schema": "reprogate.gate-plan/v1", "rfp": "RFP-BENCH", "vendor": "bench",
        "gates": [{"name": "lab-validation", "stage": "lab", "consecutive_passes": 1,
                   "score": {"pass_pct": 90, "warn_pct": 75},
                   "criteria": criteria, "stop_loss": stop_loss}],
    }  # fmt: skip
    rows = []
    for i in range(runs):
        metrics = [
            {"name": m, "stat": s, "unit": u,
             "value": round(typical * rng.lognormvariate(0, 0.03), 4),
             "source": {"file": "metrics.json", "key": f"metrics[{k}].value"}}
            for k, (m, s, u, typical, _d, _b) in enumerate(METRICS)
        ]  # fmt: skip
        metrics.append(
            {"name": "ttft_ms", "stat": "p99.9", "unit": "ms",
             "value": round(300 * rng.lognormvariate(0, 0.1), 3),
             "source": {"file": "metrics.json", "key": "metrics[7].value"}}
        )  # fmt: skip
        rows.append({
            "id": f"run-{i:05d}", "scenario": names[i % scenarios],
            "repetition": i // scenarios + 1,
            "status": "failed" if rng.random() < 0.01 else "succeeded",
            "drift": "minor" if rng.random() < 0.01 else "none", "metrics": metrics,
        })  # fmt: skip
    return plan, {"schema": "reprogate.results/v1", "runs": rows}


def timed(call: Any, repeat: int) -> tuple[float, float, Any]:
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        result = call()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall), result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--scenarios", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--queries",
        action="store_true",
        help="also print the gate board's and gate page's query counts",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.scenarios < 1 or args.repeat < 1:
        parser.error("--runs, --scenarios and --repeat must be at least 1")
    plan, results = build(args.runs, args.scenarios)
    cpu, wall, docs = timed(lambda: evaluate_plan(plan, results), args.repeat)
    out_cpu, _, data = timed(
        lambda: b"".join(evaluation_bytes(d) for d in docs), args.repeat
    )
    (doc,) = docs
    judged = max(len(c["values"]) for c in doc["criteria"])
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}")  # fmt: skip
    print(
        f"runs                          {args.runs:,} in {args.scenarios} scenario(s)"
    )
    print(
        f"criteria, stop-loss           {len(doc['criteria'])}, {len(doc['stop_loss'])}"
    )
    print(f"values per criterion (max)    {judged:,}")
    print(f"verdict                       {doc['verdict']} ({doc['score_pct']} %)")
    print(f"evaluate_plan CPU time (s)    {cpu:.3f}   (median of {args.repeat})")
    print(f"evaluate_plan wall time (s)   {wall:.3f}")
    print(f"evaluation_bytes CPU (s)      {out_cpu:.3f}   ({len(data):,} bytes)")
    print(f"target: under 1 s of CPU      {'met' if cpu < 1 else 'NOT met'}")
    if args.queries:
        query_counts(plan, results)
    return 0


# --- the read side's query counts ---------------------------------------------------

QUERY_ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DATABASE_URL": "sqlite://:memory:",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "WARNING",
}


def _setup_django() -> None:
    import os
    import warnings

    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic

    for key, value in QUERY_ENV.items():
        os.environ[key] = value
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import override_settings, setup_test_environment

    setup_test_environment()  # the test client's host is allowed
    override_settings(  # no collected static manifest, nothing written to disk
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
            "staticfiles": {
                "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
            },
        }
    ).enable()
    call_command("migrate", verbosity=0, interactive=False)


def _tender(
    n: int, plan: dict[str, Any], results: dict[str, Any], doc: dict[str, Any]
) -> tuple[Any, Any, list[Any]]:
    """An opened RFP with ``n`` vendors, each with a frozen plan, one evaluation
    of lab-validation (FAIL), a hold decision and an open re-test obligation."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model

    from accounts.models import Membership, Organisation, Role
    from accounts.selectors import clock
    from artifacts.lib.canonical import canonical_json
    from artifacts.models import Blob, Bundle
    from benchmarks.models import Campaign, LabPool
    from gates.lib.engine.documents import evaluation_bytes, sha256_hex
    from gates.models import Decision, Evaluation, GatePlan, RetestObligation
    from procurement.models import Rfp

    now = clock.now()
    buyer_org = Organisation.objects.create(
        slug=f"buyer-{n}", name=f"Buyer {n}", kind="buyer"
    )
    lab = Organisation.objects.create(slug=f"lab-{n}", name="Lab", kind="lab")
    buyer_org.engages.add(lab)
    user = get_user_model().objects.create(username=f"buyer-{n}")
    Membership.objects.create(user=user, organisation=buyer_org, role=Role.BUYER)
    rfp = Rfp.objects.create(
        reference=f"RFP-Q-{n}", title="Query counts", buyer_organisation=buyer_org,
        status=Rfp.Status.OPENED, submission_deadline=now - timedelta(days=1),
    )  # fmt: skip
    pool = LabPool.objects.create(name=f"pool-{n}", lab_organisation=lab)
    blob = Blob.objects.create(sha256=f"{n:064x}", size=1, storage_key=f"k{n}")
    vendors = []
    for i in range(n):
        org = Organisation.objects.create(
            slug=f"v{n}-{i:02d}", name=f"Vendor {i:02d}", kind="vendor"
        )
        rfp.invited_vendors.add(org)
        own = {**plan, "rfp": rfp.reference, "vendor": org.slug}
        frozen = GatePlan.objects.create(
            rfp=rfp, vendor_organisation=org, version=1, status="frozen",
            document=canonical_json(own).decode(), sha256=sha256_hex(own),
            created_by=user, frozen_by=user, frozen_at=now,
        )  # fmt: skip
        bundle = Bundle.objects.create(
            rfp=rfp, organisation=org, uploaded_by=user, status="accepted",
            sha256=f"{i:064x}", size=1, archive_blob=blob,
        )  # fmt: skip
        campaign = Campaign.objects.create(
            rfp=rfp, bundle=bundle, pool=pool, started_by=user, repetitions=3
        )
        evaluation = Evaluation.objects.create(
            plan=frozen, rfp=rfp, vendor_organisation=org, gate="lab-validation",
            campaign=campaign, verdict="FAIL", plan_document=frozen.document,
            results_document=canonical_json(results).decode(),
            evaluation_document=evaluation_bytes(doc).decode(),
            plan_sha256="0" * 64, results_sha256="0" * 64,
            evaluation_sha256="0" * 64, evaluated_at=now,
        )  # fmt: skip
        Decision.objects.create(
            plan=frozen, gate="lab-validation", evaluation=evaluation, kind="hold",
            status="recorded", rationale="Bench.", decided_by=user, decided_at=now,
        )  # fmt: skip
        RetestObligation.objects.create(
            rfp=rfp, vendor_organisation=org, plan=frozen, gate="lab-validation",
            evaluation=evaluation, reason="Bench.", max_attempts=2,
            deadline=now + timedelta(days=30),
        )  # fmt: skip
        vendors.append(org)
    return rfp, user, vendors


def query_counts(plan: dict[str, Any], results: dict[str, Any]) -> None:
    """Print the board's and the gate page's query counts for 2 and 20 vendors."""
    small = {**results, "runs": results["runs"][:12]}
    (doc,) = evaluate_plan(plan, small)
    _setup_django()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from gates.selectors.board import gate_board

    figures = []
    for n in (2, 20):
        rfp, user, vendors = _tender(n, plan, small, doc)
        client = Client()
        client.force_login(user)
        board_url = reverse("gates:board", args=[rfp.public_id])
        gate_url = reverse(
            "gates:gate", args=[rfp.public_id, vendors[0].slug, "lab-validation"]
        )
        client.get(board_url)  # warm: session, content types
        with CaptureQueriesContext(connection) as selector:
            rows = gate_board(rfp=rfp, user=user)
        with CaptureQueriesContext(connection) as board_page:
            board = client.get(board_url)
        with CaptureQueriesContext(connection) as gate_page:
            gate = client.get(gate_url)
        if (len(rows), board.status_code, gate.status_code) != (n, 200, 200):
            raise RuntimeError(f"unexpected pages for {n} vendors")
        figures.append(
            (n, len(selector.captured_queries), len(board_page.captured_queries),
             len(gate_page.captured_queries))
        )  # fmt: skip
    for n, selector_q, board_q, gate_q in figures:
        print(
            f"queries, {n:2d} vendors           gate_board {selector_q}, "
            f"board page {board_q}, gate page {gate_q}"
        )
    constant = len({f[1:] for f in figures}) == 1
    print(f"queries constant in vendors   {'yes' if constant else 'NO'}")


if __name__ == "__main__":
    sys.exit(main())
