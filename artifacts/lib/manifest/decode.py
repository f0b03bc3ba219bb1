"""Strict JSON decoding of manifest bytes: UTF-8 without BOM, no duplicate
keys, no NaN/Infinity, no unpaired surrogates, bounded depth. No Django."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from artifacts.lib.manifest.schema import MAX_MANIFEST_BYTES
from artifacts.lib.problems import ProblemList

# --- decoding ---------------------------------------------------------------------


class _Object(dict[str, Any]):
    """A JSON object that remembers keys given more than once."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen:
                repeated.append(key)
            seen.add(key)
        obj.duplicates = tuple(repeated)
    return obj


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _decode(data: bytes, problems: ProblemList) -> Any:
    if len(data) > MAX_MANIFEST_BYTES:
        problems.add(
            "manifest_too_large",
            f"It has {len(data)} bytes; at most {MAX_MANIFEST_BYTES}.",
        )
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        problems.add(
            "manifest_bom", "It starts with a UTF-8 byte-order mark (EF BB BF)."
        )
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.add("manifest_not_utf8", f"Byte {error.start} is not valid UTF-8.")
        return None
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as error:
        problems.add(
            "manifest_invalid_json",
            f"{error.msg} (line {error.lineno}, column {error.colno}).",
        )
    except (ValueError, RecursionError) as error:
        problems.add(
            "manifest_invalid_json", f"It cannot be read as JSON ({str(error)[:100]})."
        )
    return None


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Every value with its path, depth-first, without recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        yield path, item
        if isinstance(item, dict):
            stack.extend(
                (_at(path, key), child) for key, child in reversed(item.items())
            )
        elif isinstance(item, list):
            stack.extend(
                (f"{path}[{i}]", child) for i, child in reversed(list(enumerate(item)))
            )


def _clean(value: Any) -> bool:
    """No object repeats a key and no string holds a surrogate: what
    ``_check_json`` finds, told without building a path per value (a listing of
    2,000 files holds 10,000 values)."""
    try:  # every key and string value, encoded at C speed
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):  # the walk tells which
        return False
    stack = [value] if isinstance(value, dict | list) else []
    while stack:
        item = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, _Object) and item.duplicates:
            return False
        stack.extend(c for c in children if isinstance(c, dict | list))
    return True


def _check_json(value: Any, problems: ProblemList) -> None:
    if _clean(value):
        return
    for path, item in _walk(value):
        if isinstance(item, _Object):
            for key in item.duplicates:
                problems.add(
                    "manifest_duplicate_key",
                    "The key appears more than once.",
                    _at(path, key),
                )
        strings = [item, *item.keys()] if isinstance(item, dict) else [item]
        for text in strings:
            if isinstance(text, str) and _has_surrogate(text):
                problems.add(
                    "manifest_invalid_json",
                    "A string holds an unpaired surrogate escape.",
                    path or None,
                )


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:59] + "…"
