"""Registries: how a lower app shows a higher app's facts without importing it.

There is one mechanism (``accounts.lib.registry.Registry``) and one list of every
registry of the product (``PRODUCT_REGISTRIES``): every registry in the code is in
the list, everything in the list is a registry named for where it lives, no module
keeps a registry of its own making (a ``register_*`` function, a ``global`` slot),
every registry is filled when Django starts, and docs/architecture.md names each.

One registry read end to end: procurement reads what the lab reproduced without
importing gates (``procurement.selectors.reproduced.lab_validation``). gates fills
it at startup, its objects read as procurement's protocols say, and without it
every vendor is "not yet reproduced" and no RFP uses lab validation."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts.lib.registry import PRODUCT_REGISTRIES, Registry, RegistryError
from gates.selectors import reproduced as gates_reproduced
from procurement.models import Bid, Rfp
from procurement.selectors.comparison import comparison_for
from procurement.selectors.reproduced import (
    NOT_REPRODUCED,
    LabValidation,
    LabValidationProvider,
    ReproducedClaim,
    lab_validation,
    lab_validations_for,
    rfp_uses_lab_validation,
)
from tests.architecture.imports import ROOT, module_name, source_files
from tests.gates.reproduced_support import (  # noqa: F401 (fixtures)
    reproduce_fixture,
    two_vendors_fixture,
)

SERVER = ("accounts", "procurement", "artifacts", "benchmarks", "gates", "portal")
# Module-level state that is not a registry, each for its reason.
GLOBALS_ALLOWED = {
    "accounts.selectors.clock": "one process-wide frozen clock",
    "gates.lib.report_charts": "whether a chart render is running in this process",
}


def _registries_in_code() -> set[str]:
    """Dotted names of the module-level ``… = Registry(…)`` of the server."""
    found = set()
    for path in source_files(SERVER):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign):
                targets, value = [node.target], node.value
            else:
                continue
            if not (isinstance(value, ast.Call) and _called(value) == "Registry"):
                continue
            for target in targets:
                assert isinstance(target, ast.Name), f"{path}:{node.lineno}"
                found.add(f"{module_name(path)}.{target.id}")
    return found


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _hand_rolled(path: Path) -> list[str]:
    """``register_*`` functions and ``global`` statements of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = module_name(path)
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} def {node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("register_")
    ]
    if module not in GLOBALS_ALLOWED:
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno} global {', '.join(node.names)}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Global)
        ]
    return found


