"""For the transition matrices: which moves went through the one helper,
``accounts.services.transitions.transition``.

Services import the helper by name, so ``spy_on_transitions`` wraps it in every
loaded product module that holds it; a move is recorded once the helper has
made it (a refused move records nothing)."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import pytest

from accounts.services import transitions

APPS = ("accounts", "procurement", "artifacts", "benchmarks", "gates", "portal")


class Move(NamedTuple):
    model: str  # "<app_label>.<model>"
    source: str  # the status as stored before the move
    target: str


def spy_on_transitions(monkeypatch: pytest.MonkeyPatch) -> list[Move]:
    helper = transitions.transition
    moves: list[Move] = []

    def spy(obj: Any, to: str, **kwargs: Any) -> Any:
        stored = type(obj)._default_manager.filter(pk=obj.pk)
        source = stored.values_list(kwargs.get("field", "status"), flat=True).get()
        moved = helper(obj, to, **kwargs)
        moves.append(Move(obj._meta.label_lower, source, to))
        return moved

    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in APPS:
            continue
        if vars(module).get("transition") is helper:
            monkeypatch.setattr(module, "transition", spy)
    return moves
