"""``manifest.json`` of a bundle (schema ``reprogate.bundle/v1``,
docs/bundle-format.md): strict parsing, validation with every problem named by its path
(``files[3].sha256``), the typed result, and the checks of a manifest against
the archive it came in (``inspect_bundle``) and against where it was uploaded.

Decisions:
- Bytes must be UTF-8; a byte-order mark is refused (``manifest_bom``): RFC 8259
  forbids sending one, other JSON readers (Go, jq) refuse it, and the signed bytes
  should have one form.
- Duplicate keys in any object are refused (readers disagree on which wins), as
  are ``NaN``/``Infinity``, unpaired surrogate escapes and numbers that overflow.
- Unknown keys are refused at every level unless they start with ``x-``
  (extensions; top-level ones are kept in ``Manifest.extensions``).
- ``claims`` is optional (default empty); ``harness`` needs at least one output
  and one scenario; scenario names are short slugs (``cold-c32``).
- ``created`` is RFC 3339 in UTC (``Z`` or ``+00:00``), fractions allowed.
- A manifest with problems yields no ``Manifest``; ``ManifestResult.files`` still
  holds every file entry that is valid on its own, so the archive can be compared
  with it and the report lists every problem at once.

Modules: ``schema`` (constants, typed manifest), ``decode`` (strict JSON),
``validate`` (``parse_manifest``), ``inspect`` (``inspect_bundle`` and the checks
against the archive and the upload). Import from the package.

No Django here: the ``reprogate`` CLI and the offline verifier import this package.
"""

from __future__ import annotations

from artifacts.lib.manifest.inspect import (
    KEEP,
    BundleInspection,
    context_problems,
    inspect_bundle,
    listing_problems,
)
from artifacts.lib.manifest.schema import (
    CACHES,
    COMPONENTS,
    CREATED_RE,
    DSSE_NAME,
    KINDS,
    MANIFEST_NAME,
    MAX_DSSE_BYTES,
    MAX_FILES,
    MAX_ITEMS,
    MAX_MANIFEST_BYTES,
    MAX_SIGNATURE_BYTES,
    METRIC_RE,
    PARSERS,
    RESERVED_PATHS,
    SCENARIO_RE,
    SCHEMA_ID,
    SHA256_RE,
    SIGNATURE_NAME,
    STATS,
    Change,
    Claim,
    Harness,
    HarnessOutput,
    Manifest,
    ManifestFile,
    ManifestResult,
    Scenario,
)
from artifacts.lib.manifest.validate import (
    parse_manifest,
    scenario_problems,
)

__all__ = [
    "CACHES",
    "COMPONENTS",
    "CREATED_RE",
    "DSSE_NAME",
    "KEEP",
    "KINDS",
    "MANIFEST_NAME",
    "MAX_DSSE_BYTES",
    "MAX_FILES",
    "MAX_ITEMS",
    "MAX_MANIFEST_BYTES",
    "MAX_SIGNATURE_BYTES",
    "METRIC_RE",
    "PARSERS",
    "RESERVED_PATHS",
    "SCENARIO_RE",
    "SCHEMA_ID",
    "SHA256_RE",
    "SIGNATURE_NAME",
    "STATS",
    "BundleInspection",
    "Change",
    "Claim",
    "Harness",
    "HarnessOutput",
    "Manifest",
    "ManifestFile",
    "ManifestResult",
    "Scenario",
    "context_problems",
    "inspect_bundle",
    "listing_problems",
    "parse_manifest",
    "scenario_problems",
]
