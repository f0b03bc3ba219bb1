"""The gates API tests' fixtures (``tests.gates.api.support``)."""

from tests.gates.api.support import evaluation  # noqa: F401
