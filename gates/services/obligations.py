"""Re-test obligations (being written: only the hook ``gate_evaluate`` calls)."""

from __future__ import annotations

from gates.models import Evaluation


def obligations_after_evaluation(*, evaluation: Evaluation) -> None:
    """Raise or answer re-test obligations after ``evaluation`` (see the module
    docstring once written)."""
