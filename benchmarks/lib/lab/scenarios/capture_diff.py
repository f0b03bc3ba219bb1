"""What changed on the host between two environment captures
(``benchmarks.lib.environment.capture_environment``), for the ``rollback``
scenario: the capture before the rollback hook and the one after it.

The drift comparison in ``benchmarks.lib.environment`` compares a capture with
a vendor's free-form manifest (loose keys, declared prefixes, severities); two
captures of the same schema are compared exactly instead, field by field:
objects by key, lists of objects by their ``name`` (a block device, a NIC, a
GPU…) or else by position, everything else by value. ``captured_at`` is left
out (it always changes).

    [{"path": "block[loop0].scheduler", "before": "none", "after": "mq-deadline"}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

IGNORED: Final = frozenset({"captured_at"})
MAX_CHANGES: Final = 200
ABSENT: Final = None


def capture_difference(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Each changed field with its path and both values (None: absent), in
    path order, at most ``MAX_CHANGES``."""
    changes: list[dict[str, Any]] = []
    keys = sorted((set(before) | set(after)) - IGNORED, key=str)
    for key in keys:
        _walk(str(key), before.get(key), after.get(key), changes)
    return changes[:MAX_CHANGES]


def _walk(path: str, old: Any, new: Any, changes: list[dict[str, Any]]) -> None:
    if len(changes) > MAX_CHANGES:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            _walk(f"{path}.{key}", old.get(key), new.get(key), changes)
        return
    if isinstance(old, list) and isinstance(new, list):
        old_items, new_items = _keyed(old), _keyed(new)
        if old_items is not None and new_items is not None:
            for name in sorted(set(old_items) | set(new_items)):
                _walk(
                    f"{path}[{name}]", old_items.get(name), new_items.get(name), changes
                )
            return
        if len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new, strict=True)):
                _walk(f"{path}[{index}]", a, b, changes)
            return
    if old != new:
        changes.append({"path": path, "before": old, "after": new})


def _keyed(items: list[Any]) -> dict[str, Any] | None:
    """A list of objects with distinct ``name``s by name, else None."""
    names = [i.get("name") if isinstance(i, Mapping) else None for i in items]
    if not items or any(not isinstance(n, str) for n in names):
        return None
    if len(set(names)) != len(names):
        return None
    return dict(zip(names, items, strict=True))  # type: ignore[arg-type]
