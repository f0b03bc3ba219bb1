"""How far a version is off, for the drift policy's versioned rules
(``procurement.lib.drift_policy``: the rules and their defaults)."""

from __future__ import annotations

import re
from typing import Final

LEVELS: Final = ("major", "minor", "patch")
# Rules looked up as "<rule>.<level>" by the first part of the version that differs.
VERSIONED: Final = (
    "accelerator.driver",
    "accelerator.firmware",
    "nic.firmware",
    "nvme.firmware",
)


def version_level(declared: str, captured: str) -> str:
    """``major``, ``minor`` or ``patch``: the first dotted part that differs."""
    want = [p for p in re.split(r"[.\-_ ]+", declared.strip().lower()) if p]
    have = [p for p in re.split(r"[.\-_ ]+", captured.strip().lower()) if p]
    for index, (a, b) in enumerate(zip(want, have, strict=False)):
        if a.lstrip("0") != b.lstrip("0"):
            return LEVELS[min(index, 2)]
    return "patch"
