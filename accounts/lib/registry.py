"""Registries: how a lower app shows a higher app's facts without importing it.

The dependency runs gates → benchmarks → artifacts → procurement → accounts. When a
lower app needs an answer only a higher app has, it declares what it needs as a
``Protocol`` and a ``Registry`` of that protocol at module level; the higher app
registers its implementation in its ``AppConfig.ready()``. With nothing registered
the lower app reads the registry's default, so it still works on its own.

A registry holds one implementation (``register(impl)``, ``get()``) or several
under names (``register(impl, key=name)``, ``items()``). A second registration
under a key is refused unless ``replace=True``; tests swap an implementation for
a block with ``swapped``. No Django here: ``accounts.lib`` is Django-free.

Every registry of the product is named in ``PRODUCT_REGISTRIES`` below (dotted
names: accounts cannot import the apps that declare them), and its ``name`` is
that dotted name; ``tests/architecture/test_registries.py`` holds the list to the
code, both ways.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, Generic, TypeVar

T = TypeVar("T")

# Every registry of the product, by the dotted name of the module-level object.
PRODUCT_REGISTRIES: Final = (
    "accounts.selectors.audit_scope.rfp_scope",
    "procurement.selectors.evidence_sources.evidence_provider",
    "procurement.selectors.evidence_sources.bundle_source",
    "procurement.selectors.reproduced.lab_validation",
    "procurement.selectors.fidelity_sources.declared_source",
    "procurement.selectors.fidelity_sources.captured_source",
    "artifacts.selectors.breaches.breach_source",
    "artifacts.selectors.retest_window.retest_window_source",
    "artifacts.services.fixity.sources.fixity_sources",
    "artifacts.services.fixity.sources.log_record_schemas",
    "artifacts.services.evidence.package_files",
    "artifacts.services.update_hooks.update_accepted",
    "benchmarks.selectors.gate_campaigns.gate_campaign_source",
)

ONE: Final = ""  # the key of a registry's one implementation


class RegistryError(RuntimeError):
    """A second registration without ``replace``, or a read with no default."""


class _Missing:
    def __repr__(self) -> str:
        return "<no default>"


_MISSING: Final = _Missing()


class Registry(Generic[T]):
    """Implementations of ``T`` under keys (``ONE`` for a registry of one)."""

    def __init__(self, name: str, *, default: T | _Missing = _MISSING) -> None:
        self.name = name
        self._default = default
        self._impls: dict[str, T] = {}

    def __repr__(self) -> str:
        return f"Registry({self.name!r}, keys={sorted(self._impls)!r})"

    def register(self, impl: T, *, key: str = ONE, replace: bool = False) -> None:
        """Install ``impl`` under ``key``. Registering the same object again is a
        no-op; another one is refused unless ``replace``."""
        current = self._impls.get(key, _MISSING)
        if current is not _MISSING and current is not impl and not replace:
            raise RegistryError(
                f"{self.name}: {key or 'the implementation'} is already registered "
                f"({current!r}); pass replace=True to replace it."
            )
        self._impls[key] = impl

    def __contains__(self, key: object) -> bool:
        """Is anything registered under ``key`` (``ONE in registry``)?"""
        return key in self._impls

    def get(self, key: str = ONE) -> T:
        """The implementation under ``key``, else the registry's default."""
        if key in self._impls:
            return self._impls[key]
        if isinstance(self._default, _Missing):
            raise RegistryError(f"{self.name}: nothing registered and no default.")
        return self._default

    def items(self) -> list[tuple[str, T]]:
        """Every registered (key, implementation), in key order ([] when empty)."""
        return sorted(self._impls.items(), key=lambda item: item[0])

    def keys(self) -> frozenset[str]:
        return frozenset(self._impls)

    @contextmanager
    def swapped(self, impl: T | None, *, key: str = ONE) -> Iterator[None]:
        """For a block (a test): ``impl`` under ``key`` (None: nothing there, the
        default answers); what was there before is back after."""
        previous = self._impls.pop(key, _MISSING)
        if impl is not None:
            self._impls[key] = impl
        try:
            yield
        finally:
            self._impls.pop(key, None)
            if not isinstance(previous, _Missing):
                self._impls[key] = previous
