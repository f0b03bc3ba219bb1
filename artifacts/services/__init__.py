"""Artifacts services: every write of signing keys and bundles goes through one."""

from __future__ import annotations

from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)

__all__ = ["allowed_signers_text", "signing_key_register", "signing_key_revoke"]
