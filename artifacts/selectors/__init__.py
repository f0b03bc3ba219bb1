"""Artifacts reads: bundles, escrow, releases, the log, fixity, proofs."""
