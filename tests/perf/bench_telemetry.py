"""Telemetry sampler benchmark: prints figures, fails only if a source starts a
process.

    python -m tests.perf.bench_telemetry [--samples 300] [--duration 5]
                                         [--blob-seconds 3600] [--devices 16]
                                         [--exec-source]

1. **cost per sample**: the runner's default sources on this host (every block
   device of ``/proc/diskstats``, up to ``--devices``, PSI, network, RDMA when
   present, NVML when installed, a cgroup and the harness progress) sampled
   ``--samples`` times in a row; CPU time per sample (``time.thread_time``) and
   the share of a core that makes at a 1 s and a 100 ms interval (target: under
   0.2 % of a core at 1 s);
2. **the thread itself**: a ``Sampler`` at 100 ms for ``--duration`` seconds;
   the process's CPU time over the wall time;
3. **no process per sample**: during 1 and 2, ``subprocess.Popen``,
   ``os.fork``, ``os.posix_spawn[p]``, ``os.system`` and ``os.popen`` are
   counted; any call makes the script FAIL (exit 1). ``--exec-source`` adds a
   source that runs ``true`` per sample, to show the check bites;
4. **blob size**: one hour (``--blob-seconds``) at 1 s for 16 devices x 11
   diskstats counters (12 busy, 4 idle, seeded noise) plus PSI; the encoded
   size (target ≤ 1.5 MB), encode and decode time.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.telemetry import Recorder, Sampler
from benchmarks.lib.lab.telemetry_blob import decode, encode
from benchmarks.lib.lab.telemetry_sources import (
    DISK_FIELDS,
    CgroupSource,
    Reading,
    Source,
    default_sources,
)

TARGET_SHARE_PCT: Final = 0.2
TARGET_BLOB_MB: Final = 1.5
SPAWNERS: Final = (
    (subprocess.Popen, "__init__"),
    (os, "fork"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
    (os, "popen"),
)


class Spawns:
    """Counts every way of starting a process while it is entered."""

    def __init__(self) -> None:
        self.count = 0
        self.saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> Spawns:
        for owner, name in SPAWNERS:
            original = getattr(owner, name, None)
            if original is None:
                continue
            self.saved.append((owner, name, original))
            setattr(owner, name, self._counting(original))
        return self

    def _counting(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(*args, **kwargs)

        return counted

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in self.saved:
            setattr(owner, name, original)


class ExecSource:
    """A source that does what no source may: exec a tool per sample."""

    name = "exec"

    def read(self) -> Reading:
        subprocess.run(["true"], check=False)
        return {}


def _host_devices(limit: int) -> list[str]:
    names = [
        line.split()[2] for line in Path("/proc/diskstats").read_text().splitlines()
    ]
    return names[:limit]


def _sources(devices: Sequence[str], exec_source: bool) -> list[Source]:
    sources, _ = default_sources(devices, progress=lambda: 0.5)
    cgroup = CgroupSource()
    own = Path(f"/sys/fs/cgroup/unified{_own_cgroup()}")
    if own.is_dir():
        cgroup.attach("v2", {"unified": own})
    sources.append(cgroup)
    if exec_source:
        sources.append(ExecSource())
    return sources


def _own_cgroup() -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    return "/"


def cost_per_sample(sources: list[Source], samples: int) -> float:
    ticks = itertools.count()
    sampler = Sampler(sources, interval_s=3600, clock=lambda: next(ticks) / 1000)
    sampler.sample()  # warm: first-seen counters
    start = time.thread_time()
    for _ in range(samples):
        sampler.sample()
    return (time.thread_time() - start) / samples


def thread_share(sources: list[Source], seconds: float) -> tuple[float, int]:
    sampler = Sampler(sources, interval_s=0.1)
    wall, cpu = time.monotonic(), time.process_time()
    sampler.start()
    time.sleep(seconds)
    recording = sampler.stop()
    used, elapsed = time.process_time() - cpu, time.monotonic() - wall
    return 100 * used / elapsed, len(recording.t_ms)


def synthetic_hour(seconds: int, devices: int) -> Recorder:
    rng, recorder = random.Random(6), Recorder()  # noqa: S311  not for secrets
    state = {f"nvme{i}n1": [0] * len(DISK_FIELDS) for i in range(devices)}
    psi = {"io_some_us": 0, "io_full_us": 0, "cpu_some_us": 0, "memory_some_us": 0}
    for t in range(seconds + 1):
        reading: Reading = {}
        for index, (name, values) in enumerate(state.items()):
            busy = index < devices * 3 // 4
            reads = rng.randint(9_000, 11_000) if busy else rng.randint(0, 3)
            writes = rng.randint(4_000, 6_000) if busy else 0
            noise = [rng.randint(0, 50) for _ in range(5)]
            step = [
                reads, noise[0], reads * 8, reads // 10 + noise[1],
                writes, noise[2], writes * 8, writes // 8 + noise[3],
                0, 990 + noise[4] // 5 if busy else 0, (reads + writes) // 5,
            ]  # fmt: skip
            values[:] = [v + d for v, d in zip(values, step, strict=True)]
            values[8] = rng.randint(0, 32) if busy else 0  # in_flight, a gauge
            reading[("diskstats", name)] = dict(zip(DISK_FIELDS, values, strict=True))
        for key in psi:
            psi[key] += rng.randint(0, 200_000)
        reading[("pressure", "host")] = dict(psi)
        recorder.add(t * 1000 + rng.randint(0, 3), reading)
    return recorder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--blob-seconds", type=int, default=3600)
    parser.add_argument("--devices", type=int, default=16)
    parser.add_argument("--exec-source", action="store_true")
    args = parser.parse_args(argv)

    devices = _host_devices(args.devices)
    with Spawns() as spawns:
        sources = _sources(devices, args.exec_source)
        per_sample = cost_per_sample(list(sources), args.samples)
        share_100ms, samples = thread_share(list(sources), args.duration)
    names = sorted({s.name for s in sources})
    print(
        f"sources                    {', '.join(names)} ({len(devices)} block devices)"
    )
    share_1s = 100 * per_sample / 1.0
    verdict = "ok" if share_1s < TARGET_SHARE_PCT else "OVER TARGET"
    target = f"target < {TARGET_SHARE_PCT} %: {verdict}"
    for line in (
        f"CPU per sample             {per_sample * 1e6:,.0f} µs ({args.samples} runs)",
        f"share of a core at 1 s     {share_1s:.4f} % ({target})",
        f"share of a core at 100 ms  {100 * per_sample / 0.1:.4f} % (cost per sample)",
        f"thread at 100 ms, measured {share_100ms:.4f} % of a core over "
        f"{args.duration:g} s ({samples} samples, the process's CPU)",
    ):
        print(line)

    recorder = synthetic_hour(args.blob_seconds, 16)
    recording = recorder.recording(1000, "2026-12-04T20:00:00.000Z", [], [])
    start = time.perf_counter()
    blob = encode(recording)
    encoded = time.perf_counter() - start
    start = time.perf_counter()
    back = decode(blob)
    decoded = time.perf_counter() - start
    assert back.t_ms == recording.t_ms
    values = sum(len(v) for s in recording.series for v in s.fields.values())
    megabytes = len(blob) / 1e6
    verdict = "ok" if megabytes <= TARGET_BLOB_MB else "OVER TARGET"
    print(
        f"blob, {args.blob_seconds} s at 1 s, 16 devices  {megabytes:.3f} MB "
        f"({values:,} values; target ≤ {TARGET_BLOB_MB} MB for an hour: {verdict})"
    )
    print(f"encode / decode            {encoded:.3f} s / {decoded:.3f} s")
    if spawns.count:
        print(f"FAIL: the sources started {spawns.count} processes while sampling")
        return 1
    print("processes started by the sources while sampling: 0")
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        sys.exit(main())
