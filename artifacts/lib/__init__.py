"""The Django-free core of artifacts: archive reading, the bundle manifest, signatures,
the transparency log, evidence packages, spooling, problems, completeness, and
the bundle builder and verifier the ``reprogate`` CLI runs. Nothing under
``artifacts.lib`` imports Django or another part of the server."""
