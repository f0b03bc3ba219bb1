"""What the fidelity matrix reads from higher apps, without importing them.

The dependency runs gates → benchmarks → artifacts → procurement, so procurement
cannot read bundles or lab runs itself. Two providers fill the matrix's inputs
(``procurement.lib.fidelity``), registered when Django starts:

- ``declared_source`` (artifacts, ``ArtifactsConfig.ready()`` →
  ``artifacts.selectors.procurement_hooks.bundle_declarations``): per vendor
  organisation, what its accepted bundle declares (the bundle its bid names, else
  its newest accepted one on the RFP);
- ``captured_source`` (benchmarks, ``BenchmarksConfig.ready()`` →
  ``benchmarks.selectors.procurement_hooks.run_captures``): per vendor
  organisation, the environment the lab captured on the host of the latest run of
  its bundle on the RFP, flattened to ``path -> value``.

Without a provider (procurement on its own) nothing is declared or captured, and
every row of the matrix is ``missing``. Callers respect sealing and who may see
which vendor themselves.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Protocol

from accounts.lib.registry import Registry
from procurement.lib.fidelity import Captured, Declared

if TYPE_CHECKING:
    from procurement.models import Rfp


class DeclaredSource(Protocol):
    def __call__(
        self,
        rfp: Rfp,
        organisation_ids: Collection[int],
        named: Mapping[int, str] | None = None,
    ) -> Mapping[int, Declared]:
        """Organisation id -> what its accepted bundle on ``rfp`` declares (the
        one ``named`` for it where that is one of them, else its newest); a
        query count that does not depend on the number of vendors."""
        ...


class CapturedSource(Protocol):
    def __call__(
        self, rfp: Rfp, organisation_ids: Collection[int]
    ) -> Mapping[int, Captured]:
        """Organisation id -> the capture of the host of the latest run of its
        bundle on ``rfp`` that has one; vendors never run are absent."""
        ...


def _nothing_declared(
    rfp: Rfp,
    organisation_ids: Collection[int],
    named: Mapping[int, str] | None = None,
) -> Mapping[int, Declared]:
    return {}


def _nothing_captured(
    rfp: Rfp, organisation_ids: Collection[int]
) -> Mapping[int, Captured]:
    return {}


declared_source: Registry[DeclaredSource] = Registry(
    "procurement.selectors.fidelity_sources.declared_source",
    default=_nothing_declared,
)
captured_source: Registry[CapturedSource] = Registry(
    "procurement.selectors.fidelity_sources.captured_source",
    default=_nothing_captured,
)


def declared_for(
    rfp: Rfp,
    organisation_ids: Collection[int],
    named: Mapping[int, str] | None = None,
) -> dict[int, Declared]:
    if not organisation_ids:
        return {}
    return dict(declared_source.get()(rfp, organisation_ids, named))


def captured_for(rfp: Rfp, organisation_ids: Collection[int]) -> dict[int, Captured]:
    if not organisation_ids:
        return {}
    return dict(captured_source.get()(rfp, organisation_ids))
