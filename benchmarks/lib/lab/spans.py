"""Trace spans: what a harness writes in ``REPROGATE_TRACE_DIR`` (``*.jsonl``,
one span a line, OpenTelemetry's span model) and the runner's one normalised
``spans.jsonl`` artefact made of them.

A span is ``{"trace_id": 32 hex, "span_id": 16 hex, "parent_id"?: 16 hex,
"name", "start_ns", "end_ns", "attributes": {name: scalar}}`` with times in
nanoseconds since the Unix epoch (OpenTelemetry's ``*_time_unix_nano``) and
``end_ns >= start_ns``. Attribute names follow OpenTelemetry's semantic
conventions where one exists (``gen_ai.usage.output_tokens``) plus ReproGate's
own (``reprogate.kv.hits``, ``reprogate.io.device`` …).

- ``collect_trace_dir``: the harness's files read as hostile input (regular
  files only, never through a link, capped in files, bytes, line length and
  spans); a bad line is counted, named in a warning and skipped, never fatal;
- ``encode_spans`` / ``read_spans``: the artefact, sorted by start, one
  canonical JSON object a line;
- ``waterfall`` and ``slowest_requests``: the run page's request waterfall and
  "slowest requests and the I/O behind them", joined with the telemetry
  (``reprogate.telemetry/v1``) by time."""

from __future__ import annotations

import heapq
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

TRACE_ID: Final = re.compile(r"^[0-9a-f]{32}$")
SPAN_ID: Final = re.compile(r"^[0-9a-f]{16}$")
ATTRIBUTE_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$")
KEYS: Final = frozenset(
    {"trace_id", "span_id", "parent_id", "name", "start_ns", "end_ns", "attributes"}
)
MAX_NAME: Final = 200
MAX_ATTRIBUTES: Final = 64
MAX_TEXT: Final = 1000
MAX_NS: Final = (1 << 63) - 1
# What the runner reads of a trace directory.
MAX_FILES: Final = 64
MAX_FILE_BYTES: Final = 64 << 20
MAX_TOTAL_BYTES: Final = 192 << 20
MAX_LINE_BYTES: Final = 16 << 10
MAX_SPANS: Final = 200_000
MAX_WARNINGS: Final = 5  # bad lines named in the run's warning
MAX_NOTES: Final = 20  # files skipped, caps reached
MAX_WARNING_CHARS: Final = 1900  # the runner API keeps warnings of 2,000
# OpenTelemetry / ReproGate attribute names the page reads.
KV_HITS: Final = "reprogate.kv.hits"
KV_MISSES: Final = "reprogate.kv.misses"
IO_DEVICE: Final = "reprogate.io.device"
IO_OFFSET: Final = "reprogate.io.offset"
IO_BYTES: Final = "reprogate.io.bytes"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
NS_PER_MS: Final = 1_000_000

Scalar = str | int | float | bool


class SpanProblem(ValueError):
    """One span (line) is not a span this code reads."""


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Scalar] = field(default_factory=dict)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"trace_id": self.trace_id, "span_id": self.span_id}
        if self.parent_id is not None:
            body["parent_id"] = self.parent_id
        body.update(
            name=self.name,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            attributes=self.attributes,
        )
        return body


