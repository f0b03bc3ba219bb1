"""Files the embedded runtime's processes share in the var dir: the supervisor
(``config/supervise.py``) writes them, the site's health check reads them. No
Django here: the supervisor runs before any Django process."""

from __future__ import annotations

from typing import Final

# The supervised processes' state (pid, restarts, up or down), rewritten on
# every change; ``/healthz`` fails while a worker or beat is down.
STATUS_FILE: Final = "supervisor.json"
