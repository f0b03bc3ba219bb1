"""Runner services: every write of pools, hosts, campaigns and runs goes
through one of these (``remote`` is the server's side of a run the lab agent
executes, ``conclusion`` how it ends)."""
