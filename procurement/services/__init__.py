"""Procurement services: every write of the tender goes through one of these."""

from __future__ import annotations

from procurement.services.rfps import rfp_create, rfp_invite_vendor, rfp_transition

__all__ = ["rfp_create", "rfp_invite_vendor", "rfp_transition"]
