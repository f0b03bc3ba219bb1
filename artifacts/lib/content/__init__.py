"""Content checks of the artifact kinds whose presence alone says little:
``container_image`` (``images``), ``iac``, ``runbook`` and ``sbom``. Each looks at
the files' bytes and gives, per kind present in the bundle, whether it passes
(``ok``), what it recognised (``items``) and what is wrong (``problems``, codes
in ``CONTENT_PROBLEMS``). A failing check is a completeness problem of the
accepted bundle, never a reason to reject it.

``content_report(files, read)`` -> ``{"schema", "kinds": {kind: result},
"failed": [kinds]}``; ``read(path)`` gives a listed file's bytes. The checks
never ask for more than their caps (by the listed size) and treat every byte as
hostile.

No Django here: the offline verifier may rebuild the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from artifacts.lib.content.common import CONTENT_PROBLEMS, Reader
from artifacts.lib.content.iac import check_iac
from artifacts.lib.content.images import check_container_images
from artifacts.lib.content.runbook import check_runbooks
from artifacts.lib.content.sbom import check_sboms
from artifacts.lib.manifest import ManifestFile

SCHEMA: Final = "reprogate.content/v1"
CHECKED_KINDS: Final = ("container_image", "iac", "runbook", "sbom")


def content_report(files: Sequence[ManifestFile], read: Reader) -> dict[str, Any]:
    """The checks of every checked kind the bundle has files of."""
    by_kind: dict[str, list[ManifestFile]] = {}
    for file in files:
        if file.kind in CHECKED_KINDS:
            by_kind.setdefault(file.kind, []).append(file)
    listed = {f.path: f for f in files}
    kinds: dict[str, dict[str, Any]] = {}
    for kind, chosen in sorted(by_kind.items()):
        if kind == "container_image":
            kinds[kind] = check_container_images(chosen, listed, read)
        elif kind == "iac":
            kinds[kind] = check_iac(chosen, read)
        elif kind == "runbook":
            kinds[kind] = check_runbooks(chosen, read)
        else:
            kinds[kind] = check_sboms(chosen, read)
    return {
        "schema": SCHEMA,
        "kinds": kinds,
        "failed": [k for k, v in kinds.items() if not v["ok"]],
    }


__all__ = [
    "CHECKED_KINDS",
    "CONTENT_PROBLEMS",
    "SCHEMA",
    "Reader",
    "content_report",
]
