"""fio-lat-log: fio write_lat_log files into percentiles, streamed, within
0.025% of numpy's exact percentiles; bad lines name their line number."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from benchmarks.lib.parsers import latlog, parse, parse_stream
from benchmarks.lib.parsers.percentiles import linear
from tests.benchmarks.parsers.helpers import one, problems, values

np = pytest.importorskip("numpy")


def log(rows: list[tuple[int, int, int]], *, prio: bool = False) -> bytes:
    extra = ", 0" if prio else ""
    return "".join(f"{t}, {v}, {d}, 4096, 0{extra}\n" for t, v, d in rows).encode()


def test_exact_figures_and_directions() -> None:
    rows = [(1, 1000, 0), (2, 3000, 0), (3, 2000, 0), (4, 500, 1), (5, 700, 2)]

    result = parse("fio-lat-log", log(rows), source_name="job_clat.1.log")

    assert one(result, "read_clat_us", "min") == 1.0
    assert one(result, "read_clat_us", "max") == 3.0
    assert one(result, "read_clat_us", "mean") == 2.0
    assert one(result, "read_clat_us", "p50") == 2.0  # small values are exact
    assert one(result, "write_clat_us", "p99") == 0.5
    assert one(result, "trim_clat_us", "mean") == 0.7
    assert result.info["samples"] == {"read": 3, "write": 1, "trim": 1}


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a_lat.3.log", "lat"),
        ("a_slat.1.log", "slat"),
        ("a_clat.12.log", "clat"),
        ("x.log", "lat"),
    ],
)
def test_the_file_name_tells_which_latency(name: str, kind: str) -> None:
    result = parse("fio-lat-log", log([(1, 5000, 0)]), source_name=name)

    assert result.metrics[0].name == f"read_{kind}_us"


def test_percentiles_within_0_025_percent_of_numpy_across_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        latlog, "CHUNK_BYTES", 4096
    )  # many chunks, lines cut across them
    rng = random.Random(3)  # noqa: S311 - test data
    rows = [(i, int(rng.lognormvariate(11, 1.2)), i % 2) for i in range(20000)]

    result = parse("fio-lat-log", log(rows, prio=True))

    for d, direction in enumerate(("read", "write")):
        exact = sorted(v for _, v, dd in rows if dd == d)
        for p in (50, 90, 99, 99.9, 99.99):
            ours = one(result, f"{direction}_lat_us", f"p{p:g}") * 1000
            assert ours == pytest.approx(float(np.percentile(exact, p)), rel=0.00025)
            assert ours == pytest.approx(linear(exact, p), rel=0.00025)
        assert one(result, f"{direction}_lat_us", "max") == exact[-1] / 1000


def test_min_max_count_and_mean_per_direction_stay_exact_across_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(latlog, "CHUNK_BYTES", 4096)
    rng = random.Random(5)  # noqa: S311 - test data
    # new extremes turn up late, in chunks mixing two or three directions
    rows = [(i, rng.randrange(5000, 9000), rng.randrange(3)) for i in range(6000)]
    rows[4000] = (4000, 10, 2)
    rows[5000] = (5000, 2**40, 1)
    rows[5900] = (5900, 3, 0)

    result = parse("fio-lat-log", log(rows))

    for d, direction in enumerate(("read", "write", "trim")):
        mine = [v for _, v, dd in rows if dd == d]
        assert one(result, f"{direction}_lat_us", "min") == min(mine) / 1000
        assert one(result, f"{direction}_lat_us", "max") == max(mine) / 1000
        assert (
            one(result, f"{direction}_lat_us", "mean") == sum(mine) / len(mine) / 1000
        )
        assert result.info["samples"][direction] == len(mine)


def test_the_mean_of_huge_values_is_exact() -> None:
    # summed as floats, 2**53 + 1 + 1 would be 2**53
    rows = [(1, 2**53, 0), (2, 1, 0), (3, 1, 0), (4, 10**17, 1)]
    rows += [(5 + i, 10**17 + i, 1) for i in range(200)]

    result = parse("fio-lat-log", log(rows))

    assert one(result, "read_lat_us", "mean") == (2**53 + 2) / 3 / 1000
    writes = [v for _, v, d in rows if d == 1]
    assert one(result, "write_lat_us", "mean") == sum(writes) / len(writes) / 1000


def test_blank_lines_crlf_and_a_missing_final_newline() -> None:
    data = b"1, 100, 0, 4096, 0\r\n\r\n\n2, 300, 0, 4096, 0"

    result = parse("fio-lat-log", data)

    assert one(result, "read_lat_us", "mean") == 0.2
    assert result.info["lines"] == 4


def test_memory_does_not_hold_the_file() -> None:
    class Lines(io.RawIOBase):
        """A 2-million-line log produced on the fly; never whole in memory."""

        def __init__(self) -> None:
            self.left = 2_000_000
            self.line = b"7, 123456, 1, 4096, 0\n"

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
            count = min(self.left, len(buffer) // len(self.line))
            data = self.line * count
            buffer[: len(data)] = data
            self.left -= count
            return len(data)

    result = parse_stream("fio-lat-log", io.BufferedReader(Lines(), 1 << 20))

    assert result.info["samples"]["write"] == 2_000_000
    assert one(result, "write_lat_us", "p99.99") == 123.456


def windowed(rows: list[tuple[int, int, int]], *, bs: int = 0) -> bytes:
    """fio >= 3 with log_avg_msec: block size and offset are 0 on every line."""
    return "".join(f"{t}, {v}, {d}, {bs}, 0\n" for t, v, d in rows).encode()


def test_a_log_averaged_over_windows_gives_window_means_not_percentiles() -> None:
    rows = [(1000, 2000, 1), (2001, 4000, 1), (3000, 9000, 1), (1000, 500, 0)]

    result = parse("fio-lat-log", windowed(rows), source_name="j_clat.1.log")

    assert not [m for m in result.metrics if m.stat.startswith("p")]
    assert not [m for m in result.metrics if m.name == "write_clat_us"]
    assert one(result, "write_clat_window_mean_us", "mean") == 5.0
    assert one(result, "write_clat_window_mean_us", "max") == 9.0
    assert one(result, "write_clat_window_mean_us", "min") == 2.0
    assert one(result, "read_clat_window_mean_us", "mean") == 0.5
    assert result.info["logging"] == "windowed"
    assert result.info["windows"] == {"read": 1, "write": 3}
    assert "samples" not in result.info
    [warning] = result.warnings
    assert "block size 0 on every line" in warning
    assert "no per-I/O percentile" in warning


def test_the_windows_are_a_time_series_cut_to_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(latlog.windows, "MAX_WINDOW_POINTS", 2)
    rows = [(500, 2000, 1), (1000, 4000, 1), (1500, 9000, 1), (500, 700, 0)]

    result = parse("fio-lat-log", windowed(rows), source_name="j_lat.1.log")

    by_name = {s.name: s.points for s in result.series}
    assert by_name == {
        "read_lat_window_mean_us": ((0.5, 0.7),),
        "write_lat_window_mean_us": ((0.5, 2.0), (1.0, 4.0)),
    }
    assert one(result, "write_lat_window_mean_us", "max") == 9.0  # all windows
    assert any("holds the first 2 of 3 windows" in w for w in result.warnings)


def test_per_io_lines_keep_their_percentiles() -> None:
    result = parse("fio-lat-log", windowed([(1, 2000, 1), (1, 4000, 1)], bs=4096))

    assert one(result, "write_lat_us", "p50") == 3.0
    assert result.info["logging"] == "per-io"
    assert result.warnings == []
    assert result.series == []


def test_a_mix_of_window_and_per_io_lines_is_reported_as_windows() -> None:
    data = windowed([(1, 2000, 1)], bs=4096) + windowed([(500, 4000, 1)])

    result = parse("fio-lat-log", data)

    assert values(result, "write_lat_us", "p50") == []
    assert one(result, "write_lat_window_mean_us", "mean") == 3.0
    assert any("1 of 2 lines" in w for w in result.warnings)


def test_without_a_block_size_column_evenly_spaced_times_mean_windows() -> None:
    rows = [(t, 1000 + t, d) for t in range(500, 10001, 500) for d in (0, 1)]
    data = "".join(f"{t}, {v}, {d}\n" for t, v, d in rows).encode()

    result = parse("fio-lat-log", data)

    assert result.info["logging"] == "windowed"
    assert values(result, "read_lat_us", "p99") == []
    assert one(result, "read_lat_window_mean_us", "max") == 11.0
    assert any("timestamps" in w for w in result.warnings)


def test_without_a_block_size_column_busy_times_mean_single_ios() -> None:
    rows = [(t // 3, 1000 + t, 0) for t in range(300)]  # 3 I/Os a millisecond
    data = "".join(f"{t}, {v}, {d}\n" for t, v, d in rows).encode()

    result = parse("fio-lat-log", data)

    assert result.info["logging"] == "per-io"
    assert one(result, "read_lat_us", "max") == 1.299
    assert result.warnings == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the latency log holds no samples"),
        (b"\n\n", "the latency log holds no samples"),
        (
            b"1, 100, 0, 4096, 0\n2, x, 0, 4096, 0\n",
            "line 2: not 'time, value (ns), direction",
        ),
        (b"1, 100, 0, 4096, 0\n\n2, 100, 7, 4096, 0\n", "line 3: not 'time, value"),
        (b"1, -100, 0, 4096, 0\n", "line 1: not"),
        (b"1, 100\n", "line 1: not"),
        (b"1, 1e5, 0, 4096, 0\n", "line 1: not"),
        (b"1, 1234567890123456789, 0, 4096, 0\n", "line 1: not"),
        (b"1,, 0, 4096, 0\n", "line 1: not"),
        (
            b"1, 100, 0, 4096, 0\n" + b"9" * 5000 + b"\n",
            "line 2: longer than 4096 bytes",
        ),
        (b"1, 100, 0, 4096, 0\n" + b"9" * 20000, "line 2: longer than 4096 bytes"),
        (b'{"jobs": []}\n', "line 1: not"),
        (b"1000, 2000, 9000, 1, 0, 0, 0\n", "log_window_value=both layout"),
    ],
)
def test_bad_input_is_a_clear_problem(data: bytes, message: str) -> None:
    assert message in problems(parse("fio-lat-log", data))


def test_a_huge_line_without_newline_is_refused_in_bounded_memory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(latlog, "CHUNK_BYTES", 1024)
    path = tmp_path / "junk.log"
    path.write_bytes(b"1" * 100_000)

    with path.open("rb") as handle:
        result = parse_stream("fio-lat-log", handle)

    assert "line 1: longer than 4096 bytes" in problems(result)
