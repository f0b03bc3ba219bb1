"""The lab layer: what a pool's policy lets a run touch on the lab host.

``policy`` validates a ``reprogate.lab-policy/v1`` document; ``cdi`` reads the
host's Container Device Interface spec files and resolves device names to the
nodes, mounts and environment they stand for; ``devices`` turns a policy into
the sandbox's ``SandboxExtras`` (or the named problems that refuse the run).

Pure Python, no Django: the agent calls it with its own settings.
"""
