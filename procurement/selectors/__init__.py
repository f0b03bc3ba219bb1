from __future__ import annotations

from procurement.selectors.rfps import (
    InvitedVendorScope,
    invited_vendor_scope_for,
    rfp_get_visible,
    rfp_list_visible_to,
)

__all__ = [
    "InvitedVendorScope",
    "invited_vendor_scope_for",
    "rfp_get_visible",
    "rfp_list_visible_to",
]
