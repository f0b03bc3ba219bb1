"""Procurement services: every write of the tender goes through one of these."""
