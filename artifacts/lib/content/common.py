"""What the content checks share: the reader they get bytes through, the problem
codes of a failed check and the shape of one kind's result. No Django."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from artifacts.lib.manifest import ManifestFile
from artifacts.lib.problems import BundleProblem

# The bytes of a listed file (None: it could not be read). The checks look at a
# file's listed size first and never ask for one larger than their cap.
Reader = Callable[[str], bytes | None]

MAX_JSON_BYTES: Final = 1024 * 1024  # image references, OCI index and manifests

_CODES: dict[str, str] = {
    "content_too_large": "The file is larger than its content check reads.",
    "content_unreadable": "The file could not be read (or is not UTF-8 text).",
    "content_nothing_recognised": (
        "No file of the kind has the form its check recognises."
    ),
    "image_reference_invalid": (
        'An image reference is not {"image": "registry/name", "digest": '
        '"sha256:<64 hex>"}.'
    ),
    "image_not_pinned": "An image reference names a tag but no digest.",
    "oci_layout_invalid": "An oci-layout file has no imageLayoutVersion.",
    "oci_index_invalid": "An OCI image layout's index.json is missing or lists "
    "no manifests.",
    "oci_blob_missing": "A digest the OCI image names has no blobs/sha256/<hex> "
    "file listed in the bundle.",
    "oci_digest_mismatch": "A listed OCI blob's SHA-256 or size is not the one "
    "its descriptor names.",
    "container_image_unrecognised": (
        "A container_image file is neither part of an OCI image layout nor an "
        "image reference (.json)."
    ),
    "iac_empty": "An infrastructure-as-code file is empty.",
    "iac_unparseable": "An infrastructure-as-code file does not parse.",
    "iac_unrecognised": (
        "An iac file is not a Terraform, Kubernetes, Helm or Ansible template."
    ),
    "runbook_no_heading": "A runbook has no heading.",
    "runbook_too_short": "A runbook is too short to guide anyone.",
    "runbook_not_pdf": "A runbook named .pdf is not a complete PDF file.",
    "runbook_unrecognised": "A runbook file is not Markdown, text or PDF.",
    "sbom_unparseable": "An SBOM is not JSON.",
    "sbom_too_deep": "An SBOM nests deeper, or holds more values, than a check reads.",
    "sbom_unrecognised": "An SBOM is neither SPDX JSON nor CycloneDX JSON.",
    "sbom_empty": "An SBOM lists no component.",
}
CONTENT_PROBLEMS: Final[Mapping[str, str]] = MappingProxyType(_CODES)


@dataclass
class KindResult:
    """One kind's check: the items it recognised (dicts for the report) and the
    problems it found. It passes with at least one item and no problem."""

    kind: str
    files: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    problems: list[BundleProblem] = field(default_factory=list)

    def problem(self, code: str, message: str, path: str | None) -> None:
        assert code in CONTENT_PROBLEMS, code  # noqa: S101 - a typo is a bug
        self.problems.append(BundleProblem(code, message, path))

    @property
    def ok(self) -> bool:
        return bool(self.items) and not self.problems

    def as_dict(self, **extra: Any) -> dict[str, Any]:
        if not self.items and not self.problems:
            self.problem(
                "content_nothing_recognised",
                f"No file of kind {self.kind} has a form its check recognises.",
                None,
            )
        return {
            "ok": self.ok,
            "files": self.files,
            "items": self.items,
            "problems": [p.as_dict() for p in self.problems],
            **extra,
        }


def read_capped(
    result: KindResult, file: ManifestFile, read: Reader, cap: int
) -> bytes | None:
    """The file's bytes, or None with a problem (too large, unreadable)."""
    if file.size > cap:
        result.problem(
            "content_too_large",
            f"{file.size} bytes; the check reads at most {cap}.",
            file.path,
        )
        return None
    data = read(file.path)
    if data is None:
        result.problem("content_unreadable", "The file could not be read.", file.path)
    return data


def read_text(result: KindResult, file: ManifestFile, read: Reader, cap: int) -> str:
    """The file as UTF-8 text ("" with a problem when it is not)."""
    data = read_capped(result, file, read, cap)
    if data is None:
        return ""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        result.problem("content_unreadable", "The file is not UTF-8 text.", file.path)
        return ""


def load_json(data: bytes) -> Any:
    """Parsed JSON; ValueError for anything that is not (deep nesting included)."""
    try:
        return json.loads(data)
    except RecursionError as error:
        raise ValueError("nested too deeply") from error
