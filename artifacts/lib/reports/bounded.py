"""``pades.check_pdf`` in a child process that cannot hang or exhaust the
server: a size cap before anything is parsed, then a fresh interpreter
(``python -m artifacts.lib.reports.bounded``) with a wall-clock limit, an
address-space limit and a CPU-time limit it sets on itself before reading the
PDF, an environment holding nothing of the server's (no secrets), and the PDF
on its standard input. Whatever goes wrong in the child (a crash, the memory
limit, the timeout, output that is not the verdict) is a named problem.

Protocol: one JSON line ``{"trust_roots_pem", "memory_bytes", "cpu_seconds"}``
then the PDF's bytes on stdin; the verdict as one JSON object on stdout.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Final

from artifacts.lib.children import PROJECT, module_command
from artifacts.lib.reports.pades import check_pdf

MiB: Final = 1024 * 1024
MAX_OUTPUT: Final = 1 * MiB


@dataclass(frozen=True)
class PdfLimits:
    max_bytes: int = 64 * MiB  # a PDF above it is not parsed at all
    timeout_seconds: float = 30.0  # wall clock, start-up included
    memory_bytes: int = 1024 * MiB  # the child's address space
    cpu_seconds: int = 20


def _problem(code: str, message: str) -> dict[str, Any]:
    return {
        "status": "unreadable",
        "signatures": [],
        "problem": {"code": code, "message": message},
    }


def size_refused(size: int, limits: PdfLimits) -> dict[str, Any] | None:
    """The verdict on a PDF of ``size`` bytes that is too large to check."""
    if size <= limits.max_bytes:
        return None
    return _problem(
        "report_too_large",
        f"The PDF is {size} bytes, over the {limits.max_bytes} bytes a report's "
        "signature is checked in.",
    )


def check_pdf_bounded(
    data: bytes, *, trust_roots_pem: bytes = b"", limits: PdfLimits | None = None
) -> dict[str, Any]:
    """``pades.check_pdf``'s verdict on ``data``, computed in a limited child."""
    limits = limits or PdfLimits()
    refused = size_refused(len(data), limits)
    if refused is not None:
        return refused
    header = {
        "trust_roots_pem": trust_roots_pem.decode("ascii", "replace"),
        "memory_bytes": limits.memory_bytes,
        "cpu_seconds": limits.cpu_seconds,
    }
    command, environment = module_command("artifacts.lib.reports.bounded")
    try:
        done = subprocess.run(  # noqa: S603 (our module, in a child of its own)
            command,
            input=json.dumps(header).encode() + b"\n" + data,
            capture_output=True,
            timeout=limits.timeout_seconds,
            env=environment,
            cwd=PROJECT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _problem(
            "report_check_timeout",
            f"Checking the PDF's signature took over {limits.timeout_seconds:g} "
            "seconds and was stopped.",
        )
    except OSError as error:
        return _problem("report_check_failed", f"The check could not start: {error}.")
    return _verdict(done)


def _verdict(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    try:
        verdict = json.loads(done.stdout[:MAX_OUTPUT])
    except ValueError:
        verdict = None
    if done.returncode == 0 and isinstance(verdict, dict) and "status" in verdict:
        return verdict
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    why = tail[0][:200] if tail else f"exit status {done.returncode}"
    return _problem(
        "report_check_failed",
        f"Checking the PDF's signature failed ({why}): the PDF may exceed the "
        "memory or CPU the check may use.",
    )


def _limit_self(memory_bytes: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))


def main() -> int:
    stream = sys.stdin.buffer
    header = json.loads(stream.readline())
    _limit_self(int(header["memory_bytes"]), int(header["cpu_seconds"]))
    data = stream.read()
    roots = str(header.get("trust_roots_pem", "")).encode("ascii", "replace")
    sys.stdout.write(json.dumps(check_pdf(data, trust_roots_pem=roots)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
