"""Transparency log benchmark: prints figures, asserts
nothing about timing.

    python -m tests.perf.bench_log [--entries 100000] [--points 10000,100000]
                                   [--batch 1] [--database-url URL] [--work-dir DIR]

1. in a subprocess with a throw-away SQLite database (migrated; or the EMPTY
   database ``--database-url`` names, e.g. PostgreSQL), appends ``--entries``
   leaves of about 300 bytes (a deposit record's size) through ``log_append``,
   ``--batch`` appends per transaction (default 1: one deposit, one transaction);
2. when the log reaches each of ``--points``, times inclusion proofs
   (``log_inclusion_proof``, database reads included) for 200 random entries and
   a consistency proof, verifies every one against ``log_root`` (a wrong proof
   exits non-zero), and counts the queries and stored nodes each proof reads;
3. signs a checkpoint at the end and prints a table: appends/s overall and per
   stretch, proof times (mean, p50, max in ms), nodes read, queries, rows stored.

Exits non-zero only on errors (a subprocess failed, a proof did not verify),
never because of a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[2]
SAMPLES: Final = 200
ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "WARNING",
}


# --- the benchmark subprocess -------------------------------------------------------


def _leaf(n: int) -> bytes:
    record = {
        "blobs": [{"sha256": f"{n:064x}", "size": 1_000_000 + n}],
        "kind": "bundle",
        "organisation": "acme-flash",
        "rfp": "RFP-BENCH-1",
        "time": f"2026-11-29T12:{n // 60 % 60:02d}:{n % 60:02d}Z",
        "bundle": f"{n:032x}",
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def _append(start: int, stop: int, batch: int) -> float:
    """Append entries ``start`` to ``stop - 1``; the seconds it took."""
    from django.db import transaction

    from artifacts.services.transparency import log_append

    began = time.perf_counter()
    for first in range(start, stop, batch):
        with transaction.atomic():
            for n in range(first, min(first + batch, stop)):
                log_append(_leaf(n))
    return time.perf_counter() - began


def _time_proofs(size: int, rng: random.Random) -> dict[str, Any]:
    """Time inclusion proofs of random entries at ``size``; verify each."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from artifacts.lib.transparency import merkle, tree
    from artifacts.selectors.log import log_consistency_proof, log_root
    from artifacts.selectors.log import log_inclusion_proof as prove

    root, timings, nodes, queries, longest = log_root(size), [], 0, 0, 0
    for index in (rng.randrange(size) for _ in range(SAMPLES)):
        with CaptureQueriesContext(connection) as captured:
            began = time.perf_counter()
            proof = prove(index, size)
            timings.append(time.perf_counter() - began)
        queries = max(queries, len(captured))
        nodes = max(nodes, len(tree.inclusion_proof_plan(index, size)))
        hashed = merkle.leaf_hash(_leaf(index))
        merkle.verify_inclusion(hashed, index, size, proof, root)
        longest = max(longest, len(proof))
    first = max(1, size // 3)
    began = time.perf_counter()
    consistency = log_consistency_proof(first, size)
    consistency_s = time.perf_counter() - began
    merkle.verify_consistency(first, size, log_root(first), root, consistency)
    return {
        "size": size,
        "mean_ms": statistics.fmean(timings) * 1000,
        "p50_ms": statistics.median(timings) * 1000,
        "max_ms": max(timings) * 1000,
        "nodes": nodes,
        "queries": queries,
        "proof_hashes": longest,
        "consistency_ms": consistency_s * 1000,
        "consistency_nodes": len(tree.consistency_proof_plan(first, size)),
    }


def child(entries: int, points: list[int], batch: int) -> int:
    import django

    django.setup()
    from django.core.management import call_command

    from artifacts.models import LogNode
    from artifacts.services.transparency import checkpoint_publish

    call_command("migrate", interactive=False, verbosity=0)
    rng = random.Random(5)  # noqa: S311 - which entries to prove, not secrets
    size, stretches, proofs = 0, [], []
    for stop in sorted({*points, entries}):
        if stop > size:
            stretches.append((size, stop, _append(size, stop, batch)))
            size = stop
        if stop in points:
            proofs.append(_time_proofs(stop, rng))
    began = time.perf_counter()
    checkpoint = checkpoint_publish()
    report = {
        "stretches": stretches,
        "proofs": proofs,
        "checkpoint_ms": (time.perf_counter() - began) * 1000,
        "checkpoint_size": checkpoint.size,
        "stored_nodes": LogNode.objects.count(),
        "vendor": django.db.connection.vendor,
    }
    print(json.dumps(report))
    return 0


# --- the parent: set up, run, print ---------------------------------------------------


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        **ENV,
        "DATABASE_URL": args.database_url or f"sqlite:///{work / 'bench.sqlite3'}",
        "REPROGATE_VAR_DIR": str(work / "var"),
        "REPROGATE_LOG_KEY_PATH": str(work / "log.pem"),
        "REPROGATE_LOG_ORIGIN": "reprogate.bench/log",
    }
    command = [sys.executable, "-m", "tests.perf.bench_log", "--child"]
    command += ["--entries", str(args.entries), "--batch", str(args.batch)]
    command += ["--points", ",".join(map(str, args.points))]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the benchmark subprocess failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(report: dict[str, Any], batch: int) -> str:
    per = "one append per transaction" if batch == 1 else f"{batch} per transaction"
    total_n = sum(stop - start for start, stop, _ in report["stretches"])
    total_s = sum(seconds for _, _, seconds in report["stretches"])
    lines = [f"transparency log on {report['vendor']}, {per}", ""]
    lines.append(f"{'appends, entries':<52}{total_n:>12,}")
    lines.append(f"{'appends, seconds':<52}{total_s:>12.1f}")
    lines.append(f"{'appends/s overall':<52}{total_n / total_s:>12.0f}")
    for start, stop, seconds in report["stretches"]:
        label = f"appends/s from {start:,} to {stop:,}"
        lines.append(f"{label:<52}{(stop - start) / seconds:>12.0f}")
    for proof in report["proofs"]:
        at = f"at {proof['size']:,} entries"
        lines += [
            "",
            f"{'inclusion proof ' + at + ', mean ms':<52}{proof['mean_ms']:>12.2f}",
            f"{'inclusion proof ' + at + ', p50 ms':<52}{proof['p50_ms']:>12.2f}",
            f"{'inclusion proof ' + at + ', max ms':<52}{proof['max_ms']:>12.2f}",
            f"{'  stored nodes read (max)':<52}{proof['nodes']:>12}",
            f"{'  queries (max)':<52}{proof['queries']:>12}",
            f"{'  proof hashes (max)':<52}{proof['proof_hashes']:>12}",
            f"{'consistency proof ' + at + ', ms':<52}{proof['consistency_ms']:>12.2f}",
            f"{'  stored nodes read':<52}{proof['consistency_nodes']:>12}",
        ]
    lines += [
        "",
        f"{'checkpoint signed at size':<52}{report['checkpoint_size']:>12,}",
        f"{'checkpoint_publish ms':<52}{report['checkpoint_ms']:>12.1f}",
        f"{'stored nodes (rows)':<52}{report['stored_nodes']:>12,}",
    ]
    return "\n".join(lines)


def _points(text: str) -> list[int]:
    return sorted({int(p) for p in text.split(",") if p.strip()})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--points", type=_points, default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=1, help="appends per transaction")
    parser.add_argument("--database-url", help="an EMPTY database (default: SQLite)")
    parser.add_argument("--work-dir", type=Path, help="work there and keep the files")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.points = [p for p in args.points if 0 < p <= args.entries]
    if args.child:
        return child(args.entries, args.points, max(1, args.batch))
    if args.work_dir:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        print(table(run(args, args.work_dir), args.batch))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-log-") as work:
        print(table(run(args, Path(work)), args.batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
