"""A run's telemetry as one compact blob, and as the ``reprogate.telemetry/v1``
document the API serves.

Blob (version 1)::

    b"RGTEL" 0x01 | zlib( u32 header length | header JSON | columns )

The header names the interval, the start, the sample count and, per series,
its source, device and fields with each column's integer width. Columns are
delta-encoded (first differences, the first value as is) little-endian
integers of the narrowest width that holds them: the ``t_ms`` column first,
then every series' fields in header order. Every length is checked on decode;
anything else is refused with ``TelemetryBlobError``."""

from __future__ import annotations

import json
import re
import struct
import sys
import zlib
from array import array
from dataclasses import dataclass, field
from itertools import accumulate, pairwise
from typing import Any, Final

MAGIC: Final = b"RGTEL"
VERSION: Final = 1
SCHEMA: Final = "reprogate.telemetry/v1"
MAX_DECODED_BYTES: Final = 256 << 20
MAX_SERIES: Final = 4096
MAX_FIELDS: Final = 64
MAX_BUCKETS: Final = 128
NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,99}$")
FIELD_RE: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
WIDTHS: Final = (("b", 1), ("h", 2), ("i", 4), ("q", 8))
BIG_ENDIAN: Final = sys.byteorder == "big"


class TelemetryBlobError(ValueError):
    """The bytes are not a telemetry blob this code reads."""


@dataclass
class SeriesData:
    source: str
    device: str
    fields: dict[str, list[int]]


@dataclass
class Recording:
    interval_ms: int
    started: str
    t_ms: list[int]
    series: list[SeriesData] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # the watched block devices
    # per-I/O latency (``benchmarks.lib.lab.blocklat``): {"source", "device",
    # "unit", "buckets": [[min, max, count], ...]}
    histograms: list[dict[str, Any]] = field(default_factory=list)

    def document(self, run: str) -> dict[str, Any]:
        """The ``reprogate.telemetry/v1`` export (each series with its times)."""
        body: dict[str, Any] = {
            "schema": SCHEMA,
            "run": run,
            "interval_ms": self.interval_ms,
            "started": self.started,
            "series": [
                {
                    "source": s.source,
                    "device": s.device,
                    "t_ms": list(self.t_ms),
                    "fields": s.fields,
                }
                for s in self.series
            ],
        }
        if self.devices:
            body["devices"] = list(self.devices)
        if self.histograms:
            body["histograms"] = list(self.histograms)
        if self.notes:
            body["notes"] = list(self.notes)
        return body


def _deltas(values: list[int]) -> list[int]:
    return [values[0], *(b - a for a, b in pairwise(values))] if values else []


def _pack(values: list[int]) -> tuple[str, bytes]:
    deltas = _deltas(values)
    low, high = (min(deltas), max(deltas)) if deltas else (0, 0)
    for code, size in WIDTHS:
        bound = 1 << (8 * size - 1)
        if -bound <= low and high < bound:
            column = array(code, deltas)
            if BIG_ENDIAN:
                column.byteswap()
            return code, column.tobytes()
    raise ValueError("a telemetry value does not fit in 64 bits")


def encode(recording: Recording, level: int = 9) -> bytes:
    n = len(recording.t_ms)
    code, t_bytes = _pack(recording.t_ms)
    columns, series = [t_bytes], []
    for s in recording.series:
        fields = []
        for name, values in s.fields.items():
            if len(values) != n:
                raise ValueError(
                    f"{s.source}/{s.device}/{name}: {len(values)} values, {n} samples"
                )
            width, data = _pack(values)
            fields.append([name, width])
            columns.append(data)
        series.append({"source": s.source, "device": s.device, "fields": fields})
    header = json.dumps(
        {
            "interval_ms": recording.interval_ms,
            "started": recording.started,
            "samples": n,
            "t_ms": code,
            "series": series,
            "notes": recording.notes,
            "devices": recording.devices,
            "histograms": recording.histograms,
        },
        separators=(",", ":"),
    ).encode()
    payload = struct.pack("<I", len(header)) + header + b"".join(columns)
    return MAGIC + bytes([VERSION]) + zlib.compress(payload, level)


def _inflate(blob: bytes) -> bytes:
    if blob[: len(MAGIC)] != MAGIC:
        raise TelemetryBlobError("not a telemetry blob (no RGTEL header)")
    if len(blob) < len(MAGIC) + 1 or blob[len(MAGIC)] != VERSION:
        raise TelemetryBlobError("a telemetry blob of an unknown version")
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(blob[len(MAGIC) + 1 :], MAX_DECODED_BYTES)
    except zlib.error as error:
        raise TelemetryBlobError(f"the telemetry blob is corrupt ({error})") from error
    if inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
        raise TelemetryBlobError(
            "the telemetry blob is truncated, too large or has trailing bytes"
        )
    return payload


