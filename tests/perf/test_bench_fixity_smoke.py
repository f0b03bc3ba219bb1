"""The fixity benchmark runs end to end at a small size (300 and 600 blobs).
It proves the script works and prints its figures; it asserts nothing about
timing (figures: tests/perf/README.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)  # most of it migrating a fresh SQLite database
def test_bench_fixity_prints_its_figures_and_exits_0() -> None:
    command = [sys.executable, "-m", "tests.perf.bench_fixity"]

    done = subprocess.run(
        [*command, "--blobs", "300,600", "--blob-size", "4KiB"],
        cwd=ROOT, capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.findall(r"^blobs\s+([\d,]+) of 4,096 B$", out, re.M) == ["300", "600"]
    assert re.findall(r"^bytes\s+([\d,]+)$", out, re.M) == ["1,228,800", "2,457,600"]
    cache = r"^page cache before the check\s+warm \(the files just written\)$"
    assert len(re.findall(cache, out, re.M)) == 2  # without --cold
    assert len(re.findall(r"^re-hash seconds\s+\d+\.\d\d$", out, re.M)) == 2
    for yardstick in ("the contiguous file pass", "the in-memory pass"):
        ratios = re.findall(rf"^ratio to {yardstick}\s+\d+\.\d{{3}}$", out, re.M)
        assert len(ratios) == 2
    peak = r"^peak RSS of the verifying process \(MB\)\s+(\d+\.\d)$"
    peaks = re.findall(peak, out, re.M)
    assert len(peaks) == 2
    assert all(float(value) > 0 for value in peaks)
    readers = re.findall(
        r"^  reader processes, their CPU seconds\s+(\d+), \d+\.\d\d$", out, re.M
    )
    assert len(readers) == 2  # 2 on a machine of 2 CPUs or more, else 0
    reader_peaks = r"^  peak RSS of a reader process \(MB\)\s+(\d+\.\d)$"
    assert len(re.findall(reader_peaks, out, re.M)) == 2
    collections = r"^first full garbage collection, before \(s\)\s+\d+\.\d{3}$"
    assert len(re.findall(collections, out, re.M)) == 2
    # every blob was hashed, and each is reported as no deposit's
    assert re.findall(r'"blob.undeposited": (\d+)', out) == ["300", "600"]


def test_the_page_cache_is_dropped_through_the_kernel_s_control_file(
    tmp_path: Path,
) -> None:
    from tests.perf.bench_fixity import drop_page_cache

    control = tmp_path / "drop_caches"

    assert drop_page_cache(control) == ""
    assert control.read_text() == "3\n"  # pages, dentries and inodes
    why = drop_page_cache(tmp_path / "no-such-folder" / "drop_caches")
    assert why.startswith("No such file or directory (")
