"""The id of the request (or task) being served, for the audit trail and the logs."""

from __future__ import annotations

from contextvars import ContextVar

request_id_var: ContextVar[str] = ContextVar("reprogate_request_id", default="")
