"""The id of the request (or task) being served, for the audit trail and the logs."""

from __future__ import annotations

from contextvars import ContextVar

request_id_var: ContextVar[str] = ContextVar("reprogate_request_id", default="")
# The same id in the request's META, for lines logged after the middleware returned
# (no HTTP_ prefix: no client header can set it).
REQUEST_ID_META = "REPROGATE_REQUEST_ID"
