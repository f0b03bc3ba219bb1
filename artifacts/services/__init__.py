"""Artifacts services: every write of signing keys and bundles goes through one."""
