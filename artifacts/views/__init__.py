"""Artifacts pages: bundles and keys, escrow, releases, fixity."""
