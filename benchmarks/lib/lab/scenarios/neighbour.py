"""The neighbour jobs of ``interference`` scenarios: the lab (never the vendor)
defines them by name in the buyer's lab plan, in a small fio vocabulary; a
scenario names one (``"neighbour": "noisy-500"``) and the run's claim carries
it as ``neighbours`` (``benchmarks.lib.lab.lab_plan``):

    {"noisy-500": {"rw": "randread", "bs": "4k", "iodepth": 4, "rate_iops": 500,
                   "runtime": 30, "size": "64m", "ioengine": "libaio"}}

Only these seven options exist (everything else is refused): ``rw`` (read,
write, randread, randwrite, rw, randrw), ``bs`` (512 bytes to 16 MiB, a multiple
of 512: ``4096``, ``"4k"``, ``"1m"``), ``iodepth`` (1 to 1024, default 1),
``rate_iops`` (1 to 10,000,000: the neighbour is throttled to that many I/Os
per second, per direction as fio does it), ``runtime`` (seconds, 1 to 86,400:
without it the neighbour runs until the victim's phase ends), ``size`` (the
region of each device it touches: bytes or ``"64m"``, ``"1g"``; default the
whole device) and ``ioengine`` (psync, libaio or io_uring; default psync).
The runner adds the rest itself: direct I/O on the policy's block devices,
JSON output to a file of its own.

``neighbour_options_problems`` names every problem of one job with its path
(``lab_plan.neighbours.noisy-500.bs``) and is Django-free: the lab plan's check
at a campaign's start takes it as its ``options_check``, so a plan is refused
before any run is queued; ``neighbour_job`` finds the job a scenario names in
the claim and ``parse_neighbour`` reads one, both raising ``NeighbourError``
with the problems (``path: message``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

RW_MODES: Final = ("read", "write", "randread", "randwrite", "rw", "randrw")
ENGINES: Final = ("psync", "libaio", "io_uring")
KEYS: Final = frozenset(
    {"rw", "bs", "iodepth", "rate_iops", "runtime", "size", "ioengine"}
)
SIZE: Final = re.compile(r"^([1-9][0-9]{0,15})([kmgt]?)$")
UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
BS_RANGE: Final = (512, 16 << 20)
IODEPTH_RANGE: Final = (1, 1024)
RATE_RANGE: Final = (1, 10_000_000)
RUNTIME_RANGE: Final = (1, 86_400)
MIN_SIZE: Final = 4096
JOBS: Final = "neighbours"  # the lab plan's jobs by name, in the run's claim


class NeighbourError(ValueError):
    """The neighbour job is not valid; ``problems`` names each with its path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class NeighbourJob:
    rw: str
    bs: int  # bytes
    iodepth: int = 1
    rate_iops: int | None = None
    runtime_s: int | None = None  # None: until the victim's phase ends
    size: int | None = None  # bytes per device; None: the whole device
    ioengine: str = "psync"

    def fio_args(self, filenames: list[str], output: str | None = None) -> list[str]:
        """fio's command line against ``filenames`` (the sandbox's paths of the
        policy's block devices), its JSON report written to ``output`` (to
        stdout when None)."""
        args = [
            "fio",
            "--name=neighbour",
            "--filename=" + ":".join(name.replace(":", "\\:") for name in filenames),
            f"--rw={self.rw}",
            f"--bs={self.bs}",
            f"--iodepth={self.iodepth}",
            f"--ioengine={self.ioengine}",
            "--direct=1",
            "--time_based",
            f"--runtime={self.runtime_s or RUNTIME_RANGE[1]}",
            "--output-format=json",
        ]
        if output is not None:
            args.append(f"--output={output}")
        if self.rate_iops is not None:
            args.append(f"--rate_iops={self.rate_iops}")
        if self.size is not None:
            args.append(f"--size={self.size}")
        return args

    def as_json(self) -> dict[str, object]:
        return {
            "rw": self.rw,
            "bs": self.bs,
            "iodepth": self.iodepth,
            "rate_iops": self.rate_iops,
            "runtime": self.runtime_s,
            "size": self.size,
            "ioengine": self.ioengine,
        }


