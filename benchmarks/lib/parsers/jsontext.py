"""Finding and decoding the JSON object in a tool's output file.

Real tools write more than JSON: fio puts error lines and banners before the
object (``fio: pid=…, err=5/…``, ``--output-format=normal,json``), fio-3.1
repeats the ``"0.00" : 0`` key in every percentile object (invalid JSON for
strict parsers) and some fio builds print ``-nan``. The lenient loader:

- skips text before the object: it tries each ``{`` that starts a line (after
  blanks), the first one that decodes wins; a warning says what was skipped;
- keeps the FIRST value of a duplicated key; identical duplicates (fio's
  padding) pass silently, different ones give a warning naming the key;
- reads bare ``nan`` / ``-nan`` / ``inf`` tokens as null, with a warning
  (the parsers then skip those values, never report them as numbers).

The strict loader (``reprogate-metrics``) accepts a single JSON object and
nothing else: no text around it, no duplicate keys, no NaN/Infinity.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from benchmarks.lib.parsers.model import ParseError

MAX_CANDIDATES: Final = 20
BARE_NAN_RE: Final = re.compile(r"([:\[,]\s*)-?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)


def decode_text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"byte {exc.start}", "the file is not UTF-8 text") from None


def _pairs_hook(duplicates: list[str], *, strict: bool) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key not in result:
                result[key] = value
            elif strict:
                raise ParseError(f"key {key!r}", "duplicate key in a JSON object")
            elif result[key] != value:
                duplicates.append(
                    f"duplicate key {key!r} with different values "
                    f"({result[key]!r} and {value!r}): kept the first"
                )
        return result

    return hook


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {column}"


def _candidates(text: str) -> list[int]:
    stripped = len(text) - len(text.lstrip())
    if text[stripped : stripped + 1] == "{":
        return [stripped]
    found = [m.end() - 1 for m in re.finditer(r"(?m)^[ \t]*\{", text)]
    return found[:MAX_CANDIDATES]


def _reject_constant(name: str) -> Any:
    raise ParseError("", f"{name} is not a number JSON allows")


def load_strict(data: bytes) -> dict[str, Any]:
    text = decode_text(data)
    decoder = json.JSONDecoder(
        object_pairs_hook=_pairs_hook([], strict=True), parse_constant=_reject_constant
    )
    try:
        value = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise ParseError(_where(text, exc.pos), f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ParseError("", "JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise ParseError("", f"expected a JSON object, found {type(value).__name__}")
    return value


def load_lenient(data: bytes, *, what: str) -> tuple[dict[str, Any], list[str]]:
    """The first JSON object in ``data`` and warnings about what was tolerated.
    ``what`` names the expected format in error messages."""
    text = decode_text(data)
    warnings: list[str] = []
    try:
        return _decode_first(text, what, warnings), warnings
    except ParseError:
        if not BARE_NAN_RE.search(text):
            raise
    cleaned = BARE_NAN_RE.sub(r"\1null", text)
    value = _decode_first(cleaned, what, warnings)
    warnings.append("bare nan/inf values in the JSON were read as null (skipped)")
    return value, warnings


def _decode_first(text: str, what: str, warnings: list[str]) -> dict[str, Any]:
    candidates = _candidates(text)
    if not candidates:
        snippet = text.strip()[:60]
        raise ParseError("", f"no JSON object found in the {what} output: {snippet!r}")
    first_error: ParseError | None = None
    for start in candidates:
        duplicates: list[str] = []
        decoder = json.JSONDecoder(
            object_pairs_hook=_pairs_hook(duplicates, strict=False)
        )
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first_error = first_error or ParseError(
                _where(text, exc.pos), f"not valid JSON: {exc.msg}"
            )
            continue
        except RecursionError:
            raise ParseError("", "JSON nested too deeply") from None
        if not isinstance(value, dict):
            continue
        if start:
            first_line = text[:start].strip().splitlines()[0][:80]
            warnings.append(
                f"skipped {len(text[:start].encode())} bytes of text before the JSON "
                f"object (starting {first_line!r})"
            )
        trailing = text[end:].strip()
        if trailing:
            warnings.append(
                f"ignored {len(trailing.encode())} bytes after the JSON object"
            )
        warnings.extend(sorted(set(duplicates)))
        return value
    assert first_error is not None  # noqa: S101 - a candidate always starts with "{"
    raise first_error
