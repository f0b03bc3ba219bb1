"""``reprogate gate evaluate --plan PLAN.json --results RESULTS.json``: recompute
the verdicts of a gate plan offline from the same documents the server judged,
and print each gate's ``reprogate.evaluation/v1`` document as one canonical JSON
line (the bytes the server stores). Exit 0 whatever the verdicts; 2 when a file
cannot be read, is not JSON, or is not a valid document (every problem is
printed on stderr with its path)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


class _Unreadable(Exception):
    pass


def _load(path: Path, what: str) -> Any:
    from gates.engine import load_json

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _Unreadable(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return load_json(data)
    except UnicodeDecodeError:
        raise _Unreadable(f"{what} {path} is not UTF-8 text") from None
    except ValueError as exc:
        raise _Unreadable(f"{what} {path} is not JSON: {exc}") from None


def cmd_gate_evaluate(args: argparse.Namespace) -> int:
    from gates.engine import (
        evaluate_plan,
        evaluation_bytes,
        plan_problems,
        results_problems,
    )

    try:
        plan = _load(args.plan, "plan")
        results = _load(args.results, "results")
    except _Unreadable as exc:
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2
    invalid = False
    for path, kind, problems in (
        (args.plan, "gate plan", plan_problems(plan)),
        (args.results, "results document", results_problems(results)),
    ):
        if problems:
            invalid = True
            print(f"reprogate: {path} is not a valid {kind}:", file=sys.stderr)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
    if invalid:
        return 2
    names = [gate["name"] for gate in plan["gates"]]
    if args.gate is not None and args.gate not in names:
        print(
            f"reprogate: {args.plan} has no gate {args.gate!r} "
            f"(its gates: {', '.join(names)})",
            file=sys.stderr,
        )
        return 2
    out = sys.stdout.buffer
    for doc in evaluate_plan(plan, results):
        if args.gate is None or doc["gate"] == args.gate:
            out.write(evaluation_bytes(doc) + b"\n")
    out.flush()
    return 0


def add_gate_commands(commands: Any) -> None:
    gate = commands.add_parser(
        "gate", help="recompute acceptance-gate verdicts offline"
    )
    actions = gate.add_subparsers(dest="gate_command", required=True)
    evaluate = actions.add_parser(
        "evaluate",
        help="print each gate's evaluation of a plan against measured results",
        description=(
            "Judges the vendor's claims in a gate plan (reprogate.gate-plan/v1) "
            "against the lab's measured runs (reprogate.results/v1) by the "
            "published rules, and prints each gate's evaluation "
            "(reprogate.evaluation/v1: verdict, score, stop-loss, every "
            "criterion's reason, estimate and 95 % interval) as one JSON line, "
            "byte for byte what the server recorded for the same documents. "
            "Exit 0 whatever the verdicts; 2 if a document cannot be read or "
            "has problems (each printed with its path)."
        ),
    )
    evaluate.add_argument(
        "--plan", required=True, type=Path, metavar="PLAN.json", help="the gate plan"
    )
    evaluate.add_argument(
        "--results",
        required=True,
        type=Path,
        metavar="RESULTS.json",
        help="the measured runs",
    )
    evaluate.add_argument("--gate", metavar="NAME", help="evaluate only this gate")
    evaluate.set_defaults(handler=cmd_gate_evaluate)
