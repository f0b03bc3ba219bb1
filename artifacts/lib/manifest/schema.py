"""The manifest's constants (names, limits, kinds, parsers, stats) and its
typed form (``Manifest`` and its parts). No Django."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from artifacts.lib.manifest.vocabulary import Workload
from artifacts.lib.problems import BundleProblem

SCHEMA_ID: Final = "reprogate.bundle/v1"
MANIFEST_NAME: Final = "manifest.json"
SIGNATURE_NAME: Final = "manifest.json.sig"
DSSE_NAME: Final = "manifest.json.dsse"
RESERVED_PATHS: Final = frozenset({MANIFEST_NAME, SIGNATURE_NAME, DSSE_NAME})
MAX_MANIFEST_BYTES: Final = 16 * 1024 * 1024
MAX_SIGNATURE_BYTES: Final = 64 * 1024
MAX_DSSE_BYTES: Final = 32 * 1024 * 1024
MAX_FILES: Final = 100_000
MAX_ITEMS: Final = 1_000  # outputs, scenarios, claims
KINDS: Final = (
    "workload",
    "environment",
    "harness",
    "trace",
    "cost_model",
    "report",
    "container_image",
    "iac",
    "runbook",
    "sbom",
    "other",
)
PARSERS: Final = (
    "fio-json",
    "vllm-bench",
    "mlperf-loadgen",
    "mlperf-storage",
    "reprogate-metrics",
)
CACHES: Final = ("cold", "warm")
STATS: Final = (
    "mean",
    "max",
    "min",
    "p50",
    "p90",
    "p95",
    "p99",
    "p99.5",
    "p99.9",
    "p99.99",
)
SHA256_RE: Final = re.compile(r"[0-9a-f]{64}")
METRIC_RE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
SCENARIO_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# An update bundle's ``changes[].component`` (docs/bundle-format.md).
COMPONENTS: Final = (
    "gpu_driver",
    "gpu_firmware",
    "cuda",
    "nvme_firmware",
    "nic_firmware",
    "nic_driver",
    "kernel",
    "os",
    "bios",
    "software",
    "other",
)
CREATED_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|\+00:00)"
)


@dataclass(frozen=True)
class ManifestFile:
    path: str
    sha256: str
    size: int
    kind: str


@dataclass(frozen=True)
class HarnessOutput:
    path: str
    parser: str


@dataclass(frozen=True)
class Scenario:
    name: str
    cache: str
    concurrency: int
    batch_size: int
    duration_s: float
    # Anti-gaming: re-run once with another seed, outputs must differ; the data
    # the harness works on, compared with the lab host's memory.
    seed_sensitive: bool = False
    working_set_bytes: int | None = None
    kind: str = "steady"  # artifacts.lib.scenario_kinds


@dataclass(frozen=True)
class Harness:
    entrypoint: str
    outputs: tuple[HarnessOutput, ...]
    scenarios: tuple[Scenario, ...]


@dataclass(frozen=True)
class Claim:
    metric: str
    stat: str
    scenario: str
    value: float
    unit: str


@dataclass(frozen=True)
class Change:
    """One entry of an update bundle's ``changes``: what moved from which
    version to which."""

    component: str
    from_version: str
    to_version: str
    note: str = ""

    def as_dict(self) -> dict[str, str]:
        data = {
            "component": self.component,
            "from": self.from_version,
            "to": self.to_version,
        }
        return {**data, "note": self.note} if self.note else data


@dataclass(frozen=True)
class Manifest:
    schema: str
    rfp: str
    vendor: str
    created: datetime
    files: tuple[ManifestFile, ...]
    harness: Harness
    claims: tuple[Claim, ...]
    extensions: Mapping[str, Any] = field(default_factory=dict)
    # An update bundle: the SHA-256 of the accepted bundle it updates, and what
    # changed since (both empty on any other bundle).
    supersedes: str | None = None
    changes: tuple[Change, ...] = ()
    # The RFP requirements' vocabulary (``vocabulary``): optional declarations.
    approach: str | None = None
    workloads: tuple[Workload, ...] = ()

    def file(self, path: str) -> ManifestFile | None:
        return next((item for item in self.files if item.path == path), None)


@dataclass(frozen=True)
class ManifestResult:
    """``manifest`` is set only when there are no problems. ``files`` are the
    file entries valid on their own; ``mentioned_paths`` every string given as a
    ``files[].path`` (valid or not), so such a file is not also 'unlisted'."""

    manifest: Manifest | None
    problems: tuple[BundleProblem, ...]
    files: tuple[ManifestFile, ...] = ()
    mentioned_paths: frozenset[str] = frozenset()
    rfp: str | None = None
    vendor: str | None = None
    files_known: bool = False  # ``files`` was a list: the listing can be checked

    @property
    def ok(self) -> bool:
        return self.manifest is not None
