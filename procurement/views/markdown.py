"""Markdown written by users, rendered to HTML that is safe to embed in a page.

Markdown passes raw HTML through, so the output is always cleaned with nh3 (an
allow-list sanitiser): only the tags below survive, links get ``rel="noopener
noreferrer nofollow"`` and only http(s) and mailto URLs are kept."""

from __future__ import annotations

from typing import Final

import markdown as md
import nh3
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS: Final = frozenset(
    {
        "a", "abbr", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em",
        "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p", "pre",
        "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES: Final = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "td": {"align"},
    "th": {"align"},
}
URL_SCHEMES: Final = frozenset({"http", "https", "mailto"})
EXTENSIONS: Final = ["tables", "fenced_code", "sane_lists"]


def render_markdown(text: str) -> SafeString:
    """``text`` as sanitised HTML; an empty string for empty text."""
    if not text.strip():
        return mark_safe("")
    html = md.markdown(text, extensions=EXTENSIONS, output_format="html")
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 above
