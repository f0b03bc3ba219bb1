"""Fixity re-hash throughput and memory: prints figures, asserts nothing about
timing.

    python -m tests.perf.bench_fixity --blobs 10000,100000 [--blob-size 4KiB]
        [--reader-processes N] [--cold]

For each count of blobs:

1. in a subprocess, migrates a throw-away SQLite database (or ``--database-url``,
   emptied of blob rows first) and builds the blobs directly: content-addressed
   files under a local ``BlobFileSystemStorage`` (``blobs/ab/<sha256>``, each
   blob's bytes made unique by a counter) and their ``Blob`` rows by
   ``bulk_create`` (the database is migrated once, for the first count; each
   count starts from an empty storage and no blob row); no deposit names
   them, so each is reported undeposited (one finding per blob, counted past
   the first 100);
2. **yardsticks**: one ``hashlib.sha256`` pass over the same number of bytes,
   (a) as ONE contiguous file (``hashlib.file_digest``, in the page cache) and
   (b) in memory (a 1 MiB buffer hashed over and over): best of two each;
3. in another SUBPROCESS, runs a full garbage collection (timed and printed
   apart: the first one after ``django.setup()`` walks Django's and the
   project's import-time objects, some 55 ms, which a worker that has run
   anything has already paid; left in, it fell on the check's first few
   thousand rows: 0.15-0.16 s at 10k blobs instead of 0.10-0.11), then runs
   the blob part of the fixity check
   (``artifacts.services.fixity.blobs.check_blobs``) and times its phases: the
   re-hash of every blob, then the rows no deposit names and the listing of the
   stored objects. The parent reads that subprocess's peak RSS with
   ``os.wait4`` and never imports Django (Linux counts a parent's RSS at spawn
   time into the child's ``ru_maxrss``); the check's reader processes (small
   blobs; ``--reader-processes``: how many, 0 for none) are counted apart: their
   CPU seconds, and the largest one's peak RSS (``VmHWM``, read as the check ends
   them);
4. prints a table: blobs, bytes, seconds, the ratio (yardstick seconds / re-hash
   seconds, for both yardsticks), the per-blob time and the peak RSS.

The files were just written, so every figure is with a warm page cache, as far
as the machine keeps it: they are not synced to disk first, since a machine that
pages out idle memory (the development VMs do: DAMON ``pageout`` of pages idle
for seconds) would then drop the clean pages of a large count before the check
reads them, and the check would be timed on cold reads against a warm yardstick.
``--cold`` times the other case, a daily check of blobs written long ago: the
files are synced and the kernel's page, dentry and inode caches dropped
(``/proc/sys/vm/drop_caches``, root only; the table says whether it was done)
just before the check; the yardsticks stay warm.
Exit status: 0, or non-zero only on an error (a subprocess failed, the check
did not hash every byte).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

MiB: Final = 1024 * 1024
ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "CRITICAL",
}
ROW_BATCH: Final = 5000
DROP_CACHES: Final = Path("/proc/sys/vm/drop_caches")


def parse_size(text: str) -> int:
    units = {"KIB": 1024, "MIB": MiB, "GIB": 1024 * MiB, "B": 1}
    upper = text.strip().upper()
    for unit, factor in units.items():
        if upper.endswith(unit):
            return int(float(upper[: -len(unit)]) * factor)
    return int(upper)


# --- subprocesses (Django) ------------------------------------------------------------


def child_prepare(count: int, size: int) -> dict[str, Any]:
    """A migrated database with ``count`` blob rows and their files."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from django.core.files.storage import default_storage
    from django.utils import timezone

    from artifacts.models import Blob
    from artifacts.storage.blobs import blob_key

    Blob.objects.all()._raw_delete(Blob.objects.db)  # a reused database
    root = Path(default_storage.location)  # type: ignore[attr-defined]
    base = bytearray(os.urandom(size))
    now, rows, made = timezone.now(), [], set()
    for number in range(count):
        base[:8] = number.to_bytes(8, "big")
        data = bytes(base)
        digest = hashlib.sha256(data).hexdigest()
        key = blob_key(digest)
        folder = digest[:2]
        if folder not in made:
            (root / "blobs" / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        with open(root / key, "wb") as handle:
            handle.write(data)
        rows.append(Blob(sha256=digest, size=size, storage_key=key, created_at=now))
        if len(rows) >= ROW_BATCH:
            Blob.objects.bulk_create(rows)
            rows = []
    Blob.objects.bulk_create(rows)
    return {"blobs": Blob.objects.count()}


def _reader_peaks(readers: Any) -> list[float]:
    """The peak RSS (``VmHWM``, MB) of each reader process, read as the check
    ends them (their ``ru_maxrss`` would count the parent's RSS at the fork)."""
    peaks: list[float] = []
    close = readers.close

    def measured(self: Any) -> None:
        for process in self.processes:
            status = Path(f"/proc/{process.pid}/status").read_text()
            (line,) = [x for x in status.splitlines() if x.startswith("VmHWM:")]
            peaks.append(int(line.split()[1]) / 1024)
        close(self)

    readers.close = measured
    return peaks


def child_verify(reader_processes: int | None) -> dict[str, Any]:
    """The blob part of the fixity check, timed by phase (with that many
    reader processes, if given)."""
    import django

    django.setup()
    from django.utils import timezone

    from artifacts.services.fixity import blobs
    from artifacts.services.fixity.report import FixityReport

    if reader_processes is not None:
        blobs.READ_PROCESSES = reader_processes  # type: ignore[misc]
    peaks = _reader_peaks(blobs.ReaderProcesses)
    collected = time.perf_counter()
    gc.collect()  # the process's first full collection (module docstring, 3.)
    collected_s = time.perf_counter() - collected
    report = FixityReport(started_at=timezone.now())
    started = time.perf_counter()
    cpu_started = time.process_time()
    blobs.rehash_blobs(report)
    readers = resource.getrusage(resource.RUSAGE_CHILDREN)  # ended with the re-hash
    hashed = time.perf_counter()
    rehash_cpu = time.process_time() - cpu_started  # not the checks after it
    blobs._undeposited(report)
    blobs._extra_objects(report, report.started_at)
    done = time.perf_counter()
    return {
        "rehash_s": hashed - started,
        "rest_s": done - hashed,
        "collect_s": collected_s,
        "cpu_s": rehash_cpu,
        "readers": len(peaks),
        "readers_cpu_s": readers.ru_utime + readers.ru_stime,
        "readers_peak_mb": max(peaks, default=0.0),
        "blobs_checked": report.counts.blobs_checked,
        "bytes_hashed": report.counts.bytes_hashed,
        "objects_listed": report.counts.objects_listed,
        "findings": dict(report.findings.per_kind),
    }


# --- the parent (no Django) -----------------------------------------------------------


class BenchError(Exception):
    pass


def run_child(args: list[str], env: dict[str, str], what: str) -> tuple[dict, float]:
    """The subprocess's JSON report (its last line) and its own peak RSS in MB
    (``os.wait4``)."""
    command = [sys.executable, "-m", "tests.perf.bench_fixity", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if code != 0:
        raise BenchError(f"{what} failed ({code}):\n{stderr[-4000:]}")
    last = stdout.strip().splitlines()[-1:] or ["{}"]
    return json.loads(last[0]), usage.ru_maxrss / 1024  # KiB on Linux


def yardstick_file(path: Path, total: int) -> float:
    """One sha256 pass over ``total`` bytes as one contiguous file (best of two)."""
    block = os.urandom(MiB)
    with open(path, "wb") as handle:
        for start in range(0, total, MiB):
            handle.write(block[: min(MiB, total - start)])
    timings = []
    for _ in range(2):
        started = time.perf_counter()
        with open(path, "rb") as handle:
            hashlib.file_digest(handle, "sha256")
        timings.append(time.perf_counter() - started)
    path.unlink()
    return min(timings)


def yardstick_memory(total: int) -> float:
    """One sha256 pass over ``total`` bytes in memory (best of two)."""
    block = memoryview(os.urandom(MiB))
    timings = []
    for _ in range(2):
        started = time.perf_counter()
        digest = hashlib.sha256()
        for start in range(0, total, MiB):
            digest.update(block[: min(MiB, total - start)])
        digest.hexdigest()
        timings.append(time.perf_counter() - started)
    return min(timings)


def drop_page_cache(control: Path = DROP_CACHES) -> str:
    """Sync, then drop the kernel's clean page, dentry and inode caches: "" if
    done, else why not (not root, not Linux)."""
    os.sync()
    try:
        control.write_text("3\n")
    except OSError as error:
        return f"{error.strerror or error} ({control})"
    return ""


def environment(work: Path, database_url: str) -> dict[str, str]:
    (work / "media").mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        **ENV,
        "REPROGATE_VAR_DIR": str(work),
        "DATABASE_URL": database_url or f"sqlite:///{work / 'bench.sqlite3'}",
    }
    env.pop("AWS_STORAGE_BUCKET_NAME", None)  # the local file storage
    return env


def bench(
    count: int,
    size: int,
    work: Path,
    database_url: str,
    readers: int | None,
    cold: bool = False,
) -> dict:
    """One count of blobs in ``work`` (its database migrated once, its storage
    emptied first)."""
    shutil.rmtree(work / "media", ignore_errors=True)
    env = environment(work, database_url)
    prepared, _ = run_child(
        ["--child", "prepare", str(count), str(size)], env, "preparing"
    )
    total = count * size
    file_s = yardstick_file(work / "contiguous.bin", total)
    memory_s = yardstick_memory(total)
    told = [] if readers is None else [str(readers)]
    cache = "warm (the files just written)"
    if cold:
        why_not = drop_page_cache()
        cache = f"warm: not dropped, {why_not}" if why_not else "dropped (cold)"
    verified, peak = run_child(["--child", "verify", *told], env, "the verification")
    if verified["bytes_hashed"] != total or verified["blobs_checked"] != count:
        raise BenchError(f"the check did not hash every blob: {verified}")
    return {
        "blobs": prepared["blobs"],
        "bytes": total,
        "file_s": file_s,
        "memory_s": memory_s,
        "peak_mb": peak,
        "cache": cache,
        **verified,
    }


def versions() -> str:
    from importlib.metadata import version  # not django itself: the parent stays small

    return (
        f"python {platform.python_version()}, django {version('django')}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )


def report(result: dict, size: int) -> None:
    rehash = result["rehash_s"]
    rows = [
        ("blobs", f"{result['blobs']:,} of {size:,} B"),
        ("bytes", f"{result['bytes']:,}"),
        ("page cache before the check", result["cache"]),
        ("re-hash seconds", f"{rehash:.2f}"),
        ("re-hash CPU seconds (all threads)", f"{result['cpu_s']:.2f}"),
        (
            "  reader processes, their CPU seconds",
            f"{result['readers']}, {result['readers_cpu_s']:.2f}",
        ),
        ("per blob (us)", f"{rehash / result['blobs'] * 1e6:.1f}"),
        ("sha256 pass, one contiguous file (s)", f"{result['file_s']:.2f}"),
        ("sha256 pass, in memory (s)", f"{result['memory_s']:.2f}"),
        ("ratio to the contiguous file pass", f"{result['file_s'] / rehash:.3f}"),
        ("ratio to the in-memory pass", f"{result['memory_s'] / rehash:.3f}"),
        ("undeposited rows + listing (s)", f"{result['rest_s']:.2f}"),
        ("first full garbage collection, before (s)", f"{result['collect_s']:.3f}"),
        ("peak RSS of the verifying process (MB)", f"{result['peak_mb']:.1f}"),
        ("  peak RSS of a reader process (MB)", f"{result['readers_peak_mb']:.1f}"),
    ]
    for label, value in rows:
        print(f"{label:<42}{value:>24}")
    print(f"findings: {json.dumps(result['findings'], sort_keys=True)}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", default="10000,100000")
    parser.add_argument("--blob-size", default="4KiB")
    parser.add_argument("--tmp-dir", default=None)
    parser.add_argument("--database-url", default="")
    parser.add_argument(
        "--reader-processes",
        type=int,
        default=None,
        help="reader processes for small blobs (default: the check's own choice; "
        "0: none, every small blob read in the calling thread)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="drop the kernel's caches before each check (root only), as for blobs "
        "written long ago; the yardsticks stay warm",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        role, *rest = options.child
        if role == "prepare":
            result = child_prepare(int(rest[0]), int(rest[1]))
        else:
            result = child_verify(int(rest[0]) if rest else None)
        print(json.dumps(result))
        return 0
    size = parse_size(options.blob_size)
    print(versions())
    print()
    work = Path(tempfile.mkdtemp(prefix="bench-fixity-", dir=options.tmp_dir))
    try:
        for count in (int(n) for n in options.blobs.split(",")):
            found = bench(
                count,
                size,
                work,
                options.database_url,
                options.reader_processes,
                options.cold,
            )
            report(found, size)
    except BenchError as error:
        print(error, file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
