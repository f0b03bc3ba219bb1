"""Scenario kinds (DESIGN §4b, docs/bundle-format.md): the per-kind fields of a
scenario object, checked the same way whether it comes from a bundle's
manifest (``harness.scenarios[]``) or from the buyer's lab plan at a campaign's
start (``"added_by": "lab"``). Every problem is ``(path, message)``, the path
naming the field (``harness.scenarios[2].actions[0].for_s``). No Django.

- ``steady`` (the default): no fields of its own;
- ``failover``: ``actions``, 1 to ``MAX_ACTIONS`` objects
  ``{"at_s", "do", "for_s", "rate"?, "endpoint"?}``; ``at_s`` ≥ 0 and ``for_s`` > 0
  seconds from the harness's start, the window inside the scenario's
  ``duration_s``; ``bandwidth`` needs a ``rate`` (tc's notation, ``"10mbit"``);
  ``kill_tier`` may leave out ``for_s`` (the tier stays down);
- ``warmup``: nothing required; it starts cold, so a ``cache`` it names is ``cold``;
- ``interference``: ``neighbour``, the name of a neighbour job the buyer's lab
  plan defines (never a command: the lab decides what runs beside the harness);
- ``rollback``: ``to``, what the pool's rollback hook switches to (text)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

KINDS: Final = ("steady", "interference", "failover", "warmup", "rollback")
ACTIONS: Final = ("error_window", "pause", "bandwidth", "kill_tier")
# The fields a kind adds to a scenario object (the others refuse them).
KIND_FIELDS: Final = {
    "failover": ("actions",),
    "interference": ("neighbour",),
    "rollback": ("to",),
}
SCENARIO_FIELDS: Final = ("kind", "actions", "neighbour", "to")
ACTION_FIELDS: Final = ("at_s", "do", "for_s", "rate", "endpoint")
MAX_ACTIONS: Final = 20
MAX_OFFSET_S: Final = 86_400.0
NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# tc's rate notation (tc(8) "RATES"): a number and a unit.
RATE_RE: Final = re.compile(
    r"(?:\d+(?:\.\d+)?)(?:bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)"
)
ADDED_BY_LAB: Final = "lab"

Problems = list[tuple[str, str]]


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def scenario_kind_problems(scenario: Mapping[str, Any], path: str) -> Problems:
    """What is wrong with the kind and the kind's fields of ``scenario`` (a
    scenario object whose other fields are checked elsewhere)."""
    kind = scenario.get("kind", "steady")
    if kind not in KINDS or not isinstance(kind, str):
        return [
            (
                _at(path, "kind"),
                f"Must be one of {', '.join(KINDS)}; got {_show(kind)}.",
            )
        ]
    problems: Problems = []
    own = KIND_FIELDS.get(kind, ())
    for key in SCENARIO_FIELDS[1:]:
        if key in scenario and key not in own:
            problems.append(
                (_at(path, key), f"Is a field of a {_owner(key)} scenario, not {kind}.")
            )
    for key in own:
        if key not in scenario:
            problems.append((_at(path, key), f"Is required for a {kind} scenario."))
    if kind == "failover" and "actions" in scenario:
        duration = _seconds(scenario.get("duration_s"))
        problems += _actions(scenario["actions"], _at(path, "actions"), duration)
    if kind == "warmup" and scenario.get("cache", "cold") != "cold":
        problems.append(
            (_at(path, "cache"), "A warm-up starts from a cold cache: must be 'cold'.")
        )
    if kind == "interference" and "neighbour" in scenario:
        neighbour = scenario["neighbour"]
        if not (isinstance(neighbour, str) and NAME_RE.fullmatch(neighbour)):
            problems.append(
                (
                    _at(path, "neighbour"),
                    "Must name a neighbour job of the lab plan (lowercase letters, "
                    f"digits, '.', '_', '-'); got {_show(neighbour)}.",
                )
            )
    if kind == "rollback" and "to" in scenario:
        problems += _text(scenario["to"], _at(path, "to"))
    return problems


def _owner(key: str) -> str:
    return next(kind for kind, keys in KIND_FIELDS.items() if key in keys)


def _text(value: Any, path: str, max_length: int = 200) -> Problems:
    if not isinstance(value, str) or not value.strip():
        return [(path, "Must be a non-empty string.")]
    if len(value) > max_length:
        return [(path, f"Is longer than {max_length} characters.")]
    if not value.isprintable() or value != value.strip():
        return [(path, "Has control characters or leading/trailing spaces.")]
    return []


def _actions(value: Any, path: str, duration_s: float | None) -> Problems:
    if not isinstance(value, list) or not value:
        return [(path, "Must be a list of 1 to 20 action objects.")]
    if len(value) > MAX_ACTIONS:
        return [(path, f"Lists {len(value)} actions; at most {MAX_ACTIONS}.")]
    problems: Problems = []
    for i, action in enumerate(value):
        problems += _action(action, _at(path, i), duration_s)
    return problems


def _action(action: Any, path: str, duration_s: float | None) -> Problems:
    if not isinstance(action, dict):
        return [(path, "Must be a JSON object.")]
    problems: Problems = [
        (_at(path, key), f"Is not a field of an action ({', '.join(ACTION_FIELDS)}).")
        for key in action
        if key not in ACTION_FIELDS
    ]
    do = action.get("do")
    if do not in ACTIONS or not isinstance(do, str):
        problems.append(
            (_at(path, "do"), f"Must be one of {', '.join(ACTIONS)}; got {_show(do)}.")
        )
    at_s = _seconds(action.get("at_s"))
    if at_s is None or not 0 <= at_s <= MAX_OFFSET_S:
        problems.append(
            (
                _at(path, "at_s"),
                f"Must be seconds from the harness's start, 0 to {MAX_OFFSET_S:g}; "
                f"got {_show(action.get('at_s'))}.",
            )
        )
    for_s = _seconds(action.get("for_s"))
    if "for_s" in action and (for_s is None or not 0 < for_s <= MAX_OFFSET_S):
        problems.append(
            (
                _at(path, "for_s"),
                f"Must be a duration in seconds, > 0 and ≤ {MAX_OFFSET_S:g}; "
                f"got {_show(action.get('for_s'))}.",
            )
        )
    elif "for_s" not in action and do != "kill_tier":
        problems.append((_at(path, "for_s"), f"Is required for {_show(do)}."))
    if duration_s is not None and at_s is not None:
        end = at_s + (for_s or 0.0)
        if end > duration_s:
            problems.append(
                (
                    path,
                    f"Ends at {end:g} s, after the scenario's duration_s "
                    f"({duration_s:g} s).",
                )
            )
    rate = action.get("rate")
    if do == "bandwidth" and "rate" not in action:
        problems.append(
            (_at(path, "rate"), "Is required for 'bandwidth' (e.g. '10mbit').")
        )
    elif "rate" in action and do != "bandwidth":
        problems.append((_at(path, "rate"), "Is a field of a 'bandwidth' action only."))
    elif "rate" in action and not (isinstance(rate, str) and RATE_RE.fullmatch(rate)):
        problems.append(
            (
                _at(path, "rate"),
                f"Must be a rate in tc's notation such as '10mbit'; got {_show(rate)}.",
            )
        )
    if "endpoint" in action:
        endpoint = action["endpoint"]
        if not (isinstance(endpoint, str) and NAME_RE.fullmatch(endpoint.lower())):
            problems.append(
                (_at(path, "endpoint"), "Must name an endpoint of the pool's policy.")
            )
    return problems
