"""One vocabulary on both sides of the fidelity matrix: what an RFP's
requirements document may demand (``procurement.lib.requirements``) is what a
bundle may declare (``artifacts.lib.manifest.vocabulary``, which the offline
tools import without procurement), word for word."""

from __future__ import annotations

from artifacts.lib.manifest import vocabulary as declared
from artifacts.lib.scenario_kinds import KINDS
from procurement.lib import requirements as required


def test_approaches_families_and_transports_are_the_same_words() -> None:
    assert declared.APPROACHES == required.APPROACHES
    assert declared.MODEL_FAMILIES == required.MODEL_FAMILIES
    assert declared.TRANSPORTS == required.TRANSPORTS


def test_every_pinned_field_a_bundle_names_can_be_demanded() -> None:
    assert set(declared.PINNED_FIELDS) <= set(required.PINNED_FIELDS)


def test_the_scenario_kinds_are_the_runner_s() -> None:
    assert set(required.SCENARIO_KINDS) == set(KINDS)
