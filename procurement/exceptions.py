from __future__ import annotations

from accounts.exceptions import ApplicationError


class ProcurementError(ApplicationError):
    pass