def _bytes(value: object) -> int | None:
    """Bytes from an integer or fio's ``<n>[k|m|g|t]`` (powers of 1024)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = SIZE.match(value.strip().lower())
        if match:
            return int(match.group(1)) * UNITS[match.group(2)]
    return None


Problems = list[tuple[str, str]]  # (path, message)


def _integer(
    value: object, where: str, low_high: tuple[int, int], problems: Problems
) -> int | None:
    low, high = low_high
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append((where, f"must be a whole number from {low} to {high}"))
        return None
    if not low <= value <= high:
        problems.append((where, f"{value} is outside {low} to {high}"))
        return None
    return value


def _choice(
    value: object, where: str, allowed: tuple[str, ...], problems: Problems
) -> None:
    if not isinstance(value, str) or value not in allowed:
        problems.append((where, f"{value!r} is not one of {', '.join(allowed)}"))


def neighbour_options_problems(options: object, path: str) -> Problems:
    """Every problem of the job's options at ``path``, as ``(path, message)``:
    the lab plan's check of its neighbours takes it as its ``options_check``."""
    return _read(options, path)[1]


def neighbour_problems(value: object, where: str = "neighbour") -> list[str]:
    """Every problem of the job at ``where`` as ``path: message``; [] when valid."""
    return [f"{path}: {message}" for path, message in _read(value, where)[1]]


def parse_neighbour(value: object, where: str = "neighbour") -> NeighbourJob:
    job, problems = _read(value, where)
    if job is None:
        raise NeighbourError([f"{path}: {message}" for path, message in problems])
    return job


def _read(value: object, where: str) -> tuple[NeighbourJob | None, Problems]:
    if not isinstance(value, dict):
        return None, [(where, "must be an object of fio options")]
    problems: Problems = []
    for key in sorted(set(value) - KEYS, key=str):
        problems.append(
            (
                f"{where}.{key}",
                f"not an allowed option (allowed: {', '.join(sorted(KEYS))})",
            )
        )
    if "rw" not in value:
        problems.append((f"{where}.rw", f"required ({', '.join(RW_MODES)})"))
    else:
        _choice(value["rw"], f"{where}.rw", RW_MODES, problems)
    bs = _bytes(value.get("bs"))
    if "bs" not in value:
        problems.append((f"{where}.bs", 'required (e.g. 4096 or "4k")'))
    elif bs is None or not BS_RANGE[0] <= bs <= BS_RANGE[1] or bs % 512:
        problems.append((
            f"{where}.bs",
            f"{value['bs']!r} is not a block size of 512 bytes to 16 MiB in "
            "multiples of 512",
        ))  # fmt: skip
    size = _bytes(value.get("size")) if "size" in value else None
    if "size" in value and (size is None or size < MIN_SIZE):
        problems.append((
            f"{where}.size",
            f"{value['size']!r} is not a size of at least {MIN_SIZE} bytes (bytes "
            'or "64m", "1g")',
        ))  # fmt: skip
    numbers = {
        key: _integer(value[key], f"{where}.{key}", bounds, problems)
        for key, bounds in (
            ("iodepth", IODEPTH_RANGE),
            ("rate_iops", RATE_RANGE),
            ("runtime", RUNTIME_RANGE),
        )
        if key in value
    }
    if "ioengine" in value:
        _choice(value["ioengine"], f"{where}.ioengine", ENGINES, problems)
    if problems:
        return None, problems
    job = NeighbourJob(
        rw=str(value["rw"]),
        bs=int(bs or 0),
        iodepth=numbers.get("iodepth") or 1,
        rate_iops=numbers.get("rate_iops"),
        runtime_s=numbers.get("runtime"),
        size=size,
        ioengine=str(value.get("ioengine", "psync")),
    )
    return job, []


def neighbour_job(name: object, jobs: object, where: str = JOBS) -> NeighbourJob:
    """The job ``name`` of the lab plan's ``jobs`` (the claim's ``neighbours``);
    NeighbourError when it is not there or not valid."""
    if not isinstance(jobs, dict) or not isinstance(name, str) or name not in jobs:
        known = (
            ", ".join(sorted(str(n) for n in jobs)) if isinstance(jobs, dict) else ""
        )
        raise NeighbourError(
            [f"{where}.{str(name)[:64]}: no such neighbour job in the lab plan"
             + (f" (it has {known})" if known else "")]
        )  # fmt: skip
    return parse_neighbour(jobs[name], f"{where}.{name}")
