"""A module of the project's own run in a child process (``python -m``): from
the project's folder, with an environment that holds nothing of the server's
(no secrets, no settings), only what finds the module. No Django."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

PROJECT: Final = Path(__file__).resolve().parents[2]  # ``artifacts``'s parent


def module_command(module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run ``module`` with ``args``;
    run it with ``cwd=PROJECT``."""
    environment = {"PYTHONPATH": str(PROJECT), "LANG": "C.UTF-8", "PATH": os.defpath}
    return [sys.executable, "-m", module, *args], environment
