"""The buyer's lab plan: what the lab operator adds to a bundle's scenarios
when a campaign starts (DESIGN §4b, docs/lab.md "Scenario kinds"), checked with
every problem named by its path (``lab_plan.scenarios[0].actions[0].rate``):

    {"scenarios": [{"name": "failover-eio", "kind": "failover", "cache": "warm",
                    "concurrency": 1, "batch_size": 1, "duration_s": 10,
                    "actions": [{"at_s": 3, "do": "error_window", "for_s": 2}]}],
     "neighbours": {"noisy-500": {"rw": "randread", "bs": "4k", "iodepth": 8,
                                  "rate_iops": 500, "runtime": 30}}}

- ``scenarios``: scenario objects checked as a manifest's are (every kind and
  its fields; ``added_by`` may say ``"lab"``, nothing else), names unique among
  themselves and the bundle's; the campaign stores them beside the bundle's,
  marked ``"added_by": "lab"``;
- ``neighbours``: neighbour jobs by name (lowercase letters, digits, ``.``, ``_``,
  ``-``): each an object of fio job options (option name → text or number) that
  the runner runs itself beside an ``interference`` scenario's harness; every
  interference scenario of the campaign, the bundle's or the lab's, names one of
  them or one of the lab's standard jobs (``STANDARD_NEIGHBOURS``: a bundle may
  declare an interference scenario that any lab can run without a plan); a plan's
  job of the same name replaces the standard one.

No Django: the campaign start calls it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from artifacts.lib.manifest import scenario_problems
from artifacts.lib.scenario_kinds import ADDED_BY_LAB, NAME_RE

KEYS: Final = ("scenarios", "neighbours")
MAX_SCENARIOS: Final = 50
MAX_NEIGHBOURS: Final = 20
MAX_OPTIONS: Final = 32
MAX_OPTION_CHARS: Final = 200
ROOT: Final = "lab_plan"

# The lab's standard neighbour jobs: what a scenario may name without a plan.
STANDARD_NEIGHBOURS: Final[Mapping[str, Mapping[str, Any]]] = {
    # Another tenant's random reads, throttled to 500 I/Os per second.
    "noisy-500": {"rw": "randread", "bs": "4k", "iodepth": 8, "rate_iops": 500},
    # Another tenant reading as fast as the device lets it.
    "noisy-max": {"rw": "randread", "bs": "4k", "iodepth": 32},
}

Problems = list[tuple[str, str]]
# A neighbour job's options: ``(options, path) -> problems`` (the interference
# driver's own vocabulary where it has one).
OptionsCheck = Callable[[Mapping[str, Any], str], Problems]


def basic_options_problems(options: Mapping[str, Any], path: str) -> Problems:
    """Option names and values in the shape fio takes them."""
    problems: Problems = []
    if len(options) > MAX_OPTIONS:
        return [(path, f"Has {len(options)} options; at most {MAX_OPTIONS}.")]
    for key, value in options.items():
        at = f"{path}.{key}"
        if not (isinstance(key, str) and NAME_RE.fullmatch(key)):
            problems.append((at, "Is not a fio option's name."))
        elif isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append((at, "Must be text or a number."))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append((at, "Must be a finite number."))
        elif isinstance(value, str) and (
            not value or len(value) > MAX_OPTION_CHARS or not value.isprintable()
        ):
            problems.append(
                (at, f"Must be printable text of 1 to {MAX_OPTION_CHARS} characters.")
            )
    return problems


def lab_plan_problems(
    plan: Any,
    bundle_scenarios: Sequence[Mapping[str, Any]],
    *,
    options_check: OptionsCheck = basic_options_problems,
) -> Problems:
    """What is wrong with ``plan`` for a campaign of ``bundle_scenarios``."""
    if not isinstance(plan, dict):
        return [(ROOT, "Must be a JSON object.")]
    problems: Problems = [
        (f"{ROOT}.{key}", f"Is not a field of a lab plan ({', '.join(KEYS)}).")
        for key in plan
        if key not in KEYS
    ]
    neighbours = plan.get("neighbours", {})
    problems += _neighbours(neighbours, options_check)
    defined = set(STANDARD_NEIGHBOURS)
    if isinstance(neighbours, dict):
        defined |= set(neighbours)
    scenarios = plan.get("scenarios", [])
    if not isinstance(scenarios, list) or len(scenarios) > MAX_SCENARIOS:
        problems.append(
            (f"{ROOT}.scenarios", f"Must be a list of at most {MAX_SCENARIOS}.")
        )
        scenarios = []
    names = {str(s.get("name")): "the bundle's" for s in bundle_scenarios}
    for i, scenario in enumerate(scenarios):
        path = f"{ROOT}.scenarios[{i}]"
        problems += _scenario(scenario, path, names)
        if isinstance(scenario, dict):
            problems += _neighbour_named(scenario, path, defined)
    for scenario in bundle_scenarios:
        problems += _neighbour_named(
            scenario, f"bundle scenario {scenario.get('name')}", defined
        )
    return problems


def campaign_neighbours(
    plan: Mapping[str, Any] | None, scenarios: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The neighbour jobs a campaign of ``scenarios`` (the bundle's and the
    plan's, a valid plan) stores: the plan's, and each standard job an
    interference scenario names that the plan does not define."""
    jobs: dict[str, Any] = dict((plan or {}).get("neighbours") or {})
    for scenario in scenarios:
        name = scenario.get("neighbour")
        wanted = scenario.get("kind") == "interference" and isinstance(name, str)
        if wanted and name not in jobs and name in STANDARD_NEIGHBOURS:
            jobs[str(name)] = dict(STANDARD_NEIGHBOURS[str(name)])
    return jobs


