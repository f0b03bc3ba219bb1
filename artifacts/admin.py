"""Admin of the artifacts app: read-only. Each area registers its models in a
module of its own, imported here for Django's admin autodiscovery."""

from __future__ import annotations

from artifacts import (
    escrow_admin,  # noqa: F401 - registers deposits and events
    log_admin,  # noqa: F401 - registers the transparency log
    release_admin,  # noqa: F401 - registers releases and fixity runs
)
