"""Runner services: every write of pools, hosts, campaigns and runs goes
through one of these (``execution`` is the worker's side of a run)."""
