"""``reprogate gate evaluate --plan PLAN.json --results RESULTS.json``: recompute
the verdicts of a gate plan offline from the same documents the server judged,
and print each gate's ``reprogate.evaluation/v1`` document as one canonical JSON
line (the bytes the server stores). Exit 0 whatever the verdicts; 2 when a file
cannot be read, is not JSON, or is not a valid document (every problem is
printed on stderr with its path).

``reprogate gate evaluate --from RESPONSE.json [--check]`` does the same with
the plan and results of a saved ``GET /api/v1/evaluations/<id>/`` body and prints
the evaluation of its gate; ``--check`` exits 1 when that differs, byte for
byte, from the evaluation the response holds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


class _Unreadable(Exception):
    pass


def _load(path: Path, what: str) -> Any:
    from gates.lib.engine import load_json

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


def _invalid(plan: Any, results: Any, plan_name: Any, results_name: Any) -> bool:
    """Print every problem of both documents with its path; True if any."""
    from gates.lib.engine import plan_problems, results_problems

    invalid = False
    for path, kind, problems in (
        (plan_name, "gate plan", plan_problems(plan)),
        (results_name, "results document", results_problems(results)),
    ):
        if problems:
            invalid = True
            print(f"reprogate: {path} is not a valid {kind}:", file=sys.stderr)
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
    return invalid


def cmd_gate_evaluate(args: argparse.Namespace) -> int:
    from gates.lib.engine import evaluate_plan, evaluation_bytes

    if args.response is not None and args.plan is None and args.results is None:
        return _evaluate_response(args)
    if args.plan is None or args.results is None or args.check or args.response:
        print(
            "reprogate: gate evaluate needs --plan and --results, or else --from "
            "RESPONSE.json (--check goes with --from)",
            file=sys.stderr,
        )
        return 2
    try:
        plan = _load(args.plan, "plan")
        results = _load(args.results, "results")
    except _Unreadable as exc:
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2
    if _invalid(plan, results, args.plan, args.results):
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


DOCUMENTS = ("evaluation", "plan", "results")


def _response_gate(args: argparse.Namespace, response: Any) -> str | None:
    """The gate the saved response evaluated (``None``, with the reason on
    stderr, when the file is not such a response or ``--gate`` names another)."""
    name = args.response
    if not isinstance(response, dict) or not all(
        isinstance(response.get(key), dict) for key in DOCUMENTS
    ):
        print(
            f"reprogate: {name} is not a saved GET /api/v1/evaluations/<id>/ "
            'body: it needs the objects "evaluation", "plan" and "results"',
            file=sys.stderr,
        )
        return None
    gate = response["evaluation"].get("gate")
    if not isinstance(gate, str):
        print(f"reprogate: {name}: evaluation.gate is not a gate name", file=sys.stderr)
        return None
    if args.gate is not None and args.gate != gate:
        print(
            f"reprogate: {name} is the evaluation of gate {gate!r}, not {args.gate!r}",
            file=sys.stderr,
        )
        return None
    return gate


def _evaluate_response(args: argparse.Namespace) -> int:
    """``--from RESPONSE.json``: evaluate the response's plan and results, print
    the evaluation of its gate; ``--check``: exit 1 if it differs from the
    response's ``evaluation`` (canonical bytes compared)."""
    from gates.lib.engine import evaluate_plan, evaluation_bytes

    try:
        response = _load(args.response, "response")
    except _Unreadable as exc:
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2
    gate = _response_gate(args, response)
    if gate is None:
        return 2
    plan, results = response["plan"], response["results"]
    if _invalid(plan, results, f"{args.response}: plan", f"{args.response}: results"):
        return 2
    if gate not in [g["name"] for g in plan["gates"]]:
        print(
            f"reprogate: {args.response}: its plan has no gate {gate!r}",
            file=sys.stderr,
        )
        return 2
    doc = next(d for d in evaluate_plan(plan, results) if d["gate"] == gate)
    out = evaluation_bytes(doc)
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.buffer.flush()
    if args.check and out != evaluation_bytes(response["evaluation"]):
        stored = response["evaluation"].get("verdict")
        print(
            f"reprogate: the evaluation of gate {gate!r} recomputed from "
            f"{args.response} differs from the one it holds (recomputed "
            f"{doc['verdict']}, held {stored})",
            file=sys.stderr,
        )
        return 1
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
            "has problems (each printed with its path); with --from and "
            "--check, 1 if the recomputed evaluation differs from the saved "
            "response's."
        ),
    )
    evaluate.add_argument(
        "--plan", type=Path, metavar="PLAN.json", help="the gate plan"
    )
    evaluate.add_argument(
        "--results",
        type=Path,
        metavar="RESULTS.json",
        help="the measured runs",
    )
    evaluate.add_argument("--gate", metavar="NAME", help="evaluate only this gate")
    evaluate.add_argument(
        "--from",
        dest="response",
        type=Path,
        metavar="RESPONSE.json",
        help="instead of --plan and --results: the saved body of "
        "GET /api/v1/evaluations/<id>/ (its plan and results; prints the "
        "evaluation of its gate)",
    )
    evaluate.add_argument(
        "--check",
        action="store_true",
        help="with --from: exit 1 (and say so on stderr) unless the recomputed "
        "evaluation is byte for byte the one the response holds",
    )
    evaluate.set_defaults(handler=cmd_gate_evaluate)
