"""Fixity checks of rows kept by other apps, read without importing them.

The dependency runs gates → artifacts, so the fixity check cannot read a gate
evaluation itself. Instead an app registers a *fixity source* when Django
starts (``GatesConfig.ready()``): a callable, under a name, that compares the
rows it keeps with their escrow deposits and yields a ``Finding`` for each one
that differs (names only, never values, as ``fixity_rows`` says), read in
chunks. ``fixity_check`` runs every source after the log and the releases.

With no source registered (artifacts on its own), nothing more is checked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from artifacts.services.fixity.report import Finding, Findings


class FixitySource(Protocol):
    def __call__(self) -> Iterable[Finding]: ...


_sources: dict[str, FixitySource] = {}


def register_fixity_source(
    name: str, source: FixitySource | None
) -> FixitySource | None:
    """Install ``source`` under ``name`` (None removes it); returns the one it
    replaces."""
    previous = _sources.pop(name, None)
    if source is not None:
        _sources[name] = source
    return previous


_record_schemas: set[str] = set()


def register_log_record_schema(schema: str) -> None:
    """Another app appends log records of ``schema`` (a gate decision's steps):
    the log's pass takes such a leaf as that app's, not as an altered entry."""
    _record_schemas.add(schema)


def log_record_schemas() -> frozenset[str]:
    return frozenset(_record_schemas)


def check_sources(findings: Findings) -> None:
    """Every registered source's findings, sources in name order."""
    for _, source in sorted(_sources.items()):
        for finding in source():
            findings.add(finding)
