"""The URL configuration as a list of routes, each with its URL filled from a
world's ids, and the database's fingerprint that tells whether a request changed
anything."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db.models import Model
from django.urls import URLPattern, URLResolver, get_resolver, reverse

PARAM = re.compile(r"(?<!\?P)<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
GROUP = re.compile(r"\(\?P<(\w+)>")
# Rows a refused or a harmless request may write: the test client's sessions, and
# the audit trail (checked on its own: only refusals may be recorded).
UNWATCHED = frozenset({"sessions.session", "accounts.auditevent"})


@dataclass(frozen=True)
class Route:
    """One URL pattern: ``key`` is its name with namespaces (``procurement:rfp_detail``,
    ``rfp-detail``), or its pattern for an unnamed one."""

    key: str
    pattern: str
    params: tuple[str, ...]
    is_api: bool
    named: bool
    # The unsafe methods worth sending: POST to every route (a page's actions are
    # POSTs); PUT, PATCH and DELETE where the API view has a handler for them.
    unsafe: tuple[str, ...] = ("post",)
    module: str = ""  # the view's module: routes are checked for writes by module

    def url(self, ids: dict[str, str], query: str = "") -> str:
        if query:
            return f"{self.url(ids)}?{query}"
        if self.named:
            return reverse(self.key, kwargs={name: ids[name] for name in self.params})

        def fill(match: re.Match[str]) -> str:
            return ids[match.group("name")]

        return "/" + PARAM.sub(fill, self.pattern)


def _walk(resolver: URLResolver, prefix: str, namespace: str) -> Iterator[Route]:
    for entry in resolver.url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            inner = entry.namespace or ""
            joined = (
                f"{namespace}:{inner}" if namespace and inner else namespace or inner
            )
            yield from _walk(entry, pattern, joined)
        elif isinstance(entry, URLPattern):
            name = entry.name
            key = (f"{namespace}:{name}" if namespace else name) if name else pattern
            params = tuple(m.group("name") for m in PARAM.finditer(pattern))
            params += tuple(GROUP.findall(pattern))
            view = getattr(entry.callback, "cls", None)
            more = [m for m in ("put", "patch", "delete") if hasattr(view, m)]
            unsafe = ("post", *more)
            api = pattern.startswith("api/")
            module = (view or entry.callback).__module__
            yield Route(key, pattern, params, api, bool(name), unsafe, module)


def routes() -> list[Route]:
    """Every route of the URL configuration, in its order."""
    return list(_walk(get_resolver(), "", ""))


def _rows(model: type[Model]) -> list[tuple[Any, ...]]:
    return list(model._default_manager.order_by("pk").values_list())


def fingerprint() -> dict[str, str]:
    """A digest of every watched table's rows, by table."""
    digests = {}
    for model in apps.get_models():
        label = model._meta.label_lower
        if label in UNWATCHED or model._meta.proxy:
            continue
        digests[label] = hashlib.sha256(repr(_rows(model)).encode()).hexdigest()
    return digests


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(
        label for label, digest in after.items() if before.get(label) != digest
    )


def target_rows(targets: list[Model]) -> list[tuple[Any, ...]]:
    """The targeted objects' rows as the database has them now."""
    return [
        tuple(type(obj)._default_manager.filter(pk=obj.pk).values_list())
        for obj in targets
    ]


def body(response: Any) -> str:
    """The response's body as text (a streamed one read whole)."""
    if getattr(response, "streaming", False):
        data = b"".join(response.streaming_content)
    else:
        data = response.content
    return data.decode("utf-8", errors="replace")
