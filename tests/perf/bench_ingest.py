"""Ingest throughput and memory: prints figures, asserts
nothing about timing.

    python -m tests.perf.bench_ingest --size 1GiB|100MiB|64MiB [--format tar|tgz]

1. builds a signed bundle of that size (``tests.perf.make_bundle``: a few large
   traces plus 2,000 small files of random bytes) in a temporary folder;
2. times one ``hashlib.sha256`` pass over the archive file (best of two): the
   yardstick;
3. prepares, in a subprocess, a throw-away SQLite database (migrated, with an RFP,
   the vendor's organisation, a user and its signing key) next to a local file
   storage and spool folder;
4. runs ``bundle_ingest`` on the archive in another SUBPROCESS, which reports the
   wall time of the call; the parent reads that subprocess's peak RSS with
   ``os.wait4`` (its own ``ru_maxrss``; ``RUSAGE_CHILDREN`` would mix in the
   database preparation). The parent never imports Django: Linux counts a
   parent's RSS at spawn time into the child's ``ru_maxrss``;
5. prints a table: throughputs, the ratio ingest / sha256 (target >= 0.5, and
   >= 0.8 from 1 GiB) and the peak RSS (target < 200 MB, not growing with size),
   with the RSS when the call started and the peak during the call (``VmHWM``
   after ``clear_refs``), and the bound: the same pass over the archive with
   nothing kept (``scan_floor``);
6. after the runs, times creating empty files in a fresh folder of the work
   folder's file system (``file_creation``): an ingest creates one file per
   member, and what one costs differs by tens of times between file systems
   (on the development VM's long-used root file system 0.13-0.9 ms, on a fresh
   ext4 0.03 ms, on tmpfs 0.015 ms), so below 1 GiB it can decide the figure.

Exits non-zero only on errors (the bundle was rejected, the subprocess failed),
never because of a figure. Without ``artifacts.services.ingest`` it measures the
verification core instead (``inspect_bundle`` + ``sshsig.verify`` + a file sink)
and says so.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import inspect
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.perf.make_bundle import (
    RFP,
    SMALL_FILES,
    VENDOR,
    BenchBundle,
    make_bundle,
    parse_size,
)

MiB: Final = 1024 * 1024
USERNAME: Final = "bench-vendor"
RATIO_TARGET: Final = 0.5
RATIO_TARGET_FROM_GIB: Final = 0.8  # bundles of 1 GiB and more
RSS_TARGET_MB: Final = 200
PROBE_FILES: Final = 2_000  # empty files timed by file_creation
ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "WARNING",
}


# --- the ingest subprocess ----------------------------------------------------------


def _status_mb(field: str) -> float | None:
    """``VmRSS`` / ``VmHWM`` of this process from /proc, in MB (None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Restart this process's peak-RSS count (Linux ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


class Measured:
    """Wall and CPU time (all threads) and memory of one call: the process's peak
    before it (imports, Django setup), its RSS when the call starts, and the
    peak during the call."""

    def __enter__(self) -> Measured:
        self.figures: dict[str, Any] = {
            "setup_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_at_start_mb": _status_mb("VmRSS"),
            "peak_reset": _reset_peak_rss(),
        }
        self.started, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.figures["seconds"] = time.perf_counter() - self.started
        self.figures["cpu_seconds"] = time.process_time() - self.cpu
        self.figures["call_peak_mb"] = _status_mb("VmHWM")


class _MultipartBody(io.RawIOBase):
    """A ``multipart/form-data`` request body with the archive as the ``file``
    field, read from disk as the parser asks for it (never all in memory)."""

    BOUNDARY: Final = "reprogate-bench-boundary"

    def __init__(self, archive: Path) -> None:
        self.head = (
            f'--{self.BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{archive.name}"\r\nContent-Type: application/gzip\r\n\r\n'
        ).encode()
        self.tail = f"\r\n--{self.BOUNDARY}--\r\n".encode()
        self.length = len(self.head) + archive.stat().st_size + len(self.tail)
        self.parts = [io.BytesIO(self.head), archive.open("rb"), io.BytesIO(self.tail)]

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self.parts:
            count = self.parts[0].readinto(buffer)
            if count:
                return count
            self.parts.pop(0).close()
        return 0

    def close(self) -> None:
        for part in self.parts:
            part.close()
        super().close()


def receive_upload(archive: Path) -> Any:
    """What ``POST /api/v1/rfps/<id>/bundles/`` does while the request body
    streams in: Django's multipart parser feeds the API's own upload handler
    (``BundleUploadHandler``), which writes the archive to a temporary file and
    hashes it. Returns the uploaded file (with its ``digest``)."""
    from django.http.multipartparser import MultiPartParser

    from artifacts.api.bundles import BundleUploadHandler

    with _MultipartBody(archive) as body:
        meta = {
            "CONTENT_TYPE": f"multipart/form-data; boundary={body.BOUNDARY}",
            "CONTENT_LENGTH": str(body.length),
        }
        parser = MultiPartParser(
            meta, io.BufferedReader(body, MiB), [BundleUploadHandler()], "utf-8"
        )
        _, files = parser.parse()
    return files["file"]


def _handover(archive: Path, mode: str) -> tuple[Any, dict[str, Any], float]:
    """The file to ingest (a path, or the uploaded file), the keyword arguments
    describing it, and the seconds spent receiving it (``api`` mode) or 0."""
    from artifacts.services.ingest import bundle_ingest

    if mode == "file":
        return archive, {}, 0.0
    started = time.perf_counter()
    upload = receive_upload(archive)
    seconds = time.perf_counter() - started
    accepts = inspect.signature(bundle_ingest).parameters
    extra: dict[str, Any] = {}
    if "archive_digest" in accepts:
        extra["archive_digest"] = upload.digest
    if "consume_upload" in accepts:
        extra["consume_upload"] = True
    return upload, extra, seconds


@contextmanager
def _profiled(path: str | None) -> Iterator[None]:
    """Profile the block with cProfile into ``path`` (if given): where the time
    goes, for ``--profile``. Profiling slows the call; its figures are not the
    benchmark's."""
    if not path:
        yield
        return
    import cProfile

    with cProfile.Profile() as profile:
        yield
    profile.dump_stats(path)


def _ingest_service(archive: Path, mode: str) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from accounts.models import Organisation
    from artifacts.services.ingest import bundle_ingest
    from procurement.models import Rfp

    rfp = Rfp.objects.get(reference=RFP)
    organisation = Organisation.objects.get(slug=VENDOR)
    user = get_user_model().objects.get(username=USERNAME)
    upload, extra, receive_s = _handover(archive, mode)
    # Dirty pages of earlier steps (the bundle, the upload copy, an earlier run)
    # are written back first, so that their writeback does not compete with the
    # ingest's own writes in the timed call.
    os.sync()
    with Measured() as measured, _profiled(os.environ.get("BENCH_PROFILE")):
        bundle = bundle_ingest(
            rfp=rfp,
            organisation=organisation,
            uploaded_by=user,
            upload_path=getattr(upload, "temporary_file_path", lambda: upload)(),
            filename=archive.name,
            **extra,
        )
    if hasattr(upload, "close"):
        upload.close()  # as Django does at the end of the request
    return {
        **measured.figures,
        "scan_floor_seconds": scan_floor(archive),
        "receive_seconds": receive_s,
        "engine": f"bundle_ingest({', '.join(sorted(extra)) or 'path only'})",
        "status": bundle.status,
        "problems": bundle.problems,
        "files": bundle.files.count(),
    }


def scan_floor(archive: Path, repeat: int = 2) -> float:
    """Seconds of the ingest's one pass over the archive with nothing written and
    nothing recorded: inflate, tar headers, path checks, member hashes and the
    manifest checks (``inspect_bundle`` without a sink), best of ``repeat``. An
    ingest built on that pass cannot be faster than this: its ratio to the
    SHA-256 pass bounds the ingest's."""
    from artifacts.conf import bundle_archive_limits
    from artifacts.lib.manifest import inspect_bundle

    limits = bundle_archive_limits()
    return best_of(
        repeat, lambda: inspect_bundle(archive, limits, rfp=RFP, vendor=VENDOR)
    )


class _FileSink:
    """Writes one member to a file, as a storage backend would."""

    def __init__(self, path: Path) -> None:
        self.handle = path.open("wb")

    def write(self, chunk: bytes) -> None:
        self.handle.write(chunk)

    def finish(self, digest: object) -> None:
        self.handle.close()


def _ingest_core(archive: Path, store: Path) -> dict[str, Any]:
    from artifacts.lib.manifest import inspect_bundle
    from artifacts.lib.signatures import SignatureError, sshsig
    from artifacts.lib.signatures.sshkeys import parse_public_key_line

    key = parse_public_key_line(os.environ["BENCH_PUBLIC_KEY"])
    store.mkdir(parents=True, exist_ok=True)
    counter = iter(range(10**9))
    problems: list[dict[str, Any]] = []
    with Measured() as measured:
        inspection = inspect_bundle(
            archive,
            rfp=RFP,
            vendor=VENDOR,
            sink=lambda member: _FileSink(store / f"{next(counter):08d}"),
        )
        try:
            sshsig.verify(
                inspection.manifest_bytes or b"",
                (inspection.signature or b"").decode("ascii", "replace"),
                public_keys=[key],
            )
        except SignatureError as error:
            problems.append({"code": error.code, "message": error.message})
    problems += [vars(problem) for problem in inspection.problems]
    return {
        **measured.figures,
        "receive_seconds": 0.0,
        "engine": "core: inspect_bundle + sshsig.verify + file sink",
        "status": "rejected" if problems else "accepted",
        "problems": problems,
        "files": len(inspection.archive.files),
    }


def _service_exists() -> bool:
    return importlib.util.find_spec("artifacts.services.ingest") is not None


def child(archive: Path) -> int:
    """Runs in the subprocess: one ingest, one JSON line on stdout."""
    import django

    django.setup()
    if os.environ.get("BENCH_ENGINE") == "core" or not _service_exists():
        report = _ingest_core(archive, Path(os.environ["REPROGATE_VAR_DIR"]) / "core")
    else:
        report = _ingest_service(archive, os.environ.get("BENCH_MODE", "api"))
    print(json.dumps(report, default=str), flush=True)
    return 0


# --- the parent ---------------------------------------------------------------------


def sha256_pass(path: Path, repeat: int = 2) -> float:
    """Seconds for one SHA-256 pass over the file (``hashlib.file_digest``), the
    best of ``repeat`` passes: the first one pays for warming up."""

    def one_pass() -> None:
        with path.open("rb") as handle:
            hashlib.file_digest(handle, "sha256")

    return best_of(repeat, one_pass)


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """The fewest seconds ``work`` took in ``repeat`` calls."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return min(timings)


def prepare_database() -> int:
    """In a subprocess: a migrated SQLite database (``DATABASE_URL``) holding what
    an upload needs: the vendor, its user and signing key, a published RFP."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)

    from accounts.models import Organisation, Role
    from artifacts.services.keys import signing_key_register
    from tests.accounts.factories import (
        MembershipFactory,
        OrganisationFactory,
        UserFactory,
    )
    from tests.procurement.factories import RfpFactory

    vendor = OrganisationFactory.create(slug=VENDOR, kind=Organisation.Kind.VENDOR)
    user = UserFactory.create(username=USERNAME)
    MembershipFactory.create(user=user, organisation=vendor, role=Role.VENDOR)
    RfpFactory.create(reference=RFP, published=True, invited=[vendor])
    signing_key_register(
        organisation=vendor, public_key_line=os.environ["BENCH_PUBLIC_KEY"], actor=user
    )
    return 0


def subprocess_env(
    var_dir: Path,
    public_key_line: str,
    engine: str,
    mode: str = "api",
    profile: Path | None = None,
) -> dict[str, str]:
    """Settings for the subprocesses: a throw-away database, local file storage
    and spool in ``var_dir``."""
    for folder in ("media", "tmp"):
        (var_dir / folder).mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        **ENV,
        "REPROGATE_VAR_DIR": str(var_dir),
        "DATABASE_URL": f"sqlite:///{var_dir / 'bench.sqlite3'}",
        "TMPDIR": str(var_dir / "tmp"),  # the spool, beside the storage
        "BENCH_ENGINE": engine,
        "BENCH_MODE": mode,
        "BENCH_PUBLIC_KEY": public_key_line,
        "BENCH_PROFILE": str(profile or ""),
    }
    env.pop("AWS_STORAGE_BUCKET_NAME", None)  # the local file storage
    return env


