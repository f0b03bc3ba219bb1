"""REPROGATE_TRACE_DIR in the sandbox, whatever the isolation method: an empty
folder the harness (under its own uid where the host drops one) writes in,
handed back to the runner afterwards with links and special files removed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.capabilities import host_support
from tests.benchmarks.sandbox.conftest import Bundle

WRITER = """#!/bin/sh
set -eu
test -z "$(ls -A "$REPROGATE_TRACE_DIR")"
echo "$REPROGATE_TRACE_DIR" > "$REPROGATE_OUTPUT_DIR/where.txt"
echo '{"span": 1}' > "$REPROGATE_TRACE_DIR/app.jsonl"
ln -s /etc/hostname "$REPROGATE_TRACE_DIR/host.jsonl"
mkfifo "$REPROGATE_TRACE_DIR/pipe.jsonl"
"""


def _methods() -> list[str]:
    support = host_support()
    return [
        method
        for method, works in (
            ("bwrap", support.bwrap_works),
            ("unshare", support.unshare_works),
            ("none", True),
        )
        if works
    ]


@pytest.mark.parametrize("method", _methods())
def test_the_harness_writes_its_trace_dir_and_the_runner_gets_it_back(
    make_bundle: Callable[[str], Bundle], tmp_path: Path, method: str
) -> None:
    bundle = make_bundle(WRITER)
    trace = tmp_path / "trace"
    trace.mkdir(mode=0o755)

    result = bundle.run(method=method, trace_dir=trace)

    assert result.succeeded, result
    inside = (bundle.output / "where.txt").read_text().strip()
    assert inside == ("/sandbox/trace" if method == "bwrap" else str(trace))
    assert sorted(p.name for p in trace.iterdir()) == ["app.jsonl"]
    assert (trace / "app.jsonl").stat().st_uid == os.geteuid()
    notes = " ".join(result.isolation["notes"])
    assert "removed host.jsonl from the trace spans" in notes
    assert "removed pipe.jsonl from the trace spans" in notes


def test_without_a_trace_dir_the_harness_has_none(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle(
        '#!/bin/sh\necho "${REPROGATE_TRACE_DIR-unset}" > "$REPROGATE_OUTPUT_DIR/t"\n'
    )

    assert bundle.run().succeeded
    assert (bundle.output / "t").read_text() == "unset\n"


def test_a_trace_dir_that_is_a_link_is_refused(
    make_bundle: Callable[[str], Bundle], tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "trace").symlink_to(tmp_path / "elsewhere")

    result = make_bundle(WRITER).run(trace_dir=tmp_path / "trace")

    assert result.stop_reason == "sandbox_error"
    assert "trace directory" in result.message
    assert "is a link" in result.message
