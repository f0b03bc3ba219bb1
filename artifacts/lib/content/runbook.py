"""``runbook``: Markdown, text or PDF with some substance: a heading and at least
``MIN_RUNBOOK_CHARS`` characters that are not white space (a PDF: a whole PDF
file of at least ``MIN_PDF_BYTES``; its text is not extracted). Pictures beside
it (``.png``, ``.jpg``, ``.svg``…) are passed over."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from artifacts.lib.content.common import KindResult, Reader, read_capped, read_text
from artifacts.lib.manifest import ManifestFile

MAX_RUNBOOK_BYTES: Final = 8 * 1024 * 1024
MIN_RUNBOOK_CHARS: Final = 200
MIN_PDF_BYTES: Final = 1024
TEXT: Final = (".md", ".markdown", ".txt", ".rst", ".adoc")
PICTURES: Final = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(\S.*?)[ \t#]*$", re.MULTILINE)
_SETEXT = re.compile(r"^ {0,3}(\S[^\n]*)\n {0,3}(?:=+|-+|~+|\*+)[ \t]*$", re.MULTILINE)


def heading_of(text: str) -> str | None:
    """The first Markdown (ATX or setext) or reStructuredText-style heading."""
    found = [m for m in (_ATX.search(text), _SETEXT.search(text)) if m]
    first = min(found, key=lambda m: m.start(), default=None)
    return first.group(1).strip()[:120] if first else None


def _format(path: str) -> str:
    return "markdown" if path.lower().endswith((".md", ".markdown")) else "text"


def _text(result: KindResult, file: ManifestFile, read: Reader) -> None:
    before = len(result.problems)
    text = read_text(result, file, read, MAX_RUNBOOK_BYTES)
    if len(result.problems) > before:
        return
    heading = heading_of(text)
    chars = len("".join(text.split()))
    if heading is None:
        message = "No heading (# Title, or a title underlined with === or ---)."
        result.problem("runbook_no_heading", message, file.path)
    if chars < MIN_RUNBOOK_CHARS:
        message = f"{chars} characters; a runbook has at least {MIN_RUNBOOK_CHARS}."
        result.problem("runbook_too_short", message, file.path)
    if heading is not None and chars >= MIN_RUNBOOK_CHARS:
        result.items.append(
            {
                "path": file.path,
                "format": _format(file.path),
                "heading": heading,
                "chars": chars,
            }
        )


def _pdf(result: KindResult, file: ManifestFile, read: Reader) -> None:
    data = read_capped(result, file, read, MAX_RUNBOOK_BYTES)
    if data is None:
        return
    if not data.startswith(b"%PDF-") or b"%%EOF" not in data[-2048:]:
        message = "It does not start with %PDF- and end with %%EOF."
        result.problem("runbook_not_pdf", message, file.path)
    elif len(data) < MIN_PDF_BYTES:
        message = f"{len(data)} bytes; a runbook PDF has at least {MIN_PDF_BYTES}."
        result.problem("runbook_too_short", message, file.path)
    else:
        result.items.append({"path": file.path, "format": "pdf", "bytes": len(data)})


def check_runbooks(files: Sequence[ManifestFile], read: Reader) -> dict[str, Any]:
    result = KindResult("runbook", files=len(files))
    for file in files:
        name = file.path.lower()
        if name.endswith(".pdf"):
            _pdf(result, file, read)
        elif name.endswith(TEXT):
            _text(result, file, read)
        elif not name.endswith(PICTURES):
            message = "Not Markdown (.md), text (.txt, .rst, .adoc) or PDF."
            result.problem("runbook_unrecognised", message, file.path)
    return result.as_dict()
