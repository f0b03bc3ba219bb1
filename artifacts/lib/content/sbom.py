"""``sbom``: a software bill of materials as SPDX JSON (``spdxVersion``,
``packages``) or CycloneDX JSON (``bomFormat`` ``CycloneDX``, ``components``,
nested ``components`` counted too). The report records each document's format,
component count and licences (SPDX ``licenseConcluded``/``licenseDeclared``,
CycloneDX ``licenses[].license.id|name`` and ``expression``; ``NOASSERTION`` and
``NONE`` left out), and the totals.

Hostile input: at most ``MAX_SBOM_BYTES`` are read; parsing more deeply nested
JSON than Python's recursion allows is refused (``sbom_unparseable``); the parsed
document is then walked without recursion, and more than ``MAX_DEPTH`` levels or
``MAX_VALUES`` values is ``sbom_too_deep``. At most ``MAX_LICENCES`` licences
(each cut to ``MAX_LICENCE_CHARS``) are recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from artifacts.lib.content.common import KindResult, Reader, load_json, read_capped
from artifacts.lib.manifest import ManifestFile

MAX_SBOM_BYTES: Final = 32 * 1024 * 1024
MAX_DEPTH: Final = 64
MAX_VALUES: Final = 4_000_000
MAX_LICENCES: Final = 500
MAX_LICENCE_CHARS: Final = 200
NO_LICENCE: Final = frozenset({"", "NOASSERTION", "NONE"})


class TooDeep(ValueError):
    pass


def _shape_check(document: Any) -> None:
    """Raise ``TooDeep`` past ``MAX_DEPTH`` levels or ``MAX_VALUES`` values."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    values = 0
    while stack:
        value, depth = stack.pop()
        values += 1
        if depth > MAX_DEPTH or values > MAX_VALUES:
            limit = (
                f"{MAX_DEPTH} levels" if depth > MAX_DEPTH else f"{MAX_VALUES} values"
            )
            raise TooDeep(f"more than {limit}")
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value)


def _mappings(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _spdx(document: dict[str, Any]) -> tuple[int, set[str]]:
    packages = _mappings(document.get("packages"))
    licences = {
        p[key]
        for p in packages
        for key in ("licenseConcluded", "licenseDeclared")
        if isinstance(p.get(key), str)
    }
    return len(packages), licences


def _cyclonedx_licences(component: dict[str, Any]) -> set[str]:
    found = set()
    for entry in _mappings(component.get("licenses")):
        licence = entry.get("license")
        if isinstance(licence, dict):
            name = licence.get("id") or licence.get("name")
            found |= {name} if isinstance(name, str) else set()
        if isinstance(entry.get("expression"), str):
            found.add(entry["expression"])
    return found


def _cyclonedx(document: dict[str, Any]) -> tuple[int, set[str]]:
    count, licences = 0, set()
    stack = _mappings(document.get("components"))
    while stack:  # depth is bounded by _shape_check
        component = stack.pop()
        count += 1
        licences |= _cyclonedx_licences(component)
        stack.extend(_mappings(component.get("components")))
    return count, licences


def _format(document: Any) -> str | None:
    if not isinstance(document, dict):
        return None
    spdx = document.get("spdxVersion")
    if isinstance(spdx, str) and spdx.startswith("SPDX-"):
        return "spdx" if isinstance(document.get("packages"), list) else None
    cyclonedx = document.get("bomFormat") == "CycloneDX"
    return (
        "cyclonedx"
        if cyclonedx and isinstance(document.get("components"), list)
        else None
    )


def _document(result: KindResult, file: ManifestFile, read: Reader) -> None:
    data = read_capped(result, file, read, MAX_SBOM_BYTES)
    if data is None:
        return
    try:
        document = load_json(data)
        _shape_check(document)
    except TooDeep as error:
        result.problem("sbom_too_deep", f"The SBOM has {error}.", file.path)
        return
    except ValueError as error:
        result.problem("sbom_unparseable", f"Not JSON: {error}.", file.path)
        return
    form = _format(document)
    if form is None:
        message = (
            "Neither SPDX JSON (spdxVersion, packages) nor CycloneDX JSON "
            "(bomFormat CycloneDX, components)."
        )
        result.problem("sbom_unrecognised", message, file.path)
        return
    count, licences = (_spdx if form == "spdx" else _cyclonedx)(document)
    if count == 0:
        result.problem("sbom_empty", "The SBOM lists no component.", file.path)
        return
    version = document.get("spdxVersion") or document.get("specVersion")
    kept = sorted({str(n)[:MAX_LICENCE_CHARS] for n in licences} - NO_LICENCE)
    result.items.append(
        {
            "path": file.path,
            "format": form,
            "version": str(version)[:40] if version is not None else "",
            "components": count,
            "licences": kept[:MAX_LICENCES],
            "licences_truncated": len(kept) > MAX_LICENCES,
        }
    )


def check_sboms(files: Sequence[ManifestFile], read: Reader) -> dict[str, Any]:
    result = KindResult("sbom", files=len(files))
    for file in files:
        _document(result, file, read)
    licences = sorted({name for item in result.items for name in item["licences"]})
    return result.as_dict(
        components=sum(item["components"] for item in result.items),
        licences=licences[:MAX_LICENCES],
    )