def _header(payload: bytes) -> tuple[dict[str, Any], int]:
    if len(payload) < 4:
        raise TelemetryBlobError("the telemetry blob has no header")
    (length,) = struct.unpack_from("<I", payload)
    try:
        header = json.loads(payload[4 : 4 + length])
    except (ValueError, UnicodeDecodeError) as error:
        raise TelemetryBlobError(
            f"the telemetry header is not JSON ({error})"
        ) from error
    ok = (
        isinstance(header, dict)
        and isinstance(header.get("interval_ms"), int)
        and isinstance(header.get("started"), str)
        and isinstance(header.get("samples"), int)
        and header["samples"] >= 0
        and isinstance(header.get("series"), list)
        and len(header["series"]) <= MAX_SERIES
        and isinstance(header.get("notes", []), list)
        and isinstance(header.get("devices", []), list)
        and isinstance(header.get("histograms", []), list)
        and len(header.get("histograms", [])) <= MAX_SERIES
    )
    if not ok:
        raise TelemetryBlobError("the telemetry header misses or mistypes a field")
    return header, 4 + length


def _width(code: Any) -> int:
    widths = dict(WIDTHS)
    if code not in widths:
        raise TelemetryBlobError(f"unknown column width {str(code)[:10]!r}")
    return widths[code]


def _series_fields(entry: Any) -> tuple[str, str, list[tuple[str, str]]]:
    if not isinstance(entry, dict):
        raise TelemetryBlobError("a telemetry series is not an object")
    source, device, fields = (
        entry.get("source"),
        entry.get("device"),
        entry.get("fields"),
    )
    if not (isinstance(source, str) and FIELD_RE.match(source)):
        raise TelemetryBlobError("a telemetry series has a bad source name")
    if not (isinstance(device, str) and NAME_RE.match(device)):
        raise TelemetryBlobError(f"{source}: a bad device name")
    if not isinstance(fields, list) or len(fields) > MAX_FIELDS:
        raise TelemetryBlobError(f"{source}/{device}: bad fields")
    named = []
    for item in fields:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise TelemetryBlobError(f"{source}/{device}: a bad field entry")
        if not FIELD_RE.match(item[0]):
            raise TelemetryBlobError(f"{source}/{device}: bad field name")
        _width(item[1])
        named.append((item[0], str(item[1])))
    return source, device, named


def decode(blob: bytes) -> Recording:
    """The recording in ``blob``; ``TelemetryBlobError`` for anything else."""
    payload = _inflate(bytes(blob))
    header, offset = _header(payload)
    n = header["samples"]

    def column(code: str) -> list[int]:
        nonlocal offset
        size = _width(code) * n
        if offset + size > len(payload):
            raise TelemetryBlobError(
                "the telemetry columns are shorter than the header says"
            )
        values = array(code)
        values.frombytes(payload[offset : offset + size])
        if BIG_ENDIAN:
            values.byteswap()
        offset += size
        return list(accumulate(values))

    t_ms = column(header.get("t_ms", ""))
    series = []
    for entry in header["series"]:
        source, device, fields = _series_fields(entry)
        series.append(
            SeriesData(source, device, {name: column(code) for name, code in fields})
        )
    if offset != len(payload):
        raise TelemetryBlobError("the telemetry blob has bytes after its columns")
    notes = [str(note)[:300] for note in header.get("notes", [])][:100]
    devices = [str(d)[:100] for d in header.get("devices", [])][:MAX_SERIES]
    histograms = [_histogram(h) for h in header.get("histograms", [])]
    return Recording(
        header["interval_ms"],
        header["started"],
        t_ms,
        series,
        notes,
        devices,
        histograms,
    )


def _histogram(entry: Any) -> dict[str, Any]:
    ok = (
        isinstance(entry, dict)
        and entry.get("source") == "block_latency"
        and isinstance(entry.get("device"), str)
        and NAME_RE.match(entry["device"])
        and entry.get("unit") == "us"
        and isinstance(entry.get("buckets"), list)
        and len(entry["buckets"]) <= MAX_BUCKETS
        and all(
            isinstance(b, list)
            and len(b) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) for v in b)
            for b in entry["buckets"]
        )
    )
    if not ok:
        raise TelemetryBlobError("a latency histogram in the header is malformed")
    return {
        "source": "block_latency",
        "device": entry["device"],
        "unit": "us",
        "buckets": entry["buckets"],
    }
