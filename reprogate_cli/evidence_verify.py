"""``reprogate evidence verify PACKAGE.zip``: check an auditor's evidence package
offline (``artifacts.lib.evidence.verify`` says what is checked of every
package, ``gates.lib.engine.evidence`` what more of a gate evaluation's: the
re-evaluation and its reports, ``benchmarks.lib.evidence`` what more of the lab
runs': their outputs, telemetry and host-signed statements) and print a
readable report. Exit 0 when every check passes, 1 when any fails (each failure
is printed, naming the file or deposit), 2 for usage errors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from artifacts.lib.evidence.verify import EvidenceReport


def _log_key(value: str | None) -> str | None:
    """``--log-key`` is the key itself or a file holding it."""
    if value is None:
        return None
    if "+" not in value and Path(value).is_file():
        return Path(value).read_text("ascii", "replace").strip()
    return value.strip()


def render(report: EvidenceReport, *, verbose: bool = False) -> str:
    """The report: a verdict line, the log facts, failures (every one), and
    with ``verbose`` each passed check too."""
    failures = report.failures
    if report.ok:
        lines = [f"VALID {report.path}: {len(report.checks)} checks passed"]
    else:
        count = len(failures)
        lines = [f"INVALID {report.path}: {count} failure{'s' * (count != 1)}"]
    if report.checkpoint_size is not None:
        lines += [
            f"  log         {report.origin}",
            f"  checkpoint  size {report.checkpoint_size}, root {report.root_hash}",
            f"  log key     {report.log_key}",
        ]
    lines += [f"  FAIL  {c.subject}: {c.message}" for c in failures]
    if verbose or report.ok:
        lines += [f"  ok    {c.subject}: {c.message}" for c in report.checks if c.ok]
    if report.ok:
        lines.append(
            "  Compare the log key with the one the server publishes "
            "(GET /api/v1/log/key), or pass it with --log-key."
        )
    return "\n".join(lines)


def cmd_evidence_verify(args: argparse.Namespace) -> int:
    if not args.package.is_file():
        print(f"reprogate: {args.package} is not a file", file=sys.stderr)
        return 2
    # imported here: the checks need numpy, other commands should not wait for it
    from artifacts.lib.evidence.verify import verify_package
    from benchmarks.lib.evidence import RUN_CHECKS
    from gates.lib.engine.evidence import GATE_CHECKS

    checks = (*GATE_CHECKS, *RUN_CHECKS)
    report = verify_package(args.package, log_key=_log_key(args.log_key), checks=checks)
    print(render(report, verbose=args.verbose))
    return 0 if report.ok else 1


def add_evidence_commands(commands: Any) -> None:
    evidence = commands.add_parser("evidence", help="check escrow evidence")
    actions = evidence.add_subparsers(dest="evidence_command", required=True)
    verify = actions.add_parser(
        "verify",
        help="check an evidence package offline",
        description=(
            "Checks blob digests, the deposit leaves naming them, their inclusion "
            "proofs up to the signed checkpoint, the checkpoint's signature, "
            "each bundle manifest's vendor signature, and in a gate evaluation's "
            "package the re-evaluation of the gate and each report's PDF digest "
            "and signed statement, and each lab run's outputs, runner artefacts "
            "and host-signed statement; no network."
        ),
    )
    verify.add_argument("package", type=Path, metavar="PACKAGE.zip")
    verify.add_argument(
        "--log-key",
        metavar="KEY",
        help="the log's verifier key (or a file with it) you trust; "
        "the package's log/key.pub must be that key",
    )
    verify.add_argument(
        "-v", "--verbose", action="store_true", help="also list every passed check"
    )
    verify.set_defaults(handler=cmd_evidence_verify)
