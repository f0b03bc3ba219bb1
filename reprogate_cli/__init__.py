"""The ``reprogate`` command for vendors and auditors."""

from __future__ import annotations
