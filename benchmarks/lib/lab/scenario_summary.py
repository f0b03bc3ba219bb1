"""What a scenario driver did, in a few lines a person reads: the run page and
the signed report both say it from the ``record`` of the run's ``scenario.json``
(``benchmarks.lib.lab.scenario_document``). The record arrived from a lab host:
anything not shaped as expected is left out or shown as text. No Django."""

from __future__ import annotations

from typing import Any, Final

MAX_ACTIONS: Final = 8
MAX_CHANGES: Final = 5
DASH: Final = "—"


def num(value: Any) -> str:
    """A JSON number as the document has it: ``repr`` of a float, ``str`` of an
    int; a dash for none."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _action(action: Any) -> str:
    if not isinstance(action, dict):
        return ""
    name = action.get("do") or action.get("verb") or action.get("hook") or "action"
    at = action.get("at_s")
    failed = action.get("exit_code") not in (None, 0)
    said = f"{name} at {num(at)} s" if isinstance(at, int | float) else str(name)
    return f"{said} (exit {action['exit_code']})" if failed else said


def scenario_did(record: dict[str, Any]) -> list[str]:
    """What the runner did, from a ``scenario.json`` record, in a few lines:
    its phases, its actions (the first ``MAX_ACTIONS``), an interference's
    neighbour, a warm-up's page-cache drop, a rollback's target and the
    capture's change, and the notes it made."""
    said: list[str] = []
    phases = [p for p in record.get("phases") or [] if isinstance(p, dict)]
    if phases:
        said.append(
            "Phases: "
            + ", ".join(
                f"{_text(p.get('name'))} ({num(p.get('duration_s'))} s)" for p in phases
            )
        )
    actions = [a for a in map(_action, record.get("actions") or []) if a]
    if actions:
        more = len(actions) - MAX_ACTIONS
        tail = f", and {more} more" if more > 0 else ""
        said.append("Actions: " + ", ".join(actions[:MAX_ACTIONS]) + tail)
    neighbour = record.get("neighbour")
    if isinstance(neighbour, dict) and neighbour.get("name"):
        said.append(f"Neighbour: {_text(neighbour['name'])}")
    cache = record.get("page_cache")
    if isinstance(cache, dict) and "dropped" in cache:
        dropped = cache.get("dropped") is True
        said.append(
            "Page cache dropped before the start"
            if dropped
            else "Page cache not dropped before the start"
        )
    if record.get("to") is not None:
        said.append(f"Rolled back to {_text(record['to'])}")
    capture = record.get("capture")
    if isinstance(capture, dict):
        changes = [c for c in capture.get("difference") or [] if isinstance(c, dict)]
        paths = [_text(c.get("path") or c.get("field")) for c in changes]
        more = len(paths) - MAX_CHANGES
        tail = f", and {more} more" if more > 0 else ""
        said.append(
            f"Capture changed in {len(paths)} field(s): "
            + ", ".join(paths[:MAX_CHANGES])
            + tail
            if paths
            else "Capture unchanged"
        )
    notes = record.get("notes")
    if isinstance(notes, list):
        said += [_text(n) for n in notes if n][:3]
    return said
