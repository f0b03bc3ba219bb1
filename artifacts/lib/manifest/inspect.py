"""A manifest against the archive it came in and the place it was uploaded
to: ``inspect_bundle`` (one pass), ``listing_problems``, ``context_problems``.
No Django."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from artifacts.lib.archive import (
    DEFAULT_LIMITS,
    ArchiveDigest,
    ArchiveLimits,
    Member,
    MemberSink,
    digest_archive,
)
from artifacts.lib.manifest.schema import (
    DSSE_NAME,
    MANIFEST_NAME,
    MAX_DSSE_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_SIGNATURE_BYTES,
    RESERVED_PATHS,
    SIGNATURE_NAME,
    Manifest,
    ManifestResult,
)
from artifacts.lib.manifest.validate import parse_manifest
from artifacts.lib.problems import BundleProblem, ProblemList

# --- against the archive and the upload ---------------------------------------------


def listing_problems(
    result: ManifestResult, digest: ArchiveDigest
) -> list[BundleProblem]:
    """Listed files that are missing or differ; archive files not listed.
    Members the archive layer already refused are not reported again."""
    problems = ProblemList()
    if not result.files_known:
        return []
    for listed in result.files:
        found = digest.files.get(listed.path)
        if found is None:
            if listed.path not in digest.rejected:
                problems.add(
                    "file_missing",
                    "The manifest lists this file; the archive lacks it.",
                    listed.path,
                )
            continue
        if found.size != listed.size:
            problems.add(
                "size_mismatch",
                f"The file has {found.size} bytes; the manifest says {listed.size}.",
                listed.path,
            )
        if found.sha256 != listed.sha256:
            problems.add(
                "digest_mismatch",
                f"The file's SHA-256 is {found.sha256}; "
                f"the manifest says {listed.sha256}.",
                listed.path,
            )
    for name in digest.files:
        if name not in RESERVED_PATHS and name not in result.mentioned_paths:
            problems.add(
                "file_unlisted",
                "The archive holds this file; the manifest does not list it.",
                name,
            )
    return problems.as_list()


def context_problems(
    result: ManifestResult, *, rfp: str | None = None, vendor: str | None = None
) -> list[BundleProblem]:
    """The manifest's ``rfp``/``vendor`` against where the bundle was uploaded."""
    problems = ProblemList()
    if rfp is not None and result.rfp is not None and result.rfp != rfp:
        problems.add(
            "rfp_mismatch",
            f"The manifest is for RFP {result.rfp!r}; it was uploaded to {rfp!r}.",
            "rfp",
        )
    if vendor is not None and result.vendor is not None and result.vendor != vendor:
        problems.add(
            "vendor_mismatch",
            f"The manifest names vendor {result.vendor!r}; the uploader is {vendor!r}.",
            "vendor",
        )
    return problems.as_list()


@dataclass(frozen=True)
class BundleInspection:
    """Everything checkable without keys. The caller verifies ``signature`` or
    ``dsse`` over ``manifest_bytes`` and adds its own problems."""

    archive: ArchiveDigest
    manifest_bytes: bytes | None
    signature: bytes | None
    dsse: bytes | None
    result: ManifestResult | None
    problems: tuple[BundleProblem, ...]

    @property
    def manifest(self) -> Manifest | None:
        return self.result.manifest if self.result else None


KEEP: Final[Mapping[str, int]] = {
    MANIFEST_NAME: MAX_MANIFEST_BYTES,
    SIGNATURE_NAME: MAX_SIGNATURE_BYTES,
    DSSE_NAME: MAX_DSSE_BYTES,
}


def inspect_bundle(
    path: str | os.PathLike[str],
    limits: ArchiveLimits = DEFAULT_LIMITS,
    *,
    rfp: str | None = None,
    vendor: str | None = None,
    sink: Callable[[Member], MemberSink | None] | None = None,
    keep: Mapping[str, int] = KEEP,
) -> BundleInspection:
    """One pass over the archive, then the manifest, its listing and the upload
    context. Problems that depend on the whole archive (missing manifest, missing
    or extra files) are reported only if the archive could be read to its end.
    ``keep``: the members whose bytes to keep (name -> most bytes), ``KEEP`` and
    what a caller adds (the CLI's verify, the environment manifest)."""
    digest = digest_archive(path, limits, keep=keep, sink=sink)
    problems = ProblemList()
    problems.extend(digest.problems)
    manifest_bytes = digest.kept.get(MANIFEST_NAME)
    result = parse_manifest(manifest_bytes) if manifest_bytes is not None else None
    _presence_problems(digest, problems)
    if result is not None:
        problems.extend(result.problems)
        if digest.complete:
            problems.extend(listing_problems(result, digest))
        problems.extend(context_problems(result, rfp=rfp, vendor=vendor))
    return BundleInspection(
        digest,
        manifest_bytes,
        digest.kept.get(SIGNATURE_NAME),
        digest.kept.get(DSSE_NAME),
        result,
        tuple(problems),
    )


def _presence_problems(digest: ArchiveDigest, problems: ProblemList) -> None:
    if MANIFEST_NAME in digest.oversized:
        problems.add(
            "manifest_too_large",
            f"manifest.json exceeds {MAX_MANIFEST_BYTES} bytes.",
            MANIFEST_NAME,
        )
    if SIGNATURE_NAME in digest.oversized or DSSE_NAME in digest.oversized:
        problems.add(
            "signature_too_large", "The signature file is too large to be one."
        )
    if not digest.complete:
        return
    present = digest.files.keys() | digest.rejected
    if MANIFEST_NAME not in present:
        nested = sorted(name for name in present if name.endswith("/" + MANIFEST_NAME))
        hint = (
            f" (found {nested[0]!r}: archive the folder's contents, not the folder)"
            if nested
            else ""
        )
        problems.add(
            "manifest_missing", f"There is no manifest.json at the bundle root{hint}."
        )
    if not present & {SIGNATURE_NAME, DSSE_NAME}:
        problems.add(
            "signature_missing", "There is no manifest.json.sig or manifest.json.dsse."
        )
