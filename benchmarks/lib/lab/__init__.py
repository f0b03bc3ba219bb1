"""The lab layer (Django-free): what the runner does on the lab host around a
harness, beside the sandbox.

``policy`` validates a ``reprogate.lab-policy/v1`` document; ``cdi`` reads the
host's Container Device Interface spec files and resolves device names to the
nodes, mounts and environment they stand for; ``devices`` turns a policy into
the sandbox's ``SandboxExtras`` (or the named problems that refuse the run);
``telemetry`` samples the host while the harness runs, ``telemetry_blob`` stores
the samples compactly, ``artefacts`` names the runner's own files.

Pure Python, no Django: the agent calls it with its own settings.
"""
