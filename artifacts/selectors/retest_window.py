"""Revised bundles after the submission deadline: a vendor that owes a re-test
uploads the revised bundle the re-test will run, although the RFP no longer
takes bids.

The dependency runs gates → artifacts, so the upload rule cannot ask for
re-test obligations itself. gates registers a *window source* when Django
starts (``GatesConfig.ready()``): a callable that takes an RFP and a vendor
organisation and returns the sentence naming the vendor's live re-test
obligation on it ("" when it has none). With no source (artifacts on its own)
uploads follow the submission rules alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from accounts.models import Organisation
    from procurement.models import Rfp


class WindowSource(Protocol):
    def __call__(self, rfp: Rfp, organisation: Organisation) -> str: ...


_source: WindowSource | None = None


def register_retest_window(source: WindowSource | None) -> WindowSource | None:
    """Install the source (None removes it); returns the one it replaces."""
    global _source  # the registry is this one module-level slot
    previous, _source = _source, source
    return previous


def retest_window(rfp: Rfp, organisation: Organisation) -> str:
    """Why ``organisation`` may upload a revised bundle to ``rfp`` now although
    submissions are closed ("" if it may not)."""
    return _source(rfp, organisation) if _source is not None else ""
