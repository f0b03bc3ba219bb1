"""Fixity checks of rows kept by other apps, read without importing them.

The dependency runs gates → artifacts, so the fixity check cannot read a gate
evaluation itself. Instead an app registers a *fixity source*
(``fixity_sources``) when Django starts (``GatesConfig.ready()``): a callable,
under a name, that compares the rows it keeps with their escrow deposits and
yields a ``Finding`` for each one that differs (names only, never values, as
``fixity_rows`` says), read in chunks. ``fixity_check`` runs every source after
the log and the releases.

With no source registered (artifacts on its own), nothing more is checked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from accounts.lib.registry import Registry
from artifacts.services.fixity.report import Finding, Findings


class FixitySource(Protocol):
    def __call__(self) -> Iterable[Finding]: ...


# Sources by name (gates': ``gates.evaluations``, ``gates.reports``); none
# without them.
fixity_sources: Registry[FixitySource] = Registry(
    "artifacts.services.fixity.sources.fixity_sources"
)

# Schemas of the log records other apps append (a gate decision's steps), each
# under its schema, naming the app: the log's pass takes such a leaf as that
# app's, not as an altered entry.
log_record_schemas: Registry[str] = Registry(
    "artifacts.services.fixity.sources.log_record_schemas"
)


def check_sources(findings: Findings) -> None:
    """Every registered source's findings, sources in name order."""
    for _, source in fixity_sources.items():
        for finding in source():
            findings.add(finding)
