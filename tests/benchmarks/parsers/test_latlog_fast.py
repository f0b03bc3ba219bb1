"""fio-lat-log's fast path (lines as fio writes them, read eight bytes at a
time) gives exactly what the general path gives, or hands the block over."""

from __future__ import annotations

import random
from typing import Any

import pytest

np = pytest.importorskip("numpy")

from benchmarks.lib.parsers.latlog.lines import (  # noqa: E402 - after numpy's skip
    PAD,
    parse_chunk,
    parse_chunk_fast,
)
from benchmarks.lib.parsers.latlog.windows import Logging  # noqa: E402


def state(logging: Logging) -> dict[str, Any]:
    found = dict(vars(logging))
    found["points"] = [
        [(t.tolist(), v.tolist()) for t, v in points] for points in logging.points
    ]
    return found


def fast_only(block: bytes) -> Any:
    return parse_chunk_fast(block + bytes(PAD), len(block), Logging())


def both(block: bytes) -> tuple[Any, Any]:
    """(fast path's values, directions, count, logging) or None; the general's."""
    fast_logging, general_logging = Logging(), Logging()
    fast = parse_chunk_fast(block + bytes(PAD), len(block), fast_logging)
    values, directions, count = parse_chunk(block, 0, general_logging)
    general = (values.tolist(), directions.tolist(), count, state(general_logging))
    if fast is None:
        return None, general
    return (fast[0].tolist(), fast[1].tolist(), fast[2], state(fast_logging)), general


def fio_line(rng: random.Random, *, bs: str, extra: str) -> str:
    time = rng.choice([rng.randrange(10), rng.randrange(10**6), rng.randrange(10**12)])
    digits = rng.randrange(1, 19)
    value = rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits)
    return f"{time}, {value}, {rng.randrange(3)}{bs}{extra}\n"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("bs", "extra"),
    [
        (", 4096", ", 0"),  # fio without log_offset: block size, priority
        (", 4096", ", 1099511623680, 3"),  # with log_offset: offset, priority
        (", 0", ", 0"),  # averaged windows: block size 0
        ("", ""),  # hand-cut: time, value, direction
        (", 131072", "\r"),  # CRLF
    ],
)
def test_fio_lines_take_the_fast_path_with_the_general_paths_figures(
    seed: int, bs: str, extra: str
) -> None:
    rng = random.Random(seed)  # noqa: S311 - test data
    block = "".join(fio_line(rng, bs=bs, extra=extra) for _ in range(2000)).encode()

    fast, general = both(block)

    assert fast is not None
    assert fast == general


@pytest.mark.parametrize(
    "line",
    [
        b"1,100,0,4096,0",  # no spaces: the general path reads it
        b"1, 100,0, 4096, 0",
        b"",  # a blank line
        b"\r",
        b"1, 1234567890123456789, 0, 4096, 0",  # 19 digits
        b"1" * 30 + b", 100, 0, 4096, 0",  # no comma in the first 24 bytes
        b"1, 10x, 0, 4096, 0",
        b"1, , 0, 4096, 0",
        b"1, 100, 3, 4096, 0",
        b"1, 100, 0x, 4096, 0",
        b"1, 100",
        b"1000, 2000, 9000, 1, 0, 0, 0",
    ],
)
def test_any_other_line_hands_the_block_to_the_general_path(line: bytes) -> None:
    block = b"1, 100, 0, 4096, 0\n" + line + b"\n2, 300, 1, 4096, 0\n"

    assert fast_only(block) is None


def test_values_of_every_length_and_times_past_eight_digits() -> None:
    rows = [
        (10**t, int("9" * n) if n % 2 else 10 ** (n - 1))
        for t in range(13)
        for n in range(1, 19)
    ]
    block = "".join(f"{t}, {v}, 1, 4096, 0\n" for t, v in rows).encode()

    fast, general = both(block)

    assert fast is not None
    assert fast[0] == [v for _, v in rows] == general[0]