def _id(value: object, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        width = 32 if pattern is TRACE_ID else 16
        raise SpanProblem(f"{what} must be {width} lowercase hex digits")
    if not value.strip("0"):
        raise SpanProblem(f"{what} must not be all zeros")
    return value


def _ns(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpanProblem(f"{what} must be an integer (nanoseconds since the epoch)")
    if not 0 <= value <= MAX_NS:
        raise SpanProblem(f"{what} is out of range")
    return value


def _attributes(value: object) -> dict[str, Scalar]:
    if not isinstance(value, dict):
        raise SpanProblem("attributes must be an object")
    if len(value) > MAX_ATTRIBUTES:
        raise SpanProblem(f"more than {MAX_ATTRIBUTES} attributes")
    found: dict[str, Scalar] = {}
    for name, item in value.items():
        if not ATTRIBUTE_NAME.match(name):
            raise SpanProblem(f"attribute name {name[:60]!r} is not valid")
        if isinstance(item, float) and not math.isfinite(item):
            raise SpanProblem(f"attribute {name} is not a finite number")
        if isinstance(item, str) and len(item) > MAX_TEXT:
            raise SpanProblem(f"attribute {name} is longer than {MAX_TEXT} characters")
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_NS:
            raise SpanProblem(f"attribute {name} is out of range")
        if not isinstance(item, str | int | float | bool):
            raise SpanProblem(f"attribute {name} must be a string, number or boolean")
        found[name] = item
    return found


def span_from_json(value: object) -> Span:
    """The span ``value`` describes, or ``SpanProblem`` saying why not."""
    if not isinstance(value, dict):
        raise SpanProblem("a span must be a JSON object")
    unknown = sorted(set(value) - KEYS)
    if unknown:
        raise SpanProblem(f"unknown key {unknown[0][:60]!r}")
    missing = [
        k
        for k in ("trace_id", "span_id", "name", "start_ns", "end_ns")
        if k not in value
    ]
    if missing:
        raise SpanProblem(f"{missing[0]} is missing")
    parent = value.get("parent_id")
    name = value["name"]
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise SpanProblem(f"name must be a string of 1 to {MAX_NAME} characters")
    start, end = _ns(value["start_ns"], "start_ns"), _ns(value["end_ns"], "end_ns")
    if end < start:
        raise SpanProblem("end_ns is before start_ns")
    span_id = _id(value["span_id"], SPAN_ID, "span_id")
    parent_id = None if parent is None else _id(parent, SPAN_ID, "parent_id")
    if parent_id == span_id:
        raise SpanProblem("parent_id is the span's own id")
    return Span(
        trace_id=_id(value["trace_id"], TRACE_ID, "trace_id"),
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        start_ns=start,
        end_ns=end,
        attributes=_attributes(value.get("attributes", {})),
    )


def span_from_line(line: bytes) -> Span:
    if len(line) > MAX_LINE_BYTES:
        raise SpanProblem(f"longer than {MAX_LINE_BYTES} bytes")
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise SpanProblem("not UTF-8") from error
    except json.JSONDecodeError as error:
        raise SpanProblem(f"not JSON ({error.msg} at column {error.colno})") from error
    except (ValueError, RecursionError) as error:  # huge numbers, deep nesting
        raise SpanProblem(f"not JSON ({str(error)[:80]})") from error
    return span_from_json(value)


@dataclass
class Parsed:
    """Spans read, and the lines that were not (counted, the first few named)."""

    spans: list[Span] = field(default_factory=list)
    bad_lines: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # caps reached, files skipped

    def bad(self, where: str, why: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < MAX_WARNINGS:
            self.problems.append(f"{where}: {why}")

    def warnings(self) -> list[str]:
        """What a run's warnings say about its spans (empty when all was read):
        at most ``MAX_NOTES`` + 1 lines of at most ``MAX_WARNING_CHARS``."""
        found = self.notes[:MAX_NOTES]
        if len(self.notes) > MAX_NOTES:
            found.append(f"trace spans: {len(self.notes) - MAX_NOTES} more notes.")
        if self.bad_lines:
            shown = "; ".join(self.problems)
            more = self.bad_lines - len(self.problems)
            tail = f" (and {more} more)" if more > 0 else ""
            found.append(
                f"trace spans: {self.bad_lines} bad line(s) skipped: {shown}{tail}."
            )
        return [text[:MAX_WARNING_CHARS] for text in found]


def parse_lines(
    lines: Iterable[bytes], where: str, into: Parsed | None = None
) -> Parsed:
    """Every line of ``lines`` as a span; a bad one is counted and named as
    ``<where> line <n>``, blank lines are skipped."""
    parsed = into if into is not None else Parsed()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(parsed.spans) >= MAX_SPANS:
            parsed.notes.append(f"trace spans: only the first {MAX_SPANS} kept.")
            break
        try:
            parsed.spans.append(span_from_line(line))
        except SpanProblem as problem:
            parsed.bad(f"{where} line {number}", str(problem))
    return parsed


def read_spans(data: bytes, where: str = "spans.jsonl") -> Parsed:
    """The spans of a ``spans.jsonl`` artefact (or of one harness file)."""
    return parse_lines(data.split(b"\n"), where)


def read_checked(lines: Iterable[bytes]) -> list[Span]:
    """The spans of a ``spans.jsonl`` that was checked when it arrived (every
    line a span: the server's upload check), read without checking again."""
    found = []
    for line in lines:
        if line.strip():
            v = json.loads(line)
            found.append(
                Span(
                    v["trace_id"],
                    v["span_id"],
                    v.get("parent_id"),
                    v["name"],
                    v["start_ns"],
                    v["end_ns"],
                    v.get("attributes") or {},
                )
            )
    return found


def sort_key(span: Span) -> tuple[int, int, str, str]:
    return (span.start_ns, -span.end_ns, span.trace_id, span.span_id)


def encode_spans(spans: Iterable[Span], limit: int | None = None) -> bytes:
    """The ``spans.jsonl`` artefact: sorted by start (longest first on a tie),
    one canonical JSON object a line (UTF-8); a span id seen twice in one trace
    is kept once (the first by that order); the earliest spans that fit in
    ``limit`` bytes when it is given."""
    seen: set[tuple[str, str]] = set()
    lines, size = [], 0
    for span in sorted(spans, key=sort_key):
        if (span.trace_id, span.span_id) in seen:
            continue
        seen.add((span.trace_id, span.span_id))
        text = json.dumps(
            span.as_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        line = text.encode() + b"\n"
        size += len(line)
        if limit is not None and size > limit:
            break
        lines.append(line)
    return b"".join(lines)


def _read_capped(fd: int, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of ``fd``; whether there was more."""
    chunks, left = [], limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    return data[:limit], len(data) > limit


def _open_regular(name: str, dir_fd: int) -> int | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        return None
    return fd


def collect_trace_dir(trace_dir: Path) -> Parsed:
    """The spans of the ``*.jsonl`` files directly in ``trace_dir`` (by name),
    read as hostile input: regular files only (a link, a hard link, a folder or
    a device is skipped with a note), at most ``MAX_FILES`` files of
    ``MAX_FILE_BYTES`` and ``MAX_TOTAL_BYTES`` in all (a longer file is read up
    to its last whole line within the cap), lines of ``MAX_LINE_BYTES``."""
    parsed = Parsed()
    try:
        dir_fd = os.open(trace_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        parsed.notes.append(
            f"trace spans: the trace directory is unreadable ({error.strerror})."
        )
        return parsed
    try:
        names = sorted(n for n in os.listdir(dir_fd) if n.endswith(".jsonl"))
        if len(names) > MAX_FILES:
            parsed.notes.append(
                f"trace spans: {len(names)} files, only the first {MAX_FILES} read."
            )
        budget = MAX_TOTAL_BYTES
        for name in names[:MAX_FILES]:
            shown = name.encode("unicode_escape").decode()[:100]
            fd = _open_regular(name, dir_fd)
            if fd is None:
                parsed.notes.append(
                    f"trace spans: {shown} skipped (not a regular file)."
                )
                continue
            try:
                data, more = _read_capped(fd, min(MAX_FILE_BYTES, budget))
            finally:
                os.close(fd)
            budget -= len(data)
            if more:
                data = data[: data.rfind(b"\n") + 1]
                parsed.notes.append(
                    f"trace spans: {shown} read only up to the size cap."
                )
            parse_lines(data.split(b"\n"), shown, into=parsed)
            if budget <= 0 or len(parsed.spans) >= MAX_SPANS:
                break
    finally:
        os.close(dir_fd)
    return parsed


# --- the run page: waterfall and slowest requests joined with the telemetry ---


@dataclass(frozen=True)
class Bar:
    """One span of the waterfall: its depth under its request and where it lies
    (ms from the run's start; % of the drawn window)."""

    span: Span
    depth: int
    offset_ms: float
    duration_ms: float
    left_pct: float
    width_pct: float

    @property
    def level(self) -> int:
        """The depth as the page colours it (0 request … 3 and deeper)."""
        return min(self.depth, 3)


@dataclass(frozen=True)
class Waterfall:
    start_ns: int
    end_ns: int
    requests: int  # root spans in the file
    bars: list[Bar]

    @property
    def window_ms(self) -> float:
        return (self.end_ns - self.start_ns) / NS_PER_MS


@dataclass(frozen=True)
class SpanTree:
    """Root spans (no parent, or a parent not in the file) and children by
    parent id, both by start: what the waterfall and the slowest requests walk."""

    roots: list[Span]
    children: dict[str, list[Span]]

    @classmethod
    def of(cls, spans: list[Span]) -> SpanTree:
        ids = {s.span_id for s in spans}
        roots: list[Span] = []
        children: dict[str, list[Span]] = {}
        for span in sorted(spans, key=sort_key):
            if span.parent_id is None or span.parent_id not in ids:
                roots.append(span)
            else:
                children.setdefault(span.parent_id, []).append(span)
        return cls(roots, children)


def _children(spans: list[Span] | SpanTree) -> tuple[list[Span], dict[str, list[Span]]]:
    tree = spans if isinstance(spans, SpanTree) else SpanTree.of(spans)
    return tree.roots, tree.children


def _tree(
    root: Span, children: Mapping[str, list[Span]], limit: int
) -> list[tuple[Span, int]]:
    found: list[tuple[Span, int]] = []
    stack, seen = [(root, 0)], set()
    while stack and len(found) < limit:
        span, depth = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        found.append((span, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(span.span_id, [])))
    return found


def waterfall(
    spans: list[Span] | SpanTree,
    run_start_ns: int | None = None,
    max_requests: int = 40,
    max_per_request: int = 12,
) -> Waterfall:
    """The first ``max_requests`` requests (root spans) by start, each followed
    by its descendants (depth first, by start), placed on one time axis from
    the run's start (the telemetry's start, else the first span's)."""
    roots, children = _children(spans)
    shown = [
        row
        for root in roots[:max_requests]
        for row in _tree(root, children, max_per_request)
    ]
    if not shown:
        return Waterfall(0, 0, len(roots), [])
    first = min(s.start_ns for s, _ in shown)
    start = min(first, run_start_ns) if run_start_ns is not None else first
    end = max(s.end_ns for s, _ in shown)
    width = max(end - start, 1)
    bars = [
        Bar(
            span=s,
            depth=depth,
            offset_ms=(s.start_ns - start) / NS_PER_MS,
            duration_ms=s.duration_ns / NS_PER_MS,
            left_pct=round(100 * (s.start_ns - start) / width, 3),
            width_pct=max(round(100 * s.duration_ns / width, 3), 0.2),
        )
        for s, depth in shown
    ]
    return Waterfall(start, end, len(roots), bars)


def iso_to_ns(text: str) -> int | None:
    """``2026-12-04T20:00:00.000Z`` as nanoseconds since the epoch."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


@dataclass(frozen=True)
class Interval:
    """One telemetry interval of one block device that a request overlaps."""

    device: str
    from_ms: int  # from the telemetry's start
    to_ms: int
    read_iops: float
    read_await_ms: float | None  # Δread_ticks / Δreads (None: no read)
    in_flight: int | None


@dataclass(frozen=True)
class SlowRequest:
    span: Span
    offset_ms: float
    duration_ms: float
    kv_hits: int
    kv_misses: int
    reads: int
    read_bytes: int
    read_ms: float  # the summed duration of its storage read spans
    devices: list[str]
    intervals: list[Interval]


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


def _intervals(
    telemetry: Mapping[str, Any] | None, start_ns: int, end_ns: int
) -> list[Interval]:
    """The diskstats intervals ``(t[i-1], t[i]]`` whose wall-clock time
    overlaps ``[start_ns, end_ns]``."""
    if not telemetry:
        return []
    origin = iso_to_ns(str(telemetry.get("started") or ""))
    if origin is None:
        return []
    found = []
    for series in telemetry.get("series") or []:
        if not isinstance(series, dict) or series.get("source") != "diskstats":
            continue
        t_ms, fields = series.get("t_ms") or [], series.get("fields") or {}
        reads, ticks = fields.get("reads_completed"), fields.get("read_ticks_ms")
        if not isinstance(reads, list) or not isinstance(ticks, list):
            continue
        flight = fields.get("in_flight")
        for i in range(1, min(len(t_ms), len(reads), len(ticks))):
            low, high = origin + t_ms[i - 1] * NS_PER_MS, origin + t_ms[i] * NS_PER_MS
            if high < start_ns or low > end_ns or t_ms[i] <= t_ms[i - 1]:
                continue
            seconds = (t_ms[i] - t_ms[i - 1]) / 1000
            count = _number(reads[i])
            found.append(
                Interval(
                    device=str(series.get("device") or ""),
                    from_ms=int(t_ms[i - 1]),
                    to_ms=int(t_ms[i]),
                    read_iops=round(count / seconds, 1),
                    read_await_ms=round(_number(ticks[i]) / count, 3)
                    if count
                    else None,
                    in_flight=int(flight[i])
                    if isinstance(flight, list) and i < len(flight)
                    else None,
                )
            )
    return found


def slowest_requests(
    spans: list[Span] | SpanTree,
    telemetry: Mapping[str, Any] | None = None,
    count: int = 10,
    run_start_ns: int | None = None,
) -> list[SlowRequest]:
    """The ``count`` longest requests (root spans), each with the KV-cache
    lookups and storage reads under it (summed over its descendants) and the
    telemetry intervals it overlaps (device read IOPS and await in them)."""
    roots, children = _children(spans)
    if not roots:
        return []
    origin = run_start_ns if run_start_ns is not None else roots[0].start_ns
    found = []
    longest = heapq.nsmallest(count, roots, key=lambda s: (-s.duration_ns, s.start_ns))
    for root in longest:
        tree = [s for s, _ in _tree(root, children, 10_000)]
        io = [s for s in tree if IO_BYTES in s.attributes]
        found.append(
            SlowRequest(
                span=root,
                offset_ms=(root.start_ns - origin) / NS_PER_MS,
                duration_ms=root.duration_ns / NS_PER_MS,
                kv_hits=int(sum(_number(s.attributes.get(KV_HITS)) for s in tree)),
                kv_misses=int(sum(_number(s.attributes.get(KV_MISSES)) for s in tree)),
                reads=len(io),
                read_bytes=int(sum(_number(s.attributes.get(IO_BYTES)) for s in io)),
                read_ms=sum(s.duration_ns for s in io) / NS_PER_MS,
                devices=sorted(
                    {
                        str(s.attributes.get(IO_DEVICE))
                        for s in io
                        if IO_DEVICE in s.attributes
                    }
                ),
                intervals=_intervals(telemetry, root.start_ns, root.end_ns),
            )
        )
    return found
