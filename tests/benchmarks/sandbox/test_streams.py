"""Line capture: callbacks, progress, tails, the byte budget, endless lines."""

from __future__ import annotations

from benchmarks.lib.sandbox.streams import MAX_LINE, TAIL_LINES, OutputCapture


def test_lines_are_split_across_chunks_and_passed_on() -> None:
    seen: list[tuple[str, str]] = []
    capture = OutputCapture(limit=1000, on_line=lambda s, line: seen.append((s, line)))

    capture.feed("stdout", b"hel")
    capture.feed("stdout", b"lo\r\nwor")
    capture.feed("stderr", b"oops\n")
    capture.feed("stdout", b"ld")
    capture.flush()

    assert seen == [("stdout", "hello"), ("stderr", "oops"), ("stdout", "world")]
    assert capture.tail("stdout") == "hello\nworld"
    assert capture.tail("stderr") == "oops"


def test_progress_comes_from_stdout_only_and_keeps_the_last_value() -> None:
    capture = OutputCapture(limit=1000, on_line=None)

    capture.feed("stdout", b"::progress:: 0.3\n::progress:: 0.6\n")
    capture.feed("stderr", b"::progress:: 0.9\n")

    assert capture.progress == 0.6


def test_budget_stops_keeping_and_passing_on_output() -> None:
    seen: list[str] = []
    capture = OutputCapture(limit=10, on_line=lambda _s, line: seen.append(line))

    capture.feed("stdout", b"12345\n67890\nabcdef\n")
    capture.flush()

    assert capture.exceeded
    assert capture.seen == 19
    assert seen == ["12345", "6789"]


def test_undecodable_bytes_are_replaced_not_fatal() -> None:
    capture = OutputCapture(limit=100, on_line=None)

    capture.feed("stdout", b"caf\xe9 \xff\n")

    assert capture.tail("stdout") == "caf\ufffd \ufffd"


def test_a_line_without_end_is_cut_to_bounded_pieces() -> None:
    pieces: list[int] = []
    capture = OutputCapture(
        limit=10 * MAX_LINE, on_line=lambda _s, line: pieces.append(len(line))
    )

    for _ in range(5):
        capture.feed("stdout", b"x" * (MAX_LINE // 2 + 7))

    assert pieces == [MAX_LINE, MAX_LINE]
    assert len(capture.streams["stdout"].pending) < MAX_LINE


def test_tail_keeps_the_last_lines() -> None:
    capture = OutputCapture(limit=1 << 20, on_line=None)

    capture.feed("stdout", b"".join(b"line %d\n" % i for i in range(TAIL_LINES + 50)))

    lines = capture.tail("stdout").splitlines()
    assert len(lines) == TAIL_LINES
    assert lines[-1] == f"line {TAIL_LINES + 49}"
