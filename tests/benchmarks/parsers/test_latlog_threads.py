"""fio-lat-log parses blocks in worker threads and folds them in order: the
same figures, logging evidence and line numbers as one block after another."""

from __future__ import annotations

import random
from typing import Any

import pytest

np = pytest.importorskip("numpy")

from benchmarks.lib.parsers import latlog, parse  # noqa: E402 - after numpy's skip
from benchmarks.lib.parsers.latlog import windows  # noqa: E402
from benchmarks.lib.parsers.latlog.lines import parse_chunk  # noqa: E402
from benchmarks.lib.parsers.latlog.windows import Logging  # noqa: E402
from tests.benchmarks.parsers.helpers import problems  # noqa: E402
from tests.benchmarks.parsers.test_latlog_fast import state  # noqa: E402


def everything(data: bytes) -> dict[str, Any]:
    result = parse("fio-lat-log", data, source_name="job_clat.1.log")
    return {
        "metrics": [m.to_dict() for m in result.metrics],
        "series": [s.to_dict() for s in result.series],
        "warnings": result.warnings,
        "problems": [str(p) for p in result.problems],
        "info": result.info,
    }


def lines(count: int, *, seed: int = 1, bs: str = ", 4096, 0") -> list[str]:
    rng = random.Random(seed)  # noqa: S311 - test data
    return [
        f"{i // 3}, {int(rng.lognormvariate(11, 1))}, {rng.randrange(3)}{bs}\n"
        for i in range(count)
    ]


LOGS = {
    "per-io": "".join(lines(5000)),
    "per-io, no spaces": "".join(lines(5000)).replace(", ", ","),
    "windows": "".join(lines(3000, bs=", 0, 0")),
    "windows by timestamps": "".join(
        f"{t * 100}, {1000 + t}, {d}\n" for t in range(2000) for d in (0, 1)
    ),
    "busy timestamps": "".join(lines(4000, bs="")),
    "mixed": "".join(lines(3000)) + "".join(lines(100, bs=", 0, 0")),
}


@pytest.mark.parametrize("name", LOGS)
def test_threads_give_what_one_block_after_another_gives(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    data = LOGS[name].encode()
    monkeypatch.setattr(latlog, "CHUNK_BYTES", 4096)  # dozens of blocks
    monkeypatch.setattr(windows, "MAX_WINDOW_POINTS", 700)  # cut across blocks
    threaded = everything(data)
    monkeypatch.setattr(latlog, "WORKERS", 1)
    monkeypatch.setattr(latlog, "AHEAD", 0)

    assert everything(data) == threaded
    assert threaded["problems"] == []


@pytest.mark.parametrize("name", LOGS)
def test_logging_extended_block_by_block_is_logging_over_all_of_them(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(windows, "MAX_WINDOW_POINTS", 700)
    text = LOGS[name]
    cuts = [text.index("\n", at) + 1 for at in range(0, len(text) - 2000, 3000)]
    blocks = [
        text[a:b].encode() for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)
    ]
    whole, extended = Logging(), Logging()

    for block in blocks:
        parse_chunk(block, 0, whole)
        mine = Logging()
        parse_chunk(block, 0, mine)
        extended.extend(mine)

    assert len(blocks) > 5
    assert state(extended) == state(whole)


def bad(text: str, number: int, line: str) -> bytes:
    rows = text.splitlines(keepends=True)
    rows[number - 1] = line
    return "".join(rows).encode()


@pytest.mark.parametrize("number", [1, 150, 1234, 4321, 5000])
@pytest.mark.parametrize("line", ["7, 12x, 0, 4096, 0\n", "7,12x,0,4096,0\n"])
def test_a_bad_line_in_a_later_block_is_named_by_its_number(
    monkeypatch: pytest.MonkeyPatch, number: int, line: str
) -> None:
    monkeypatch.setattr(latlog, "CHUNK_BYTES", 4096)

    found = problems(parse("fio-lat-log", bad(LOGS["per-io"], number, line)))

    assert found.startswith(f"line {number}: not 'time, value (ns)")


def test_the_first_bad_line_is_named_though_later_blocks_were_parsed_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(latlog, "CHUNK_BYTES", 4096)
    data = bad(bad(LOGS["per-io"], 2000, "x\n").decode(), 700, "1, 2, 9, 0, 0\n")

    found = problems(parse("fio-lat-log", data))

    assert found.startswith("line 700: not")


@pytest.mark.parametrize("before", [None, 300, 2990])
def test_a_line_too_long_in_a_later_block_is_named_after_the_blocks_before_it(
    monkeypatch: pytest.MonkeyPatch, before: int | None
) -> None:
    monkeypatch.setattr(latlog, "CHUNK_BYTES", 4096)
    data = bad(LOGS["per-io"], 3000, "9" * 5000 + "\n")
    if before is not None:  # a bad line earlier comes first
        data = bad(data.decode(), before, "1, x, 0, 4096, 0\n")

    found = problems(parse("fio-lat-log", data))

    expected = f"line {before}: not" if before else "line 3000: longer than 4096"
    assert found.startswith(expected)