def _registry(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


# --- the one list ---------------------------------------------------------------------


def test_every_registry_in_the_code_is_in_the_list() -> None:
    assert sorted(_registries_in_code() - set(PRODUCT_REGISTRIES)) == []


def test_the_list_names_registries_where_they_live_and_nothing_stale() -> None:
    registries = {dotted: _registry(dotted) for dotted in PRODUCT_REGISTRIES}
    stale = [
        dotted
        for dotted, found in registries.items()
        if not (isinstance(found, Registry) and found.name == dotted)
    ]

    assert stale == []
    assert len(set(PRODUCT_REGISTRIES)) == len(PRODUCT_REGISTRIES)
    assert set(PRODUCT_REGISTRIES) == _registries_in_code()


def test_no_module_keeps_a_registry_of_its_own_making() -> None:
    found = [line for path in source_files(SERVER) for line in _hand_rolled(path)]

    assert found == []


def test_every_registry_is_filled_when_django_starts() -> None:
    empty = [d for d in PRODUCT_REGISTRIES if not _registry(d).items()]

    assert empty == []


def test_the_architecture_document_names_every_registry() -> None:
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    section = re.search(r"^## Registries\n(.*?)(?=^## |\Z)", text, re.M | re.S)

    assert section is not None
    assert [d for d in PRODUCT_REGISTRIES if f"`{d}`" not in section[1]] == []


# --- the mechanism --------------------------------------------------------------------


def test_a_registry_answers_its_default_until_filled() -> None:
    hook: Registry[str] = Registry("tests.hook", default="nothing")

    assert hook.get() == "nothing"
    hook.register("gates'")
    assert hook.get() == "gates'"
    assert hook.items() == [("", "gates'")]


def test_a_registry_without_a_default_says_so_when_read_empty() -> None:
    hook: Registry[str] = Registry("tests.hook")

    assert hook.items() == []
    with pytest.raises(RegistryError, match=r"tests\.hook: nothing registered"):
        hook.get()


def test_a_second_registration_is_refused_unless_it_replaces() -> None:
    hook: Registry[str] = Registry("tests.hook")
    hook.register("first")
    hook.register("first")  # the same object again (ready() twice): no change

    with pytest.raises(RegistryError, match="already registered"):
        hook.register("second")
    hook.register("second", replace=True)
    assert hook.get() == "second"


def test_a_keyed_registry_lists_its_entries_in_key_order() -> None:
    sources: Registry[str] = Registry("tests.sources")
    sources.register("b's", key="b")
    sources.register("a's", key="a")

    assert sources.items() == [("a", "a's"), ("b", "b's")]
    assert sources.keys() == {"a", "b"}
    assert "a" in sources
    assert "c" not in sources


def test_swapped_puts_back_what_was_there() -> None:
    hook: Registry[str] = Registry("tests.hook", default="nothing")
    hook.register("gates'")

    with hook.swapped(None):
        assert hook.get() == "nothing"
        with hook.swapped("a test's"):
            assert hook.get() == "a test's"
    with hook.swapped("a test's", key="other"):
        assert hook.keys() == {"", "other"}

    assert hook.items() == [("", "gates'")]


# --- one registry, read end to end ----------------------------------------------------


@pytest.fixture
def without_gates() -> Iterator[None]:
    with lab_validation.swapped(None):
        yield


def _bids(rfp: Rfp) -> list[Bid]:
    return list(rfp.bids.select_related("vendor_organisation"))


def test_gates_registers_its_source_when_django_starts() -> None:
    assert lab_validation.get() == LabValidationProvider(
        gates_reproduced.lab_validations_for,
        gates_reproduced.rfp_uses_lab_validation,
        gates_reproduced.baseline_figures,
    )


@pytest.mark.django_db
def test_gates_lab_validations_read_as_procurement_expects(two_vendors: Rfp) -> None:
    bids = _bids(two_vendors)

    labs = lab_validations_for(two_vendors, bids)

    assert sorted(lab.verdict for lab in labs.values()) == ["FAIL", "PASS"]
    assert all(isinstance(lab, LabValidation) for lab in labs.values())
    claims = [
        c
        for b in bids
        for c in labs[b.vendor_organisation_id].claims(b.claimed_metrics)
    ]
    assert claims
    assert all(isinstance(c, ReproducedClaim) for c in claims)
    assert rfp_uses_lab_validation(two_vendors) is True


@pytest.mark.django_db
def test_without_gates_nothing_is_reproduced(
    two_vendors: Rfp, buyer: Any, without_gates: None
) -> None:
    bids = _bids(two_vendors)

    labs = lab_validations_for(two_vendors, bids)
    comparison = comparison_for(buyer, two_vendors)

    assert {lab.label for lab in labs.values()} == {NOT_REPRODUCED}
    assert all(isinstance(lab, LabValidation) for lab in labs.values())
    claims = [
        c
        for b in bids
        for c in labs[b.vendor_organisation_id].claims(b.claimed_metrics)
    ]
    assert claims
    assert {(c.result, c.reproduced) for c in claims} == {(None, False)}
    assert comparison.lab_in_use is False
    assert {row.lab.label for row in comparison.rows} == {NOT_REPRODUCED}
    assert {row.tco_detail.basis for row in comparison.rows} <= {"claimed", ""}
