"""The ``reprogate`` command for vendors and auditors (DESIGN §8)."""

from __future__ import annotations
