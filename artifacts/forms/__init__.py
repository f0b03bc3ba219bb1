"""Artifacts forms: signing keys, escrow, releases."""
