"""The API's JSON parser: a document nested deeper than ``MAX_DEPTH`` is a 400
``parse_error``, not a ``RecursionError`` (a 500) in the parser or in the code
that walks the data after it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

# The deepest documents the API takes (gate plans, results) nest about 6 levels.
MAX_DEPTH = 64


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests lists and objects deeper than ``MAX_DEPTH`` (no
    recursion: the walk keeps its own stack)."""
    stack = [(data, 1)]
    children: Iterable[Any]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class JSONParser(parsers.JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        message = f"JSON parse error - nested deeper than {MAX_DEPTH} levels."
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(message) from None
        if _too_deep(data):
            raise ParseError(message)
        return data
