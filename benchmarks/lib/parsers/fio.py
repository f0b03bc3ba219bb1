"""``fio-json``: ``fio --output-format=json`` and ``json+``.

What it reads (formats-and-gates.md §A1):

- ``jobs`` (standalone) or ``client_stats`` (``--client``; the ``All clients``
  aggregate included); one scope per entry: the job name, ``host/job`` for
  clients, ``#n`` appended when a name repeats (``numjobs`` without
  ``group_reporting``);
- directions ``read``, ``write``, ``trim``, ``mixed`` (unified_rw_reporting)
  and ``sync``; a direction with no I/O (fio zero-fills them) gives nothing;
- ``iops`` -> ``<dir>_iops``; ``bw_bytes`` (fio >= 3.2) or ``bw`` (KiB/s) ->
  ``<dir>_bw_mib_s``; per-sample min/max when fio took samples;
- ``slat``/``clat``/``lat`` latency objects -> ``<dir>_<kind>_us`` (min, max,
  mean, stddev and every percentile fio printed); ``*_ns`` keys (fio >= 3.0)
  are divided by 1000, the µs keys of fio 2.x are taken as they are; an object
  with no samples (``N`` = 0, or all zero before fio 3.18) gives nothing;
- percentile keys: the ``"0.00"`` padding fio <= 3.3 repeats (fio issue #511)
  is dropped (p0 is never a percentile fio computes); duplicates are resolved by
  the loader (first value wins, identical ones silently);
- json+ ``bins`` (value -> count, or the bin-index form with
  ``FIO_IO_U_PLAT_BITS``): percentiles recomputed with fio's algorithm for fio's
  list plus the standard ones (method ``recomputed:json+bins``) and compared
  with fio's own; a disagreement beyond 0.5% is a warning (both kept);
- ``prios`` (fio >= 3.30): per priority, scope ``<job> prio <class>/<level>``;
- ``disk_util``: ``disk_util_pct`` per device.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from benchmarks.lib.parsers import percentiles
from benchmarks.lib.parsers.common import array, obj, scaled, wrong_tool
from benchmarks.lib.parsers.jsontext import load_lenient
from benchmarks.lib.parsers.model import (
    STANDARD_PERCENTILES,
    MetricSink,
    ParseError,
    ParseResult,
    as_number,
    percentile_stat,
)

DIRECTIONS: Final = ("read", "write", "trim", "mixed", "sync")
LATENCY_KINDS: Final = ("slat", "clat", "lat")
MiB: Final = 1024 * 1024
TOLERANCE: Final = 0.005


def parse_fio(data: bytes, result: ParseResult) -> None:
    doc, warnings = load_lenient(data, what="fio JSON")
    result.warnings.extend(warnings)
    key = "client_stats" if "client_stats" in doc else "jobs"
    if key not in doc:
        raise wrong_tool(
            doc, "fio-json", "fio JSON output: no 'jobs' or 'client_stats'"
        )
    entries = array(doc[key], key)
    if not entries:
        raise ParseError(key, "fio reported no jobs")
    sink = MetricSink(result)
    jobs = [obj(entry, f"{key}[{i}]") for i, entry in enumerate(entries)]
    for i, (job, scope) in enumerate(zip(jobs, _scopes(jobs), strict=True)):
        _job(sink, job, f"{key}[{i}]", scope)
    for i, disk in enumerate(doc.get("disk_util") or []):
        if isinstance(disk, dict) and "util" in disk:
            where = f"disk_util[{i}]"
            name = str(disk.get("name", i))
            sink.add(
                "disk_util_pct",
                "mean",
                disk["util"],
                "%",
                f"{where}.util",
                scope=f"disk {name}",
            )
    result.info.update(
        {
            "fio_version": str(doc.get("fio version", "")),
            "entries": key,
            "jobs": len(jobs),
            "json_plus": any(
                m.method == "recomputed:json+bins" for m in result.metrics
            ),
        }
    )


def _scopes(jobs: list[dict[str, Any]]) -> list[str]:
    labels = []
    for i, job in enumerate(jobs):
        name = str(job.get("jobname", f"job{i}"))
        host = job.get("hostname")
        labels.append(f"{host}/{name}" if host and name != "All clients" else name)
    counts, seen = Counter(labels), Counter[str]()
    scopes = []
    for label in labels:
        scopes.append(f"{label}#{seen[label]}" if counts[label] > 1 else label)
        seen[label] += 1
    return scopes


def _job(sink: MetricSink, job: dict[str, Any], where: str, scope: str) -> None:
    error = as_number(job.get("error"))
    if error:
        sink.result.warnings.append(
            f"{where}: fio reported error {int(error)} for {scope}"
        )
    if as_number(job.get("total_err")):
        sink.result.warnings.append(
            f"{where}: {job['total_err']} I/O errors for {scope}"
        )
    for ddir in DIRECTIONS:
        if ddir in job:
            _direction(
                sink, obj(job[ddir], f"{where}.{ddir}"), ddir, f"{where}.{ddir}", scope
            )


def _direction(
    sink: MetricSink, d: dict[str, Any], ddir: str, where: str, scope: str
) -> None:
    if not (as_number(d.get("total_ios")) or as_number(d.get("io_bytes"))):
        return
    if ddir != "sync":
        _throughput(sink, d, ddir, where, scope)
    for kind in LATENCY_KINDS:
        for key, divisor in ((f"{kind}_ns", 1000.0), (kind, 1.0)):
            if key in d:
                name = f"{ddir}_{kind}_us"
                _latency(sink, d[key], name, divisor, f"{where}.{key}", scope)
                break
    for i, prio in enumerate(d.get("prios") or []):
        if not isinstance(prio, dict):
            continue
        label = f"{scope} prio {prio.get('prioclass', '?')}/{prio.get('prio', '?')}"
        for kind in ("clat", "lat"):
            if f"{kind}_ns" in prio:
                name = f"{ddir}_{kind}_us"
                key = f"{where}.prios[{i}].{kind}_ns"
                _latency(sink, prio[f"{kind}_ns"], name, 1000.0, key, label)


def _throughput(
    sink: MetricSink, d: dict[str, Any], ddir: str, where: str, scope: str
) -> None:
    if "iops" in d:
        sink.add(
            f"{ddir}_iops", "mean", d["iops"], "IO/s", f"{where}.iops", scope=scope
        )
    if as_number(d.get("iops_samples")):
        for stat in ("min", "max"):
            key = f"iops_{stat}"
            if key in d:
                sink.add(
                    f"{ddir}_iops", stat, d[key], "IO/s", f"{where}.{key}", scope=scope
                )
    if "bw_bytes" in d:
        value, key = scaled(d["bw_bytes"], MiB), "bw_bytes"
    elif "bw" in d:
        value, key = scaled(d["bw"], 1024), "bw"
    else:
        return
    name = f"{ddir}_bw_mib_s"
    sink.add(name, "mean", value, "MiB/s", f"{where}.{key}", scope=scope)
    sampled = as_number(d.get("bw_samples"))
    if sampled or ("bw_samples" not in d and as_number(d.get("bw_max"))):
        for stat in ("min", "max"):
            if f"bw_{stat}" in d:
                value = scaled(d[f"bw_{stat}"], 1024)
                sink.add(name, stat, value, "MiB/s", f"{where}.bw_{stat}", scope=scope)


def _latency(
    sink: MetricSink, value: Any, name: str, divisor: float, where: str, scope: str
) -> None:
    lat = obj(value, where)
    samples = as_number(lat.get("N"))
    if samples == 0 or (
        samples is None
        and not any(as_number(lat.get(k)) for k in ("min", "max", "mean"))
    ):
        return
    for stat in ("min", "max", "mean", "stddev"):
        if stat in lat:
            sink.add(
                name,
                stat,
                scaled(lat[stat], divisor),
                "us",
                f"{where}.{stat}",
                scope=scope,
            )
    tool = _tool_percentiles(sink, lat, name, divisor, where, scope)
    if "bins" in lat:
        _recompute(sink, lat, tool, name, divisor, where, scope)


def _tool_percentiles(
    sink: MetricSink,
    lat: dict[str, Any],
    name: str,
    divisor: float,
    where: str,
    scope: str,
) -> dict[float, float]:
    tool: dict[float, float] = {}
    for key, value in obj(lat.get("percentile", {}), f"{where}.percentile").items():
        p = as_number(key)
        if p == 0:
            continue  # fio <= 3.3 pads the list with "0.00": 0 (fio issue #511)
        if p is None or not 0 < p <= 100:
            sink.result.warnings.append(
                f"{where}.percentile: {key!r} is not a percentile; skipped"
            )
            continue
        metric = sink.add(
            name, percentile_stat(p), scaled(value, divisor), "us",
            f"{where}.percentile[{key!r}]", scope=scope,
        )  # fmt: skip
        if metric is not None:
            tool[p] = metric.value
    return tool


def _bins(lat: dict[str, Any], where: str) -> list[tuple[int, int]]:
    raw = obj(lat["bins"], f"{where}.bins")
    bits = raw.get("FIO_IO_U_PLAT_BITS")
    if bits is not None and (
        isinstance(bits, bool) or not isinstance(bits, int) or not 0 < bits < 16
    ):
        raise ParseError(
            f"{where}.bins.FIO_IO_U_PLAT_BITS", f"{bits!r} is not a bit count"
        )
    pairs = []
    for key, count in raw.items():
        if key.startswith("FIO_IO_U_PLAT"):
            continue
        if (
            not key.isdigit()
            or isinstance(count, bool)
            or not isinstance(count, int)
            or count < 0
        ):
            raise ParseError(
                f"{where}.bins[{key!r}]", "expected a bin value and a count >= 0"
            )
        value = int(key) if bits is None else _plat_idx_to_val(int(key), bits)
        pairs.append((value, count))
    return pairs


def _plat_idx_to_val(index: int, bits: int) -> int:
    """fio's ``plat_idx_to_val`` for the bin-index json+ form (fio 2.x)."""
    if index < (1 << bits) << 1:
        return index
    error_bits = (index >> bits) - 1
    base = 1 << (error_bits + bits)
    k = index % (1 << bits)
    return base + int((k + 0.5) * (1 << error_bits))


def _recompute(
    sink: MetricSink,
    lat: dict[str, Any],
    tool: dict[float, float],
    name: str,
    divisor: float,
    where: str,
    scope: str,
) -> None:
    pairs = _bins(lat, where)
    total = sum(count for _, count in pairs)
    samples = as_number(lat.get("N"))
    if samples is not None and samples != total:
        sink.result.warnings.append(
            f"{where}.bins: the bins hold {total} samples but N is {int(samples)}"
        )
    wanted = sorted(set(tool) | set(STANDARD_PERCENTILES))
    for p, value in percentiles.fio_bins(pairs, wanted).items():
        recomputed = value / divisor
        key = f"{where}.bins"
        sink.add(
            name,
            percentile_stat(p),
            recomputed,
            "us",
            key,
            method="recomputed:json+bins",
            scope=scope,
        )
        if p in tool and percentiles.disagrees(tool[p], recomputed, rel_tol=TOLERANCE):
            sink.result.warnings.append(
                f"{where}: fio's {percentile_stat(p)} is {tool[p]:g} us but its "
                f"bins give {recomputed:g} us ({scope}); both kept"
            )
