"""Trace spans: the span model, a harness's trace directory read as hostile
input, the normalised artefact, the request waterfall and the slowest requests
joined with the telemetry by time."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab import spans as sp
from benchmarks.lib.lab.spans import (
    Span,
    SpanProblem,
    collect_trace_dir,
    encode_spans,
    iso_to_ns,
    read_spans,
    slowest_requests,
    span_from_json,
    waterfall,
)

T0 = 1_796_414_400_000_000_000  # 2026-12-04T20:00:00Z
MS = 1_000_000
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def span(
    span_id: str,
    start_ms: float,
    end_ms: float,
    parent: str | None = None,
    **attrs: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "trace_id": TRACE,
        "span_id": span_id,
        "name": attrs.pop("name", "request"),
        "start_ns": T0 + int(start_ms * MS),
        "end_ns": T0 + int(end_ms * MS),
        "attributes": attrs,
    }
    if parent:
        body["parent_id"] = parent
    return body


def line(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"


def test_a_span_with_otel_attributes_is_read() -> None:
    attrs: dict[str, Any] = {"gen_ai.usage.output_tokens": 128}

    value = span("00f067aa0ba902b7", 0, 12, **attrs)

    got = span_from_json(value)

    assert got.duration_ns == 12 * MS
    assert got.attributes == {"gen_ai.usage.output_tokens": 128}
    assert got.parent_id is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"trace_id": "XYZ"}, "trace_id must be 32 lowercase hex"),
        ({"trace_id": "0" * 32}, "trace_id must not be all zeros"),
        ({"span_id": "00F067AA0BA902B7"}, "span_id must be 16 lowercase hex"),
        ({"parent_id": "00f067aa0ba902b7"}, "parent_id is the span's own id"),
        ({"end_ns": T0 - 1}, "end_ns is before start_ns"),
        ({"start_ns": 1.5}, "start_ns must be an integer"),
        ({"start_ns": True}, "start_ns must be an integer"),
        ({"name": ""}, "name must be a string"),
        ({"attributes": {"a": [1]}}, "attribute a must be a string, number"),
        ({"attributes": {"a": None}}, "attribute a must be a string, number"),
        ({"attributes": {"bad name": 1}}, "attribute name 'bad name'"),
        ({"attributes": []}, "attributes must be an object"),
        ({"links": []}, "unknown key 'links'"),
    ],
)
def test_a_bad_span_is_refused_with_the_reason(
    change: dict[str, Any], why: str
) -> None:
    value = {**span("00f067aa0ba902b7", 0, 1), **change}

    with pytest.raises(SpanProblem, match=why):
        span_from_json(value)


def test_bad_lines_are_named_counted_and_skipped() -> None:
    data = (
        line(span("00000000000000a1", 0, 5))
        + b"{not json\n\n"
        + line(span("00000000000000a2", 1, 0))
        + b"\xff\xfe\n"
        + line(span("00000000000000a3", 2, 3))
    )

    parsed = read_spans(data, "app.jsonl")

    assert [s.span_id for s in parsed.spans] == ["00000000000000a1", "00000000000000a3"]
    assert parsed.bad_lines == 3
    assert parsed.problems[0].startswith("app.jsonl line 2: not JSON")
    assert parsed.problems[1] == "app.jsonl line 4: end_ns is before start_ns"
    assert "app.jsonl line 5: not UTF-8" in parsed.warnings()[0]


def test_the_artefact_is_sorted_canonical_and_reads_back() -> None:
    later = span_from_json(span("00000000000000b2", 5, 6))
    first = span_from_json(span("00000000000000b1", 1, 9, parent=None))

    data = encode_spans([later, first, later])

    assert data.count(b"\n") == 2
    assert (
        data.splitlines()[0]
        == json.dumps(first.as_json(), sort_keys=True, separators=(",", ":")).encode()
    )
    assert read_spans(data).spans == [first, later]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"[" * 5000 + b"]" * 5000, "not JSON"),
        (b'{"start_ns": ' + b"9" * 5000 + b"}", "not JSON"),
        (b"{not json", "not JSON (Expecting property name enclosed in double"),
    ],
)
def test_hostile_json_is_a_bad_line_not_a_crash(line: bytes, why: str) -> None:
    parsed = read_spans(line)

    assert parsed.bad_lines == 1
    assert why in parsed.problems[0]


def test_many_bad_lines_make_one_bounded_warning() -> None:
    data = b"".join(b'{"name": "' + b"x" * 300 + b'"}\n' for _ in range(5000))

    parsed = read_spans(data, "f" * 100 + ".jsonl")

    (warning,) = parsed.warnings()
    assert parsed.bad_lines == 5000
    assert len(warning) <= sp.MAX_WARNING_CHARS
    assert warning.startswith("trace spans: 5000 bad line(s) skipped: ")
    assert "(and 4995 more)" in warning


def test_non_ascii_attributes_keep_their_size_and_a_limit_keeps_the_earliest() -> None:
    spans = [
        span_from_json(span(f"00000000000000a{i}", i, i + 1, note="données 速い"))
        for i in range(1, 4)
    ]
    one = len(encode_spans(spans[:1]))

    data = encode_spans(spans, limit=2 * one + 10)

    assert "données 速い".encode() in data
    assert read_spans(data).spans == spans[:2]


def test_a_trace_dir_is_read_without_links_and_within_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(line(span("00000000000000c9", 0, 1)))
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "a.jsonl").write_bytes(
        b"".join(line(span(f"00000000000000c{i}", i, i + 1)) for i in range(1, 4))
    )
    (trace / "b.jsonl").symlink_to(secret)
    os.link(secret, trace / "c.jsonl")
    (trace / "d.jsonl").mkdir()
    (trace / "notes.txt").write_text("ignored")
    monkeypatch.setattr(
        sp, "MAX_FILE_BYTES", len(line(span("00000000000000c1", 1, 2))) * 2 + 5
    )

    parsed = collect_trace_dir(trace)

    assert [s.span_id for s in parsed.spans] == ["00000000000000c1", "00000000000000c2"]
    notes = " ".join(parsed.warnings())
    assert "a.jsonl read only up to the size cap" in notes
    assert "b.jsonl skipped (not a regular file)" in notes
    assert "c.jsonl skipped" in notes
    assert "d.jsonl skipped" in notes


def test_an_overlong_line_is_a_bad_line() -> None:
    data = b'{"x": "' + b"y" * sp.MAX_LINE_BYTES + b'"}\n'

    parsed = read_spans(data, "e.jsonl")

    assert parsed.bad_lines == 1
    assert parsed.problems == [f"e.jsonl line 1: longer than {sp.MAX_LINE_BYTES} bytes"]


def test_a_trace_dir_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.jsonl").write_bytes(line(span("00000000000000d1", 0, 1)))
    (tmp_path / "trace").symlink_to(real)

    parsed = collect_trace_dir(tmp_path / "trace")

    assert parsed.spans == []
    assert "unreadable" in parsed.warnings()[0]


def request_tree() -> list[Span]:
    values = [
        span("00000000000000e1", 100, 1900, name="request"),
        span("00000000000000e2", 150, 1800, "00000000000000e1", name="prefill"),
        span(
            "00000000000000e3", 150, 700, "00000000000000e2", name="kv_cache.lookup",
            **{"reprogate.kv.hits": 3, "reprogate.kv.misses": 1},
        ),
        span(
            "00000000000000e4", 200, 450, "00000000000000e3", name="storage.read",
            **{"reprogate.io.device": "loop0", "reprogate.io.offset": 4096,
               "reprogate.io.bytes": 4096},
        ),
        span(
            "00000000000000e5", 450, 700, "00000000000000e3", name="storage.read",
            **{"reprogate.io.device": "loop0", "reprogate.io.offset": 0,
               "reprogate.io.bytes": 8192},
        ),
        span("00000000000000f1", 300, 400, name="request"),
        span("00000000000000f2", 5, 60, "0000000000000999", name="orphan"),
    ]  # fmt: skip
    return [span_from_json(v) for v in values]


def test_the_waterfall_lists_requests_with_their_children_from_the_run_start() -> None:
    got = waterfall(request_tree(), run_start_ns=T0)

    assert [(b.span.name, b.depth) for b in got.bars] == [
        ("orphan", 0),
        ("request", 0),
        ("prefill", 1),
        ("kv_cache.lookup", 2),
        ("storage.read", 3),
        ("storage.read", 3),
        ("request", 0),
    ]
    assert got.requests == 3
    assert got.bars[1].offset_ms == 100.0
    assert got.bars[1].left_pct == pytest.approx(100 * 100 / 1900, abs=0.01)


TELEMETRY = {
    "schema": "reprogate.telemetry/v1",
    "started": "2026-12-04T20:00:00.000Z",
    "series": [
        {
            "source": "diskstats",
            "device": "loop0",
            "t_ms": [0, 1000, 2000, 2417],
            "fields": {
                "reads_completed": [0, 512, 0, 120],
                "read_ticks_ms": [0, 380, 0, 90],
                "in_flight": [0, 1, 1, 0],
            },
        },
        {"source": "pressure", "device": "host", "t_ms": [0, 1000], "fields": {}},
    ],
}


def test_slowest_requests_carry_their_io_and_the_telemetry_they_overlap() -> None:
    got = slowest_requests(request_tree(), TELEMETRY, count=2, run_start_ns=T0)

    slow = got[0]
    assert slow.span.span_id == "00000000000000e1"
    assert (slow.duration_ms, slow.offset_ms) == (1800.0, 100.0)
    assert (slow.kv_hits, slow.kv_misses) == (3, 1)
    assert (slow.reads, slow.read_bytes, slow.read_ms) == (2, 12288, 500.0)
    assert slow.devices == ["loop0"]
    assert [(i.from_ms, i.to_ms, i.read_iops) for i in slow.intervals] == [
        (0, 1000, 512.0),
        (1000, 2000, 0.0),
    ]
    assert slow.intervals[0].read_await_ms == pytest.approx(380 / 512, abs=0.001)
    assert slow.intervals[1].read_await_ms is None
    assert [r.span.span_id for r in got] == ["00000000000000e1", "00000000000000f1"]


def test_a_request_outside_the_telemetry_overlaps_nothing() -> None:
    late = span_from_json(span("00000000000000aa", 9000, 9500))

    got = slowest_requests([late], TELEMETRY)

    assert got[0].intervals == []
    assert slowest_requests([late], None)[0].intervals == []


def test_iso_times_read_to_nanoseconds() -> None:
    assert iso_to_ns("2026-12-04T20:00:00.000Z") == T0
    assert iso_to_ns("2026-12-04T20:00:00.250Z") == T0 + 250 * MS
    assert iso_to_ns("yesterday") is None