def lab_scenarios(plan: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The plan's scenarios as the campaign stores them (a valid plan)."""
    found = (plan or {}).get("scenarios") or []
    return [{**s, "added_by": ADDED_BY_LAB} for s in found if isinstance(s, dict)]


def _scenario(value: Any, path: str, names: dict[str, str]) -> Problems:
    if isinstance(value, dict) and "added_by" in value:
        if value["added_by"] != ADDED_BY_LAB:
            return [(f"{path}.added_by", f"Must be {ADDED_BY_LAB!r} (or left out).")]
        value = {k: v for k, v in value.items() if k != "added_by"}
    problems = scenario_problems(value, path)
    name = value.get("name") if isinstance(value, dict) else None
    if isinstance(name, str):
        if name in names:
            problems.append(
                (f"{path}.name", f"Repeats {names[name]} scenario name {name!r}.")
            )
        names[name] = "another lab"
    return problems


def _neighbours(value: Any, options_check: OptionsCheck) -> Problems:
    path = f"{ROOT}.neighbours"
    if not isinstance(value, dict):
        return [(path, "Must be an object: neighbour name → fio job options.")]
    if len(value) > MAX_NEIGHBOURS:
        return [(path, f"Names {len(value)} neighbours; at most {MAX_NEIGHBOURS}.")]
    problems: Problems = []
    for name, options in value.items():
        at = f"{path}.{name}"
        if not NAME_RE.fullmatch(name):
            problems.append(
                (at, "A neighbour's name is lowercase letters, digits, '.', '_', '-'.")
            )
        elif not isinstance(options, dict) or not options:
            problems.append((at, "Must be an object of fio job options."))
        else:
            problems += options_check(options, at)
    return problems


def _neighbour_named(
    scenario: Mapping[str, Any], path: str, defined: set[str]
) -> Problems:
    if scenario.get("kind") != "interference":
        return []
    name = scenario.get("neighbour")
    if isinstance(name, str) and name not in defined:
        return [
            (
                f"{path}.neighbour" if path.startswith(ROOT) else path,
                f"Names neighbour {name!r}, which neither the lab plan's "
                "neighbours nor the lab's standard ones ("
                + ", ".join(sorted(STANDARD_NEIGHBOURS))
                + ") define.",
            )
        ]
    return []