class BenchError(Exception):
    pass


@dataclass(frozen=True)
class ChildRun:
    stdout: str
    peak_rss_mb: float  # ru_maxrss of this one subprocess (os.wait4)


def run_python(args: list[str], env: dict[str, str], what: str) -> ChildRun:
    """Run ``python -m tests.perf.bench_ingest ARGS``; its own peak RSS comes from
    ``os.wait4``. The parent stays small (it never imports Django): Linux counts
    the parent's RSS at spawn time into the child's ``ru_maxrss``."""
    command = [sys.executable, "-m", "tests.perf.bench_ingest", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        raise BenchError(f"{what} failed ({process.returncode}):\n{stderr[-4000:]}")
    return ChildRun(stdout, usage.ru_maxrss / 1024)  # KiB on Linux


def run_ingest(archive: Path, env: dict[str, str]) -> tuple[dict[str, Any], float]:
    """The ingest subprocess's report and its peak RSS in MB."""
    run = run_python(["--child", str(archive)], env, "the ingest subprocess")
    last = run.stdout.strip().splitlines()[-1:] or ["{}"]
    report = json.loads(last[0])
    return report, max(run.peak_rss_mb, float(report["setup_peak_mb"]))


def file_creation(folder: Path, count: int = PROBE_FILES) -> float:
    """Seconds to create one empty file in ``folder`` (made here), the mean over
    ``count``: the file system's own cost, with nothing written into the files.
    They are left for the work folder's removal: deleting them now would slow
    what the file system creates next (tests/perf/README.md)."""
    folder.mkdir()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    started = time.perf_counter()
    for number in range(count):
        os.close(os.open(folder / f"{number:07d}", flags, 0o600))
    return (time.perf_counter() - started) / count


def _mib_s(size: int, seconds: float) -> float:
    return size / MiB / seconds if seconds > 0 else float("inf")


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def ratio_target(size: int) -> float:
    return RATIO_TARGET_FROM_GIB if size >= 1024 * MiB else RATIO_TARGET


def _row(label: str, seconds: float, size: int) -> str:
    return f"{label:<40}{seconds:>10.2f}{_mib_s(size, seconds):>10.1f}"


def table(
    bundle: BenchBundle, hash_s: float, report: dict[str, Any], peak_mb: float
) -> str:
    ingest_s, receive_s = float(report["seconds"]), float(report["receive_seconds"])
    rows = [
        f"bundle: {bundle.format}, {bundle.size:,} bytes "
        f"({bundle.size / MiB:,.1f} MiB), {bundle.files:,} files",
        f"ingest: {report['engine']}, {report['files']} files recorded, "
        f"status {report['status']}",
        "",
        f"{'measure':<40}{'seconds':>10}{'MiB/s':>10}",
        _row("sha256 pass over the archive (best of 2)", hash_s, bundle.size),
        _row("ingest call (subprocess, wall time)", ingest_s, bundle.size),
        f"{'  CPU time of the call (all threads)':<40}"
        f"{float(report.get('cpu_seconds', 0)):>10.2f}",
        f"{'throughput ratio ingest / sha256':<40}{hash_s / ingest_s:>20.2f}"
        f"   target >= {ratio_target(bundle.size)}",
    ]
    if floor_s := float(report.get("scan_floor_seconds", 0)):
        rows += [
            _row("  the scan alone, nothing kept (bound)", floor_s, bundle.size),
            f"{'  ratio scan alone / sha256':<40}{hash_s / floor_s:>20.2f}"
            "   the most this design can reach",
        ]
    if receive_s:
        total = receive_s + ingest_s
        rows += [
            _row("  upload received before (API handler)", receive_s, bundle.size),
            f"{'  ratio (receive + ingest) / sha256':<40}{hash_s / total:>20.2f}",
        ]
    rows += [
        f"{'peak RSS of the ingest process (MB)':<40}{peak_mb:>20.1f}"
        f"   target < {RSS_TARGET_MB}",
        f"{'  RSS when the call started (MB)':<40}"
        f"{_mb(report.get('rss_at_start_mb')):>20}   Python, Django, DB connection",
        f"{'  peak RSS during the call (MB)':<40}{_mb(report.get('call_peak_mb')):>20}",
    ]
    return "\n".join(rows)


@contextmanager
def work_dir(keep: Path | None, parent: Path | None) -> Iterator[Path]:
    """``keep``: this folder, left in place; else a temporary folder (in
    ``parent`` if given), removed at the end."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    path = Path(tempfile.mkdtemp(prefix="reprogate-bench-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _summary(hash_s: float, runs: list[tuple[dict[str, Any], float]]) -> str:
    ratios = sorted(hash_s / float(report["seconds"]) for report, _ in runs)
    peaks = [peak for _, peak in runs]
    lines = [
        f"run {number}: ingest {float(report['seconds']):.2f} s "
        f"(CPU {float(report.get('cpu_seconds', 0)):.2f} s), ratio "
        f"{hash_s / float(report['seconds']):.2f}, peak RSS {peak:.1f} MB"
        for number, (report, peak) in enumerate(runs, 1)
    ]
    lines.append(
        f"{len(runs)} runs: ratio median {statistics.median(ratios):.2f} "
        f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}), "
        f"peak RSS at most {max(peaks):.1f} MB"
    )
    return "\n".join(lines)


def bench(args: argparse.Namespace) -> int:
    with work_dir(args.work_dir, args.tmp_dir) as work:
        started = time.perf_counter()
        # The sources stay until the work folder goes: deleting 2,000 files just
        # before the ingest would slow the ingest's own file creation on some file
        # systems (tests/perf/README.md).
        bundle = make_bundle(
            work,
            total_bytes=args.size,
            fmt=args.format,
            small_files=args.small_files,
            keep_sources=True,
        )
        print(f"built the bundle in {time.perf_counter() - started:.1f} s", flush=True)
        hash_s = sha256_pass(bundle.path)
        runs: list[tuple[dict[str, Any], float]] = []
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for number in range(1, args.repeat + 1):
            # a fresh database, storage and spool each time, none deleted meanwhile
            env = subprocess_env(
                work / f"var-{stamp}-{number}",
                bundle.public_key_line,
                args.engine,
                args.mode,
                args.profile,
            )
            run_python(["--prepare"], env, "preparing the database")
            report, peak_mb = run_ingest(bundle.path, env)
            if report.get("status") != "accepted":
                print(table(bundle, hash_s, report, peak_mb))
                problems = json.dumps(report.get("problems"), indent=2)[:4000]
                print(problems, file=sys.stderr)
                print("error: the benchmark bundle was not accepted", file=sys.stderr)
                return 1
            runs.append((report, peak_mb))
        median = sorted(runs, key=lambda run: float(run[0]["seconds"]))[len(runs) // 2]
        print(table(bundle, hash_s, *median))
        if len(runs) > 1:
            print(f"\n{_summary(hash_s, runs)}")
        each = file_creation(work / "file-creation")
        print(
            f"\ncreating an empty file in the work folder (after the runs, "
            f"{PROBE_FILES:,} files): {each * 1e6:.0f} us each, "
            f"{each * bundle.files:.2f} s for the bundle's {bundle.files:,} files"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.bench_ingest",
        description="Ingest throughput vs one SHA-256 pass, and peak RSS.",
    )
    parser.add_argument("--size", type=parse_size, default=parse_size("100MiB"))
    parser.add_argument("--format", choices=("tgz", "tar"), default="tgz")
    parser.add_argument("--small-files", type=int, default=SMALL_FILES)
    parser.add_argument(
        "--engine",
        choices=("service", "core"),
        default="service",
        help="service: bundle_ingest (default); core: inspect_bundle + sshsig.verify "
        "+ a file sink, the verification alone",
    )
    parser.add_argument(
        "--mode",
        choices=("api", "file"),
        default="api",
        help="api (default): receive the archive as the upload API does (Django's "
        "multipart parser and the API's upload handler write it to a temporary file "
        "while hashing it; timed apart), then ingest it with its digest, "
        "letting storage take the file over; file: ingest the archive file as it "
        "is (the service hashes it and copies it into storage)",
    )
    parser.add_argument(
        "--tmp-dir",
        type=Path,
        default=None,
        help="make the temporary work folder (bundle, database, storage, spool) "
        "here, e.g. /dev/shm to leave the disk out",
    )
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="work in this folder and keep it"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="ingest the same bundle this many times, each into a fresh database and "
        "storage; the table shows the median run, then one line per run",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write a cProfile of the ingest call here (pstats format; slows it)",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.prepare:
        return prepare_database()
    if args.child is not None:
        return child(args.child)
    try:
        return bench(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
