"""Revised bundles after the submission deadline: a vendor that owes a re-test
uploads the revised bundle the re-test will run, although the RFP no longer
takes bids.

The dependency runs gates → artifacts, so the upload rule cannot ask for
re-test obligations itself. gates registers a *window source*
(``retest_window_source``) when Django starts (``GatesConfig.ready()``): a
callable that takes an RFP and a vendor
organisation and returns the sentence naming the vendor's live re-test
obligation on it ("" when it has none). With no source (artifacts on its own)
uploads follow the submission rules alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from accounts.lib.registry import Registry

if TYPE_CHECKING:
    from accounts.models import Organisation
    from procurement.models import Rfp


class WindowSource(Protocol):
    def __call__(self, rfp: Rfp, organisation: Organisation) -> str: ...


def _no_window(rfp: Rfp, organisation: Organisation) -> str:
    return ""


# gates' source (``gates.selectors.obligations.retest_upload_window``); without
# it no upload is let in after the deadline.
retest_window_source: Registry[WindowSource] = Registry(
    "artifacts.selectors.retest_window.retest_window_source", default=_no_window
)


def retest_window(rfp: Rfp, organisation: Organisation) -> str:
    """Why ``organisation`` may upload a revised bundle to ``rfp`` now although
    submissions are closed ("" if it may not)."""
    return retest_window_source.get()(rfp, organisation)
