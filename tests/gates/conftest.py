"""The gates tests' fixtures: ``rfp`` (an open RFP with the corpus keys), the
factories of ``tests.gates.support`` and the reproduced claims of
``tests.gates.reproduced_support``."""

from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.gates.reproduced_support import (  # noqa: F401
    reproduce_fixture,
    two_vendors_fixture,
)
from tests.gates.support import frozen_plan, gate_bundle, gate_campaign  # noqa: F401
