"""The gates tests' fixtures: ``rfp`` (an open RFP with the corpus keys) and the
factories of ``tests.gates.support``."""

from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.gates.support import frozen_plan, gate_bundle, gate_campaign  # noqa: F401
